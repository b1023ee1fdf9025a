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

static void set_pct(struct report_cell *c, uint64_t part, uint64_t whole)
{
	if (whole)
		set_d(c, 100.0 * (double)part / (double)whole);
}

static const struct report_section *sec_of(const struct analysis_ctx *x, unsigned i)
{
	return i < x->set->nsections ? x->set->sections[i] : NULL;
}

/* The rank as recorded ("RANK=3"), or "-" */
static const char *rank_of(const struct analysis_ctx *x, unsigned i)
{
	const struct report_section *rs = sec_of(x, i);

	return rs && rs->s->rank ? rs->s->rank : "-";
}

static uint64_t pid_of(const struct analysis_ctx *x, unsigned i)
{
	const struct report_section *rs = sec_of(x, i);

	return rs ? rs->s->pid : 0;
}

/* Times relative to the stats' base, as the trace reports'. */
static int64_t rel(const struct analysis_ctx *x, uint64_t t)
{
	return (int64_t)(t - x->st->base);
}

static const char *dur(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.3f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	return buf;
}

/* ---- gpu_time_breakdown ----------------------------------------------------------------- */

static const struct report_col bd_cols[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Span (ns)", COL_U64},
    {"Compute (ns)", COL_U64},
    {"Compute (%)", COL_PCT},
    {"Communication (ns)", COL_U64},
    {"Communication (%)", COL_PCT},
    {"Copy/Memset (ns)", COL_U64},
    {"Copy/Memset (%)", COL_PCT},
    {"Idle (ns)", COL_U64},
    {"Idle (%)", COL_PCT},
    {"Idle Proven (ns)", COL_U64},
    {"Idle Unproven (ns)", COL_U64},
    {"Idle in Gaps (ns)", COL_U64},
    {"Note", COL_STR},
};

static void bd_note(const struct bd_row *r, struct report_cell *c)
{
	static char note[200];
	char d[32];

	if (!r->late)
		return;
	snprintf(note, sizeof(note),
		 "%" PRIu64 " record(s) came over 10 s out of order: up to %s of them not counted",
		 r->late, dur(r->late_ns, d, sizeof(d)));
	set_s(c, note);
}

static void bd_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct analysis_ctx *x = ctx;
	size_t n;
	const struct bd_row *r = stats_breakdown(x->st, &n) + row;
	const uint64_t span = r->t1 - r->t0;
	/* ns columns and their shares: compute, communication (exposed), copies (exposed), idle */
	const uint64_t part[] = {r->compute, r->comm_exposed, r->copy_exposed, r->idle};

	if (col == 0)
		set_s(c, rank_of(x, r->section));
	else if (col == 1)
		set_u(c, pid_of(x, r->section));
	else if (col == 2)
		set_u(c, r->device);
	else if (col == 3)
		set_u(c, span);
	else if (col <= 11 && (col - 4) % 2 == 0)
		set_u(c, part[(col - 4) / 2]);
	else if (col <= 11)
		set_pct(c, part[(col - 4) / 2], span);
	else if (col == 12)
		set_u(c, r->idle - r->idle_unproven);
	else if (col == 13)
		set_u(c, r->idle_unproven);
	else if (col == 14)
		set_u(c, r->gap_idle);
	else
		bd_note(r, c);
}

/* ---- comm_compute_overlap ------------------------------------------------------------------ */

static const struct report_col ov_cols[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Communication (ns)", COL_U64},
    {"Overlapped (ns)", COL_U64},
    {"Overlap (%)", COL_PCT},
    {"Exposed (ns)", COL_U64},
    {"Compute (ns)", COL_U64},
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
	const struct analysis_ctx *x = ctx;
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

static const struct report_col sp_cols[] = {
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
};

static void sp_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct analysis_ctx *x = ctx;
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

static const struct report_col st_cols[] = {
    {"Step", COL_STR},	       {"Ranks", COL_U64},	  {"Median (ns)", COL_U64},
    {"Slowest Rank", COL_STR}, {"Slowest (ns)", COL_U64}, {"Lead (ns)", COL_I64},
    {"Lead (%)", COL_F1},      {"Verdict", COL_STR},
};

static const char *steps_verdict_text(const struct analysis_ctx *x, const struct steps_verdict *v)
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
			 dur((uint64_t)v->lead, a, sizeof(a)), dur(v->spread, b, sizeof(b)));
	else
		snprintf(text, sizeof(text),
			 "no straggler: the slowest most often (%s, %" PRIu64 " of %" PRIu64
			 ") leads by %s%s, within the spread %s",
			 rank_of(x, v->candidate), v->slowest_count, v->steps,
			 v->lead < 0 ? "-" : "",
			 dur(v->lead < 0 ? (uint64_t)-v->lead : (uint64_t)v->lead, a, sizeof(a)),
			 dur(v->spread, b, sizeof(b)));
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
	const struct analysis_ctx *x = ctx;
	static char step[24];
	size_t n;
	const struct step_row *r = steps_rows(x->st->steps, &n) + row;
	uint64_t others = (uint64_t)((int64_t)r->slowest_ns - r->lead);

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
		if (others)
			set_d(c, 100.0 * (double)r->lead / (double)others);
	} else if (r->step == UINT64_MAX) {
		set_s(c, steps_verdict_text(x, steps_verdict(x->st->steps)));
	}
}

static void steps_empty(const struct stats *st, struct analysis_ctx *ax)
{
	const struct steps_verdict *v = steps_verdict(st->steps);

	snprintf(ax->empty, sizeof(ax->empty),
		 "no NVTX range named %s in the trace(s): name the range of a step with --range "
		 "NAME%s%s",
		 st->req.range ? st->req.range : "step or ProfilerStep",
		 v->candidates[0] ? "; repeated ranges seen: " : "", v->candidates);
}

/* ---- cuda_launch_stats ---------------------------------------------------------------------- */

static const struct report_col ln_cols[] = {
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
    {"Short (%)", COL_PCT},
    {"Short Time (ns)", COL_U64},
    {"Short Time (%)", COL_PCT},
    {"Top Short Kernel", COL_STR},
    {"Launched From", COL_STR},
};

static void ln_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct analysis_ctx *x = ctx;
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

static const struct report_col q_cols[] = {
    {"Rank", COL_STR},	    {"PID", COL_U64},	       {"Device", COL_U64},
    {"Stream", COL_U64},    {"Launches", COL_U64},     {"Mean Depth", COL_F3},
    {"Peak Depth", COL_F3}, {"Peak At (ns)", COL_I64}, {"Bucket (ns)", COL_U64},
};

static void q_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct analysis_ctx *x = ctx;
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

static const struct report_col dg_cols[] = {
    {"Rule", COL_STR},	{"Cost (ns)", COL_U64}, {"Cost (%)", COL_PCT}, {"Finding", COL_STR},
    {"Proof", COL_STR}, {"Where", COL_STR},	{"Why", COL_STR},      {"Try", COL_STR},
};

static void dg_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct analysis_ctx *x = ctx;
	const struct diag_finding *f = &x->st->findings[row];
	const char *s[] = {f->rule, NULL, NULL, f->figure, f->proof, f->where, f->why, f->try_};

	if (col == 1)
		set_u(c, f->cost);
	else if (col == 2)
		set_d(c, f->share);
	else if (s[col] && *s[col])
		set_s(c, s[col]);
}

/* ---- the views ------------------------------------------------------------------------------ */

#define COLS(a) a, sizeof(a) / sizeof(a[0])

static void cols(struct report_view *v, const struct report_col *c, size_t n,
		 void (*cell)(const void *, size_t, size_t, struct report_cell *), size_t rows,
		 const char *empty)
{
	v->cols = c;
	v->ncols = n;
	v->cell = cell;
	v->nrows = rows;
	v->empty = empty;
}

bool analysis_view(const struct stats *st, const struct report_set *set, enum report_id r,
		   struct report_view *v, struct analysis_ctx *ax)
{
	size_t n = 0;

	*ax = (struct analysis_ctx){.st = st, .set = set};
	v->ctx = ax;
	v->name = report_defs[r].name;
	v->title = report_defs[r].title;
	switch (r) {
	case R_TIME_BREAKDOWN:
		stats_breakdown(st, &n);
		cols(v, COLS(bd_cols), bd_cell, n, "the trace(s) hold no GPU work");
		return true;
	case R_COMM_OVERLAP:
		comm_row(st, SIZE_MAX, &n);
		cols(v, COLS(ov_cols), ov_cell, n,
		     "no communication kernels in the trace(s) (NCCL and the like, by name: "
		     "docs/stats.md)");
		return true;
	case R_KERN_SPREAD:
		spread_rows(st->spread, &n);
		cols(v, COLS(sp_cols), sp_cell, n, "the trace(s) hold no CUDA kernel data");
		if (spread_sketched(st->spread))
			v->note = "medians and p90 are from quantile sketches, each within 0.39% "
				  "(more kernels than the 4,194,304 durations kept exact); counts, "
				  "totals and maxima are exact";
		return true;
	case R_RANK_STEPS:
		steps_rows(st->steps, &n);
		steps_empty(st, ax);
		cols(v, COLS(st_cols), st_cell, n, ax->empty);
		return true;
	case R_LAUNCH_STATS:
		launches_rows(st->launches, &n);
		cols(v, COLS(ln_cols), ln_cell, n, "the trace(s) hold no CUDA launch data");
		return true;
	case R_QUEUE_DEPTH:
		stats_queues(st, &n);
		cols(
		    v, COLS(q_cols), q_cell, n,
		    "no launch joined to its GPU work in the trace(s) (needs the runtime or driver "
		    "API and GPU records)");
		return true;
	case R_DIAGNOSIS:
		cols(v, COLS(dg_cols), dg_cell, st->nfindings,
		     "nothing crosses a rule's threshold: no finding (the rules and thresholds: "
		     "docs/diagnosis.md)");
		v->blocks = true;
		v->block_title = 3;
		return true;
	default:
		return false;
	}
}
