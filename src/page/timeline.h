/* SPDX-License-Identifier: MIT */
/*
 * What tally report draws, aggregated in C so that the page stays small and fast on traces of
 * millions of records: lanes (a stream of a device, a thread's API calls, a thread's NVTX ranges,
 * a whole device), each cut into a fixed number of level-of-detail buckets (busy ns, count, the
 * longest event's name); the exact events only of the time windows sparse enough to afford them;
 * the ledger's snapshots; per section the figures the ranks table compares.
 *
 * Two passes over the traces: the first (with stats) finds the time span, the second fills the
 * buckets, whose width depends on the span.
 */
#ifndef TALLY_PAGE_TIMELINE_H
#define TALLY_PAGE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"
#include "trace-set.h"

enum tl_lane_type {
	TL_LANE_GPU,	 /* kernels, copies and memsets of one stream of one device */
	TL_LANE_API,	 /* runtime and driver API calls of one thread */
	TL_LANE_NVTX,	 /* NVTX ranges of one thread */
	TL_LANE_DEVICE,	 /* every GPU record of one device (its busy curve) */
	TL_LANE_SAMPLES, /* host samples of one thread, each its sampling period long */
	TL_LANE_OSRT,	 /* blocking calls of one thread */
	TL_LANE_TYPES,
};

/*
 * One budget for the whole page, whatever the number of ranks: memory is lanes x buckets.  Past
 * it, every further stream or thread, of any rank, goes into one shared lane per type (sec and a
 * TL_LANE_OTHER).  Device lanes are served first, up to half the budget, so that a run of many
 * ranks shows as many whole devices as it can before any one rank's streams and threads.
 */
#define TL_LANES_MAX  512
#define TL_LANE_OTHER UINT32_MAX /* tl_lane.sec and .a of a shared lane */
/* Ledger snapshots kept per section: a page of many ranks over hours would otherwise keep one a
 * second per rank.  A section with more keeps every 2nd, 4th ... (and always its last). */
#define TL_SNAPS_BUDGET	     262144
#define TL_SNAPS_PER_SECTION 4096

struct tl_lane {
	uint32_t sec, type, a, b; /* a: device or thread; b: stream */
	uint64_t *busy;		  /* ns of events inside each bucket */
	uint32_t *count;	  /* events starting in each bucket */
	uint32_t *top;		  /* name (index + 1) of the event longest inside the bucket */
	uint64_t *top_ns;
	uint64_t events, busy_ns;
};

/* One exact event, for windows sparse enough to be drawn one by one. */
struct tl_event {
	uint64_t start, dur; /* start relative to the timeline's t0 */
	uint32_t lane, name, corr, window;
};

/* What the page draws of a ledger snapshot. */
enum { TL_SNAP_COUNTERS = 9 };
struct tl_snap {
	uint64_t t_end, slice, loss;
	uint64_t v[TL_SNAP_COUNTERS]; /* timeline-json.c's snap_counters[], in order */
	bool final;
};

struct tl_section {
	uint64_t t_min, t_max; /* aligned; t_min UINT64_MAX while empty */
	struct tl_snap *snaps;
	size_t nsnaps, snap_cap, snap_stride, snaps_seen;
	struct tally_ledger *last; /* the latest snapshot whole (its flush counters) */
	uint32_t *name_map[2];	   /* pass 2, name id -> name index + 1: [0] kernels, [1] others */
	uint32_t nmap[2];
	uint32_t memop_name[17]; /* memset, then memcpy by copy kind: name index + 1 */
	uint32_t *stack_name;	 /* pass 2, samples: stack id -> name index + 1 (innermost frame) */
	uint32_t nstack_name;
};

struct timeline {
	unsigned nbuckets;     /* per lane */
	unsigned nwindows;     /* exact-event windows (each nbuckets / nwindows buckets) */
	uint32_t window_cap;   /* events kept per window while counting */
	uint64_t exact_budget; /* events written, at most */
	/* aligned: t0 the one time origin of every output (stats_time_base), at the first timed
	 * record or before it; first the first record's start; t1 the last record's end */
	uint64_t t0, first, t1;
	double bucket_ns;
	struct tl_section *secs;
	size_t nsecs;
	struct tl_lane *lanes;
	size_t nlanes, lane_cap;
	struct tally_map lane_map; /* (sec, type, a, b) -> lane index + 1 */
	struct {
		uint32_t sec, a, b, lane; /* what was asked for last, and the lane (index + 1) */
	} last_lane[TL_LANE_TYPES];
	size_t device_lanes;   /* lanes of type TL_LANE_DEVICE of a section */
	size_t device_reserve; /* device lanes that may still come (pass 1's count, capped) */
	struct tally_map pass1_devices; /* (sec, device) seen in pass 1 */
	size_t snaps_per_section;
	char **names; /* owned */
	size_t nnames, name_cap;
	struct tally_map name_map; /* (hash, length) of a name -> index + 1 */
	size_t summaries;	   /* sections from summaries: figures, no timeline */

	struct tl_event *events;
	size_t nevents, event_cap;
	uint32_t *window_count; /* events per window (all of them, kept or not) */
	uint8_t *window_exact;	/* after timeline_choose_exact: its events are written */
	bool failed;		/* out of memory */
	struct gm *metrics;	/* GPU metric curves (timeline-metrics.c), NULL: none */
	double metric_bucket_ns;
};

struct timeline *timeline_new(unsigned nbuckets, uint64_t exact_budget);
void timeline_free(struct timeline *tl);
/* First pass: span, kernel time per name, ledger snapshots; inputs: files in the set (it shares
 * the snapshot budget). */
void timeline_pass1_ops(struct timeline *tl, struct report_scan_ops *ops, size_t inputs);
/* The snapshot the page draws of a ledger (timeline-json.c names its counters). */
void timeline_snap_of(const struct tally_ledger *l, struct tl_snap *s);
/* Between the passes: fix the span (from origin, stats_time_base, to the last record's end),
 * allocate per-section state. */
int timeline_prepare(struct timeline *tl, const struct report_set *set, uint64_t origin);
/* Second pass: buckets and exact events. */
void timeline_pass2_ops(struct timeline *tl, struct report_scan_ops *ops);

/* Whether window w's events are all kept and fit the budget (after pass 2). */
bool timeline_window_exact(const struct timeline *tl, uint32_t w);
/* Chooses the exact windows: sparsest first, while the budget lasts. */
void timeline_choose_exact(struct timeline *tl);

/*
 * The page's data (everything but stats and the verdict) as one JSON object; the figures per
 * process (busy, idle, compute ...), the queue and memory curves come from the analyses of st,
 * the same code as tally stats' reports, so the page and stats agree.
 */
struct tally_json;
struct stats;
void timeline_write_json(struct timeline *tl, const struct report_set *set, const struct stats *st,
			 struct tally_json *j);

/* ---- idle stretches (timeline-gaps.c) ----------------------------------------------------- */

struct tl_gap {
	uint32_t
	    lane; /* a TL_LANE_DEVICE lane (the whole device) or a TL_LANE_GPU one (a stream) */
	uint64_t start, end;
	bool unproven; /* something lost may lie in it: may not have been idle */
	uint8_t cls;   /* gaps.h's one class: idle, unproven, busy outside the trace */
	char why[240]; /* gpu_gaps' Why: the loss that makes it unproven, or none; its metrics */
};

/* Index of an existing lane, or -1. */
static inline long timeline_find_lane(const struct timeline *tl, uint32_t sec, uint32_t type,
				      uint32_t a, uint32_t b)
{
	return (long)tally_map_get(&tl->lane_map, tally_key32(sec, type), tally_key32(a, b)) - 1;
}

/*
 * The gaps of every device and stream, gpu_gaps' own (tally stats' model: the same gaps from the
 * same origin, each of its one class), placed on the timeline's lanes.  Caller frees *out.
 */
int timeline_gaps(const struct timeline *tl, const struct stats *st, struct tl_gap **out,
		  size_t *n);

/* ---- GPU metric curves (timeline-metrics.c) ------------------------------------------------ */

struct gm;
/* Between the passes, when the traces hold GPU metrics: curves at the busy curves' resolution. */
int timeline_metrics_prepare(struct timeline *tl);
/* After pass 2, which feeds tl->metrics (metricsum.h) itself when it was prepared. */
int timeline_metrics_finish(struct timeline *tl);
/* The "metrics" member of the page's data. */
void timeline_metrics_json(const struct timeline *tl, struct tally_json *j);

#endif
