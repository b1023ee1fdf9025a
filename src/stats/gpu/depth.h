/* SPDX-License-Identifier: MIT */
/*
 * Queue length per stream over time (docs/stats.md, gpu_queue_depth): the launches outstanding
 * on a stream, each from the start of its launch call to the end of its GPU work, averaged over
 * time buckets (HTA's queue length, with time-weighted means instead of samples).  Each stream
 * of each device of each process has a fixed number of buckets from its section's start; when
 * the work runs past the last one the buckets double in width, pairs added together.  A stream
 * keeps only the buckets from its first work to its last (lo .. n - 1), so memory is what the
 * streams' curves span, at most buckets x streams, however many streams a trace has and however
 * late they start; streams are found by a hash.  With thousands of streams, each gets fewer
 * buckets (depth.c, BUCKET_BUDGET), so that memory and the curves written stay proportional to the
 * launches.  In the end every stream of a device has the width the widest of them came to: one
 * grid per device, for its table and its chart.  An interval costs O(1): its first and last
 * bucket get their part, the whole buckets between it a count in a difference array.
 */
#ifndef TALLY_STATS_DEPTH_H
#define TALLY_STATS_DEPTH_H

#include <stdint.h>

#include "trace-set.h"

struct qseries {
	unsigned section;
	uint32_t device, stream;
	uint64_t origin, width; /* bucket i is [origin + i * width, origin + (i + 1) * width) */
	uint32_t lo, n;		/* buckets lo .. n - 1 (of nbuckets) hold anything; before lo: 0 */
	double *mean;		/* after queues_finish: launches outstanding, time-averaged, of
				   buckets lo .. n - 1 (mean[b - lo]) */
	double *area;		/* ns x launches in partly covered buckets, from lo */
	int32_t *cover;		/* whole buckets covered, as a difference array, from lo */
	uint32_t cap;		/* area holds cap buckets, cover cap + 1 */
	uint32_t nb;		/* its buckets at most (depth.c: fewer when streams are many) */
	uint64_t launches;
	uint64_t first, last; /* earliest launch call, latest end of GPU work */
	long double total;    /* ns x launches, the whole series */
	double peak, avg;     /* after queues_finish: the highest bucket mean; the mean over
				 [first, last] */
	uint64_t peak_at;     /* start of that bucket */
};

struct queues;

struct queues *queues_new(unsigned nbuckets);
void queues_free(struct queues *q);
/* A section begins: its buckets start at its session start (aligned). */
void queues_section(struct queues *q, const struct report_section *rs);
/* A launch outstanding on (device, stream) of rs from t0 to t1 (aligned ns).  0 or -ENOMEM. */
int queues_add(struct queues *q, const struct report_section *rs, uint32_t device, uint32_t stream,
	       uint64_t t0, uint64_t t1);
/* The means and summaries of every series.  0 or -ENOMEM. */
int queues_finish(struct queues *q);
/* The series, in order of first launch within each section, sections in order. */
const struct qseries *queues_list(const struct queues *q, size_t *n);

#endif
