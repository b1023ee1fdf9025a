/* SPDX-License-Identifier: MIT */
/*
 * Kernel durations across processes (docs/stats.md, kern_rank_spread): for the kernels with the
 * most GPU time over all processes (the top --top, default 10), per process the count, total,
 * median, 90th percentile and maximum of each one's durations (HTA's kernel duration
 * distribution).  A process stands out for a kernel when its median is further from the median
 * of the processes' medians than three scaled median absolute deviations (3 x 1.4826 x MAD) and
 * than a tenth of it; it takes three processes with the kernel to say which one is odd.
 * Memory: 8 bytes per kernel record, for the exact percentiles.
 */
#ifndef TALLY_STATS_SPREAD_H
#define TALLY_STATS_SPREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "trace-set.h"

#define SPREAD_MIN_RANKS 3

struct spread_row {
	const char *name; /* the kernel (owned by the spread) */
	unsigned rank_of; /* 1-based position of this kernel among the top ones */
	unsigned section;
	uint64_t count, total, p90, max;
	double median;
	double vs_median; /* (median / the processes' median - 1) x 100 */
	int stands_out;	  /* 0, 1 slower, -1 faster */
};

struct spread;

struct spread *spread_new(unsigned top, enum report_name_mode names);
void spread_free(struct spread *s);
int spread_add(struct spread *s, struct report_section *rs, const struct tally_record *r, size_t n);
int spread_finish(struct spread *s);
/* Whether medians and percentiles came from quantile sketches (past the values kept exact). */
bool spread_sketched(const struct spread *s);
const struct spread_row *spread_rows(const struct spread *s, size_t *n);

#endif
