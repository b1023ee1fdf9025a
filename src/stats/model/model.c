/* SPDX-License-Identifier: MIT */
/*
 * The one table of tally's reports (docs/stats.md, "One model behind every output"): each row is
 * a report's whole definition, its name and title, whether plain `tally stats` shows it, what it
 * needs from the pass (the analyses stats.c makes for it), its columns, what it says when it has
 * no row, and its view (how its rows are read from the analyses).  `tally stats` writes the rows
 * of the reports asked for, in the order asked; the page (src/page/) embeds the very same JSON,
 * and the diagnosis and compare read the same analyses.  A new report is a row here, a view and,
 * when no analysis computes what it shows, a row of stats.c's analyses[] with its computation.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "stats-int.h"
#include "table.h"

#define NO_KERNELS "the trace(s) hold no CUDA kernel data"
#define NO_GAP	   "no GPU gap as long as --gap-min"

const struct report_def report_defs[] = {
    [R_NVTX_SUM] = {"nvtx_sum", "NVTX Range Summary", true, false, NEED_GROUPS, cols_nvtx,
		    "the trace(s) hold no NVTX range data", view_groups},
    [R_API_SUM] = {"cuda_api_sum", "CUDA API Summary", true, false, NEED_GROUPS, cols_api,
		   "the trace(s) hold no CUDA API data", view_groups},
    [R_KERN_SUM] = {"cuda_gpu_kern_sum", "CUDA GPU Kernel Summary", true, true, NEED_GROUPS,
		    cols_kern, NO_KERNELS, view_groups},
    [R_KERN_GB_SUM] = {"cuda_gpu_kern_gb_sum", "CUDA GPU Kernel/Grid/Block Summary", false, true,
		       NEED_GROUPS, cols_kern_gb, NO_KERNELS, view_groups},
    [R_MEM_TIME_SUM] = {"cuda_gpu_mem_time_sum", "CUDA GPU MemOps Summary (by Time)", true, false,
			NEED_GROUPS, cols_memtime, "the trace(s) hold no GPU memory operation data",
			view_groups},
    [R_MEM_SIZE_SUM] = {"cuda_gpu_mem_size_sum", "CUDA GPU MemOps Summary (by Size)", true, false,
			NEED_GROUPS, cols_memsize, "the trace(s) hold no GPU memory operation data",
			view_groups},
    [R_GPU_TRACE] = {"cuda_gpu_trace", "CUDA GPU Trace", false, true, NEED_GPU_ROWS, cols_gpu_trace,
		     "the trace(s) hold no CUDA kernel or memory operation data", view_gpu_trace},
    [R_API_TRACE] = {"cuda_api_trace", "CUDA API Trace", false, false, NEED_API_ROWS,
		     cols_api_trace, "the trace(s) hold no CUDA API data", view_api_trace},
    [R_GPU_GAPS] = {"gpu_gaps", "GPU Gaps, each proven idle or not", false, false,
		    NEED_GAPS | NEED_METRICS, cols_gaps, NO_GAP, view_gaps},
    [R_GPU_UTIL] = {"gpu_time_util", "GPU Time Utilization per bucket", false, false,
		    NEED_GAPS | NEED_UTIL, cols_util, "the trace(s) hold no GPU work", view_util},
    [R_KERN_STACK_SUM] = {"cuda_kern_stack_sum", "CUDA GPU Kernel Summary by Call Stack", false,
			  false, NEED_GROUPS, cols_stack,
			  "the trace(s) hold no call stacks of kernel launches (record with "
			  "--python-stacks or --native-stacks)",
			  view_groups},
    [R_MEM_USAGE] = {"cuda_gpu_mem_usage", "CUDA GPU Memory Usage", false, false, NEED_MEMORY,
		     cols_mem_usage,
		     "the trace(s) hold no CUDA memory allocation data (record with --trace "
		     "cuda,memory)",
		     view_mem_usage},
    [R_TIME_BREAKDOWN] = {"gpu_time_breakdown", "GPU Time Breakdown, per process and device", false,
			  false, NEED_BREAKDOWN, cols_breakdown, "the trace(s) hold no GPU work",
			  view_breakdown},
    [R_COMM_OVERLAP] = {"comm_compute_overlap", "Communication Overlapped by Compute", false, false,
			NEED_BREAKDOWN, cols_overlap,
			"no communication kernels in the trace(s) (NCCL and the like, by name: "
			"docs/stats.md)",
			view_overlap},
    [R_KERN_SPREAD] = {"kern_rank_spread", "Top Kernels' Durations across Processes", false, true,
		       NEED_SPREAD, cols_spread, NO_KERNELS, view_spread},
    [R_RANK_STEPS] = {"rank_steps", "Steps across Ranks, and the Straggler", false, false,
		      NEED_STEPS, cols_steps, NULL /* view_steps says which ranges it saw */,
		      view_steps},
    [R_LAUNCH_STATS] = {"cuda_launch_stats", "CUDA Kernel Launch Statistics", false, false,
			NEED_LAUNCHES, cols_launches, "the trace(s) hold no CUDA launch data",
			view_launches},
    [R_QUEUE_DEPTH] = {"gpu_queue_depth", "Launches Outstanding per Stream", false, false,
		       NEED_QUEUES, cols_queues,
		       "no launch joined to its GPU work in the trace(s) (needs the runtime or "
		       "driver API and GPU records)",
		       view_queues},
    [R_DIAGNOSIS] = {"diagnosis", "Diagnosis: What Cost the Most Time", false, false, NEED_FINDINGS,
		     cols_findings,
		     "nothing crosses a rule's threshold: no finding (the rules and thresholds: "
		     "docs/diagnosis.md)",
		     view_findings},
    [R_IDLE_WHY] = {"gpu_idle_why", "Why the GPU was idle: the host during each gap", false, false,
		    NEED_IDLE | NEED_WHY_ROWS, cols_idle_why, NO_GAP, view_idle_why},
    [R_IDLE_BREAKDOWN] = {"gpu_idle_breakdown", "GPU Idle Time Breakdown (HTA's categories)", false,
			  false, NEED_IDLE, cols_idle_breakdown,
			  "the trace(s) hold no idle time between GPU work", view_idle_breakdown},
    [R_CPU_SAMPLE_SUM] = {"cpu_sample_sum", "CPU Sampling Summary (functions and lines)", false,
			  false, NEED_SAMPLES, cols_samples,
			  "the trace(s) hold no host samples (record with --sample python,native)",
			  view_samples},
    [R_OSRT_SUM] = {"osrt_sum", "OS Runtime Summary", false, false, NEED_GROUPS, cols_api,
		    "the trace(s) hold no blocking calls (record with --trace osrt)", view_groups},
    [R_GPU_METRICS_SUM] = {"gpu_metrics_sum", "GPU Metrics Summary", false, false, NEED_METRICS,
			   cols_metrics, GM_NO_METRICS, view_metrics},
    [R_GPU_METRICS_NVTX] = {"gpu_metrics_nvtx_sum",
			    "GPU Metrics per NVTX Range (the 64 range names with the most time)",
			    false, false, NEED_METRICS | NEED_METRIC_RANGES, cols_metrics_nvtx,
			    "the trace(s) hold no GPU metrics inside NVTX ranges (record with "
			    "--gpu-metrics and NVTX ranges)",
			    view_metrics_nvtx},
    [R_STEP_BOUND] = {"step_bound", "What Bounds Each Step", false, false, NEED_BOUND,
		      cols_step_bound,
		      "no steps: no NVTX range 'step' or 'ProfilerStep' (or --range NAME) in three "
		      "steady steps or more, and no repeating pattern of launches",
		      view_step_bound},
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

/* ---- a report's view ---------------------------------------------------------------------- */

static size_t count_cols(const struct report_col *c)
{
	size_t n = 0;

	while (c[n].header)
		n++;
	return n;
}

/* A report a summary cannot carry, when summaries are among the inputs: none of its rows. */
static void summarized_only(const struct stats *st, enum report_id r, struct report_view *v)
{
	if (st->summaries && !stats_summarized(r)) {
		v->nrows = 0;
		v->empty = "summaries (tally stats --partial) carry no records: this report needs "
			   "the traces themselves";
	}
}

/* A total that could not be shown as it is. */
static void saturation_note(const struct stats *st, enum report_id r, struct report_view *v)
{
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
}

/* Report r as its row of the table says, over the model; x lives as long as v is written. */
static void view_for(const struct stats *st, const struct report_set *set, enum report_id r,
		     struct report_view *v, struct view_ctx *x)
{
	const struct report_def *d = &report_defs[r];

	memset(v, 0, sizeof(*v));
	memset(x, 0, sizeof(*x));
	*x = (struct view_ctx){.st = st, .set = set, .r = r};
	v->name = d->name;
	v->title = d->title;
	v->cols = d->cols;
	v->ncols = count_cols(d->cols);
	v->empty = d->empty;
	v->ctx = x;
	d->view(x, v);
	saturation_note(st, r, v);
	summarized_only(st, r, v);
}

/* ---- writing ------------------------------------------------------------------------------ */

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
	unsigned r;
	bool groups = false;

	for (r = 0; r < R_COUNT; r++)
		groups |= stats_wants(st, r) && (report_defs[r].needs & NEED_GROUPS);
	if (st->sketching && groups)
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

/* The reports to write, in the order asked (stats_request.order), else in the table's. */
static size_t write_order(const struct stats *st, unsigned *out)
{
	size_t n = 0;
	unsigned r, k;

	for (k = 0; k < st->req.norder; k++)
		if (st->req.order[k] < R_COUNT && stats_wants(st, st->req.order[k]))
			out[n++] = st->req.order[k];
	for (r = 0; r < R_COUNT; r++) { /* wanted but not in the order: after it, in table order */
		bool listed = false;

		for (k = 0; k < n; k++)
			listed |= out[k] == r;
		if (stats_wants(st, r) && !listed)
			out[n++] = r;
	}
	return n;
}

int stats_write(struct stats *st, const struct report_set *set, FILE *out, enum report_format fmt)
{
	struct tally_json j;
	unsigned order[R_COUNT];
	size_t n = write_order(st, order), k;

	memset(&j, 0, sizeof(j));
	if (fmt == REPORT_FMT_JSON) {
		tally_json_init(&j, out, true);
		tally_json_object_begin(&j);
		report_loss_json(&j, set);
		jobs_json(st, &j);
		tally_json_field_uint(&j, "untimed_records", st->untimed);
		tally_json_field_uint(&j, "time_base_ns", st->base);
		tally_json_field_string(&j, "time_origin", stats_time_origin(st));
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
	for (k = 0; k < n; k++) {
		struct report_view v;
		struct view_ctx x;

		view_for(st, set, order[k], &v, &x);
		report_view_write(out, &v, fmt, &j);
	}
	if (fmt == REPORT_FMT_JSON) {
		tally_json_array_end(&j);
		tally_json_object_end(&j);
		tally_json_finish(&j);
	}
	return ferror(out) ? -EIO : 0;
}
