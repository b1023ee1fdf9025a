/* SPDX-License-Identifier: MIT */
/*
 * Comparing two runs like with like (docs/compare.md): over the same stretch of both (the whole
 * run, an NVTX range, or the capture range), per kernel name and per copy kind the counts, the
 * duration quantiles and a two-sample Kolmogorov-Smirnov distance with a same/differs call; per
 * stream the order of kernels (first divergence, bounded edit distance); and both verdicts and
 * every loss counter side by side.  A side that lost records in the stretch makes the comparison
 * unusable for timing.
 *
 * Memory: 24 bytes per GPU record in the stretch, plus 8 bytes per launch correlation id when a
 * range is asked for; the edit distance needs O(max_edits) more.  The whole run's counts and
 * medians are the model's (tally stats' cuda_gpu_kern_sum and cuda_gpu_mem_time_sum, computed in
 * the same pass), which keeps 8 bytes a GPU record up to its exact-median limit.
 */
#ifndef TALLY_COMPARE_COMPARE_H
#define TALLY_COMPARE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bound.h"
#include "table.h"
#include "trace-set.h"

enum compare_stretch {
	COMPARE_WHOLE,	 /* every GPU record */
	COMPARE_RANGE,	 /* GPU work launched inside NVTX ranges of one name */
	COMPARE_CAPTURE, /* between the collection window's open and close notes */
};

/*
 * The largest --max-edits: Myers' search visits up to max^2 diagonals per stream that differs
 * throughout, so on a 1 M-kernel stream 100,000 costs about 14 s more than 1 (docs/compare.md);
 * 10^7 would take hours.
 */
#define COMPARE_MAX_EDITS_CAP 100000u

struct compare_opts {
	enum compare_stretch stretch;
	const char *range_name; /* COMPARE_RANGE: the range's message */
	unsigned range_k;	/* 1-based occurrence in each process; 0: every occurrence */
	double alpha;		/* KS significance level (0.01) */
	double min_effect;	/* smallest relative p50/p90 shift that counts (0.05) */
	unsigned max_edits;	/* edit distance computed up to this; beyond, "more than" */
};

void compare_opts_default(struct compare_opts *o);

enum compare_verdict {
	COMPARE_SAME = 0,
	COMPARE_DIFFERS = 1,
	COMPARE_UNUSABLE = 2, /* a side lost records in the stretch: timings cannot be trusted */
};

const char *compare_verdict_name(enum compare_verdict v); /* "same", "differs", "unusable" */

/* One kernel name or copy kind, both sides. */
struct compare_key {
	char *name;
	unsigned kind; /* TALLY_KIND_KERNEL, _MEMCPY, _MEMSET */
	uint64_t n[2];
	/* ns, as tally stats defines them: p50 is the median of cuda_gpu_kern_sum and
	 * cuda_gpu_mem_time_sum's Med (the mean of the two middle values for an even count; for the
	 * whole run, the model's own figure), p90 and p99 by nearest rank (stats_rank_index) */
	double p50[2];
	uint64_t p90[2], p99[2];
	double shift;	      /* (p50 B - p50 A) / p50 A */
	double ks_d, ks_crit; /* the distance and its critical value at alpha */
	bool differs;
	const char *why; /* "count", "duration", "only in A" ...; NULL when the same */
};

/* One stream (process, device, context, stream), both sides. */
struct compare_stream {
	unsigned process; /* ordinal of the section within its side */
	uint32_t device, context, stream;
	uint64_t len[2];
	int64_t first_divergence; /* position (0-based) of the first differing kernel; -1: none */
	uint64_t edits;		  /* insertions + deletions turning A's order into B's */
	bool edits_capped;	  /* more than max_edits: edits is max_edits + 1 */
};

/* CUPTI's drops by queue, and contexts tied to devices (DROPS chunks, format 1.2). */
struct compare_ctx_drops {
	unsigned process;
	struct tally_drops
	    drops; /* count: dropped; for TALLY_DROPS_SEEN the context's GPU records */
};

struct compare_side_info {
	size_t files, processes;
	bool complete;	    /* every section's verdict */
	bool timing_usable; /* no loss overlapped the stretch, no loss of unknown time */
	char why[512];	    /* why not usable, in words */
	char **reasons;	    /* every verdict reason, "pid N: text" */
	size_t nreasons;
	uint64_t loss[64];    /* loss counters summed over sections, by tally_loss_counters order */
	uint64_t gpu_records; /* GPU records in the stretch */
	uint64_t untimed;     /* GPU records without timestamps (not compared) */
	uint64_t intervals;   /* NVTX ranges / capture windows selected */
	struct compare_ctx_drops *ctx_drops;
	size_t nctx_drops;
};

/* What bounds a side's steps (step_bound: its processes and devices with steps, summed). */
struct compare_bottleneck {
	bool known; /* the side has steps (NVTX ranges, or a repeating pattern of launches) */
	uint64_t rows, steps, step_ns, median_step; /* median_step: of its largest row */
	uint64_t ns[BOUND_CLASSES];
	enum bound_class verdict;
};

struct compare_result {
	struct compare_opts opts;
	char *label[2];
	struct compare_side_info side[2];
	struct compare_key *keys;
	size_t nkeys, keys_differ;
	struct compare_stream *streams;
	size_t nstreams, streams_differ;
	enum compare_verdict verdict;
	/* a side holds summaries (tally stats --partial): quantiles and KS distances come from
	 * quantile sketches (within SKETCH_REL_ERROR; D on the sketches' buckets), and the order
	 * per stream, which summaries do not carry, is not compared */
	bool sketched;
	struct compare_bottleneck bottleneck[2];
};

/*
 * Read both sides (each a list of files or directories) and compare them.  Returns 0 and *out,
 * or -errno with err saying why: -ESRCH for a missing range or capture window (or one asked of
 * a summary), -EPROTO and
 * friends for an unreadable input (report_set_open's errors), -ENOMEM.
 */
int compare_run(char *const *a, size_t na, char *const *b, size_t nb, const struct compare_opts *o,
		struct compare_result **out, char *err, size_t errlen);
void compare_free(struct compare_result *r);

/* Write the comparison as a table, CSV or JSON.  Returns 0 or -errno (output failed). */
int compare_write(const struct compare_result *r, FILE *out, enum report_format fmt);

/* The statistics, exposed for tests: exact KS distance of two sorted samples, its critical
 * value, and the bounded insertion/deletion distance of two sequences. */
double compare_ks_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m);
double compare_ks_critical(size_t n, size_t m, double alpha);
uint64_t compare_edit_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m,
			       unsigned max, bool *capped);

#endif
