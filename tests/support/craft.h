/* SPDX-License-Identifier: MIT */
/*
 * What tally-craft's cases share (tests/support/tally-craft.c): a file being written through the
 * real writer and codec, and the helpers that put chunks and records in it.  The odd and crafted
 * cases are in tally-craft.c, the hostile ones that must not make a reader explode in
 * craft-hostile.c.
 */
#ifndef TALLY_TESTS_CRAFT_H
#define TALLY_TESTS_CRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "codec.h"
#include "ledger.h"
#include "writer.h"

#define T0 1796000000000000000ull /* session start, CUPTI ns */

struct craft {
	int fd;
	struct tally_writer w;
	struct tally_codec codec;
	struct tally_buf b;
	uint64_t by_kind[TALLY_KIND_MAX]; /* records written, for the ledger */
};

/* A case: what it writes into a file whose preamble is written. */
struct craft_case {
	const char *name;
	void (*make)(struct craft *c);
};

extern const char *session_host, *session_rank; /* the next SESSION's host and rank */
extern const char *case_arg;			/* ARG of the cases that take one */
extern uint32_t plain_stack;

void die(const char *what);
/* A chunk through the writer, flushed. */
void chunk(struct craft *c, unsigned type, unsigned flags, const struct tally_buf *p);
/* A chunk header followed by written of declared bytes of payload (no writer checks). */
void raw_chunk(struct craft *c, unsigned type, const void *payload, size_t declared,
	       size_t written);
void session(struct craft *c, const char *cmdline, size_t cmdlen);
/* STRINGS: ids first, first + 1, ... */
void strings(struct craft *c, uint32_t first, const char *const *s, const size_t *len, unsigned n);
/* One RECORDS chunk of r (one kind), counted for the ledger. */
void records(struct craft *c, const struct tally_record *r, size_t n);
/* A LEDGER of the records written so far (plus extra's counters), FINAL when final. */
void ledger(struct craft *c, bool final, const struct tally_ledger *extra);
struct tally_record kernel_rec(uint64_t start, uint64_t dur, uint32_t name, uint32_t corr);
struct tally_record launch_rec(uint64_t start, uint32_t name, uint32_t corr);
struct tally_pending_table;
/* The FRAMES or STACKS chunk of what t holds; t is emptied. */
void pending_chunk(struct craft *c, unsigned type, struct tally_pending_table *t);
struct tally_gpu_metrics;
void metrics_chunk(struct craft *c, const struct tally_gpu_metrics *g);
struct tally_record metric_rec(uint64_t at, uint64_t dur, uint32_t device, uint32_t name,
			       unsigned scale, int64_t value, uint32_t sample);
/* A THREADS entry. */
void thread_entry(struct tally_buf *b, uint64_t tid, uint64_t pthread_id, unsigned flags,
		  const char *name);
struct tally_record host_rec(unsigned kind, uint64_t at, uint64_t dur, uint32_t tid);
/* case_arg as a count, 1 to 4194304 (exits 2 otherwise). */
unsigned count_arg(void);
/* n kernels in batches, each launch (name 1) then its kernel (name(i)), 10 us apart. */
void kernels_batched(struct craft *c, unsigned n, uint32_t (*name)(unsigned i),
		     uint32_t (*stack)(unsigned i));

/* craft-hostile.c's cases. */
extern const struct craft_case craft_hostile_cases[];
extern const size_t craft_hostile_count;

#endif
