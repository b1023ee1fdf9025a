/* SPDX-License-Identifier: MIT */
/* The host behind each idle hole; see idlewhy.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "idlewhy.h"

#define TOP_STACKS	   5  /* per thread and kind of sample, in each listed hole */
#define TOP_THREADS	   16 /* per listed hole; the others in one "more threads" row */
#define TOP_LARGEST_STACKS 3  /* per device, in gpu_idle_breakdown */
/* The overlaps of host events with holes looked at per section: OVERLAPS_PER_EVENT for each of
 * its events, and OVERLAPS_MIN.  A call that spans many holes counts in each; past the budget the
 * later holes of the section are listed unexamined (and say so), so that a few threads blocked
 * for a whole run over thousands of holes cannot make the report quadratic. */
#define OVERLAPS_PER_EVENT 64
#define OVERLAPS_MIN	   (1u << 20)

/* A host event of the section being read: an API call, a blocking call or a sample. */
struct hitem {
	uint64_t t0, t1; /* aligned; a sample's t1 is its t0 */
	uint32_t thread; /* CUPTI's id (API calls) or the kernel tid */
	uint32_t id;	 /* name string id / CBID / stack id */
	uint8_t source;	 /* samples: TALLY_SAMPLE_* */
	uint8_t state;	 /* samples: thread state */
	uint8_t torn;	 /* samples: no stack */
};

struct hvec {
	struct hitem *v;
	size_t n, cap;
	uint64_t *tree; /* sorted: the latest end under each node of a tree over v (leaves at
			   [leaves, leaves + n)), an instant's end one past its start */
	size_t leaves;
};

/* One observation inside a hole, before aggregation. */
struct obs {
	uint64_t order; /* thread order: the main thread first, then by tid, CUPTI ids last */
	uint64_t thread;
	uint8_t what, state;
	uint32_t id;
	uint64_t ns;
};

struct idle_why {
	const struct report_idle *idle;
	bool want_rows;	  /* gpu_idle_why's rows are wanted (else only the breakdown's stacks) */
	size_t gaps_done; /* listed holes already explained */
	struct hvec api, osrt, samp;
	struct why_row *rows;
	size_t nrows, rows_cap;
	struct why_stack *stacks;
	size_t nstacks, stacks_cap;
	struct obs *obs;
	size_t nobs, obs_cap;
	bool has_host;
	/* the section being explained */
	uint64_t period; /* a sample stands for this much of its thread's time */
	const struct tally_thread **threads; /* sorted by tid */
	size_t nthreads;
	struct tally_map by_pthread; /* (uint32_t)pthread_id -> threads index + 1 */
	uint32_t pid;
	int64_t budget; /* overlaps still to look at in this section */
};

struct idle_why *idle_why_new(const struct report_idle *idle, bool rows)
{
	struct idle_why *w = calloc(1, sizeof(*w));

	if (w) {
		w->idle = idle;
		w->want_rows = rows;
	}
	return w;
}

void idle_why_free(struct idle_why *w)
{
	if (!w)
		return;
	free(w->api.v);
	free(w->osrt.v);
	free(w->samp.v);
	free(w->api.tree);
	free(w->osrt.tree);
	free(w->samp.tree);
	tally_map_fini(&w->by_pthread);
	free(w->rows);
	free(w->stacks);
	free(w->obs);
	free(w->threads);
	free(w);
}

static int push(struct hvec *h, const struct hitem *it)
{
	if (!tally_grow_in((void **)&h->v, &h->cap, h->n + 1, sizeof(*h->v)))
		return -ENOMEM;
	h->v[h->n++] = *it;
	return 0;
}

int idle_why_add(struct idle_why *w, const struct report_section *rs, const struct tally_record *r,
		 size_t n)
{
	struct hvec *h;
	size_t i;

	if (!n)
		return 0;
	if (tally_kind_is_api(r[0].kind))
		h = &w->api;
	else if (r[0].kind == TALLY_KIND_OSRT)
		h = &w->osrt;
	else if (r[0].kind == TALLY_KIND_CPU_SAMPLE)
		h = &w->samp;
	else
		return 0;
	w->has_host |= h != &w->api;
	if (!w->want_rows && h != &w->samp)
		return 0; /* the breakdown's stacks need samples only */
	for (i = 0; i < n; i++) {
		struct hitem it = {.t0 = report_time(rs, r[i].start),
				   .thread = r[i].thread_id,
				   .source = (uint8_t)r[i].subkind,
				   .state = (uint8_t)r[i].value};

		if ((r[i].flags & TALLY_REC_BAD_TIME) || r[i].kind != r[0].kind)
			continue;
		it.t1 = r[i].end > r[i].start ? report_time(rs, r[i].end) : it.t0;
		it.id = h == &w->api ? r[i].name_id : h == &w->osrt ? r[i].cbid : r[i].stack_id;
		it.torn = (r[i].flags & TALLY_REC_TORN) != 0;
		if (push(h, &it) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- finding what overlaps a hole ------------------------------------------------------------ */

static int by_start(const void *a, const void *b)
{
	const struct hitem *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int hvec_sort(struct hvec *h)
{
	size_t i, leaves = 1;

	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), by_start);
	while (leaves < h->n)
		leaves *= 2;
	free(h->tree);
	h->leaves = leaves;
	if (!(h->tree = calloc(2 * leaves, sizeof(*h->tree))))
		return -ENOMEM;
	for (i = 0; i < h->n; i++)
		h->tree[leaves + i] = h->v[i].t1 > h->v[i].t0 ? h->v[i].t1 : h->v[i].t0 + 1;
	for (i = leaves; i-- > 1;)
		h->tree[i] =
		    h->tree[2 * i] > h->tree[2 * i + 1] ? h->tree[2 * i] : h->tree[2 * i + 1];
	return 0;
}

/* The first item starting at or after t. */
static size_t first_from(const struct hvec *h, uint64_t t)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->v[mid].t0 < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

typedef int (*overlap_fn)(struct idle_why *w, const struct hitem *it, uint64_t ns);

struct query {
	const struct hvec *h;
	size_t before; /* items [0, before) start before the hole's end */
	uint64_t t0, t1;
	overlap_fn fn;
};

/* The items under node (covering [lo, hi)) that overlap the hole: down the subtrees whose latest
 * end passes its start.  1 when the budget ran out. */
static int visit(struct idle_why *w, const struct query *q, size_t node, size_t lo, size_t hi)
{
	const struct hitem *it;
	int rc;

	if (lo >= q->before || q->h->tree[node] <= q->t0)
		return 0;
	if (hi - lo > 1)
		return (rc = visit(w, q, 2 * node, lo, (lo + hi) / 2)) != 0
			   ? rc
			   : visit(w, q, 2 * node + 1, (lo + hi) / 2, hi);
	if (--w->budget < 0)
		return 1;
	it = &q->h->v[lo];
	return q->fn(w, it, (it->t1 < q->t1 ? it->t1 : q->t1) - (it->t0 > q->t0 ? it->t0 : q->t0));
}

/* Every item overlapping [t0, t1), or starting inside it (an instant): O(log n) and the
 * overlaps.  1 when the section's budget ran out, -ENOMEM. */
static int each_overlap(struct idle_why *w, const struct hvec *h, uint64_t t0, uint64_t t1,
			overlap_fn fn)
{
	struct query q = {h, first_from(h, t1), t0, t1, fn};

	return h->n ? visit(w, &q, 1, 0, h->leaves) : 0;
}

/* ---- threads ----------------------------------------------------------------------------------
 */

static const struct tally_thread *thread_by_tid(const struct idle_why *w, uint32_t tid)
{
	size_t lo = 0, hi = w->nthreads;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->threads[mid]->tid == tid)
			return w->threads[mid];
		if (w->threads[mid]->tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* An API call's thread (CUPTI's id: pthread_self cut to 32 bits) as a kernel tid, if known. */
static uint64_t api_thread(const struct idle_why *w, uint32_t cupti)
{
	uint32_t k = tally_map_get(&w->by_pthread, cupti, 0);

	return k ? w->threads[k - 1]->tid : WHY_CUPTI_THREAD | cupti;
}

/* The threads by their CUPTI id: the first in tid order with a pthread id of those low bits. */
static int index_threads(struct idle_why *w)
{
	size_t i;

	tally_map_fini(&w->by_pthread);
	for (i = 0; i < w->nthreads; i++) {
		uint32_t id = (uint32_t)w->threads[i]->pthread_id;

		if (w->threads[i]->pthread_id && !tally_map_get(&w->by_pthread, id, 0) &&
		    tally_map_put(&w->by_pthread, id, 0, (uint32_t)i + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

static uint64_t thread_order(const struct idle_why *w, uint64_t thread)
{
	const struct tally_thread *t =
	    thread & WHY_CUPTI_THREAD ? NULL : thread_by_tid(w, (uint32_t)thread);
	bool main = thread == w->pid || (t && (t->flags & TALLY_THREADF_MAIN));

	return (main ? 0 : 1ull << 40) | thread;
}

static int add_obs(struct idle_why *w, uint64_t thread, uint8_t what, uint8_t state, uint32_t id,
		   uint64_t ns)
{
	if (!tally_grow_in((void **)&w->obs, &w->obs_cap, w->nobs + 1, sizeof(*w->obs)))
		return -ENOMEM;
	w->obs[w->nobs++] = (struct obs){thread_order(w, thread), thread, what, state, id, ns};
	return 0;
}

static int api_obs(struct idle_why *w, const struct hitem *it, uint64_t ns)
{
	return add_obs(w, api_thread(w, it->thread), WHY_CUDA, 0, it->id, ns);
}

static int osrt_obs(struct idle_why *w, const struct hitem *it, uint64_t ns)
{
	return add_obs(w, it->thread, WHY_OSRT, 0, it->id, ns);
}

static int sample_obs(struct idle_why *w, const struct hitem *it, uint64_t ns)
{
	bool python = it->source == TALLY_SAMPLE_PYTHON;

	(void)ns;
	return add_obs(w, it->thread, python ? WHY_PYTHON : WHY_NATIVE, python ? it->state : 0,
		       it->torn ? 0 : it->id, w->period);
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int by_obs(const void *a, const void *b)
{
	const struct obs *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->state < y->state ? -1 : x->state > y->state;
}

static int by_row_weight(const void *a, const void *b)
{
	const struct why_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->state < y->state ? -1 : x->state > y->state;
}

static struct why_row *new_row(struct idle_why *w)
{
	if (!tally_grow_in((void **)&w->rows, &w->rows_cap, w->nrows + 1, sizeof(*w->rows)))
		return NULL;
	memset(&w->rows[w->nrows], 0, sizeof(*w->rows));
	return &w->rows[w->nrows++];
}

/* Stack rows from..nrows of one thread and kind: the heaviest first, past TOP_STACKS summed. */
static void trim_stacks(struct idle_why *w, size_t from)
{
	struct why_row more;
	size_t i;

	if (w->nrows - from > 1)
		qsort(w->rows + from, w->nrows - from, sizeof(*w->rows), by_row_weight);
	if (w->nrows - from <= TOP_STACKS + 1)
		return;
	more = w->rows[from + TOP_STACKS];
	more.what = WHY_MORE_STACKS;
	more.source = w->rows[from].what;
	more.id = 0;
	more.count = more.ns = 0;
	for (i = from + TOP_STACKS; i < w->nrows; i++) {
		more.count += w->rows[i].count;
		more.ns += w->rows[i].ns;
	}
	w->rows[from + TOP_STACKS] = more;
	w->nrows = from + TOP_STACKS + 1;
}

static bool is_stack_row(uint8_t what)
{
	return what == WHY_PYTHON || what == WHY_NATIVE;
}

/* The observations from i on (the threads past TOP_THREADS) as one row: how many threads. */
static int more_threads(struct idle_why *w, uint32_t gap, size_t i)
{
	struct why_row *row = new_row(w);

	if (!row)
		return -ENOMEM;
	row->gap = gap;
	row->what = WHY_MORE_THREADS;
	for (; i < w->nobs; i++) {
		row->thread += !row->count || w->obs[i].thread != w->obs[i - 1].thread;
		row->count++;
		row->ns += w->obs[i].ns;
	}
	return 0;
}

/* w->obs of hole g into rows, one per (thread, kind, name or stack, state), for the first
 * TOP_THREADS threads; the others' in one row. */
static int obs_rows(struct idle_why *w, uint32_t gap)
{
	size_t i = 0, group = 0, threads = 0;

	if (w->nobs > 1)
		qsort(w->obs, w->nobs, sizeof(*w->obs), by_obs);
	while (i < w->nobs) {
		const struct obs *o = &w->obs[i];
		struct why_row *row;
		size_t j;

		if (i == 0 || o->thread != w->obs[i - 1].thread) {
			if (threads++ == TOP_THREADS) {
				if (is_stack_row(w->obs[i - 1].what))
					trim_stacks(w, group);
				return more_threads(w, gap, i);
			}
		}
		if (i == 0 || o->thread != w->obs[i - 1].thread || o->what != w->obs[i - 1].what) {
			if (i && is_stack_row(w->obs[i - 1].what))
				trim_stacks(w, group);
			group = w->nrows;
		}
		if (!(row = new_row(w)))
			return -ENOMEM;
		row->gap = gap;
		row->what = o->what;
		row->state = o->state;
		row->thread = o->thread;
		row->id = o->id;
		for (j = i; j < w->nobs && by_obs(&w->obs[j], o) == 0; j++) {
			row->count++;
			row->ns += w->obs[j].ns;
		}
		i = j;
	}
	if (w->nobs && is_stack_row(w->obs[w->nobs - 1].what))
		trim_stacks(w, group);
	return 0;
}

static int explain(struct idle_why *w, struct report_section *rs, uint32_t gap)
{
	const struct report_idle_gap *ig;
	struct why_row *row;
	size_t n, i;
	int rc = 0;

	ig = report_idle_gaps(w->idle, &n) + gap;
	if (!(row = new_row(w)))
		return -ENOMEM;
	row->gap = gap;
	row->what = WHY_GAP;
	row->count = 1;
	row->ns = ig->gap.t1 - ig->gap.t0;
	w->nobs = 0;
	if (w->budget < 0 ||
	    (rc = each_overlap(w, &w->api, ig->gap.t0, ig->gap.t1, api_obs)) != 0 ||
	    (rc = each_overlap(w, &w->osrt, ig->gap.t0, ig->gap.t1, osrt_obs)) != 0 ||
	    (rc = each_overlap(w, &w->samp, ig->gap.t0, ig->gap.t1, sample_obs)) != 0) {
		if (rc < 0)
			return rc;
		w->rows[w->nrows - 1].unexamined = true; /* the budget ran out: not a part of it */
		return 0;
	}
	n = w->nrows;
	if ((rc = obs_rows(w, gap)) != 0)
		return rc;
	for (i = n; i < w->nrows; i++)
		if (w->rows[i].what == WHY_CUDA)
			w->rows[i].sync = idle_is_sync_call(report_string(rs, w->rows[i].id));
	return 0;
}

/* ---- gpu_idle_breakdown's stacks --------------------------------------------------------------
 */

struct stack_obs {
	uint32_t device, stack;
	uint8_t source;
};

static int by_stack_obs(const void *a, const void *b)
{
	const struct stack_obs *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_stack_weight(const void *a, const void *b)
{
	const struct why_stack *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int collect_stack_obs(struct idle_why *w, struct stack_obs **out, size_t *nout)
{
	const struct report_idle_span *sp;
	size_t nsp, k, i, n = 0, cap = 0;
	struct stack_obs *v = NULL;

	sp = report_idle_largest_holes(w->idle, &nsp);
	for (k = 0; k < nsp; k++)
		for (i = first_from(&w->samp, sp[k].t0);
		     i < w->samp.n && w->samp.v[i].t0 < sp[k].t1; i++) {
			const struct hitem *it = &w->samp.v[i];

			if (!tally_grow_in((void **)&v, &cap, n + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[n++] = (struct stack_obs){sp[k].device, it->torn ? 0 : it->id,
						    it->source == TALLY_SAMPLE_PYTHON ? WHY_PYTHON
										      : WHY_NATIVE};
		}
	*out = v;
	*nout = n;
	return 0;
}

/* Per device of stacks[from..): each stack's share is of its source's samples; the top few kept. */
static void keep_top_stacks(struct idle_why *w, size_t from)
{
	size_t i = from, out = from, j, k;

	while (i < w->nstacks) {
		uint64_t of[2] = {0, 0};

		for (j = i; j < w->nstacks && w->stacks[j].device == w->stacks[i].device; j++)
			of[w->stacks[j].source == WHY_NATIVE] += w->stacks[j].count;
		for (k = i; k < j && k - i < TOP_LARGEST_STACKS; k++) {
			w->stacks[out] = w->stacks[k];
			w->stacks[out++].of = of[w->stacks[k].source == WHY_NATIVE];
		}
		i = j;
	}
	w->nstacks = out;
}

/* The stacks sampled in the holes of each device's largest class, the top few per device. */
static int largest_stacks(struct idle_why *w, const struct report_section *rs)
{
	struct stack_obs *v;
	size_t n, i, j, first = w->nstacks;
	int rc = collect_stack_obs(w, &v, &n);

	if (rc)
		return rc;
	if (n > 1)
		qsort(v, n, sizeof(*v), by_stack_obs);
	for (i = 0; i < n; i = j) {
		struct why_stack *s;

		if (!tally_grow_in((void **)&w->stacks, &w->stacks_cap, w->nstacks + 1,
				   sizeof(*w->stacks))) {
			free(v);
			return -ENOMEM;
		}
		s = &w->stacks[w->nstacks++];
		*s = (struct why_stack){rs->index, v[i].device, v[i].source, v[i].stack, 0, 0, 0};
		for (j = i; j < n && by_stack_obs(&v[j], &v[i]) == 0; j++)
			s->count++;
		s->ns = s->count * w->period;
	}
	free(v);
	if (w->nstacks - first > 1)
		qsort(w->stacks + first, w->nstacks - first, sizeof(*w->stacks), by_stack_weight);
	keep_top_stacks(w, first);
	return 0;
}

uint64_t idle_why_period(const struct report_section *rs)
{
	return rs->s->sample_rate ? 1000000000ull / rs->s->sample_rate : 1000000ull;
}

int idle_why_section(struct idle_why *w, struct report_section *rs)
{
	size_t n, gap;
	int rc = 0;

	free(w->threads);
	w->threads = tally_section_threads(rs->s, &w->nthreads);
	w->pid = (uint32_t)rs->s->pid;
	w->period = idle_why_period(rs);
	if (index_threads(w) < 0 || hvec_sort(&w->api) < 0 || hvec_sort(&w->osrt) < 0 ||
	    hvec_sort(&w->samp) < 0)
		return -ENOMEM;
	w->budget = (int64_t)OVERLAPS_PER_EVENT * (int64_t)(w->api.n + w->osrt.n + w->samp.n) +
		    OVERLAPS_MIN;
	report_idle_gaps(w->idle, &n);
	for (gap = w->gaps_done; w->want_rows && gap < n && rc == 0; gap++)
		rc = explain(w, rs, (uint32_t)gap);
	w->gaps_done = n;
	if (rc == 0)
		rc = largest_stacks(w, rs);
	w->api.n = w->osrt.n = w->samp.n = 0;
	return rc;
}

const struct why_row *idle_why_rows(const struct idle_why *w, size_t *n)
{
	*n = w->nrows;
	return w->rows;
}

const struct why_stack *idle_why_stacks(const struct idle_why *w, size_t *n)
{
	*n = w->nstacks;
	return w->stacks;
}

bool idle_why_has_host(const struct idle_why *w)
{
	return w->has_host;
}

const char *idle_why_thread_label(const struct report_section *rs, uint64_t thread)
{
	static char buf[96];
	const struct tally_thread *t;

	if (thread & WHY_CUPTI_THREAD) {
		snprintf(buf, sizeof(buf), "CUPTI thread %" PRIu32, (uint32_t)thread);
		return buf;
	}
	t = tally_section_thread(rs->s, (uint32_t)thread);
	if (t && t->name && t->name[0])
		snprintf(buf, sizeof(buf), "%s (tid %" PRIu32 ")", t->name, (uint32_t)thread);
	else
		snprintf(buf, sizeof(buf), "thread %" PRIu32, (uint32_t)thread);
	return buf;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/*
 * The largest class in words.  Host wait that began inside a synchronizing call is the cost of
 * synchronizing: named first when it is half the host wait or more, said as a part of it from a
 * tenth on (less is the odd synchronize any program has).
 */
static int cause_class(const struct report_idle_total *t, enum idle_class big, uint64_t all,
		       char *buf, size_t len)
{
	uint64_t hw = t->ns[IDLE_HOST_WAIT], sync = t->after_sync[IDLE_HOST_WAIT];

	if (big == IDLE_HOST_WAIT && 2 * sync >= hw)
		return snprintf(
		    buf, len,
		    "synchronization, %.0f%% of the idle time: host wait that began "
		    "inside a synchronizing call (the host waited for the GPU, then had "
		    "nothing queued)",
		    share(sync, all));
	if (big == IDLE_HOST_WAIT && 10 * sync >= hw && sync)
		return snprintf(buf, len,
				"host wait, %.0f%% of the idle time (%.0f%% of it right after a "
				"synchronizing call)",
				share(hw, all), share(sync, hw));
	return snprintf(buf, len, "%s, %.0f%% of the idle time", idle_class_name(big),
			share(t->ns[big], all));
}

const char *idle_cause(void *ctx, unsigned section, uint32_t device, char *buf, size_t len)
{
	const struct idle_cause_ctx *x = ctx;
	const struct report_idle_total *t;
	const struct why_stack *s = NULL;
	struct report_section *rs;
	uint64_t all = 0;
	size_t n, i;
	int used;
	enum idle_class big;

	t = report_idle_totals(x->idle, &n);
	for (i = 0; i < n && !(t[i].section == section && t[i].device == device); i++)
		;
	if (i == n)
		return NULL;
	t += i;
	for (i = 0; i < IDLE_CLASSES; i++)
		all += t->ns[i];
	if (!all)
		return NULL;
	big = report_idle_largest(t);
	used = cause_class(t, big, all, buf, len);
	for (i = 0, s = x->why ? idle_why_stacks(x->why, &n) : NULL; s && i < n; i++)
		if (s[i].section == section && s[i].device == device && s[i].stack)
			break; /* the first is the heaviest (idle_why_section sorts them) */
	rs = section < x->set->nsections ? x->set->sections[section] : NULL;
	if (s && i < n && rs && used > 0 && (size_t)used < len)
		snprintf(buf + used, len - (size_t)used,
			 "; the host was in %s, %.0f%% of its samples",
			 report_frame_label(rs, report_user_frame(rs, s[i].stack)),
			 s[i].of ? 100.0 * (double)s[i].count / (double)s[i].of : 0.0);
	return buf;
}
