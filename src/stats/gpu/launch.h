/* SPDX-License-Identifier: MIT */
/*
 * Launches joined to their GPU work (docs/stats.md, cuda_launch_stats and gpu_queue_depth): each
 * launch call (a RUNTIME or DRIVER record of class LAUNCH) is matched to the kernel, copy or
 * memset it launched by correlation id, in whichever order the two come.  Per process: the
 * launch latency of each kernel (its GPU start less its launch call's start), the kernels that
 * ran shorter than their launch call took (the GPU finishes them faster than the CPU can issue
 * them: launch-bound), and the share of kernel time in those; each matched launch also goes to
 * the queue of its stream (queue.h).  Kernels of a CUDA graph share the graph launch's
 * correlation id and are counted apart (a graph is the cure for launch-bound kernels, not a case
 * of it).  Memory: the launches still waiting for their partner, and 16 bytes per matched kernel
 * for the exact percentiles, in spills (spill.h: past their budget, a temporary file).
 */
#ifndef TALLY_STATS_LAUNCH_H
#define TALLY_STATS_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "depth.h"
#include "trace-set.h"

struct launch_row {
	unsigned section;
	uint64_t launch_calls;	/* API records of class LAUNCH */
	uint64_t kernels;	/* kernel records (timed) */
	uint64_t matched;	/* kernels joined to their launch call (graph kernels are not) */
	uint64_t graph_kernels; /* kernels of a graph launch */
	uint64_t lat_p50, lat_p90, lat_p99, lat_max; /* GPU start - launch call start */
	uint64_t call_p50;			     /* the launch call's duration, median */
	uint64_t short_n;     /* matched kernels that ran shorter than their launch call */
	uint64_t short_ns;    /* their GPU time */
	uint64_t kernel_ns;   /* every kernel's GPU time */
	uint64_t overhead_ns; /* sum over them of (launch call - kernel): the CPU's excess */
	char *top_short;      /* the kernel name most often short (base name), owned */
	uint64_t top_short_n;
	char *top_where; /* where its launches come from (innermost user frame), owned */
};

struct launches;

/* q (may be NULL) receives every matched launch's outstanding interval; stats: keep the
 * latencies for the percentiles (16 bytes a kernel), or only join the launches for q. */
struct launches *launches_new(struct queues *q, bool stats);
void launches_free(struct launches *l);
int launches_add(struct launches *l, struct report_section *rs, const struct tally_record *r,
		 size_t n);
int launches_section_end(struct launches *l, struct report_section *rs);
const struct launch_row *launches_rows(const struct launches *l, size_t *n);

#endif
