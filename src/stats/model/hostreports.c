/* SPDX-License-Identifier: MIT */
/*
 * The host's reports of tally stats (docs/stats.md): gpu_idle_why and gpu_idle_breakdown (idle.h,
 * idlewhy.h), cpu_sample_sum (samplesum.h); osrt_sum is an nsys summary like cuda_api_sum and
 * lives with them in stats.c and reports.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "stats-int.h"
#include "table.h"

/* ---- aggregation ------------------------------------------------------------------------------
 */

static int bd_build(struct stats *st);

int host_reports_finish(struct stats *st)
{
	return st->idle ? bd_build(st) : 0;
}

/* ---- shared cells ------------------------------------------------------------------------------
 */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static struct report_section *section_of(const struct view_ctx *x, unsigned sec)
{
	return sec < x->set->nsections ? x->set->sections[sec] : NULL;
}

/* Relative to the earliest session start, as every Start (ns) of tally stats. */
static void start_cell(const struct view_ctx *x, uint64_t t, struct report_cell *c)
{
	c->t = CELL_I64;
	c->i = (int64_t)(t - x->st->base);
}

static const char *stack_text(struct report_section *rs, uint32_t stack)
{
	if (!stack)
		return "[torn: the frames changed while read]";
	return report_stack_label(rs, stack);
}

/* ---- gpu_idle_why ------------------------------------------------------------------------------
 */

const struct report_col cols_idle_why[] = {
    {"Gap", COL_U64},		{"Start (ns)", COL_I64},
    {"Duration (ns)", COL_U64}, {"PID", COL_U64},
    {"Device", COL_U64},	{"Proof", COL_STR},
    {"Class", COL_STR},		{"Thread", COL_STR},
    {"What", COL_STR},		{"Count", COL_U64},
    {"Time (ns)", COL_U64},	{"Share (% of gap)", COL_PCT},
    {"Detail", COL_STACK},	{NULL},
};

static const char *const what_names[] = {
    [WHY_GAP] = "gap",
    [WHY_CUDA] = "cuda",
    [WHY_OSRT] = "osrt",
    [WHY_PYTHON] = "python",
    [WHY_NATIVE] = "native",
    [WHY_MORE_STACKS] = "more",
    [WHY_MORE_THREADS] = "more threads",
};

static const char *state_name(unsigned s)
{
	static const char *const names[] = {"state unknown", "on CPU", "in an uninterruptible call",
					    "waiting", "stopped"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "state unknown";
}

static const char *gap_detail(const struct view_ctx *x, const struct report_idle_gap *g,
			      bool w_unexamined)
{
	static char buf[600];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s", g->why);

	if (g->gap.unproven && n < sizeof(buf))
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "; NOT proven idle, its stacks may be incomplete: %s",
				      g->gap.why);
	if (g->gap.sampled_ns && n < sizeof(buf))
		n += (size_t)snprintf(
		    buf + n, sizeof(buf) - n,
		    "; SM Active %.1f%% (max %.1f%%), GR Active %.1f%% over %.3f ms%s",
		    g->gap.sm_active, g->gap.sm_active_max, g->gap.gr_active,
		    (double)g->gap.sampled_ns / 1e6,
		    g->gap.active ? ": the GPU ran work no trace here holds (another "
				    "process, or untraced), so it was not idle"
				  : "");
	if (w_unexamined && n < sizeof(buf))
		n += (size_t)snprintf(
		    buf + n, sizeof(buf) - n,
		    "; the host was not examined: the gaps before it in this "
		    "process spent the budget of overlaps (64 per host event: calls "
		    "that span many gaps count in each)");
	if (!idle_why_has_host(x->st->why) && n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n,
			 "; no host samples or blocking calls were recorded (tally record "
			 "--sample python,native --trace osrt)");
	return buf;
}

static const char *row_detail(const struct view_ctx *x, struct report_section *rs,
			      const struct why_row *w, const struct report_idle_gap *g)
{
	static char buf[9000];
	const char *call;

	switch (w->what) {
	case WHY_GAP:
		return gap_detail(x, g, w->unexamined);
	case WHY_CUDA:
		snprintf(buf, sizeof(buf), "%s%s", report_string(rs, w->id),
			 w->sync ? " (the host waited for the GPU)" : "");
		return buf;
	case WHY_OSRT:
		call = tally_osrt_call_name(w->id);
		snprintf(buf, sizeof(buf), "%s", call ? call : "[unknown call]");
		return buf;
	case WHY_PYTHON:
		snprintf(buf, sizeof(buf), "[%s] %s", state_name(w->state), stack_text(rs, w->id));
		return buf;
	case WHY_NATIVE:
		return stack_text(rs, w->id);
	case WHY_MORE_THREADS:
		snprintf(buf, sizeof(buf),
			 "[the calls and samples of %" PRIu64
			 " more threads: 16 are listed per gap]",
			 w->thread);
		return buf;
	default:
		snprintf(buf, sizeof(buf), "[other %s stacks]",
			 w->source == WHY_PYTHON ? "Python" : "native");
		return buf;
	}
}

/* A thread of the gap's process, or "pid N: thread" of another process of the job. */
static const char *thread_cell(const struct view_ctx *x, struct report_section *rs,
			       unsigned process, uint64_t thread)
{
	static char buf[160];
	struct report_section *ps = process ? section_of(x, process - 1) : NULL;

	if (!ps)
		return rs ? idle_why_thread_label(rs, thread) : "";
	snprintf(buf, sizeof(buf), "pid %" PRIu64 ": %s", ps->s->pid,
		 idle_why_thread_label(ps, thread));
	return buf;
}

static void why_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct why_row *w = idle_why_rows(x->st->why, &n) + row;
	const struct report_idle_gap *g = report_idle_gaps(x->st->idle, &n) + w->gap;
	struct report_section *rs = section_of(x, g->gap.section);
	struct report_section *sampled = w->process ? section_of(x, w->process - 1) : rs;
	uint64_t dur = g->gap.t1 - g->gap.t0;

	switch (col) {
	case 0:
		set_u(c, w->gap + 1);
		break;
	case 1:
		start_cell(x, g->gap.t0, c);
		break;
	case 2:
		set_u(c, dur);
		break;
	case 3:
		set_u(c, rs ? rs->s->pid : 0);
		break;
	case 4:
		set_u(c, g->gap.device);
		break;
	case 5:
		set_s(c, report_gap_class_name(report_gap_class(&g->gap)));
		break;
	case 6:
		set_s(c, idle_class_name(g->cls));
		break;
	case 7:
		set_s(c, w->what == WHY_GAP || w->what == WHY_MORE_THREADS
			     ? ""
			     : thread_cell(x, rs, w->process, w->thread));
		break;
	case 8:
		set_s(c, what_names[w->what]);
		break;
	case 9:
		set_u(c, w->count);
		break;
	case 10:
		set_u(c, w->ns);
		break;
	case 11: /* samples of a thread stand for its time: never more than the hole */
		set_d(c, w->ns >= dur ? 100.0 : pct(w->ns, dur));
		break;
	default:
		set_s(c, sampled ? row_detail(x, sampled, w, g) : "");
	}
}

/* ---- gpu_idle_breakdown --------------------------------------------------------------------- */

const struct report_col cols_idle_breakdown[] = {
    {"Rank", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Category", COL_STR},
    {"Gaps", COL_U64},
    {"Idle Time (ns)", COL_U64},
    {"Share (% of idle)", COL_PCT},
    {"Unproven (ns)", COL_U64},
    {"Thread", COL_STR},
    {"Samples", COL_U64},
    {"Samples (% of thread's)", COL_PCT},
    {"Stack", COL_STACK},
    {NULL},
};

/* A row: a class of a total (OUTSIDE_ROW: its holes busy outside the trace), or (stack >= 0) a
 * stack of its largest class. */
#define OUTSIDE_ROW IDLE_CLASSES
/* A row: a class of a total, or (stack >= 0) a stack of its largest class. */
struct idle_bd_row {
	uint32_t total;
	uint8_t cls;
	long stack;
};

static const struct why_stack *stacks_of(const struct stats *st, size_t *n)
{
	return st->why ? idle_why_stacks(st->why, n) : (*n = 0, NULL);
}

/* The rows of gpu_idle_breakdown, once the aggregation is done. */
static int bd_build(struct stats *st)
{
	size_t nt, ns, t, k, c, bd_n = 0;
	const struct report_idle_total *tot = report_idle_totals(st->idle, &nt);
	const struct why_stack *s = stacks_of(st, &ns);
	struct idle_bd_row *bd_rows = calloc(nt * (IDLE_CLASSES + 1) + ns + 1, sizeof(*bd_rows));

	if (!bd_rows)
		return -ENOMEM;
	for (t = 0; t < nt; t++) {
		/* the stacks are of the holes of the class they were gathered in */
		enum idle_class big = (enum idle_class)tot[t].sampled_class;

		if (tot[t].outside_holes) /* not idle: the GPU metrics show other work there */
			bd_rows[bd_n++] = (struct idle_bd_row){(uint32_t)t, OUTSIDE_ROW, -1};
		for (c = 0; c < IDLE_CLASSES; c++) {
			bd_rows[bd_n++] = (struct idle_bd_row){(uint32_t)t, (uint8_t)c, -1};
			if (c != big)
				continue;
			for (k = 0; k < ns; k++)
				if (s[k].section == tot[t].section && s[k].device == tot[t].device)
					bd_rows[bd_n++] =
					    (struct idle_bd_row){(uint32_t)t, (uint8_t)c, (long)k};
		}
	}
	free(st->bd_rows);
	st->bd_rows = bd_rows;
	st->nbd_rows = bd_n;
	return 0;
}

/* The rank as recorded ("RANK=3"), or "-", as the analyses' Rank column says it */
static const char *rank_of(const struct report_section *rs)
{
	return rs && rs->s->rank ? rs->s->rank : "-";
}

static uint64_t idle_sum(const struct report_idle_total *t)
{
	uint64_t sum = 0;
	unsigned c;

	for (c = 0; c < IDLE_CLASSES; c++)
		sum += t->ns[c];
	return sum;
}

static void breakdown_stack_cell(const struct view_ctx *x, const struct why_stack *s, uint8_t cls,
				 size_t col, struct report_cell *c)
{
	static char cat[120];
	struct report_section *rs = section_of(x, s->section);
	struct report_section *sampled = s->process ? section_of(x, s->process - 1) : rs;

	if (col == 3) {
		snprintf(cat, sizeof(cat), "%s: %s stack%s%s", idle_class_name(cls),
			 s->source == WHY_PYTHON ? "python" : "native",
			 s->source == WHY_PYTHON && s->state != TALLY_THREAD_ON_CPU
			     ? (s->by_design ? ", waiting by design" : ", waiting")
			     : "",
			 s->process ? ", another process of the job" : "");
		set_s(c, cat);
	} else if (col == 5) { /* the thread's time these samples stand for, within the gaps */
		set_u(c, s->ns);
	} else if (col == 8) {
		set_s(c, thread_cell(x, rs, s->process, s->thread));
	} else if (col == 9) {
		set_u(c, s->count);
	} else if (col == 10) {
		set_d(c, pct(s->count, s->of));
	} else if (col == 11) {
		set_s(c, sampled ? stack_text(sampled, s->stack) : "");
	}
}

/* A device's gaps the GPU metrics show busy: not idle, so no share of the idle time. */
static void outside_cell(const struct report_idle_total *t, size_t col, struct report_cell *c)
{
	if (col == 3)
		set_s(c, report_gap_class_name(GAP_BUSY_OUTSIDE));
	else if (col == 4)
		set_u(c, t->outside_holes);
	else if (col == 5)
		set_u(c, t->outside_ns);
}

static void breakdown_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct idle_bd_row *b = &x->st->bd_rows[row];
	size_t n;
	const struct report_idle_total *t = report_idle_totals(x->st->idle, &n) + b->total;
	struct report_section *rs = section_of(x, t->section);

	if (col == 0)
		set_s(c, rank_of(rs));
	else if (col == 1)
		set_u(c, rs ? rs->s->pid : 0);
	else if (col == 2)
		set_u(c, t->device);
	else if (b->stack >= 0)
		breakdown_stack_cell(x, stacks_of(x->st, &n) + b->stack, b->cls, col, c);
	else if (b->cls == OUTSIDE_ROW)
		outside_cell(t, col, c);
	else if (col == 3)
		set_s(c, idle_class_name(b->cls));
	else if (col == 4)
		set_u(c, t->holes[b->cls]);
	else if (col == 5)
		set_u(c, t->ns[b->cls]);
	else if (col == 6)
		set_d(c, pct(t->ns[b->cls], idle_sum(t)));
	else if (col == 7)
		set_u(c, t->unproven[b->cls]);
}

/* ---- cpu_sample_sum ------------------------------------------------------------------------- */

const struct report_col cols_samples[] = {
    {"Self (% of samples)", COL_PCT},
    {"Self", COL_U64},
    {"Total (% of samples)", COL_PCT},
    {"Total", COL_U64},
    {"On CPU (% of self)", COL_PCT},
    {"Kind", COL_STR},
    {"By", COL_STR},
    {"Location", COL_STR},
    {NULL},
};

static void sample_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct sample_sum_row *r = sample_sum_rows(x->st->samples, &n) + row;
	uint64_t all = sample_sum_samples(x->st->samples, (enum sample_sum_kind)r->kind);

	switch (col) {
	case 0:
		set_d(c, pct(r->self, all));
		break;
	case 1:
		set_u(c, r->self);
		break;
	case 2:
		set_d(c, pct(r->total, all));
		break;
	case 3:
		set_u(c, r->total);
		break;
	case 4: /* native samples are taken on CPU time: always on a CPU */
		set_d(c, r->kind == SAMPLE_SUM_NATIVE ? 100.0 : pct(r->on_cpu, r->self));
		break;
	case 5:
		set_s(c, r->kind == SAMPLE_SUM_PYTHON ? "python" : "native");
		break;
	case 6:
		set_s(c, r->by_line ? "line" : "function");
		break;
	default:
		set_s(c, r->label);
	}
}

/* ---- views ------------------------------------------------------------------------------------
 */

void view_idle_why(struct view_ctx *x, struct report_view *v)
{
	v->cell = why_cell;
	if (x->st->why)
		idle_why_rows(x->st->why, &v->nrows);
}

void view_idle_breakdown(struct view_ctx *x, struct report_view *v)
{
	v->cell = breakdown_cell;
	v->nrows = x->st->nbd_rows;
}

void view_samples(struct view_ctx *x, struct report_view *v)
{
	v->cell = sample_cell;
	if (x->st->samples)
		sample_sum_rows(x->st->samples, &v->nrows);
}
