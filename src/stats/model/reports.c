/* SPDX-License-Identifier: MIT */
/*
 * The reports of tally stats: nsys's names, column headers and units (times in ns, sizes in MB of
 * 10^6 bytes), one view per report over the aggregation of stats.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "stats-int.h"
#include "table.h"

/* ---- summary reports --------------------------------------------------------------------- */

#define TIME_STATS                                                                                 \
	{"Avg (ns)", COL_F1}, {"Med (ns)", COL_F1}, {"Min (ns)", COL_U64}, {"Max (ns)", COL_U64},  \
	{                                                                                          \
		"StdDev (ns)", COL_F1                                                              \
	}

const struct report_col cols_kern[] = {
    {"Time (%)", COL_PCT},  {"Total Time (ns)", COL_U64},
    {"Instances", COL_U64}, TIME_STATS,
    {"Name", COL_STR},	    {NULL},
};
const struct report_col cols_kern_gb[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Instances", COL_U64}, TIME_STATS,
    {"GridXYZ", COL_STR},  {"BlockXYZ", COL_STR},	 {"Name", COL_STR},	 {NULL},
};
const struct report_col cols_api[] = {
    {"Time (%)", COL_PCT},  {"Total Time (ns)", COL_U64},
    {"Num Calls", COL_U64}, TIME_STATS,
    {"Name", COL_STR},	    {NULL},
};
const struct report_col cols_nvtx[] = {
    {"Time (%)", COL_PCT},
    {"Total Time (ns)", COL_U64},
    {"Instances", COL_U64},
    TIME_STATS,
    {"Style", COL_STR},
    {"Range", COL_STR},
    {NULL},
};
const struct report_col cols_memtime[] = {
    {"Time (%)", COL_PCT},  {"Total Time (ns)", COL_U64},
    {"Count", COL_U64},	    TIME_STATS,
    {"Operation", COL_STR}, {NULL},
};
const struct report_col cols_memsize[] = {
    {"Total (MB)", COL_F3},  {"Count", COL_U64},     {"Avg (MB)", COL_F3},
    {"Med (MB)", COL_F3},    {"Min (MB)", COL_F3},   {"Max (MB)", COL_F3},
    {"StdDev (MB)", COL_F3}, {"Operation", COL_STR}, {NULL},
};

const struct report_col cols_stack[] = {
    {"Time (%)", COL_PCT},
    {"Total Time (ns)", COL_U64},
    {"Instances", COL_U64},
    TIME_STATS,
    {"By", COL_STR},
    {"Location", COL_STACK},
    {NULL},
};
const struct report_col cols_mem_usage[] = {
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Memory Kind", COL_STR},
    {"Allocations", COL_U64},
    {"Frees", COL_U64},
    {"Allocated (B)", COL_U64},
    {"Freed (B)", COL_U64},
    {"Peak (B)", COL_U64},
    {"Peak At (ns)", COL_U64},
    {"In Use At End (B)", COL_U64},
    {NULL},
};

static void size_cell(const struct stats_group_view *v, size_t col, struct report_cell *c)
{
	switch (col) {
	case 0:
		set_d(c, (double)v->total / 1e6);
		break;
	case 1:
		set_u(c, v->count);
		break;
	case 2:
		set_d(c, v->avg / 1e6);
		break;
	case 3:
		set_d(c, v->median / 1e6);
		break;
	case 4:
		set_d(c, (double)v->min / 1e6);
		break;
	case 5:
		set_d(c, (double)v->max / 1e6);
		break;
	case 6:
		set_d(c, v->stddev / 1e6);
		break;
	default:
		set_s(c, v->name);
	}
}

/* The columns after the common eight: name, or grid/block/name, or style/range. */
static void tail_cell(const struct view_ctx *x, const struct group *g, size_t col,
		      struct report_cell *c)
{
	static char grid[48], block[48];

	if (x->r == R_KERN_GB_SUM && col == 8) {
		snprintf(grid, sizeof(grid), "%4d %4d %4d", g->grid[0], g->grid[1], g->grid[2]);
		set_s(c, grid);
	} else if (x->r == R_KERN_GB_SUM && col == 9) {
		snprintf(block, sizeof(block), "%4d %4d %4d", g->block[0], g->block[1],
			 g->block[2]);
		set_s(c, block);
	} else if (x->r == R_NVTX_SUM && col == 8) {
		set_s(c, g->style ? "StartEnd" : "PushPop");
	} else if (x->r == R_KERN_STACK_SUM && col == 8) {
		set_s(c, g->style ? "stack" : "frame");
	} else {
		set_s(c, g->name);
	}
}

static void sum_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct gtable *t = &x->st->t[x->r];
	const struct group *g = t->order[row];
	const struct stats_group_view *v = &g->view;

	if (x->r == R_MEM_SIZE_SUM) {
		size_cell(v, col, c);
		return;
	}
	switch (col) {
	case 0: /* stack sums count each kernel twice (once per grouping): percent of one */
		set_d(c, t->grand_total
			     ? 100.0 * (double)v->total * (x->r == R_KERN_STACK_SUM ? 2 : 1) /
				   (double)t->grand_total
			     : 0.0);
		break;
	case 1:
		set_u(c, v->total);
		break;
	case 2:
		set_u(c, v->count);
		break;
	case 3:
		set_d(c, v->avg);
		break;
	case 4:
		set_d(c, v->median);
		break;
	case 5:
		set_u(c, v->min);
		break;
	case 6:
		set_u(c, v->max);
		break;
	case 7:
		set_d(c, v->stddev);
		break;
	default:
		tail_cell(x, g, col, c);
	}
}

/* ---- trace reports ---------------------------------------------------------------------- */

const struct report_col cols_gpu_trace[] = {
    {"Start (ns)", COL_U64},  {"Duration (ns)", COL_U64},
    {"CorrId", COL_U64},      {"GrdX", COL_U64},
    {"GrdY", COL_U64},	      {"GrdZ", COL_U64},
    {"BlkX", COL_U64},	      {"BlkY", COL_U64},
    {"BlkZ", COL_U64},	      {"Reg/Trd", COL_U64},
    {"StcSMem (MB)", COL_F3}, {"DymSMem (MB)", COL_F3},
    {"Bytes (MB)", COL_F3},   {"Throughput (MBps)", COL_F3},
    {"SrcMemKd", COL_STR},    {"DstMemKd", COL_STR},
    {"Device", COL_STR},      {"Ctx", COL_U64},
    {"GreenCtx", COL_U64},    {"Strm", COL_U64},
    {"Name", COL_STR},	      {NULL},
};

/* nsys's columns, with Name moved last, where a table does not pad it (docs/stats.md). */
const struct report_col cols_api_trace[] = {
    {"Start (ns)", COL_U64}, {"Duration (ns)", COL_U64},
    {"Result", COL_I64},     {"CorrID", COL_U64},
    {"Pid", COL_U64},	     {"Tid", COL_U64},
    {"T-Pri", COL_U64},	     {"Thread Name", COL_STR},
    {"Name", COL_STR},	     {NULL},
};

/* Start relative to the earliest session start, as nsys's are relative to its capture start:
 * negative for a record before it (a clock of another source, an allocation made before the
 * session began), and past 2^63 ns still the positive number it is. */
static void start_cell(const struct view_ctx *x, uint64_t start, struct report_cell *c)
{
	uint64_t base = x->st->base;

	if (start >= base)
		set_u(c, start - base);
	else
		set_i(c, base - start > INT64_MAX ? INT64_MIN : -(int64_t)(base - start));
}

/* "NVIDIA H200 (0)": the device's name and id, as nsys shows it. */
static const char *device_label(const struct view_ctx *x, uint32_t sec, uint32_t id)
{
	static char buf[300];
	const struct tally_section *s = sec < x->set->nsections ? x->set->sections[sec]->s : NULL;
	size_t i;

	for (i = 0; s && i < s->ndevices; i++)
		if (s->devices[i].id == id && s->devices[i].name) {
			snprintf(buf, sizeof(buf), "%s (%u)", s->devices[i].name, id);
			return buf;
		}
	snprintf(buf, sizeof(buf), "GPU (%u)", id);
	return buf;
}

static void gpu_kernel_cell(const struct gpu_row *g, size_t col, struct report_cell *c)
{
	if (col >= 3 && col <= 5)
		set_u(c, (uint64_t)(uint32_t)g->grid[col - 3]);
	else if (col >= 6 && col <= 8)
		set_u(c, (uint64_t)(uint32_t)g->block[col - 6]);
	else if (col == 9)
		set_u(c, g->regs);
	else if (col == 10)
		set_d(c, g->smem_static / 1e6);
	else if (col == 11)
		set_d(c, g->smem_dynamic / 1e6);
}

static void gpu_memop_cell(const struct gpu_row *g, size_t col, struct report_cell *c)
{
	if (col == 12)
		set_d(c, (double)g->bytes / 1e6);
	else if (col == 13 && g->dur)
		set_d(c, (double)g->bytes * 1e3 / (double)g->dur); /* MB/s */
	else if (col == 14)
		set_s(c, report_mem_kind_label(g->src_kind));
	else if (col == 15 && g->kind == TALLY_KIND_MEMCPY)
		set_s(c, report_mem_kind_label(g->dst_kind));
}

/* The i-th row: in place while the rows fit the budget, else from the merge, going on from the
 * row asked for before (the writers ask in order; a table twice: its widths, then its rows). */
static const void *trace_row(struct spill *s, struct row_cursor *c, size_t i)
{
	void *p = spill_at(s, i);

	if (p || !spill_spilled(s))
		return p;
	if (c->at && i + 1 == c->at)
		return c->row;
	if (i + 1 < c->at || !c->at) {
		if (spill_rewind(s) < 0)
			return NULL;
		c->at = 0;
	}
	while (c->at <= i && (c->row = spill_next(s)))
		c->at++;
	return c->at == i + 1 ? c->row : NULL;
}

static const struct gpu_row *stats_gpu_row(const struct stats *st, size_t i)
{
	struct stats *w = (struct stats *)st; /* the cursor is a cache of the rows' order */

	return trace_row(&w->gpu, &w->gpu_at, i);
}

static const struct api_row *stats_api_row(const struct stats *st, size_t i)
{
	struct stats *w = (struct stats *)st;

	return trace_row(&w->api, &w->api_at, i);
}

static void gpu_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct gpu_row *g = stats_gpu_row(x->st, row);

	if (!g) /* the spill could not be read back: said by the command, an empty cell here */
		return;
	switch (col) {
	case 0:
		start_cell(x, g->start, c);
		return;
	case 1:
		set_u(c, g->dur);
		return;
	case 2:
		set_u(c, g->corr);
		return;
	case 16:
		set_s(c, device_label(x, g->sec, g->device));
		return;
	case 17:
		set_u(c, g->ctx);
		return;
	case 18: /* green contexts are not recorded */
		return;
	case 19:
		set_u(c, g->stream);
		return;
	case 20:
		set_s(c, g->name);
		return;
	}
	if (g->kind == TALLY_KIND_KERNEL)
		gpu_kernel_cell(g, col, c);
	else
		gpu_memop_cell(g, col, c);
}

static void api_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct api_row *a = stats_api_row(x->st, row);
	const struct tally_section *s =
	    a && a->sec < x->set->nsections ? x->set->sections[a->sec]->s : NULL;

	if (!a) /* the spill could not be read back: said by the command, an empty cell here */
		return;
	switch (col) {
	case 0:
		start_cell(x, a->start, c);
		break;
	case 1:
		set_u(c, a->dur);
		break;
	case 2:
		c->t = CELL_I64;
		c->i = a->result;
		break;
	case 3:
		set_u(c, a->corr);
		break;
	case 4:
		set_u(c, a->pid ? a->pid : (s ? s->pid : 0));
		break;
	case 5:
		set_u(c, a->tid);
		break;
	case 8:
		set_s(c, a->name);
		break;
	default: /* thread priority and name are not recorded */
		break;
	}
}

static uint64_t section_pid(const struct view_ctx *x, unsigned sec)
{
	return sec < x->set->nsections ? x->set->sections[sec]->s->pid : 0;
}

static void mem_usage_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct mem_usage_row *m = &x->st->mem_usage.rows[row];
	/* Bytes, not MB: a peak is compared with what the program or its allocator says it held
	 * (torch.cuda.max_memory_reserved()), to the byte. */
	const uint64_t bytes[] = {m->alloc_bytes, m->freed_bytes, m->peak};

	if (col-- == 0)
		set_u(c, section_pid(x, m->sec));
	else if (col == 0)
		set_u(c, m->device);
	else if (col == 1)
		set_s(c, report_mem_kind_label(m->kind));
	else if (col == 2 || col == 3)
		set_u(c, col == 2 ? m->allocs : m->frees);
	else if (col >= 4 && col <= 6)
		set_u(c, bytes[col - 4]);
	else if (col == 7 && m->peak) /* no byte was ever in use: there is no peak to time */
		start_cell(x, m->peak_time, c);
	else if (col == 7)
		return;
	else
		set_u(c, m->in_use);
}

/* ---- gaps with proof ---------------------------------------------------------------------- */

const struct report_col cols_gaps[] = {
    {"Start (ns)", COL_U64},
    {"Duration (ns)", COL_U64},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Stream", COL_STR},
    {"Class", COL_STR},
    {"Sampled (ns)", COL_U64},
    {"SM Active (%)", COL_PCT},
    {"GR Active (%)", COL_PCT},
    {"Why", COL_STR},
    {NULL},
};

const struct report_col cols_util[] = {
    {"Start (ns)", COL_U64},
    {"Duration (ns)", COL_U64},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Busy (% of bucket)", COL_PCT},
    {"Loss", COL_STR},
    {NULL},
};

static void gap_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	static char stream[16]; /* a cell's text lives until the next cell is asked for */
	size_t n;
	const struct report_gap *g = report_gpu_gaps_list(x->st->gaps, &n) + row;
	const uint64_t u[] = {0, g->t1 - g->t0, section_pid(x, g->section), g->device};

	if (col == 0) {
		start_cell(x, g->t0, c);
	} else if (col < 4) {
		set_u(c, u[col]);
	} else if (col == 4) {
		snprintf(stream, sizeof(stream), "%" PRIu32, g->stream);
		set_s(c, g->stream == REPORT_GAP_ALL_STREAMS ? "all" : stream);
	} else if (col == 5) {
		set_s(c, report_gap_class_name(report_gap_class(g)));
	} else if (col == 6 && g->sampled_ns) {
		set_u(c, g->sampled_ns);
	} else if (col == 7 && g->sampled_ns) {
		set_d(c, g->sm_active);
	} else if (col == 8 && g->sampled_ns) {
		set_d(c, g->gr_active);
	} else if (col == 9) {
		set_s(c, g->why);
	}
}

/* ---- GPU metrics -------------------------------------------------------------------------- */

#define METRIC_STATS                                                                               \
	{"Mean", COL_F1}, {"P50", COL_F1}, {"P90", COL_F1}, {"Min", COL_F1}, {"Max", COL_F1},      \
	    {"Threshold", COL_F1},                                                                 \
	{                                                                                          \
		"Above (% of covered)", COL_PCT                                                    \
	}

const struct report_col cols_metrics[] = {
    {"PID", COL_U64},	    {"Device", COL_U64},
    {"Metric", COL_STR},    {"Unit", COL_STR},
    {"Samples", COL_U64},   {"Covered (ns)", COL_U64},
    {"Span (ns)", COL_U64}, METRIC_STATS,
    {"Name", COL_STR},	    {NULL},
};

const struct report_col cols_metrics_nvtx[] = {
    {"Range", COL_STR},
    {"PID", COL_U64},
    {"Device", COL_U64},
    {"Metric", COL_STR},
    {"Unit", COL_STR},
    {"Instances", COL_U64},
    {"Range Time (ns)", COL_U64},
    {"Samples", COL_U64},
    {"Covered (ns)", COL_U64},
    METRIC_STATS,
    {"Name", COL_STR},
    {NULL},
};

/* The seven statistics from Mean on, then the name, of a series' figures. */
static void metric_stat_cell(const struct gm_series_view *v, size_t col, struct report_cell *c)
{
	const double d[] = {v->mean, v->p50, v->p90, v->min, v->max, v->threshold};

	if (col == 7)
		set_s(c, v->name ? v->name : v->why);
	else if (!v->name || !v->covered_ns)
		return; /* a device row, or no sample: no figures */
	else if (col < 6)
		set_d(c, d[col]);
	else
		set_d(c, 100 * v->above);
}

/* Samples and Covered (ns), and Span (ns) when span: the time from the first sample to the end of
 * the last (Covered less than it: the samples have gaps). */
static void metric_count_cell(const struct gm_series_view *v, size_t col, bool span,
			      struct report_cell *c)
{
	const uint64_t u[] = {v->samples, v->covered_ns, v->samples ? v->last_ns - v->first_ns : 0};

	if (v->name && col < (span ? 3u : 2u))
		set_u(c, u[col]);
}

static void metric_head_cell(const struct view_ctx *x, const struct gm_series_view *v, size_t col,
			     struct report_cell *c)
{
	if (col == 0)
		set_u(c, section_pid(x, v->section));
	else if (col == 1)
		set_u(c, v->device);
	else
		set_s(c, col == 2 ? v->label : v->unit);
}

static void metrics_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct gm_series_view *v = gm_row(x->st->gm, row);

	if (col < 4)
		metric_head_cell(x, v, col, c);
	else if (col < 7)
		metric_count_cell(v, col - 4, true, c);
	else
		metric_stat_cell(v, col - 7, c);
}

static void metrics_nvtx_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	const struct gm_nvtx_view *n = gm_nvtx_row(x->st->gm, row);

	if (col == 0)
		set_s(c, n->range);
	else if (col < 5)
		metric_head_cell(x, &n->m, col - 1, c);
	else if (col < 7)
		set_u(c, col == 5 ? n->instances : n->range_ns);
	else if (col < 9)
		metric_count_cell(&n->m, col - 7, false, c);
	else
		metric_stat_cell(&n->m, col - 9, c);
}

static void util_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct view_ctx *x = ctx;
	size_t n;
	const struct report_util *u = report_gpu_util_list(x->st->gaps, &n) + row;
	const uint64_t v[] = {0, u->t1 - u->t0, section_pid(x, u->section), u->device};

	if (col == 0)
		start_cell(x, u->t0, c);
	else if (col < 4)
		set_u(c, v[col]);
	else if (col == 4)
		*c = (struct report_cell){.t = CELL_DBL, .d = 100 * u->busy};
	else
		set_s(c, u->loss ? "LOSS: busy may be understated" : "");
}

/* ---- the views ---------------------------------------------------------------------------- */

void view_groups(struct view_ctx *x, struct report_view *v)
{
	const struct stats *st = x->st;

	v->cell = sum_cell;
	v->nrows = x->r == R_KERN_STACK_SUM && !st->stacked_kernels ? 0 : st->t[x->r].n;
}

void view_gpu_trace(struct view_ctx *x, struct report_view *v)
{
	v->cell = gpu_cell;
	v->nrows = spill_count(&x->st->gpu);
}

void view_api_trace(struct view_ctx *x, struct report_view *v)
{
	v->cell = api_cell;
	v->nrows = spill_count(&x->st->api);
}

void view_gaps(struct view_ctx *x, struct report_view *v)
{
	v->cell = gap_cell;
	report_gpu_gaps_list(x->st->gaps, &v->nrows);
}

/* gpu_time_util: a device whose span the bucket cuts too fine is refused, and said. */
void view_util(struct view_ctx *x, struct report_view *v)
{
	uint64_t refused = report_gpu_util_refused(x->st->gaps);

	v->cell = util_cell;
	report_gpu_util_list(x->st->gaps, &v->nrows);
	if (!refused)
		return;
	snprintf(x->text, sizeof(x->text),
		 "--util-bucket cuts a device's span into %" PRIu64
		 " buckets, more than %u: that device is not listed; give a larger bucket",
		 refused, REPORT_UTIL_MAX_BUCKETS);
	if (v->nrows)
		v->note = x->text;
	else
		v->empty = x->text;
}

void view_mem_usage(struct view_ctx *x, struct report_view *v)
{
	v->cell = mem_usage_cell;
	v->nrows = x->st->mem_usage.nrows;
}

void view_metrics(struct view_ctx *x, struct report_view *v)
{
	v->cell = metrics_cell;
	v->nrows = gm_rows(x->st->gm);
}

void view_metrics_nvtx(struct view_ctx *x, struct report_view *v)
{
	v->cell = metrics_nvtx_cell;
	v->nrows = gm_nvtx_rows(x->st->gm);
}
