/* SPDX-License-Identifier: MIT */
/*
 * A set of time intervals kept as their union: sorted, disjoint segments, each carrying a weight
 * that adds up when segments merge.  Intervals may arrive in any order.  Segments closer than
 * merge_gap are merged as they come (merge_gap 1 keeps the exact union: only overlapping or
 * touching segments merge; gaps.c merges over its gap_min, so memory follows the gaps it lists).
 * span_settle() hands the oldest segments to a callback and forgets them, so a reader can bound
 * the memory of an exact union by how far out of order its input comes, not by its length.
 */
#ifndef TALLY_STATS_SPANS_H
#define TALLY_STATS_SPANS_H

#include <stddef.h>
#include <stdint.h>

struct span {
	uint64_t t0, t1;
	uint64_t weight; /* what the caller put on it; summed over merged segments */
	uint64_t first;	 /* the tag of the interval that starts at t0 (its earliest) */
};

struct span_set {
	struct span *s;
	size_t n, cap;
	uint64_t merge_gap; /* segments less than this apart merge (at least 1) */
};

/* Add [t0, t1] with weight w, merging every segment closer to it than merge_gap.  0 or -ENOMEM. */
int span_add(struct span_set *b, uint64_t t0, uint64_t t1, uint64_t w);
/* The same, the interval tagged (a segment keeps the tag of the interval that starts it). */
int span_add_tagged(struct span_set *b, uint64_t t0, uint64_t t1, uint64_t w, uint64_t tag);
/* The segment holding t, or NULL. */
struct span *span_find(struct span_set *b, uint64_t t);
/* Hand every segment ending before t to fn (in time order), then forget them; returns how many. */
size_t span_settle(struct span_set *b, uint64_t t, void (*fn)(void *ctx, const struct span *s),
		   void *ctx);
void span_set_fini(struct span_set *b);

#endif
