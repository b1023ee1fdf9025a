/* SPDX-License-Identifier: MIT */
/* GPU gaps with proof, and busy time per bucket; see gaps.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gaps.h"
#include "grow.h"
#include "hashmap.h"
#include "spans.h"
#include "spill.h"

#define DEFAULT_GAP_MIN_NS 1000000ull
#define AUTO_BUCKETS	   20
#define MAX_BUCKETS	   REPORT_UTIL_MAX_BUCKETS

struct gap_iv {
	uint64_t t0, t1; /* aligned */
	uint32_t device, stream;
	uint32_t corr; /* correlation id: a segment remembers that of its earliest work */
};

/* Busy time of one device (stream REPORT_GAP_ALL_STREAMS) or stream: sorted, disjoint segments,
 * any two at least gap_min apart (closer ones are merged as they come). */
struct busy {
	uint32_t device, stream;
	struct span_set set;
};

struct gap_sec {
	struct busy *busy;
	size_t nbusy, bcap, last;
	struct tally_map busy_map; /* (device, stream) -> index in busy + 1 */
	struct spill v;		   /* every interval, for utilization only, by device and start */
	bool has_v;
};

struct report_gpu_gaps {
	struct report_gaps_opts o;
	struct gap_sec *secs;
	size_t nsecs;
	struct report_gap *gaps;
	size_t ngaps, gcap;
	struct report_util *util;
	size_t nutil, ucap;
	struct report_span *spans;
	size_t nspans, scap;
	uint64_t util_refused; /* report_gpu_util_refused */
};

struct report_gpu_gaps *report_gpu_gaps_new(const struct report_gaps_opts *o)
{
	struct report_gpu_gaps *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	if (o)
		g->o = *o;
	if (!g->o.gap_min_ns)
		g->o.gap_min_ns = DEFAULT_GAP_MIN_NS;
	return g;
}

static void free_sec(struct gap_sec *sec)
{
	size_t i;

	for (i = 0; i < sec->nbusy; i++)
		span_set_fini(&sec->busy[i].set);
	free(sec->busy);
	tally_map_fini(&sec->busy_map);
	if (sec->has_v)
		spill_fini(&sec->v);
	memset(sec, 0, sizeof(*sec));
}

void report_gpu_gaps_free(struct report_gpu_gaps *g)
{
	size_t i;

	if (!g)
		return;
	for (i = 0; i < g->nsecs; i++)
		free_sec(&g->secs[i]);
	free(g->secs);
	free(g->gaps);
	free(g->util);
	free(g->spans);
	free(g);
}

static struct gap_sec *sec_of(struct report_gpu_gaps *g, unsigned index)
{
	size_t cap = g->nsecs;
	struct gap_sec *n;

	if (index < g->nsecs)
		return &g->secs[index];
	n = tally_grow(g->secs, &cap, (size_t)index + 1, sizeof(*n));
	if (!n)
		return NULL;
	memset(n + g->nsecs, 0, (cap - g->nsecs) * sizeof(*n));
	g->secs = n;
	g->nsecs = cap;
	return &g->secs[index];
}

static struct busy *busy_of(struct gap_sec *sec, uint32_t device, uint32_t stream, uint64_t gap_min)
{
	struct busy *b;
	uint32_t found;

	if (sec->last < sec->nbusy && sec->busy[sec->last].device == device &&
	    sec->busy[sec->last].stream == stream)
		return &sec->busy[sec->last];
	/* a hash, not a scan: a trace of 100,000 streams costs each record what 4 streams do */
	found = tally_map_get(&sec->busy_map, device, stream);
	if (found)
		return &sec->busy[sec->last = found - 1];
	if (!(b = tally_grow(sec->busy, &sec->bcap, sec->nbusy + 1, sizeof(*b))))
		return NULL;
	sec->busy = b;
	if (tally_map_put(&sec->busy_map, device, stream, (uint32_t)sec->nbusy + 1) < 0)
		return NULL;
	b[sec->nbusy] = (struct busy){.device = device, .stream = stream};
	b[sec->nbusy].set.merge_gap = gap_min;
	return &sec->busy[sec->last = sec->nbusy++];
}

static int by_device(const void *a, const void *b)
{
	const struct gap_iv *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int add_one(struct report_gpu_gaps *g, struct gap_sec *sec, const struct gap_iv *iv)
{
	/* one at a time: finding the second may move the first (the array grows) */
	struct busy *b = busy_of(sec, iv->device, REPORT_GAP_ALL_STREAMS, g->o.gap_min_ns);
	struct gap_iv *v;

	if (!b || span_add_tagged(&b->set, iv->t0, iv->t1, 0, iv->corr) < 0)
		return -ENOMEM;
	if (!g->o.devices_only && (!(b = busy_of(sec, iv->device, iv->stream, g->o.gap_min_ns)) ||
				   span_add_tagged(&b->set, iv->t0, iv->t1, 0, iv->corr) < 0))
		return -ENOMEM;
	if (!g->o.util)
		return 0;
	if (!sec->has_v) {
		spill_init(&sec->v, sizeof(*v), 0, by_device);
		sec->has_v = true;
	}
	if (!(v = spill_push(&sec->v)))
		return -ENOMEM;
	*v = *iv;
	return 0;
}

int report_gpu_gaps_add(struct report_gpu_gaps *g, const struct report_section *rs,
			const struct tally_record *r, size_t n)
{
	struct gap_sec *sec;
	size_t i;

	if (!n || !tally_kind_is_gpu(r[0].kind))
		return 0;
	if (!(sec = sec_of(g, rs->index)))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct gap_iv iv = {report_time(rs, r[i].start), report_time(rs, r[i].end),
				    r[i].device_id, r[i].stream_id, r[i].correlation_id};

		if (r[i].flags & TALLY_REC_BAD_TIME)
			continue;
		if (iv.t1 < iv.t0) /* a damaged record: an instant, not a span running backwards */
			iv.t1 = iv.t0;
		if (add_one(g, sec, &iv) < 0)
			return -ENOMEM;
	}
	return 0;
}

const struct report_gap *report_gpu_gaps_list(const struct report_gpu_gaps *g, size_t *n)
{
	*n = g->ngaps;
	return g->gaps;
}

uint64_t report_gpu_util_refused(const struct report_gpu_gaps *g)
{
	return g->util_refused;
}

const struct report_util *report_gpu_util_list(const struct report_gpu_gaps *g, size_t *n)
{
	*n = g->nutil;
	return g->util;
}

const struct report_span *report_gpu_span_list(const struct report_gpu_gaps *g, size_t *n)
{
	*n = g->nspans;
	return g->spans;
}

struct report_gap *report_gpu_gaps_edit(struct report_gpu_gaps *g, size_t *n)
{
	*n = g->ngaps;
	return g->gaps;
}

/* ---- the proof ---------------------------------------------------------------------------- */

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 <= b1 && b0 <= a1;
}

/* GPU metrics' own losses (unsampled stretches, overflows) say nothing of the records: a gap is
 * proven idle or not by the records' ledger alone, and its metrics say what they covered. */
static bool metric_counter(unsigned counter)
{
	return counter >= TALLY_C_METRIC_DECODED && counter <= TALLY_C_METRIC_DEVICES;
}

static bool has_window(const struct tally_section *s, unsigned counter)
{
	size_t i;

	for (i = 0; i < s->nwindows; i++)
		if (s->windows[i].counter == counter)
			return true;
	return false;
}

/* A loss that cannot be placed in time: it may be anywhere. */
static bool loss_anywhere(const struct report_section *rs, char *why, size_t len)
{
	const struct tally_section *s = rs->s;
	const struct tally_file *f = rs->in->f;
	size_t i;

	for (i = 0; i < tally_loss_counters_count; i++) {
		unsigned id = tally_loss_counters[i];

		if (s->ledger.v[id] && !has_window(s, id) && !metric_counter(id)) {
			snprintf(why, len, "%s: %" PRIu64 " lost at an unknown time",
				 tally_counter_info(id)->name, s->ledger.v[id]);
			return true;
		}
	}
	for (i = 0; i < f->ndamage; i++)
		if (f->damage[i].section == (int)s->index) {
			snprintf(why, len, "the file is damaged (%s): what was lost has no time",
				 tally_damage_kind_name(f->damage[i].kind));
			return true;
		}
	return false;
}

/* Spans outside the collection window: between a window-close note and the next window-open. */
static bool outside_window(const struct report_section *rs, uint64_t t0, uint64_t t1)
{
	const struct tally_section *s = rs->s;
	uint64_t closed = 0;
	bool is_closed = false;
	size_t i;

	for (i = 0; i < s->nnotes; i++) {
		const char *code = s->notes[i].code ? s->notes[i].code : "";
		uint64_t at = report_time(rs, s->notes[i].time);

		if (strcmp(code, "window-close") == 0 && !is_closed) {
			closed = at;
			is_closed = true;
		} else if (strcmp(code, "window-open") == 0 && is_closed) {
			if (overlaps(t0, t1, closed, at))
				return true;
			is_closed = false;
		}
	}
	return is_closed && t1 >= closed;
}

bool report_gap_unproven(const struct report_section *rs, uint64_t t0, uint64_t t1, char *why,
			 size_t len)
{
	const struct tally_section *s = rs->s;
	size_t i;

	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];
		const struct tally_counter_info *ci = tally_counter_info(w->counter);

		if (!metric_counter(w->counter) &&
		    overlaps(t0, t1, report_time(rs, w->t_begin), report_time(rs, w->t_end))) {
			snprintf(why, len, "loss window: %s, %" PRIu64 " lost",
				 ci ? ci->name : "loss", w->count);
			return true;
		}
	}
	if (!s->has_final && s->ledgers && t1 > report_time(rs, s->ledger.t_end)) {
		snprintf(why, len, "after the last ledger of a trace that was not closed");
		return true;
	}
	if (outside_window(rs, t0, t1)) {
		snprintf(why, len, "outside the collection window: nothing was recorded");
		return true;
	}
	if (loss_anywhere(rs, why, len))
		return true;
	snprintf(why, len, "no loss overlaps it (the ledger proves it)");
	return false;
}

/* ---- gaps ----------------------------------------------------------------------------------- */

static int add_gap(struct report_gpu_gaps *g, const struct report_section *rs, uint32_t device,
		   uint32_t stream, const struct span *before, const struct span *after)
{
	struct report_gap one, *gp = &one;

	if (!g->o.each) {
		if (!(gp = tally_grow(g->gaps, &g->gcap, g->ngaps + 1, sizeof(*gp))))
			return -ENOMEM;
		g->gaps = gp;
		gp += g->ngaps++;
	}
	*gp = (struct report_gap){.section = rs->index,
				  .device = device,
				  .stream = stream,
				  .t0 = before->t1,
				  .t1 = after->t0,
				  .next_corr = (uint32_t)after->first};
	gp->unproven = report_gap_unproven(rs, gp->t0, gp->t1, gp->why, sizeof(gp->why));
	return g->o.each ? g->o.each(g->o.each_ctx, gp) : 0;
}

/* Between two segments of a busy set lies a gap of gap_min or more, by construction. */
static int busy_gaps(struct report_gpu_gaps *g, const struct report_section *rs,
		     const struct busy *b)
{
	const struct span *s = b->set.s;
	size_t i;
	int rc;

	if (b->stream == REPORT_GAP_ALL_STREAMS && b->set.n) {
		struct report_span *sp = tally_grow(g->spans, &g->scap, g->nspans + 1, sizeof(*sp));

		if (!sp)
			return -ENOMEM;
		g->spans = sp;
		sp[g->nspans++] =
		    (struct report_span){rs->index, b->device, s[0].t0, s[b->set.n - 1].t1};
	}
	for (i = 1; i < b->set.n; i++)
		if ((rc = add_gap(g, rs, b->device, b->stream, &s[i - 1], &s[i])) != 0)
			return rc;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct busy *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->stream == y->stream ? 0 : x->stream < y->stream ? -1 : 1;
}

/* ---- busy per bucket ------------------------------------------------------------------------ */

static void add_busy(double *busy, size_t nb, uint64_t origin, uint64_t bucket, uint64_t t0,
		     uint64_t t1)
{
	size_t b;

	for (b = (size_t)((t0 - origin) / bucket); b < nb && t0 < t1; b++) {
		uint64_t end = origin + (b + 1) * bucket;
		uint64_t upto = t1 < end ? t1 : end;

		busy[b] += (double)(upto - t0);
		t0 = upto;
	}
}

/* One device's run, [first, last]: its merged busy time, bucket by bucket, from the spill's
 * elements (sorted by device and start) from where it stands, the run's n of them. */
static int device_util(struct report_gpu_gaps *g, const struct report_section *rs, struct spill *sp,
		       uint32_t device, uint64_t first, uint64_t last, size_t n)
{
	uint64_t bucket, seg0 = first, seg1 = first;
	const struct gap_iv *v;
	size_t i, nb;
	double *busy;

	bucket = g->o.bucket_ns ? g->o.bucket_ns : (last - first) / AUTO_BUCKETS + 1;
	nb = (size_t)((last - first) / bucket) + 1;
	if (nb > MAX_BUCKETS) { /* a bucket far too small for the span: no flood, but say so */
		g->util_refused = nb > g->util_refused ? nb : g->util_refused;
		for (i = 0; i < n; i++)
			spill_next(sp);
		return 0;
	}
	if (!(busy = calloc(nb, sizeof(*busy))))
		return -ENOMEM;
	for (i = 0; i < n && (v = spill_next(sp)); i++) {
		if (i == 0)
			seg1 = v->t1;
		if (v->t0 > seg1) {
			add_busy(busy, nb, first, bucket, seg0, seg1);
			seg0 = v->t0;
		}
		seg1 = v->t1 > seg1 ? v->t1 : seg1;
	}
	add_busy(busy, nb, first, bucket, seg0, seg1);
	for (i = 0; i < nb; i++) {
		struct report_util *u = tally_grow(g->util, &g->ucap, g->nutil + 1, sizeof(*u));
		uint64_t b0 = first + i * bucket;
		char why[120];

		if (!u) {
			free(busy);
			return -ENOMEM;
		}
		g->util = u;
		u[g->nutil++] = (struct report_util){
		    rs->index,
		    device,
		    b0,
		    b0 + bucket,
		    busy[i] / (double)bucket,
		    report_gap_unproven(rs, b0, b0 + bucket, why, sizeof(why))};
	}
	free(busy);
	return 0;
}

/* A device's run of the spill: its intervals, and the first start and last end among them. */
struct dev_run {
	uint32_t device;
	uint64_t first, last;
	size_t n;
};

/* Each device's run, in two passes over the section's intervals: their extents, then their
 * buckets (the bucket's width follows the extent). */
static int section_util(struct report_gpu_gaps *g, const struct report_section *rs,
			struct gap_sec *sec)
{
	struct dev_run *runs = NULL;
	const struct gap_iv *v;
	size_t nruns = 0, cap = 0, i;
	int rc = spill_sort(&sec->v);

	while (rc == 0 && (v = spill_next(&sec->v))) {
		if (!nruns || runs[nruns - 1].device != v->device) {
			if (!tally_grow_in((void **)&runs, &cap, nruns + 1, sizeof(*runs))) {
				rc = -ENOMEM;
				break;
			}
			runs[nruns++] = (struct dev_run){v->device, v->t0, v->t1, 0};
		}
		runs[nruns - 1].last = v->t1 > runs[nruns - 1].last ? v->t1 : runs[nruns - 1].last;
		runs[nruns - 1].n++;
	}
	if (rc == 0 && sec->v.err)
		rc = -sec->v.err;
	if (rc == 0)
		rc = spill_rewind(&sec->v);
	for (i = 0; rc == 0 && i < nruns; i++)
		rc = device_util(g, rs, &sec->v, runs[i].device, runs[i].first, runs[i].last,
				 runs[i].n);
	free(runs);
	return rc;
}

uint64_t report_gpu_gaps_take_busy(struct report_gpu_gaps *g, const struct report_section *rs)
{
	struct gap_sec *sec = rs->index < g->nsecs ? &g->secs[rs->index] : NULL;
	uint64_t busy = 0;
	size_t i, k;

	for (i = 0; sec && i < sec->nbusy; i++)
		if (sec->busy[i].stream == REPORT_GAP_ALL_STREAMS)
			for (k = 0; k < sec->busy[i].set.n; k++)
				busy += sec->busy[i].set.s[k].t1 - sec->busy[i].set.s[k].t0;
	if (sec)
		free_sec(sec);
	return busy;
}

int report_gpu_gaps_section(struct report_gpu_gaps *g, const struct report_section *rs)
{
	struct gap_sec *sec = rs->index < g->nsecs ? &g->secs[rs->index] : NULL;
	size_t pass, i;
	int rc = 0;

	if (!sec)
		return 0;
	/* Each device's gaps, then its streams' (REPORT_GAP_ALL_STREAMS sorts last: device first)
	 */
	if (sec->nbusy > 1)
		qsort(sec->busy, sec->nbusy, sizeof(*sec->busy), by_key);
	for (pass = 0; pass < 2 && rc == 0; pass++)
		for (i = 0; i < sec->nbusy && rc == 0; i++)
			if ((sec->busy[i].stream == REPORT_GAP_ALL_STREAMS) == (pass == 0))
				rc = busy_gaps(g, rs, &sec->busy[i]);
	if (rc == 0 && sec->has_v && spill_count(&sec->v))
		rc = section_util(g, rs, sec);
	free_sec(sec);
	return rc;
}

/* ---- one pass over a set -------------------------------------------------------------------- */

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	return report_gpu_gaps_add(ctx, rs, r, n);
}

static int on_section_end(void *ctx, struct report_section *rs)
{
	return report_gpu_gaps_section(ctx, rs);
}

int report_gpu_gaps(struct report_set *set, const struct report_gaps_opts *o,
		    struct report_gpu_gaps **out, char *err, size_t errlen)
{
	struct report_gpu_gaps *g = report_gpu_gaps_new(o);
	struct report_scan_ops ops = {
	    .records = on_records, .section_end = on_section_end, .ctx = g};
	int rc;

	*out = NULL;
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = report_scan(set, &ops, err, errlen);
	if (rc > 0 || rc == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0) {
		report_gpu_gaps_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

enum gap_class report_gap_class(const struct report_gap *g)
{
	if (g->unproven)
		return GAP_UNPROVEN;
	return g->active ? GAP_BUSY_OUTSIDE : GAP_IDLE;
}

const char *report_gap_class_name(enum gap_class c)
{
	static const char *const names[] = {
	    [GAP_IDLE] = "idle",
	    [GAP_UNPROVEN] = "unproven",
	    [GAP_BUSY_OUTSIDE] = "busy outside trace",
	};

	return names[c];
}
