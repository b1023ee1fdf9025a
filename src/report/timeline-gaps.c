/* SPDX-License-Identifier: MIT */
/*
 * Idle stretches of each device, from the timeline's buckets: a run of buckets in which the device
 * ran nothing.  A stretch is "unproven" when its section lost records in a window that overlaps it
 * (or lost them with no time to place them: damage, no closing ledger): the GPU may have been busy
 * with work the trace cannot show, so the page must not draw it as idle.  The resolution is one
 * bucket; an exact gap report computed from the records can replace this file whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "timeline.h"

#define MIN_GAP_BUCKETS 2 /* one empty bucket is the grain of the picture, not a stretch */

struct gap_list {
	struct tl_gap *v;
	size_t n, cap;
};

static int gap_push(struct gap_list *g, const struct tl_gap *x)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		struct tl_gap *v = realloc(g->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = *x;
	return 0;
}

/* Loss that has no time window of its own makes every stretch of the section unproven. */
static const struct tally_reason *loss_unplaced(const struct report_section *rs)
{
	size_t i;

	for (i = 0; i < rs->verdict.nreasons; i++)
		if (rs->verdict.reasons[i].code != TALLY_R_LOSS)
			return &rs->verdict.reasons[i];
	return NULL;
}

static const struct tally_window *overlapping_loss(const struct timeline *tl,
						   const struct report_section *rs, uint64_t start,
						   uint64_t end)
{
	size_t i;

	for (i = 0; i < rs->s->nwindows; i++) {
		const struct tally_window *w = &rs->s->windows[i];
		uint64_t b = report_time(rs, w->t_begin), e = report_time(rs, w->t_end);

		if (b < tl->t0 + end && e + 1 > tl->t0 + start)
			return w;
	}
	return NULL;
}

/* Whether the stretch is proven idle, and why not. */
static void judge_gap(const struct timeline *tl, const struct report_section *rs, struct tl_gap *g)
{
	const struct tally_reason *r = loss_unplaced(rs);
	const struct tally_window *w = r ? NULL : overlapping_loss(tl, rs, g->start, g->end);
	const struct tally_counter_info *ci = w ? tally_counter_info(w->counter) : NULL;

	g->unproven = r || w;
	if (r)
		snprintf(g->why, sizeof(g->why), "%s: lost with no time to place it",
			 tally_reason_code_name(r->code));
	else if (w)
		snprintf(g->why, sizeof(g->why), "%s: %llu lost in a window over it",
			 ci ? ci->name : "loss", (unsigned long long)w->count);
	else
		snprintf(g->why, sizeof(g->why), "no loss overlaps it");
}

static int lane_gaps(const struct timeline *tl, const struct report_set *set, uint32_t li,
		     struct gap_list *out)
{
	const struct tl_lane *l = &tl->lanes[li];
	const struct tl_section *ts = &tl->secs[l->sec];
	const struct report_section *rs = set->sections[l->sec];
	unsigned b = (unsigned)((double)(ts->t_min - tl->t0) / tl->bucket_ns), run = b, last;
	int rc = 0;

	last = (unsigned)((double)(ts->t_max - tl->t0) / tl->bucket_ns);
	if (last >= tl->nbuckets)
		last = tl->nbuckets - 1;
	for (; b <= last + 1 && rc == 0; b++) {
		struct tl_gap g;

		if (b <= last && !l->busy[b])
			continue;
		if (b - run >= MIN_GAP_BUCKETS) {
			g.lane = li;
			g.start = (uint64_t)(run * tl->bucket_ns);
			g.end = (uint64_t)(b * tl->bucket_ns);
			judge_gap(tl, rs, &g);
			rc = gap_push(out, &g);
		}
		run = b + 1;
	}
	return rc;
}

int timeline_gaps(const struct timeline *tl, const struct report_set *set, struct tl_gap **out,
		  size_t *n)
{
	struct gap_list g = {0};
	size_t i;
	int rc = 0;

	for (i = 0; i < tl->nlanes && rc == 0; i++) {
		const struct tl_lane *l = &tl->lanes[i];

		if (l->type == TL_LANE_DEVICE && l->sec < set->nsections && l->sec < tl->nsecs &&
		    tl->secs[l->sec].t_min != UINT64_MAX)
			rc = lane_gaps(tl, set, (uint32_t)i, &g);
	}
	if (rc < 0) {
		free(g.v);
		g.v = NULL;
		g.n = 0;
	}
	*out = g.v;
	*n = g.n;
	return rc;
}
