/* SPDX-License-Identifier: MIT */
/*
 * GPU gaps with proof (docs/stats.md, gpu_gaps and gpu_time_util): the stretches where a device,
 * or one stream of it, ran nothing for at least gap_min, each of one class (report_gap_class),
 * the one every output reads:
 *   unproven  a loss window, the end of a trace that was not closed, a span outside the collection
 *             window, damage, or a loss of unknown time overlaps it: the hole may be lost records;
 *   busy outside the trace
 *             no record was lost, but the device's GPU metrics (PM sampling, metricsum.h) show
 *             it busy there, SM Active or GR Active above GAP_BUSY_PCT on average: work that no
 *             record of these traces holds (another process, or work not traced) ran;
 *   idle      the ledger proves no record was lost and no counter says otherwise: real idle time;
 * and the busy fraction of each device per time bucket, with the buckets that overlap a loss
 * marked.
 *
 * Streaming: feed every record batch (report_gpu_gaps_add), then call report_gpu_gaps_section
 * when a section ends (its loss windows are complete then); its gaps and buckets are appended to
 * the result.  Gaps need no per-record memory: per device and per stream, the busy time is kept
 * as segments closed over anything shorter than gap_min, so memory follows the number of gaps,
 * whatever the order records come in.  Utilization (opts.util) keeps 24 bytes per GPU record of
 * the section being read, in a spill (spill.h: past its budget, a temporary file).
 * report_gpu_gaps() does it all in one pass over a set.
 */
#ifndef TALLY_STATS_GAPS_H
#define TALLY_STATS_GAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

#define REPORT_GAP_ALL_STREAMS UINT32_MAX /* a gap of the whole device */

struct report_gap {
	unsigned section;   /* report_section index */
	uint32_t device;    /* device id */
	uint32_t stream;    /* stream id, or REPORT_GAP_ALL_STREAMS */
	uint64_t t0, t1;    /* aligned ns: end of the work before, start of the work after */
	bool unproven;	    /* something lost may have run here */
	char why[240];	    /* "dropped_cupti: 500 in ...", or "no loss overlaps it", and metrics */
	uint32_t next_corr; /* correlation id of the work that ended the gap (starts at t1) */
	/* The device's GPU metrics over a device gap, once gm_windows_pass (metricsum.h) ran:
	 * sampled_ns of its interior was sampled (0: no metrics), SM Active's mean and max (%)
	 * there, and active when SM Active was above 0: the GPU ran work that no record of this
	 * trace holds (another process, or work that was not traced), so the gap is not idle. */
	uint64_t sampled_ns;
	double sm_active, sm_active_max, gr_active;
	bool active; /* SM Active or GR Active above GAP_BUSY_PCT */
};

/* A gap whose SM Active or GR Active mean is above this (%) was busy outside the trace: below it
 * is the counters' noise floor on an idle GPU (0.0 on the H200), above it a GPU doing work. */
#define GAP_BUSY_PCT 1.0

enum gap_class {
	GAP_IDLE,
	GAP_UNPROVEN,
	GAP_BUSY_OUTSIDE,
};

/* The one class of a gap (above), and its name as every output writes it. */
enum gap_class report_gap_class(const struct report_gap *g);
const char *report_gap_class_name(enum gap_class c);

/* Where a device (of a section) ran work: from its first record's start to its last one's end. */
struct report_span {
	unsigned section;
	uint32_t device;
	uint64_t t0, t1; /* aligned */
};

struct report_util {
	unsigned section;
	uint32_t device;
	uint64_t t0, t1; /* the bucket, aligned ns */
	double busy;	 /* fraction of the bucket some GPU work ran, 0..1 */
	bool loss;	 /* a loss overlaps the bucket: busy may be low */
};

struct report_gaps_opts {
	uint64_t gap_min_ns; /* gaps shorter than this are not listed (default 1 ms) */
	uint64_t bucket_ns;  /* gpu_time_util bucket; 0: the device's span / 20 */
	bool util; /* compute gpu_time_util too (spills every GPU interval: 24 bytes each) */
	bool devices_only; /* whole devices only, no gaps per stream */
	/* When set, each gap is handed to each(each_ctx, gap) as it is found (when its section
	 * ends) instead of being kept in the list: a consumer of every hole (gap_min_ns 1) holds
	 * none of them.  A non-zero return stops the section and is returned. */
	int (*each)(void *ctx, const struct report_gap *g);
	void *each_ctx;
};

struct report_gpu_gaps;

struct report_gpu_gaps *report_gpu_gaps_new(const struct report_gaps_opts *o);
void report_gpu_gaps_free(struct report_gpu_gaps *g);
/* Take the GPU records of a batch (others are ignored).  0 or -ENOMEM. */
int report_gpu_gaps_add(struct report_gpu_gaps *g, const struct report_section *rs,
			const struct tally_record *r, size_t n);
/* rs has ended: compute its gaps and buckets.  0 or -ENOMEM. */
int report_gpu_gaps_section(struct report_gpu_gaps *g, const struct report_section *rs);
/*
 * Instead of report_gpu_gaps_section: rs has ended, and only its busy time is wanted (a summary's
 * figure): the ns its devices ran anything, idle stretches shorter than gap_min counted as busy.
 * Its state is freed; no gap is listed.
 */
uint64_t report_gpu_gaps_take_busy(struct report_gpu_gaps *g, const struct report_section *rs);
/* Results so far, in section order, each section's device gaps first, then per stream. */
const struct report_gap *report_gpu_gaps_list(const struct report_gpu_gaps *g, size_t *n);
const struct report_util *report_gpu_util_list(const struct report_gpu_gaps *g, size_t *n);
/* Each device's span of work, in section order (what lies between its device gaps is busy). */
const struct report_span *report_gpu_span_list(const struct report_gpu_gaps *g, size_t *n);
/* The gap list, writable, for the passes that add to what a gap says (metricsum.h). */
struct report_gap *report_gpu_gaps_edit(struct report_gpu_gaps *g, size_t *n);
/* A device whose span the bucket would cut into more than REPORT_UTIL_MAX_BUCKETS buckets has
 * none listed: the most buckets asked for on such a device, 0 when none was refused. */
#define REPORT_UTIL_MAX_BUCKETS 100000
uint64_t report_gpu_util_refused(const struct report_gpu_gaps *g);

/*
 * Is [t0, t1] (aligned ns) of rs proven idle?  true, with why, when something lost may lie in it:
 * a loss window over it, the part after the last ledger of a trace that was not closed, a span
 * outside the collection window, damage or a loss with no time; else false, why saying the ledger
 * proves it.  The one rule of proof for every idle figure (gpu_gaps, gpu_time_breakdown, the page).
 */
bool report_gap_unproven(const struct report_section *rs, uint64_t t0, uint64_t t1, char *why,
			 size_t len);

/*
 * One pass over an opened set (report_set_open; not yet scanned) computing every section's gaps
 * and buckets.  Returns 0 and *out (free with report_gpu_gaps_free), or -errno with err.
 */
int report_gpu_gaps(struct report_set *set, const struct report_gaps_opts *o,
		    struct report_gpu_gaps **out, char *err, size_t errlen);

#endif
