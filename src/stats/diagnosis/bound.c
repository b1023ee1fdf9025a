/* SPDX-License-Identifier: MIT */
/* What bounds each step; see bound.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
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

/* ---- what a section keeps ------------------------------------------------------------------ */

struct bgpu {
	uint64_t t0, t1;
	uint32_t device, name, corr;
	uint8_t comm, kernel;
};

struct bapi { /* a launch or a synchronizing call */
	uint64_t t0, t1;
	uint32_t thread, corr; /* CUPTI's thread id */
	uint32_t stack;	       /* the stack captured at the call (--python-stacks), 0 none */
	uint8_t sync;
};

struct bsamp {
	uint64_t t0, t1; /* t1: the end of the time it stands for */
	uint32_t tid, stack;
	uint8_t state, source;
};

struct bosrt {
	uint64_t t0, t1;
	uint32_t tid, call;
};

struct brange {
	uint64_t t0, t1;
	uint32_t thread;
	uint8_t which; /* 1 + the name matched (0: the user's --range) */
};

#define VEC(T)                                                                                     \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n, cap;                                                                     \
	}

/* A thread's items in one of the sorted arrays, and a cursor that only moves forward. */
struct run {
	size_t begin, end, cur;
};

struct acc { /* evidence: time by (class, thread, key) */
	uint64_t key, ns;
	uint32_t cls, tid;
};

struct bound {
	const char *user; /* --range */
	VEC(struct bgpu) gpu;
	VEC(struct bapi) api;
	VEC(struct bsamp) samp;
	VEC(struct bosrt) osrt;
	VEC(struct brange) ranges;
	uint8_t *comm_name; /* by string id: 0 unknown, 1 compute, 2 communication */
	size_t comm_name_cap;
	uint8_t *range_name; /* by string id: 0 unknown, 1 no match, 2 + which name */
	size_t range_name_cap;
	uint8_t *sync_name; /* by string id: 0 unknown, 1 not synchronizing, 2 synchronizing */
	size_t sync_name_cap;
	VEC(struct bound_row) rows;
	VEC(struct bound_step) steps;
	/* per row, while it is made */
	struct tally_map acc_map; /* (class, key) -> acc index + 1 */
	VEC(struct acc) accs;
	VEC(struct phase_span) spans;
	VEC(struct phase_kernel) kernels;
	VEC(uint64_t) comm_only; /* pairs */
	struct wait_cache waits;
	struct line_cache lines;
	/* per row: its waits (pairs, merged), for the other processes after the pass */
	struct wins {
		uint64_t (*w)[2];
		size_t n, cap;
	} * wins;
	size_t nwins, wins_cap;
};

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

#define PUSH(vec, item)                                                                            \
	(tally_grow_in((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v))               \
	     ? ((vec).v[(vec).n++] = (item), 0)                                                    \
	     : -ENOMEM)

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

static int range_by_start(const void *a, const void *b)
{
	const struct brange *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* A launch call's correlation id and start: the pattern's marks are launches. */
struct launch_at {
	uint64_t t0;
	uint32_t corr;
};

static int launch_by_corr(const void *a, const void *b)
{
	const struct launch_at *x = a, *y = b;

	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* ---- one section ------------------------------------------------------------------------------
 */

/* What the section's end works with. */
struct sec {
	struct bound *b;
	struct report_section *rs;
	const struct report_idle_hole *holes;
	size_t nholes;
	uint64_t period;
	uint32_t main_tid; /* the process's main thread (its pid, or THREADS' main) */
	uint32_t launcher; /* CUPTI id of the thread with the most launches */
	/* per thread, the runs of the arrays sorted by thread */
	struct tally_map samp_run, osrt_run, api_run; /* key -> run index + 1 */
	VEC(struct run) runs;
	struct launch_at *by_corr; /* the launch calls by correlation id */
	size_t nby_corr;
	/* the row being made */
	struct bound_row *row;
	size_t row_index;
	struct wins *wins;
	struct {
		uint64_t tid, ns;
	} who[BOUND_CLASSES][4];
};

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

static void runs_rewind(struct sec *c)
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

/* Evidence keys beyond the classes: kernels, the sync line, peers, start-up and tail lines. */
enum {
	EV_KERNEL = BOUND_CLASSES,
	EV_COMM_KERNEL,
	EV_SYNC_LINE,
	EV_PEER,
	EV_STARTUP_LINE,
	EV_TAIL_LINE,
};

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

/* The launching thread of a hole: its tid (0 when THREADS does not tie its CUPTI id). */
struct who {
	uint32_t cupti, tid;
};

static struct who who_of(struct sec *c, uint32_t cupti)
{
	const struct tally_thread *t = report_thread_of_cupti(c->rs, cupti);

	return (struct who){cupti, t ? t->tid : 0};
}

/* One piece [x, end) of a hole: its class and its line, from the launcher's state. */
struct piece {
	uint64_t end;
	enum bound_class cls;
	uint32_t stack;
	bool python; /* the stack is a Python sample's */
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
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
		p->end = min_u64(b->osrt.v[o].t1, v);
		waiting = true;
		inside_call(c, rsamp, s, x, p);
		data = wait_call_is_data(b->osrt.v[o].call) ||
		       (p->stack && wait_kind_of(&b->waits, c->rs, p->stack) == WAIT_DATA);
	} else if (a >= 0) {
		p->end = min_u64(min_u64(b->api.v[a].t1, v), no);
		p->cls = b->api.v[a].sync || after_sync ? BOUND_SYNC : BOUND_LAUNCH;
		return;
	} else if (s >= 0 && !stale(b, ra, ro, &b->samp.v[s], x)) {
		p->end = min_u64(min_u64(b->samp.v[s].t1, v), min_u64(no, na));
		waiting = b->samp.v[s].state != TALLY_THREAD_ON_CPU &&
			  b->samp.v[s].state != TALLY_THREAD_UNKNOWN;
		data = waiting && wait_kind_of(&b->waits, c->rs, p->stack) == WAIT_DATA;
	} else if (s >= 0) { /* its sample was taken in a call that has ended: on the CPU since */
		p->end = min_u64(min_u64(b->samp.v[s].t1, v), min_u64(no, na));
		p->stack = 0;
	} else {
		p->end = min_u64(min_u64(v, no), min_u64(na, ns));
	}
	if (p->end <= x) /* never stall on an item that ends where it begins */
		p->end = min_u64(x + 1, v);
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

/* The CUPTI thread with the most launch calls (api[] is sorted by thread). */
static uint32_t top_launcher(struct sec *c)
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
static size_t steps_from_ranges(struct sec *c, const char **name)
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
static size_t steps_from_pattern(struct sec *c, size_t from, size_t to)
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
static int comm_only(struct sec *c, size_t from, size_t to)
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
static int classify_step(struct sec *c, struct bound_step *st, uint32_t device, uint64_t dev_t0,
			 uint64_t dev_t1, size_t *hole, size_t *comm_cur)
{
	struct bound *b = c->b;
	uint64_t a = st->t0, z = st->t1, idle = 0, only;
	struct who main = who_of(c, c->launcher);
	size_t h;
	int rc;

	/* before the device's first work: idle, ended by the main launcher */
	if (a < dev_t0 && (rc = split_host(c, &main, a, min_u64(dev_t0, z), false, st)))
		return rc;
	idle += a < dev_t0 ? min_u64(dev_t0, z) - a : 0;
	while (*hole < c->nholes &&
	       (c->holes[*hole].span.device != device || c->holes[*hole].span.t1 <= a))
		(*hole)++;
	for (h = *hole;
	     h < c->nholes && c->holes[h].span.device == device && c->holes[h].span.t0 < z; h++) {
		const struct report_idle_hole *g = &c->holes[h];
		uint64_t u = g->span.t0 > a ? g->span.t0 : a, v = min_u64(g->span.t1, z);
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
		c->row->idle_steps += idle - (a < dev_t0 ? min_u64(dev_t0, z) - a : 0) -
				      (z > dev_t1 ? z - (dev_t1 > a ? dev_t1 : a) : 0);
	only = overlap_pairs(b->comm_only.v, b->comm_only.n / 2, comm_cur, a, z);
	if (idle + only > z - a) /* never more than the step */
		only = z - a - idle;
	st->ns[BOUND_COMM] += only;
	st->ns[BOUND_GPU] += z - a - idle - only;
	return 0;
}

/* The kernels of gpu[from..to) starting in a steady step: time by name. */
static int kernels_in_steps(struct sec *c, size_t from, size_t to, const struct bound_step *st,
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
static void launches_in_steps(struct sec *c, const struct bound_step *st, size_t nst)
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
static int sync_lines(struct sec *c, uint32_t device, const struct bound_step *st, size_t nst)
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
static int peers(struct sec *c)
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
static int phase_causes(struct sec *c, uint64_t t0, uint64_t t1, uint64_t warm_t0, uint64_t *cause,
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

static void top_evidence(struct sec *c)
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

/* ---- a device of a section: its row -----------------------------------------------------------
 */

static int steps_of_row(struct sec *c, size_t from, size_t to, const char **range)
{
	struct bound *b = c->b;
	size_t n = steps_from_ranges(c, range), i;

	if (!n && !*range) /* no range: the pattern of the launches */
		n = steps_from_pattern(c, from, to);
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
	if (phase_causes(c, r->startup_t0, r->startup_t1, r->warmup ? st[0].t0 : r->startup_t1,
			 r->startup_cause, EV_STARTUP_LINE) < 0 ||
	    phase_causes(c, r->tail_t0, r->tail_t1, r->tail_t1, r->tail_cause, EV_TAIL_LINE) < 0)
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
		z = min_u64(g->t1, r->startup_t1);
		r->idle_startup += z > a ? z - a : 0;
		a = g->t0 > r->tail_t0 ? g->t0 : r->tail_t0;
		z = min_u64(g->t1, r->tail_t1);
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
	if ((rc = comm_only(c, from, to)) < 0)
		return rc;
	runs_rewind(c);
	for (i = 0; i < nst; i++) {
		struct bound_step *st = &b->steps.v[first + i];
		unsigned k;

		st->warmup = i < row.warmup;
		if ((rc = classify_step(c, st, row.device, dev_t0, dev_t1, &hole, &ccur)) < 0)
			return rc;
		for (k = 0; k < BOUND_CLASSES && !st->warmup; k++)
			row.ns[k] += st->ns[k];
		row.step_ns += st->warmup ? 0 : st->t1 - st->t0;
	}
	if ((rc = kernels_in_steps(c, from, to, b->steps.v + first, nst)) < 0 ||
	    (rc = sync_lines(c, row.device, b->steps.v + first, nst)) < 0 || (rc = peers(c)) < 0)
		return rc;
	launches_in_steps(c, b->steps.v + first, nst);
	runs_rewind(c);
	if ((rc = phases(c, b->steps.v + first, nst)) < 0)
		return rc;
	phase_idle(c, row.device);
	row.host_samples = b->samp.n > 0;
	for (i = 0; i < BOUND_CLASSES; i++)
		row.wait_ns += i == BOUND_DATA || i == BOUND_WAIT ? row.ns[i] : 0;
	top_evidence(c);
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
	c->launcher = top_launcher(c);
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
