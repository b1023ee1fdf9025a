/* SPDX-License-Identifier: MIT */
/*
 * What bounds each step (bound.h), the part at a section's end: what the launching thread was
 * doing over each idle stretch of each step (its blocking calls, CUDA calls and samples, each a
 * run of its thread's items with a cursor that only moves forward), the steps themselves (NVTX
 * ranges or the launch pattern), the only-communication time, and the evidence: kernels, lines,
 * the sync's line, the peers, start-up's and the tail's parts.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bound-int.h"
#include "grow.h"
#include "idlewhy.h"
#include "steps.h"

static struct run *run_of(struct sec *c, struct tally_map *m, uint64_t key)
{
	uint32_t v = tally_map_get(m, key, 0);

	return v ? &c->runs.v[v - 1] : NULL;
}

/* A thread's samples: its Python ones where it has them (they say whether it waited). */
static struct run *samples_of(struct sec *c, uint32_t tid)
{
	struct run *r = run_of(c, &c->samp_run, (uint64_t)tid << 8 | 1);

	return r ? r : run_of(c, &c->samp_run, (uint64_t)tid << 8);
}

/* Every kept item begins with its time: [t0, t1). */
struct span_head {
	uint64_t t0, t1;
};
_Static_assert(offsetof(struct bapi, t1) == offsetof(struct span_head, t1), "bapi");
_Static_assert(offsetof(struct bsamp, t1) == offsetof(struct span_head, t1), "bsamp");
_Static_assert(offsetof(struct bosrt, t1) == offsetof(struct span_head, t1), "bosrt");

static const struct span_head *item(const void *arr, size_t elem, size_t i)
{
	return (const struct span_head *)(const void *)((const char *)arr + i * elem);
}

/*
 * The item of a run covering x (t0 <= x < t1), or -1 with *next the start of the next one.  The
 * cursor moves forward only: x never goes back within a device's pass.
 */
static long covering(const void *arr, size_t elem, struct run *r, uint64_t x, uint64_t *next)
{
	*next = UINT64_MAX;
	if (!r)
		return -1;
	while (r->cur < r->end && item(arr, elem, r->cur)->t1 <= x)
		r->cur++;
	if (r->cur < r->end && item(arr, elem, r->cur)->t0 <= x)
		return (long)r->cur;
	if (r->cur < r->end)
		*next = item(arr, elem, r->cur)->t0;
	return -1;
}
#define COVERING(vec, r, x, next) covering((vec).v, sizeof(*(vec).v), r, x, next)

void bound_runs_rewind(struct sec *c)
{
	size_t i;

	for (i = 0; i < c->runs.n; i++)
		c->runs.v[i].cur = c->runs.v[i].begin;
}

/* Time of class cls on key (a line, a kernel name ...) of thread tid (peers; else 0) into the
 * row's evidence. */
static int evidence_of(struct sec *c, unsigned cls, uint32_t tid, uint64_t key, uint64_t ns)
{
	struct bound *b = c->b;
	uint64_t k0 = (uint64_t)tid << 8 | cls;
	uint32_t v = tally_map_get(&b->acc_map, k0, key);

	if (!v) {
		if (PUSH(b->accs, ((struct acc){key, 0, cls, tid})) < 0 ||
		    tally_map_put(&b->acc_map, k0, key, (uint32_t)b->accs.n) < 0)
			return -ENOMEM;
		v = (uint32_t)b->accs.n;
	}
	b->accs.v[v - 1].ns += ns;
	return 0;
}

static int evidence(struct sec *c, unsigned cls, uint64_t key, uint64_t ns)
{
	return evidence_of(c, cls, 0, key, ns);
}

static void credit(struct sec *c, unsigned cls, uint64_t tid, uint64_t ns)
{
	size_t i, low = 0;

	for (i = 0; i < 4; i++) {
		if (c->who[cls][i].tid == tid && c->who[cls][i].ns) {
			c->who[cls][i].ns += ns;
			return;
		}
		if (c->who[cls][i].ns < c->who[cls][low].ns)
			low = i;
	}
	if (c->who[cls][low].ns < ns)
		c->who[cls][low].tid = tid, c->who[cls][low].ns = ns;
}

static int add_window(struct sec *c, uint64_t t0, uint64_t t1)
{
	struct wins *w = c->wins;

	if (w->n && w->w[w->n - 1][1] >= t0) {
		if (t1 > w->w[w->n - 1][1])
			w->w[w->n - 1][1] = t1;
		return 0;
	}
	if (!tally_grow_in((void **)&w->w, &w->cap, w->n + 1, sizeof(*w->w)))
		return -ENOMEM;
	w->w[w->n][0] = t0;
	w->w[w->n++][1] = t1;
	return 0;
}

/* The line the main thread's Python sample at x stands for (the line a native thread's work
 * was started from), or 0. */
static uint64_t main_line(struct sec *c, uint64_t x)
{
	struct run *r = run_of(c, &c->samp_run, (uint64_t)c->main_tid << 8 | 1);
	uint64_t next;
	long s = COVERING(c->b->samp, r, x, &next);

	return s < 0 ? 0 : host_line_of(&c->b->lines, c->rs, c->b->samp.v[s].stack);
}

static struct who who_of(struct sec *c, uint32_t cupti)
{
	const struct tally_thread *t = report_thread_of_cupti(c->rs, cupti);

	return (struct who){cupti, t ? t->tid : 0};
}

/* The stack of a blocking call from x to p->end: its first waiting Python sample in it (the one
 * covering x may be older than the call). */
static void inside_call(struct sec *c, const struct run *r, long s, uint64_t x, struct piece *p)
{
	size_t i;

	if (!r)
		return;
	for (i = s >= 0 ? (size_t)s : r->cur; i < r->end && c->b->samp.v[i].t0 < p->end; i++) {
		const struct bsamp *q = &c->b->samp.v[i];

		if (q->t0 >= x && q->stack && q->state != TALLY_THREAD_ON_CPU &&
		    q->source == TALLY_SAMPLE_PYTHON) {
			p->stack = q->stack;
			p->python = true;
			return;
		}
	}
}

/* Whether a sample's state is out of date at x: it was taken inside a CUDA or blocking call of
 * its thread that has ended since (a waiting sample inside .item() says nothing of the host
 * work after it). */
static bool stale(const struct bound *b, const struct run *ra, const struct run *ro,
		  const struct bsamp *s, uint64_t x)
{
	const struct bapi *a = ra && ra->cur > ra->begin ? &b->api.v[ra->cur - 1] : NULL;
	const struct bosrt *o = ro && ro->cur > ro->begin ? &b->osrt.v[ro->cur - 1] : NULL;

	return (a && a->t0 <= s->t0 && s->t0 < a->t1 && a->t1 <= x) ||
	       (o && o->t0 <= s->t0 && s->t0 < o->t1 && o->t1 <= x);
}

/*
 * What l was doing from x on, until end (at most v): in a blocking call (exact, a wait: for data
 * when the call reads a pipe or socket or its sample's stack waits on a queue), else in a CUDA
 * call (a sync, or a launch), else what its sample says (waiting, or on the CPU), else nothing
 * recorded (on the CPU: time no sample covers).  A piece on the CPU after a sync is the sync's.
 */
static void piece_of(struct sec *c, const struct who *l, uint64_t x, uint64_t v, bool after_sync,
		     struct piece *p)
{
	struct bound *b = c->b;
	struct run *ro = l->tid ? run_of(c, &c->osrt_run, l->tid) : NULL;
	struct run *ra = run_of(c, &c->api_run, l->cupti);
	struct run *rsamp = l->tid ? samples_of(c, l->tid) : NULL;
	uint64_t no, na, ns;
	long o = COVERING(b->osrt, ro, x, &no);
	long a = COVERING(b->api, ra, x, &na);
	long s = COVERING(b->samp, rsamp, x, &ns);
	bool waiting = false, data = false;

	p->stack = s >= 0 ? b->samp.v[s].stack : 0;
	p->python = s >= 0 && b->samp.v[s].source == TALLY_SAMPLE_PYTHON;
	/* the launcher's last CUDA call before x synchronized: the host works after a sync */
	after_sync |= ra && a < 0 && ra->cur > ra->begin && b->api.v[ra->cur - 1].sync &&
		      b->api.v[ra->cur - 1].t1 <= x;
	if (o >= 0) {
		p->end = bound_min(b->osrt.v[o].t1, v);
		waiting = true;
		inside_call(c, rsamp, s, x, p);
		data = wait_call_is_data(b->osrt.v[o].call) ||
		       (p->stack && wait_kind_of(&b->waits, c->rs, p->stack) == WAIT_DATA);
	} else if (a >= 0) {
		p->end = bound_min(bound_min(b->api.v[a].t1, v), no);
		p->cls = b->api.v[a].sync || after_sync ? BOUND_SYNC : BOUND_LAUNCH;
		return;
	} else if (s >= 0 && !stale(b, ra, ro, &b->samp.v[s], x)) {
		p->end = bound_min(bound_min(b->samp.v[s].t1, v), bound_min(no, na));
		waiting = b->samp.v[s].state != TALLY_THREAD_ON_CPU &&
			  b->samp.v[s].state != TALLY_THREAD_UNKNOWN;
		data = waiting && wait_kind_of(&b->waits, c->rs, p->stack) == WAIT_DATA;
	} else if (s >= 0) { /* its sample was taken in a call that has ended: on the CPU since */
		p->end = bound_min(bound_min(b->samp.v[s].t1, v), bound_min(no, na));
		p->stack = 0;
	} else {
		p->end = bound_min(bound_min(v, no), bound_min(na, ns));
	}
	if (p->end <= x) /* never stall on an item that ends where it begins */
		p->end = bound_min(x + 1, v);
	p->cls =
	    waiting ? (data ? BOUND_DATA : BOUND_WAIT) : (after_sync ? BOUND_SYNC : BOUND_LAUNCH);
}

/* An idle stretch [u, v) of a step ended by work l launched: split by what l was doing. */
static int split_host(struct sec *c, const struct who *l, uint64_t u, uint64_t v, bool after_sync,
		      struct bound_step *st)
{
	uint64_t x = u;

	while (x < v) {
		struct piece p;
		uint64_t line;

		piece_of(c, l, x, v, after_sync, &p);
		st->ns[p.cls] += p.end - x;
		credit(c, p.cls, l->tid ? l->tid : WHY_CUPTI_THREAD | l->cupti, p.end - x);
		line = p.stack && p.python ? host_line_of(&c->b->lines, c->rs, p.stack) : 0;
		if (!line && p.cls != BOUND_DATA && p.cls != BOUND_WAIT)
			line = main_line(c, x); /* a native launcher: the line it works for */
		if (line && evidence(c, p.cls, line, p.end - x) < 0)
			return -ENOMEM;
		if ((p.cls == BOUND_DATA || p.cls == BOUND_WAIT) && add_window(c, x, p.end) < 0)
			return -ENOMEM;
		x = p.end;
	}
	return 0;
}

/* When the launch call of correlation id corr began, or `otherwise`. */
static uint64_t launched_at(struct sec *c, uint32_t corr, uint64_t otherwise)
{
	struct launch_at key = {.corr = corr};
	const struct launch_at *l = corr && c->nby_corr ? bsearch(&key, c->by_corr, c->nby_corr,
								  sizeof(key), launch_by_corr)
							: NULL;

	return l ? l->t0 : otherwise;
}

/* ---- the steps ------------------------------------------------------------------------------ */

static int range_by_start(const void *a, const void *b)
{
	const struct brange *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The CUPTI thread with the most launch calls (api[] is sorted by thread). */
uint32_t bound_top_launcher(struct sec *c)
{
	size_t i, n = 0, bestn = 0;
	uint32_t best = 0;

	for (i = 0; i < c->b->api.n; i++) {
		const struct bapi *a = &c->b->api.v[i];

		n = i && a->thread == c->b->api.v[i - 1].thread ? n : 0;
		n += !a->sync;
		if (n > bestn) {
			bestn = n;
			best = a->thread;
		}
	}
	return best;
}

/* Steps from the ranges: the launching thread's where it has some, top-level ones only. */
size_t bound_steps_from_ranges(struct sec *c, const char **name)
{
	struct bound *b = c->b;
	size_t i, n = 0;
	unsigned which = 0;
	bool launcher_has = false;

	*name = NULL;
	if (!b->ranges.n)
		return 0;
	qsort(b->ranges.v, b->ranges.n, sizeof(*b->ranges.v), range_by_start);
	for (i = 0; i < b->ranges.n; i++) { /* the first name of the list that matched */
		if (!which || b->ranges.v[i].which < which)
			which = b->ranges.v[i].which;
		launcher_has |= b->ranges.v[i].thread == c->launcher;
	}
	b->spans.n = 0;
	for (i = 0; i < b->ranges.n; i++) {
		const struct brange *r = &b->ranges.v[i];

		if (r->which != which || (launcher_has && r->thread != c->launcher))
			continue;
		if (PUSH(b->spans, ((struct phase_span){r->t0, r->t1})) < 0)
			return 0;
		n++;
	}
	*name = b->user ? b->user : steps_default_names[which - 1];
	return phases_top_level(b->spans.v, n);
}

/* Steps from the repeating pattern of the device's kernels gpu[from..to). */
size_t bound_steps_from_pattern(struct sec *c, size_t from, size_t to)
{
	struct bound *b = c->b;
	size_t i, n;

	b->kernels.n = 0;
	for (i = from; i < to; i++) {
		const struct bgpu *g = &b->gpu.v[i];

		if (!g->kernel)
			continue;
		if (PUSH(b->kernels,
			 ((struct phase_kernel){launched_at(c, g->corr, g->t0), g->name})) < 0)
			return 0;
	}
	/* a step holds PHASE_PATTERN_MIN_KERNELS kernels or more */
	if (!tally_grow_in((void **)&b->spans.v, &b->spans.cap,
			   b->kernels.n / PHASE_PATTERN_MIN_KERNELS + 1, sizeof(*b->spans.v)))
		return 0;
	n = phases_from_pattern(b->kernels.v, b->kernels.n, b->spans.v, b->spans.cap,
				&c->row->pattern_name, &c->row->period);
	b->spans.n = n;
	return n;
}

/* The union of compute (and copies) and of communication of gpu[from..to), and where only
 * communication ran, into b->comm_only (pairs in time order). */
int bound_comm_only(struct sec *c, size_t from, size_t to)
{
	struct bound *b = c->b;
	uint64_t ce = 0, ms = 0, me = 0; /* compute's latest end; the open comm segment */
	bool open = false;
	size_t i;

	b->comm_only.n = 0;
	/* gpu[] is in start order: a comm segment's part past every compute end so far is comm
	 * only, unless a later compute record starts inside it; cut as they come */
	for (i = from; i <= to; i++) {
		const struct bgpu *g = i < to ? &b->gpu.v[i] : NULL;

		if (open && (!g || g->t0 >= me || !g->comm)) {
			/* close [ms, me) against compute that starts before me */
			uint64_t end = g && !g->comm && g->t0 < me ? g->t0 : me;

			if (end > ms && (PUSH(b->comm_only, ms) < 0 || PUSH(b->comm_only, end) < 0))
				return -ENOMEM;
			if (g && !g->comm && g->t0 < me) {
				ms = g->t1 > ms ? g->t1 : ms;
				open = ms < me;
			} else {
				open = false;
			}
		}
		if (!g)
			break;
		if (!g->comm) {
			ce = g->t1 > ce ? g->t1 : ce;
			continue;
		}
		if (g->t1 <= ce)
			continue;
		if (open) {
			me = g->t1 > me ? g->t1 : me;
		} else {
			ms = g->t0 > ce ? g->t0 : ce;
			me = g->t1;
			open = true;
		}
	}
	return 0;
}

static uint64_t overlap_pairs(const uint64_t *v, size_t npairs, size_t *cur, uint64_t a, uint64_t z)
{
	uint64_t sum = 0;
	size_t i;

	while (*cur < npairs && v[2 * *cur + 1] <= a)
		(*cur)++;
	for (i = *cur; i < npairs && v[2 * i] < z; i++) {
		uint64_t s = v[2 * i] > a ? v[2 * i] : a, e = v[2 * i + 1] < z ? v[2 * i + 1] : z;

		sum += e > s ? e - s : 0;
	}
	return sum;
}

/* One step of a device: its time by class, from the device's holes in it. */
int bound_classify_step(struct sec *c, struct bound_step *st, uint32_t device, uint64_t dev_t0,
			uint64_t dev_t1, size_t *hole, size_t *comm_cur)
{
	struct bound *b = c->b;
	uint64_t a = st->t0, z = st->t1, idle = 0, only;
	struct who main = who_of(c, c->launcher);
	size_t h;
	int rc;

	/* before the device's first work: idle, ended by the main launcher */
	if (a < dev_t0 && (rc = split_host(c, &main, a, bound_min(dev_t0, z), false, st)))
		return rc;
	idle += a < dev_t0 ? bound_min(dev_t0, z) - a : 0;
	while (*hole < c->nholes &&
	       (c->holes[*hole].span.device != device || c->holes[*hole].span.t1 <= a))
		(*hole)++;
	for (h = *hole;
	     h < c->nholes && c->holes[h].span.device == device && c->holes[h].span.t0 < z; h++) {
		const struct report_idle_hole *g = &c->holes[h];
		uint64_t u = g->span.t0 > a ? g->span.t0 : a, v = bound_min(g->span.t1, z);
		struct who l = g->launch_known ? who_of(c, g->launch_thread) : main;

		if (v <= u)
			continue;
		idle += v - u;
		if (g->cls == IDLE_KERNEL_WAIT)
			st->ns[BOUND_GPU] += v - u;
		else if (g->cls == IDLE_OTHER)
			st->ns[BOUND_OTHER] += v - u;
		else if ((rc = split_host(c, &l, u, v, g->after_sync, st)))
			return rc;
	}
	/* after its last work */
	if (z > dev_t1 && (rc = split_host(c, &main, dev_t1 > a ? dev_t1 : a, z, false, st)))
		return rc;
	idle += z > dev_t1 ? z - (dev_t1 > a ? dev_t1 : a) : 0;
	if (!st->warmup) /* the device's idle time in the steps, as gpu_time_breakdown counts it */
		c->row->idle_steps += idle - (a < dev_t0 ? bound_min(dev_t0, z) - a : 0) -
				      (z > dev_t1 ? z - (dev_t1 > a ? dev_t1 : a) : 0);
	only = overlap_pairs(b->comm_only.v, b->comm_only.n / 2, comm_cur, a, z);
	if (idle + only > z - a) /* never more than the step */
		only = z - a - idle;
	st->ns[BOUND_COMM] += only;
	st->ns[BOUND_GPU] += z - a - idle - only;
	return 0;
}

/* The kernels of gpu[from..to) starting in a steady step: time by name. */
int bound_kernels_in_steps(struct sec *c, size_t from, size_t to, const struct bound_step *st,
			   size_t nst)
{
	size_t i, k = 0;

	for (i = from; i < to; i++) {
		const struct bgpu *g = &c->b->gpu.v[i];

		while (k < nst && st[k].t1 <= g->t0)
			k++;
		if (k == nst)
			break;
		if (!g->kernel || g->t0 < st[k].t0 || st[k].warmup)
			continue;
		c->row->kernel_ns += g->t1 - g->t0;
		if (evidence(c, g->comm ? EV_COMM_KERNEL : EV_KERNEL, g->name, g->t1 - g->t0) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The launch calls in the steady steps: per thread (its calls in time order), beside them. */
void bound_launches_in_steps(struct sec *c, const struct bound_step *st, size_t nst)
{
	size_t i, k = 0;

	for (i = 0; i < c->b->api.n; i++) {
		const struct bapi *a = &c->b->api.v[i];

		if (i && a->thread != c->b->api.v[i - 1].thread)
			k = 0;
		while (k < nst && st[k].t1 <= a->t0)
			k++;
		c->row->launches += !a->sync && k < nst && a->t0 >= st[k].t0 && !st[k].warmup;
	}
}

/* ---- the synchronizing calls' line, the peers --------------------------------------------- */

/* The first item of run r (sorted by start) starting at or after t. */
static size_t first_at(const void *arr, size_t elem, const struct run *r, uint64_t t)
{
	size_t lo = r->begin, hi = r->end;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (item(arr, elem, mid)->t0 < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#define SYNC_LOOKBACK 64 /* calls looked back from a hole's end for the sync before it */

/* The launcher's synchronizing call that a host-wait hole followed: the latest of its calls
 * ending inside the hole (or running at its start) that synchronized; NULL if none. */
static const struct bapi *sync_before(struct sec *c, const struct run *ra,
				      const struct report_idle_hole *g)
{
	size_t i = first_at(c->b->api.v, sizeof(*c->b->api.v), ra, g->span.t1), n = 0;

	while (i-- > ra->begin && n++ < SYNC_LOOKBACK && c->b->api.v[i].t1 >= g->span.t0)
		if (c->b->api.v[i].sync)
			return &c->b->api.v[i];
	return NULL;
}

#define SYNC_COPY_NS 1000000ull /* .item(): its copy's call at most this before its sync */

/* The stack captured at a synchronizing call (--python-stacks), or at the copy launched just
 * before it on the same thread (.item() is a cudaMemcpyAsync then a cudaStreamSynchronize: the
 * copy is a launch, whose stack the collector captures); 0 when neither has one. */
static uint32_t sync_stack(struct sec *c, const struct run *ra, const struct bapi *call)
{
	const struct bapi *prev = call > c->b->api.v + ra->begin ? call - 1 : NULL;

	if (call->stack)
		return call->stack;
	return prev && prev->stack && !prev->sync && prev->t0 + SYNC_COPY_NS >= call->t0
		   ? prev->stack
		   : 0;
}

/* The launcher's samples inside each synchronizing call a host-wait hole of the steps followed:
 * the line of the sync. */
int bound_sync_lines(struct sec *c, uint32_t device, const struct bound_step *st, size_t nst)
{
	struct bound *b = c->b;
	size_t h, k = 0;

	for (h = 0; h < c->nholes; h++) {
		const struct report_idle_hole *g = &c->holes[h];
		const struct bapi *call;
		struct who l;
		struct run *ra, *rsamp;
		uint64_t t0;
		size_t i;

		if (g->span.device != device || g->cls != IDLE_HOST_WAIT || !g->launch_known)
			continue;
		while (k < nst && st[k].t1 <= g->span.t0)
			k++;
		if (k == nst || g->span.t0 < st[k].t0 || st[k].warmup)
			continue;
		l = who_of(c, g->launch_thread);
		if (!(ra = run_of(c, &c->api_run, l.cupti)) || !(call = sync_before(c, ra, g)))
			continue;
		if (sync_stack(c, ra, call)) { /* captured at the call: exact */
			uint64_t line = host_line_of(&b->lines, c->rs, sync_stack(c, ra, call));

			if (line && evidence(c, EV_SYNC_LINE, line, call->t1 - call->t0 + 1) < 0)
				return -ENOMEM;
			continue;
		}
		if (!l.tid || !(rsamp = samples_of(c, l.tid)))
			continue;
		/* .item()'s copy just before its sync is part of the same line */
		t0 = call > b->api.v + ra->begin && !call[-1].sync &&
			     call[-1].t0 + SYNC_COPY_NS >= call->t0
			 ? call[-1].t0
			 : call->t0;
		for (i = first_at(b->samp.v, sizeof(*b->samp.v), rsamp, t0);
		     i < rsamp->end && b->samp.v[i].t0 < call->t1; i++) {
			const struct bsamp *s = &b->samp.v[i];
			uint64_t line;

			if (s->source != TALLY_SAMPLE_PYTHON)
				continue;
			line = host_line_of(&b->lines, c->rs, s->stack);
			if (line && evidence(c, EV_SYNC_LINE, line, s->t1 - s->t0) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Other threads of the process on a CPU during the waits (not waiting by design). */
int bound_peers(struct sec *c)
{
	struct bound *b = c->b;
	const struct wins *w = c->wins;
	size_t i, j = 0;

	for (i = 0; i < b->samp.n && w->n; i++) {
		const struct bsamp *s = &b->samp.v[i];
		uint64_t ns = 0, line;
		size_t q;
		bool launcher = false;
		unsigned k;

		for (k = 0; k < BOUND_CLASSES; k++)
			launcher |= (c->who[k][0].tid == s->tid && c->who[k][0].ns) ||
				    (c->who[k][1].tid == s->tid && c->who[k][1].ns);
		if (launcher || s->state != TALLY_THREAD_ON_CPU || s->source != TALLY_SAMPLE_PYTHON)
			continue;
		if (i && (s->tid != b->samp.v[i - 1].tid || s->source != b->samp.v[i - 1].source))
			j = 0; /* sorted by thread, then time */
		while (j < w->n && w->w[j][1] <= s->t0)
			j++;
		for (q = j; q < w->n && w->w[q][0] < s->t1; q++) {
			uint64_t x = s->t0 > w->w[q][0] ? s->t0 : w->w[q][0];
			uint64_t y = s->t1 < w->w[q][1] ? s->t1 : w->w[q][1];

			ns += y > x ? y - x : 0;
		}
		line = ns ? host_line_of(&b->lines, c->rs, s->stack) : 0;
		if (line && evidence_of(c, EV_PEER, s->tid, line, ns) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- start-up and tail ----------------------------------------------------------------------- */

/* What a start-up sample was doing, by the patterns of its frames. */
static const struct {
	enum bound_cause cause;
	const char *func, *file; /* in a frame's label (either may be NULL) */
} cause_patterns[] = {
    {CAUSE_COMPILE, NULL, "/torch/_dynamo/"},
    {CAUSE_COMPILE, NULL, "/torch/_inductor/"},
    {CAUSE_COMPILE, NULL, "/triton/"},
    {CAUSE_WORKERS, "_MultiProcessingDataLoaderIter.__init__", NULL},
    {CAUSE_WORKERS, "Popen._launch", "/multiprocessing/"},
    {CAUSE_WORKERS, "BaseProcess.start", "/multiprocessing/"},
    {CAUSE_MODEL_TO_GPU, "Module.cuda", NULL},
    {CAUSE_MODEL_TO_GPU, "Module.to ", NULL},
    {CAUSE_MODEL_TO_GPU, "Module._apply", NULL},
    {CAUSE_CUDA_INIT, "_lazy_init", "/torch/cuda/"},
    {CAUSE_IMPORTS, NULL, "<frozen importlib._bootstrap"},
};

static enum bound_cause cause_of(struct report_section *rs, uint32_t stack)
{
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, stack);
	uint32_t i;
	size_t p;

	for (i = 0; st && i < st->nframes; i++) {
		const char *label = report_frame_label(rs, st->frames[i]);

		for (p = 0; p < sizeof(cause_patterns) / sizeof(cause_patterns[0]); p++)
			if ((!cause_patterns[p].func ||
			     strncmp(label, cause_patterns[p].func,
				     strlen(cause_patterns[p].func)) == 0) &&
			    (!cause_patterns[p].file || strstr(label, cause_patterns[p].file)))
				return cause_patterns[p].cause;
	}
	return CAUSE_OTHER;
}

/* The main thread's Python samples in [t0, t1), less the warm-up steps, by cause. */
int bound_phase_causes(struct sec *c, uint64_t t0, uint64_t t1, uint64_t warm_t0, uint64_t *cause,
		       unsigned ev)
{
	struct run *r = run_of(c, &c->samp_run, (uint64_t)c->main_tid << 8 | 1);
	size_t i;

	for (i = r ? r->begin : 0; r && i < r->end; i++) {
		const struct bsamp *s = &c->b->samp.v[i];
		enum bound_cause k;
		uint64_t a = s->t0, z = s->t1 < t1 ? s->t1 : t1;

		if (a < t0 || a >= t1 || a >= warm_t0 || !s->stack)
			continue;
		z = z < warm_t0 ? z : warm_t0;
		k = cause_of(c->rs, s->stack);
		cause[k] += z - a;
		if (k == CAUSE_OTHER &&
		    evidence(c, ev, host_line_of(&c->b->lines, c->rs, s->stack), z - a) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- the evidence into the row ----------------------------------------------------------------
 */

static int by_acc(const void *a, const void *b)
{
	const struct acc *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

void bound_top_evidence(struct sec *c)
{
	struct bound *b = c->b;
	struct bound_row *r = c->row;
	size_t i, k = 0;

	if (b->accs.n > 1)
		qsort(b->accs.v, b->accs.n, sizeof(*b->accs.v), by_acc);
	for (i = 0; i < b->accs.n; i++) {
		const struct acc *a = &b->accs.v[i];

		k = i && a->cls == b->accs.v[i - 1].cls ? k + 1 : 0;
		if (a->cls < BOUND_CLASSES)
			r->lines_ns[a->cls] += a->ns;
		if (k >= BOUND_TOP && a->cls != EV_STARTUP_LINE && a->cls != EV_TAIL_LINE)
			continue;
		if (a->cls < BOUND_CLASSES)
			r->lines[a->cls][k] = (struct bound_line){a->key, a->ns};
		else if (a->cls == EV_KERNEL)
			r->kernels[k] = (struct bound_kernel){(uint32_t)a->key, a->ns};
		else if (a->cls == EV_COMM_KERNEL)
			r->comm[k] = (struct bound_kernel){(uint32_t)a->key, a->ns};
		else if (a->cls == EV_SYNC_LINE)
			r->sync_line = k ? r->sync_line : (struct bound_line){a->key, a->ns};
		else if (a->cls == EV_PEER)
			r->peers[k] = (struct bound_peer){a->tid, a->key, a->ns};
		else if (a->cls == EV_STARTUP_LINE && !k)
			r->startup_line = (struct bound_line){a->key, a->ns};
		else if (a->cls == EV_TAIL_LINE && !k)
			r->tail_line = (struct bound_line){a->key, a->ns};
	}
	for (i = 0; i < BOUND_CLASSES; i++) { /* the thread behind most of each class */
		size_t best = 0, q;

		for (q = 1; q < 4; q++)
			if (c->who[i][q].ns > c->who[i][best].ns)
				best = q;
		r->thread[i] = c->who[i][best].tid;
	}
}
