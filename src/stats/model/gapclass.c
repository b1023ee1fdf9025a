/* SPDX-License-Identifier: MIT */
/*
 * The one class of each gap (gaps.h: idle, unproven, busy outside the trace) into every figure
 * that counts idle time.  The gaps are classed by the ledger when their section ends, and by the
 * GPU metrics only after the metrics' second pass (metricwin.c); then a gap the counters show
 * busy leaves the idle time of gpu_time_breakdown (its device's row: Idle, Idle in Gaps, the
 * longest idle gap) and of gpu_idle_breakdown (its class), and is counted as busy outside the
 * trace there, so that gpu_gaps, the breakdowns, gpu_idle_why, the diagnosis and the page give one
 * figure.  Both lists are the same gaps: a device's stretches of no work of at least gap_min.
 */
#include <stdlib.h>

#include "stats-int.h"

/* The breakdown row of (section, device): rows come by section, devices by id in each. */
static struct bd_row *row_of(struct bd_row *rows, size_t n, unsigned sec, uint32_t device)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rows[mid].section < sec ||
		    (rows[mid].section == sec && rows[mid].device < device))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && rows[lo].section == sec && rows[lo].device == device ? &rows[lo] : NULL;
}

static uint64_t less(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* gpu_time_breakdown: busy-outside gaps out of each device's idle time, the longest idle gap
 * found again among the others. */
static void classify_breakdown(struct stats *st)
{
	size_t nrows, ngaps, i;
	struct bd_row *rows = st->bd ? breakdown_rows_edit(st->bd, &nrows) : NULL;
	const struct report_gap *g = st->gaps ? report_gpu_gaps_list(st->gaps, &ngaps) : NULL;
	struct bd_row *r;

	if (!rows || !g)
		return;
	for (i = 0; i < ngaps; i++) {
		uint64_t len = g[i].t1 - g[i].t0;

		if (g[i].stream != REPORT_GAP_ALL_STREAMS ||
		    !(r = row_of(rows, nrows, g[i].section, g[i].device)))
			continue;
		if (report_gap_class(&g[i]) == GAP_BUSY_OUTSIDE) {
			r->outside += len;
			r->idle = less(r->idle, len);
			r->gap_idle = less(r->gap_idle, len);
			if (r->longest_gap_at == g[i].t0)
				r->longest_gap = 0; /* found again below */
		}
	}
	for (i = 0; i < ngaps; i++) {
		uint64_t len = g[i].t1 - g[i].t0;

		if (g[i].stream != REPORT_GAP_ALL_STREAMS ||
		    report_gap_class(&g[i]) == GAP_BUSY_OUTSIDE ||
		    !(r = row_of(rows, nrows, g[i].section, g[i].device)) || len <= r->longest_gap)
			continue;
		r->longest_gap = len;
		r->longest_gap_at = g[i].t0;
		r->longest_unproven = g[i].unproven;
	}
}

/* The index of the total of (section, device), or n: totals come by section, devices by id. */
static size_t total_of(const struct report_idle_total *t, size_t n, unsigned sec, uint32_t device)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t[mid].section < sec || (t[mid].section == sec && t[mid].device < device))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && t[lo].section == sec && t[lo].device == device ? lo : n;
}

/* gpu_idle_breakdown (and the diagnosis's idle cause): busy-outside holes out of their class. */
static void classify_idle(struct stats *st)
{
	size_t nholes, ntot, i, k;
	const struct report_idle_gap *h = st->idle ? report_idle_gaps(st->idle, &nholes) : NULL;
	struct report_idle_total *t = st->idle ? report_idle_totals_edit(st->idle, &ntot) : NULL;

	for (i = 0; h && i < nholes; i++) {
		uint64_t len = h[i].gap.t1 - h[i].gap.t0;

		if (report_gap_class(&h[i].gap) != GAP_BUSY_OUTSIDE)
			continue;
		if ((k = total_of(t, ntot, h[i].gap.section, h[i].gap.device)) == ntot)
			continue;
		t[k].holes[h[i].cls] -= t[k].holes[h[i].cls] ? 1 : 0;
		t[k].ns[h[i].cls] = less(t[k].ns[h[i].cls], len);
		if (h[i].after_sync)
			t[k].after_sync[h[i].cls] = less(t[k].after_sync[h[i].cls], len);
		t[k].outside_holes++;
		t[k].outside_ns += len;
	}
}

int stats_classify_gaps(struct stats *st, const struct report_set *set)
{
	(void)set;
	classify_breakdown(st);
	classify_idle(st);
	return st->why ? idle_why_drop_outside(st->why) : 0;
}
