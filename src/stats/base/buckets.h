/* SPDX-License-Identifier: MIT */
/*
 * The cells of a histogram whose buckets are numbered (the quantile sketches, sketch.h and
 * wsketch.h), kept so that memory follows the buckets that hold something, never the range
 * between them.  While they are dense enough the cells are one run (bucket lo + k at k): the run
 * spans at most 4 times the buckets in use plus 64; past that they are (bucket, cell) pairs,
 * sorted, room doubled.  So a histogram costs at most (4 x elem + 64 x elem / used) bytes per
 * bucket in use in a run, (elem + 4) x 2 in pairs: 32 bytes per bucket for 8-byte cells, plus
 * 64 cells; two values at the two ends of the range cost two pairs.
 */
#ifndef TALLY_STATS_BUCKETS_H
#define TALLY_STATS_BUCKETS_H

#include <stddef.h>
#include <stdint.h>

struct buckets {
	void *cells;   /* a run: the cell of bucket lo + k at k; pairs: the cell of idx[k] at k */
	uint32_t *idx; /* NULL: a run */
	uint32_t lo, n;
	uint32_t cap;  /* pairs: room */
	uint32_t used; /* buckets in use */
};

/*
 * The cell (elem bytes) of bucket i (< limit, the histogram's number of buckets), made (zeroed)
 * if new; NULL when memory ran out (the cells are as they were).  A cell of zero bytes is one not
 * in use: the caller makes it nonzero.
 */
void *buckets_cell(struct buckets *b, size_t elem, uint32_t i, uint32_t limit);
/* The k-th cell in bucket order (k < b->n) and its bucket; a run's may be all zero. */
static inline uint32_t buckets_index(const struct buckets *b, uint32_t k)
{
	return b->idx ? b->idx[k] : b->lo + k;
}
static inline void *buckets_at(const struct buckets *b, size_t elem, uint32_t k)
{
	return (char *)b->cells + (size_t)k * elem;
}
void buckets_fini(struct buckets *b);

#endif
