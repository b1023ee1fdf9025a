/* SPDX-License-Identifier: MIT */
/*
 * Exact order statistics, in linear time: radix selection over the values (two sequential passes
 * per 11-bit digit), for the medians of the summary reports and the percentiles of the analyses.
 * Every function reorders a[] (and may overwrite it with copies of its values): pass a copy to
 * keep the values.
 */
#ifndef TALLY_STATS_SELECT_H
#define TALLY_STATS_SELECT_H

#include <stddef.h>
#include <stdint.h>

/* The k-th smallest of a[0..n), all in [lo, hi]; *next (if not NULL) the (k+1)-th. */
uint64_t stats_select(uint64_t *a, size_t n, size_t k, uint64_t lo, uint64_t hi, uint64_t *next);
/* The median: the middle value, or the mean of the two middle ones (nsys's Med). 0 for none. */
double stats_median(uint64_t *a, size_t n);
/* The 0-based index of the p-th percentile (0..100) in n sorted values, by nearest rank (p50 of
 * 1..4 is the 2nd, p90 of 1..10 the 9th): the one definition of P90 and friends, also compare's. */
size_t stats_rank_index(size_t n, double p);
/* Each percentile p[i] of v[0..n) into out[i], v left as it is (a copy is selected in).  0 or
 * -ENOMEM. */
int stats_percentiles(const uint64_t *v, size_t n, const double *p, uint64_t *out, size_t np);
/* The same of the uint64_t values of a spill (spill.h) made with stats_by_u64, p[] ascending:
 * exact, in one pass over them in order, whatever their number.  0 or -errno. */
struct spill;
int stats_by_u64(const void *a, const void *b);
int stats_spill_percentiles(struct spill *s, const double *p, uint64_t *out, size_t np);

#endif
