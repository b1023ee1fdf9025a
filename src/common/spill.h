/* SPDX-License-Identifier: MIT */
/*
 * A sorted sequence of fixed-size elements that may be larger than memory: the readers' way to
 * keep something per record (a trace report's rows, a process's launches) without memory growing
 * with the records.  Elements are pushed in any order into a run in memory; when the run reaches
 * the budget it is sorted and written to a temporary file (unlinked at once, in $TMPDIR or /tmp:
 * nothing is left behind, however tally ends), and a new run begins.  Once every element is in,
 * spill_sort() sorts the last run, and spill_next() hands the elements out in order, merging the
 * runs (a heap of their heads, a buffer each), as many times over as spill_rewind() asks.  Memory:
 * the budget, and the merge's buffers (at most the budget again); a file of the elements beyond.
 * While everything fits the budget nothing is written, and spill_at() reads the elements in place.
 * Where no file can be written (a read-only or full TMPDIR) the spill keeps to memory from then on.
 */
#ifndef TALLY_COMMON_SPILL_H
#define TALLY_COMMON_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The budget of a spill (bytes) unless TALLY_SPILL_BUDGET (bytes, for tests) says otherwise. */
#define SPILL_BUDGET (32u << 20)

struct spill_run {
	uint64_t off, n;       /* where in the file, how many elements */
	uint64_t next;	       /* merging: elements of it handed out or buffered */
	char *buf;	       /* merging: a window of it */
	size_t room, nbuf, at; /* elements the window holds at most, holds now, the next one */
};

struct spill {
	size_t elem;
	int (*cmp)(const void *a, const void *b);
	size_t budget; /* bytes of the run in memory */
	char *mem;     /* the run in memory */
	size_t n, cap; /* its elements, and room */
	int fd;	       /* the temporary file, -1 until the first run is written */
	uint64_t end;  /* its size */
	struct spill_run *runs;
	size_t nruns, rcap;
	uint64_t total; /* elements pushed */
	/* merging */
	size_t *heap; /* run indexes, by their heads; the run in memory is index nruns */
	size_t nheap, mem_at;
	char *cur; /* the element spill_next() handed out, valid until the next call */
	bool sorted;
	int err;     /* the first error (errno), once one happened */
	int no_file; /* why the file could not be made or written (errno): it kept to memory */
};

/* An empty spill of elements of elem bytes, ordered by cmp.  budget 0: the default. */
void spill_init(struct spill *s, size_t elem, size_t budget,
		int (*cmp)(const void *, const void *));
/* Room for one more element (zeroed), or NULL when memory or the file failed (s->err). */
void *spill_push(struct spill *s);
/* Every element is in: sort them.  0, or -errno (s->err). */
int spill_sort(struct spill *s);
/* From the first element again (after spill_sort).  0, or -errno. */
int spill_rewind(struct spill *s);
/* The next element in order, NULL past the last (or on an error: s->err). */
const void *spill_next(struct spill *s);
/* Whether it went to the file (else spill_at reads it in place, after spill_sort). */
bool spill_spilled(const struct spill *s);
/* The i-th element in order, when not spilled (NULL otherwise, or past the end). */
void *spill_at(const struct spill *s, uint64_t i);
static inline uint64_t spill_count(const struct spill *s)
{
	return s->total;
}
void spill_fini(struct spill *s);

#endif
