/* SPDX-License-Identifier: MIT */
/*
 * GPU metrics for people (docs/stats.md: gpu_metrics_sum, gpu_metrics_nvtx_sum, and the SM Active
 * column of gpu_gaps).  A trace of GPU metrics holds one record per metric per sample (10 kHz x
 * ~14 metrics: 140,000 records a second), so nothing here keeps samples: each series (one metric
 * of one device of one section) keeps running sums, its extremes and a quantile sketch
 * (wsketch.h), and optionally its curve in a fixed number of time buckets (for the page).
 *
 * Metrics over stretches of time (a gap, an NVTX range, the time the GPU was busy) need the
 * stretches first, and they are known only when a section's records are all read, so they take a
 * second pass over the traces (gm_windows_pass), reading the GPU_METRIC records only.
 *
 * A device whose metrics another process sampled (GPU_METRICS state "elsewhere") takes them from
 * that process's trace when it is in the set: devices are matched by UUID, on the aligned clock.
 */
#ifndef TALLY_STATS_METRICSUM_H
#define TALLY_STATS_METRICSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaps.h"
#include "trace-set.h"

#define GM_ABOVE_PCT   80.0 /* gpu_metrics_sum's threshold: 80% (of the peak, or of the max) */
#define GM_SM_ACTIVE   "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define GM_GR_ACTIVE   "gr__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define GM_NVTX_GROUPS 64 /* gpu_metrics_nvtx_sum: range names with the most time, at most */
#define GM_NO_METRICS  "the trace(s) hold no GPU metrics (record with --gpu-metrics)"

/* One row of gpu_metrics_sum: a metric of a device of a section, or (samples 0 and why set) a
 * device of a section whose metrics are not in it. */
struct gm_series_view {
	unsigned section;
	uint32_t device;
	const char *name;  /* CUPTI's metric name; NULL on a device row */
	const char *label; /* "SM Active" */
	const char *unit;  /* "%", "bytes/s", "Hz", "" */
	bool percent;
	unsigned order;		      /* place in the device's metric set (UINT32_MAX: none) */
	uint64_t samples, covered_ns; /* samples, and the time they cover */
	uint64_t merged, after_gap;   /* samples flagged MERGED, AFTER_GAP */
	uint64_t first_ns, last_ns;   /* aligned: the first sample's start, the last one's end */
	/* in the unit; each sample weighs its duration, so the quantiles are shares of time */
	double mean, p50, p90, min, max;
	double threshold; /* GM_ABOVE_PCT for percentages, GM_ABOVE_PCT% of max otherwise */
	double above;	  /* share of the covered time at or above the threshold, 0..1 */
	/* over the time the device ran work (outside gpu_gaps' device gaps), when the second pass
	 * ran: busy_ns of it was sampled */
	double busy_mean;
	uint64_t busy_ns;
	const char *why; /* a device row: why the section holds no samples of it */
	bool saturated;	 /* the samples' time passed 2^64 ns: covered_ns stopped there */
};

struct gm;

/* curves: 0 buckets for none, else the span [t0, t0 + nbuckets * bucket_ns) (aligned ns). */
struct gm *gm_new(uint64_t t0, double bucket_ns, unsigned nbuckets);
void gm_free(struct gm *g);
/* Take the GPU_METRIC records of a batch (others are ignored).  0 or -ENOMEM. */
int gm_add(struct gm *g, struct report_section *rs, const struct tally_record *r, size_t n);
/* rs has ended: its metric sets (labels, units, order) and the states of its devices. */
int gm_section_end(struct gm *g, const struct report_section *rs);
/* After the pass: means, quantiles and the order of the rows.  0 or -ENOMEM. */
int gm_finish(struct gm *g);
/* GPU_METRIC records seen */
uint64_t gm_records(const struct gm *g);

/* Whether a row's figures met a sum that passed 64 bits (a crafted trace's). */
bool gm_saturated(const struct gm *g);
/* Rows after gm_finish, by section, device, then the metric set's order; NULL past the end. */
const struct gm_series_view *gm_row(const struct gm *g, size_t i);
size_t gm_rows(const struct gm *g);
/* The series of a metric (by CUPTI name or label) of a device of a section, or NULL.  A small
 * API for the diagnosis: e.g. gm_find(g, sec, dev, GM_SM_ACTIVE)->busy_mean. */
const struct gm_series_view *gm_find(const struct gm *g, unsigned section, uint32_t device,
				     const char *name);

/* Curves are kept for the first GM_CURVES_MAX series (16 KiB each at most): a page of more is
 * more than anyone reads, and a crafted trace of a series per sample would take gigabytes. */
#define GM_CURVES_MAX 1024
/* The series past GM_CURVES_MAX, which have no curve. */
size_t gm_curves_left_out(const struct gm *g);
/* A curve (gm_new with buckets): *n means, one per bucket, NAN where no sample covers it.  NULL
 * past the end.  Curves come in row order, device rows left out. */
const struct gm_series_view *gm_curve(struct gm *g, size_t i, const double **mean, size_t *n);

/* ---- metrics over stretches of time: the second pass (metricwin.c) -------------------------- */

/*
 * The second pass: annotate the device gaps gaps[0..n) (gaps.h: sampled_ns, sm_active, active;
 * stream gaps are left as they are) with the GPU metrics of their device, and, when nvtx, fill
 * gpu_metrics_nvtx_sum's rows (gm_nvtx_*) from the NVTX ranges gm_collect_ranges kept, in one
 * more pass over the set's inputs (read again; the set itself stays as it is).  The samples a gap
 * takes are those wholly inside it, one sampling interval from each end (a sample across an edge
 * also measured the work beside the gap).  context (may be NULL): the report_gpu_gaps the gaps
 * come from, or any holding every device's gaps and span: with it, each series' busy_mean (its
 * mean outside its device's gaps) is filled too, and an active gap says which other process of
 * the set ran work on its GPU then.  The gaps may be another report's (gpu_idle_why's), given by
 * address.  Does nothing when gm holds no GPU metrics.  Returns 0 or -errno with err.
 */
int gm_windows_pass(struct gm *gm, struct report_gap *const *gaps, size_t ngaps,
		    const struct report_gpu_gaps *context, bool nvtx, const struct report_set *set,
		    char *err, size_t errlen);

/* Keep the NVTX ranges of a batch (their names and times) for gpu_metrics_nvtx_sum. */
int gm_collect_ranges(struct gm *g, struct report_section *rs, const struct tally_record *r,
		      size_t n);

/* gpu_metrics_nvtx_sum: a row per range name, device of its process, and metric; the range name
 * in range. */
struct gm_nvtx_view {
	const char *range;
	unsigned rank;		      /* of the range name, by total time (0: the most) */
	uint64_t instances, range_ns; /* the ranges of that name in the process, their time */
	struct gm_series_view m;      /* over the samples inside them (weighted by overlap) */
};
size_t gm_nvtx_rows(const struct gm *g);
const struct gm_nvtx_view *gm_nvtx_row(const struct gm *g, size_t i);

#endif
