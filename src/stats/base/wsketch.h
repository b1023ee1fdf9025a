/* SPDX-License-Identifier: MIT */
/*
 * A weighted quantile sketch of integers (metricsum.c keeps one per GPU metric series): a
 * histogram whose buckets are exact below 64 and, above, 64 to each power of two, so that every
 * value of a bucket lies within 1/64 of its first.  Each value comes with a weight (a sample's
 * duration), so quantiles are shares of time, not of samples; a bucket answers with the weighted
 * mean of its own values, which is exact when they are all one value (an idle GPU's zeros, a
 * clock at its maximum) and never off by more than the bucket's width otherwise.  Memory follows
 * the buckets that hold a weight (buckets.h): at most 64 bytes per bucket in use plus 1 KiB, at
 * most 60 KiB (12 KiB for percentages scaled by 1000, 38 KiB for rates of 2^42, 4.4 TB/s), never
 * per value, and a series of one sample costs one bucket whatever its value.  Weights that would
 * pass 2^64 - 1 stop there (saturated).  Two sketches add up
 * (wsketch_merge), so summaries of many traces combine.
 */
#ifndef TALLY_STATS_WSKETCH_H
#define TALLY_STATS_WSKETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "buckets.h"

struct wsketch {
	struct buckets b; /* weight and value x weight per bucket; bucket 0: every negative value */
	int64_t min, max; /* exact, over values with weight */
	uint64_t total;	  /* sum of weights */
	bool saturated;	  /* a weight (or the total) stopped at UINT64_MAX */
};

/* Add weight (> 0) at value.  false when memory ran out (the sketch is unchanged). */
bool wsketch_add(struct wsketch *s, int64_t value, uint64_t weight);
/* The value below which a share q (0..1) of the weight lies: the weighted mean of the values in
 * the bucket where that share is reached (so within 1/64 of the true quantile, exact below 64),
 * clamped to the exact min and max; 0 for an empty sketch. */
int64_t wsketch_quantile(const struct wsketch *s, double q);
/* The weight of values at or above t, to within the bucket that holds t (counted as above when
 * its values' mean is). */
uint64_t wsketch_weight_above(const struct wsketch *s, int64_t t);
/* a += b.  false when memory ran out. */
bool wsketch_merge(struct wsketch *a, const struct wsketch *b);
void wsketch_fini(struct wsketch *s);

#endif
