/* SPDX-License-Identifier: MIT */
/* The host behind each idle hole; see idlewhy.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "idlewhy.h"
#include "spill.h"
#include "waits.h"

#define TOP_STACKS	   5  /* per thread and kind of sample, in each listed hole */
#define TOP_THREADS	   16 /* per listed hole; the others in one "more threads" row */
#define TOP_LARGEST_STACKS 3  /* per device, in gpu_idle_breakdown */
/* The overlaps of host events with holes looked at per section: OVERLAPS_PER_EVENT for each of
 * its events, and OVERLAPS_MIN.  A call that spans many holes counts in each; past the budget the
 * section's holes that start later are listed unexamined (and say so), so that a few threads
 * blocked for a whole run over thousands of holes cannot make the report quadratic. */
#define OVERLAPS_PER_EVENT 64
#define OVERLAPS_MIN	   (1u << 20)

/* A host event of the section being read: an API call, a blocking call or a sample.  A
 * section's events are kept in one spill (spill.h), by start: a process of millions of calls does
 * not hold them in memory. */
enum { H_API, H_OSRT, H_SAMPLE };

struct hitem {
	uint64_t t0, t1; /* aligned; a sample's t1 is its t0 */
	uint32_t thread; /* CUPTI's id (API calls) or the kernel tid */
	uint32_t id;	 /* name string id / CBID / stack id */
	uint8_t what;	 /* H_API, H_OSRT, H_SAMPLE */
	uint8_t source;	 /* samples: TALLY_SAMPLE_* */
	uint8_t state;	 /* samples: thread state */
	uint8_t torn;	 /* samples: no stack */
};

/* One observation inside a hole, before aggregation. */
struct obs {
	uint64_t order; /* thread order: the main thread first, then by tid, CUPTI ids last */
	uint64_t thread;
	uint8_t what, state;
	uint32_t id;
	uint64_t ns;
};

/* A listed hole of the section being explained: holes are explained in order of start (a sweep
 * over the events, by start), their rows put back in the holes' order after. */
struct hole_ref {
	uint64_t t0, t1;
	uint32_t gap;
	size_t first_row, nrows;
};

struct idle_why {
	const struct report_idle *idle;
	bool want_rows;	  /* gpu_idle_why's rows are wanted (else only the breakdown's stacks) */
	size_t gaps_done; /* listed holes already explained */
	struct spill items;
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
	uint64_t period; /* a sample stands for this much of its thread's time, at most */
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
	int64_t budget;	      /* overlaps still to look at in this section */
	struct hitem *active; /* the sweep: the events that overlap the hole at hand */
	size_t nactive, active_cap;
	uint64_t *active_ns; /* the time each active sample stands for in the hole */
	size_t active_ns_cap;
	struct hole_ref *holes;
	size_t nholes, holes_cap;
	/* the breakdown's samples and launches per hole, in sections with GPU metrics: a hole they
	 * later show busy outside the trace (idle_why_drop_outside) takes its share out again */
	struct hole_share *shares;
	size_t nshares, shares_cap;
	struct tally_map share_at; /* a share's identity -> shares index + 1 */
};

static int by_start(const void *a, const void *b)
{
	const struct hitem *x = a, *y = b;

	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 < y->t1 ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->what < y->what ? -1 : x->what > y->what;
}

struct idle_why *idle_why_new(const struct report_idle *idle, bool rows)
{
	struct idle_why *w = calloc(1, sizeof(*w));

	if (w) {
		w->idle = idle;
		w->want_rows = rows;
		spill_init(&w->items, sizeof(struct hitem), 0, by_start);
	}
	return w;
}

void idle_why_free(struct idle_why *w)
{
	if (!w)
		return;
	spill_fini(&w->items);
	free(w->rows);
	free(w->stacks);
	free(w->threads_in);
	tally_map_fini(&w->threads_in_map);
	free(w->obs);
	free(w->threads);
	free(w->active);
	free(w->active_ns);
	free(w->holes);
	free(w->waited);
	free(w->follow);
	free(w->shares);
	tally_map_fini(&w->share_at);
	wait_cache_fini(&w->waits);
	line_cache_fini(&w->lines);
	free(w);
}

int idle_why_add(struct idle_why *w, const struct report_section *rs, const struct tally_record *r,
		 size_t n)
{
	uint8_t what;
	size_t i;

	if (!n)
		return 0;
	if (tally_kind_is_api(r[0].kind))
		what = H_API;
	else if (r[0].kind == TALLY_KIND_OSRT)
		what = H_OSRT;
	else if (r[0].kind == TALLY_KIND_CPU_SAMPLE)
		what = H_SAMPLE;
	else
		return 0;
	w->has_host |= what != H_API;
	if (!w->want_rows && what != H_SAMPLE)
		return 0; /* the breakdown's stacks need samples only */
	for (i = 0; i < n; i++) {
		struct hitem *it;

		if ((r[i].flags & TALLY_REC_BAD_TIME) || r[i].kind != r[0].kind)
			continue;
		if (!(it = spill_push(&w->items)))
			return -ENOMEM;
		*it = (struct hitem){.t0 = report_time(rs, r[i].start),
				     .thread = r[i].thread_id,
				     .what = what,
				     .source = (uint8_t)r[i].subkind,
				     .state = (uint8_t)r[i].value};
		it->t1 = r[i].end > r[i].start ? report_time(rs, r[i].end) : it->t0;
		it->id = what == H_API ? r[i].name_id : what == H_OSRT ? r[i].cbid : r[i].stack_id;
		it->torn = (r[i].flags & TALLY_REC_TORN) != 0;
	}
	return 0;
}

/* An event's end for the sweep: an instant (a sample) ends one past its start, so that it
 * overlaps a hole it lies in. */
static uint64_t end_of(const struct hitem *it)
{
	return it->t1 > it->t0 ? it->t1 : it->t0 + 1;
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

/* A sample's observation: the time it stands for was found with the hole's others (overlapping). */
static int sample_obs(struct idle_why *w, const struct hitem *it, uint64_t ns)
{
	bool python = it->source == TALLY_SAMPLE_PYTHON;

	return add_obs(w, it->thread, python ? WHY_PYTHON : WHY_NATIVE, python ? it->state : 0,
		       it->torn ? 0 : it->id, ns);
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

/* One observation of the i-th active event in hole h, by kind. */
static int observe(struct idle_why *w, size_t i, const struct hole_ref *h)
{
	const struct hitem *it = &w->active[i];
	uint64_t ns = (it->t1 < h->t1 ? it->t1 : h->t1) - (it->t0 > h->t0 ? it->t0 : h->t0);

	if (it->what == H_SAMPLE)
		return sample_obs(w, it, w->active_ns[i]);
	return it->what == H_API ? api_obs(w, it, ns) : osrt_obs(w, it, ns);
}

static const struct hitem *sort_active; /* qsort has no context */

static int by_thread_start(const void *a, const void *b)
{
	const struct hitem *x = &sort_active[*(const size_t *)a],
			   *y = &sort_active[*(const size_t *)b];

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->source != y->source) /* a thread's Python and native samples: two series */
		return x->source < y->source ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/*
 * The time each active sample stands for in hole h: its thread's time from it to the next sample
 * of the same thread and source, at most its own duration (a sampling period where it has none),
 * and only its part inside the hole (a sample taken just before the hole stands for the hole's
 * first moments); so a thread's samples of one source in a hole add up to no more than the hole,
 * however the sampler's ticks jittered.  The next sample that matters starts before the hole's
 * end, so it is one of the hole's.
 */
static int samples_ns(struct idle_why *w, const struct hole_ref *h)
{
	size_t i, n = 0, *ix;

	if (!tally_grow_in((void **)&w->active_ns, &w->active_ns_cap, w->nactive + 1,
			   sizeof(*w->active_ns)))
		return -ENOMEM;
	if (!(ix = malloc((w->nactive + 1) * sizeof(*ix))))
		return -ENOMEM;
	for (i = 0; i < w->nactive; i++)
		if (w->active[i].what == H_SAMPLE)
			ix[n++] = i;
	sort_active = w->active;
	if (n > 1)
		qsort(ix, n, sizeof(*ix), by_thread_start);
	for (i = 0; i < n; i++) {
		const struct hitem *it = &w->active[ix[i]],
				   *next = &w->active[ix[i + 1 < n ? i + 1 : i]];
		uint64_t end = it->t0 + (it->t1 > it->t0 ? it->t1 - it->t0 : w->period);

		if (i + 1 < n && next->thread == it->thread && next->source == it->source &&
		    next->t0 < end)
			end = next->t0;
		uint64_t start = it->t0 > h->t0 ? it->t0 : h->t0;

		end = end < h->t1 ? end : h->t1;
		w->active_ns[ix[i]] = end > start ? end - start : 0;
	}
	free(ix);
	return 0;
}

/* The events overlapping hole h: those started before its end (the spill, by start, taken up to
 * there) and not ended before its start (the others leave the sweep for good: every hole after
 * starts later).  1 when the section's budget ran out. */
static int overlapping(struct idle_why *w, const struct hole_ref *h, const struct hitem **next)
{
	size_t i, keep = 0;
	int rc;

	while (*next && (*next)->t0 < h->t1) {
		if (end_of(*next) > h->t0) {
			if (!tally_grow_in((void **)&w->active, &w->active_cap, w->nactive + 1,
					   sizeof(*w->active)))
				return -ENOMEM;
			w->active[w->nactive++] = **next;
		}
		*next = spill_next(&w->items);
	}
	for (i = 0; i < w->nactive; i++)
		if (end_of(&w->active[i]) > h->t0)
			w->active[keep++] = w->active[i];
	w->nactive = keep;
	if ((rc = samples_ns(w, h)) < 0)
		return rc;
	for (i = 0; i < w->nactive; i++) {
		if (--w->budget < 0)
			return 1;
		if ((rc = observe(w, i, h)) != 0)
			return rc;
	}
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

static int explain(struct idle_why *w, struct report_section *rs, struct hole_ref *h,
		   const struct hitem **next)
{
	const struct report_idle_gap *ig;
	struct why_row *row;
	size_t n, i;
	int rc = 0;

	ig = report_idle_gaps(w->idle, &n) + h->gap;
	h->first_row = w->nrows;
	if (!(row = new_row(w)))
		return -ENOMEM;
	row->gap = h->gap;
	row->what = WHY_GAP;
	row->count = 1;
	row->ns = ig->gap.t1 - ig->gap.t0;
	w->nobs = 0;
	if (w->budget < 0 || (rc = overlapping(w, h, next)) != 0) {
		if (rc < 0)
			return rc;
		w->rows[h->first_row].unexamined = true; /* the budget ran out: not a part of it */
		h->nrows = 1;
		return 0;
	}
	if (!tally_grow_in((void **)&w->waited, &w->waited_cap, (size_t)h->gap + 1, 1))
		return -ENOMEM;
	w->waited[h->gap] = ig->launch_known && waited_on_data(w, rs, ig);
	n = w->nrows;
	if ((rc = obs_rows(w, h->gap)) != 0)
		return rc;
	for (i = n; i < w->nrows; i++)
		if (w->rows[i].what == WHY_CUDA)
			w->rows[i].sync = idle_is_sync_call(report_string(rs, w->rows[i].id));
	h->nrows = w->nrows - h->first_row;
	return 0;
}

static int by_hole_start(const void *a, const void *b)
{
	const struct hole_ref *x = a, *y = b;

	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	return x->gap < y->gap ? -1 : x->gap > y->gap;
}

static int by_hole_gap(const void *a, const void *b)
{
	const struct hole_ref *x = a, *y = b;

	return x->gap < y->gap ? -1 : x->gap > y->gap;
}

/* The section's listed holes [from, to), each explained in a sweep by start; then their rows in
 * the holes' order. */
static int explain_all(struct idle_why *w, struct report_section *rs, size_t from, size_t to)
{
	const struct report_idle_gap *ig = report_idle_gaps(w->idle, &(size_t){0});
	const struct hitem *next;
	size_t i, base = w->nrows, k;
	struct why_row *sorted;
	int rc = 0;

	w->nholes = 0;
	w->nactive = 0;
	for (i = from; i < to; i++) {
		if (!tally_grow_in((void **)&w->holes, &w->holes_cap, w->nholes + 1,
				   sizeof(*w->holes)))
			return -ENOMEM;
		w->holes[w->nholes++] =
		    (struct hole_ref){ig[i].gap.t0, ig[i].gap.t1, (uint32_t)i, 0, 0};
	}
	if (w->nholes == 0)
		return 0;
	qsort(w->holes, w->nholes, sizeof(*w->holes), by_hole_start);
	if ((rc = spill_rewind(&w->items)) < 0)
		return rc;
	next = spill_next(&w->items);
	for (i = 0; rc == 0 && i < w->nholes; i++)
		rc = explain(w, rs, &w->holes[i], &next);
	if (rc == 0 && w->items.err)
		rc = -w->items.err;
	if (rc < 0 || w->nrows == base)
		return rc;
	qsort(w->holes, w->nholes, sizeof(*w->holes), by_hole_gap);
	if (!(sorted = malloc((w->nrows - base) * sizeof(*sorted))))
		return -ENOMEM;
	for (i = 0, k = 0; i < w->nholes; i++) {
		memcpy(sorted + k, w->rows + w->holes[i].first_row,
		       w->holes[i].nrows * sizeof(*sorted));
		k += w->holes[i].nrows;
	}
	memcpy(w->rows + base, sorted, k * sizeof(*sorted));
	free(sorted);
	return 0;
}

/* ---- gpu_idle_breakdown's stacks --------------------------------------------------------------
 */

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

/* ---- shares of holes the GPU metrics may show busy ---------------------------------------------
 */

/* What one thread's samples of one stack (or its launch) in one hole gave the stacks (threads). */
struct hole_share {
	unsigned section;
	uint32_t device;
	uint64_t hole_t0;
	uint64_t thread;
	uint8_t source, state;
	uint32_t stack;
	uint64_t count, ns;
	bool launch; /* launched_ns of the thread's why_thread, not samples */
};

/* Only a section with GPU metrics can have a hole classed busy outside the trace (gaps.h). */
static bool keeps_shares(const struct report_section *rs)
{
	return rs->s->ngpu_metrics || rs->s->gpu_metrics_asked;
}

static bool same_share(const struct hole_share *a, const struct hole_share *b)
{
	return a->section == b->section && a->device == b->device && a->hole_t0 == b->hole_t0 &&
	       a->thread == b->thread && a->source == b->source && a->state == b->state &&
	       a->stack == b->stack && a->launch == b->launch;
}

struct share_lookup {
	const struct idle_why *w;
	const struct hole_share *s;
};

static bool share_is(void *ctx, uint32_t value)
{
	const struct share_lookup *l = ctx;

	return same_share(&l->w->shares[value - 1], l->s);
}

static uint64_t share_hash(const struct hole_share *s)
{
	return tally_hash_pair(tally_hash_pair(tally_key32(s->section, s->device), s->hole_t0),
			       tally_hash_pair(s->thread, (uint64_t)s->launch << 48 |
							      (uint64_t)s->source << 40 |
							      (uint64_t)s->state << 32 | s->stack));
}

/* Add s's count and ns to its share.  0 or -ENOMEM. */
static int add_share(struct idle_why *w, const struct hole_share *s)
{
	struct share_lookup l = {w, s};
	uint64_t h = share_hash(s);
	uint32_t at = tally_map_find(&w->share_at, h, share_is, &l);

	if (!at) {
		if (!tally_grow_in((void **)&w->shares, &w->shares_cap, w->nshares + 1,
				   sizeof(*w->shares)) ||
		    tally_map_add(&w->share_at, h, (uint32_t)w->nshares + 1) < 0)
			return -ENOMEM;
		w->shares[w->nshares] = *s;
		w->shares[w->nshares].count = w->shares[w->nshares].ns = 0;
		at = (uint32_t)++w->nshares;
	}
	w->shares[at - 1].count += s->count;
	w->shares[at - 1].ns += s->ns;
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
		if (k >= nt || !g[i].launch_known || g[i].cls != t[k].sampled_class)
			continue;
		if (!(wt = thread_in(w, rs->index, g[i].gap.device,
				     api_thread(w, g[i].launch_thread))))
			return -ENOMEM;
		wt->launched_ns += g[i].gap.t1 - g[i].gap.t0;
		if (keeps_shares(rs) &&
		    add_share(w, &(struct hole_share){.section = rs->index,
						      .device = g[i].gap.device,
						      .hole_t0 = g[i].gap.t0,
						      .thread = wt->thread,
						      .launch = true,
						      .ns = g[i].gap.t1 - g[i].gap.t0}) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A sample of the largest holes whose next sample of its thread is not known yet: in which
 * device's holes it lies, ending where. */
struct pending {
	struct hitem it;
	uint32_t *device;
	uint64_t *start, *end; /* the hole's */
	size_t n, cap, start_cap, end_cap;
};

/* The stacks of the largest holes, counted as they come: (device, thread, source, state, stack)
 * -> stacks index + 1. */
struct stack_count {
	struct tally_map at;
	struct pending *pend; /* by thread */
	size_t npend, pend_cap;
	struct tally_map pend_of; /* thread -> pend index + 1 */
};

/* Pending sample p, its thread's next sample at next (UINT64_MAX: none), into the counts. */
static int settle(struct idle_why *w, struct stack_count *c, const struct report_section *rs,
		  struct pending *p, uint64_t next)
{
	bool python = p->it.source == TALLY_SAMPLE_PYTHON;
	uint8_t source = python ? WHY_PYTHON : WHY_NATIVE;
	uint8_t state = python ? p->it.state : TALLY_THREAD_ON_CPU; /* native: CPU time */
	uint32_t stack = p->it.torn ? 0 : p->it.id;
	size_t k;

	for (k = 0; k < p->n; k++) {
		uint64_t key0 = tally_key32(p->device[k], p->it.thread);
		uint64_t key1 = (uint64_t)source << 40 | (uint64_t)state << 32 | stack;
		uint64_t end = p->it.t0 + w->period;
		uint32_t at = tally_map_get(&c->at, key0, key1);

		end = next < end ? next : end;
		end = p->end[k] < end ? p->end[k] : end;
		if (!at) {
			if (!tally_grow_in((void **)&w->stacks, &w->stacks_cap, w->nstacks + 1,
					   sizeof(*w->stacks)) ||
			    tally_map_put(&c->at, key0, key1, (uint32_t)w->nstacks + 1) < 0)
				return -ENOMEM;
			w->stacks[w->nstacks] = (struct why_stack){.section = rs->index,
								   .device = p->device[k],
								   .thread = p->it.thread,
								   .source = source,
								   .state = state,
								   .stack = stack};
			at = (uint32_t)++w->nstacks;
		}
		w->stacks[at - 1].count++;
		w->stacks[at - 1].ns += end > p->it.t0 ? end - p->it.t0 : 0;
		if (keeps_shares(rs) &&
		    add_share(w, &(struct hole_share){.section = rs->index,
						      .device = p->device[k],
						      .hole_t0 = p->start[k],
						      .thread = p->it.thread,
						      .source = source,
						      .state = state,
						      .stack = stack,
						      .count = 1,
						      .ns = end > p->it.t0 ? end - p->it.t0 : 0}) <
			0)
			return -ENOMEM;
	}
	p->n = 0;
	return 0;
}

/* A sample, in the sweep: the one of its thread before it settles; it waits, in its holes. */
static int take_sample(struct idle_why *w, struct stack_count *c, const struct report_section *rs,
		       const struct hitem *it, const struct report_idle_span *open, size_t nopen)
{
	uint32_t k = tally_map_get(&c->pend_of, it->thread, 0);
	struct pending *p;
	size_t i;
	int rc;

	if (!k) {
		if (!tally_grow_in((void **)&c->pend, &c->pend_cap, c->npend + 1,
				   sizeof(*c->pend)) ||
		    tally_map_put(&c->pend_of, it->thread, 0, (uint32_t)c->npend + 1) < 0)
			return -ENOMEM;
		memset(&c->pend[c->npend], 0, sizeof(*c->pend));
		k = (uint32_t)++c->npend;
	}
	p = &c->pend[k - 1];
	if (p->n && (rc = settle(w, c, rs, p, it->t0)) < 0)
		return rc;
	p->it = *it;
	for (i = 0; i < nopen; i++) {
		if (!tally_grow_in((void **)&p->device, &p->cap, p->n + 1, sizeof(*p->device)) ||
		    !tally_grow_in((void **)&p->start, &p->start_cap, p->n + 1,
				   sizeof(*p->start)) ||
		    !tally_grow_in((void **)&p->end, &p->end_cap, p->n + 1, sizeof(*p->end)))
			return -ENOMEM;
		p->device[p->n] = open[i].device;
		p->start[p->n] = open[i].t0;
		p->end[p->n++] = open[i].t1;
	}
	return 0;
}

/*
 * The stacks sampled in the holes of each device's largest class (sorted by start, each device's
 * disjoint), the top few per device and thread: one sweep of the samples by start over those
 * holes, each sample standing for its thread's time to its next sample (a period at most, within
 * the hole), counted in a map: memory follows the stacks, not the samples.
 */
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
	const struct report_idle_span *sp;
	size_t nsp, k = 0, first = w->nstacks, i, keep, nopen = 0, ocap = 0;
	struct report_idle_span *open = NULL;
	struct stack_count c = {0};
	const struct hitem *it;
	int rc;

	sp = report_idle_largest_holes(w->idle, &nsp);
	if (!nsp)
		return 0;
	if ((rc = spill_rewind(&w->items)) < 0)
		return rc;
	while (rc == 0 && (it = spill_next(&w->items))) {
		if (it->what != H_SAMPLE)
			continue;
		for (; rc == 0 && k < nsp && sp[k].t0 <= it->t0; k++)
			if (!tally_grow_in((void **)&open, &ocap, nopen + 1, sizeof(*open)))
				rc = -ENOMEM;
			else
				open[nopen++] = sp[k];
		for (i = 0, keep = 0; i < nopen; i++)
			if (open[i].t1 > it->t0)
				open[keep++] = open[i];
		nopen = keep;
		if (rc == 0)
			rc = take_sample(w, &c, rs, it, open, nopen);
	}
	if (rc == 0 && w->items.err)
		rc = -w->items.err;
	for (i = 0; rc == 0 && i < c.npend; i++)
		if (c.pend[i].n)
			rc = settle(w, &c, rs, &c.pend[i], UINT64_MAX);
	for (i = 0; i < c.npend; i++) {
		free(c.pend[i].device);
		free(c.pend[i].start);
		free(c.pend[i].end);
	}
	free(c.pend);
	free(open);
	tally_map_fini(&c.at);
	tally_map_fini(&c.pend_of);
	if (rc < 0)
		return rc;
	if (w->nstacks - first > 1)
		qsort(w->stacks + first, w->nstacks - first, sizeof(*w->stacks), by_stack_weight);
	if ((rc = keep_top_stacks(w, first)) != 0)
		return rc;
	for (i = first; i < w->nstacks; i++)
		w->stacks[i].by_design =
		    by_design((struct report_section *)rs, &w->stacks[i], &w->waits);
	return 0;
}

int idle_why_section(struct idle_why *w, struct report_section *rs)
{
	size_t n;
	int rc;

	free(w->threads);
	w->threads = tally_section_threads(rs->s, &w->nthreads);
	w->pid = (uint32_t)rs->s->pid;
	w->rs = rs;
	w->last_cupti_set = false;
	w->period = idle_why_period(rs);
	if ((rc = spill_sort(&w->items)) < 0)
		return rc;
	w->budget = (int64_t)OVERLAPS_PER_EVENT * (int64_t)spill_count(&w->items) + OVERLAPS_MIN;
	report_idle_gaps(w->idle, &n);
	rc = w->want_rows ? explain_all(w, rs, w->gaps_done, n) : 0;
	if (rc == 0)
		rc = largest_stacks(w, rs);
	if (rc == 0)
		rc = launchers(w, rs, w->gaps_done);
	w->gaps_done = n;
	spill_fini(&w->items); /* the next section's, empty */
	spill_init(&w->items, sizeof(struct hitem), 0, by_start);
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
		if (g[i].cls != t->sampled_class)
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

/* The least share of its samples a thread's top stack must hold in the gaps to be named as the
 * work the launching thread waited on: below it the thread did nothing there worth naming. */
#define PRODUCER_MIN_PCT 10.0

/* Whether the other thread's top stack in the gaps may be named as their cause: on the CPU there
 * for a share worth naming, and not a wait by design (a queue's feeder thread waiting in
 * Condition.wait was once named "on the CPU", with 0% of its samples). */
static bool names_producer(struct report_section *rs, const struct why_stack *s,
			   const struct why_thread *o)
{
	struct wait_cache waits = {0};
	bool ok = share(s->count, o->samples) >= PRODUCER_MIN_PCT && !by_design(rs, s, &waits);

	wait_cache_fini(&waits);
	return ok;
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
	if (!names_producer(rs, s, o))
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
	/* the threads' samples explain the class they were gathered in, no other */
	if (x->why && rs && used > 0 && (size_t)used < len && big == t->sampled_class)
		cause_threads(x, rs, device, buf, len);
	return buf;
}

/* ---- holes the GPU metrics show busy -----------------------------------------------------------
 */

/* What identifies a stack of the breakdown, as a share without its hole. */
static struct hole_share stack_identity(const struct why_stack *s)
{
	return (struct hole_share){.section = s->section,
				   .device = s->device,
				   .thread = s->thread,
				   .source = s->source,
				   .state = s->state,
				   .stack = s->stack};
}

struct stack_lookup {
	const struct why_stack *stacks;
	const struct hole_share *id;
};

static bool stack_is(void *ctx, uint32_t value)
{
	const struct stack_lookup *l = ctx;
	struct hole_share id = stack_identity(&l->stacks[value - 1]);

	return same_share(&id, l->id);
}

static int by_section_then_weight(const void *a, const void *b)
{
	const struct why_stack *x = a, *y = b;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	return by_stack_weight(a, b);
}

/* A thread's samples of one source in busy holes, by (section, device; source, tid): samples'
 * threads are kernel tids, below 2^32. */
static uint64_t of_key(uint64_t thread, uint8_t source)
{
	return (uint64_t)source << 40 | thread;
}

/* Share x, of a busy hole, out of its thread's figures and (found through at) its stack's. */
static int unshare(struct idle_why *w, const struct hole_share *x, const struct tally_map *at,
		   struct tally_map *of_at, uint64_t **of_gone, size_t *nof, size_t *of_cap)
{
	uint32_t t =
	    tally_map_get(&w->threads_in_map, tally_key32(x->section, x->device), x->thread);
	struct why_thread *th = t ? &w->threads_in[t - 1] : NULL;
	struct hole_share id = *x;
	struct stack_lookup l = {w->stacks, &id};
	uint32_t k, o;

	if (x->launch) {
		if (th)
			th->launched_ns = th->launched_ns > x->ns ? th->launched_ns - x->ns : 0;
		return 0;
	}
	if (th) {
		th->samples = th->samples > x->count ? th->samples - x->count : 0;
		if (x->state == TALLY_THREAD_ON_CPU)
			th->on_cpu = th->on_cpu > x->count ? th->on_cpu - x->count : 0;
	}
	id.hole_t0 = id.count = id.ns = 0;
	if ((k = tally_map_find(at, share_hash(&id), stack_is, &l))) {
		struct why_stack *s = &w->stacks[k - 1];

		s->count = s->count > x->count ? s->count - x->count : 0;
		s->ns = s->ns > x->ns ? s->ns - x->ns : 0;
	}
	o = tally_map_get(of_at, tally_key32(x->section, x->device), of_key(x->thread, x->source));
	if (!o) {
		if (!tally_grow_in((void **)of_gone, of_cap, *nof + 1, sizeof(**of_gone)) ||
		    tally_map_put(of_at, tally_key32(x->section, x->device),
				  of_key(x->thread, x->source), (uint32_t)*nof + 1) < 0)
			return -ENOMEM;
		o = (uint32_t)++ * nof;
	}
	(*of_gone)[o - 1] += x->count;
	return 0;
}

/* The stacks left, each's share of its thread's samples less those of the busy holes. */
static void restack(struct idle_why *w, const struct tally_map *of_at, const uint64_t *of_gone)
{
	size_t i, out = 0;

	for (i = 0; i < w->nstacks; i++) {
		struct why_stack *s = &w->stacks[i];
		uint32_t o = s->process ? 0
					: tally_map_get(of_at, tally_key32(s->section, s->device),
							of_key(s->thread, s->source));

		if (o)
			s->of = s->of > of_gone[o - 1] ? s->of - of_gone[o - 1] : 0;
		if (s->count)
			w->stacks[out++] = *s;
	}
	w->nstacks = out;
	if (out > 1)
		qsort(w->stacks, out, sizeof(*w->stacks), by_section_then_weight);
}

int idle_why_drop_outside(struct idle_why *w)
{
	struct tally_map busy = {0}, at = {0}, of_at = {0};
	uint64_t *of_gone = NULL;
	size_t ngaps, i, nbusy = 0, nof = 0, of_cap = 0;
	const struct report_idle_gap *g = report_idle_gaps(w->idle, &ngaps);
	int rc = 0;

	for (i = 0; rc == 0 && i < ngaps; i++)
		if (report_gap_class(&g[i].gap) == GAP_BUSY_OUTSIDE && ++nbusy)
			rc = tally_map_put(&busy, tally_key32(g[i].gap.section, g[i].gap.device),
					   g[i].gap.t0, 1);
	for (i = 0; rc == 0 && nbusy && i < w->nstacks; i++) {
		struct hole_share id = stack_identity(&w->stacks[i]);

		if (!w->stacks[i].process)
			rc = tally_map_add(&at, share_hash(&id), (uint32_t)i + 1);
	}
	for (i = 0; rc == 0 && nbusy && i < w->nshares; i++)
		if (tally_map_get(&busy, tally_key32(w->shares[i].section, w->shares[i].device),
				  w->shares[i].hole_t0))
			rc = unshare(w, &w->shares[i], &at, &of_at, &of_gone, &nof, &of_cap);
	if (rc == 0 && nbusy)
		restack(w, &of_at, of_gone);
	free(of_gone);
	tally_map_fini(&busy);
	tally_map_fini(&at);
	tally_map_fini(&of_at);
	return rc < 0 ? -ENOMEM : 0;
}
