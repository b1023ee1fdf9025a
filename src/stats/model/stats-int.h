/* SPDX-License-Identifier: MIT */
/* Internals shared by the aggregation (stats.c), the groups (groups.c), the answers after the pass
 * (answers.c), the report table (model.c), the summaries (summary.c) and the views (reports.c). */
#ifndef TALLY_STATS_STATS_INT_H
#define TALLY_STATS_STATS_INT_H

#include "bound.h"
#include "breakdown.h"
#include "depth.h"
#include "diagnosis.h"
#include "gaps.h"
#include "hashmap.h"
#include "idle.h"
#include "idlewhy.h"
#include "jobprocs.h"
#include "jobs.h"
#include "launch.h"
#include "memusage.h"
#include "metricsum.h"
#include "samplesum.h"
#include "satmath.h"
#include "sketch.h"
#include "spill.h"
#include "spread.h"
#include "stats.h"
#include "steps.h"

/* Report indexes into report_defs[] (reports.c keeps the two in step). */
enum report_id {
	R_NVTX_SUM,
	R_API_SUM,
	R_KERN_SUM,
	R_KERN_GB_SUM,
	R_MEM_TIME_SUM,
	R_MEM_SIZE_SUM,
	R_GPU_TRACE,
	R_API_TRACE,
	R_GPU_GAPS,
	R_GPU_UTIL,
	R_KERN_STACK_SUM, /* style 0: by innermost user frame, 1: by whole stack */
	R_MEM_USAGE,
	/* the analyses (docs/stats.md, "Where the time went, across ranks") */
	R_TIME_BREAKDOWN,
	R_COMM_OVERLAP,
	R_KERN_SPREAD,
	R_RANK_STEPS,
	R_LAUNCH_STATS,
	R_QUEUE_DEPTH,
	R_DIAGNOSIS,
	/* the host behind the GPU's idle time (docs/stats.md, "Why the GPU was idle") */
	R_IDLE_WHY,	  /* hostreports.c */
	R_IDLE_BREAKDOWN, /* hostreports.c */
	R_CPU_SAMPLE_SUM, /* hostreports.c */
	R_OSRT_SUM,
	R_GPU_METRICS_SUM,
	R_GPU_METRICS_NVTX,
	R_STEP_BOUND, /* stepreports.c */
	R_COUNT,
};

struct u64vec {
	uint64_t *v;
	size_t n, cap;
};

/* Exact moments of a group's values, kept as they come once the values are not (and the figures
 * a summary carries): they add up, group to group and summary to summary. */
struct moments {
	uint64_t n, total, min, max;
	unsigned __int128 sq; /* sum of squares: exact while values < 2^32 and n < 2^31 */
	long double lsq;      /* the same, in long double, past that */
	bool saturated;	      /* n or total stopped at UINT64_MAX (summaries that add past it) */
};

/* One value into the moments (the pass's hot path and groups.c's turn to sketches). */
static inline void moments_add(struct moments *m, uint64_t x)
{
	if (!m->n || x < m->min)
		m->min = x;
	if (x > m->max)
		m->max = x;
	m->n++;
	m->total = tally_add_sat(m->total, x, &m->saturated);
	m->sq += (unsigned __int128)x * x;
	m->lsq += (long double)x * (long double)x;
}

/*
 * One row of a summary report.  While the values kept by all groups fit the budget
 * (stats_request.exact_values), every value is kept, for the exact median; past it, every group
 * turns to its exact moments and a quantile sketch (sketch.h), and memory stops growing with the
 * trace.
 */
struct group {
	char *name; /* owned */
	int32_t grid[3], block[3];
	unsigned style; /* nvtx: 0 push/pop, 1 start/end */
	struct u64vec vals;
	struct moments m;	      /* sketching */
	struct tally_sketch sk;	      /* sketching */
	struct stats_group_view view; /* after stats_finish */
};

struct gtable {
	struct group *g;
	size_t n, cap;
	struct tally_map index; /* the group's hash -> its index + 1 (groups.c) */
	uint64_t grand_total;
	bool saturated;	      /* a total (or the grand total) stopped at UINT64_MAX */
	struct group **order; /* after stats_finish: by total, descending */
};

/* cuda_gpu_trace: what a row needs, kept compact (the report sorts every GPU record, in a
 * spill). */
struct gpu_row {
	uint64_t start, dur, bytes;
	const char *name;
	uint32_t corr, sec, device, ctx, stream;
	int32_t grid[3], block[3];
	uint32_t regs, smem_static, smem_dynamic;
	uint8_t kind, src_kind, dst_kind;
};

struct api_row {
	uint64_t start, dur;
	const char *name;
	uint32_t corr, sec, pid, tid;
	int32_t result;
};

/* Where a writer is in a trace report's rows, when they came from the spill's merge. */
struct row_cursor {
	size_t at;	 /* the row last handed out + 1; 0 none */
	const void *row; /* it */
};

/* Per section: string id -> group index + 1, per report that groups by a name. */
struct sec_cache {
	uint32_t *kern, *api;
	uint32_t nkern, napi;
	struct tally_map nvtx;	   /* (domain, style; name) -> nvtx group + 1 */
	uint32_t *stack_groups[2]; /* stack id -> cuda_kern_stack_sum group + 1, per style */
	uint32_t nstack_groups[2];
};

#define MEMOPS 15 /* memcpy kinds 0..13, then memset */

/* Names of trace rows, owned: a later STRINGS chunk of a damaged file may redefine an id and free
 * the reader's copy, so rows never point into a section's string table. */
struct strpool {
	char **name; /* in the order first seen */
	size_t n, cap;
	struct tally_map index; /* a name's hash -> its index in name + 1 */
};

struct stats_partial;

struct stats {
	struct stats_request req;
	struct gtable t[R_COUNT];	 /* summary reports */
	uint32_t memop_group[2][MEMOPS]; /* time, size: group index + 1 */
	/* cuda_gpu_trace and cuda_api_trace: a row per record, sorted by start; past the spill's
	 * budget they go to a temporary file and come back merged (spill.h) */
	struct spill gpu, api;
	struct row_cursor gpu_at, api_at;
	struct strpool names;
	struct sec_cache *secs;
	size_t nsecs, secs_cap; /* sections seen (index + 1 of the last), room for */
	uint64_t untimed;
	uint32_t needs; /* what the wanted reports need (enum stats_need), closed over analyses[] */
	uint64_t first; /* the earliest timed record's start (aligned); UINT64_MAX: none yet */
	uint64_t base;	/* the time origin of every output (stats_time_base) */
	bool failed;	/* out of memory somewhere: reports would be short */
	struct report_gpu_gaps *gaps; /* gpu_gaps, gpu_time_util */
	struct mem_usage mem_usage;   /* cuda_gpu_mem_usage */
	/* kernels with a call stack: with none, the stack report is empty */
	uint64_t stacked_kernels;
	uint64_t kept;	       /* values kept by all groups (their capacity) */
	uint64_t exact_values; /* the budget of kept values */
	bool sketching;	       /* past it: moments and sketches, every group */
	char why_sketch[96];
	struct stats_partial *partial; /* --partial: what the summary needs (summary.c) */
	uint64_t summaries;	       /* sections read from summaries */
	/* the analyses, each made when a report needs it */
	struct breakdown *bd;
	struct queues *queues;
	struct launches *launches;
	struct steps *steps;
	struct spread *spread;
	bool mem;		 /* MEMORY records are kept (memory usage, the diagnosis) */
	struct report_jobs jobs; /* after stats_finish */
	struct diag_finding *findings;
	size_t nfindings;
	const struct report_set *set;		  /* the set stats_finish was given */
	struct report_idle *idle;		  /* gpu_idle_why, gpu_idle_breakdown */
	struct idle_why *why;			  /* the same: the host behind the holes */
	struct sample_sum *samples;		  /* cpu_sample_sum */
	uint32_t osrt_group[TALLY_OSRT_CALL_MAX]; /* osrt_sum: group index + 1 by call */
	struct idle_bd_row *bd_rows;		  /* gpu_idle_breakdown's rows (hostreports.c) */
	size_t nbd_rows;
	struct gm *gm;		/* GPU metrics: gpu_metrics_sum, _nvtx_sum, and gpu_gaps' metrics */
	struct jobprocs *procs; /* the other processes' samples, for the waits across processes */
	struct bound *bound;	/* what bounds each step: step_bound and the diagnosis */
	char err[400];		/* why stats_finish failed, when not for memory */
};

/*
 * What a report needs from the pass (report_def.needs): the analyses that make its rows.  stats.c
 * makes every analysis some wanted report needs (with what that analysis needs in turn, its row of
 * analyses[]), feeds each the records, and finishes them in the table's order.
 */
enum stats_need {
	NEED_GROUPS = 1u << 0,	  /* its groups of values (st->t[report]): nsys's summaries */
	NEED_GPU_ROWS = 1u << 1,  /* a compact row per GPU record (cuda_gpu_trace) */
	NEED_API_ROWS = 1u << 2,  /* a compact row per API call (cuda_api_trace) */
	NEED_GAPS = 1u << 3,	  /* gaps.h: every device's and stream's gaps, one class each */
	NEED_UTIL = 1u << 4,	  /* gaps.h: busy fraction per bucket */
	NEED_BREAKDOWN = 1u << 5, /* breakdown.h */
	NEED_QUEUES = 1u << 6,	  /* depth.h */
	NEED_LAUNCHES = 1u << 7,  /* launch.h */
	NEED_STEPS = 1u << 8,	  /* steps.h */
	NEED_SPREAD = 1u << 9,	  /* spread.h */
	NEED_MEMORY = 1u << 10,	  /* memusage.h */
	NEED_IDLE = 1u << 11,	  /* idle.h and idlewhy.h's stacks */
	NEED_WHY_ROWS = 1u << 12, /* idlewhy.h's rows */
	NEED_SAMPLES = 1u << 13,  /* samplesum.h */
	NEED_METRICS = 1u << 14,  /* metricsum.h, and the gaps' metrics (metricwin.c) */
	NEED_METRIC_RANGES = 1u << 15, /* metricsum.h over NVTX ranges */
	NEED_JOBS = 1u << 16,	       /* jobs.h */
	NEED_FINDINGS = 1u << 17,      /* diagnosis.h */
	NEED_BOUND = 1u << 18,	       /* bound.h: what bounds each step */
};

/* One report's view over the model, for the table writer: every cell function's ctx. */
struct view_ctx {
	const struct stats *st;
	const struct report_set *set;
	enum report_id r;
	char text[400]; /* an empty text or a note the view made */
};

/* The views of the report table (report_defs[].view): rows and cell function into v (its
 * name, title, columns, empty text and ctx are set already). */
typedef void (*view_fn)(struct view_ctx *x, struct report_view *v);
void view_groups(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_gpu_trace(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_api_trace(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_gaps(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_util(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_mem_usage(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_metrics(struct view_ctx *x, struct report_view *v);	     /* reports.c */
void view_metrics_nvtx(struct view_ctx *x, struct report_view *v);   /* reports.c */
void view_breakdown(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_overlap(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_spread(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_steps(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_launches(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_queues(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_findings(struct view_ctx *x, struct report_view *v);	     /* reports-analyses.c */
void view_step_bound(struct view_ctx *x, struct report_view *v);     /* stepreports.c */
void view_idle_why(struct view_ctx *x, struct report_view *v);	     /* hostreports.c */
void view_idle_breakdown(struct view_ctx *x, struct report_view *v); /* hostreports.c */
void view_samples(struct view_ctx *x, struct report_view *v);	     /* hostreports.c */

/* The columns of the reports, each list ended by {NULL} (report_defs[] points at them). */
extern const struct report_col cols_kern[], cols_kern_gb[], cols_api[], cols_nvtx[], cols_memtime[],
    cols_memsize[], cols_stack[], cols_mem_usage[], cols_gpu_trace[], cols_api_trace[], cols_gaps[],
    cols_util[], cols_metrics[], cols_metrics_nvtx[];
extern const struct report_col cols_breakdown[], cols_overlap[], cols_spread[], cols_steps[],
    cols_launches[], cols_queues[], cols_findings[], cols_step_bound[];
extern const struct report_col cols_idle_why[], cols_idle_breakdown[], cols_samples[];

/* summary.c: a section's chunks and records kept for its summary; a summary's aggregates merged */
int stats_partial_chunk(struct stats *st, struct report_section *rs,
			const struct tally_chunk_info *c, const uint8_t *payload);
int stats_partial_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			  size_t n);
int stats_partial_section_end(struct stats *st, struct report_section *rs);
void stats_partial_free(struct stats_partial *p);
int stats_summary_chunk(struct stats *st, const uint8_t *payload, size_t len);

/* groups.c, below stats.c and summary.c: the group of a name, made if new (its index, -1 out of
 * memory); a table's groups freed; every group of every table to moments and a sketch (past the
 * budget, or for a summary); one group's moments merged into another's. */
long gtable_get(struct gtable *t, const char *name, const int32_t *gb, unsigned style);
void gtable_fini(struct gtable *t);
int stats_to_sketches(struct stats *st);
void moments_merge(struct moments *m, const struct moments *o);

/* The one class of each gap into the breakdowns' idle time, after the metrics' pass
 * (gapclass.c).  0. */
int stats_classify_gaps(struct stats *st, const struct report_set *set);

/* The host reports' aggregation (hostreports.c): gpu_idle_breakdown's rows, once the pass is
 * done. */
int host_reports_finish(struct stats *st);

static inline bool stats_wants(const struct stats *st, enum report_id r)
{
	return st->req.reports >> r & 1;
}

#endif
