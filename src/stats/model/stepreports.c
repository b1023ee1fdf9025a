/* SPDX-License-Identifier: MIT */
/*
 * step_bound (docs/stats.md, docs/diagnosis.md): what bounds each step, per process and device
 * with steps (bound.h).  Per process and device: a row "all" (the steady steps: the median step,
 * each class's share of their time, the verdict), a row "start-up", a row per step (the warm-up
 * steps first, each with its verdict) and a row "tail".  The diagnosis, the page and compare read
 * the same rows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stats-int.h"
#include "table.h"

const struct report_col cols_step_bound[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Step", COL_STR},
    {"Start (ns)", COL_I64},
    {"Duration (ns)", COL_U64},
    {"Verdict", COL_STR},
    {"GPU (% of step)", COL_PCT},
    {"Comm (% of step)", COL_PCT},
    {"Data (% of step)", COL_PCT},
    {"Launch (% of step)", COL_PCT},
    {"Sync (% of step)", COL_PCT},
    {"Wait (% of step)", COL_PCT},
    {"Other (% of step)", COL_PCT},
    {"Steps From", COL_STR},
    {NULL},
};
#define FIRST_SHARE 7

enum line_kind { LINE_ALL, LINE_STARTUP, LINE_STEP, LINE_TAIL };

/* Which process and device, and which of its lines, row `row` is. */
static const struct bound_row *locate(const struct stats *st, size_t row, enum line_kind *kind,
				      const struct bound_step **step)
{
	size_t n, ns, i;
	const struct bound_row *r = bound_rows(st->bound, &n);
	const struct bound_step *s = bound_steps(st->bound, &ns);

	for (i = 0; i < n; i++) {
		size_t lines = 3 + r[i].warmup + r[i].nsteps;

		if (row >= lines) {
			row -= lines;
			continue;
		}
		*step = NULL;
		if (row == 0)
			*kind = LINE_ALL;
		else if (row == 1)
			*kind = LINE_STARTUP;
		else if (row == lines - 1)
			*kind = LINE_TAIL;
		else {
			*kind = LINE_STEP;
			*step =
			    r[i].first_step + row - 2 < ns ? &s[r[i].first_step + row - 2] : NULL;
		}
		return &r[i];
	}
	return NULL;
}

static enum bound_class verdict_of(const uint64_t *ns)
{
	enum bound_class best = BOUND_GPU;
	unsigned k;

	for (k = 1; k < BOUND_CLASSES; k++)
		if (ns[k] > ns[best])
			best = (enum bound_class)k;
	return best;
}

static const char *steps_from(const struct view_ctx *x, const struct bound_row *r)
{
	static char buf[200];
	struct report_section *rs =
	    r->section < x->set->nsections ? x->set->sections[r->section] : NULL;

	if (r->range)
		snprintf(buf, sizeof(buf), "NVTX '%s'", r->range);
	else
		snprintf(buf, sizeof(buf), "launches: %s every %" PRIu64 " kernels",
			 rs ? report_kernel_name(rs, r->pattern_name, REPORT_NAME_BASE) : "?",
			 r->period);
	return buf;
}

static void sb_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	static char text[64];
	enum line_kind kind = LINE_ALL;
	const struct bound_step *s = NULL;
	const struct bound_row *r = locate(x->st, row, &kind, &s);
	struct report_section *rs;
	const uint64_t *ns = NULL;
	uint64_t t0 = 0, len = 0, whole = 0;

	if (!r)
		return;
	rs = r->section < x->set->nsections ? x->set->sections[r->section] : NULL;
	if (kind == LINE_ALL) {
		ns = r->ns, whole = r->step_ns, len = r->median_step;
		t0 = r->startup_t1;
	} else if (kind == LINE_STARTUP) {
		t0 = r->startup_t0, len = r->startup_t1 - r->startup_t0;
	} else if (kind == LINE_TAIL) {
		t0 = r->tail_t0, len = r->tail_t1 - r->tail_t0;
	} else if (s) {
		ns = s->ns, whole = s->t1 - s->t0, t0 = s->t0, len = s->t1 - s->t0;
	}
	switch (col) {
	case 0:
		set_s(c, rs && rs->s->rank ? rs->s->rank : "-");
		break;
	case 1:
		set_u(c, rs ? rs->s->pid : 0);
		break;
	case 2:
		set_u(c, r->device);
		break;
	case 3:
		if (kind == LINE_STEP && s)
			snprintf(text, sizeof(text), "%" PRIu64 "%s", s->index,
				 s->warmup ? " (warm-up)" : "");
		set_s(c, kind == LINE_ALL	? "all"
			 : kind == LINE_STARTUP ? "start-up"
			 : kind == LINE_TAIL	? "tail"
						: text);
		break;
	case 4:
		set_i(c, (int64_t)(t0 - x->st->base));
		break;
	case 5:
		set_u(c, len);
		break;
	case 6:
		if (ns)
			set_s(c, bound_class_name(verdict_of(ns)));
		break;
	case 14:
		if (kind == LINE_ALL)
			set_s(c, steps_from(x, r));
		break;
	default:
		if (ns && whole && col >= FIRST_SHARE && col < FIRST_SHARE + BOUND_CLASSES)
			set_d(c, 100.0 * (double)ns[col - FIRST_SHARE] / (double)whole);
	}
}

void view_step_bound(struct view_ctx *x, struct report_view *v)
{
	size_t n, i;
	const struct bound_row *r = x->st->bound ? bound_rows(x->st->bound, &n) : NULL;

	v->cell = sb_cell;
	v->nrows = 0;
	for (i = 0; r && i < n; i++)
		v->nrows += 3 + r[i].warmup + r[i].nsteps;
}
