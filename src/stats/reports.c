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

const struct report_def report_defs[] = {
    [R_NVTX_SUM] = {"nvtx_sum", "NVTX Range Summary", true, false},
    [R_API_SUM] = {"cuda_api_sum", "CUDA API Summary", true, false},
    [R_KERN_SUM] = {"cuda_gpu_kern_sum", "CUDA GPU Kernel Summary", true, true},
    [R_KERN_GB_SUM] = {"cuda_gpu_kern_gb_sum", "CUDA GPU Kernel/Grid/Block Summary", false, true},
    [R_MEM_TIME_SUM] = {"cuda_gpu_mem_time_sum", "CUDA GPU MemOps Summary (by Time)", true, false},
    [R_MEM_SIZE_SUM] = {"cuda_gpu_mem_size_sum", "CUDA GPU MemOps Summary (by Size)", true, false},
    [R_GPU_TRACE] = {"cuda_gpu_trace", "CUDA GPU Trace", false, true},
    [R_API_TRACE] = {"cuda_api_trace", "CUDA API Trace", false, false},
    [R_GPU_GAPS] = {"gpu_gaps", "GPU Gaps, each proven idle or not", false, false},
    [R_GPU_UTIL] = {"gpu_time_util", "GPU Time Utilization per bucket", false, false},
    [R_KERN_STACK_SUM] = {"cuda_kern_stack_sum", "CUDA GPU Kernel Summary by Call Stack", false,
			  false},
    [R_MEM_USAGE] = {"cuda_gpu_mem_usage", "CUDA GPU Memory Usage", false, false},
    [R_TIME_BREAKDOWN] = {"gpu_time_breakdown", "GPU Time Breakdown, per process and device", false,
			  false},
    [R_COMM_OVERLAP] = {"comm_compute_overlap", "Communication Overlapped by Compute", false,
			false},
    [R_KERN_SPREAD] = {"kern_rank_spread", "Top Kernels' Durations across Processes", false, true},
    [R_RANK_STEPS] = {"rank_steps", "Steps across Ranks, and the Straggler", false, false},
    [R_LAUNCH_STATS] = {"cuda_launch_stats", "CUDA Kernel Launch Statistics", false, false},
    [R_QUEUE_DEPTH] = {"gpu_queue_depth", "Launches Outstanding per Stream", false, false},
    [R_DIAGNOSIS] = {"diagnosis", "Diagnosis: What Cost the Most Time", false, false},
    [R_IDLE_WHY] = {"gpu_idle_why", "Why the GPU was idle: the host during each gap", false, false},
    [R_IDLE_BREAKDOWN] = {"gpu_idle_breakdown", "GPU Idle Time Breakdown (HTA's categories)", false,
			  false},
    [R_CPU_SAMPLE_SUM] = {"cpu_sample_sum", "CPU Sampling Summary (functions and lines)", false,
			  false},
    [R_OSRT_SUM] = {"osrt_sum", "OS Runtime Summary", false, false},
    [R_GPU_METRICS_SUM] = {"gpu_metrics_sum", "GPU Metrics Summary", false, false},
    [R_GPU_METRICS_NVTX] = {"gpu_metrics_nvtx_sum",
			    "GPU Metrics per NVTX Range (the 64 range names with the most time)",
			    false, false},
};
const unsigned report_defs_count = R_COUNT;

int report_find(const char *name)
{
	unsigned i;

	for (i = 0; i < R_COUNT; i++)
		if (strcmp(report_defs[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* ---- summary reports --------------------------------------------------------------------- */

#define TIME_STATS                                                                                 \
	{"Avg (ns)", COL_F1}, {"Med (ns)", COL_F1}, {"Min (ns)", COL_U64}, {"Max (ns)", COL_U64},  \
	{                                                                                          \
		"StdDev (ns)", COL_F1                                                              \
	}

static const struct report_col kern_cols[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Instances", COL_U64}, TIME_STATS,
    {"Name", COL_STR},
};
static const struct report_col kern_gb_cols[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Instances", COL_U64}, TIME_STATS,
    {"GridXYZ", COL_STR},  {"BlockXYZ", COL_STR},	 {"Name", COL_STR},
};
static const struct report_col api_cols[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Num Calls", COL_U64}, TIME_STATS,
    {"Name", COL_STR},
};
static const struct report_col nvtx_cols[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Instances", COL_U64}, TIME_STATS,
    {"Style", COL_STR},	   {"Range", COL_STR},
};
static const struct report_col memtime_cols[] = {
    {"Time (%)", COL_PCT},  {"Total Time (ns)", COL_U64}, {"Count", COL_U64}, TIME_STATS,
    {"Operation", COL_STR},
};
static const struct report_col memsize_cols[] = {
    {"Total (MB)", COL_F3}, {"Count", COL_U64},	  {"Avg (MB)", COL_F3},	   {"Med (MB)", COL_F3},
    {"Min (MB)", COL_F3},   {"Max (MB)", COL_F3}, {"StdDev (MB)", COL_F3}, {"Operation", COL_STR},
};

static const struct report_col stack_cols[] = {
    {"Time (%)", COL_PCT}, {"Total Time (ns)", COL_U64}, {"Instances", COL_U64}, TIME_STATS,
    {"By", COL_STR},	   {"Location", COL_STR},
};
static const struct report_col mem_usage_cols[] = {
    {"PID", COL_U64},	       {"Device", COL_U64},
    {"Memory Kind", COL_STR},  {"Allocations", COL_U64},
    {"Frees", COL_U64},	       {"Allocated (B)", COL_U64},
    {"Freed (B)", COL_U64},    {"Peak (B)", COL_U64},
    {"Peak At (ns)", COL_U64}, {"In Use At End (B)", COL_U64},
};

struct sum_ctx {
	const struct gtable *t;
	enum report_id r;
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
static void tail_cell(const struct sum_ctx *x, const struct group *g, size_t col,
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
	const struct sum_ctx *x = ctx;
	const struct group *g = x->t->order[row];
	const struct stats_group_view *v = &g->view;

	if (x->r == R_MEM_SIZE_SUM) {
		size_cell(v, col, c);
		return;
	}
	switch (col) {
	case 0: /* stack sums count each kernel twice (once per grouping): percent of one */
		set_d(c, x->t->grand_total
			     ? 100.0 * (double)v->total * (x->r == R_KERN_STACK_SUM ? 2 : 1) /
				   (double)x->t->grand_total
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

static const struct report_col gpu_trace_cols[] = {
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
    {"Name", COL_STR},
};

/* nsys's columns, with Name moved last, where a table does not pad it (docs/stats.md). */
static const struct report_col api_trace_cols[] = {
    {"Start (ns)", COL_U64}, {"Duration (ns)", COL_U64}, {"Result", COL_I64},
    {"CorrID", COL_U64},     {"Pid", COL_U64},		 {"Tid", COL_U64},
    {"T-Pri", COL_U64},	     {"Thread Name", COL_STR},	 {"Name", COL_STR},
};

struct trace_ctx {
	const struct stats *st;
	const struct report_set *set;
};

/* Start relative to the earliest session start, as nsys's are relative to its capture start:
 * negative for a record before it (a clock of another source, an allocation made before the
 * session began), and past 2^63 ns still the positive number it is. */
static void start_cell(const struct trace_ctx *x, uint64_t start, struct report_cell *c)
{
	uint64_t base = x->st->base;

	if (start >= base)
		set_u(c, start - base);
	else
		set_i(c, base - start > INT64_MAX ? INT64_MIN : -(int64_t)(base - start));
}

/* "NVIDIA H200 (0)": the device's name and id, as nsys shows it. */
static const char *device_label(const struct trace_ctx *x, uint32_t sec, uint32_t id)
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

static void gpu_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct trace_ctx *x = ctx;
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
	const struct trace_ctx *x = ctx;
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

static uint64_t section_pid(const struct trace_ctx *x, unsigned sec)
{
	return sec < x->set->nsections ? x->set->sections[sec]->s->pid : 0;
}

static void mem_usage_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct trace_ctx *x = ctx;
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

static const struct report_col gap_cols[] = {
    {"Start (ns)", COL_U64},   {"Duration (ns)", COL_U64}, {"PID", COL_U64},
    {"Device", COL_U64},       {"Stream", COL_STR},	   {"Class", COL_STR},
    {"Sampled (ns)", COL_U64}, {"SM Active (%)", COL_PCT}, {"Why", COL_STR},
};

static const struct report_col util_cols[] = {
    {"Start (ns)", COL_U64}, {"Duration (ns)", COL_U64}, {"PID", COL_U64},
    {"Device", COL_U64},     {"Busy (%)", COL_PCT},	 {"Loss", COL_STR},
};

static void gap_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct trace_ctx *x = ctx;
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
		set_s(c, g->unproven ? "unproven" : g->active ? "active" : "idle");
	} else if (col == 6 && g->sampled_ns) {
		set_u(c, g->sampled_ns);
	} else if (col == 7 && g->sampled_ns) {
		set_d(c, g->sm_active);
	} else if (col == 8) {
		set_s(c, g->why);
	}
}

/* ---- GPU metrics -------------------------------------------------------------------------- */

#define METRIC_STATS                                                                               \
	{"Mean", COL_F1}, {"P50", COL_F1}, {"P90", COL_F1}, {"Min", COL_F1}, {"Max", COL_F1},      \
	    {"Threshold", COL_F1},                                                                 \
	{                                                                                          \
		"Above (%)", COL_PCT                                                               \
	}

static const struct report_col metrics_cols[] = {
    {"PID", COL_U64},	    {"Device", COL_U64},  {"Metric", COL_STR},
    {"Unit", COL_STR},	    {"Samples", COL_U64}, {"Covered (ns)", COL_U64},
    {"Span (ns)", COL_U64}, METRIC_STATS,	  {"Name", COL_STR},
};

static const struct report_col metrics_nvtx_cols[] = {
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

static void metric_head_cell(const struct trace_ctx *x, const struct gm_series_view *v, size_t col,
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
	const struct trace_ctx *x = ctx;
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
	const struct trace_ctx *x = ctx;
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
	const struct trace_ctx *x = ctx;
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

/* ---- writing ---------------------------------------------------------------------------- */

#define COLS(a)                                                                                    \
	{                                                                                          \
		a, sizeof(a) / sizeof(a[0])                                                        \
	}

static const struct {
	const struct report_col *cols;
	size_t n;
} report_cols[R_COUNT] = {
    [R_NVTX_SUM] = COLS(nvtx_cols),
    [R_API_SUM] = COLS(api_cols),
    [R_KERN_SUM] = COLS(kern_cols),
    [R_KERN_GB_SUM] = COLS(kern_gb_cols),
    [R_MEM_TIME_SUM] = COLS(memtime_cols),
    [R_MEM_SIZE_SUM] = COLS(memsize_cols),
    [R_GPU_TRACE] = COLS(gpu_trace_cols),
    [R_API_TRACE] = COLS(api_trace_cols),
    [R_GPU_GAPS] = COLS(gap_cols),
    [R_GPU_UTIL] = COLS(util_cols),
    [R_KERN_STACK_SUM] = COLS(stack_cols),
    [R_MEM_USAGE] = COLS(mem_usage_cols),
    [R_GPU_METRICS_SUM] = COLS(metrics_cols),
    [R_GPU_METRICS_NVTX] = COLS(metrics_nvtx_cols),
    [R_OSRT_SUM] = COLS(api_cols),
};

static const char *const empty_text[R_COUNT] = {
    [R_NVTX_SUM] = "the trace(s) hold no NVTX range data",
    [R_API_SUM] = "the trace(s) hold no CUDA API data",
    [R_KERN_SUM] = "the trace(s) hold no CUDA kernel data",
    [R_KERN_GB_SUM] = "the trace(s) hold no CUDA kernel data",
    [R_MEM_TIME_SUM] = "the trace(s) hold no GPU memory operation data",
    [R_MEM_SIZE_SUM] = "the trace(s) hold no GPU memory operation data",
    [R_GPU_TRACE] = "the trace(s) hold no CUDA kernel or memory operation data",
    [R_API_TRACE] = "the trace(s) hold no CUDA API data",
    [R_GPU_GAPS] = "no GPU gap as long as --gap-min",
    [R_GPU_UTIL] = "the trace(s) hold no GPU work",
    [R_KERN_STACK_SUM] = "the trace(s) hold no call stacks of kernel launches (record with "
			 "--python-stacks or --native-stacks)",
    [R_MEM_USAGE] = "the trace(s) hold no CUDA memory allocation data (record with --trace "
		    "cuda,memory)",
    [R_IDLE_WHY] = "no GPU gap as long as --gap-min",
    [R_IDLE_BREAKDOWN] = "the trace(s) hold no idle time between GPU work",
    [R_CPU_SAMPLE_SUM] = "the trace(s) hold no host samples (record with --sample python,native)",
    [R_OSRT_SUM] = "the trace(s) hold no blocking calls (record with --trace osrt)",
    [R_GPU_METRICS_SUM] = GM_NO_METRICS,
    [R_GPU_METRICS_NVTX] = "the trace(s) hold no GPU metrics inside NVTX ranges (record with "
			   "--gpu-metrics and NVTX ranges)",
};

/* A report a summary cannot carry, when summaries are among the inputs: none of its rows. */
static void summarized_only(const struct stats *st, enum report_id r, struct report_view *v)
{
	if (st->summaries && !stats_summarized(r)) {
		v->nrows = 0;
		v->empty = "summaries (tally stats --partial) carry no records: this report needs "
			   "the traces themselves";
	}
}

/* What a report must say beside its rows: a figure that could not be shown as it is. */
static void view_notes(const struct stats *st, enum report_id r, struct report_view *v)
{
	static char util[300];
	uint64_t refused;

	if ((r == R_MEM_USAGE && st->mem_usage.saturated) || st->t[r].saturated)
		v->note = "a total or a count passed 2^64 - 1 and is shown stopped there "
			  "(18,446,744,073,709,551,615; averages are exact where only a total did, "
			  "from the quantile sketch where a count did): the input claims more than "
			  "64 bits count";
	if (r == R_GPU_METRICS_SUM && st->gm && gm_saturated(st->gm))
		v->note = "the samples of a metric cover more than 2^64 ns in all (they overlap): "
			  "Covered is shown stopped at 18,446,744,073,709,551,615, the mean is "
			  "computed in long double, and quantiles and Above weigh the samples "
			  "within the bound of the sketch's weights";
	if (r == R_GPU_UTIL && (refused = report_gpu_util_refused(st->gaps)) != 0) {
		snprintf(util, sizeof(util),
			 "--util-bucket cuts a device's span into %" PRIu64
			 " buckets, more than %u: that device is not listed; give a larger bucket",
			 refused, REPORT_UTIL_MAX_BUCKETS);
		if (v->nrows)
			v->note = util;
		else
			v->empty = util;
	}
}

static void view_for(const struct stats *st, const struct report_set *set, enum report_id r,
		     struct report_view *v, struct sum_ctx *sx, struct trace_ctx *tx,
		     struct analysis_ctx *ax, struct host_view_ctx *hx)
{
	memset(v, 0, sizeof(*v));
	if (analysis_view(st, set, r, v, ax)) {
		if (st->summaries) /* they need the records themselves */
			summarized_only(st, r, v);
		return;
	}
	v->name = report_defs[r].name;
	v->title = report_defs[r].title;
	v->empty = empty_text[r];
	v->cols = report_cols[r].cols;
	v->ncols = report_cols[r].n;
	*sx = (struct sum_ctx){&st->t[r], r};
	*tx = (struct trace_ctx){st, set};
	*hx = (struct host_view_ctx){st, set};
	if (r == R_IDLE_WHY || r == R_IDLE_BREAKDOWN || r == R_CPU_SAMPLE_SUM) {
		host_report_view(hx, r, v);
	} else if (r == R_GPU_GAPS || r == R_GPU_UTIL) {
		v->cell = r == R_GPU_GAPS ? gap_cell : util_cell;
		v->ctx = tx;
		if (r == R_GPU_GAPS)
			report_gpu_gaps_list(st->gaps, &v->nrows);
		else
			report_gpu_util_list(st->gaps, &v->nrows);
	} else if (r == R_GPU_TRACE || r == R_API_TRACE) {
		v->cell = r == R_GPU_TRACE ? gpu_cell : api_cell;
		v->ctx = tx;
		v->nrows = r == R_GPU_TRACE ? spill_count(&st->gpu) : spill_count(&st->api);
	} else if (r == R_MEM_USAGE) {
		v->cell = mem_usage_cell;
		v->ctx = tx;
		v->nrows = st->mem_usage.nrows;
	} else if (r == R_GPU_METRICS_SUM || r == R_GPU_METRICS_NVTX) {
		v->cell = r == R_GPU_METRICS_SUM ? metrics_cell : metrics_nvtx_cell;
		v->ctx = tx;
		v->nrows = r == R_GPU_METRICS_SUM ? gm_rows(st->gm) : gm_nvtx_rows(st->gm);
	} else {
		v->cell = sum_cell;
		v->ctx = sx;
		v->nrows = r == R_KERN_STACK_SUM && !st->stacked_kernels ? 0 : st->t[r].n;
	}
	view_notes(st, r, v);
	summarized_only(st, r, v);
}

static void untimed_note(const struct stats *st, FILE *out, const char *prefix)
{
	if (st->untimed)
		fprintf(out,
			"%stally: %" PRIu64
			" record(s) have no timestamps (their timing was lost): "
			"they are in none of the reports below\n",
			prefix, st->untimed);
}

/* Medians past the budget of kept values come from the sketch: say so, and how close they are. */
static void sketch_note(const struct stats *st, FILE *out, const char *prefix)
{
	if (st->sketching && (stats_wants(st, R_NVTX_SUM) || stats_wants(st, R_API_SUM) ||
			      stats_wants(st, R_KERN_SUM) || stats_wants(st, R_KERN_GB_SUM) ||
			      stats_wants(st, R_MEM_TIME_SUM) || stats_wants(st, R_MEM_SIZE_SUM) ||
			      stats_wants(st, R_KERN_STACK_SUM)))
		fprintf(
		    out,
		    "%stally: medians (Med) are from a quantile sketch, each within %.2f%% of the "
		    "exact median (%s); counts, totals, minima, maxima and deviations are exact\n",
		    prefix, SKETCH_REL_ERROR * 100, st->why_sketch);
}

/* "jobs": one object per job the traces belong to (more than one: they do not go together). */
static void jobs_json(const struct stats *st, struct tally_json *j)
{
	size_t i;

	tally_json_name(j, "jobs");
	tally_json_array_begin(j);
	for (i = 0; i < st->jobs.njobs; i++) {
		const struct report_job *job = &st->jobs.jobs[i];

		tally_json_object_begin(j);
		tally_json_name(j, "key");
		if (job->key)
			tally_json_string(j, job->key);
		else
			tally_json_null(j);
		tally_json_field_uint(j, "sections", job->nsections);
		tally_json_field_uint(j, "ranks", job->ranks);
		tally_json_field_int(j, "world_size", job->world_size);
		tally_json_field_uint(j, "start_realtime_ns", job->start);
		tally_json_field_uint(j, "end_realtime_ns", job->end);
		tally_json_field_string(j, "hosts", job->hosts);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

int stats_write(struct stats *st, const struct report_set *set, FILE *out, enum report_format fmt)
{
	struct tally_json j;
	unsigned r;

	memset(&j, 0, sizeof(j));
	if (fmt == REPORT_FMT_JSON) {
		tally_json_init(&j, out, true);
		tally_json_object_begin(&j);
		report_loss_json(&j, set);
		jobs_json(st, &j);
		tally_json_field_uint(&j, "untimed_records", st->untimed);
		tally_json_field_uint(&j, "time_base_ns", st->base);
		tally_json_field_string(&j, "medians", st->sketching ? "sketch" : "exact");
		tally_json_field_double(&j, "median_max_rel_error",
					st->sketching ? SKETCH_REL_ERROR : 0.0);
		tally_json_name(&j, "reports");
		tally_json_array_begin(&j);
	} else {
		report_loss_text(out, set, fmt == REPORT_FMT_CSV ? "# " : "");
		stats_jobs_warning(st, out, fmt == REPORT_FMT_CSV ? "# " : "");
		untimed_note(st, out, fmt == REPORT_FMT_CSV ? "# " : "");
		sketch_note(st, out, fmt == REPORT_FMT_CSV ? "# " : "");
	}
	for (r = 0; r < R_COUNT; r++) {
		struct report_view v;
		struct sum_ctx sx;
		struct trace_ctx tx;
		struct analysis_ctx ax;
		struct host_view_ctx hx;

		if (!stats_wants(st, r))
			continue;
		view_for(st, set, r, &v, &sx, &tx, &ax, &hx);
		report_view_write(out, &v, fmt, &j);
	}
	if (fmt == REPORT_FMT_JSON) {
		tally_json_array_end(&j);
		tally_json_object_end(&j);
		tally_json_finish(&j);
	}
	return ferror(out) ? -EIO : 0;
}
