/* SPDX-License-Identifier: MIT */
/* What bounds each step (bound.h): the records a section keeps, its rows and phases, and after the
 * pass the other processes during the waits; bound-step.c splits each step by class. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound-int.h"
#include "breakdown.h"
#include "grow.h"
#include "hashmap.h"
#include "idlewhy.h"
#include "steps.h"
#include "waits.h"

static const char *const class_names[BOUND_CLASSES] = {"gpu",  "comm", "data", "launch",
						       "sync", "wait", "other"};

const char *bound_class_name(enum bound_class c)
{
	return c < BOUND_CLASSES ? class_names[c] : "?";
}

static const char *const cause_names[BOUND_CAUSES] = {
    "imports",	     "CUDA initialization", "the model to the GPU", "worker start", "compilation",
    "warm-up steps", "other work"};

const char *bound_cause_name(enum bound_cause c)
{
	return c < BOUND_CAUSES ? cause_names[c] : "?";
}

struct bound *bound_new(const char *range)
{
	struct bound *b = calloc(1, sizeof(*b));

	if (b)
		b->user = range && *range ? range : NULL;
	return b;
}

static void clear_row_scratch(struct bound *b)
{
	tally_map_fini(&b->acc_map);
	memset(&b->acc_map, 0, sizeof(b->acc_map));
	b->accs.n = 0;
}

void bound_free(struct bound *b)
{
	size_t i;

	if (!b)
		return;
	free(b->gpu.v);
	free(b->api.v);
	free(b->samp.v);
	free(b->osrt.v);
	free(b->ranges.v);
	free(b->comm_name);
	free(b->range_name);
	free(b->sync_name);
	free(b->rows.v);
	free(b->steps.v);
	tally_map_fini(&b->acc_map);
	free(b->accs.v);
	free(b->spans.v);
	free(b->kernels.v);
	free(b->comm_only.v);
	wait_cache_fini(&b->waits);
	line_cache_fini(&b->lines);
	for (i = 0; i < b->nwins; i++)
		free(b->wins[i].w);
	free(b->wins);
	free(b);
}

/* A name looked up once per section and string id: a table of bytes, 0 not yet looked at. */
static uint8_t *name_slot(uint8_t **tab, size_t *cap, uint32_t id)
{
	if (!tally_grow_in((void **)tab, cap, (size_t)id + 1, 1))
		return NULL;
	return &(*tab)[id];
}

static int add_gpu(struct bound *b, struct report_section *rs, const struct tally_record *r)
{
	struct bgpu g = {.t0 = report_time(rs, r->start),
			 .t1 = report_time(rs, r->end),
			 .device = r->device_id,
			 .corr = r->correlation_id,
			 .kernel = r->kind == TALLY_KIND_KERNEL};

	if (g.kernel) {
		uint8_t *c = r->name_id < rs->s->nstrings
				 ? name_slot(&b->comm_name, &b->comm_name_cap, r->name_id)
				 : NULL;

		g.name = r->name_id;
		if (c && !*c)
			*c = breakdown_kernel_is_comm(report_string(rs, r->name_id)) ? 2 : 1;
		g.comm = c ? *c == 2 : breakdown_kernel_is_comm(report_string(rs, r->name_id));
	}
	return PUSH(b->gpu, g);
}

/* Whether an API call's name synchronizes (idle.h), looked up once per string id. */
static bool sync_name(struct bound *b, struct report_section *rs, uint32_t id)
{
	uint8_t *slot =
	    id < rs->s->nstrings ? name_slot(&b->sync_name, &b->sync_name_cap, id) : NULL;

	if (slot && !*slot)
		*slot = idle_is_sync_call(report_string(rs, id)) ? 2 : 1;
	return slot ? *slot == 2 : idle_is_sync_call(report_string(rs, id));
}

static int add_api(struct bound *b, struct report_section *rs, const struct tally_record *r)
{
	bool sync = sync_name(b, rs, r->name_id); /* a blocking copy is a launch and a sync */

	if (!(r->flags & TALLY_REC_LAUNCH) && !sync)
		return 0;
	return PUSH(b->api, ((struct bapi){report_time(rs, r->start), report_time(rs, r->end),
					   r->thread_id, r->correlation_id, r->stack_id, sync}));
}

/* 0: the range is no step; else 1 + which name (the user's, or steps.h's defaults in order). */
static unsigned range_which(struct bound *b, struct report_section *rs, uint32_t id)
{
	uint8_t *slot =
	    id < rs->s->nstrings ? name_slot(&b->range_name, &b->range_name_cap, id) : NULL;
	const char *msg;
	unsigned k, which = 0;

	if (slot && *slot)
		return *slot - 1u;
	msg = report_string(rs, id);
	if (b->user)
		which = steps_name_matches(msg, b->user) ? 1 : 0;
	for (k = 0; !b->user && k < steps_default_count && !which; k++)
		if (steps_name_matches(msg, steps_default_names[k]))
			which = k + 1;
	if (slot)
		*slot = (uint8_t)(which + 1);
	return which;
}

static int add_one(struct bound *b, struct report_section *rs, const struct tally_record *r)
{
	unsigned which;

	if (tally_kind_is_gpu(r->kind))
		return add_gpu(b, rs, r);
	if (tally_kind_is_api(r->kind))
		return add_api(b, rs, r);
	switch (r->kind) {
	case TALLY_KIND_CPU_SAMPLE:
		return PUSH(b->samp, ((struct bsamp){report_time(rs, r->start), 0, r->thread_id,
						     (r->flags & TALLY_REC_TORN) ? 0 : r->stack_id,
						     (uint8_t)(r->subkind == TALLY_SAMPLE_PYTHON
								   ? r->value
								   : TALLY_THREAD_ON_CPU),
						     (uint8_t)r->subkind}));
	case TALLY_KIND_OSRT:
		return PUSH(b->osrt,
			    ((struct bosrt){report_time(rs, r->start), report_time(rs, r->end),
					    r->thread_id, r->cbid}));
	case TALLY_KIND_NVTX_RANGE:
		if ((r->flags & TALLY_REC_DEPTH_LOST) || r->end <= r->start ||
		    !(which = range_which(b, rs, r->name_id)))
			return 0;
		return PUSH(b->ranges,
			    ((struct brange){report_time(rs, r->start), report_time(rs, r->end),
					     r->thread_id, (uint8_t)which}));
	default:
		return 0;
	}
}

int bound_add(struct bound *b, struct report_section *rs, const struct tally_record *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(r[i].flags & TALLY_REC_BAD_TIME) && r[i].end >= r[i].start &&
		    add_one(b, rs, &r[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* ---- sorting -------------------------------------------------------------------------------- */

/* Records mostly come in order: a linear look first, and the sort only when it is needed. */
static void sort_unless_sorted(void *v, size_t n, size_t size,
			       int (*cmp)(const void *, const void *))
{
	const char *p = v;
	size_t i;

	for (i = 1; i < n; i++)
		if (cmp(p + (i - 1) * size, p + i * size) > 0) {
			qsort(v, n, size, cmp);
			return;
		}
}

static int gpu_by_device(const void *a, const void *b)
{
	const struct bgpu *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int api_by_thread(const void *a, const void *b)
{
	const struct bapi *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int samp_by_thread(const void *a, const void *b)
{
	const struct bsamp *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->source != y->source) /* Python first: its state says waiting or not */
		return x->source == TALLY_SAMPLE_PYTHON ? -1 : y->source == TALLY_SAMPLE_PYTHON;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int osrt_by_thread(const void *a, const void *b)
{
	const struct bosrt *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Runs of equal keys of an array sorted by them; key(i) gives element i's. */
static int make_runs(struct sec *c, struct tally_map *m, size_t n,
		     uint64_t (*key)(struct sec *, size_t))
{
	size_t i = 0, j;

	while (i < n) {
		uint64_t k = key(c, i);

		for (j = i; j < n && key(c, j) == k; j++)
			;
		if (PUSH(c->runs, ((struct run){i, j, i})) < 0 ||
		    tally_map_put(m, k, 0, (uint32_t)c->runs.n) < 0)
			return -ENOMEM;
		i = j;
	}
	return 0;
}

static uint64_t samp_key(struct sec *c, size_t i)
{
	return (uint64_t)c->b->samp.v[i].tid << 8 | (c->b->samp.v[i].source == TALLY_SAMPLE_PYTHON);
}

static uint64_t osrt_key(struct sec *c, size_t i)
{
	return c->b->osrt.v[i].tid;
}

static uint64_t api_key(struct sec *c, size_t i)
{
	return c->b->api.v[i].thread;
}

/* Each sample stands for its thread's time to its next sample, a period at most. */
static void sample_covers(struct sec *c)
{
	struct bsamp *s = c->b->samp.v;
	size_t i, n = c->b->samp.n;

	for (i = 0; i < n; i++) {
		uint64_t end = s[i].t0 + c->period;

		if (i + 1 < n && s[i + 1].tid == s[i].tid && s[i + 1].source == s[i].source &&
		    s[i + 1].t0 < end)
			end = s[i + 1].t0;
		s[i].t1 = end;
	}
}

/* ---- a device of a section: its row -----------------------------------------------------------
 */

static int steps_of_row(struct sec *c, size_t from, size_t to, const char **range)
{
	struct bound *b = c->b;
	size_t n = bound_steps_from_ranges(c, range), i;

	if (!n && !*range) /* no range: the pattern of the launches */
		n = bound_steps_from_pattern(c, from, to);
	else if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (PUSH(b->steps, ((struct bound_step){.row = (unsigned)c->row_index,
							.index = i,
							.t0 = b->spans.v[i].t0,
							.t1 = b->spans.v[i].t1})) < 0)
			return -ENOMEM;
	return (int)n;
}

static uint64_t run_start(const struct report_section *rs)
{
	uint64_t t = rs->s->t_min ? report_time(rs, rs->s->t_min) : UINT64_MAX;
	uint64_t s = rs->s->start_cupti ? report_time(rs, rs->s->start_cupti) : UINT64_MAX;

	return s < t ? s : t;
}

static int phases(struct sec *c, struct bound_step *st, size_t n)
{
	struct bound_row *r = c->row;
	uint64_t end = report_time(c->rs, c->rs->s->t_max);
	size_t i;

	r->run_t0 = run_start(c->rs);
	r->run_t1 = end > st[n - 1].t1 ? end : st[n - 1].t1;
	r->run_t0 = r->run_t0 < st[0].t0 ? r->run_t0 : st[0].t0;
	r->startup_t0 = r->run_t0;
	r->startup_t1 = st[r->warmup].t0;
	for (i = 0; i < r->warmup; i++)
		r->warmup_ns += st[i].t1 - st[i].t0;
	r->startup_cause[CAUSE_WARMUP] = r->warmup_ns;
	r->tail_t0 = st[n - 1].t1;
	r->tail_t1 = r->run_t1;
	if (bound_phase_causes(c, r->startup_t0, r->startup_t1,
			       r->warmup ? st[0].t0 : r->startup_t1, r->startup_cause,
			       EV_STARTUP_LINE) < 0 ||
	    bound_phase_causes(c, r->tail_t0, r->tail_t1, r->tail_t1, r->tail_cause, EV_TAIL_LINE) <
		0)
		return -ENOMEM;
	return 0;
}

/* The device's holes in start-up and in the tail. */
static void phase_idle(struct sec *c, uint32_t device)
{
	struct bound_row *r = c->row;
	size_t h;

	for (h = 0; h < c->nholes; h++) {
		const struct report_idle_span *g = &c->holes[h].span;
		uint64_t a, z;

		if (g->device != device)
			continue;
		a = g->t0 > r->startup_t0 ? g->t0 : r->startup_t0;
		z = bound_min(g->t1, r->startup_t1);
		r->idle_startup += z > a ? z - a : 0;
		a = g->t0 > r->tail_t0 ? g->t0 : r->tail_t0;
		z = bound_min(g->t1, r->tail_t1);
		r->idle_tail += z > a ? z - a : 0;
	}
}

static int by_span_t0(const void *a, const void *b)
{
	const struct report_idle_hole *x = a, *y = b;

	if (x->span.device != y->span.device)
		return x->span.device < y->span.device ? -1 : 1;
	return x->span.t0 < y->span.t0 ? -1 : x->span.t0 > y->span.t0;
}

/* gpu[from..to) is one device's work: its row, when it has steady steps. */
static int device_row(struct sec *c, size_t from, size_t to)
{
	struct bound *b = c->b;
	struct bound_row row = {.section = c->rs->index, .device = b->gpu.v[from].device};
	uint64_t dev_t0 = b->gpu.v[from].t0, dev_t1 = 0;
	size_t first = b->steps.n, nst, i, hole = 0, ccur = 0;
	const char *range;
	int n, rc;

	for (i = from; i < to; i++)
		dev_t1 = b->gpu.v[i].t1 > dev_t1 ? b->gpu.v[i].t1 : dev_t1;
	c->row = &row;
	c->row_index = b->rows.n;
	memset(c->who, 0, sizeof(c->who));
	clear_row_scratch(b);
	if ((n = steps_of_row(c, from, to, &range)) < 0)
		return n;
	nst = (size_t)n;
	row.range = range;
	row.first_step = first;
	row.warmup = phases_warmup(b->spans.v, nst, &row.median_step);
	if (nst - row.warmup < PHASE_STEPS_MIN ||
	    (!range && row.median_step < PHASE_PATTERN_MIN_STEP_NS)) {
		b->steps.n = first;
		return 0;
	}
	row.nsteps = nst - row.warmup;
	if (!tally_grow_in((void **)&b->wins, &b->wins_cap, b->nwins + 1, sizeof(*b->wins)))
		return -ENOMEM;
	c->wins = &b->wins[b->nwins];
	memset(c->wins, 0, sizeof(*c->wins));
	b->nwins++;
	if ((rc = bound_comm_only(c, from, to)) < 0)
		return rc;
	bound_runs_rewind(c);
	for (i = 0; i < nst; i++) {
		struct bound_step *st = &b->steps.v[first + i];
		unsigned k;

		st->warmup = i < row.warmup;
		if ((rc = bound_classify_step(c, st, row.device, dev_t0, dev_t1, &hole, &ccur)) < 0)
			return rc;
		for (k = 0; k < BOUND_CLASSES && !st->warmup; k++)
			row.ns[k] += st->ns[k];
		row.step_ns += st->warmup ? 0 : st->t1 - st->t0;
	}
	if ((rc = bound_kernels_in_steps(c, from, to, b->steps.v + first, nst)) < 0 ||
	    (rc = bound_sync_lines(c, row.device, b->steps.v + first, nst)) < 0 ||
	    (rc = bound_peers(c)) < 0)
		return rc;
	bound_launches_in_steps(c, b->steps.v + first, nst);
	bound_runs_rewind(c);
	if ((rc = phases(c, b->steps.v + first, nst)) < 0)
		return rc;
	phase_idle(c, row.device);
	row.host_samples = b->samp.n > 0;
	for (i = 0; i < BOUND_CLASSES; i++)
		row.wait_ns += i == BOUND_DATA || i == BOUND_WAIT ? row.ns[i] : 0;
	bound_top_evidence(c);
	if (!row.launches && !row.kernel_ns) { /* "steps" with no work: no training step */
		free(c->wins->w);
		b->nwins--;
		b->steps.n = first;
		return 0;
	}
	return PUSH(b->rows, row);
}

static uint32_t main_tid(const struct report_section *rs)
{
	size_t i;

	for (i = 0; i < rs->s->nthreads; i++)
		if (rs->s->threads[i].flags & TALLY_THREADF_MAIN)
			return rs->s->threads[i].tid;
	return (uint32_t)rs->s->pid;
}

static void sec_fini(struct sec *c)
{
	tally_map_fini(&c->samp_run);
	tally_map_fini(&c->osrt_run);
	tally_map_fini(&c->api_run);
	free(c->runs.v);
	free(c->by_corr);
}

static int section_rows(struct sec *c)
{
	struct bound *b = c->b;
	size_t i, j;
	int rc = 0;

	sort_unless_sorted(b->gpu.v, b->gpu.n, sizeof(*b->gpu.v), gpu_by_device);
	sort_unless_sorted(b->api.v, b->api.n, sizeof(*b->api.v), api_by_thread);
	sort_unless_sorted(b->samp.v, b->samp.n, sizeof(*b->samp.v), samp_by_thread);
	sort_unless_sorted(b->osrt.v, b->osrt.n, sizeof(*b->osrt.v), osrt_by_thread);
	sample_covers(c);
	if (make_runs(c, &c->samp_run, b->samp.n, samp_key) < 0 ||
	    make_runs(c, &c->osrt_run, b->osrt.n, osrt_key) < 0 ||
	    make_runs(c, &c->api_run, b->api.n, api_key) < 0)
		return -ENOMEM;
	if (b->api.n && !(c->by_corr = malloc(b->api.n * sizeof(*c->by_corr))))
		return -ENOMEM;
	for (i = 0; i < b->api.n; i++)
		if (b->api.v[i].corr)
			c->by_corr[c->nby_corr++] =
			    (struct launch_at){b->api.v[i].t0, b->api.v[i].corr};
	sort_unless_sorted(c->by_corr, c->nby_corr, sizeof(*c->by_corr), launch_by_corr);
	c->launcher = bound_top_launcher(c);
	for (i = 0; i < b->gpu.n && rc == 0; i = j) {
		for (j = i; j < b->gpu.n && b->gpu.v[j].device == b->gpu.v[i].device; j++)
			;
		rc = device_row(c, i, j);
	}
	return rc;
}

static bool holes_sorted(const struct report_idle_hole *h, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (by_span_t0(&h[i - 1], &h[i]) > 0)
			return false;
	return true;
}

int bound_section_end(struct bound *b, struct report_section *rs, const struct report_idle *idle)
{
	struct sec c = {.b = b, .rs = rs};
	struct report_idle_hole *holes = NULL;
	const struct report_idle_hole *h = report_idle_holes(idle, &c.nholes);
	int rc = 0;

	c.holes = h;
	if (b->gpu.n && !holes_sorted(h, c.nholes)) { /* by device and time, a copy if need be */
		if (!(holes = malloc(c.nholes * sizeof(*holes))))
			rc = -ENOMEM;
		else
			memcpy(holes, h, c.nholes * sizeof(*holes));
		if (holes)
			qsort(holes, c.nholes, sizeof(*holes), by_span_t0);
		c.holes = holes;
	}
	c.period = idle_why_period(rs);
	c.main_tid = main_tid(rs);
	if (rc == 0 && b->gpu.n)
		rc = section_rows(&c);
	sec_fini(&c);
	free(holes);
	clear_row_scratch(b);
	b->gpu.n = b->api.n = b->samp.n = b->osrt.n = b->ranges.n = 0;
	if (b->comm_name)
		memset(b->comm_name, 0, b->comm_name_cap);
	if (b->range_name)
		memset(b->range_name, 0, b->range_name_cap);
	if (b->sync_name)
		memset(b->sync_name, 0, b->sync_name_cap);
	return rc;
}

/* ---- after the pass: the other processes during the waits ---------------------------------- */

static int by_busy(const void *a, const void *b)
{
	const struct bound_proc *x = a, *y = b;

	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns ? -1 : 1;
	return x->section < y->section ? -1 : x->section > y->section;
}

struct line_use {
	uint64_t line, ns;
	bool on_cpu;
};

static int by_line(const void *a, const void *b)
{
	const struct line_use *x = a, *y = b;

	if (x->on_cpu != y->on_cpu)
		return x->on_cpu ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* A process's uses u[0..n) (one section): its busy time (on a CPU, or waiting in its own code:
 * not by design) and its top line.  -ENOMEM, else 0. */
static int proc_of(struct bound *b, const struct report_set *set, const struct proc_use *u,
		   size_t n, struct bound_proc *p)
{
	struct report_section *rs = set->sections[u[0].section];
	struct line_use *l = malloc(n * sizeof(*l));
	size_t i, k = 0, j;

	if (!l)
		return -ENOMEM;
	*p = (struct bound_proc){.section = u[0].section};
	for (i = 0; i < n; i++) {
		bool on_cpu = u[i].state == TALLY_THREAD_ON_CPU;

		if (!u[i].stack ||
		    (!on_cpu && wait_kind_of(&b->waits, rs, u[i].stack) == WAIT_BY_DESIGN))
			continue;
		p->busy_ns += u[i].ns;
		l[k++] =
		    (struct line_use){host_line_of(&b->lines, rs, u[i].stack), u[i].ns, on_cpu};
	}
	if (k > 1)
		qsort(l, k, sizeof(*l), by_line);
	for (i = 0; i < k; i = j) {
		uint64_t ns = 0;

		for (j = i; j < k && l[j].line == l[i].line && l[j].on_cpu == l[i].on_cpu; j++)
			ns += l[j].ns;
		if (l[i].line && ns > p->line_ns) {
			p->line = l[i].line;
			p->line_ns = ns;
			p->on_cpu = l[i].on_cpu;
		}
	}
	free(l);
	return 0;
}

static int row_procs(struct bound *b, const struct report_set *set, const struct jobprocs *jp,
		     struct bound_row *r, const struct wins *w)
{
	struct proc_use *u;
	struct bound_proc best[BOUND_TOP + 1];
	size_t n, i, j, nb = 0;
	int rc;

	r->children = jobprocs_children(jp, set, r->section);
	if (!w->n || !r->children)
		return 0;
	if ((rc = jobprocs_during(jp, set, r->section, (const uint64_t(*)[2])w->w, w->n, false, &u,
				  &n)))
		return rc;
	memset(best, 0, sizeof(best));
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && u[j].section == u[i].section; j++)
			;
		if ((rc = proc_of(b, set, u + i, j - i, &best[nb < BOUND_TOP ? nb : BOUND_TOP])))
			break;
		nb += nb < BOUND_TOP;
		qsort(best, nb + (nb == BOUND_TOP), sizeof(*best), by_busy);
	}
	memcpy(r->procs, best, sizeof(r->procs));
	free(u);
	return rc;
}

int bound_finish(struct bound *b, const struct report_set *set, const struct jobprocs *jp)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < b->rows.n && i < b->nwins && rc == 0; i++)
		rc = row_procs(b, set, jp, &b->rows.v[i], &b->wins[i]);
	for (i = 0; i < b->nwins; i++)
		free(b->wins[i].w);
	free(b->wins);
	b->wins = NULL;
	b->nwins = b->wins_cap = 0;
	return rc;
}

const struct bound_row *bound_rows(const struct bound *b, size_t *n)
{
	*n = b->rows.n;
	return b->rows.v;
}

const struct bound_step *bound_steps(const struct bound *b, size_t *n)
{
	*n = b->steps.n;
	return b->steps.v;
}

enum bound_class bound_verdict(const struct bound_row *r)
{
	enum bound_class best = BOUND_GPU;
	unsigned k;

	for (k = 1; k < BOUND_CLASSES; k++)
		if (r->ns[k] > r->ns[best])
			best = (enum bound_class)k;
	return best;
}
