/* SPDX-License-Identifier: MIT */
/*
 * Call stacks in the file (docs/format.md §12): FRAMES (one entry per distinct frame), STACKS
 * (one entry per distinct stack: frame ids, innermost first) and MODULES (the loaded objects
 * that native frames' addresses fall in, symbolized by the reader).  Both tables are dense and
 * 1-based, like the string table, so a record's STACK column is a small number and a loop's
 * thousands of launches share one entry.
 *
 * Writers append entries to a pending table and take it as a chunk payload before the RECORDS
 * chunk that uses the ids; readers keep the tables in the section.
 */
#ifndef TALLY_FORMAT_STACKS_H
#define TALLY_FORMAT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum tally_frame_type {
	TALLY_FRAME_PYTHON = 1,	   /* file, function, line */
	TALLY_FRAME_NATIVE = 2,	   /* a return address (pc), symbolized at read time */
	TALLY_FRAME_NATIVE_PC = 3, /* 1.3: the instruction itself (a sample's innermost frame) */
};

/* Native frames of either kind: a return address, or an exact instruction address. */
static inline int tally_frame_is_native(unsigned type)
{
	return type == TALLY_FRAME_NATIVE || type == TALLY_FRAME_NATIVE_PC;
}

struct tally_frame {
	uint8_t type;
	uint32_t line;
	uint64_t pc;
	char *file, *func; /* owned; "" when absent */
};

struct tally_stack {
	uint32_t nframes;
	uint32_t *frames; /* owned; innermost first */
};

/* One loaded object: addresses in [lo, hi) belong to path, at ELF address (pc - base). */
struct tally_module {
	uint64_t base, lo, hi;
	char *path; /* owned */
};

/* Entries waiting for their chunk: ids next_id - count .. next_id - 1.  Zero-initialise. */
struct tally_pending_table {
	struct tally_buf entries;
	uint32_t next_id, count; /* next_id 0 means 1: ids start at 1 */
};

/* Append an entry; returns its id. */
uint32_t tally_frame_put(struct tally_pending_table *t, unsigned type, uint32_t line, uint64_t pc,
			 const char *file, size_t file_len, const char *func, size_t func_len);
uint32_t tally_stack_put(struct tally_pending_table *t, const uint32_t *frames, uint32_t n);
/* MODULES entries carry no ids: a MODULES payload is just a sequence of them. */
void tally_module_put(struct tally_buf *b, uint64_t base, uint64_t lo, uint64_t hi,
		      const char *path);

/* The FRAMES or STACKS payload of what is pending, then empty the table (false: none pending). */
bool tally_pending_take(struct tally_pending_table *t, struct tally_buf *payload);
void tally_pending_fini(struct tally_pending_table *t);

/* Modules a section may describe (the collector's own cap); a MODULES chunk past it is damage. */
#define TALLY_MODULES_MAX 4096

/* Reader side: a section's tables (index = id; entry 0 unused). */
struct tally_stack_tables {
	struct tally_frame *frames;
	uint32_t nframes;
	struct tally_stack *stacks;
	uint32_t nstacks;
	struct tally_module *modules;
	size_t nmodules;
	/* The address map, rebuilt after each MODULES chunk: boundaries at[0..nsegs) in order, and
	 * for [at[i], at[i + 1]) the module (index + 1; 0 none) that wins there, the latest one. */
	uint64_t *seg_at;
	uint32_t *seg_module;
	size_t nsegs;
};

/*
 * FRAMES and STACKS payloads into the tables.  *budget is what the file may still define, in
 * payload bytes (the reader starts it at the file's size, shared by every section and table):
 * ids beyond it are damage (false), and memory stays a small multiple of the file.
 */
bool tally_frames_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget);
bool tally_stacks_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget);
bool tally_modules_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len);
void tally_stack_tables_fini(struct tally_stack_tables *t);

/* Lookups that tolerate lost chunks: NULL for an id never defined. */
const struct tally_stack *tally_stack_get(const struct tally_stack_tables *t, uint32_t id);
const struct tally_frame *tally_frame_get(const struct tally_stack_tables *t, uint32_t id);
const struct tally_module *tally_module_of(const struct tally_stack_tables *t, uint64_t pc);

#endif
