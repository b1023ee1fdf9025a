/* SPDX-License-Identifier: MIT */
/*
 * The analyses' reports (docs/stats.md, "Where the time went, across ranks"): gpu_time_breakdown,
 * comm_compute_overlap, kern_rank_spread, rank_steps, cuda_launch_stats, gpu_queue_depth and the
 * diagnosis, as views for the table writer, over what stats.c's analyses computed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stats-int.h"
#include "table.h"
#include "units.h"

static void set_pct(struct report_cell *c, uint64_t part, uint64_t whole)
{
	if (whole)
		set_d(c, 100.0 * (double)part / (double)whole);
}

static const struct report_section *sec_of(const struct view_ctx *x, unsigned i)
{
	return i < x->set->nsections ? x->set->sections[i] : NULL;
}

/* The rank as recorded ("RANK=3"), or "-" */
static const char *rank_of(const struct view_ctx *x, unsigned i)
{
	const struct report_section *rs = sec_of(x, i);

	return rs && rs->s->rank ? rs->s->rank : "-";
}

static uint64_t pid_of(const struct view_ctx *x, unsigned i)
{
	const struct report_section *rs = sec_of(x, i);

	return rs ? rs->s->pid : 0;
}

/* Times relative to the stats' base, as the trace reports'. */
static int64_t rel(const struct view_ctx *x, uint64_t t)
{
	return (int64_t)(t - x->st->base);
}

/* ---- gpu_time_breakdown ----------------------------------------------------------------- */

/* The parts of a device's span, each counted once: compute, then communication no compute
 * overlaps, then copies no kernel overlaps, then gaps the GPU metrics show busy (work no record
 * holds), then idle: they add up to the span. */
const struct report_col cols_breakdown[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Span (ns)", COL_U64},
    {"Compute (ns)", COL_U64},
    {"Compute (% of span)", COL_PCT},
    {"Communication (ns)", COL_U64},
    {"Communication (% of span)", COL_PCT},
    {"Copy/Memset (ns)", COL_U64},
    {"Copy/Memset (% of span)", COL_PCT},
    {"Busy Outside Trace (ns)", COL_U64},
    {"Busy Outside Trace (% of span)", COL_PCT},
    {"Idle (ns)", COL_U64},
    {"Idle (% of span)", COL_PCT},
    {"Idle Proven (ns)", COL_U64},
    {"Idle Unproven (ns)", COL_U64},
    {"Idle in Gaps (ns)", COL_U64},
    {"Note", COL_STR},
    {NULL},
};

static void bd_note(const struct bd_row *r, struct report_cell *c)
{
	static char note[200];
	char d[32];

	if (!r->late)
		return;
	snprintf(note, sizeof(note),
		 "%" PRIu64 " record(s) came over 10 s out of order: up to %s of them not counted",
		 r->late, tally_fmt_ns(d, sizeof(d), r->late_ns));
	set_s(c, note);
}

static void bd_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct bd_row *r = stats_breakdown(x->st, &n) + row;
	const uint64_t span = r->t1 - r->t0;
	/* ns columns and their shares: compute, communication (exposed), copies (exposed), busy
	 * outside the trace, idle */
	const uint64_t part[] = {r->compute, r->comm_exposed, r->copy_exposed, r->outside, r->idle};

	if (col == 0)
		set_s(c, rank_of(x, r->section));
	else if (col == 1)
		set_u(c, pid_of(x, r->section));
	else if (col == 2)
		set_u(c, r->device);
	else if (col == 3)
		set_u(c, span);
	else if (col <= 13 && (col - 4) % 2 == 0)
		set_u(c, part[(col - 4) / 2]);
	else if (col <= 13)
		set_pct(c, part[(col - 4) / 2], span);
	else if (col == 14)
		set_u(c, r->idle - r->idle_unproven);
	else if (col == 15)
		set_u(c, r->idle_unproven);
	else if (col == 16)
		set_u(c, r->gap_idle);
	else
		bd_note(r, c);
}

/* ---- comm_compute_overlap ------------------------------------------------------------------ */

const struct report_col cols_overlap[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Communication (ns)", COL_U64},
    {"Overlapped (ns)", COL_U64},
    {"Overlap (% of communication)", COL_PCT},
    {"Exposed (ns)", COL_U64},
    {"Compute (ns)", COL_U64},
    {NULL},
};

/* Only the devices that ran communication: the i-th of them. */
static const struct bd_row *comm_row(const struct stats *st, size_t i, size_t *count)
{
	size_t n, k, seen = 0;
	const struct bd_row *r = stats_breakdown(st, &n);

	for (k = 0; k < n; k++)
		if (r[k].comm && seen++ == i)
			return &r[k];
	*count = seen;
	return NULL;
}

static void ov_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct bd_row *r = comm_row(x->st, row, &n);
	uint64_t over = r->comm - r->comm_exposed;
	const uint64_t u[] = {0, 0, r->device, r->comm, over, 0, r->comm_exposed, r->compute};

	if (col == 0)
		set_s(c, rank_of(x, r->section));
	else if (col == 1)
		set_u(c, pid_of(x, r->section));
	else if (col == 5)
		set_pct(c, over, r->comm);
	else
		set_u(c, u[col]);
}

/* ---- kern_rank_spread ------------------------------------------------------------------------ */

const struct report_col cols_spread[] = {
    {"Kernel #", COL_U64},
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Instances", COL_U64},
    {"Total Time (ns)", COL_U64},
    {"Med (ns)", COL_F1},
    {"P90 (ns)", COL_U64},
    {"Max (ns)", COL_U64},
    {"vs Median (%)", COL_F1},
    {"Stands Out", COL_STR},
    {"Name", COL_STR},
    {NULL},
};

static void sp_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct spread_row *r = spread_rows(x->st->spread, &n) + row;
	const uint64_t u[] = {r->rank_of, 0,	 pid_of(x, r->section), r->count, r->total, 0,
			      r->p90,	  r->max};

	if (col == 1)
		set_s(c, rank_of(x, r->section));
	else if (col == 5)
		set_d(c, r->median);
	else if (col == 8)
		set_d(c, r->vs_median);
	else if (col == 9)
		set_s(c, r->stands_out > 0 ? "slower" : r->stands_out < 0 ? "faster" : "");
	else if (col == 10)
		set_s(c, r->name);
	else
		set_u(c, u[col]);
}

/* ---- rank_steps ----------------------------------------------------------------------------- */

const struct report_col cols_steps[] = {
    {"Step", COL_STR},
    {"Ranks", COL_U64},
    {"Median (ns)", COL_U64},
    {"Slowest Rank", COL_STR},
    {"Slowest (ns)", COL_U64},
    {"Lead (ns)", COL_I64},
    {"Lead (% of slowest step)", COL_F1},
    {"Verdict", COL_STR},
    {NULL},
};

static const char *steps_verdict_text(const struct view_ctx *x, const struct steps_verdict *v)
{
	static char text[480];
	char a[32], b[32];

	if (v->ranks < 2)
		snprintf(text, sizeof(text), "no straggler: one process has '%s' ranges", v->range);
	else if (v->steps < STEPS_MIN)
		snprintf(text, sizeof(text), "no straggler: %" PRIu64 " step(s), fewer than %d",
			 v->steps, STEPS_MIN);
	else if (v->named)
		snprintf(text, sizeof(text),
			 "straggler: %s, slowest in %" PRIu64 " of %" PRIu64
			 " steps, lead %s > spread %s",
			 rank_of(x, v->candidate), v->slowest_count, v->steps,
			 tally_fmt_ns(a, sizeof(a), (uint64_t)v->lead),
			 tally_fmt_ns(b, sizeof(b), v->spread));
	else
		snprintf(text, sizeof(text),
			 "no straggler: the slowest most often (%s, %" PRIu64 " of %" PRIu64
			 ") leads by %s%s, within the spread %s",
			 rank_of(x, v->candidate), v->slowest_count, v->steps,
			 v->lead < 0 ? "-" : "",
			 tally_fmt_ns(a, sizeof(a),
				      v->lead < 0 ? (uint64_t)-v->lead : (uint64_t)v->lead),
			 tally_fmt_ns(b, sizeof(b), v->spread));
	if (v->missing) { /* a process left out is said, never silently dropped */
		size_t len = strlen(text);

		snprintf(text + len, sizeof(text) - len,
			 "; %u process%s with other NVTX ranges but none '%s' left out", v->missing,
			 v->missing == 1 ? "" : "es", v->range);
	}
	return text;
}

static void st_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	static char step[24];
	size_t n;
	const struct step_row *r = steps_rows(x->st->steps, &n) + row;

	if (col == 0) {
		snprintf(step, sizeof(step), "%" PRIu64, r->step);
		set_s(c, r->step == UINT64_MAX ? "all" : step);
	} else if (col == 1) {
		set_u(c, r->ranks);
	} else if (col == 2) {
		set_u(c, r->median);
	} else if (col == 3) {
		set_s(c, rank_of(x, r->slowest));
	} else if (col == 4) {
		set_u(c, r->slowest_ns);
	} else if (col == 5) {
		set_i(c, r->lead);
	} else if (col == 6) {
		if (r->slowest_ns) /* the share of the slowest one's step it leads by */
			set_d(c, 100.0 * (double)r->lead / (double)r->slowest_ns);
	} else if (r->step == UINT64_MAX) {
		set_s(c, steps_verdict_text(x, steps_verdict(x->st->steps)));
	}
}

static void steps_empty(const struct stats *st, struct view_ctx *ax)
{
	const struct steps_verdict *v = steps_verdict(st->steps);

	snprintf(ax->text, sizeof(ax->text),
		 "no NVTX range named %s in the trace(s): name the range of a step with --range "
		 "NAME%s%s",
		 st->req.range ? st->req.range : "step or ProfilerStep",
		 v->candidates[0] ? "; repeated ranges seen: " : "", v->candidates);
}

/* ---- cuda_launch_stats ---------------------------------------------------------------------- */

const struct report_col cols_launches[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Launch Calls", COL_U64},
    {"Kernels", COL_U64},
    {"Matched", COL_U64},
    {"Graph Kernels", COL_U64},
    {"Latency P50 (ns)", COL_U64},
    {"Latency P90 (ns)", COL_U64},
    {"Latency P99 (ns)", COL_U64},
    {"Latency Max (ns)", COL_U64},
    {"Launch Call P50 (ns)", COL_U64},
    {"Short Kernels", COL_U64},
    {"Short (% of matched)", COL_PCT},
    {"Short Time (ns)", COL_U64},
    {"Short Time (% of kernel time)", COL_PCT},
    {"Top Short Kernel", COL_STR},
    {"Launched From", COL_STR},
    {NULL},
};

static void ln_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct launch_row *r = launches_rows(x->st->launches, &n) + row;
	const uint64_t u[] = {
	    0,		0,	    r->launch_calls, r->kernels, r->matched,  r->graph_kernels,
	    r->lat_p50, r->lat_p90, r->lat_p99,	     r->lat_max, r->call_p50, r->short_n,
	    0,		r->short_ns};

	if (col == 0)
		set_s(c, rank_of(x, r->section));
	else if (col == 1)
		set_u(c, pid_of(x, r->section));
	else if (col == 12)
		set_pct(c, r->short_n, r->matched);
	else if (col == 14)
		set_pct(c, r->short_ns, r->kernel_ns);
	else if (col == 15)
		set_s(c, r->top_short ? r->top_short : "");
	else if (col == 16)
		set_s(c, r->top_where ? r->top_where : "");
	else
		set_u(c, u[col]);
}

/* ---- gpu_queue_depth ------------------------------------------------------------------------ */

const struct report_col cols_queues[] = {
    {"Rank", COL_STR},	      {"PID", COL_U64},
    {"Device", COL_U64},      {"Stream", COL_U64},
    {"Launches", COL_U64},    {"Mean Depth", COL_F3},
    {"Peak Depth", COL_F3},   {"Peak At (ns)", COL_I64},
    {"Bucket (ns)", COL_U64}, {NULL},
};

static void q_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct qseries *q = stats_queues(x->st, &n) + row;
	const uint64_t u[] = {0, pid_of(x, q->section), q->device, q->stream, q->launches};

	if (col == 0)
		set_s(c, rank_of(x, q->section));
	else if (col <= 4)
		set_u(c, u[col]);
	else if (col == 5)
		set_d(c, q->avg);
	else if (col == 6)
		set_d(c, q->peak);
	else if (col == 7)
		set_i(c, rel(x, q->peak_at));
	else
		set_u(c, q->width);
}

/* ---- diagnosis ---------------------------------------------------------------------------- */

const struct report_col cols_findings[] = {
    {"Rule", COL_STR},
    {"Cost (ns)", COL_U64},
    {"Cost (% of GPU time)", COL_PCT},
    {"Share (% of step)", COL_PCT},
    {"Finding", COL_STR},
    {"Proof", COL_STR},
    {"Where", COL_STR},
    {"Why", COL_STR},
    {"Try", COL_STR},
    {NULL},
};

static void dg_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct diag_finding *f = &x->st->findings[row];
	const char *s[] = {f->rule,  NULL,     NULL,   NULL,   f->figure,
			   f->proof, f->where, f->why, f->try_};

	if (col == 1)
		set_u(c, f->cost);
	else if (col == 2 && f->cost)
		set_d(c, f->share);
	else if (col == 3 && f->step_share >= 0)
		set_d(c, f->step_share);
	else if (s[col] && *s[col])
		set_s(c, s[col]);
}

/* ---- the views ------------------------------------------------------------------------------ */

void view_breakdown(struct view_ctx *x, struct report_view *v)
{
	v->cell = bd_cell;
	stats_breakdown(x->st, &v->nrows);
}

void view_overlap(struct view_ctx *x, struct report_view *v)
{
	v->cell = ov_cell;
	comm_row(x->st, SIZE_MAX, &v->nrows);
}

void view_spread(struct view_ctx *x, struct report_view *v)
{
	v->cell = sp_cell;
	spread_rows(x->st->spread, &v->nrows);
	if (spread_sketched(x->st->spread))
		v->note = "medians and p90 are from quantile sketches, each within 0.39% "
			  "(more kernels than the 4,194,304 durations kept exact); counts, "
			  "totals and maxima are exact";
}

void view_steps(struct view_ctx *x, struct report_view *v)
{
	v->cell = st_cell;
	steps_rows(x->st->steps, &v->nrows);
	steps_empty(x->st, x);
	v->empty = x->text;
}

void view_launches(struct view_ctx *x, struct report_view *v)
{
	v->cell = ln_cell;
	launches_rows(x->st->launches, &v->nrows);
}

void view_queues(struct view_ctx *x, struct report_view *v)
{
	v->cell = q_cell;
	stats_queues(x->st, &v->nrows);
}

void view_findings(struct view_ctx *x, struct report_view *v)
{
	v->cell = dg_cell;
	v->nrows = x->st->nfindings;
	v->blocks = true;
	v->block_title = 4;
}
