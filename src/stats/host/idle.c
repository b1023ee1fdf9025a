/* SPDX-License-Identifier: MIT */
/* Idle gaps classed as host wait, kernel wait or other; see idle.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idle.h"
#include "spans.h"
#include "spill.h"
#include "units.h"

#define DEFAULT_LIST_MIN_NS 1000000ull

/* A call that launched GPU work, kept while its section is read (in a spill: a process of 50
 * million launches must not hold them all in memory). */
struct launch {
	uint64_t start, dur; /* aligned start */
	uint32_t corr, thread, name;
};

/* A hole of the section being closed, before its launch is known: the holes come in time order,
 * a device at a time; their launches are found by correlation id, all at once, in one merge of
 * the holes sorted by id with the launches sorted by id. */
struct pending {
	struct report_gap gap;
	size_t seq; /* its place in the order the holes came */
	struct launch l;
	bool known;
};

/* A device of the section being read: the start of its first work and the end of its last. */
struct dev_bound {
	uint32_t device;
	uint64_t first, last;
};

/* The holes shorter than list_min of one stretch of a device's work (the stretch runs from the
 * end of a listed hole, or the device's first work, to the start of the next listed hole, or its
 * last work's end): their idle time by class, unproven or not as the stretch is. */
struct short_run {
	bool open;
	uint32_t device;
	uint64_t from;
	uint64_t ns[IDLE_CLASSES];
};

struct report_idle {
	struct report_idle_opts o;
	struct report_gpu_gaps *gaps;	 /* every hole of every device (gap_min 1 ns) */
	const struct report_section *rs; /* the section being closed */
	struct spill launch;		 /* by correlation id */
	struct pending *pend;
	size_t npend, pend_cap;
	struct report_idle_hole *holes;
	size_t nholes, holes_cap;
	struct report_idle_span *largest;
	size_t nlargest, largest_cap;
	struct report_idle_gap *list;
	size_t nlist, list_cap;
	struct report_idle_total *tot;
	size_t ntot, tot_cap;
	/* the section's synchronizing calls, as their union; their names by string id: 0 not yet
	 * looked at, 1 not synchronizing, 2 synchronizing */
	struct span_set sync;
	uint8_t *sync_name;
	size_t sync_name_cap;
	struct dev_bound *dev; /* the section's devices */
	size_t ndev, dev_cap;
	struct short_run run;
};

static const char *const class_names[IDLE_CLASSES] = {"host wait", "kernel wait", "other"};

const char *idle_class_name(enum idle_class c)
{
	return c < IDLE_CLASSES ? class_names[c] : "?";
}

static int on_hole(void *ctx, const struct report_gap *g);

static int by_corr(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

struct report_idle *report_idle_new(const struct report_idle_opts *o)
{
	struct report_idle *x = calloc(1, sizeof(*x));
	struct report_gaps_opts go = {.gap_min_ns = 1, .devices_only = true, .each = on_hole};

	if (!x)
		return NULL;
	if (o)
		x->o = *o;
	if (!x->o.list_min_ns)
		x->o.list_min_ns = DEFAULT_LIST_MIN_NS;
	go.each_ctx = x;
	if (!(x->gaps = report_gpu_gaps_new(&go))) {
		free(x);
		return NULL;
	}
	spill_init(&x->launch, sizeof(struct launch), 0, by_corr);
	return x;
}

void report_idle_free(struct report_idle *x)
{
	if (!x)
		return;
	report_gpu_gaps_free(x->gaps);
	spill_fini(&x->launch);
	free(x->pend);
	free(x->holes);
	free(x->largest);
	free(x->list);
	free(x->tot);
	span_set_fini(&x->sync);
	free(x->sync_name);
	free(x->dev);
	free(x);
}

bool idle_is_sync_call(const char *name)
{
	static const char *const copy[] = {"cudaMemcpy", "cuMemcpy"};
	size_t i;

	if (strstr(name, "Synchronize"))
		return true;
	for (i = 0; i < 2; i++)
		if (strncmp(name, copy[i], strlen(copy[i])) == 0 && !strstr(name, "Async"))
			return true;
	return false;
}

/* Whether API call r waits for the GPU (its name looked at once per section and string id). */
static int sync_call(struct report_idle *x, const struct report_section *rs,
		     const struct tally_record *r)
{
	size_t cap = x->sync_name_cap;

	if (!tally_grow_in((void **)&x->sync_name, &cap, (size_t)r->name_id + 1, 1))
		return -ENOMEM;
	if (cap > x->sync_name_cap)
		memset(x->sync_name + x->sync_name_cap, 0, cap - x->sync_name_cap);
	x->sync_name_cap = cap;
	if (!x->sync_name[r->name_id]) {
		const char *name = report_string((struct report_section *)rs, r->name_id);

		x->sync_name[r->name_id] = idle_is_sync_call(name) ? 2 : 1;
	}
	return x->sync_name[r->name_id] == 2;
}

/* A synchronizing call is kept as a span: a hole that begins inside one followed a sync. */
static int add_sync(struct report_idle *x, const struct report_section *rs,
		    const struct tally_record *r)
{
	int rc = sync_call(x, rs, r);

	if (rc <= 0 || r->end < r->start)
		return rc;
	return span_add(&x->sync, report_time(rs, r->start), report_time(rs, r->end), 0);
}

static struct dev_bound *bound_of(struct report_idle *x, uint32_t device)
{
	size_t i;

	for (i = 0; i < x->ndev; i++)
		if (x->dev[i].device == device)
			return &x->dev[i];
	if (!tally_grow_in((void **)&x->dev, &x->dev_cap, x->ndev + 1, sizeof(*x->dev)))
		return NULL;
	x->dev[x->ndev] = (struct dev_bound){device, UINT64_MAX, 0};
	return &x->dev[x->ndev++];
}

/* Each device's first start and last end, as gaps.c takes GPU records' times. */
static int bounds_add(struct report_idle *x, const struct report_section *rs,
		      const struct tally_record *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct dev_bound *b;
		uint64_t t0 = report_time(rs, r[i].start), t1 = report_time(rs, r[i].end);

		if (r[i].flags & TALLY_REC_BAD_TIME)
			continue;
		if (!(b = bound_of(x, r[i].device_id)))
			return -ENOMEM;
		b->first = t0 < b->first ? t0 : b->first;
		b->last = t1 > b->last ? t1 : b->last;
	}
	return 0;
}

int report_idle_add(struct report_idle *x, const struct report_section *rs,
		    const struct tally_record *r, size_t n)
{
	struct launch *l;
	size_t i;

	if (!n)
		return 0;
	if (tally_kind_is_gpu(r[0].kind)) {
		if (bounds_add(x, rs, r, n) < 0)
			return -ENOMEM;
		return report_gpu_gaps_add(x->gaps, rs, r, n);
	}
	if (!tally_kind_is_api(r[0].kind))
		return 0;
	for (i = 0; i < n; i++) {
		if (r[i].flags & TALLY_REC_BAD_TIME)
			continue;
		/* a blocking copy launches work and waits for the GPU: both */
		if (add_sync(x, rs, &r[i]) < 0)
			return -ENOMEM;
		if (!(r[i].flags & TALLY_REC_LAUNCH))
			continue;
		if (!r[i].correlation_id)
			continue;
		if (!(l = spill_push(&x->launch)))
			return -ENOMEM;
		*l = (struct launch){
		    .start = report_time(rs, r[i].start),
		    .dur = r[i].end >= r[i].start ? r[i].end - r[i].start : 0,
		    .corr = r[i].correlation_id,
		    .thread = r[i].thread_id,
		    .name = r[i].name_id,
		};
	}
	return 0;
}

/* ---- the rule ------------------------------------------------------------------------------ */

static enum idle_class classify(const struct report_idle *x, const struct report_gap *g,
				const struct launch *l, char *why, size_t len)
{
	uint64_t hole = g->t1 - g->t0, limit;
	char a[32], b[32], who[96];
	const char *name;

	if (!l) {
		snprintf(why, len,
			 "the call that launched the work after it (correlation %" PRIu32
			 ") was not recorded",
			 g->next_corr);
		return IDLE_OTHER;
	}
	name = report_string((struct report_section *)x->rs, l->name);
	if (l->start > g->t0) {
		tally_fmt_ns(a, sizeof(a), l->start - g->t0);
		snprintf(why, len,
			 "nothing was submitted: %s on %s began %s after the GPU went idle", name,
			 report_thread_label(x->rs, l->thread, true, who, sizeof(who)), a);
		return IDLE_HOST_WAIT;
	}
	limit = x->o.kernel_wait_ns ? x->o.kernel_wait_ns : l->dur;
	tally_fmt_ns(a, sizeof(a), g->t0 - l->start);
	tally_fmt_ns(b, sizeof(b), limit);
	if (hole < limit) {
		snprintf(why, len,
			 "submitted %s before (%s); the hole is shorter than %s, %s: the GPU's "
			 "own latency between back-to-back work",
			 a, name, b,
			 x->o.kernel_wait_ns ? "--kernel-wait" : "that launch's own cost");
		return IDLE_KERNEL_WAIT;
	}
	snprintf(why, len,
		 "submitted %s before (%s) yet started later: the work waited on something else "
		 "(an event, another stream, a copy)",
		 a, name);
	return IDLE_OTHER;
}

static struct report_idle_total *total_of(struct report_idle *x, unsigned sec, uint32_t device)
{
	size_t i;

	for (i = x->ntot; i-- > 0 && x->tot[i].section == sec;)
		if (x->tot[i].device == device)
			return &x->tot[i];
	if (!tally_grow_in((void **)&x->tot, &x->tot_cap, x->ntot + 1, sizeof(*x->tot)))
		return NULL;
	x->tot[x->ntot] = (struct report_idle_total){.section = sec, .device = device};
	return &x->tot[x->ntot++];
}

/*
 * The short holes of a stretch are unproven as the stretch is, by gpu_gaps' rule over the whole
 * stretch: the rule gpu_time_breakdown applies to the idle inside its stretches, so that both
 * reports give one unproven figure.
 */
static int close_run(struct report_idle *x, uint64_t to)
{
	struct short_run *run = &x->run;
	struct report_idle_total *t;
	char why[120];
	unsigned c;

	if (!run->open)
		return 0;
	run->open = false;
	if (!(t = total_of(x, x->rs->index, run->device)))
		return -ENOMEM;
	if (report_gap_unproven(x->rs, run->from, to, why, sizeof(why)))
		for (c = 0; c < IDLE_CLASSES; c++)
			t->unproven[c] += run->ns[c];
	return 0;
}

static uint64_t device_edge(struct report_idle *x, uint32_t device, bool last)
{
	size_t i;

	for (i = 0; i < x->ndev; i++)
		if (x->dev[i].device == device)
			return last ? x->dev[i].last : x->dev[i].first;
	return 0;
}

/* Hole g in the stretches of its device (holes come in time order, a device at a time): a
 * short one joins its stretch's run; a listed one closes it and opens the next. */
static int run_hole(struct report_idle *x, const struct report_gap *g, enum idle_class cls)
{
	struct short_run *run = &x->run;
	uint64_t len = g->t1 - g->t0;

	if (run->open && run->device != g->device &&
	    close_run(x, device_edge(x, run->device, true)) < 0)
		return -ENOMEM;
	if (!run->open)
		*run = (struct short_run){true, g->device, device_edge(x, g->device, false), {0}};
	if (len < x->o.list_min_ns) {
		run->ns[cls] += len;
		return 0;
	}
	if (close_run(x, g->t0) < 0)
		return -ENOMEM;
	*run = (struct short_run){true, g->device, g->t1, {0}};
	return 0;
}

/* A hole as it comes: kept until its launch is found (report_idle_section). */
static int on_hole(void *ctx, const struct report_gap *g)
{
	struct report_idle *x = ctx;

	if (!tally_grow_in((void **)&x->pend, &x->pend_cap, x->npend + 1, sizeof(*x->pend)))
		return -ENOMEM;
	x->pend[x->npend] = (struct pending){.gap = *g, .seq = x->npend};
	x->npend++;
	return 0;
}

static int by_next_corr(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->gap.next_corr != y->gap.next_corr)
		return x->gap.next_corr < y->gap.next_corr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Each pending hole's launch: the holes by correlation id against the launches by id (the first
 * launch of an id, when a trace repeats one). */
static int find_launches(struct report_idle *x)
{
	const struct launch *l = NULL;
	size_t i;
	int rc = spill_sort(&x->launch);

	if (rc < 0)
		return rc;
	if (x->npend > 1)
		qsort(x->pend, x->npend, sizeof(*x->pend), by_next_corr);
	l = spill_next(&x->launch);
	for (i = 0; i < x->npend && l; i++) {
		uint32_t corr = x->pend[i].gap.next_corr;

		while (l && l->corr < corr)
			l = spill_next(&x->launch);
		if (corr && l && l->corr == corr) {
			x->pend[i].l = *l;
			x->pend[i].known = true;
		}
	}
	if (x->launch.err)
		return -x->launch.err;
	if (x->npend > 1)
		qsort(x->pend, x->npend, sizeof(*x->pend), by_seq);
	return 0;
}

/* A hole with its launch: its class, the totals, the list. */
static int take_hole(struct report_idle *x, const struct report_gap *g, const struct launch *l)
{
	struct report_idle_gap one;
	enum idle_class cls = classify(x, g, l, one.why, sizeof(one.why));
	struct report_idle_total *t;

	/* the run first: closing it may add a total (t must be found after) */
	if (run_hole(x, g, cls) < 0 || !(t = total_of(x, g->section, g->device)) ||
	    !tally_grow_in((void **)&x->holes, &x->holes_cap, x->nholes + 1, sizeof(*x->holes)))
		return -ENOMEM;
	t->holes[cls]++;
	t->ns[cls] += g->t1 - g->t0;
	if (g->unproven && g->t1 - g->t0 >= x->o.list_min_ns)
		t->unproven[cls] += g->t1 - g->t0;
	if (span_find(&x->sync, g->t0))
		t->after_sync[cls] += g->t1 - g->t0;
	x->holes[x->nholes++] = (struct report_idle_hole){{g->t0, g->t1, g->device},
							  cls,
							  span_find(&x->sync, g->t0) != NULL,
							  l != NULL,
							  l ? l->thread : 0};
	if (g->t1 - g->t0 < x->o.list_min_ns)
		return 0;
	if (!tally_grow_in((void **)&x->list, &x->list_cap, x->nlist + 1, sizeof(*x->list)))
		return -ENOMEM;
	one.gap = *g;
	one.cls = cls;
	one.launch_known = l != NULL;
	one.launch_start = l ? l->start : 0;
	one.launch_dur = l ? l->dur : 0;
	one.launch_thread = l ? l->thread : 0;
	one.launch_name = l ? l->name : 0;
	one.after_sync = span_find(&x->sync, g->t0) != NULL;
	x->list[x->nlist++] = one;
	return 0;
}

enum idle_class report_idle_largest(const struct report_idle_total *t)
{
	enum idle_class best = IDLE_HOST_WAIT;
	unsigned c;

	for (c = 1; c < IDLE_CLASSES; c++)
		if (t->ns[c] > t->ns[best])
			best = (enum idle_class)c;
	return best;
}

static int by_span_start(const void *a, const void *b)
{
	const struct report_idle_span *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Keep the holes of each device's largest class, sorted by start. */
static int pick_largest(struct report_idle *x, size_t first_total)
{
	size_t i, k;

	x->nlargest = 0;
	for (k = first_total; k < x->ntot; k++)
		x->tot[k].sampled_class = (uint8_t)report_idle_largest(&x->tot[k]);
	for (i = 0; i < x->nholes; i++) {
		for (k = first_total; k < x->ntot && x->tot[k].device != x->holes[i].span.device;
		     k++)
			;
		if (k == x->ntot || x->holes[i].cls != x->tot[k].sampled_class)
			continue;
		if (!tally_grow_in((void **)&x->largest, &x->largest_cap, x->nlargest + 1,
				   sizeof(*x->largest)))
			return -ENOMEM;
		x->largest[x->nlargest++] = x->holes[i].span;
	}
	if (x->nlargest > 1)
		qsort(x->largest, x->nlargest, sizeof(*x->largest), by_span_start);
	return 0;
}

static int by_device(const void *a, const void *b)
{
	const struct report_idle_total *x = a, *y = b;

	return x->device < y->device ? -1 : x->device > y->device;
}

int report_idle_section(struct report_idle *x, const struct report_section *rs)
{
	size_t first_total = x->ntot, i;
	int rc;

	x->rs = rs;
	x->nholes = 0;
	x->npend = 0;
	rc = report_gpu_gaps_section(x->gaps, rs);
	if (rc == 0)
		rc = find_launches(x);
	for (i = 0; rc == 0 && i < x->npend; i++)
		rc = take_hole(x, &x->pend[i].gap, x->pend[i].known ? &x->pend[i].l : NULL);
	if (x->run.open)
		close_run(x, device_edge(x, x->run.device, true));
	x->rs = NULL;
	x->ndev = 0;
	spill_fini(&x->launch); /* the next section's, empty */
	spill_init(&x->launch, sizeof(struct launch), 0, by_corr);
	x->sync.n = 0;
	if (x->sync_name)
		memset(x->sync_name, 0, x->sync_name_cap);
	if (rc)
		return rc < 0 ? rc : -ENOMEM;
	if (x->ntot - first_total > 1)
		qsort(x->tot + first_total, x->ntot - first_total, sizeof(*x->tot), by_device);
	return pick_largest(x, first_total);
}

const struct report_idle_gap *report_idle_gaps(const struct report_idle *x, size_t *n)
{
	*n = x->nlist;
	return x->list;
}

struct report_idle_gap *report_idle_gaps_edit(struct report_idle *x, size_t *n)
{
	*n = x->nlist;
	return x->list;
}

const struct report_idle_total *report_idle_totals(const struct report_idle *x, size_t *n)
{
	*n = x->ntot;
	return x->tot;
}

struct report_idle_total *report_idle_totals_edit(struct report_idle *x, size_t *n)
{
	*n = x->ntot;
	return x->tot;
}

const struct report_idle_hole *report_idle_holes(const struct report_idle *x, size_t *n)
{
	*n = x->nholes;
	return x->holes;
}

const struct report_idle_span *report_idle_largest_holes(const struct report_idle *x, size_t *n)
{
	*n = x->nlargest;
	return x->largest;
}
