/* SPDX-License-Identifier: MIT */
/* A histogram's cells, a run or pairs; see buckets.h. */
#include "buckets.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A run may span at most RUN_MAX buckets for those in use; pairs go back to a run once it would
 * span RUN_BACK or fewer (the gap between the two keeps a histogram from flapping). */
#define RUN_MAX(used)  (4u * (used) + 64u)
#define RUN_BACK(used) (2u * (used) + 64u)
#define RUN_SLACK      256u /* buckets added at once on the side a run grows */

static bool in_use(const void *cell, size_t elem)
{
	const unsigned char *p = cell;
	size_t i;

	for (i = 0; i < elem; i++)
		if (p[i])
			return true;
	return false;
}

/* The cells in use as pairs, room for twice as many (and for one more). */
static int to_pairs(struct buckets *b, size_t elem)
{
	uint32_t cap = b->used > 4 ? 2 * b->used : 8, k, m = 0;
	char *cells = malloc(cap * elem);
	uint32_t *idx = malloc(cap * sizeof(*idx));

	if (!cells || !idx) {
		free(cells);
		free(idx);
		return -1;
	}
	for (k = 0; k < b->n; k++)
		if (in_use(buckets_at(b, elem, k), elem)) {
			idx[m] = b->lo + k;
			memcpy(cells + (size_t)m++ * elem, buckets_at(b, elem, k), elem);
		}
	free(b->cells);
	b->cells = cells;
	b->idx = idx;
	b->cap = cap;
	b->n = m;
	return 0;
}

/* Pairs back to a run, once the run would be small enough. */
static void to_run(struct buckets *b, size_t elem)
{
	uint32_t lo = b->idx[0], span = b->idx[b->n - 1] - lo + 1, k;
	char *cells;

	if (span > RUN_BACK(b->used) || !(cells = calloc(span, elem)))
		return; /* still sparse, or no memory for the run: the pairs are as good */
	for (k = 0; k < b->n; k++)
		memcpy(cells + (size_t)(b->idx[k] - lo) * elem, buckets_at(b, elem, k), elem);
	free(b->cells);
	free(b->idx);
	b->cells = cells;
	b->idx = NULL;
	b->lo = lo;
	b->n = span;
	b->cap = 0;
}

/* A run widened to take bucket i: 0, 1 when it would be too sparse (take pairs), or -1. */
static int run_cover(struct buckets *b, size_t elem, uint32_t i, uint32_t limit)
{
	uint32_t lo = i, hi = i, room;
	char *cells;

	if (b->n) {
		lo = i < b->lo ? i : b->lo;
		hi = i > b->lo + b->n - 1 ? i : b->lo + b->n - 1;
		if (hi - lo + 1 > RUN_MAX(b->used + 1))
			return 1;
		/* a few octaves at once on the side that grew: values come in any order */
		room = RUN_MAX(b->used + 1) - (hi - lo + 1);
		room = room < RUN_SLACK ? room : RUN_SLACK;
		if (i > b->lo)
			hi = hi + room < limit ? hi + room : limit - 1;
		else
			lo = lo > room ? lo - room : 0;
	}
	if (!(cells = calloc((size_t)(hi - lo + 1), elem)))
		return -1;
	if (b->n)
		memcpy(cells + (size_t)(b->lo - lo) * elem, b->cells, (size_t)b->n * elem);
	free(b->cells);
	b->cells = cells;
	b->lo = lo;
	b->n = hi - lo + 1;
	return 0;
}

static void *pairs_cell(struct buckets *b, size_t elem, uint32_t i)
{
	uint32_t lo = 0, hi = b->n;
	char *cells;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (b->idx[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < b->n && b->idx[lo] == i)
		return buckets_at(b, elem, lo);
	if (b->n == b->cap) {
		uint32_t *idx;

		if (!(cells = tally_resize(b->cells, (size_t)2 * b->cap, elem)))
			return NULL;
		b->cells = cells;
		if (!(idx = tally_resize(b->idx, (size_t)2 * b->cap, sizeof(*idx))))
			return NULL; /* cap unchanged: the larger cells are only room */
		b->idx = idx;
		b->cap *= 2;
	}
	cells = b->cells;
	memmove(b->idx + lo + 1, b->idx + lo, (b->n - lo) * sizeof(*b->idx));
	memmove(cells + (size_t)(lo + 1) * elem, cells + (size_t)lo * elem,
		(size_t)(b->n - lo) * elem);
	memset(cells + (size_t)lo * elem, 0, elem);
	b->idx[lo] = i;
	b->n++;
	b->used++;
	/* back to a run only when i is taken: the cell made here must stay where it is returned */
	return cells + (size_t)lo * elem;
}

void *buckets_cell(struct buckets *b, size_t elem, uint32_t i, uint32_t limit)
{
	void *cell;
	int rc;

	if (b->idx && b->n && b->idx[0] <= i && i <= b->idx[b->n - 1] &&
	    b->idx[b->n - 1] - b->idx[0] + 1 <= RUN_BACK(b->used + 1))
		to_run(b, elem); /* dense enough again: the run takes it */
	if (!b->idx && (!b->n || i < b->lo || i >= b->lo + b->n)) {
		if ((rc = run_cover(b, elem, i, limit)) < 0 || (rc == 1 && to_pairs(b, elem) < 0))
			return NULL;
	}
	if (b->idx)
		return pairs_cell(b, elem, i);
	cell = buckets_at(b, elem, i - b->lo);
	b->used += !in_use(cell, elem);
	return cell;
}

void buckets_fini(struct buckets *b)
{
	free(b->cells);
	free(b->idx);
	memset(b, 0, sizeof(*b));
}
