/* SPDX-License-Identifier: MIT */
/*
 * The page's gaps: those of `tally stats -r gpu_gaps` (gaps.c: exact, from the records, each of
 * its one class: idle, unproven with the reason, or busy outside the trace), from the pass the page
 * shares with stats, placed here on the timeline's lanes: a device's gaps on its device row, a
 * stream's on its stream row.  The timeline's origin is stats' time base: the times are theirs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gaps.h"
#include "stats.h"
#include "timeline.h"

static long gap_lane(const struct timeline *tl, const struct report_gap *g)
{
	if (g->stream == REPORT_GAP_ALL_STREAMS)
		return timeline_find_lane(tl, g->section, TL_LANE_DEVICE, g->device, 0);
	return timeline_find_lane(tl, g->section, TL_LANE_GPU, g->device, g->stream);
}

int timeline_gaps(const struct timeline *tl, const struct stats *st, struct tl_gap **out, size_t *n)
{
	const struct report_gap *g;
	size_t ng = 0, i;
	struct tl_gap *v;

	*out = NULL;
	*n = 0;
	g = stats_gaps(st, &ng);
	if (!ng)
		return 0;
	v = calloc(ng, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < ng; i++) {
		long lane = gap_lane(tl, &g[i]);

		if (lane < 0 || g[i].t0 < tl->t0 || g[i].t1 < g[i].t0)
			continue; /* work outside the timeline's span: nothing to draw it on */
		v[*n].lane = (uint32_t)lane;
		v[*n].start = g[i].t0 - tl->t0;
		v[*n].end = g[i].t1 - tl->t0;
		v[*n].unproven = g[i].unproven;
		v[*n].cls = (uint8_t)report_gap_class(&g[i]);
		snprintf(v[*n].why, sizeof(v[*n].why), "%s", g[i].why);
		(*n)++;
	}
	*out = v;
	return 0;
}
