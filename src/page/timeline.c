/* SPDX-License-Identifier: MIT */
/*
 * The aggregation behind tally report's time axes (timeline.h): two passes over the traces, the
 * first for the span, the second into fixed-width buckets per lane plus the exact events of sparse
 * windows.  Memory is bounded by lanes x buckets and windows x window_cap, never by record count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gaps.h"
#include "grow.h"
#include "hash.h"
#include "idlewhy.h"
#include "metricsum.h"
#include "stacks.h"
#include "summary.h"
#include "timeline.h"

#define WINDOW_BUCKETS 16   /* buckets per exact-event window */
#define WINDOW_CAP     2048 /* events kept per window before it is judged too dense */

struct timeline *timeline_new(unsigned nbuckets, uint64_t exact_budget)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	if (nbuckets < WINDOW_BUCKETS)
		nbuckets = WINDOW_BUCKETS;
	tl->nbuckets = nbuckets / WINDOW_BUCKETS * WINDOW_BUCKETS;
	tl->nwindows = tl->nbuckets / WINDOW_BUCKETS;
	tl->window_cap = WINDOW_CAP;
	tl->exact_budget = exact_budget;
	tl->t0 = UINT64_MAX;
	return tl;
}

static void lane_free(struct tl_lane *l)
{
	free(l->busy);
	free(l->count);
	free(l->top);
	free(l->top_ns);
}

void timeline_free(struct timeline *tl)
{
	size_t i;

	if (!tl)
		return;
	for (i = 0; i < tl->nsecs; i++) {
		free(tl->secs[i].snaps);
		free(tl->secs[i].last);
		free(tl->secs[i].name_map[0]);
		free(tl->secs[i].name_map[1]);
		free(tl->secs[i].stack_name);
	}
	for (i = 0; i < tl->nlanes; i++)
		lane_free(&tl->lanes[i]);
	gm_free(tl->metrics);
	for (i = 0; i < tl->nnames; i++)
		free(tl->names[i]);
	free(tl->secs);
	free(tl->lanes);
	tally_map_fini(&tl->lane_map);
	tally_map_fini(&tl->pass1_devices);
	tally_map_fini(&tl->name_map);
	free(tl->names);
	free(tl->events);
	free(tl->window_count);
	free(tl->window_exact);
	free(tl);
}

/* Section state, created on first sight (sections arrive in index order). */
static struct tl_section *section(struct timeline *tl, const struct report_section *rs)
{
	size_t cap = tl->nsecs, i;

	if (rs->index >= tl->nsecs) {
		if (!tally_grow_in((void **)&tl->secs, &cap, rs->index + 1, sizeof(*tl->secs))) {
			tl->failed = true;
			return NULL;
		}
		for (i = tl->nsecs; i < cap; i++)
			tl->secs[i].t_min = UINT64_MAX;
		tl->nsecs = rs->index + 1;
	}
	return &tl->secs[rs->index];
}

/* ---- pass 1: span, ledger ------------------------------------------- */

static bool is_timed(const struct tally_record *r)
{
	return !(r->flags & TALLY_REC_BAD_TIME) && r->end >= r->start && r->start != 0;
}

/* The devices of every section, for the lane budget (timeline.h): a device's lanes come first. */
static void count_device(struct timeline *tl, uint32_t sec, uint32_t device)
{
	if (tl->last_lane[0].lane && tl->last_lane[0].sec == sec && tl->last_lane[0].a == device)
		return; /* pass 1 borrows the cache: records come in runs of one device */
	tl->last_lane[0].sec = sec;
	tl->last_lane[0].a = device;
	tl->last_lane[0].lane = 1;
	if (!tally_map_get(&tl->pass1_devices, sec, device) &&
	    tally_map_put(&tl->pass1_devices, sec, device, 1) < 0)
		tl->failed = true;
}

static int pass1_records(void *ctx, struct report_section *rs, const struct tally_record *r,
			 size_t n)
{
	struct timeline *tl = ctx;
	struct tl_section *ts = section(tl, rs);
	size_t i;

	for (i = 0; ts && i < n; i++) {
		if (!is_timed(&r[i]))
			continue;
		if (report_time(rs, r[i].start) < ts->t_min)
			ts->t_min = report_time(rs, r[i].start);
		if (report_time(rs, r[i].end) > ts->t_max)
			ts->t_max = report_time(rs, r[i].end);
		if (tally_kind_is_gpu(r[i].kind))
			count_device(tl, rs->index, r[i].device_id);
	}
	return tl->failed ? -ENOMEM : 0;
}

static const unsigned tl_snap_counter_ids[TL_SNAP_COUNTERS] = {
    TALLY_C_RECORDS_PARSED,  TALLY_C_DROPPED_CUPTI,   TALLY_C_BAD_TIME,
    TALLY_C_POOL_HIGH_WATER, TALLY_C_POOL_CAPACITY,   TALLY_C_WRITE_FAILURES,
    TALLY_C_BYTES_WRITTEN,   TALLY_C_BUFFERS_REFUSED, TALLY_C_QUEUE_HIGH_WATER,
};

void timeline_snap_of(const struct tally_ledger *l, struct tl_snap *s)
{
	size_t k;

	memset(s, 0, sizeof(*s));
	s->t_end = l->t_end;
	s->slice = l->slice;
	s->final = l->final;
	for (k = 0; k < TL_SNAP_COUNTERS; k++)
		s->v[k] = l->v[tl_snap_counter_ids[k]];
	for (k = 0; k < tally_loss_counters_count; k++)
		s->loss += l->v[tally_loss_counters[k]];
}

/* Keep every stride-th snapshot; when the section's share is full, every other one of those. */
static int keep_snap(struct timeline *tl, struct tl_section *ts, const struct tally_ledger *l)
{
	size_t k;

	if (!ts->snap_stride)
		ts->snap_stride = 1;
	if (ts->snaps_seen++ % ts->snap_stride)
		return 0;
	if (ts->nsnaps == tl->snaps_per_section) {
		for (k = 0; 2 * k < ts->nsnaps; k++)
			ts->snaps[k] = ts->snaps[2 * k];
		ts->nsnaps = k;
		ts->snap_stride *= 2;
		if ((ts->snaps_seen - 1) % ts->snap_stride)
			return 0;
	}
	if (!tally_grow_in((void **)&ts->snaps, &ts->snap_cap, ts->nsnaps + 1, sizeof(*ts->snaps)))
		return -ENOMEM;
	timeline_snap_of(l, &ts->snaps[ts->nsnaps++]);
	return 0;
}

static int pass1_ledger(void *ctx, struct report_section *rs, const struct tally_ledger *l)
{
	struct timeline *tl = ctx;
	struct tl_section *ts = section(tl, rs);

	if (ts && !ts->last)
		ts->last = malloc(sizeof(*ts->last));
	if (!ts || !ts->last || keep_snap(tl, ts, l) < 0) {
		tl->failed = true;
		return -ENOMEM;
	}
	*ts->last = *l;
	return 0;
}

/*
 * A summary's section (tally stats --partial) has no records: its span and its latest ledger come
 * from its facts (src/format/summary.h), its times already aligned; its ranks-table figures too
 * (timeline-json.c).
 */
static int pass1_section_end(void *ctx, struct report_section *rs)
{
	struct timeline *tl = ctx;
	const struct tally_section *s = rs->s;
	struct tl_section *ts = section(tl, rs);

	if (!ts)
		return -ENOMEM;
	if (!s->summary || !s->facts)
		return 0;
	tl->summaries++;
	if (s->t_min != UINT64_MAX && s->t_max >= s->t_min && s->t_max) {
		ts->t_min = s->t_min;
		ts->t_max = s->t_max;
	}
	return s->ledgers ? pass1_ledger(ctx, rs, &s->ledger) : 0;
}

static int pass1_section(void *ctx, struct report_section *rs)
{
	struct timeline *tl = ctx;

	return section(tl, rs) ? 0 : -ENOMEM;
}

void timeline_pass1_ops(struct timeline *tl, struct report_scan_ops *ops, size_t inputs)
{
	tl->snaps_per_section = TL_SNAPS_BUDGET / (inputs ? inputs : 1);
	if (tl->snaps_per_section > TL_SNAPS_PER_SECTION)
		tl->snaps_per_section = TL_SNAPS_PER_SECTION;
	if (tl->snaps_per_section < 16)
		tl->snaps_per_section = 16;
	memset(ops, 0, sizeof(*ops));
	ops->ctx = tl;
	ops->section = pass1_section;
	ops->section_end = pass1_section_end;
	ops->records = pass1_records;
	ops->ledger = pass1_ledger;
}

/* Where bucket b begins (relative ns); a span near 2^64 ns must not overflow the conversion. */
static uint64_t bucket_edge(const struct timeline *tl, unsigned b)
{
	double t = b * tl->bucket_ns;

	return t >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)t;
}

int timeline_prepare(struct timeline *tl, const struct report_set *set, uint64_t origin)
{
	size_t i;

	for (i = 0; i < tl->nsecs && i < set->nsections; i++) {
		struct tl_section *ts = &tl->secs[i];

		if (ts->t_min == UINT64_MAX)
			continue;
		if (ts->t_min < tl->t0)
			tl->t0 = ts->t_min;
		if (ts->t_max > tl->t1)
			tl->t1 = ts->t_max;
	}
	if (tl->t0 == UINT64_MAX)
		tl->t0 = tl->t1 = origin;
	tl->first = tl->t0;
	if (origin < tl->t0) /* the one origin of every output, before the first record or at it */
		tl->t0 = origin;
	tl->device_reserve = tl->pass1_devices.n;
	if (tl->device_reserve > (TL_LANES_MAX - TL_LANE_TYPES) / 2)
		tl->device_reserve = (TL_LANES_MAX - TL_LANE_TYPES) / 2;
	tally_map_fini(&tl->pass1_devices);
	memset(tl->last_lane, 0, sizeof(tl->last_lane));
	/* one ns more, so that the latest end falls inside the last bucket */
	tl->bucket_ns = ((double)(tl->t1 - tl->t0) + 1.0) / tl->nbuckets;
	tl->window_count = calloc(tl->nwindows, sizeof(*tl->window_count));
	tl->window_exact = calloc(tl->nwindows, 1);
	return tl->window_count && tl->window_exact ? 0 : -ENOMEM;
}

/* ---- pass 2: lanes, buckets, names, exact events ------------------------------------------ */

static long lane_new(struct timeline *tl, uint32_t sec, uint32_t type, uint32_t a, uint32_t b)
{
	struct tl_lane *l;

	if (!tally_grow_in((void **)&tl->lanes, &tl->lane_cap, tl->nlanes + 1, sizeof(*tl->lanes)))
		return -1;
	l = &tl->lanes[tl->nlanes];
	*l = (struct tl_lane){.sec = sec, .type = type, .a = a, .b = b};
	l->busy = calloc(tl->nbuckets, sizeof(*l->busy));
	l->count = calloc(tl->nbuckets, sizeof(*l->count));
	l->top = calloc(tl->nbuckets, sizeof(*l->top));
	l->top_ns = calloc(tl->nbuckets, sizeof(*l->top_ns));
	if (!l->busy || !l->count || !l->top || !l->top_ns ||
	    tally_map_put(&tl->lane_map, tally_key32(sec, type), tally_key32(a, b),
			  (uint32_t)tl->nlanes + 1) < 0) {
		lane_free(l);
		return -1;
	}
	tl->device_lanes += type == TL_LANE_DEVICE && sec != TL_LANE_OTHER;
	return (long)tl->nlanes++;
}

/* May (sec, type, ...) have a lane of its own?  The budget is the page's (timeline.h): device
 * lanes may use all of it, the others leave room for the devices pass 1 saw. */
static bool own_lane_allowed(const struct timeline *tl, uint32_t type)
{
	size_t own_max = TL_LANES_MAX - TL_LANE_TYPES;
	size_t reserved =
	    tl->device_reserve > tl->device_lanes ? tl->device_reserve - tl->device_lanes : 0;

	if (type == TL_LANE_DEVICE)
		return tl->nlanes < own_max;
	return tl->nlanes + reserved < own_max;
}

static struct tl_lane *lane_lookup(struct timeline *tl, uint32_t sec, uint32_t type, uint32_t a,
				   uint32_t b)
{
	uint32_t found = tally_map_get(&tl->lane_map, tally_key32(sec, type), tally_key32(a, b));
	long i;

	if (found)
		return &tl->lanes[found - 1];
	/* past the budget, every rank's further threads or streams share one lane per type */
	if (sec != TL_LANE_OTHER && !own_lane_allowed(tl, type))
		return lane_lookup(tl, TL_LANE_OTHER, type, TL_LANE_OTHER, 0);
	i = lane_new(tl, sec, type, a, b);
	if (i < 0) {
		tl->failed = true;
		return NULL;
	}
	return &tl->lanes[i];
}

/* The index + 1 of name s, one entry per distinct name whatever the number of ranks using it. */
static uint32_t name_add(struct timeline *tl, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = tally_hash_bytes(s, len);
	uint32_t found = tally_map_get(&tl->name_map, h, len);
	char *copy;

	if (found && strcmp(tl->names[found - 1], s) == 0)
		return found;
	copy = strdup(s);
	if (!copy ||
	    !tally_grow_in((void **)&tl->names, &tl->name_cap, tl->nnames + 1, sizeof(char *))) {
		free(copy);
		tl->failed = true;
		return 0;
	}
	tl->names[tl->nnames++] = copy;
	/* a different name with the same hash keeps its own entry, unshared */
	if (!found && tally_map_put(&tl->name_map, h, len, (uint32_t)tl->nnames) < 0)
		tl->failed = true;
	return (uint32_t)tl->nnames;
}

/* Records come in runs on one stream or thread: what was asked for last, per type, first. */
static struct tl_lane *lane(struct timeline *tl, uint32_t sec, uint32_t type, uint32_t a,
			    uint32_t b)
{
	struct tl_lane *l;

	if (tl->last_lane[type].lane && tl->last_lane[type].sec == sec &&
	    tl->last_lane[type].a == a && tl->last_lane[type].b == b)
		return &tl->lanes[tl->last_lane[type].lane - 1];
	l = lane_lookup(tl, sec, type, a, b);
	tl->last_lane[type].sec = sec;
	tl->last_lane[type].a = a;
	tl->last_lane[type].b = b;
	tl->last_lane[type].lane = l ? (uint32_t)(l - tl->lanes) + 1 : 0;
	return l;
}

/* Copies and memsets have no string: one name per copy kind, cached apart from string ids. */
static uint32_t memop_name(struct timeline *tl, struct tl_section *ts, const struct tally_record *r)
{
	unsigned op = r->kind == TALLY_KIND_MEMSET ? 0 : 1 + (r->subkind & 15);
	char buf[64];

	if (!ts->memop_name[op]) {
		if (op == 0)
			snprintf(buf, sizeof(buf), "[CUDA memset]");
		else
			snprintf(buf, sizeof(buf), "[CUDA memcpy %s]",
				 report_memcpy_kind_label(r->subkind));
		ts->memop_name[op] = name_add(tl, buf);
	}
	return ts->memop_name[op];
}

/* A sample's name: the innermost frame of its stack, cached per section and stack id. */
static uint32_t sample_name(struct timeline *tl, struct report_section *rs,
			    const struct tally_record *r)
{
	struct tl_section *ts = &tl->secs[rs->index];
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, r->stack_id);
	uint32_t id = st ? r->stack_id : 0;
	size_t cap = ts->nstack_name;

	if (r->flags & TALLY_REC_TORN)
		id = 0;
	if (!tally_grow_in((void **)&ts->stack_name, &cap, (size_t)id + 1, sizeof(uint32_t))) {
		tl->failed = true;
		return 0;
	}
	ts->nstack_name = (uint32_t)cap;
	if (!ts->stack_name[id])
		ts->stack_name[id] = name_add(tl, !id ? "[torn, or no stack]"
						      : report_frame_label(rs, st->frames[0]));
	return ts->stack_name[id];
}

/* The name of a timed record, as index + 1 into tl->names; cached per section and string id. */
static uint32_t record_name(struct timeline *tl, struct report_section *rs,
			    const struct tally_record *r)
{
	struct tl_section *ts = &tl->secs[rs->index];
	int which = r->kind != TALLY_KIND_KERNEL;
	uint32_t id = r->name_id < rs->s->nstrings ? r->name_id : 0, *m;
	size_t cap = ts->nmap[which];

	if (r->kind == TALLY_KIND_MEMCPY || r->kind == TALLY_KIND_MEMSET)
		return memop_name(tl, ts, r);
	if (r->kind == TALLY_KIND_CPU_SAMPLE)
		return sample_name(tl, rs, r);
	if (!tally_grow_in((void **)&ts->name_map[which], &cap, (size_t)id + 1, sizeof(uint32_t))) {
		tl->failed = true;
		return 0;
	}
	ts->nmap[which] = (uint32_t)cap;
	m = &ts->name_map[which][id];
	if (!*m)
		*m = name_add(tl, which ? report_string(rs, id)
					: report_kernel_name(rs, id, REPORT_NAME_DEMANGLED));
	return *m;
}

static unsigned bucket_of(const struct timeline *tl, uint64_t rel)
{
	double b = (double)rel / tl->bucket_ns;

	return b >= tl->nbuckets ? tl->nbuckets - 1 : (unsigned)b;
}

/* Spread [s, e) (relative ns) over buckets; with top, the longest event names each bucket. */
static void spread(const struct timeline *tl, uint64_t *busy, uint32_t *top, uint64_t *top_ns,
		   uint64_t s, uint64_t e, uint32_t name)
{
	unsigned b = bucket_of(tl, s), last = bucket_of(tl, e);

	for (; b <= last; b++) {
		uint64_t lo = bucket_edge(tl, b), hi = bucket_edge(tl, b + 1), in;

		if (s > hi || e < lo)
			continue;
		in = (e < hi ? e : hi) - (s > lo ? s : lo);
		busy[b] += in;
		if (top && in >= top_ns[b]) {
			top_ns[b] = in;
			top[b] = name;
		}
	}
}

static void lane_add(struct timeline *tl, struct tl_lane *l, uint64_t s, uint64_t e, uint32_t name)
{
	l->count[bucket_of(tl, s)]++;
	l->events++;
	l->busy_ns += e - s;
	spread(tl, l->busy, l->top, l->top_ns, s, e, name);
}

static void keep_event(struct timeline *tl, uint32_t lane_index, uint64_t s, uint64_t e,
		       uint32_t name, uint32_t corr)
{
	uint32_t w = bucket_of(tl, s) / WINDOW_BUCKETS;

	if (++tl->window_count[w] > tl->window_cap)
		return; /* too dense to draw one by one: its buckets stand for it */
	if (!tally_grow_in((void **)&tl->events, &tl->event_cap, tl->nevents + 1,
			   sizeof(*tl->events))) {
		tl->failed = true;
		return;
	}
	tl->events[tl->nevents++] = (struct tl_event){
	    .start = s, .dur = e - s, .lane = lane_index, .name = name, .corr = corr, .window = w};
}

static uint32_t lane_type_of(unsigned kind)
{
	if (tally_kind_is_gpu(kind))
		return TL_LANE_GPU;
	if (tally_kind_is_api(kind))
		return TL_LANE_API;
	if (kind == TALLY_KIND_CPU_SAMPLE)
		return TL_LANE_SAMPLES;
	if (kind == TALLY_KIND_OSRT)
		return TL_LANE_OSRT;
	return kind == TALLY_KIND_NVTX_RANGE ? TL_LANE_NVTX : TL_LANE_TYPES;
}

/* A host thread's lanes sit beside its API calls: its CUPTI id where THREADS ties the two. */
static uint32_t host_lane_thread(const struct report_section *rs, uint32_t tid)
{
	const struct tally_thread *t = tally_section_thread(rs->s, tid);

	return t && t->pthread_id ? (uint32_t)t->pthread_id : tid;
}

static void pass2_record(struct timeline *tl, struct report_section *rs,
			 const struct tally_record *r, uint32_t type)
{
	uint64_t s = report_time(rs, r->start) - tl->t0, e = report_time(rs, r->end) - tl->t0;
	uint32_t a = type == TL_LANE_GPU ? r->device_id : r->thread_id;

	if (type == TL_LANE_SAMPLES || type == TL_LANE_OSRT)
		a = host_lane_thread(rs, r->thread_id);
	if (type == TL_LANE_SAMPLES) /* a sample stands for its period of the thread's time */
		e = s + idle_why_period(rs);
	struct tl_lane *l = lane(tl, rs->index, type, a, type == TL_LANE_GPU ? r->stream_id : 0);
	uint32_t name = record_name(tl, rs, r);

	if (!l)
		return;
	lane_add(tl, l, s, e, name);
	keep_event(tl, (uint32_t)(l - tl->lanes), s, e, name, r->correlation_id);
	if (type == TL_LANE_GPU && (l = lane(tl, rs->index, TL_LANE_DEVICE, r->device_id, 0)))
		lane_add(tl, l, s, e, name);
}

static int pass2_records(void *ctx, struct report_section *rs, const struct tally_record *r,
			 size_t n)
{
	struct timeline *tl = ctx;
	uint32_t type = lane_type_of(r[0].kind);
	size_t i;

	if (r[0].kind == TALLY_KIND_GPU_METRIC)
		return tl->metrics ? gm_add(tl->metrics, rs, r, n) : 0;
	if (type == TL_LANE_TYPES || rs->index >= tl->nsecs)
		return 0;
	for (i = 0; i < n && !tl->failed; i++) {
		/* a kind per batch, but a damaged file may say otherwise: check each */
		if (is_timed(&r[i]) && lane_type_of(r[i].kind) == type &&
		    report_time(rs, r[i].start) >= tl->t0 && report_time(rs, r[i].end) <= tl->t1)
			pass2_record(tl, rs, &r[i], type);
	}
	return tl->failed ? -ENOMEM : 0;
}

static int pass2_section_end(void *ctx, struct report_section *rs)
{
	struct timeline *tl = ctx;

	return tl->metrics ? gm_section_end(tl->metrics, rs) : 0;
}

void timeline_pass2_ops(struct timeline *tl, struct report_scan_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->ctx = tl;
	ops->records = pass2_records;
	ops->section_end = pass2_section_end;
}

/* ---- exact windows ------------------------------------------------------------------------ */

static const struct timeline *sort_tl; /* qsort has no context argument */

static int cmp_window(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	uint32_t ca = sort_tl->window_count[a], cb = sort_tl->window_count[b];

	return ca < cb ? -1 : ca > cb ? 1 : (a > b) - (a < b);
}

void timeline_choose_exact(struct timeline *tl)
{
	uint32_t *order = malloc(tl->nwindows * sizeof(*order)), i;
	uint64_t used = 0;

	if (!order)
		return; /* no exact windows: the buckets still show everything */
	for (i = 0; i < tl->nwindows; i++)
		order[i] = i;
	sort_tl = tl;
	qsort(order, tl->nwindows, sizeof(*order), cmp_window);
	for (i = 0; i < tl->nwindows; i++) {
		uint32_t c = tl->window_count[order[i]];

		if (c > tl->window_cap || used + c > tl->exact_budget)
			break;
		used += c;
		tl->window_exact[order[i]] = 1;
	}
	free(order);
}

bool timeline_window_exact(const struct timeline *tl, uint32_t w)
{
	return w < tl->nwindows && tl->window_exact[w];
}
