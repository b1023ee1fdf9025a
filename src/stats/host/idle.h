/* SPDX-License-Identifier: MIT */
/*
 * Why a GPU sat idle: one classification of idle gaps, after HTA's idle time breakdown, on
 * gpu_gaps' own definition of idle (gaps.h: the stretches where a device ran nothing, each
 * proven idle by the ledger or unproven).  gpu_idle_why, gpu_idle_breakdown and the diagnosis
 * all read it from here (docs/stats.md, "Idle time: host wait, kernel wait, other").
 *
 * Each hole of a device is classed by the work that ended it (the record starting at its end,
 * gaps.h's next_corr) and the API call that launched that work (same correlation id):
 *   host wait    the launching call began after the device went idle: nothing had been
 *                submitted, the GPU waited for the host;
 *   kernel wait  the work had been submitted before the device went idle, and the hole is
 *                shorter than a launch's own overhead (the launching call's duration, or
 *                kernel_wait_ns when set): the GPU's own latency between back-to-back work;
 *   other        submitted before, and a longer hole: the work waited on something else (an
 *                event, another stream, a copy from pageable memory), or its launching call was
 *                not recorded.
 *
 * Streaming, like gaps.h: feed every record batch (report_idle_add), then report_idle_section when
 * a section ends.  Every hole of every device counts in the totals (idle time is the device's
 * span less its busy time, whatever the length of each hole); the holes of at least list_min_ns
 * are also kept, classified, for gpu_idle_why.  A hole that begins while a synchronizing call
 * (idle_is_sync_call) is in flight followed a synchronization: the host waited for the GPU to
 * finish, then had nothing queued; the totals count those apart, whatever their class.  Memory:
 * the devices' busy segments (one per hole), the launching calls of the section being read (24
 * bytes each) and the union of its synchronizing calls, freed when it ends.
 */
#ifndef TALLY_STATS_IDLE_H
#define TALLY_STATS_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaps.h"

enum idle_class {
	IDLE_HOST_WAIT,
	IDLE_KERNEL_WAIT,
	IDLE_OTHER,
	IDLE_CLASSES,
};

/* "host wait", "kernel wait", "other" */
const char *idle_class_name(enum idle_class c);
/* Whether an API call of this name waits for the GPU: a name holding "Synchronize", or a
 * cudaMemcpy / cuMemcpy that is not Async. */
bool idle_is_sync_call(const char *name);

struct report_idle_opts {
	uint64_t list_min_ns;	 /* holes kept for listing: at least this long (0: 1 ms) */
	uint64_t kernel_wait_ns; /* 0: a hole is kernel wait below its launching call's duration */
};

/* One listed hole of a device, classified. */
struct report_idle_gap {
	struct report_gap gap; /* stream is REPORT_GAP_ALL_STREAMS */
	enum idle_class cls;
	bool launch_known;	/* the launching call of the work after it was recorded */
	uint64_t launch_start;	/* aligned ns */
	uint64_t launch_dur;	/* ns */
	uint32_t launch_thread; /* its THREAD (CUPTI's id) */
	uint32_t launch_name;	/* its NAME (a string id of the section) */
	bool after_sync;	/* it began while a synchronizing call was in flight */
	char why[200];		/* the rule's reasoning, in words */
};

/* Per section and device: idle time by class. */
struct report_idle_total {
	unsigned section;
	uint32_t device;
	uint64_t holes[IDLE_CLASSES];	 /* how many */
	uint64_t ns[IDLE_CLASSES];	 /* idle ns */
	uint64_t unproven[IDLE_CLASSES]; /* of which in holes that are not proven idle */
	/* of which in holes that began while a synchronizing call was in flight (the host waited
	 * for the GPU to finish, then had nothing queued) */
	uint64_t after_sync[IDLE_CLASSES];
	/* listed holes the GPU metrics show busy (gaps.h, GAP_BUSY_OUTSIDE), taken out of the
	 * classes above by the model after the metrics' pass (gapclass.c): how many, and their ns
	 */
	uint64_t outside_holes, outside_ns;
	/* the class whose holes the host samples were looked at in: the largest when the section
	 * was read; once busy-outside holes are out another may be the largest, and the samples
	 * then say nothing of it */
	uint8_t sampled_class;
};

struct report_idle;

struct report_idle *report_idle_new(const struct report_idle_opts *o);
void report_idle_free(struct report_idle *x);
/* GPU records feed the holes, API calls the launches and the synchronizing calls; other kinds are
 * ignored.  0 or -ENOMEM. */
int report_idle_add(struct report_idle *x, const struct report_section *rs,
		    const struct tally_record *r, size_t n);
/* rs has ended: classify its holes.  0 or -ENOMEM. */
int report_idle_section(struct report_idle *x, const struct report_section *rs);

/* Results so far, in section order, each section's devices in id order. */
const struct report_idle_gap *report_idle_gaps(const struct report_idle *x, size_t *n);
/* The same, to annotate (the GPU metrics over each hole: gaps.h's sampled_ns, active). */
struct report_idle_gap *report_idle_gaps_edit(struct report_idle *x, size_t *n);
const struct report_idle_total *report_idle_totals(const struct report_idle *x, size_t *n);
/* The same, to take the holes busy outside the trace out of their classes (gapclass.c). */
struct report_idle_total *report_idle_totals_edit(struct report_idle *x, size_t *n);
/* The class with the most idle time of a total (host wait on a tie, then kernel wait). */
enum idle_class report_idle_largest(const struct report_idle_total *t);

/*
 * Every hole (of any length) of rs's devices in the class that holds most of that device's idle
 * time, sorted by start: what the host stacks behind the largest share are sampled against.
 * Valid from report_idle_section(rs) until the next section ends.
 */
struct report_idle_span {
	uint64_t t0, t1;
	uint32_t device;
};
const struct report_idle_span *report_idle_largest_holes(const struct report_idle *x, size_t *n);

/*
 * Every hole of rs's devices (of any length), a device at a time in time order, with its class,
 * whether it began inside a synchronizing call, and the thread that launched the work ending it
 * (CUPTI's id): what the per-step verdicts split (diagnosis/bound.h).  Valid from
 * report_idle_section(rs) until the next section ends.
 */
struct report_idle_hole {
	struct report_idle_span span;
	enum idle_class cls;
	bool after_sync;
	bool launch_known;
	uint32_t launch_thread;
};
const struct report_idle_hole *report_idle_holes(const struct report_idle *x, size_t *n);

#endif
