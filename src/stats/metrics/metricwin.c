/* SPDX-License-Identifier: MIT */
/*
 * GPU metrics over stretches of time (metricsum.h): device gaps, the busy time between them, and
 * NVTX ranges, taken in a second pass over the traces.  Each stretch is a window on the metrics
 * of a device (of its own section, or of the section that sampled the same GPU, by UUID); the
 * windows of a device are kept sorted by start with the largest end of every subtree (an interval
 * tree laid over the sorted array), so each sample finds the windows it overlaps in O(log n + k),
 * whatever the order samples come in.  Each window belongs to a group (a gap, a device's busy
 * time, an NVTX range name on a device), and each (group, metric series) pair has one running sum.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "hashmap.h"
#include "metricsum-int.h"

enum win_rule {
	WIN_OVERLAP, /* a sample counts for the time it overlaps the window */
	WIN_CONTAIN, /* a sample counts only when wholly inside the window (gaps) */
};

struct win {
	uint64_t t0, t1; /* aligned, [t0, t1) */
	uint32_t group;
	uint8_t rule;
};

/* The windows on one device's metrics (section, device of the samples). */
struct wset {
	uint64_t key; /* section << 32 | device, + 1 */
	struct win *v;
	size_t n, cap;
	uint64_t *maxend; /* per node of the tree over v (padded to 2^levels - 1) */
	unsigned levels;
};

struct acc {
	struct gm_wsum sum;
	uint64_t samples;
	int64_t max;
	struct wsketch *sk; /* NVTX groups only: their quantiles */
};

enum group_kind { G_GAP, G_BUSY, G_NVTX };

struct group {
	enum group_kind kind;
	uint32_t index;		/* gap index; busy: series index; nvtx: row slot */
	unsigned section;	/* the windows' owner (NVTX: its process) */
	uint32_t device, name;	/* its device; NVTX: the range name */
	uint64_t instances, ns; /* NVTX: the name's ranges in the section, and their time */
};

/* A section's device gaps of one device: a run of the gap list, in time order. */
struct run {
	unsigned section;
	uint32_t device;
	size_t from, n;
};

struct wpass {
	struct gm *g;
	const struct report_set *set;
	struct report_gap *const *gaps; /* the gaps to annotate */
	size_t ngaps;
	const struct report_gpu_gaps *gg; /* every device's gaps and span, or NULL */
	const struct report_gap *all;	  /* gg's gaps */
	size_t nall;
	struct run *runs;
	size_t nruns;
	struct wset *sets;
	size_t nsets, scap;
	struct tally_map set_of;  /* (section, device) -> sets index + 1 */
	struct tally_map run_of;  /* (section, device) -> runs index + 1 */
	struct tally_map span_of; /* (section, device) -> index + 1 in gg's span list */
	struct group *groups;
	size_t ngroups, gcap;
	struct acc *accs; /* in the order made */
	size_t nacc, acap;
	struct tally_map acc_at; /* (group, series) -> accs index + 1 */
	bool failed;
};

/* ---- windows and their tree --------------------------------------------------------------------
 */

static struct wset *wset_of(struct wpass *p, unsigned section, uint32_t device, bool make)
{
	uint64_t key = ((uint64_t)section << 32 | device) + 1;
	uint32_t k = tally_map_get(&p->set_of, section, device);
	struct wset *v;

	if (k)
		return &p->sets[k - 1];
	if (!make || !(v = tally_grow(p->sets, &p->scap, p->nsets + 1, sizeof(*v))) ||
	    tally_map_put(&p->set_of, section, device, (uint32_t)p->nsets + 1) < 0)
		return NULL;
	p->sets = v;
	v[p->nsets].key = key;
	return &v[p->nsets++];
}

static int add_window(struct wpass *p, unsigned section, uint32_t device, uint64_t t0, uint64_t t1,
		      uint32_t group, enum win_rule rule)
{
	struct wset *ws;
	struct win *v;

	if (t1 <= t0)
		return 0;
	if (!(ws = wset_of(p, section, device, true)))
		return -ENOMEM;
	if (!(v = tally_grow(ws->v, &ws->cap, ws->n + 1, sizeof(*v))))
		return -ENOMEM;
	ws->v = v;
	v[ws->n++] = (struct win){t0, t1, group, (uint8_t)rule};
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct win *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static uint64_t own_end(const struct wset *ws, size_t i)
{
	return i < ws->n ? ws->v[i].t1 : 0;
}

/* Node i of level k covers [i - 2^k + 1, i + 2^k - 1]; leaves are the even indexes. */
static int build_tree(struct wset *ws)
{
	size_t size, i, half;
	unsigned k;

	if (ws->n > 1)
		qsort(ws->v, ws->n, sizeof(*ws->v), by_start);
	for (ws->levels = 1; ((size_t)1 << ws->levels) - 1 < ws->n; ws->levels++)
		;
	size = ((size_t)1 << ws->levels) - 1;
	if (!(ws->maxend = calloc(size, sizeof(*ws->maxend))))
		return -ENOMEM;
	for (i = 0; i < size; i += 2)
		ws->maxend[i] = own_end(ws, i);
	for (k = 1; k < ws->levels; k++) {
		half = (size_t)1 << (k - 1);
		for (i = ((size_t)1 << k) - 1; i < size; i += (size_t)1 << (k + 1)) {
			uint64_t m = own_end(ws, i);

			m = ws->maxend[i - half] > m ? ws->maxend[i - half] : m;
			ws->maxend[i] = ws->maxend[i + half] > m ? ws->maxend[i + half] : m;
		}
	}
	return 0;
}

typedef void (*hit_fn)(struct wpass *p, const struct win *w, void *ctx);

/* Every window of ws that [a, b) overlaps. */
static void query(struct wpass *p, const struct wset *ws, uint64_t a, uint64_t b, hit_fn hit,
		  void *ctx)
{
	struct {
		size_t i;
		unsigned k;
	} stack[130];
	unsigned top = 0;

	if (!ws->n)
		return;
	stack[top].i = ((size_t)1 << (ws->levels - 1)) - 1;
	stack[top++].k = ws->levels - 1;
	while (top) {
		size_t i = stack[--top].i, half;
		unsigned k = stack[top].k;
		bool starts_before = i < ws->n && ws->v[i].t0 < b;

		if (ws->maxend[i] <= a)
			continue; /* everything below ends before the sample */
		if (starts_before && ws->v[i].t1 > a)
			hit(p, &ws->v[i], ctx);
		if (!k)
			continue;
		half = (size_t)1 << (k - 1);
		stack[top].i = i - half;
		stack[top++].k = k - 1;
		if (starts_before) { /* else the right subtree starts later still */
			stack[top].i = i + half;
			stack[top++].k = k - 1;
		}
	}
}

/* ---- running sums per (group, series) ----------------------------------------------------------
 */

static struct acc *acc_of(struct wpass *p, uint32_t group, uint32_t series, bool make)
{
	uint32_t k = tally_map_get(&p->acc_at, group, series);
	struct acc *v;

	if (k)
		return &p->accs[k - 1];
	if (!make || p->nacc >= UINT32_MAX - 1 ||
	    !(v = tally_grow(p->accs, &p->acap, p->nacc + 1, sizeof(*v))))
		return NULL;
	p->accs = v;
	v += p->nacc;
	memset(v, 0, sizeof(*v));
	if (p->groups[group].kind == G_NVTX && !(v->sk = calloc(1, sizeof(struct wsketch))))
		return NULL;
	if (tally_map_put(&p->acc_at, group, series, (uint32_t)p->nacc + 1) < 0) {
		free(v->sk);
		return NULL;
	}
	p->nacc++;
	return v;
}

struct sample {
	uint64_t t0, t1;
	int64_t v;
	uint32_t series;
};

static void take_hit(struct wpass *p, const struct win *w, void *ctx)
{
	const struct sample *x = ctx;
	uint64_t lo = x->t0 > w->t0 ? x->t0 : w->t0, hi = x->t1 < w->t1 ? x->t1 : w->t1;
	struct acc *a;

	if (hi <= lo || (w->rule == WIN_CONTAIN && (x->t0 < w->t0 || x->t1 > w->t1)))
		return;
	if (p->groups[w->group].kind == G_GAP && !p->g->s[x->series].sm_active &&
	    !p->g->s[x->series].gr_active)
		return; /* a gap says its SM and GR Active only: no sum for the other metrics */
	if (!(a = acc_of(p, w->group, x->series, true))) {
		p->failed = true;
		return;
	}
	if (!a->samples || x->v > a->max)
		a->max = x->v;
	a->samples++;
	gm_wsum_add(&a->sum, x->v, hi - lo);
	if (a->sk && !wsketch_add(a->sk, x->v, hi - lo))
		p->failed = true;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct wpass *p = ctx;
	const struct wset *ws = NULL;
	uint32_t dev = UINT32_MAX;
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_GPU_METRIC)
		return 0;
	for (i = 0; i < n; i++) {
		struct gm_series *s;
		struct sample x;

		if (r[i].device_id != dev) {
			dev = r[i].device_id;
			ws = wset_of(p, rs->index, dev, false);
		}
		if (!ws || !(s = gm_series_find(p->g, rs->index, dev, r[i].name_id)))
			continue;
		x = (struct sample){report_time(rs, r[i].start), report_time(rs, r[i].end),
				    gm_scaled(s, &r[i]), (uint32_t)(s - p->g->s)};
		query(p, ws, x.t0, x.t1, take_hit, &x);
	}
	return p->failed ? -ENOMEM : 0;
}

/* Read the set's inputs again (a set is scanned once), for the metric records only. */
static int second_pass(struct wpass *p, const struct report_set *set, char *err, size_t errlen)
{
	struct report_scan_ops ops = {.records = on_records, .ctx = p};
	char **paths = calloc(set->ninputs + 1, sizeof(*paths));
	struct report_set again;
	size_t i;
	int rc;

	if (!paths)
		return -ENOMEM;
	for (i = 0; i < set->ninputs; i++)
		paths[i] = set->inputs[i].path;
	rc = report_set_open(&again, paths, set->ninputs, err, errlen);
	free(paths);
	if (rc < 0)
		return rc;
	again.align = set->align;
	report_set_find_base(&again);
	rc = report_scan(&again, &ops, err, errlen);
	report_set_close(&again);
	if (rc > 0 || rc == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	return rc;
}

/* ---- where a device's metrics are ----------------------------------------------------------- */

static bool has_series(const struct gm *g, unsigned section, uint32_t device)
{
	const struct gm_device *d = gm_device_of(g, section, device);

	return d && d->sampled;
}

/*
 * The (section, device) pairs whose samples measure the device of another (section, device): its
 * own, or those of the sections that sampled the same GPU (by UUID).  Returns how many (<= max).
 */
static size_t sources(const struct gm *g, unsigned section, uint32_t device, unsigned *sec_out,
		      uint32_t *dev_out, size_t max)
{
	const struct gm_device *d = gm_device_of(g, section, device), *o;
	size_t n = 0;

	if (has_series(g, section, device)) {
		sec_out[0] = section;
		dev_out[0] = device;
		return 1;
	}
	/* the devices of the same GPU, in index order; at most max of them taken */
	for (o = d ? gm_same_gpu(g, d) : NULL; o && n < max; o = gm_same_gpu_next(g, o))
		if (o->section != section && o->sampled) {
			sec_out[n] = o->section;
			dev_out[n++] = o->device;
		}
	return n;
}

static long new_group(struct wpass *p, enum group_kind kind, uint32_t index, unsigned section,
		      uint32_t device, uint32_t name)
{
	struct group *v = tally_grow(p->groups, &p->gcap, p->ngroups + 1, sizeof(*v));

	if (!v)
		return -1;
	p->groups = v;
	v[p->ngroups] = (struct group){kind, index, section, device, name, 0, 0};
	return (long)p->ngroups++;
}

/* A sample is known to lie wholly inside a gap when it starts one sampling interval after the
 * gap's start or later (so the sample before it could not reach back past the edge). */
static uint64_t interval_of(const struct gm *g, unsigned section, uint32_t device)
{
	const struct gm_device *d = gm_device_of(g, section, device);

	/* a clock-cycle trigger: the samples' own mean length */
	return !d ? 0 : d->interval_ns ? d->interval_ns : d->mean_len;
}

static int gap_windows(struct wpass *p)
{
	unsigned secs[8];
	uint32_t devs[8];
	size_t i, k, n;

	for (i = 0; i < p->ngaps; i++) {
		const struct report_gap *g = p->gaps[i];
		long grp;

		if (g->stream != REPORT_GAP_ALL_STREAMS)
			continue;
		n = sources(p->g, g->section, g->device, secs, devs, 8);
		if (!n)
			continue;
		if ((grp = new_group(p, G_GAP, (uint32_t)i, g->section, g->device, 0)) < 0)
			return -ENOMEM;
		for (k = 0; k < n; k++) {
			uint64_t guard = interval_of(p->g, secs[k], devs[k]);

			if (g->t1 - g->t0 > 2 * guard &&
			    add_window(p, secs[k], devs[k], g->t0 + guard, g->t1 - guard,
				       (uint32_t)grp, WIN_CONTAIN) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* A sampled device's busy time: its span of work less its device gaps (of its own section). */
static int busy_windows(struct wpass *p)
{
	size_t nspans, i, k;
	const struct report_span *sp = report_gpu_span_list(p->gg, &nspans);
	const struct report_gap *gaps = p->all;

	for (i = 0; i < nspans; i++) {
		uint32_t r = tally_map_get(&p->run_of, sp[i].section, sp[i].device);
		size_t from_gap = r ? p->runs[r - 1].from : 0,
		       to_gap = r ? from_gap + p->runs[r - 1].n : 0;
		uint64_t from = sp[i].t0;
		long grp;

		if (!has_series(p->g, sp[i].section, sp[i].device))
			continue;
		grp = new_group(p, G_BUSY, 0, sp[i].section, sp[i].device, 0);
		if (grp < 0)
			return -ENOMEM;
		/* its device gaps: one run of the list (find_runs), in time order */
		for (k = from_gap; k < to_gap; k++) {
			if (add_window(p, sp[i].section, sp[i].device, from, gaps[k].t0,
				       (uint32_t)grp, WIN_OVERLAP) < 0)
				return -ENOMEM;
			from = gaps[k].t1;
		}
		if (add_window(p, sp[i].section, sp[i].device, from, sp[i].t1, (uint32_t)grp,
			       WIN_OVERLAP) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- results ------------------------------------------------------------------------------ */

/* The series of metric name of (section, device), or NULL (the rows are those of gm_finish). */
static struct gm_series *series_named(const struct gm *g, unsigned section, uint32_t device,
				      const char *name)
{
	const struct gm_series_view *v = gm_find(g, section, device, name);

	return v ? g->curve_of[v - g->rows] : NULL;
}

/* The runs of device gaps: gaps.c lists a section's device gaps device by device, in time order. */
static int find_runs(struct wpass *p)
{
	const struct report_gap *gaps = p->all;
	size_t i, cap = 0, ngaps = p->nall;
	struct run *v;

	for (i = 0; i < ngaps; i++) {
		struct run *last = p->nruns ? &p->runs[p->nruns - 1] : NULL;

		if (gaps[i].stream != REPORT_GAP_ALL_STREAMS)
			continue;
		if (last && last->section == gaps[i].section && last->device == gaps[i].device &&
		    last->from + last->n == i) {
			last->n++;
			continue;
		}
		if (!(v = tally_grow(p->runs, &cap, p->nruns + 1, sizeof(*v))))
			return -ENOMEM;
		p->runs = v;
		v[p->nruns++] = (struct run){gaps[i].section, gaps[i].device, i, 1};
		if (!tally_map_get(&p->run_of, gaps[i].section, gaps[i].device) &&
		    tally_map_put(&p->run_of, gaps[i].section, gaps[i].device, (uint32_t)p->nruns) <
			0)
			return -ENOMEM;
	}
	return 0;
}

/* Every device's span, found by (section, device). */
static int find_spans(struct wpass *p)
{
	size_t n, i;
	const struct report_span *sp = report_gpu_span_list(p->gg, &n);

	for (i = 0; i < n; i++)
		if (tally_map_put(&p->span_of, sp[i].section, sp[i].device, (uint32_t)i + 1) < 0)
			return -ENOMEM;
	return 0;
}

/* Did (section, device) run work in [t0, t1)?  Not where one of its gaps holds all of it. */
static bool worked(const struct wpass *p, const struct report_span *sp, uint64_t t0, uint64_t t1)
{
	const struct report_gap *gaps = p->all;
	uint32_t k = tally_map_get(&p->run_of, sp->section, sp->device);
	const struct run *r = k ? &p->runs[k - 1] : NULL;
	size_t lo, hi;

	if (t1 <= sp->t0 || t0 >= sp->t1)
		return false;
	if (!r)
		return true;
	for (lo = r->from, hi = r->from + r->n;
	     lo < hi;) { /* the last gap starting at t0 or before */
		size_t mid = (lo + hi) / 2;

		if (gaps[mid].t0 <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return !(lo > r->from && gaps[lo - 1].t1 >= t1);
}

/* Another process of the set that ran work on the gap's GPU during it: its pid, or 0.  The
 * processes of that GPU are looked in, in the order they were read, the first OTHERS_MAX only (MPS
 * serves 48 at most): a crafted set of thousands on one GPU costs no more per gap. */
#define OTHERS_MAX 64

static uint64_t other_worker(const struct wpass *p, const struct report_gap *gap)
{
	const struct gm_device *me = gm_device_of(p->g, gap->section, gap->device), *o;
	const struct report_span *sp;
	size_t n, looked = 0;
	uint32_t k;

	if (!p->gg || !me || !me->has_uuid)
		return 0;
	sp = report_gpu_span_list(p->gg, &n);
	for (o = gm_same_gpu(p->g, me); o && looked < OTHERS_MAX; o = gm_same_gpu_next(p->g, o)) {
		if (o->section == gap->section || o->section >= p->set->nsections ||
		    !(k = tally_map_get(&p->span_of, o->section, o->device)) || k > n)
			continue;
		looked++;
		if (worked(p, &sp[k - 1], gap->t0, gap->t1))
			return p->set->sections[o->section]->s->pid;
	}
	return 0;
}

/* What a gap's metrics add to its why: "; SM Active 0.0% over 4.800 ms", or, for a gap the GPU
 * was busy in, whose work that was. */
static void gap_why(const struct wpass *p, struct report_gap *gap, uint64_t pid)
{
	size_t n = strlen(gap->why);
	char whose[80] = ": work no trace here holds (another process, or untraced)";

	if (!p->gg) /* no other process's work to look in */
		snprintf(whose, sizeof(whose), ": work not in this process's records");

	if (pid)
		snprintf(whose, sizeof(whose), ": pid %" PRIu64 "'s work (its trace is here)", pid);
	/* why is wide enough for the loss's words and these (gaps.h): a cut would say "..." */
	if (gap->active && !gap->unproven &&
	    snprintf(gap->why, sizeof(gap->why),
		     "SM Active %.1f%% (max %.1f%%), GR Active %.1f%% over %.3f ms%s",
		     gap->sm_active, gap->sm_active_max, gap->gr_active,
		     (double)gap->sampled_ns / 1e6, whose) >= (int)sizeof(gap->why))
		memcpy(gap->why + sizeof(gap->why) - 4, "...", 4);
	else if ((!gap->active || gap->unproven) && n < sizeof(gap->why) &&
		 snprintf(gap->why + n, sizeof(gap->why) - n,
			  "; SM Active %.1f%%, GR Active %.1f%% over %.3f ms%s", gap->sm_active,
			  gap->gr_active, (double)gap->sampled_ns / 1e6,
			  gap->active ? whose : "") >= (int)(sizeof(gap->why) - n))
		memcpy(gap->why + sizeof(gap->why) - 4, "...", 4);
}

/* A metric's mean (%) over a gap, from the sources of (section, device); its max into *max. */
struct gap_mean {
	struct gm_wsum sum;
	double max, scale;
};

static void gap_metric(struct wpass *p, const struct group *grp, const char *name,
		       struct gap_mean *m)
{
	unsigned secs[8];
	uint32_t devs[8];
	size_t n = sources(p->g, grp->section, grp->device, secs, devs, 8), k;

	*m = (struct gap_mean){.scale = 1};
	for (k = 0; k < n; k++) {
		struct gm_series *s = series_named(p->g, secs[k], devs[k], name);
		const struct acc *a =
		    s ? acc_of(p, (uint32_t)(grp - p->groups), (uint32_t)(s - p->g->s), false)
		      : NULL;

		if (!a)
			continue;
		m->scale = 1 / gm_unit(s);
		gm_wsum_merge(&m->sum, &a->sum);
		m->max = (double)a->max * m->scale > m->max ? (double)a->max * m->scale : m->max;
	}
}

/* The mean, within the samples' maximum (long doubles' rounding may not pass it). */
static double mean_of(const struct gap_mean *m)
{
	double mean = m->sum.w ? (double)gm_wsum_mean(&m->sum) * m->scale : 0;

	return mean > m->max ? m->max : mean;
}

/* A gap's SM and GR Active, and whether either says the GPU was busy (gaps.h, GAP_BUSY_PCT). */
static void gap_results(struct wpass *p, const struct group *grp)
{
	struct report_gap *gap = p->gaps[grp->index];
	struct gap_mean sm, gr;

	gap_metric(p, grp, GM_SM_ACTIVE, &sm);
	gap_metric(p, grp, GM_GR_ACTIVE, &gr);
	if (!sm.sum.w && !gr.sum.w)
		return;
	gap->sampled_ns = sm.sum.w > gr.sum.w ? sm.sum.w : gr.sum.w;
	gap->sm_active = mean_of(&sm);
	gap->sm_active_max = sm.max;
	gap->gr_active = mean_of(&gr);
	gap->active = gap->sm_active > GAP_BUSY_PCT || gap->gr_active > GAP_BUSY_PCT;
	gap_why(p, gap, gap->active ? other_worker(p, gap) : 0);
}

static void busy_results(struct wpass *p, const struct group *grp)
{
	const struct gm_device *d = gm_device_of(p->g, grp->section, grp->device);
	size_t i;

	for (i = 0; d && i < d->nseries; i++) {
		struct gm_series *s = &p->g->s[d->series[i]];
		const struct acc *a = acc_of(p, (uint32_t)(grp - p->groups), d->series[i], false);

		s->busy = a ? a->sum : (struct gm_wsum){0};
	}
}

/* ---- NVTX ranges ---------------------------------------------------------------------------- */

/* Whether range name value (index + 1) is the text looked for (tally_map_find's same). */
struct name_lookup {
	const struct gm *g;
	const char *text;
};

static bool same_name(void *ctx, uint32_t value)
{
	const struct name_lookup *l = ctx;

	return strcmp(l->g->names[value - 1].s, l->text) == 0;
}

/* The index of a range name ("domain:message", as nvtx_sum names it), made if new; -1 on ENOMEM. */
static long name_index(struct gm *g, const char *text)
{
	struct name_lookup l = {g, text};
	uint64_t h = tally_hash_str(text);
	uint32_t found = tally_map_find(&g->name_at, h, same_name, &l);
	struct gm_name *v;

	if (found)
		return (long)found - 1;
	if (g->nnames >= UINT32_MAX - 1 ||
	    !(v = tally_grow(g->names, &g->ncap, g->nnames + 1, sizeof(*v))))
		return -1;
	g->names = v;
	memset(&v[g->nnames], 0, sizeof(*v));
	if (!(v[g->nnames].s = strdup(text)))
		return -1;
	if (tally_map_add(&g->name_at, h, (uint32_t)g->nnames + 1) < 0) {
		free(v[g->nnames].s);
		return -1;
	}
	return (long)g->nnames++;
}

int gm_collect_ranges(struct gm *g, struct report_section *rs, const struct tally_record *r,
		      size_t n)
{
	char text[512];
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_NVTX_RANGE)
		return 0;
	for (i = 0; i < n; i++) {
		struct gm_range *v;
		long k;

		if (r[i].flags & (TALLY_REC_BAD_TIME | TALLY_REC_DEPTH_LOST) ||
		    r[i].end <= r[i].start)
			continue;
		snprintf(text, sizeof(text), "%s:%s",
			 r[i].domain_id ? report_string(rs, r[i].domain_id) : "",
			 report_string(rs, r[i].name_id));
		if ((k = name_index(g, text)) < 0 ||
		    !(v = tally_grow(g->ranges, &g->rcap, g->nranges + 1, sizeof(*v))))
			return -ENOMEM;
		g->ranges = v;
		v[g->nranges++] = (struct gm_range){
		    report_time(rs, r[i].start), report_time(rs, r[i].end), rs->index, (uint32_t)k};
		g->names[k].instances++;
		g->names[k].ns += r[i].end - r[i].start;
	}
	return 0;
}

static const struct gm *sort_names_of; /* qsort has no context argument */

static int by_time(const void *a, const void *b)
{
	const struct gm_name *x = &sort_names_of->names[*(const uint32_t *)a];
	const struct gm_name *y = &sort_names_of->names[*(const uint32_t *)b];

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->s, y->s);
}

static int by_owner(const void *a, const void *b)
{
	const struct gm_range *x = a, *y = b;

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Devices of a section: those it has a metric source for. */
static size_t section_devices(const struct gm *g, unsigned section, uint32_t *out, size_t max)
{
	unsigned secs[8];
	uint32_t devs[8];
	size_t i, k, n = 0;

	for (i = 0; section < g->nsecs && i < g->secs[section].ndevs && n < max; i++) {
		const struct gm_device *d = &g->devs[g->secs[section].devs[i]];
		bool seen = false;

		if (!sources(g, section, d->device, secs, devs, 8))
			continue;
		for (k = 0; k < n; k++)
			seen |= out[k] == d->device;
		if (!seen)
			out[n++] = d->device;
	}
	return n;
}

/* One window per stretch of a range name in a section (nested ranges of one name merged), on
 * every device of the section, for the names with the most time. */
static int nvtx_section_windows(struct wpass *p, const struct gm_range *r, size_t n)
{
	uint32_t devs[16], sdev[8];
	unsigned ssec[8];
	size_t nd = section_devices(p->g, r[0].section, devs, 16), d, i, k, ns;

	uint64_t instances = n, range_ns = 0;

	for (i = 0; i < n; i++) /* before merging */
		range_ns += r[i].t1 - r[i].t0;
	for (d = 0; d < nd; d++) {
		long grp = new_group(p, G_NVTX, 0, r[0].section, devs[d], r[0].name);
		uint64_t t0 = r[0].t0, t1 = r[0].t1;

		if (grp < 0)
			return -ENOMEM;
		p->groups[grp].instances = instances;
		p->groups[grp].ns = range_ns;
		ns = sources(p->g, r[0].section, devs[d], ssec, sdev, 8);
		for (i = 1; i <= n; i++) {
			if (i < n && r[i].t0 <= t1) {
				t1 = r[i].t1 > t1 ? r[i].t1 : t1;
				continue;
			}
			for (k = 0; k < ns; k++)
				if (add_window(p, ssec[k], sdev[k], t0, t1, (uint32_t)grp,
					       WIN_OVERLAP) < 0)
					return -ENOMEM;
			if (i < n) {
				t0 = r[i].t0;
				t1 = r[i].t1;
			}
		}
	}
	return 0;
}

static int nvtx_windows(struct gm *g, struct wpass *p)
{
	uint32_t *order = calloc(g->nnames + 1, sizeof(*order));
	uint8_t *chosen = calloc(g->nnames + 1, 1);
	size_t i, from, keep = 0;
	int rc = 0;

	if (!order || !chosen) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < g->nnames; i++)
		order[i] = (uint32_t)i;
	sort_names_of = g;
	if (g->nnames > 1)
		qsort(order, g->nnames, sizeof(*order), by_time);
	for (i = 0; i < g->nnames && i < GM_NVTX_GROUPS; i++) {
		chosen[order[i]] = 1;
		g->names[order[i]].rank = (unsigned)i; /* its place by total time */
	}
	for (i = 0; i < g->nranges; i++) /* the chosen ones only, sorted by name, section, start */
		if (chosen[g->ranges[i].name])
			g->ranges[keep++] = g->ranges[i];
	g->nranges = keep;
	if (g->nranges > 1)
		qsort(g->ranges, g->nranges, sizeof(*g->ranges), by_owner);
	for (from = 0, i = 1; rc == 0 && i <= g->nranges; i++)
		if (i == g->nranges || g->ranges[i].name != g->ranges[from].name ||
		    g->ranges[i].section != g->ranges[from].section) {
			rc = nvtx_section_windows(p, g->ranges + from, i - from);
			from = i;
		}
out:
	free(order);
	free(chosen);
	return rc;
}

/* The rows of one group: a metric of its device, summed over the device's sources. */
static int nvtx_group_rows(struct gm *g, struct wpass *p, const struct group *grp)
{
	unsigned ssec[8];
	uint32_t sdev[8];
	size_t ns = sources(g, grp->section, grp->device, ssec, sdev, 8), i, k;
	const struct gm_device *first = ns ? gm_device_of(g, ssec[0], sdev[0]) : NULL;

	/* one row per metric of the first source; the others add to it */
	for (i = 0; first && i < first->nseries; i++) {
		const struct gm_series *s = &g->s[first->series[i]];
		struct wsketch sk = {0};
		struct gm_wsum sum = {0};
		uint64_t samples = 0;
		struct gm_nvtx_view *v;

		for (k = 0; k < ns; k++) {
			const struct gm_series *o =
			    k ? gm_series_by_name(g, ssec[k], sdev[k], s->name) : s;
			const struct acc *a =
			    o ? acc_of(p, (uint32_t)(grp - p->groups), (uint32_t)(o - g->s), false)
			      : NULL;

			if (!a)
				continue;
			gm_wsum_merge(&sum, &a->sum);
			samples += a->samples;
			if (!wsketch_merge(&sk, a->sk))
				return -ENOMEM;
		}
		if (!(v = tally_grow(g->nvtx, &g->nvcap, g->nnvtx + 1, sizeof(*v)))) {
			wsketch_fini(&sk);
			return -ENOMEM;
		}
		g->nvtx = v;
		v = &v[g->nnvtx++];
		v->range = g->names[grp->name].s;
		v->instances = grp->instances;
		v->range_ns = grp->ns;
		v->rank = g->names[grp->name].rank;
		gm_view_init(&v->m, s);
		v->m.section = grp->section;
		v->m.device = grp->device;
		gm_fill_stats(&v->m, s, &sum, samples, &sk);
		if (!s->percent) /* of the device's highest, as in gpu_metrics_sum */
			v->m.threshold = (double)s->sk.max / gm_unit(s) * GM_ABOVE_PCT / 100;
		if (sk.total)
			v->m.above = (double)wsketch_weight_above(
					 &sk, (int64_t)ceil(v->m.threshold * gm_unit(s))) /
				     (double)sk.total;
		wsketch_fini(&sk);
	}
	return 0;
}

static int by_row(const void *a, const void *b)
{
	const struct gm_nvtx_view *x = a, *y = b;
	int c;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->m.section != y->m.section)
		return x->m.section < y->m.section ? -1 : 1;
	if (x->m.device != y->m.device)
		return x->m.device < y->m.device ? -1 : 1;
	if (x->m.order != y->m.order)
		return x->m.order < y->m.order ? -1 : 1;
	c = strcmp(x->m.name, y->m.name);
	return c;
}

static int nvtx_results(struct gm *g, struct wpass *p)
{
	size_t i;

	g->nnvtx = 0;
	for (i = 0; i < p->ngroups; i++)
		if (p->groups[i].kind == G_NVTX && nvtx_group_rows(g, p, &p->groups[i]) < 0)
			return -ENOMEM;
	if (g->nnvtx > 1)
		qsort(g->nvtx, g->nnvtx, sizeof(*g->nvtx), by_row);
	return 0;
}

size_t gm_nvtx_rows(const struct gm *g)
{
	return g->nnvtx;
}

const struct gm_nvtx_view *gm_nvtx_row(const struct gm *g, size_t i)
{
	return i < g->nnvtx ? &g->nvtx[i] : NULL;
}

static void wpass_fini(struct wpass *p)
{
	size_t i;

	for (i = 0; i < p->nsets; i++) {
		free(p->sets[i].v);
		free(p->sets[i].maxend);
	}
	free(p->sets);
	for (i = 0; i < p->nacc; i++)
		if (p->accs[i].sk) {
			wsketch_fini(p->accs[i].sk);
			free(p->accs[i].sk);
		}
	free(p->accs);
	free(p->groups);
	free(p->runs);
	tally_map_fini(&p->acc_at);
	tally_map_fini(&p->set_of);
	tally_map_fini(&p->run_of);
	tally_map_fini(&p->span_of);
}

int gm_windows_pass(struct gm *gm, struct report_gap *const *gaps, size_t ngaps,
		    const struct report_gpu_gaps *context, bool nvtx, const struct report_set *set,
		    char *err, size_t errlen)
{
	struct wpass p = {.g = gm, .set = set, .gaps = gaps, .ngaps = ngaps, .gg = context};
	size_t i;
	int rc = 0;

	if (!gm->records)
		return 0;
	if (context)
		p.all = report_gpu_gaps_list(context, &p.nall);
	if ((rc = gap_windows(&p)) < 0 ||
	    (context && ((rc = find_runs(&p)) < 0 || (rc = busy_windows(&p)) < 0 ||
			 (rc = find_spans(&p)) < 0)))
		goto out;
	if (nvtx && (rc = nvtx_windows(gm, &p)) < 0)
		goto out;
	for (i = 0; i < p.nsets; i++)
		if ((rc = build_tree(&p.sets[i])) < 0)
			goto out;
	if (p.nsets && (rc = second_pass(&p, set, err, errlen)) < 0)
		goto out;
	for (i = 0; i < p.ngroups; i++)
		if (p.groups[i].kind == G_GAP)
			gap_results(&p, &p.groups[i]);
		else if (p.groups[i].kind == G_BUSY)
			busy_results(&p, &p.groups[i]);
	if (nvtx)
		rc = nvtx_results(gm, &p);
	if (rc == 0)
		rc = gm_finish(gm); /* the rows again, with what this pass added */
out:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	wpass_fini(&p);
	return rc;
}
