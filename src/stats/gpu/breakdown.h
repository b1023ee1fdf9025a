/* SPDX-License-Identifier: MIT */
/*
 * Where each device's time went (docs/stats.md, gpu_time_breakdown and comm_compute_overlap): per
 * process and device, over the device's span (the start of its first GPU record to the end of its
 * last), the time some compute kernel ran, the time only communication kernels ran, the time only
 * copies or memsets ran, and the rest: idle, split into what the ledger proves idle and what a
 * loss may hide (report_gap_unproven, the rule gpu_gaps uses).  Overlapping work counts once, in
 * the precedence compute > communication > copy/memset.  A kernel is communication when its name
 * matches the table of communication patterns in breakdown.c (docs/stats.md lists them); every
 * other kernel is compute.
 *
 * Exact unions in bounded memory: per device four interval sets (compute, communication, both,
 * all work), each an exact union of what has come (spans.h), whose segments older than
 * BD_HORIZON_NS behind the latest end seen (or the oldest half, past BD_OPEN_MAX segments) are
 * folded into running sums.  A record that comes later than that, starting before the fold, is
 * counted apart (late) and only its part after the fold is added: the figures then say so.
 * Idle is classed per stretch of the all-work set merged over gap_min (the gaps gpu_gaps lists
 * lie between those stretches; the short idle inside a stretch is classed with the stretch), so
 * memory follows the gaps of at least gap_min, as gpu_gaps' does.
 */
#ifndef TALLY_STATS_BREAKDOWN_H
#define TALLY_STATS_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

#define BD_HORIZON_NS 10000000000ull /* 10 s: how far out of order records may come, exactly */
#define BD_OPEN_MAX   65536 /* segments kept open per set, at most (then the oldest fold) */

struct bd_row {
	unsigned section;
	uint32_t device;
	uint64_t t0, t1;       /* aligned: first start and last end of the device's GPU records */
	uint64_t compute;      /* some compute kernel ran */
	uint64_t comm;	       /* communication kernels ran (all of it, overlapped or not) */
	uint64_t comm_exposed; /* ... and no compute kernel did */
	uint64_t copy_exposed; /* only copies or memsets ran */
	uint64_t busy;	       /* anything ran */
	/* gaps the GPU metrics show busy (gaps.h, GAP_BUSY_OUTSIDE): work no record holds ran;
	 * set by the model after the metrics' pass (gapclass.c), 0 without metrics */
	uint64_t outside;
	/* t1 - t0 - busy - outside: no work ran; the part a loss may hide */
	uint64_t idle, idle_unproven;
	uint64_t gap_idle, gap_unproven; /* idle in gaps of at least gap_min (gpu_gaps' rows) */
	uint64_t longest_gap, longest_gap_at; /* the longest such gap, and where it starts */
	bool longest_unproven;
	uint64_t copy_ns[16]; /* copy time by kind (CUPTI's memcpy kind 0..14, 15 memset) */
	uint64_t kernels, copies;
	uint64_t late, late_ns; /* records that came after their time was folded; ns not counted */
};

struct breakdown;

/* Is a kernel of this name (mangled or not) communication?  (breakdown.c's table) */
bool breakdown_kernel_is_comm(const char *name);

struct breakdown *breakdown_new(uint64_t gap_min_ns);
void breakdown_free(struct breakdown *b);
/* Take the GPU records of a batch (others are ignored).  0 or -ENOMEM. */
int breakdown_add(struct breakdown *b, struct report_section *rs, const struct tally_record *r,
		  size_t n);
/* rs has ended: fold its devices into rows (its loss windows are all known now). */
int breakdown_section_end(struct breakdown *b, struct report_section *rs);
/* Rows so far, in section order, devices by id within a section. */
const struct bd_row *breakdown_rows(const struct breakdown *b, size_t *n);
/* The same, for the model to class the gaps the GPU metrics show busy (gapclass.c). */
struct bd_row *breakdown_rows_edit(struct breakdown *b, size_t *n);

#endif
