/* SPDX-License-Identifier: MIT */
/*
 * Call stacks of launching calls (docs/collector.md, "Stacks"): the interning tables and the
 * hand-over from the application thread that captured a stack to the consumer that writes the
 * call's record.
 *
 *   application thread, inside a launch/copy/memset call (CUPTI callback, API enter):
 *     capture raw frames (pystack.c, nativestack.c) -> tally_stacktab_intern -> stack id
 *     -> tally_stacktab_note(correlation id, stack id)
 *   consumer thread:
 *     record with correlation id -> tally_stacktab_lookup -> STACK column
 *     before each RECORDS chunk: tally_stacktab_take -> FRAMES, STACKS, MODULES chunks
 *
 * A raw frame is (type, key, line): a Python frame's key is its code object (kept alive by a
 * reference the table holds, so the address is never reused), a native frame's is its return
 * address.  The tables are bounded; past the bound a stack is recorded as id 0 and counted.
 */
/*
 * The room stacks/ (stacktab.c, pystack.c, pyframes.c, nativestack.c, unwinder.c, saferead.c):
 * call stacks, taken and interned: Python frames read in place, native return addresses, the
 * tables.  activity/ (stacks at launches, the consumer's FRAMES and STACKS chunks) and host/
 * (samples) use it; it uses no other room of the collector.
 */
#ifndef TALLY_COLLECTOR_STACKTAB_H
#define TALLY_COLLECTOR_STACKTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct raw_frame {
	uint64_t key;  /* code object address, or return address */
	uint32_t line; /* the line, or where the capture has it, the instruction offset */
	uint32_t type; /* enum tally_frame_type */
	uint64_t aux;  /* more identity for the key (a Python code object's names), 0 if none */
};

/* Names a Python frame when it is first seen: file and function, UTF-8, and turns *line from
 * what the capture recorded (the line, or an instruction offset) into the source line.  Returns
 * false if it cannot (the frame is then written with empty names). */
typedef bool (*frame_namer)(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
			    size_t func_len);

/* Fresh, empty tables (session start, and a fork child's new file).  0 or -ENOMEM. */
int tally_stacktab_reset(void);
bool tally_stacktab_ready(void);

/* The stack id of frames[0..n) (innermost first), interning what is new; 0 if the tables are
 * full or not ready.  Thread-safe. */
uint32_t tally_stacktab_intern(const struct raw_frame *frames, unsigned n, frame_namer namer);

/* Correlation id -> stack id, from the capturing thread to the consumer. */
void tally_stacktab_note(uint32_t correlation_id, uint32_t stack_id);
uint32_t tally_stacktab_lookup(uint32_t correlation_id);

/*
 * Consumer: the FRAMES, STACKS and MODULES payloads of everything new (each buffer is appended
 * to; empty when nothing is new).  modules_for(pc, out) is called for each new native frame so
 * the caller can describe the module it lies in (nativestack.c).
 */
void tally_stacktab_take(struct tally_buf *frames, struct tally_buf *stacks,
			 struct tally_buf *modules,
			 void (*modules_for)(uint64_t pc, struct tally_buf *out));

/* Stacks that could not be recorded (tables full, out of memory), since the reset. */
uint64_t tally_stacktab_lost(void);

#endif
