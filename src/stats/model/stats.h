/* SPDX-License-Identifier: MIT */
/*
 * tally stats: nsys's summary and trace reports (stats.c aggregates, reports.c writes them), with
 * gpu_gaps and gpu_time_util (gaps.c) and cuda_gpu_mem_usage (memusage.c), written through one
 * table writer (table.c) as a table, CSV or JSON.
 */
#ifndef TALLY_STATS_STATS_H
#define TALLY_STATS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sketch.h"
#include "table.h"
#include "trace-set.h"

struct stats;

struct stats_request {
	uint64_t reports;		 /* bit 1 << report index (report_find) */
	enum report_name_mode names[64]; /* per report: :base / :mangled */
	uint64_t gap_min_ns;		 /* gpu_gaps: shortest gap listed (0: 1 ms) */
	uint64_t util_bucket_ns;	 /* gpu_time_util: bucket (0: a twentieth of the span) */
	const char *range;		 /* rank_steps: the NVTX range (NULL: step, ProfilerStep) */
	unsigned top;			 /* kern_rank_spread: kernels compared (0: 10) */
	unsigned queue_buckets;		 /* gpu_queue_depth: buckets per stream (0: 1024) */
	/* values kept for exact medians, all groups together (0: STATS_EXACT_VALUES); past it,
	 * medians come from a quantile sketch within SKETCH_REL_ERROR */
	uint64_t exact_values;
	bool sketch_only; /* medians from the sketch from the first value (--exact-medians 0) */
	uint64_t kernel_wait_ns; /* idle classes: kernel wait below this (0: the launch's cost) */
	/* the order the reports are written in (indexes, as asked); reports wanted but not in it
	 * come after, in the table's order */
	unsigned char order[64];
	unsigned norder;
};

#define STATS_EXACT_VALUES 4000000ull /* 32 MB of values */

/*
 * The one table of reports (model.c): each row a report's whole definition.  The index is stable
 * (the bit mask above, and summaries name their reports by it): a new report is added at the end.
 */
struct view_ctx;
struct report_def {
	const char *name;  /* "cuda_gpu_kern_sum" */
	const char *title; /* "CUDA GPU Kernel Summary" */
	bool by_default;   /* part of a plain `tally stats` (nsys's --stats set) */
	bool names;	   /* takes :base / :mangled */
	uint32_t needs;	   /* what it needs from the pass (stats-int.h, enum stats_need) */
	const struct report_col *cols; /* its columns, ended by {NULL} */
	const char *empty;	       /* what it says when it has no row */
	/* its rows over the analyses: the number, the cell function, notes (stats-int.h) */
	void (*view)(struct view_ctx *x, struct report_view *v);
};
extern const struct report_def report_defs[];
extern const unsigned report_defs_count;
int report_find(const char *name); /* index, or -1 */

struct stats *stats_new(const struct stats_request *req);
void stats_free(struct stats *st);
/* Scan callbacks that feed the aggregation (stats is their ctx). */
void stats_scan_ops(struct stats *st, struct report_scan_ops *ops);
/* After the scan: medians, standard deviations, sorting, and (for gpu_gaps and
 * gpu_metrics_nvtx_sum, when the traces hold GPU metrics) a second pass over the set's inputs.
 * 0, or -errno: -ENOMEM, or what stats_error() says. */
int stats_finish(struct stats *st, const struct report_set *set);
/* The one time origin of every output after stats_finish (aligned ns): the earliest session
 * start, or the earliest timed record where one came before it.  Every Start (ns), "+N s" and the
 * page's time axes count from it. */
uint64_t stats_time_base(const struct stats *st);
/* What that origin is, to label times with: "the session started", or "the first record (...)". */
const char *stats_time_origin(const struct stats *st);
/* Why stats_finish failed, other than memory; NULL if it did not. */
const char *stats_error(const struct stats *st);
/* The GPU metrics' summary (metricsum.h) after stats_finish; NULL unless a report needed it. */
const struct gm *stats_gpu_metrics(const struct stats *st);
/* Write every requested report. Returns 0 or -errno (output failed). */
int stats_write(struct stats *st, const struct report_set *set, FILE *out, enum report_format fmt);

/* Exact figures of one group, for tests: sum, count, min, max, median, sample stddev. */
struct stats_group_view {
	const char *name;
	int32_t grid[3], block[3]; /* cuda_gpu_kern_gb_sum */
	uint64_t count, total, min, max;
	double avg, median, stddev;
	bool saturated; /* total passed 2^64 - 1: shown as UINT64_MAX (avg is still exact) */
};
/* Groups of report idx after stats_finish, in report order; NULL past the end. */
const struct stats_group_view *stats_group(const struct stats *st, unsigned report, size_t i);
/* Timed records left out of every report because their timestamps were lost (BAD_TIME). */
uint64_t stats_untimed(const struct stats *st);
/*
 * Summaries (summary.c): stats_partial_begin before the scan makes the aggregation keep what a
 * summary needs; after stats_finish, stats_partial_write writes it to path (a temporary file
 * renamed over it; force: replace a regular file).  0 or -errno with err.  stats_summarized: the
 * reports a summary carries (the others need records).
 */
int stats_partial_begin(struct stats *st);
int stats_partial_write(struct stats *st, const struct report_set *set, const char *path,
			bool force, char *err, size_t errlen);
bool stats_summarized(unsigned report);
/* One group of a summary's aggregates, as stats_summary_each hands it out (valid during the call).
 */
struct stats_summary_group {
	unsigned report;	     /* index into report_defs */
	const char *name;	     /* kernel names as recorded (mangled) */
	unsigned style;		     /* nvtx_sum: push/pop or start/end; the stack report's "by" */
	const int32_t *gb;	     /* grid[3], block[3] (cuda_gpu_kern_gb_sum) */
	uint64_t n, total, min, max; /* exact */
	unsigned __int128 sq;	     /* sum of squares, exact while values < 2^32 */
	long double lsq;
	const struct tally_sketch *sk;
};
typedef int (*stats_summary_fn)(void *ctx, const struct stats_summary_group *g);
/* Every group of a SUMMARY chunk's payload (a STATS part; other parts hold none).  0 or fn's
 * non-zero value; a damaged payload ends the groups early. */
int stats_summary_each(const uint8_t *payload, size_t len, stats_summary_fn fn, void *ctx);

/* The analyses behind the reports, for the page and the exports (NULL: not computed). */
struct bd_row;
struct bound_row;
struct qseries;
struct mem_usage;
struct report_jobs;
const struct bd_row *stats_breakdown(const struct stats *st, size_t *n);
/* kern_rank_spread's rows (spread.h): the top kernels' figures per process; NULL when not made. */
struct spread_row;
const struct spread_row *stats_spread(const struct stats *st, size_t *n);
/* What bounds each step, per process and device with steps (bound.h); NULL when not made. */
const struct bound_row *stats_bound(const struct stats *st, size_t *n);
/* gpu_gaps' gaps (gaps.h), each of its one class, when a report asked for them. */
struct report_gap;
const struct report_gap *stats_gaps(const struct stats *st, size_t *n);
const struct qseries *stats_queues(const struct stats *st, size_t *n);
const struct mem_usage *stats_mem_usage(const struct stats *st);
/* The jobs the traces belong to (after stats_finish); more than one: they do not go together. */
const struct report_jobs *stats_jobs(const struct stats *st);
/* The warning to print when the traces are of several jobs, written with prefix ("# " in CSV). */
void stats_jobs_warning(const struct stats *st, FILE *out, const char *prefix);

#endif
