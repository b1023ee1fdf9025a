/* SPDX-License-Identifier: MIT */
/* The host behind each idle hole; see idlewhy.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "idlewhy.h"
#include "waits.h"

#define TOP_STACKS	   5 /* per thread and kind of sample, in each listed hole */
#define TOP_LARGEST_STACKS 3 /* per device, in gpu_idle_breakdown */

/* A host event of the section being read: an API call, a blocking call or a sample. */
struct hitem {
	uint64_t t0, t1; /* aligned; a sample's t1 is its t0 */
	uint64_t maxend; /* the latest t1 of this item and every one before it (sorted) */
	uint32_t thread; /* CUPTI's id (API calls) or the kernel tid */
	uint32_t id;	 /* name string id / CBID / stack id */
	uint8_t source;	 /* samples: TALLY_SAMPLE_* */
	uint8_t state;	 /* samples: thread state */
	uint8_t torn;	 /* samples: no stack */
};

struct hvec {
	struct hitem *v;
	size_t n, cap;
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
	struct why_thread *threads_in; /* per device and thread, in its largest class's holes */
	size_t nthreads_in, threads_in_cap;
	struct tally_map threads_in_map; /* (section, device; thread) -> threads_in index + 1 */
	struct obs *obs;
	size_t nobs, obs_cap;
	bool has_host;
	/* the section being explained */
	uint64_t period;   /* a sample stands for this much of its thread's time, at most */
	uint64_t hole_end; /* the end of the hole being explained */
	const struct tally_thread **threads; /* sorted by tid */
	size_t nthreads;
	uint32_t pid;
	const struct report_section *rs;
	/* the cause across processes (idle_why_follow) */
	uint8_t *waited; /* by listed hole: 1 when its launching thread waited on data in it */
	size_t waited_cap;
	struct wait_cache waits;
	struct line_cache lines;
	struct why_follow {
		unsigned section;
		uint32_t device;
		uint64_t windows_ns; /* the holes the other processes were looked at in */
	} * follow;
	size_t nfollow, follow_cap;
	bool last_cupti_set; /* api_thread's last answer, for this section */
	uint32_t last_cupti;
	uint64_t last_thread;
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
	free(w->rows);
	free(w->stacks);
	free(w->threads_in);
	tally_map_fini(&w->threads_in_map);
	free(w->obs);
	free(w->threads);
	free(w->waited);
	free(w->follow);
	wait_cache_fini(&w->waits);
	line_cache_fini(&w->lines);
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

static void hvec_sort(struct hvec *h)
{
	uint64_t m = 0;
	size_t i;

	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), by_start);
	for (i = 0; i < h->n; i++) {
		m = h->v[i].t1 > m ? h->v[i].t1 : m;
		h->v[i].maxend = m;
	}
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

/* Every item overlapping [t0, t1): those starting inside, and before it those still running at t0
 * (found backwards while the running latest end says one may be). */
static int each_overlap(struct idle_why *w, const struct hvec *h, uint64_t t0, uint64_t t1,
			overlap_fn fn)
{
	size_t first = first_from(h, t0), i;
	int rc;

	for (i = first; i-- > 0 && h->v[i].maxend > t0;)
		if (h->v[i].t1 > t0 &&
		    (rc = fn(w, &h->v[i], (h->v[i].t1 < t1 ? h->v[i].t1 : t1) - t0)))
			return rc;
	for (i = first; i < h->n && h->v[i].t0 < t1; i++) {
		uint64_t end = h->v[i].t1 < t1 ? h->v[i].t1 : t1;

		if ((rc = fn(w, &h->v[i], end - h->v[i].t0)) != 0)
			return rc;
	}
	return 0;
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

/* An API call's thread (CUPTI's id: pthread_self cut to 32 bits) as a kernel tid, if known; the
 * last answer is kept, since calls of one thread come together. */
static uint64_t api_thread(struct idle_why *w, uint32_t cupti)
{
	const struct tally_thread *t;

	if (w->last_cupti_set && w->last_cupti == cupti)
		return w->last_thread;
	t = report_thread_of_cupti(w->rs, cupti);
	w->last_cupti = cupti;
	w->last_cupti_set = true;
	w->last_thread = t ? t->tid : WHY_CUPTI_THREAD | cupti;
	return w->last_thread;
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

/*
 * The time a sample stands for inside [t0, t1): its thread's time from it to its thread's next
 * sample, at most a sampling period, and never past t1; so a thread's samples in a hole add up to
 * no more than the hole, however the sampler's ticks jittered.  The samples are sorted by time:
 * the next one of the same thread is within a period, among the few samples of other threads.
 */
static uint64_t sample_ns(const struct hvec *h, const struct hitem *it, uint64_t period,
			  uint64_t t1)
{
	uint64_t end = it->t0 + period;
	size_t i;

	for (i = (size_t)(it - h->v) + 1; i < h->n && h->v[i].t0 < end; i++)
		if (h->v[i].thread == it->thread) {
			end = h->v[i].t0;
			break;
		}
	end = end < t1 ? end : t1;
	return end > it->t0 ? end - it->t0 : 0;
}

static int sample_obs(struct idle_why *w, const struct hitem *it, uint64_t ns)
{
	bool python = it->source == TALLY_SAMPLE_PYTHON;

	(void)ns;
	return add_obs(w, it->thread, python ? WHY_PYTHON : WHY_NATIVE, python ? it->state : 0,
		       it->torn ? 0 : it->id, sample_ns(&w->samp, it, w->period, w->hole_end));
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

/* w->obs of hole g into rows, one per (thread, kind, name or stack, state). */
static int obs_rows(struct idle_why *w, uint32_t gap)
{
	size_t i = 0, group = 0;

	if (w->nobs > 1)
		qsort(w->obs, w->nobs, sizeof(*w->obs), by_obs);
	while (i < w->nobs) {
		const struct obs *o = &w->obs[i];
		struct why_row *row;
		size_t j;

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

/* Whether the thread that launched the work after hole g waited on a queue, pipe or socket in
 * it: most of its Python samples there wait on data, or its blocking reads hold most of it. */
static bool waited_on_data(struct idle_why *w, struct report_section *rs,
			   const struct report_idle_gap *g)
{
	uint64_t launcher = api_thread(w, g->launch_thread), sampled = 0, data = 0, reads = 0;
	size_t i;

	for (i = 0; i < w->nobs; i++) {
		const struct obs *o = &w->obs[i];

		if (o->thread != launcher)
			continue;
		if (o->what == WHY_OSRT && wait_call_is_data(o->id))
			reads += o->ns;
		if (o->what != WHY_PYTHON)
			continue;
		sampled += o->ns;
		if (o->state != TALLY_THREAD_ON_CPU && o->id &&
		    wait_kind_of(&w->waits, rs, o->id) == WAIT_DATA)
			data += o->ns;
	}
	return (sampled && 2 * data >= sampled) || 2 * reads >= g->gap.t1 - g->gap.t0;
}

static int explain(struct idle_why *w, struct report_section *rs, uint32_t gap)
{
	const struct report_idle_gap *ig;
	struct why_row *row;
	size_t n, i;
	int rc;

	ig = report_idle_gaps(w->idle, &n) + gap;
	if (!(row = new_row(w)))
		return -ENOMEM;
	row->gap = gap;
	row->what = WHY_GAP;
	row->count = 1;
	row->ns = ig->gap.t1 - ig->gap.t0;
	w->nobs = 0;
	w->hole_end = ig->gap.t1;
	if ((rc = each_overlap(w, &w->api, ig->gap.t0, ig->gap.t1, api_obs)) != 0 ||
	    (rc = each_overlap(w, &w->osrt, ig->gap.t0, ig->gap.t1, osrt_obs)) != 0 ||
	    (rc = each_overlap(w, &w->samp, ig->gap.t0, ig->gap.t1, sample_obs)) != 0)
		return rc;
	if (!tally_grow_in((void **)&w->waited, &w->waited_cap, (size_t)gap + 1, 1))
		return -ENOMEM;
	w->waited[gap] = ig->launch_known && waited_on_data(w, rs, ig);
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
	uint64_t thread; /* the kernel tid */
	uint8_t source, state;
	uint64_t ns; /* the time it stands for (sample_ns) */
};

static int by_stack_obs(const void *a, const void *b)
{
	const struct stack_obs *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int by_stack_weight(const void *a, const void *b)
{
	const struct why_stack *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
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
			bool python = it->source == TALLY_SAMPLE_PYTHON;

			v[n++] = (struct stack_obs){
			    sp[k].device,
			    it->torn ? 0 : it->id,
			    it->thread,
			    python ? WHY_PYTHON : WHY_NATIVE,
			    python ? it->state : TALLY_THREAD_ON_CPU, /* native: CPU time */
			    sample_ns(&w->samp, it, w->period, sp[k].t1)};
		}
	*out = v;
	*nout = n;
	return 0;
}

static bool same_thread(const struct why_stack *a, const struct why_stack *b)
{
	return a->device == b->device && a->thread == b->thread;
}

/* The entry of (section, device, thread), made if new: found by a hash, so that many threads and
 * many holes cost each what one does. */
static struct why_thread *thread_in(struct idle_why *w, unsigned sec, uint32_t device,
				    uint64_t thread)
{
	uint32_t found = tally_map_get(&w->threads_in_map, tally_key32(sec, device), thread);

	if (found)
		return &w->threads_in[found - 1];
	if (!tally_grow_in((void **)&w->threads_in, &w->threads_in_cap, w->nthreads_in + 1,
			   sizeof(*w->threads_in)) ||
	    tally_map_put(&w->threads_in_map, tally_key32(sec, device), thread,
			  (uint32_t)w->nthreads_in + 1) < 0)
		return NULL;
	w->threads_in[w->nthreads_in] =
	    (struct why_thread){.section = sec, .device = device, .thread = thread};
	return &w->threads_in[w->nthreads_in++];
}

/* Per device and thread of stacks[from..): each stack's share is of that thread's samples of its
 * source, and the thread's samples (on a CPU or not) are kept; its top few stacks are kept. */
static int keep_top_stacks(struct idle_why *w, size_t from)
{
	size_t i = from, out = from, j, k;

	while (i < w->nstacks) {
		uint64_t of[2] = {0, 0};
		struct why_thread *t =
		    thread_in(w, w->stacks[i].section, w->stacks[i].device, w->stacks[i].thread);

		if (!t)
			return -ENOMEM;
		for (j = i; j < w->nstacks && same_thread(&w->stacks[j], &w->stacks[i]); j++) {
			of[w->stacks[j].source == WHY_NATIVE] += w->stacks[j].count;
			t->samples += w->stacks[j].count;
			t->on_cpu +=
			    w->stacks[j].state == TALLY_THREAD_ON_CPU ? w->stacks[j].count : 0;
		}
		for (k = i; k < j && k - i < TOP_LARGEST_STACKS; k++) {
			w->stacks[out] = w->stacks[k];
			w->stacks[out++].of = of[w->stacks[k].source == WHY_NATIVE];
		}
		i = j;
	}
	w->nstacks = out;
	return 0;
}

/* The launching threads of rs's listed holes in their device's largest class, by time ended. */
/* The index of the total of (section, device), or n: totals come by section, devices by id. */
static size_t total_index(const struct report_idle_total *t, size_t n, unsigned sec,
			  uint32_t device)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t[mid].section < sec || (t[mid].section == sec && t[mid].device < device))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && t[lo].section == sec && t[lo].device == device ? lo : n;
}

static int launchers(struct idle_why *w, const struct report_section *rs, size_t first)
{
	size_t n, nt, i, k;
	const struct report_idle_gap *g = report_idle_gaps(w->idle, &n);
	const struct report_idle_total *t = report_idle_totals(w->idle, &nt);

	for (i = first, k = nt; i < n; i++) {
		struct why_thread *wt;

		if (k >= nt || t[k].device != g[i].gap.device)
			k = total_index(t, nt, rs->index, g[i].gap.device);
		if (k >= nt || !g[i].launch_known || g[i].cls != report_idle_largest(&t[k]))
			continue;
		if (!(wt = thread_in(w, rs->index, g[i].gap.device,
				     api_thread(w, g[i].launch_thread))))
			return -ENOMEM;
		wt->launched_ns += g[i].gap.t1 - g[i].gap.t0;
	}
	return 0;
}

/* A stack of a thread that waits by design (a queue feeder, a pin-memory loop, CUDA's event
 * handler): never what the host was doing instead of feeding the GPU. */
static bool by_design(struct report_section *rs, const struct why_stack *s, struct wait_cache *c)
{
	const struct tally_thread *t = NULL;
	size_t i;

	for (i = 0; i < rs->s->nthreads && !t; i++)
		if (rs->s->threads[i].tid == s->thread)
			t = &rs->s->threads[i];
	if (t && wait_thread_by_design(t->name))
		return true;
	return s->state != TALLY_THREAD_ON_CPU && wait_kind_of(c, rs, s->stack) == WAIT_BY_DESIGN;
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
		*s = (struct why_stack){.section = rs->index,
					.device = v[i].device,
					.thread = v[i].thread,
					.source = v[i].source,
					.state = v[i].state,
					.stack = v[i].stack};
		for (j = i; j < n && by_stack_obs(&v[j], &v[i]) == 0; j++) {
			s->count++;
			s->ns += v[j].ns;
		}
	}
	free(v);
	if (w->nstacks - first > 1)
		qsort(w->stacks + first, w->nstacks - first, sizeof(*w->stacks), by_stack_weight);
	if ((rc = keep_top_stacks(w, first)) != 0)
		return rc;
	for (i = first; i < w->nstacks; i++)
		w->stacks[i].by_design =
		    by_design((struct report_section *)rs, &w->stacks[i], &w->waits);
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
	w->rs = rs;
	w->last_cupti_set = false;
	w->period = idle_why_period(rs);
	hvec_sort(&w->api);
	hvec_sort(&w->osrt);
	hvec_sort(&w->samp);
	report_idle_gaps(w->idle, &n);
	for (gap = w->gaps_done; w->want_rows && gap < n && rc == 0; gap++)
		rc = explain(w, rs, (uint32_t)gap);
	if (rc == 0)
		rc = largest_stacks(w, rs);
	if (rc == 0)
		rc = launchers(w, rs, w->gaps_done);
	w->gaps_done = n;
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

static const struct why_thread *idle_why_threads(const struct idle_why *w, size_t *n)
{
	*n = w->nthreads_in;
	return w->threads_in;
}

bool idle_why_has_host(const struct idle_why *w)
{
	return w->has_host;
}

/* ---- the cause across processes ---------------------------------------------------------------
 */

/* Rows of another process's thread in one hole: uses u[0..n) (one window, section and thread,
 * by stack), the heaviest TOP_STACKS of each source, the rest summed. */
static int cross_rows(struct idle_why *w, uint32_t gap, const struct proc_use *u, size_t n)
{
	size_t from = w->nrows, i;

	for (i = 0; i < n; i++) {
		struct why_row *row = new_row(w);
		bool python = u[i].source == TALLY_SAMPLE_PYTHON;

		if (!row)
			return -ENOMEM;
		*row = (struct why_row){.gap = gap,
					.process = u[i].section + 1,
					.what = python ? WHY_PYTHON : WHY_NATIVE,
					.state = python ? u[i].state : 0,
					.thread = u[i].tid,
					.id = u[i].stack,
					.count = u[i].samples,
					.ns = u[i].ns};
	}
	/* Python rows first, then native, each by weight (trim_stacks works on one kind) */
	for (i = from; i < w->nrows && w->rows[i].what == WHY_PYTHON; i++)
		;
	if (i > from) {
		size_t end = w->nrows, nat = end - i;
		struct why_row *tmp = nat ? malloc(nat * sizeof(*tmp)) : NULL;

		if (nat && !tmp)
			return -ENOMEM;
		if (nat)
			memcpy(tmp, w->rows + i, nat * sizeof(*tmp));
		w->nrows = i;
		trim_stacks(w, from);
		if (nat) {
			size_t at = w->nrows;

			if (!tally_grow_in((void **)&w->rows, &w->rows_cap, at + nat,
					   sizeof(*w->rows))) {
				free(tmp);
				return -ENOMEM;
			}
			memcpy(w->rows + at, tmp, nat * sizeof(*tmp));
			w->nrows = at + nat;
			free(tmp);
			trim_stacks(w, at);
		}
	} else {
		trim_stacks(w, from);
	}
	return 0;
}

static int by_proc_use_native_last(const void *a, const void *b)
{
	const struct proc_use *x = a, *y = b;

	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->source != TALLY_SAMPLE_PYTHON) - (y->source != TALLY_SAMPLE_PYTHON);
}

/* The holes first..last (one section and device, in time order) the launcher waited on data
 * in: what the other processes did in each, as rows. */
static int follow_gaps(struct idle_why *w, const struct jobprocs *jp, const struct report_set *set,
		       size_t first, size_t last)
{
	size_t n, nw = 0, i, j, nu;
	const struct report_idle_gap *g = report_idle_gaps(w->idle, &n);
	uint64_t(*win)[2] = malloc((last - first) * sizeof(*win));
	uint32_t *gap_of = malloc((last - first) * sizeof(*gap_of));
	struct proc_use *u = NULL;
	int rc = 0;

	if (!win || !gap_of) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = first; i < last; i++)
		if (i < w->waited_cap && w->waited[i]) {
			win[nw][0] = g[i].gap.t0;
			win[nw][1] = g[i].gap.t1;
			gap_of[nw++] = (uint32_t)i;
		}
	if (!nw || (rc = jobprocs_during(jp, set, g[first].gap.section, (const uint64_t(*)[2])win,
					 nw, true, &u, &nu)))
		goto out;
	if (nu > 1)
		qsort(u, nu, sizeof(*u), by_proc_use_native_last);
	for (i = 0; i < nu && rc == 0; i = j) {
		for (j = i; j < nu && u[j].window == u[i].window && u[j].section == u[i].section &&
			    u[j].tid == u[i].tid;
		     j++)
			;
		rc = cross_rows(w, gap_of[u[i].window], u + i, j - i);
	}
out:
	free(u);
	free(win);
	free(gap_of);
	return rc;
}

/* Rows sorted by hole, each hole's own rows first (a stable order: their place before). */
struct row_at {
	struct why_row row;
	size_t at;
};

static int by_gap_then_place(const void *a, const void *b)
{
	const struct row_at *x = a, *y = b;

	if (x->row.gap != y->row.gap)
		return x->row.gap < y->row.gap ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static int sort_rows(struct idle_why *w)
{
	struct row_at *v = w->nrows ? malloc(w->nrows * sizeof(*v)) : NULL;
	size_t i;

	if (!v)
		return w->nrows ? -ENOMEM : 0;
	for (i = 0; i < w->nrows; i++)
		v[i] = (struct row_at){w->rows[i], i};
	qsort(v, w->nrows, sizeof(*v), by_gap_then_place);
	for (i = 0; i < w->nrows; i++)
		w->rows[i] = v[i].row;
	free(v);
	return 0;
}

static const struct why_thread *launcher_of(const struct idle_why *w, unsigned section,
					    uint32_t device);
static const struct why_stack *top_stack(const struct idle_why *w, unsigned section,
					 uint32_t device, uint64_t thread, bool on_cpu);

/* Whether a device's launching thread waited on data in its largest class's holes (its top
 * stack there), so that the other processes are looked at. */
static bool device_waited(struct idle_why *w, struct report_section *rs, uint32_t device)
{
	const struct why_thread *l = launcher_of(w, rs->index, device);
	const struct why_stack *s;

	if (!l || !l->samples || 2 * l->on_cpu >= l->samples)
		return false;
	s = top_stack(w, rs->index, device, l->thread, false);
	return s && wait_kind_of(&w->waits, rs, s->stack) == WAIT_DATA;
}

static int by_stack_use(const void *a, const void *b)
{
	const struct proc_use *x = a, *y = b;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The other processes' top stacks in a device's listed holes of its largest class. */
static int follow_device(struct idle_why *w, const struct jobprocs *jp,
			 const struct report_set *set, const struct report_idle_total *t,
			 size_t first, size_t last)
{
	size_t nw = 0, i, j, k, nu, n;
	const struct report_idle_gap *g = report_idle_gaps(w->idle, &n);
	uint64_t(*win)[2] = NULL, total = 0;
	struct proc_use *u = NULL;
	size_t cap = 0;
	int rc = 0;

	for (i = first; i < last && i < n; i++) {
		if (g[i].cls != report_idle_largest(t))
			continue;
		if (!tally_grow_in((void **)&win, &cap, nw + 1, sizeof(*win))) {
			free(win);
			return -ENOMEM;
		}
		win[nw][0] = g[i].gap.t0;
		win[nw++][1] = g[i].gap.t1;
		total += g[i].gap.t1 - g[i].gap.t0;
	}
	if (!nw || (rc = jobprocs_during(jp, set, t->section, (const uint64_t(*)[2])win, nw, false,
					 &u, &nu)))
		goto out;
	if (!tally_grow_in((void **)&w->follow, &w->follow_cap, w->nfollow + 1,
			   sizeof(*w->follow))) {
		rc = -ENOMEM;
		goto out;
	}
	w->follow[w->nfollow++] = (struct why_follow){t->section, t->device, total};
	if (nu > 1)
		qsort(u, nu, sizeof(*u), by_stack_use);
	for (i = 0; i < nu; i = j) {
		uint64_t of = 0;

		for (j = i; j < nu && u[j].section == u[i].section && u[j].tid == u[i].tid; j++)
			of += u[j].samples;
		for (k = i; k < j && k - i < TOP_LARGEST_STACKS; k++) {
			bool python = u[k].source == TALLY_SAMPLE_PYTHON;

			if (!tally_grow_in((void **)&w->stacks, &w->stacks_cap, w->nstacks + 1,
					   sizeof(*w->stacks))) {
				rc = -ENOMEM;
				goto out;
			}
			w->stacks[w->nstacks++] =
			    (struct why_stack){.section = t->section,
					       .device = t->device,
					       .process = u[k].section + 1,
					       .thread = u[k].tid,
					       .source = python ? WHY_PYTHON : WHY_NATIVE,
					       .state = python ? u[k].state : TALLY_THREAD_ON_CPU,
					       .stack = u[k].stack,
					       .count = u[k].samples,
					       .of = of,
					       .ns = u[k].ns};
			w->stacks[w->nstacks - 1].by_design = by_design(
			    set->sections[u[k].section], &w->stacks[w->nstacks - 1], &w->waits);
		}
	}
out:
	free(u);
	free(win);
	return rc;
}

int idle_why_follow(struct idle_why *w, const struct jobprocs *jp, const struct report_set *set)
{
	size_t n, nt, i, j, k;
	const struct report_idle_gap *g = report_idle_gaps(w->idle, &n);
	const struct report_idle_total *t = report_idle_totals(w->idle, &nt);
	int rc = 0;

	if (!jobprocs_any(jp))
		return 0;
	/* the listed holes come a section at a time, its devices in order, as the totals do:
	 * each group of one (section, device) is followed once, its total found beside it */
	for (i = 0, k = 0; i < n && rc == 0; i = j) {
		for (j = i; j < n && g[j].gap.section == g[i].gap.section &&
			    g[j].gap.device == g[i].gap.device;
		     j++)
			;
		if (w->want_rows)
			rc = follow_gaps(w, jp, set, i, j);
		while (k < nt &&
		       (t[k].section < g[i].gap.section ||
			(t[k].section == g[i].gap.section && t[k].device < g[i].gap.device)))
			k++;
		if (rc == 0 && k < nt && t[k].section == g[i].gap.section &&
		    t[k].device == g[i].gap.device && t[k].section < set->nsections &&
		    device_waited(w, set->sections[t[k].section], t[k].device))
			rc = follow_device(w, jp, set, &t[k], i, j);
	}
	if (rc == 0 && w->want_rows)
		rc = sort_rows(w);
	return rc;
}

static const char *idle_why_thread_label_to(const struct report_section *rs, uint64_t thread,
					    char *buf, size_t len)
{
	return report_thread_label(rs, (uint32_t)thread, (thread & WHY_CUPTI_THREAD) != 0, buf,
				   len);
}

const char *idle_why_thread_label(const struct report_section *rs, uint64_t thread)
{
	static char buf[96];

	return idle_why_thread_label_to(rs, thread, buf, sizeof(buf));
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

/* The heaviest stack of a device's thread in a state (on CPU or not), or NULL. */
static const struct why_stack *top_stack(const struct idle_why *w, unsigned section,
					 uint32_t device, uint64_t thread, bool on_cpu)
{
	size_t n, i;
	const struct why_stack *s = idle_why_stacks(w, &n), *best = NULL;

	for (i = 0; i < n; i++)
		if (s[i].section == section && s[i].device == device && !s[i].process &&
		    s[i].thread == thread && s[i].stack &&
		    (s[i].state == TALLY_THREAD_ON_CPU) == on_cpu &&
		    (!best || s[i].count > best->count))
			best = &s[i];
	return best;
}

/* The device's launching thread: the one whose launches ended the most of its holes' time. */
static const struct why_thread *launcher_of(const struct idle_why *w, unsigned section,
					    uint32_t device)
{
	size_t n, i;
	const struct why_thread *t = idle_why_threads(w, &n), *best = NULL;

	for (i = 0; i < n; i++)
		if (t[i].section == section && t[i].device == device && t[i].launched_ns &&
		    (!best || t[i].launched_ns > best->launched_ns))
			best = &t[i];
	return best;
}

/* The source file of a stack's innermost user frame ("" when it has none). */
static const char *user_file(struct report_section *rs, uint32_t stack)
{
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, report_user_frame(rs, stack));

	return f && f->file ? f->file : "";
}

/* How likely another thread on the CPU is what the launching thread waited for, ranked: its
 * on-CPU stack in the file the launcher waits in (a queue and its producer are written together),
 * then of the launcher's kind (Python for a Python wait), then its time on the CPU. */
static uint64_t producer_rank(const struct idle_cause_ctx *x, struct report_section *rs,
			      const struct why_thread *t, const struct why_stack *wait)
{
	const struct why_stack *s = top_stack(x->why, rs->index, t->device, t->thread, true);
	uint64_t rank = t->on_cpu;

	if (!s || !wait)
		return rank;
	if (*user_file(rs, wait->stack) &&
	    strcmp(user_file(rs, s->stack), user_file(rs, wait->stack)) == 0)
		rank |= 1ull << 62;
	if (s->source == wait->source)
		rank |= 1ull << 61;
	return rank;
}

/* Another thread of the device's holes on a CPU, the likeliest one the launcher waited for. */
static const struct why_thread *producer(const struct idle_cause_ctx *x, struct report_section *rs,
					 const struct why_thread *l, const struct why_stack *wait)
{
	size_t n, i;
	const struct why_thread *t = idle_why_threads(x->why, &n), *best = NULL;
	uint64_t best_rank = 0;

	for (i = 0; i < n; i++) {
		uint64_t r;

		if (t[i].section != rs->index || t[i].device != l->device ||
		    t[i].thread == l->thread || !t[i].on_cpu)
			continue;
		r = producer_rank(x, rs, &t[i], wait);
		if (!best || r > best_rank) {
			best = &t[i];
			best_rank = r;
		}
	}
	return best;
}

/* Where no sample is of the launching thread (none recorded, or THREADS does not tie its CUPTI
 * id to a tid): the heaviest stack of any thread, and whose it is. */
static void anyone(const struct idle_cause_ctx *x, struct report_section *rs, uint32_t device,
		   const struct why_thread *l, char *buf, size_t len)
{
	size_t n, i, used = strlen(buf);
	const struct why_stack *s = idle_why_stacks(x->why, &n), *best = NULL;
	const struct why_thread *of = NULL, *t;
	char who[96], whom[96];
	struct wait_cache waits = {0};

	if (l)
		used += (size_t)snprintf(buf + used, len - used, "; %s launched the work late%s",
					 idle_why_thread_label_to(rs, l->thread, who, sizeof(who)),
					 x->why->has_host ? " (no sample of it here)" : "");
	for (i = 0; i < n; i++) /* never a thread that waits by design, nor another process's */
		if (s[i].section == rs->index && s[i].device == device && s[i].stack &&
		    !s[i].process && !by_design(rs, &s[i], &waits) &&
		    (!best || s[i].count > best->count))
			best = &s[i];
	wait_cache_fini(&waits);
	for (i = 0, t = idle_why_threads(x->why, &n); best && i < n; i++)
		if (t[i].section == rs->index && t[i].device == device &&
		    t[i].thread == best->thread)
			of = &t[i];
	if (!best || !of || used >= len)
		return;
	snprintf(buf + used, len - used, "; the host was in %s on %s, %.0f%% of its samples",
		 report_frame_label(rs, report_user_frame(rs, best->stack)),
		 idle_why_thread_label_to(rs, best->thread, whom, sizeof(whom)),
		 share(best->count, of->samples));
}

/*
 * When the launching thread waited on data and the job's other processes were followed
 * (idle_why_follow): the one busiest in those holes (on a CPU, or waiting in its own code: a
 * sleep in __getitem__; not by design), its line and its share of the holes.  Returns whether
 * it said so.
 */
static bool cross_cause(const struct idle_cause_ctx *x, struct report_section *rs, uint32_t device,
			char *buf, size_t len)
{
	size_t n, i, k;
	const struct why_stack *s = idle_why_stacks(x->why, &n), *top = NULL;
	uint64_t windows = 0, busy = 0, best_busy = 0;
	unsigned best = 0;
	struct wait_cache waits = {0};
	struct line_cache lines = {0};
	char l[600];

	for (i = 0; i < x->why->nfollow; i++)
		if (x->why->follow[i].section == rs->index && x->why->follow[i].device == device)
			windows = x->why->follow[i].windows_ns;
	for (i = 0; windows && i < n; i = k) { /* a process's stacks are together */
		struct report_section *ps;

		if (s[i].section != rs->index || s[i].device != device || !s[i].process) {
			k = i + 1;
			continue;
		}
		ps = s[i].process - 1 < x->set->nsections ? x->set->sections[s[i].process - 1]
							  : NULL;
		for (k = i, busy = 0; k < n && s[k].section == rs->index && s[k].device == device &&
				      s[k].process == s[i].process;
		     k++)
			if (ps && s[k].stack && !by_design(ps, &s[k], &waits))
				busy += s[k].ns;
		if (busy > best_busy) {
			best_busy = busy;
			best = s[i].process;
		}
	}
	for (i = 0; best && i < n; i++) {
		struct report_section *ps = x->set->sections[best - 1];

		if (s[i].section == rs->index && s[i].device == device && s[i].process == best &&
		    s[i].stack && !by_design(ps, &s[i], &waits) && (!top || s[i].ns > top->ns))
			top = &s[i];
	}
	if (top) {
		struct report_section *ps = x->set->sections[best - 1];

		snprintf(buf, len,
			 "; meanwhile pid %" PRIu64
			 " was %s %s, %.0f%% of these gaps: the launching "
			 "thread waited on another process's work",
			 ps->s->pid,
			 top->state == TALLY_THREAD_ON_CPU ? "on the CPU in"
							   : "waiting in its own code at",
			 host_line_label(ps, host_line_of(&lines, ps, top->stack), l, sizeof(l)),
			 share(top->ns > windows ? windows : top->ns, windows));
	}
	wait_cache_fini(&waits);
	line_cache_fini(&lines);
	return top != NULL;
}

/* "; MainThread (tid 2001) launched the work late: it was on the CPU in f (a.py:3), 65% of its
 * samples in these gaps", and when it waited, the thread on the CPU meanwhile. */
static void cause_threads(const struct idle_cause_ctx *x, struct report_section *rs,
			  uint32_t device, char *buf, size_t len)
{
	const struct why_thread *l = launcher_of(x->why, rs->index, device), *o;
	const struct why_stack *s;
	char who[96], other[96];
	size_t used = strlen(buf);
	bool on_cpu;

	if (!l || !l->samples) {
		anyone(x, rs, device, l, buf, len);
		return;
	}
	idle_why_thread_label_to(rs, l->thread, who, sizeof(who));
	on_cpu = 2 * l->on_cpu >= l->samples;
	s = top_stack(x->why, rs->index, device, l->thread, on_cpu);
	if (s)
		used += (size_t)snprintf(buf + used, len - used,
					 "; %s launched the work late: it was %s %s, %.0f%% of its "
					 "samples in these gaps",
					 who, on_cpu ? "on the CPU in" : "waiting in",
					 report_frame_label(rs, report_user_frame(rs, s->stack)),
					 share(s->count, l->samples));
	else /* its samples there name no frame (torn, or native samples only) */
		used += (size_t)snprintf(buf + used, len - used,
					 "; %s launched the work late: it was %s in these gaps",
					 who, on_cpu ? "on the CPU" : "waiting");
	if (!on_cpu && used < len && cross_cause(x, rs, device, buf + used, len - used))
		return;
	if (on_cpu || used >= len || !(o = producer(x, rs, l, s)) ||
	    !(s = top_stack(x->why, rs->index, device, o->thread, true)))
		return;
	idle_why_thread_label_to(rs, o->thread, other, sizeof(other));
	snprintf(buf + used, len - used,
		 "; meanwhile %s was on the CPU in %s, %.0f%% of its samples: the launching "
		 "thread waited on another thread's work",
		 other, report_frame_label(rs, report_user_frame(rs, s->stack)),
		 share(s->count, o->samples));
}

const char *idle_cause(void *ctx, unsigned section, uint32_t device, char *buf, size_t len)
{
	const struct idle_cause_ctx *x = ctx;
	const struct report_idle_total *t;
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
	rs = section < x->set->nsections ? x->set->sections[section] : NULL;
	if (x->why && rs && used > 0 && (size_t)used < len)
		cause_threads(x, rs, device, buf, len);
	return buf;
}
