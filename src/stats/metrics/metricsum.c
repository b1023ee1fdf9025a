/* SPDX-License-Identifier: MIT */
/* The GPU metrics' summary and curves, in one pass; see metricsum.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "metricsum-int.h"
#include "satmath.h"

#define MAX_SCALE 18 /* 10^18 still fits 64 bits */

static const int64_t pow10s[MAX_SCALE + 1] = {
    1LL,
    10LL,
    100LL,
    1000LL,
    10000LL,
    100000LL,
    1000000LL,
    10000000LL,
    100000000LL,
    1000000000LL,
    10000000000LL,
    100000000000LL,
    1000000000000LL,
    10000000000000LL,
    100000000000000LL,
    1000000000000000LL,
    10000000000000000LL,
    100000000000000000LL,
    1000000000000000000LL,
};

struct gm *gm_new(uint64_t t0, double bucket_ns, unsigned nbuckets)
{
	struct gm *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->t0 = t0;
	g->bucket_ns = bucket_ns > 0 ? bucket_ns : 1;
	g->nb = nbuckets;
	return g;
}

static void free_series(struct gm_series *s)
{
	free(s->name);
	free(s->label);
	free(s->unit);
	free(s->csum);
	free(s->cw);
	wsketch_fini(&s->sk);
}

void gm_free(struct gm *g)
{
	size_t i;

	if (!g)
		return;
	for (i = 0; i < g->n; i++)
		free_series(&g->s[i]);
	free(g->s);
	for (i = 0; i < g->nsecs; i++) {
		tally_map_fini(&g->secs[i].series);
		free(g->secs[i].devs);
	}
	free(g->secs);
	for (i = 0; i < g->ndevs; i++) {
		free(g->devs[i].why);
		free(g->devs[i].series);
	}
	free(g->devs);
	tally_map_fini(&g->devmap);
	free(g->rows);
	free(g->curve_of);
	free(g->ranges);
	for (i = 0; i < g->nnames; i++)
		free(g->names[i].s);
	free(g->names);
	tally_map_fini(&g->name_at);
	free(g->nvtx);
	free(g);
}

uint64_t gm_records(const struct gm *g)
{
	return g->records;
}

/* ---- series by (section, device, name id) ---------------------------------------------------- */

static struct gm_sec *sec_of(struct gm *g, unsigned index)
{
	size_t cap = g->nsecs;
	struct gm_sec *v;

	if (index < g->nsecs)
		return &g->secs[index];
	v = tally_grow(g->secs, &cap, (size_t)index + 1, sizeof(*v));
	if (!v)
		return NULL;
	g->secs = v;
	g->nsecs = cap;
	return &v[index];
}

static uint64_t series_key(uint32_t device, uint32_t name_id)
{
	return ((uint64_t)device << 32 | name_id) + 1;
}

struct gm_series *gm_series_by_name(struct gm *g, unsigned section, uint32_t device,
				    const char *name)
{
	const struct gm_device *d = gm_device_of(g, section, device);
	size_t i;

	for (i = 0; d && i < d->nseries; i++)
		if (strcmp(g->s[d->series[i]].name, name) == 0)
			return &g->s[d->series[i]];
	return NULL;
}

struct gm_series *gm_series_find(struct gm *g, unsigned section, uint32_t device, uint32_t name_id)
{
	struct gm_sec *c = section < g->nsecs ? &g->secs[section] : NULL;
	uint64_t key = series_key(device, name_id);
	uint32_t v;

	if (!c)
		return NULL;
	if (c->last_key == key)
		return &g->s[c->last_val];
	if (!(v = tally_map_get(&c->series, device, name_id)))
		return NULL;
	c->last_key = key;
	c->last_val = v - 1;
	return &g->s[v - 1];
}

struct gm_device *gm_device_of(const struct gm *g, unsigned section, uint32_t device)
{
	uint32_t v = tally_map_get(&g->devmap, section, device);

	return v ? &g->devs[v - 1] : NULL;
}

/* The entry of (section, device), made if new; NULL when memory ran out. */
static struct gm_device *device_add(struct gm *g, unsigned section, uint32_t device)
{
	struct gm_device *d = gm_device_of(g, section, device);
	struct gm_sec *c;

	if (d)
		return d;
	if (!(c = sec_of(g, section)) ||
	    !tally_grow_in((void **)&c->devs, &c->dcap, c->ndevs + 1, sizeof(*c->devs)) ||
	    !(d = tally_grow(g->devs, &g->dcap, g->ndevs + 1, sizeof(*d))))
		return NULL;
	g->devs = d;
	if (tally_map_put(&g->devmap, section, device, (uint32_t)g->ndevs + 1) < 0)
		return NULL;
	c->devs[c->ndevs++] = (uint32_t)g->ndevs;
	d = &d[g->ndevs++];
	d->section = section;
	d->device = device;
	return d;
}

/* Label, unit and place in the set, from the section (its chunks as they are now). */
static int describe(struct gm_series *s, const struct tally_section *sec)
{
	const char *label, *unit;

	report_metric_describe(sec, s->device, s->name, &label, &unit, &s->order);
	free(s->label);
	free(s->unit);
	s->label = strdup(label);
	s->unit = strdup(unit);
	return s->label && s->unit ? 0 : -ENOMEM;
}

static struct gm_series *series_new(struct gm *g, struct gm_sec *c, struct report_section *rs,
				    uint32_t device, uint32_t name_id, unsigned scale)
{
	struct gm_device *d = device_add(g, rs->index, device);
	struct gm_series *v, *s;

	if (!d || !tally_grow_in((void **)&d->series, &d->scap, d->nseries + 1, sizeof(*d->series)))
		return NULL;
	if (!(v = tally_grow(g->s, &g->cap, g->n + 1, sizeof(*v))))
		return NULL;
	g->s = v;
	s = &v[g->n];
	*s = (struct gm_series){.section = rs->index,
				.device = device,
				.name_id = name_id,
				.dev = (uint32_t)(d - g->devs),
				.scale = scale > MAX_SCALE ? MAX_SCALE : scale,
				.order = UINT32_MAX};
	s->name = strdup(report_string(rs, name_id));
	if (!s->name || describe(s, rs->s) < 0 ||
	    (g->nb && g->ncurves < GM_CURVES_MAX &&
	     (!(s->csum = calloc(g->nb, sizeof(double))) ||
	      !(s->cw = calloc(g->nb, sizeof(double))))) ||
	    tally_map_put(&c->series, device, name_id, (uint32_t)g->n + 1) < 0) {
		free_series(s);
		return NULL;
	}
	s->percent = strcmp(s->unit, "%") == 0;
	s->above_exact = true;
	s->sm_active = strcmp(s->name, GM_SM_ACTIVE) == 0;
	s->gr_active = strcmp(s->name, GM_GR_ACTIVE) == 0;
	d->series[d->nseries++] = (uint32_t)g->n;
	g->ncurves += s->csum != NULL;
	g->curves_left_out += g->nb && !s->csum;
	return &g->s[g->n++];
}

/* The series of a GPU_METRIC record, made if new; NULL when memory ran out. */
static struct gm_series *series_of(struct gm *g, struct report_section *rs,
				   const struct tally_record *r)
{
	struct gm_series *s = gm_series_find(g, rs->index, r->device_id, r->name_id);
	struct gm_sec *c;

	if (s)
		return s;
	if (!device_add(g, rs->index, r->device_id) || !(c = sec_of(g, rs->index)))
		return NULL;
	return series_new(g, c, rs, r->device_id, r->name_id, r->subkind);
}

double gm_unit(const struct gm_series *s)
{
	return (double)pow10s[s->scale];
}

int64_t gm_scaled(const struct gm_series *s, const struct tally_record *r)
{
	unsigned k = r->subkind > MAX_SCALE ? MAX_SCALE : r->subkind;

	/* a series keeps the scale of its first record; another one is converted (never seen from
	 * tally's collector, which writes one scale per metric) */
	int64_t f, v = r->metric_value;

	if (k == s->scale)
		return v;
	if (k > s->scale)
		return v / pow10s[k - s->scale];
	f = pow10s[s->scale -
		   k]; /* a value past what 64 bits hold is clamped, as the collector's */
	if (v > INT64_MAX / f || v < INT64_MIN / f)
		return v > 0 ? INT64_MAX : INT64_MIN;
	return v * f;
}

/* ---- sums of value x time ---------------------------------------------------------------------
 */

void gm_wsum_add(struct gm_wsum *x, int64_t v, uint64_t d)
{
	__int128 p;

	x->lsum += (long double)v * (long double)d;
	x->lw += (long double)d;
	/* |v| < 2^63 and d < 2^64: the product fits 128 bits; only the sum may not */
	p = (__int128)v * (__int128)d;
	if (__builtin_add_overflow(x->sum, p, &x->sum))
		x->inexact = true;
	x->w = tally_add_sat(x->w, d, &x->inexact);
}

void gm_wsum_merge(struct gm_wsum *x, const struct gm_wsum *o)
{
	x->lsum += o->lsum;
	x->lw += o->lw;
	x->inexact |= o->inexact;
	if (__builtin_add_overflow(x->sum, o->sum, &x->sum))
		x->inexact = true;
	x->w = tally_add_sat(x->w, o->w, &x->inexact);
}

long double gm_wsum_mean(const struct gm_wsum *x)
{
	if (x->inexact)
		return x->lw > 0 ? x->lsum / x->lw : 0;
	return x->w ? (long double)x->sum / (long double)x->w : 0;
}

/* ---- the pass ------------------------------------------------------------------------------ */

static void curve_add(const struct gm *g, struct gm_series *s, uint64_t t0, uint64_t t1, double v)
{
	double a, b;
	long i, last;

	if (t1 <= g->t0 || t0 >= g->t0 + (uint64_t)(g->bucket_ns * g->nb))
		return;
	a = (double)(t0 > g->t0 ? t0 - g->t0 : 0);
	b = (double)(t1 - g->t0);
	last = (long)(b / g->bucket_ns);
	for (i = (long)(a / g->bucket_ns); i <= last && i < (long)g->nb; i++) {
		double lo = i * g->bucket_ns, hi = lo + g->bucket_ns;
		double ov = (b < hi ? b : hi) - (a > lo ? a : lo);

		if (ov > 0) {
			s->csum[i] += v * ov;
			s->cw[i] += ov;
		}
	}
}

static void take(struct gm *g, struct report_section *rs, struct gm_series *s,
		 const struct tally_record *r)
{
	uint64_t t0 = report_time(rs, r->start), t1 = report_time(rs, r->end);
	uint64_t d = r->end > r->start ? r->end - r->start : 0;
	int64_t v = gm_scaled(s, r);

	if (!s->samples || t0 < s->first_ns)
		s->first_ns = t0;
	if (t1 > s->last_ns)
		s->last_ns = t1;
	s->samples++;
	s->merged += !!(r->value & TALLY_METRIC_MERGED);
	s->after_gap += !!(r->value & TALLY_METRIC_AFTER_GAP);
	if (!d)
		return; /* an instant: counted, but it weighs nothing */
	gm_wsum_add(&s->sum, v, d);
	if (s->percent && v >= (int64_t)GM_ABOVE_PCT * pow10s[s->scale])
		s->above_ns = tally_add_sat(s->above_ns, d, &(bool){false});
	if (!wsketch_add(&s->sk, v, d))
		g->failed = true;
	if (s->csum)
		curve_add(g, s, t0, t1, (double)v / (double)pow10s[s->scale]);
}

int gm_add(struct gm *g, struct report_section *rs, const struct tally_record *r, size_t n)
{
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_GPU_METRIC)
		return 0;
	for (i = 0; i < n; i++) {
		struct gm_series *s = series_of(g, rs, &r[i]);

		if (!s)
			return -ENOMEM;
		g->records++;
		take(g, rs, s, &r[i]);
	}
	return g->failed ? -ENOMEM : 0;
}

/* ---- devices and their states ---------------------------------------------------------------- */

/* A device row's words: why this section holds none (or not all) of its metrics. */
static char *device_why(const struct tally_gpu_metrics *c)
{
	const char *why = c->why ? c->why : "";
	char *out = NULL;
	int n = -1;

	switch (c->state) {
	case TALLY_GM_ELSEWHERE:
		n = asprintf(&out,
			     "not sampled here: pid %" PRIu64 " on %s samples it (its trace: %s)",
			     c->holder_pid, c->holder_host ? c->holder_host : "?",
			     c->holder_file ? c->holder_file : "?");
		break;
	case TALLY_GM_REFUSED:
		n = asprintf(&out, "not sampled: refused (%s)%s%s", why, c->remedy ? "; " : "",
			     c->remedy ? c->remedy : "");
		break;
	case TALLY_GM_UNSUPPORTED:
	case TALLY_GM_BUSY:
		n = asprintf(&out, "not sampled: %s (%s)", tally_gpu_metrics_state_name(c->state),
			     why);
		break;
	case TALLY_GM_STOPPED:
		n = asprintf(&out, "sampling stopped early (%s): nothing after the last sample",
			     why);
		break;
	default:
		return NULL;
	}
	return n < 0 ? NULL : out;
}

/* A sampled device: every metric of its set gets a row, samples or not; labels from the set. */
static int set_rows(struct gm *g, const struct report_section *rs,
		    const struct tally_gpu_metrics *c)
{
	struct gm_device *d = device_add(g, rs->index, c->device);
	struct gm_sec *sec = sec_of(g, rs->index);
	size_t i, k;

	if (!d || !sec)
		return -ENOMEM;
	for (i = 0; i < d->nseries; i++)
		if (describe(&g->s[d->series[i]], rs->s) < 0)
			return -ENOMEM;
	for (k = 0; k < c->nmetrics; k++) {
		bool have = false;

		d = gm_device_of(g, rs->index, c->device);
		for (i = 0; i < d->nseries && !have; i++)
			have = strcmp(g->s[d->series[i]].name,
				      c->metrics[k].name ? c->metrics[k].name : "") == 0;
		if (!have && c->metrics[k].name) {
			/* no record named it: a series with no samples, under a name id of its
			 * own (beyond any string id, so no record can reach it) */
			struct gm_series *s =
			    series_new(g, sec, (struct report_section *)rs, c->device,
				       UINT32_MAX - (uint32_t)k, c->metrics[k].scale);

			if (!s)
				return -ENOMEM;
			free(s->name);
			if (!(s->name = strdup(c->metrics[k].name)) || describe(s, rs->s) < 0)
				return -ENOMEM;
			s->percent = strcmp(s->unit, "%") == 0;
		}
	}
	return 0;
}

static int take_devices(struct gm *g, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	size_t i;

	for (i = 0; i < s->ndevices; i++) {
		struct gm_device *d = device_add(g, rs->index, s->devices[i].id);

		if (!d)
			return -ENOMEM;
		if (s->devices[i].has_uuid) {
			memcpy(d->uuid, s->devices[i].uuid, 16);
			d->has_uuid = true;
		}
	}
	for (i = 0; i < s->ngpu_metrics; i++) {
		const struct tally_gpu_metrics *c = &s->gpu_metrics[i];
		struct gm_device *d = device_add(g, rs->index, c->device);

		if (!d)
			return -ENOMEM;
		d->state = c->state;
		if (c->has_uuid) {
			memcpy(d->uuid, c->uuid, 16);
			d->has_uuid = true;
		}
		d->interval_ns = c->trigger == TALLY_GM_TRIGGER_TIME ? c->interval : 0;
		free(d->why);
		d->why = device_why(c);
		if ((c->state == TALLY_GM_SAMPLED || c->state == TALLY_GM_STOPPED) &&
		    set_rows(g, rs, c) < 0)
			return -ENOMEM;
	}
	return 0;
}

int gm_section_end(struct gm *g, const struct report_section *rs)
{
	struct gm_sec *c = sec_of(g, rs->index);
	size_t i, k;

	if (!c)
		return -ENOMEM;
	c->ended = true;
	/* labels and units now that every chunk of the section is in */
	for (k = 0; k < c->ndevs; k++) {
		const struct gm_device *d = &g->devs[c->devs[k]];

		for (i = 0; i < d->nseries; i++) {
			struct gm_series *s = &g->s[d->series[i]];
			bool was = s->percent;

			if (describe(s, rs->s) < 0)
				continue;
			s->percent = strcmp(s->unit, "%") == 0;
			if (s->percent !=
			    was) /* the unit came after the samples: the sketch decides */
				s->above_exact = false;
		}
	}
	return take_devices(g, rs);
}

/* ---- finishing ---------------------------------------------------------------------------------
 */

void gm_fill_stats(struct gm_series_view *v, const struct gm_series *s, const struct gm_wsum *sum,
		   uint64_t samples, const struct wsketch *sk)
{
	double unit = (double)pow10s[s->scale];
	long double mean = gm_wsum_mean(sum);

	v->samples = samples;
	v->covered_ns = sum->w;
	v->saturated = sum->inexact || sk->saturated;
	if (!sum->w)
		return;
	/* a weighted mean lies within the extremes: rounding of the long doubles may not pass them
	 */
	mean = mean < (long double)sk->min   ? (long double)sk->min
	       : mean > (long double)sk->max ? (long double)sk->max
					     : mean;
	v->mean = (double)mean / unit;
	v->min = (double)sk->min / unit;
	v->max = (double)sk->max / unit;
	v->p50 = (double)wsketch_quantile(sk, 0.5) / unit;
	v->p90 = (double)wsketch_quantile(sk, 0.9) / unit;
	v->threshold = s->percent ? GM_ABOVE_PCT : v->max * GM_ABOVE_PCT / 100;
}

void gm_view_init(struct gm_series_view *v, const struct gm_series *s)
{
	memset(v, 0, sizeof(*v));
	v->section = s->section;
	v->device = s->device;
	v->name = s->name;
	v->label = s->label;
	v->unit = s->unit;
	v->percent = s->percent;
	v->order = s->order;
}

static void series_view(const struct gm_series *s, struct gm_series_view *v)
{
	double unit = (double)pow10s[s->scale];

	gm_view_init(v, s);
	gm_fill_stats(v, s, &s->sum, s->samples, &s->sk);
	v->merged = s->merged;
	v->after_gap = s->after_gap;
	v->first_ns = s->first_ns;
	v->last_ns = s->last_ns;
	if (s->sum.w && s->percent && s->above_exact && !s->sum.inexact)
		v->above = (double)s->above_ns / (double)s->sum.w;
	else if (s->sum.w) /* threshold from the max: the sketch knows what lies above */
		v->above =
		    (double)wsketch_weight_above(&s->sk, (int64_t)ceil(v->threshold * unit)) /
		    (double)s->sk.total;
	v->above = v->above > 1 ? 1 : v->above;
	v->busy_ns = s->busy.w;
	if (s->busy.w)
		v->busy_mean = (double)gm_wsum_mean(&s->busy) / unit;
}

/* Row order: section, device, the device row first, then the metric set's order (metrics not in
 * a set after, by name). */
static int cmp_rows(const void *pa, const void *pb)
{
	const struct gm_series_view *a = pa, *b = pb;

	if (a->section != b->section)
		return a->section < b->section ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (!a->name || !b->name)
		return !a->name && b->name ? -1 : a->name && !b->name ? 1 : 0;
	return 0;
}

struct order_key {
	struct gm_series_view v;
	struct gm_series *s;
};

static int cmp_keys(const void *pa, const void *pb)
{
	const struct order_key *a = pa, *b = pb;
	int c = cmp_rows(&a->v, &b->v);

	if (c || !a->v.name || !b->v.name)
		return c;
	if (a->v.order != b->v.order)
		return a->v.order < b->v.order ? -1 : 1;
	return strcmp(a->v.name, b->v.name);
}

/* What the second pass asks of every device: whether it has samples, their length, and the other
 * devices of the same GPU (a chain by UUID). */
static int index_devices(struct gm *g)
{
	struct tally_map last = {0}, first = {0}; /* UUID -> the chain's last and first, + 1 */
	size_t i;

	for (i = 0; i < g->n; i++) {
		struct gm_series *s = &g->s[i];
		struct gm_device *d = &g->devs[s->dev];

		d->sampled |= s->samples != 0;
		if (s->samples && s->sum.w / s->samples > d->mean_len)
			d->mean_len = s->sum.w / s->samples;
	}
	for (i = 0; i < g->ndevs; i++) {
		struct gm_device *d = &g->devs[i];
		uint64_t k0, k1;
		uint32_t prev;

		d->next_same = d->first_same = 0;
		if (!d->has_uuid)
			continue;
		memcpy(&k0, d->uuid, 8);
		memcpy(&k1, d->uuid + 8, 8);
		if ((prev = tally_map_get(&last, k0, k1)))
			g->devs[prev - 1].next_same = (uint32_t)i + 1;
		else if (tally_map_put(&first, k0, k1, (uint32_t)i + 1) < 0)
			break;
		d->first_same = tally_map_get(&first, k0, k1);
		if (tally_map_put(&last, k0, k1, (uint32_t)i + 1) < 0)
			break;
	}
	tally_map_fini(&last);
	tally_map_fini(&first);
	return i == g->ndevs ? 0 : -ENOMEM;
}

const struct gm_device *gm_same_gpu(const struct gm *g, const struct gm_device *d)
{
	return d->first_same ? &g->devs[d->first_same - 1] : d;
}

int gm_finish(struct gm *g)
{
	size_t i, k = 0, nwhy = 0;
	struct order_key *keys;

	if (g->failed || index_devices(g) < 0)
		return -ENOMEM;
	for (i = 0; i < g->ndevs; i++)
		nwhy += g->devs[i].why != NULL;
	free(g->rows);
	free(g->curve_of);
	g->rows = NULL;
	g->curve_of = NULL;
	g->nrows = 0;
	keys = calloc(g->n + nwhy + 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < g->n; i++, k++) {
		series_view(&g->s[i], &keys[k].v);
		keys[k].s = &g->s[i];
	}
	for (i = 0; i < g->ndevs; i++)
		if (g->devs[i].why) {
			keys[k].v.section = g->devs[i].section;
			keys[k].v.device = g->devs[i].device;
			keys[k].v.label = "-";
			keys[k].v.unit = "";
			keys[k++].v.why = g->devs[i].why;
		}
	if (k > 1)
		qsort(keys, k, sizeof(*keys), cmp_keys);
	g->rows = calloc(k + 1, sizeof(*g->rows));
	g->curve_of = calloc(k + 1, sizeof(*g->curve_of));
	if (!g->rows || !g->curve_of) {
		free(keys);
		return -ENOMEM;
	}
	for (i = 0; i < k; i++) {
		g->rows[i] = keys[i].v;
		g->curve_of[i] = keys[i].s;
	}
	g->nrows = k;
	free(keys);
	return 0;
}

bool gm_saturated(const struct gm *g)
{
	size_t i;

	for (i = 0; i < g->nrows; i++)
		if (g->rows[i].saturated)
			return true;
	return false;
}

size_t gm_rows(const struct gm *g)
{
	return g->nrows;
}

const struct gm_series_view *gm_row(const struct gm *g, size_t i)
{
	return i < g->nrows ? &g->rows[i] : NULL;
}

const struct gm_series_view *gm_find(const struct gm *g, unsigned section, uint32_t device,
				     const char *name)
{
	size_t lo = 0, hi = g->nrows, i;

	/* the rows are sorted by section and device: the first of (section, device), then its */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct gm_series_view *v = &g->rows[mid];

		if (v->section < section || (v->section == section && v->device < device))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < g->nrows && g->rows[i].section == section && g->rows[i].device == device;
	     i++) {
		const struct gm_series_view *v = &g->rows[i];

		if (v->name && (strcmp(v->name, name) == 0 || strcmp(v->label, name) == 0))
			return v;
	}
	return NULL;
}

size_t gm_curves_left_out(const struct gm *g)
{
	return g->curves_left_out;
}

const struct gm_series_view *gm_curve(struct gm *g, size_t i, const double **mean, size_t *n)
{
	/* asked for in order, 0, 1, 2 ...: each goes on from where the one before it was found */
	size_t k = i && i == g->curve_i + 1 ? g->curve_k + 1 : 0, seen = k ? i : 0;

	for (; k < g->nrows && g->nb; k++) {
		struct gm_series *s = g->curve_of[k];
		unsigned b;

		if (!s || !s->csum || seen++ != i)
			continue;
		g->curve_i = i;
		g->curve_k = k;
		/* means in place of the sums, once (cw marks what is done: a negative weight) */
		for (b = 0; b < g->nb; b++)
			if (s->cw[b] >= 0) {
				s->csum[b] = s->cw[b] > 0 ? s->csum[b] / s->cw[b] : NAN;
				s->cw[b] = -1;
			}
		*mean = s->csum;
		*n = g->nb;
		return &g->rows[k];
	}
	return NULL;
}
