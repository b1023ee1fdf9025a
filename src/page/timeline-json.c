/* SPDX-License-Identifier: MIT */
/*
 * The timeline as the page reads it (docs/report.md, "The data in the page"): sections and their
 * rank figures, names, lanes with sparse buckets, exact events of the chosen windows, the ledger
 * snapshots, loss windows and idle stretches.  Times are ns relative to the timeline's t0.
 */
#include <stdlib.h>
#include <string.h>

#include "breakdown.h"
#include "depth.h"
#include "gaps.h"
#include "json.h"
#include "memusage.h"
#include "spread.h"
#include "stats.h"
#include "summary.h"
#include "timeline.h"

static const char *const lane_type_names[TL_LANE_TYPES] = {
    [TL_LANE_GPU] = "gpu",	 [TL_LANE_API] = "api",		[TL_LANE_NVTX] = "nvtx",
    [TL_LANE_DEVICE] = "device", [TL_LANE_SAMPLES] = "samples", [TL_LANE_OSRT] = "osrt",
};

/* ns from the page's origin; a time more than 2^63 ns away (a crafted trace) is shown at the
 * farthest a signed number goes, never wrapped to the other side. */
static int64_t rel(const struct timeline *tl, uint64_t aligned)
{
	if (aligned >= tl->t0)
		return aligned - tl->t0 > INT64_MAX ? INT64_MAX : (int64_t)(aligned - tl->t0);
	return tl->t0 - aligned > INT64_MAX ? -INT64_MAX : -(int64_t)(tl->t0 - aligned);
}

/* A process's figures, summed over its devices from gpu_time_breakdown (stats' own rows). */
struct rank_figures {
	uint64_t busy, idle, idle_unproven, compute, comm, comm_exposed, copy_exposed, devices;
	uint64_t loss;
	const char *top_kernel;	 /* kern_rank_spread's name (demangled as the page asks) */
	const char *top_summary; /* a summary's: the name as recorded */
	uint64_t top_ns;
};

/* The first breakdown row of section sec: rows come section by section (each section's are made
 * when it ends), so a binary search finds them, and thousands of ranks cost no more each. */
static size_t first_row(const struct bd_row *bd, size_t n, unsigned sec)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (bd[mid].section < sec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A summary's figures: GPU busy time from its facts (idle stretches under 1 us counted in), the
 * rest of its span idle, its NCCL kernels' time as communication. */
static void summary_figures(const struct tl_section *ts, const struct tally_summary_facts *x,
			    struct rank_figures *f)
{
	uint64_t span =
	    ts->t_min != UINT64_MAX && ts->t_max > ts->t_min ? ts->t_max - ts->t_min : 0;

	f->busy = x->gpu_busy_ns;
	f->idle = span > f->busy ? span - f->busy : 0;
	f->comm = x->nccl_ns < f->busy ? x->nccl_ns : f->busy;
	f->compute = f->busy - f->comm;
	f->devices = x->gpu_busy_ns ? 1 : 0;
	if (x->top_kernel) {
		f->top_summary = x->top_kernel;
		f->top_ns = x->top_kernel_ns;
	}
}

/* The process's kernel with the most GPU time among kern_rank_spread's top kernels: the model's
 * own rows (the first, the higher-ranked kernel, on a tie), not a count of the page's own. */
static void top_kernel(const struct report_section *rs, const struct stats *st,
		       struct rank_figures *f)
{
	size_t i, n;
	const struct spread_row *r = stats_spread(st, &n);

	for (i = 0; r && i < n; i++)
		if (r[i].section == rs->index && r[i].total > f->top_ns) {
			f->top_ns = r[i].total;
			f->top_kernel = r[i].name;
		}
}

static void rank_figures(const struct timeline *tl, const struct report_section *rs,
			 const struct stats *st, struct rank_figures *f)
{
	const struct tl_section *ts = &tl->secs[rs->index];
	size_t i, n;
	const struct bd_row *bd = stats_breakdown(st, &n);

	memset(f, 0, sizeof(*f));
	for (i = first_row(bd, n, rs->index); i < n && bd[i].section == rs->index; i++) {
		f->busy += bd[i].busy;
		f->idle += bd[i].idle;
		f->idle_unproven += bd[i].idle_unproven;
		f->compute += bd[i].compute;
		f->comm += bd[i].comm;
		f->comm_exposed += bd[i].comm_exposed;
		f->copy_exposed += bd[i].copy_exposed;
		f->devices++;
	}
	top_kernel(rs, st, f);
	if (rs->s->summary && rs->s->facts)
		summary_figures(ts, rs->s->facts, f);
	for (i = 0; i < rs->verdict.nreasons; i++)
		if (rs->verdict.reasons[i].code == TALLY_R_LOSS)
			f->loss += rs->verdict.reasons[i].count;
}

static void write_devices(struct tally_json *j, const struct tally_section *s)
{
	size_t i;

	tally_json_name(j, "devices");
	tally_json_array_begin(j);
	for (i = 0; i < s->ndevices; i++) {
		tally_json_object_begin(j);
		tally_json_field_uint(j, "id", s->devices[i].id);
		tally_json_field_string(j, "name", s->devices[i].name ? s->devices[i].name : "");
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

static void write_section(const struct timeline *tl, struct report_section *rs,
			  const struct stats *st, struct tally_json *j)
{
	const struct tl_section *ts = &tl->secs[rs->index];
	struct rank_figures f;
	char label[300], *demangled = NULL;

	rank_figures(tl, rs, st, &f);
	if (f.top_summary)
		demangled = report_demangle(f.top_summary);
	tally_json_object_begin(j);
	tally_json_field_string(j, "label", report_section_label(rs, label, sizeof(label)));
	tally_json_field_string(j, "path", rs->in->path);
	tally_json_field_uint(j, "pid", rs->s->pid);
	tally_json_field_string(j, "host", rs->s->host ? rs->s->host : "");
	tally_json_field_string(j, "rank", rs->s->rank ? rs->s->rank : "");
	tally_json_field_string(j, "verdict", rs->verdict.complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_field_int(j, "t_min", ts->t_min == UINT64_MAX ? 0 : rel(tl, ts->t_min));
	tally_json_field_int(j, "t_max", ts->t_min == UINT64_MAX ? 0 : rel(tl, ts->t_max));
	tally_json_field_uint(j, "gpu_busy_ns", f.busy);
	tally_json_field_uint(j, "gpu_idle_ns", f.idle);
	tally_json_field_uint(j, "gpu_idle_unproven_ns", f.idle_unproven);
	tally_json_field_uint(j, "compute_ns", f.compute);
	tally_json_field_uint(j, "comm_ns", f.comm);
	tally_json_field_uint(j, "comm_exposed_ns", f.comm_exposed);
	tally_json_field_uint(j, "copy_exposed_ns", f.copy_exposed);
	tally_json_field_uint(j, "loss", f.loss);
	tally_json_field_string(j, "top_kernel",
				!f.top_ns	? ""
				: f.top_summary ? (demangled ? demangled : f.top_summary)
						: f.top_kernel);
	tally_json_field_uint(j, "top_kernel_ns", f.top_ns);
	tally_json_field_bool(j, "summary", rs->s->summary);
	write_devices(j, rs->s);
	tally_json_object_end(j);
	free(demangled);
}

/* The four arrays of a lane's buckets: index delta, busy ns, events, name of the longest. */
static const char *const bucket_keys[] = {"i", "busy", "n", "top"};

static uint64_t bucket_field(const struct tl_lane *l, unsigned field, unsigned b, unsigned prev)
{
	switch (field) {
	case 0:
		return b - prev;
	case 1:
		return l->busy[b];
	case 2:
		return l->count[b];
	default:
		return l->top[b];
	}
}

/* Nonzero buckets only, indexes as deltas: dense traces cost a few numbers per bucket. */
static void write_buckets(const struct timeline *tl, const struct tl_lane *l, struct tally_json *j)
{
	unsigned k, b, prev;

	for (k = 0; k < 4; k++) {
		tally_json_name(j, bucket_keys[k]);
		tally_json_array_begin(j);
		for (b = 0, prev = 0; b < tl->nbuckets; b++) {
			if (!l->busy[b] && !l->count[b])
				continue;
			tally_json_uint(j, bucket_field(l, k, b, prev));
			prev = b;
		}
		tally_json_array_end(j);
	}
}

static void write_lanes(const struct timeline *tl, struct tally_json *j)
{
	size_t i;

	tally_json_name(j, "lanes");
	tally_json_array_begin(j);
	for (i = 0; i < tl->nlanes; i++) {
		const struct tl_lane *l = &tl->lanes[i];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "sec", l->sec);
		tally_json_field_string(j, "type", lane_type_names[l->type]);
		tally_json_field_uint(
		    j, l->type == TL_LANE_GPU || l->type == TL_LANE_DEVICE ? "device" : "tid",
		    l->a);
		if (l->type == TL_LANE_GPU)
			tally_json_field_uint(j, "stream", l->b);
		tally_json_field_uint(j, "events", l->events);
		tally_json_field_uint(j, "busy_ns", l->busy_ns);
		write_buckets(tl, l, j);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

static void write_events(const struct timeline *tl, struct tally_json *j)
{
	char *mask = malloc(tl->nwindows + 1);
	size_t i;

	tally_json_name(j, "exact_windows");
	if (mask) {
		for (i = 0; i < tl->nwindows; i++)
			mask[i] = timeline_window_exact(tl, (uint32_t)i) ? '1' : '0';
		mask[tl->nwindows] = '\0';
		tally_json_string(j, mask);
		free(mask);
	} else {
		tally_json_string(j, "");
	}
	/* flat: lane, start, duration, name, correlation id; five numbers an event */
	tally_json_name(j, "events");
	tally_json_array_begin(j);
	for (i = 0; i < tl->nevents; i++) {
		const struct tl_event *e = &tl->events[i];

		if (!timeline_window_exact(tl, e->window))
			continue;
		tally_json_uint(j, e->lane);
		tally_json_uint(j, e->start);
		tally_json_uint(j, e->dur);
		tally_json_uint(j, e->name);
		tally_json_uint(j, e->corr);
	}
	tally_json_array_end(j);
}

/* Counters the ledger chart draws, by the name the page knows them by, in the order of
 * tl_snap_counter_ids[] (timeline.c). */
static const char *const snap_keys[TL_SNAP_COUNTERS] = {
    "parsed",	  "dropped", "bad_time", "pool_hw",  "pool_cap",
    "write_fail", "bytes",   "refused",	 "queue_hw",
};

static void write_snap(const struct timeline *tl, struct report_section *rs,
		       const struct tl_snap *l, struct tally_json *j)
{
	size_t k;

	tally_json_object_begin(j);
	tally_json_field_int(j, "t", rel(tl, report_time(rs, l->t_end)));
	tally_json_field_uint(j, "slice", l->slice);
	tally_json_field_bool(j, "final", l->final);
	for (k = 0; k < TL_SNAP_COUNTERS; k++)
		tally_json_field_uint(j, snap_keys[k], l->v[k]);
	tally_json_field_uint(j, "loss", l->loss);
	tally_json_object_end(j);
}

static void write_flush(const struct tally_ledger *l, struct tally_json *j)
{
	tally_json_name(j, "flush");
	tally_json_object_begin(j);
	tally_json_field_string(j, "path",
				tally_flush_path_name((unsigned)l->v[TALLY_C_FLUSH_PATH]));
	tally_json_field_uint(j, "ns",
			      l->v[TALLY_C_FLUSH_END] > l->v[TALLY_C_FLUSH_START]
				  ? l->v[TALLY_C_FLUSH_END] - l->v[TALLY_C_FLUSH_START]
				  : 0);
	tally_json_field_bool(j, "completed", l->v[TALLY_C_FLUSH_COMPLETED] != 0);
	tally_json_field_uint(j, "records", l->v[TALLY_C_FLUSH_RECORDS]);
	tally_json_field_uint(j, "signal", l->v[TALLY_C_SIGNAL]);
	tally_json_field_bool(j, "watchdog", l->v[TALLY_C_WATCHDOG_FIRED] != 0);
	tally_json_object_end(j);
}

static void write_ledgers(const struct timeline *tl, const struct report_set *set,
			  struct tally_json *j)
{
	size_t i, k;

	tally_json_name(j, "ledgers");
	tally_json_array_begin(j);
	for (i = 0; i < tl->nsecs && i < set->nsections; i++) {
		const struct tl_section *ts = &tl->secs[i];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "sec", i);
		tally_json_name(j, "snaps");
		tally_json_array_begin(j);
		for (k = 0; k < ts->nsnaps; k++)
			write_snap(tl, set->sections[i], &ts->snaps[k], j);
		/* the latest is always drawn, kept among the others or not */
		if (ts->last && (ts->snaps_seen - 1) % ts->snap_stride) {
			struct tl_snap last;

			timeline_snap_of(ts->last, &last);
			write_snap(tl, set->sections[i], &last, j);
		}
		tally_json_array_end(j);
		if (ts->last && ts->last->final)
			write_flush(ts->last, j);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

static void write_loss(const struct timeline *tl, const struct report_set *set,
		       struct tally_json *j)
{
	size_t i, k;

	tally_json_name(j, "loss_windows");
	tally_json_array_begin(j);
	for (i = 0; i < set->nsections; i++) {
		const struct report_section *rs = set->sections[i];

		for (k = 0; k < rs->s->nwindows; k++) {
			const struct tally_window *w = &rs->s->windows[k];
			const struct tally_counter_info *ci = tally_counter_info(w->counter);

			tally_json_object_begin(j);
			tally_json_field_uint(j, "sec", i);
			tally_json_field_string(j, "counter", ci ? ci->name : "?");
			tally_json_field_int(j, "begin", rel(tl, report_time(rs, w->t_begin)));
			tally_json_field_int(j, "end", rel(tl, report_time(rs, w->t_end)));
			tally_json_field_uint(j, "count", w->count);
			tally_json_object_end(j);
		}
	}
	tally_json_array_end(j);
}

/* [lane, start, end, unproven, why, class]: gpu_gaps' gaps on the page's lanes */
static void write_gaps(const struct timeline *tl, const struct stats *st, struct tally_json *j)
{
	struct tl_gap *gaps = NULL;
	size_t n = 0, i;

	(void)timeline_gaps(tl, st, &gaps, &n); /* none on failure: the page says no gaps */
	tally_json_name(j, "gaps");
	tally_json_array_begin(j);
	for (i = 0; i < n; i++) {
		tally_json_array_begin(j);
		tally_json_uint(j, gaps[i].lane);
		tally_json_uint(j, gaps[i].start);
		tally_json_uint(j, gaps[i].end);
		tally_json_uint(j, gaps[i].unproven);
		tally_json_string(j, gaps[i].why);
		tally_json_string(j, report_gap_class_name((enum gap_class)gaps[i].cls));
		tally_json_array_end(j);
	}
	tally_json_array_end(j);
	free(gaps);
}

static void write_names(const struct timeline *tl, struct tally_json *j)
{
	size_t i;

	/* index 0 is "no name": names are referred to as index + 1 */
	tally_json_name(j, "names");
	tally_json_array_begin(j);
	tally_json_string(j, "");
	for (i = 0; i < tl->nnames; i++)
		tally_json_string(j, tl->names[i]);
	tally_json_array_end(j);
}

/* Host threads by the id their lanes carry (their CUPTI id where THREADS ties it): names. */
static void write_threads(const struct report_set *set, struct tally_json *j)
{
	size_t i, k;

	tally_json_name(j, "threads");
	tally_json_array_begin(j);
	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;

		for (k = 0; k < s->nthreads; k++) {
			const struct tally_thread *t = &s->threads[k];

			if (tally_section_thread(s, t->tid) != t)
				continue; /* the latest entry of each thread */
			tally_json_object_begin(j);
			tally_json_field_uint(j, "sec", i);
			tally_json_field_uint(j, "id",
					      t->pthread_id ? (uint32_t)t->pthread_id : t->tid);
			tally_json_field_uint(j, "tid", t->tid);
			tally_json_field_string(j, "name", t->name);
			tally_json_field_bool(j, "main", (t->flags & TALLY_THREADF_MAIN) != 0);
			tally_json_object_end(j);
		}
	}
	tally_json_array_end(j);
}

/*
 * Launches outstanding per stream: each series' buckets, from gpu_queue_depth's analysis, for the
 * streams that have a row of their own on the page (the lane budget bounds them, however many
 * streams the traces have); a series starts at its first bucket with anything in it.
 */
static void write_queues(const struct timeline *tl, const struct stats *st, struct tally_json *j)
{
	size_t n, i;
	const struct qseries *q = stats_queues(st, &n);
	uint32_t b;

	tally_json_name(j, "queues");
	tally_json_array_begin(j);
	for (i = 0; i < n; i++) {
		if (timeline_find_lane(tl, q[i].section, TL_LANE_GPU, q[i].device, q[i].stream) < 0)
			continue;
		tally_json_object_begin(j);
		tally_json_field_uint(j, "sec", q[i].section);
		tally_json_field_uint(j, "device", q[i].device);
		tally_json_field_uint(j, "stream", q[i].stream);
		tally_json_field_int(j, "t0",
				     rel(tl, q[i].origin + (uint64_t)q[i].lo * q[i].width));
		tally_json_field_uint(j, "width", q[i].width);
		tally_json_field_double(j, "peak", q[i].peak);
		tally_json_field_double(j, "mean", q[i].avg);
		tally_json_name(j, "depth");
		tally_json_array_begin(j);
		for (b = q[i].lo; b < q[i].n; b++) /* three decimals are plenty for a curve */
			tally_json_milli(j, (int64_t)(q[i].mean[b - q[i].lo] * 1000.0 + 0.5));
		tally_json_array_end(j);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

#define MEM_POINTS 2000 /* per series at most: more events keep each step's highest */

/* The events of each row, grouped by row in time order: begin[r] .. begin[r + 1] of order[].  A
 * counting sort, so that thousands of ranks' rows cost their events, not rows x events.  false
 * on ENOMEM. */
static bool events_by_row(const struct mem_usage *m, size_t **begin, size_t **order)
{
	size_t i, *pos;

	*begin = calloc(m->nrows + 2, sizeof(**begin));
	*order = malloc((m->n ? m->n : 1) * sizeof(**order));
	pos = malloc((m->n ? m->n : 1) * sizeof(*pos));
	if (!*begin || !*order || !pos) {
		free(pos);
		return false;
	}
	for (i = 0; i < m->n; i++) { /* each event's row: the one mem_usage made for it */
		uint32_t r = tally_map_get(&m->row_map, tally_key32(m->ev[i].sec, m->ev[i].device),
					   m->ev[i].kind);

		pos[i] = r ? r - 1 : m->nrows;
		(*begin)[pos[i] + 2]++;
	}
	for (i = 2; i < m->nrows + 2; i++)
		(*begin)[i] += (*begin)[i - 1];
	for (i = 0; i < m->n; i++)
		if (pos[i] < m->nrows)
			(*order)[(*begin)[pos[i] + 1]++] = i;
	free(pos);
	return true;
}

static void point(struct tally_json *j, uint64_t t, uint64_t bytes)
{
	tally_json_array_begin(j);
	tally_json_uint(j, t);
	tally_json_uint(j, bytes);
	tally_json_array_end(j);
}

/* One row's [t, bytes] points; past MEM_POINTS, each step's highest stands for it. */
static void row_points(const struct timeline *tl, const struct mem_usage *m, const size_t *idx,
		       size_t count, struct tally_json *j)
{
	uint64_t step = (tl->t1 - tl->t0) / MEM_POINTS + 1, cur = UINT64_MAX, hi = 0, at = 0;
	size_t i;

	for (i = 0; i < count; i++) {
		const struct mem_event *e = &m->ev[idx[i]];
		uint64_t t = e->t > tl->t0 ? e->t - tl->t0 : 0, b = t / step;

		if (count > MEM_POINTS && b == cur) {
			hi = e->in_use > hi ? e->in_use : hi;
			continue;
		}
		if (cur != UINT64_MAX && count > MEM_POINTS)
			point(j, at, hi);
		cur = b;
		at = t;
		hi = e->in_use;
		if (count <= MEM_POINTS)
			point(j, t, e->in_use);
	}
	if (cur != UINT64_MAX && count > MEM_POINTS)
		point(j, at, hi);
}

/* CUDA memory in use per (process, device, kind) over time, from cuda_gpu_mem_usage's events:
 * [t, bytes] pairs, each the value from t on. */
static void write_memory(const struct timeline *tl, const struct stats *st, struct tally_json *j)
{
	const struct mem_usage *m = stats_mem_usage(st);
	size_t r, nr = m ? m->nrows : 0, *begin = NULL, *order = NULL;

	tally_json_name(j, "memory");
	tally_json_array_begin(j);
	if (nr && !events_by_row(m, &begin, &order))
		nr = 0; /* out of memory: no curves, the reports still say it all */
	for (r = 0; r < nr; r++) {
		const struct mem_usage_row *row = &m->rows[r];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "sec", row->sec);
		tally_json_field_uint(j, "device", row->device);
		tally_json_field_string(j, "kind", report_mem_kind_label(row->kind));
		tally_json_field_uint(j, "peak", row->peak);
		tally_json_name(j, "points");
		tally_json_array_begin(j);
		row_points(tl, m, order + (r ? begin[r] : 0), begin[r + 1] - (r ? begin[r] : 0), j);
		tally_json_array_end(j);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	free(begin);
	free(order);
}

void timeline_write_json(struct timeline *tl, const struct report_set *set, const struct stats *st,
			 struct tally_json *j)
{
	size_t i;

	tally_json_object_begin(j);
	/* t0_ns is tally stats' time_base_ns: every time of the page counts from it */
	tally_json_field_uint(j, "t0_ns", tl->t0);
	tally_json_field_uint(j, "span_ns", tl->t1 - tl->t0);
	tally_json_field_uint(j, "first_ns", tl->first - tl->t0);
	tally_json_field_uint(j, "buckets", tl->nbuckets);
	tally_json_field_double(j, "bucket_ns", tl->bucket_ns);
	tally_json_field_uint(j, "window_buckets", tl->nbuckets / tl->nwindows);
	tally_json_field_uint(j, "summaries", tl->summaries);
	tally_json_name(j, "sections");
	tally_json_array_begin(j);
	for (i = 0; i < set->nsections && i < tl->nsecs; i++)
		write_section(tl, set->sections[i], st, j);
	tally_json_array_end(j);
	write_names(tl, j);
	write_lanes(tl, j);
	write_events(tl, j);
	write_ledgers(tl, set, j);
	write_loss(tl, set, j);
	write_gaps(tl, st, j);
	write_threads(set, j);
	write_queues(tl, st, j);
	write_memory(tl, st, j);
	timeline_metrics_json(tl, j);
	tally_json_object_end(j);
	tally_json_finish(j);
}
