/* SPDX-License-Identifier: MIT */
/*
 * The aggregation behind tally stats: one streaming pass that files every timed record into the
 * groups of the reports asked for.  Summary reports keep each group's values (8 bytes a record)
 * because an exact median needs them all; everything else is a count.  Trace reports keep a
 * compact row per record, to sort by start.  Finishing computes the exact median (selection, not
 * sorting) and the sample standard deviation (two passes in long double) of every group.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "satmath.h"
#include "select.h"
#include "stats-int.h"

static const char *memop_names[MEMOPS];
static char memop_store[MEMOPS][48];

bool stats_wants(const struct stats *st, enum report_id r)
{
	return st->req.reports >> r & 1;
}

static void moments_add(struct moments *m, uint64_t x)
{
	if (!m->n || x < m->min)
		m->min = x;
	if (x > m->max)
		m->max = x;
	m->n++;
	m->total = tally_add_sat(m->total, x, &m->saturated);
	m->sq += (unsigned __int128)x * x;
	m->lsq += (long double)x * (long double)x;
}

void moments_merge(struct moments *m, const struct moments *o)
{
	if (!o->n)
		return;
	if (!m->n || o->min < m->min)
		m->min = o->min;
	if (o->max > m->max)
		m->max = o->max;
	m->n = tally_add_sat(m->n, o->n, &m->saturated);
	m->total = tally_add_sat(m->total, o->total, &m->saturated);
	m->saturated |= o->saturated;
	m->sq += o->sq;
	m->lsq += o->lsq;
}

static void sketch_value(struct stats *st, struct group *g, uint64_t x)
{
	moments_add(&g->m, x);
	if (tally_sketch_add(&g->sk, x, 1) < 0)
		st->failed = true;
}

int stats_to_sketches(struct stats *st)
{
	size_t r, i, k;

	if (st->sketching)
		return 0;
	st->sketching = true;
	snprintf(st->why_sketch, sizeof(st->why_sketch),
		 "more values than the %" PRIu64 " --exact-medians keeps", st->exact_values);
	for (r = 0; r < R_COUNT; r++)
		for (i = 0; i < st->t[r].n; i++) {
			struct group *g = &st->t[r].g[i];

			for (k = 0; k < g->vals.n; k++) {
				moments_add(&g->m, g->vals.v[k]);
				if (tally_sketch_add(&g->sk, g->vals.v[k], 1) < 0)
					return -ENOMEM;
			}
			free(g->vals.v);
			memset(&g->vals, 0, sizeof(g->vals));
		}
	st->kept = 0;
	return 0;
}

/* A value into a group that keeps its values, growing it within the budget (stats_request). */
static void vec_push(struct stats *st, struct group *g, uint64_t x)
{
	struct u64vec *v = &g->vals;

	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 16;
		uint64_t *t;

		if (st->kept + (cap - v->cap) > st->exact_values) {
			if (stats_to_sketches(st) < 0)
				st->failed = true;
			else
				sketch_value(st, g, x);
			return;
		}
		t = tally_resize(v->v, cap, sizeof(*t));
		if (!t) {
			st->failed = true;
			return;
		}
		st->kept += cap - v->cap;
		v->v = t;
		v->cap = cap;
	}
	v->v[v->n++] = x;
}

static void *row_push(struct stats *st, struct spill *v)
{
	void *row = spill_push(v);

	if (!row)
		st->failed = true;
	return row;
}

/* ---- group tables ---------------------------------------------------------------------- */

static uint64_t group_hash(const char *name, const int32_t *gb, unsigned style)
{
	uint64_t h = tally_hash_str(name);

	h = tally_hash_bytes_from(h, &style, sizeof(style));
	return gb ? tally_hash_bytes_from(h, gb, 6 * sizeof(int32_t)) : h;
}

static bool group_equal(const struct group *g, const char *name, const int32_t *gb, unsigned style)
{
	if (g->style != style || strcmp(g->name, name) != 0)
		return false;
	return !gb || (memcmp(g->grid, gb, 3 * sizeof(int32_t)) == 0 &&
		       memcmp(g->block, gb + 3, 3 * sizeof(int32_t)) == 0);
}

/*
 * The group for (name, grid/block, style), made if new.  Returns its index, or -1 when memory ran
 * out.  gb (six ints) is NULL for reports that do not split by launch shape.
 */
long gtable_get(struct gtable *t, const char *name, const int32_t *gb, unsigned style)
{
	size_t mask, i;
	uint64_t h = group_hash(name, gb, style);
	struct group *g;

	if ((t->n + 1) * 2 > t->nslot) {
		size_t nslot = t->nslot ? 2 * t->nslot : 64, k;
		uint32_t *slot = calloc(nslot, sizeof(*slot));

		if (!slot)
			return -1;
		for (k = 0; k < t->n; k++) {
			const struct group *o = &t->g[k];
			int32_t ogb[6];

			memcpy(ogb, o->grid, sizeof(o->grid));
			memcpy(ogb + 3, o->block, sizeof(o->block));
			for (i = group_hash(o->name, gb ? ogb : NULL, o->style) & (nslot - 1);
			     slot[i]; i = (i + 1) & (nslot - 1))
				;
			slot[i] = (uint32_t)k + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	}
	mask = t->nslot - 1;
	for (i = h & mask; t->slot[i]; i = (i + 1) & mask)
		if (group_equal(&t->g[t->slot[i] - 1], name, gb, style))
			return (long)t->slot[i] - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct group *ng = tally_resize(t->g, cap, sizeof(*ng));

		if (!ng)
			return -1;
		t->g = ng;
		t->cap = cap;
	}
	g = &t->g[t->n];
	memset(g, 0, sizeof(*g));
	g->name = strdup(name);
	if (!g->name)
		return -1;
	if (gb) {
		memcpy(g->grid, gb, sizeof(g->grid));
		memcpy(g->block, gb + 3, sizeof(g->block));
	}
	g->style = style;
	t->slot[i] = (uint32_t)++t->n;
	return (long)t->n - 1;
}

static void gtable_fini(struct gtable *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->g[i].name);
		free(t->g[i].vals.v);
		tally_sketch_fini(&t->g[i].sk);
	}
	free(t->g);
	free(t->slot);
	free(t->order);
	memset(t, 0, sizeof(*t));
}

/* ---- per-section caches ------------------------------------------------------------------ */

static struct sec_cache *sec_cache(struct stats *st, unsigned sec)
{
	/* doubling: a merged trace of thousands of ranks comes one section after another */
	if (sec >= st->nsecs) {
		if (!tally_grow_in((void **)&st->secs, &st->secs_cap, (size_t)sec + 1,
				   sizeof(*st->secs)))
			return NULL;
		st->nsecs = (size_t)sec + 1;
	}
	return &st->secs[sec];
}

/* cache[id] holds group index + 1; grown to cover id. */
static uint32_t *id_slot(uint32_t **cache, uint32_t *n, uint32_t id)
{
	if (id >= *n) {
		uint32_t cap = *n ? *n : 64;
		uint32_t *t;

		while (cap <= id && cap < (1u << 30))
			cap *= 2;
		if (cap <= id)
			return NULL;
		t = tally_resize(*cache, cap, sizeof(*t));
		if (!t)
			return NULL;
		memset(t + *n, 0, (cap - *n) * sizeof(*t));
		*cache = t;
		*n = cap;
	}
	return &(*cache)[id];
}

/* The group of report r for string id of rs, named by name(rs, id). */
static struct group *named_group(struct stats *st, enum report_id r, struct report_section *rs,
				 uint32_t id)
{
	struct sec_cache *c = sec_cache(st, rs->index);
	uint32_t *slot;
	long g;

	if (!c)
		goto oom;
	/* Names beyond the string table are not cached per id (a wild id must not grow it). */
	slot = id < rs->s->nstrings || id == 0 ? (r == R_KERN_SUM ? id_slot(&c->kern, &c->nkern, id)
								  : id_slot(&c->api, &c->napi, id))
					       : NULL;
	if (slot && *slot)
		return &st->t[r].g[*slot - 1];
	g = gtable_get(&st->t[r],
		       r == R_KERN_SUM ? report_kernel_name(rs, id, st->req.names[r])
				       : report_string(rs, id),
		       NULL, 0);
	if (g < 0)
		goto oom;
	if (slot)
		*slot = (uint32_t)g + 1;
	return &st->t[r].g[g];
oom:
	st->failed = true;
	return NULL;
}

/* The hot path: a group already cached for this id (one load), else named_group(). */
static inline struct group *cached_group(struct stats *st, enum report_id r,
					 struct report_section *rs, uint32_t id)
{
	const struct sec_cache *c = rs->index < st->nsecs ? &st->secs[rs->index] : NULL;
	const uint32_t *cache = c ? (r == R_KERN_SUM ? c->kern : c->api) : NULL;
	uint32_t n = c ? (r == R_KERN_SUM ? c->nkern : c->napi) : 0;

	if (id < n && cache[id])
		return &st->t[r].g[cache[id] - 1];
	return named_group(st, r, rs, id);
}

/* The hot path: a store while values are kept, else the moments and the sketch. */
static inline void group_add(struct stats *st, struct group *g, uint64_t x)
{
	if (st->sketching)
		sketch_value(st, g, x);
	else if (g->vals.n < g->vals.cap)
		g->vals.v[g->vals.n++] = x;
	else
		vec_push(st, g, x);
}

/* nsys names a range "domain:message"; the default domain is the empty one (":message"). */
static long nvtx_group_new(struct stats *st, struct report_section *rs,
			   const struct tally_record *r)
{
	const char *domain = r->domain_id ? report_string(rs, r->domain_id) : "";
	const char *msg = report_string(rs, r->name_id);
	size_t n = strlen(domain) + strlen(msg) + 2;
	char *name = malloc(n);
	long g;

	if (!name)
		return -1;
	snprintf(name, n, "%s:%s", domain, msg);
	g = gtable_get(&st->t[R_NVTX_SUM], name, NULL, r->subkind ? 1 : 0);
	free(name);
	return g;
}

static struct group *nvtx_group(struct stats *st, struct report_section *rs,
				const struct tally_record *r)
{
	struct sec_cache *c = sec_cache(st, rs->index);
	uint64_t style = (uint64_t)r->domain_id << 1 | (r->subkind ? 1 : 0);
	uint32_t v;
	long g;

	if (!c)
		goto oom;
	if ((v = tally_map_get(&c->nvtx, style, r->name_id)))
		return &st->t[R_NVTX_SUM].g[v - 1];
	g = nvtx_group_new(st, rs, r);
	if (g < 0 || tally_map_put(&c->nvtx, style, r->name_id, (uint32_t)g + 1) < 0)
		goto oom;
	return &st->t[R_NVTX_SUM].g[g];
oom:
	st->failed = true;
	return NULL;
}

static unsigned memop_index(const struct tally_record *r)
{
	if (r->kind == TALLY_KIND_MEMSET)
		return MEMOPS - 1;
	return r->subkind < MEMOPS - 1 ? r->subkind : 0;
}

static struct group *memop_group(struct stats *st, enum report_id rep, unsigned op)
{
	uint32_t *slot = &st->memop_group[rep == R_MEM_SIZE_SUM][op];
	long g;

	if (!*slot) {
		g = gtable_get(&st->t[rep], memop_names[op], NULL, 0);
		if (g < 0) {
			st->failed = true;
			return NULL;
		}
		*slot = (uint32_t)g + 1;
	}
	return &st->t[rep].g[*slot - 1];
}

/* ---- names of trace rows ------------------------------------------------------------------ */

static bool pool_grow(struct strpool *p)
{
	size_t cap = p->cap ? 2 * p->cap : 256, i, j;
	char **slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return false;
	for (i = 0; i < p->cap; i++) {
		if (!p->slot[i])
			continue;
		for (j = tally_hash_str(p->slot[i]) & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = p->slot[i];
	}
	free(p->slot);
	p->slot = slot;
	p->cap = cap;
	return true;
}

/* An owned copy of s, one per distinct string; NULL when memory ran out. */
static const char *pool_name(struct stats *st, const char *s)
{
	struct strpool *p = &st->names;
	size_t i;

	if ((p->n + 1) * 2 > p->cap && !pool_grow(p)) {
		st->failed = true;
		return NULL;
	}
	for (i = tally_hash_str(s) & (p->cap - 1); p->slot[i]; i = (i + 1) & (p->cap - 1))
		if (strcmp(p->slot[i], s) == 0)
			return p->slot[i];
	p->slot[i] = strdup(s);
	if (!p->slot[i]) {
		st->failed = true;
		return NULL;
	}
	p->n++;
	return p->slot[i];
}

static void pool_fini(struct strpool *p)
{
	size_t i;

	for (i = 0; i < p->cap; i++)
		free(p->slot[i]);
	free(p->slot);
}

/* ---- the records ----------------------------------------------------------------------- */

static void add_gpu_row(struct stats *st, struct report_section *rs, const struct tally_record *r,
			const char *name)
{
	struct gpu_row *row;

	name = pool_name(st, name);
	if (!name || !(row = row_push(st, &st->gpu)))
		return;
	row->start = report_time(rs, r->start);
	row->dur = r->end - r->start;
	row->bytes = r->bytes;
	row->name = name;
	row->corr = r->correlation_id;
	row->sec = rs->index;
	row->device = r->device_id;
	row->ctx = r->context_id;
	row->stream = r->stream_id;
	memcpy(row->grid, r->grid, sizeof(row->grid));
	memcpy(row->block, r->block, sizeof(row->block));
	row->regs = r->registers;
	row->smem_static = r->static_smem;
	row->smem_dynamic = r->dynamic_smem;
	row->kind = (uint8_t)r->kind;
	row->src_kind = (uint8_t)(r->kind == TALLY_KIND_MEMSET ? r->subkind : r->src_kind);
	row->dst_kind = (uint8_t)r->dst_kind;
}

/* cuda_kern_stack_sum: the kernel's time under its launch's innermost user frame (style 0) and
 * under its whole stack (style 1); labels are made once per stack id of a section. */
static struct group *stack_group(struct stats *st, struct report_section *rs, uint32_t stack,
				 unsigned style)
{
	struct sec_cache *c = sec_cache(st, rs->index);
	uint32_t *slot = c && (stack == 0 || stack < rs->s->stacks.nstacks)
			     ? id_slot(&c->stack_groups[style], &c->nstack_groups[style], stack)
			     : NULL;
	const char *label;
	long g;

	if (slot && *slot)
		return &st->t[R_KERN_STACK_SUM].g[*slot - 1];
	if (stack && !tally_stack_get(&rs->s->stacks, stack))
		label = "[stack lost]";
	else if (style == 0)
		label = stack ? report_frame_label(rs, report_user_frame(rs, stack)) : "[no stack]";
	else
		label = report_stack_label(rs, stack);
	g = gtable_get(&st->t[R_KERN_STACK_SUM], label, NULL, style);
	if (g < 0) {
		st->failed = true;
		return NULL;
	}
	if (slot)
		*slot = (uint32_t)g + 1;
	return &st->t[R_KERN_STACK_SUM].g[g];
}

static void kernel_stack(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	struct group *g;
	unsigned style;

	st->stacked_kernels += r->stack_id != 0;
	for (style = 0; style < 2; style++)
		if ((g = stack_group(st, rs, r->stack_id, style)))
			group_add(st, g, r->end - r->start);
}

static void kernel(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	uint64_t dur = r->end - r->start;
	struct group *g;

	if (stats_wants(st, R_KERN_SUM) && (g = cached_group(st, R_KERN_SUM, rs, r->name_id)))
		group_add(st, g, dur);
	if (stats_wants(st, R_KERN_GB_SUM)) {
		int32_t gb[6] = {r->grid[0],  r->grid[1],  r->grid[2],
				 r->block[0], r->block[1], r->block[2]};
		long k = gtable_get(
		    &st->t[R_KERN_GB_SUM],
		    report_kernel_name(rs, r->name_id, st->req.names[R_KERN_GB_SUM]), gb, 0);

		if (k < 0)
			st->failed = true;
		else
			group_add(st, &st->t[R_KERN_GB_SUM].g[k], dur);
	}
	if (stats_wants(st, R_GPU_TRACE))
		add_gpu_row(st, rs, r,
			    report_kernel_name(rs, r->name_id, st->req.names[R_GPU_TRACE]));
	if (stats_wants(st, R_KERN_STACK_SUM))
		kernel_stack(st, rs, r);
}

static void memop(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	unsigned op = memop_index(r);
	struct group *g;

	if (stats_wants(st, R_MEM_TIME_SUM) && (g = memop_group(st, R_MEM_TIME_SUM, op)))
		group_add(st, g, r->end - r->start);
	if (stats_wants(st, R_MEM_SIZE_SUM) && (g = memop_group(st, R_MEM_SIZE_SUM, op)))
		group_add(st, g, r->bytes);
	if (stats_wants(st, R_GPU_TRACE))
		add_gpu_row(st, rs, r, memop_names[op]);
}

static void api(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	struct group *g;
	struct api_row *row;
	const char *name;

	if (stats_wants(st, R_API_SUM) && (g = cached_group(st, R_API_SUM, rs, r->name_id)))
		group_add(st, g, r->end - r->start);
	if (!stats_wants(st, R_API_TRACE))
		return;
	name = pool_name(st, report_string(rs, r->name_id));
	if (!name || !(row = row_push(st, &st->api)))
		return;
	row->start = report_time(rs, r->start);
	row->dur = r->end - r->start;
	row->name = name;
	row->corr = r->correlation_id;
	row->sec = rs->index;
	row->pid = r->process_id;
	row->tid = r->thread_id;
	row->result = (int32_t)r->value;
}

/* A pop without its push has no duration to report. */
static void nvtx_range(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	struct group *g;

	if (!(r->flags & TALLY_REC_DEPTH_LOST) && stats_wants(st, R_NVTX_SUM) &&
	    (g = nvtx_group(st, rs, r)))
		group_add(st, g, r->end - r->start);
}

/* osrt_sum: blocking calls by call, nsys's columns (one group per call, found once). */
static void osrt(struct stats *st, struct report_section *rs, const struct tally_record *r)
{
	uint32_t *slot = r->cbid < TALLY_OSRT_CALL_MAX ? &st->osrt_group[r->cbid] : NULL;
	const char *name = tally_osrt_call_name(r->cbid);
	long g;

	if (!stats_wants(st, R_OSRT_SUM))
		return;
	if (slot && *slot) {
		group_add(st, &st->t[R_OSRT_SUM].g[*slot - 1], r->end - r->start);
		return;
	}
	g = gtable_get(&st->t[R_OSRT_SUM], name ? name : report_string(rs, r->name_id), NULL, 0);
	if (g < 0) {
		st->failed = true;
		return;
	}
	if (slot && name)
		*slot = (uint32_t)g + 1;
	group_add(st, &st->t[R_OSRT_SUM].g[g], r->end - r->start);
}

typedef void (*record_fn)(struct stats *st, struct report_section *rs,
			  const struct tally_record *r);

/* Every RECORDS batch holds one kind: the dispatch is per batch, the loop is tight. */
static record_fn record_handler(unsigned kind)
{
	switch (kind) {
	case TALLY_KIND_KERNEL:
		return kernel;
	case TALLY_KIND_MEMCPY:
	case TALLY_KIND_MEMSET:
		return memop;
	case TALLY_KIND_RUNTIME:
	case TALLY_KIND_DRIVER:
		return api;
	case TALLY_KIND_NVTX_RANGE:
		return nvtx_range;
	case TALLY_KIND_OSRT:
		return osrt;
	default:
		return NULL;
	}
}

/* ---- the analyses ------------------------------------------------------------------------- */

/*
 * One row per analysis the reports read: when it is made (any of the needs in `when`, report
 * table's needs closed over `also`), what it takes from the pass and how it finishes.  Rows finish
 * in this order: the metrics' second pass classes the gaps the rows above made, before the idle
 * classes and the diagnosis read them.  A new analysis is a row here and its own file.
 */
struct analysis {
	uint32_t when; /* made when the needs hold any of these (0: always) */
	uint32_t also; /* what it needs in turn */
	int (*make)(struct stats *st);
	int (*section)(struct stats *st, struct report_section *rs);
	int (*records)(struct stats *st, struct report_section *rs, const struct tally_record *r,
		       size_t n);
	int (*section_end)(struct stats *st, struct report_section *rs);
	int (*finish)(struct stats *st, const struct report_set *set);
	void (*drop)(struct stats *st);
};

static int made(const void *p)
{
	return p ? 0 : -ENOMEM;
}

/* gaps.h: every device's and stream's gaps (and gpu_time_util's buckets) */
static int gaps_make(struct stats *st)
{
	struct report_gaps_opts go = {.gap_min_ns = st->req.gap_min_ns,
				      .bucket_ns = st->req.util_bucket_ns,
				      .util = (st->needs & NEED_UTIL) != 0};

	return made(st->gaps = report_gpu_gaps_new(&go));
}

static int gaps_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			size_t n)
{
	return report_gpu_gaps_add(st->gaps, rs, r, n);
}

static int gaps_section_end(struct stats *st, struct report_section *rs)
{
	return report_gpu_gaps_section(st->gaps, rs);
}

static void gaps_drop(struct stats *st)
{
	report_gpu_gaps_free(st->gaps);
}

/* breakdown.h */
static int bd_make(struct stats *st)
{
	return made(st->bd = breakdown_new(st->req.gap_min_ns));
}

static int bd_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
		      size_t n)
{
	return breakdown_add(st->bd, rs, r, n);
}

static int bd_section_end(struct stats *st, struct report_section *rs)
{
	return breakdown_section_end(st->bd, rs);
}

static void bd_drop(struct stats *st)
{
	breakdown_free(st->bd);
}

/* depth.h: fed by the launches below */
static int queues_make(struct stats *st)
{
	return made(st->queues = queues_new(st->req.queue_buckets ? st->req.queue_buckets : 1024));
}

static int queues_start(struct stats *st, struct report_section *rs)
{
	queues_section(st->queues, rs);
	return 0;
}

static int queues_end(struct stats *st, const struct report_set *set)
{
	(void)set;
	return queues_finish(st->queues);
}

static void queues_drop(struct stats *st)
{
	queues_free(st->queues);
}

/* launch.h: its rows when cuda_launch_stats or the diagnosis need them, else only the queues */
static int launches_make(struct stats *st)
{
	return made(st->launches = launches_new(st->queues, (st->needs & NEED_LAUNCHES) != 0));
}

static int launches_records(struct stats *st, struct report_section *rs,
			    const struct tally_record *r, size_t n)
{
	return launches_add(st->launches, rs, r, n);
}

static int launches_end(struct stats *st, struct report_section *rs)
{
	return launches_section_end(st->launches, rs);
}

static void launches_drop(struct stats *st)
{
	launches_free(st->launches);
}

/* steps.h */
static int steps_make(struct stats *st)
{
	return made(st->steps = steps_new(st->req.range));
}

static int steps_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			 size_t n)
{
	return steps_add(st->steps, rs, r, n);
}

static int steps_end(struct stats *st, const struct report_set *set)
{
	(void)set;
	return steps_finish(st->steps);
}

static void steps_drop(struct stats *st)
{
	steps_free(st->steps);
}

/* spread.h */
static int spread_make(struct stats *st)
{
	return made(st->spread = spread_new(st->req.top, st->req.names[R_KERN_SPREAD]));
}

static int spread_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			  size_t n)
{
	return spread_add(st->spread, rs, r, n);
}

static int spread_end(struct stats *st, const struct report_set *set)
{
	(void)set;
	return spread_finish(st->spread);
}

static void spread_drop(struct stats *st)
{
	spread_free(st->spread);
}

/* memusage.h: the MEMORY records */
static int memory_make(struct stats *st)
{
	st->mem = true;
	return 0;
}

static int memory_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			  size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i].kind == TALLY_KIND_MEMORY && !(r[i].flags & TALLY_REC_BAD_TIME))
			mem_usage_add(&st->mem_usage, rs, &r[i]);
	return 0;
}

static int memory_end(struct stats *st, const struct report_set *set)
{
	(void)set;
	return mem_usage_finish(&st->mem_usage);
}

/* samplesum.h */
static int samples_make(struct stats *st)
{
	return made(st->samples = sample_sum_new());
}

static int samples_records(struct stats *st, struct report_section *rs,
			   const struct tally_record *r, size_t n)
{
	return sample_sum_add(st->samples, rs, r, n);
}

static int samples_section_end(struct stats *st, struct report_section *rs)
{
	return sample_sum_section(st->samples, rs);
}

static int samples_end(struct stats *st, const struct report_set *set)
{
	(void)set;
	return sample_sum_finish(st->samples);
}

static void samples_drop(struct stats *st)
{
	sample_sum_free(st->samples);
}

/* metricsum.h: the GPU metrics, and in finishing their second pass over the gaps and ranges */
static int metrics_make(struct stats *st)
{
	return made(st->gm = gm_new(0, 0, 0));
}

static int metrics_records(struct stats *st, struct report_section *rs,
			   const struct tally_record *r, size_t n)
{
	int rc = gm_add(st->gm, rs, r, n);

	if (rc == 0 && (st->needs & NEED_METRIC_RANGES))
		rc = gm_collect_ranges(st->gm, rs, r, n);
	return rc;
}

static int metrics_section_end(struct stats *st, struct report_section *rs)
{
	return gm_section_end(st->gm, rs);
}

/* The summary, then a second pass over the inputs for the metrics over the device gaps (of
 * gpu_gaps and of the idle classes: both are classed by them) and over NVTX ranges. */
static int metrics_end(struct stats *st, const struct report_set *set)
{
	bool nvtx = (st->needs & NEED_METRIC_RANGES) != 0;
	struct report_gap *list = NULL, **each = NULL;
	struct report_idle_gap *holes = NULL;
	size_t n = 0, nholes = 0, i;
	int rc;

	if ((rc = gm_finish(st->gm)) < 0)
		return rc;
	if (st->gaps)
		list = report_gpu_gaps_edit(st->gaps, &n);
	if (st->idle)
		holes = report_idle_gaps_edit(st->idle, &nholes);
	if ((!n && !nholes && !nvtx) || !gm_records(st->gm))
		return 0; /* nothing to take over stretches of time, or no metric to take */
	if (n + nholes && !(each = malloc((n + nholes) * sizeof(*each))))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		each[i] = &list[i];
	for (i = 0; i < nholes; i++)
		each[n + i] = &holes[i].gap;
	rc = gm_windows_pass(st->gm, each, n + nholes, st->gaps, nvtx, set, st->err,
			     sizeof(st->err));
	free(each);
	if (rc == -ENOMEM)
		st->err[0] = '\0'; /* said as out of memory */
	return rc;
}

static void metrics_drop(struct stats *st)
{
	gm_free(st->gm);
}

/* idle.h and idlewhy.h: the idle classes and the host behind each gap */
static int idle_make(struct stats *st)
{
	struct report_idle_opts io = {st->req.gap_min_ns, st->req.kernel_wait_ns};

	if (!(st->idle = report_idle_new(&io)))
		return -ENOMEM;
	return made(st->why = idle_why_new(st->idle, (st->needs & NEED_WHY_ROWS) != 0));
}

static int idle_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			size_t n)
{
	int rc = report_idle_add(st->idle, rs, r, n);

	return rc ? rc : idle_why_add(st->why, rs, r, n);
}

static int idle_section_end(struct stats *st, struct report_section *rs)
{
	int rc = report_idle_section(st->idle, rs);

	return rc ? rc : idle_why_section(st->why, rs);
}

/* The cause across processes (the job's other processes, kept by the row above), then the
 * breakdown's rows. */
static int idle_end(struct stats *st, const struct report_set *set)
{
	int rc = st->procs ? idle_why_follow(st->why, st->procs, set) : 0;

	return rc ? rc : host_reports_finish(st);
}

static void idle_drop(struct stats *st)
{
	free(st->bd_rows);
	idle_why_free(st->why);
	report_idle_free(st->idle);
}

/* jobprocs.h: the samples of the processes that ran no GPU work, kept to the end */
static int procs_make(struct stats *st)
{
	return made(st->procs = jobprocs_new());
}

static int procs_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			 size_t n)
{
	return jobprocs_add(st->procs, rs, r, n);
}

static int procs_section_end(struct stats *st, struct report_section *rs)
{
	return jobprocs_section_end(st->procs, rs);
}

static int procs_end(struct stats *st, const struct report_set *set)
{
	return jobprocs_finish(st->procs, set);
}

static void procs_drop(struct stats *st)
{
	jobprocs_free(st->procs);
}

/* bound.h: after the idle holes of each section (the row above it), then across processes */
static int bound_make(struct stats *st)
{
	return made(st->bound = bound_new(st->req.range));
}

static int bound_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			 size_t n)
{
	return bound_add(st->bound, rs, r, n);
}

static int bound_section(struct stats *st, struct report_section *rs)
{
	return bound_section_end(st->bound, rs, st->idle);
}

static int bound_end(struct stats *st, const struct report_set *set)
{
	return bound_finish(st->bound, set, st->procs);
}

static void bound_drop(struct stats *st)
{
	bound_free(st->bound);
}

/* jobs.h: always (every output warns of traces of several jobs) */
static int jobs_end(struct stats *st, const struct report_set *set)
{
	return report_jobs_group(set, &st->jobs);
}

/* diagnosis.h: the rules over the analyses above */
static int findings_end(struct stats *st, const struct report_set *set)
{
	struct diag_input in = {.set = (struct report_set *)set, .base = st->base};
	struct idle_cause_ctx cause = {st->idle, st->why, set};

	in.bd = breakdown_rows(st->bd, &in.nbd);
	in.ln = launches_rows(st->launches, &in.nln);
	in.steps = steps_verdict(st->steps);
	in.mem = &st->mem_usage;
	in.jobs = &st->jobs;
	in.idle_cause = idle_cause;
	in.idle_ctx = &cause;
	in.bound = bound_rows(st->bound, &in.nbound);
	in.gm = st->gm;
	return diagnose(&in, &st->findings, &st->nfindings);
}

static void findings_drop(struct stats *st)
{
	free(st->findings);
}

#define NEED_DIAGNOSIS_READS                                                                       \
	(NEED_BREAKDOWN | NEED_LAUNCHES | NEED_STEPS | NEED_MEMORY | NEED_IDLE | NEED_JOBS |       \
	 NEED_BOUND)

static const struct analysis analyses[] = {
    {NEED_GAPS | NEED_UTIL, 0, gaps_make, NULL, gaps_records, gaps_section_end, NULL, gaps_drop},
    {NEED_BREAKDOWN, NEED_GAPS | NEED_METRICS, bd_make, NULL, bd_records, bd_section_end, NULL,
     bd_drop},
    {NEED_QUEUES, 0, queues_make, queues_start, NULL, NULL, queues_end, queues_drop},
    {NEED_LAUNCHES | NEED_QUEUES, 0, launches_make, NULL, launches_records, launches_end, NULL,
     launches_drop},
    {NEED_STEPS, 0, steps_make, NULL, steps_records, NULL, steps_end, steps_drop},
    {NEED_SPREAD, 0, spread_make, NULL, spread_records, NULL, spread_end, spread_drop},
    {NEED_MEMORY, 0, memory_make, NULL, memory_records, NULL, memory_end, NULL},
    {NEED_SAMPLES, 0, samples_make, NULL, samples_records, samples_section_end, samples_end,
     samples_drop},
    {NEED_METRICS | NEED_METRIC_RANGES, 0, metrics_make, NULL, metrics_records, metrics_section_end,
     metrics_end, metrics_drop},
    {NEED_BREAKDOWN | NEED_IDLE | NEED_WHY_ROWS, 0, NULL, NULL, NULL, NULL, stats_classify_gaps,
     NULL},
    {NEED_IDLE | NEED_WHY_ROWS | NEED_BOUND, 0, procs_make, NULL, procs_records, procs_section_end,
     procs_end, procs_drop},
    {NEED_IDLE | NEED_WHY_ROWS, NEED_METRICS, idle_make, NULL, idle_records, idle_section_end,
     idle_end, idle_drop},
    {NEED_BOUND, NEED_IDLE | NEED_METRICS, bound_make, NULL, bound_records, bound_section,
     bound_end, bound_drop},
    {0, 0, NULL, NULL, NULL, NULL, jobs_end, NULL},
    {NEED_FINDINGS, NEED_DIAGNOSIS_READS, NULL, NULL, NULL, NULL, findings_end, findings_drop},
};
#define NANALYSES (sizeof(analyses) / sizeof(analyses[0]))

static bool runs(const struct stats *st, const struct analysis *a)
{
	return !a->when || (st->needs & a->when);
}

/* What the wanted reports need, closed over what each analysis needs in turn. */
static uint32_t needs_of(const struct stats *st)
{
	uint32_t needs = 0, before;
	unsigned r;
	size_t i;

	for (r = 0; r < R_COUNT; r++)
		if (stats_wants(st, r))
			needs |= report_defs[r].needs;
	do {
		before = needs;
		for (i = 0; i < NANALYSES; i++)
			if (analyses[i].when & needs)
				needs |= analyses[i].also;
	} while (needs != before);
	return needs;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct stats *st = ctx;
	record_fn fn = record_handler(r[0].kind);
	size_t i;

	if (st->partial && stats_partial_records(st, rs, r, n) < 0)
		st->failed = true;
	for (i = 0; i < NANALYSES && !st->failed; i++)
		if (analyses[i].records && runs(st, &analyses[i]) &&
		    analyses[i].records(st, rs, r, n) < 0)
			st->failed = true;
	for (i = 0; i < n; i++) {
		uint64_t t;

		if (r[i].flags & TALLY_REC_BAD_TIME) {
			st->untimed++;
			continue;
		}
		t = report_time(rs, r[i].start);
		if (r[i].start && r[i].end >= r[i].start && t < st->first)
			st->first = t; /* the page's rule of a timed record (timeline.c) */
		if (fn)
			fn(st, rs, &r[i]);
	}
	return st->failed ? -ENOMEM : 0;
}

/* Gaps and idle classes are made when a section ends: its loss windows are all known by then. */
static int on_section_end(void *ctx, struct report_section *rs)
{
	struct stats *st = ctx;
	size_t i;

	for (i = 0; i < NANALYSES && !st->failed; i++)
		if (analyses[i].section_end && runs(st, &analyses[i]) &&
		    analyses[i].section_end(st, rs) < 0)
			st->failed = true;
	if (st->partial && stats_partial_section_end(st, rs) < 0)
		st->failed = true;
	st->summaries += rs->s->summary;
	if (rs->s->summary && rs->s->facts && rs->s->t_min && rs->s->t_min < st->first)
		st->first = rs->s->t_min; /* a summary's records are gone: its facts say when */
	return st->failed ? -ENOMEM : 0;
}

/* A summary's aggregates (in its sections only), and, for --partial, the chunks a summary keeps. */
static int on_chunk(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		    const uint8_t *payload)
{
	struct stats *st = ctx;

	if (c->type == TALLY_CHUNK_SUMMARY && rs->s->summary &&
	    stats_summary_chunk(st, payload, c->len) < 0)
		st->failed = true;
	if (st->partial && stats_partial_chunk(st, rs, c, payload) < 0)
		st->failed = true;
	return st->failed ? -ENOMEM : 0;
}

static int on_section(void *ctx, struct report_section *rs)
{
	struct stats *st = ctx;
	size_t i;

	for (i = 0; i < NANALYSES; i++)
		if (analyses[i].section && runs(st, &analyses[i]) &&
		    analyses[i].section(st, rs) < 0)
			st->failed = true;
	return st->failed ? -ENOMEM : 0;
}

void stats_scan_ops(struct stats *st, struct report_scan_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->section = on_section;
	ops->records = on_records;
	ops->section_end = on_section_end;
	ops->chunk = on_chunk;
	ops->ctx = st;
}

static int cmp_gpu(const void *pa, const void *pb)
{
	const struct gpu_row *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1;
	return a->corr < b->corr ? -1 : a->corr > b->corr;
}

static int cmp_api(const void *pa, const void *pb)
{
	const struct api_row *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1;
	return a->corr < b->corr ? -1 : a->corr > b->corr;
}

struct stats *stats_new(const struct stats_request *req)
{
	struct stats *st = calloc(1, sizeof(*st));
	unsigned i;

	if (!st)
		return NULL;
	st->req = *req;
	st->first = UINT64_MAX;
	st->exact_values = req->exact_values ? req->exact_values : STATS_EXACT_VALUES;
	st->sketching = req->sketch_only;
	snprintf(st->why_sketch, sizeof(st->why_sketch), "%s", "asked for by --exact-medians 0");
	st->needs = needs_of(st);
	for (i = 0; i < NANALYSES; i++)
		if (analyses[i].make && runs(st, &analyses[i]) && analyses[i].make(st) < 0) {
			stats_free(st);
			return NULL;
		}
	spill_init(&st->gpu, sizeof(struct gpu_row), 0, cmp_gpu);
	spill_init(&st->api, sizeof(struct api_row), 0, cmp_api);
	for (i = 0; i < MEMOPS; i++) {
		if (i == MEMOPS - 1)
			snprintf(memop_store[i], sizeof(memop_store[i]), "[CUDA memset]");
		else
			snprintf(memop_store[i], sizeof(memop_store[i]), "[CUDA memcpy %s]",
				 report_memcpy_kind_label(i));
		memop_names[i] = memop_store[i];
	}
	return st;
}

void stats_free(struct stats *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < R_COUNT; i++)
		gtable_fini(&st->t[i]);
	for (i = 0; i < st->nsecs; i++) {
		free(st->secs[i].kern);
		free(st->secs[i].api);
		tally_map_fini(&st->secs[i].nvtx);
		free(st->secs[i].stack_groups[0]);
		free(st->secs[i].stack_groups[1]);
	}
	for (i = 0; i < NANALYSES; i++) /* each drop frees what its make made, or nothing */
		if (analyses[i].drop)
			analyses[i].drop(st);
	mem_usage_fini(&st->mem_usage);
	report_jobs_free(&st->jobs);
	stats_partial_free(st->partial);
	free(st->secs);
	spill_fini(&st->gpu);
	spill_fini(&st->api);
	pool_fini(&st->names);
	free(st);
}

const struct gm *stats_gpu_metrics(const struct stats *st)
{
	return st->gm;
}

uint64_t stats_untimed(const struct stats *st)
{
	return st->untimed;
}

/* ---- finishing: exact medians and standard deviations ----------------------------------- */

/*
 * Sum, extremes and the variance's numerator in one pass of exact integer arithmetic.  The sum is
 * 128 bits wide (2^64 records of 2^64 each), so the average stays exact; the total shown stops at
 * UINT64_MAX rather than wrap, and says so (saturated).
 */
static bool exact_moments(const struct u64vec *vals, struct stats_group_view *v, long double *ss,
			  long double *mean)
{
	unsigned __int128 sq = 0, num, total = 0;
	uint64_t min = UINT64_MAX, max = 0;
	size_t i;

	for (i = 0; i < vals->n; i++) {
		uint64_t x = vals->v[i];

		total += x;
		min = x < min ? x : min;
		max = x > max ? x : max;
		sq += (unsigned __int128)x * x;
	}
	v->saturated = total > UINT64_MAX;
	v->total = v->saturated ? UINT64_MAX : (uint64_t)total;
	*mean = (long double)total / (long double)vals->n;
	v->min = min;
	v->max = max;
	/* exact while x < 2^32 and n < 2^31: n * sum(x^2) and sum(x)^2 both fit in 128 bits */
	if (max >= (1ull << 32) || vals->n >= (1ull << 31))
		return false;
	num = (unsigned __int128)vals->n * sq - (unsigned __int128)total * total;
	*ss = (long double)num / (long double)vals->n; /* = sum((x - mean)^2) */
	return true;
}

/* The sum of squared deviations from the sketch: each value at its bucket's centre. */
static long double sketch_ss(const struct tally_sketch *sk, long double mean, uint64_t min,
			     uint64_t max)
{
	uint32_t k, n = tally_sketch_cells(sk), bucket;
	long double ss = 0;

	for (k = 0; k < n; k++) {
		uint64_t count = tally_sketch_cell(sk, k, &bucket);
		long double d = (long double)tally_sketch_centre(bucket, min, max) - mean;

		ss += (long double)count * d * d;
	}
	return ss;
}

/* The mean of the sketch's values, each at its bucket's centre. */
static long double sketch_mean(const struct tally_sketch *sk, uint64_t min, uint64_t max)
{
	uint32_t k, n = tally_sketch_cells(sk), bucket;
	long double sum = 0, count = 0;

	for (k = 0; k < n; k++) {
		uint64_t c = tally_sketch_cell(sk, k, &bucket);

		sum += (long double)c * (long double)tally_sketch_centre(bucket, min, max);
		count += (long double)c;
	}
	return count > 0 ? sum / count : 0;
}

/* A group's mean: exact from the total, or, past a count or total that stopped at UINT64_MAX or
 * outside the extremes (sums that do not belong together), the sketch's. */
static long double group_mean(const struct group *g)
{
	const struct moments *m = &g->m;
	long double mean = (long double)m->total / (long double)m->n;

	if (m->saturated || mean < (long double)m->min || mean > (long double)m->max)
		mean = sketch_mean(&g->sk, m->min, m->max);
	return mean;
}

/*
 * The sum of squared deviations of a group that kept moments: exact where the 128-bit sum of
 * squares is, else from the long double one.  Moments merged from summaries may disagree with
 * themselves (a crafted or damaged summary: a NaN, sums that do not belong to the counts); what
 * no set of values could give (negative, not finite, past n (max - min)^2 / 4) is taken from the
 * sketch instead, within the bound.
 */
static long double moments_ss(const struct group *g)
{
	const struct moments *m = &g->m;
	long double ss, bound, mean = group_mean(g);
	long double range = (long double)(m->max - m->min);

	if (m->max < (1ull << 32) && m->n < (1ull << 31) && !m->saturated)
		ss = (long double)(m->n * m->sq - (unsigned __int128)m->total * m->total) /
		     (long double)m->n;
	else
		ss = m->lsq - (long double)m->total * (long double)m->total / (long double)m->n;
	bound = (long double)m->n * range * range / 4;
	if (isfinite(ss) && ss >= 0 && ss <= bound && !m->saturated)
		return ss;
	ss = sketch_ss(&g->sk, mean, m->min, m->max);
	return !isfinite(ss) || ss < 0 ? 0 : ss > bound ? bound : ss;
}

/* The figures of a group that kept moments and a sketch, not its values. */
static void finish_sketched(struct group *g, struct stats_group_view *v)
{
	const struct moments *m = &g->m;
	long double ss;

	v->count = m->n;
	if (!v->count)
		return;
	v->total = m->total;
	v->saturated = m->saturated;
	v->min = m->min;
	v->max = m->max;
	ss = moments_ss(g);
	v->avg = (double)group_mean(g);
	v->stddev = v->count > 1 ? (double)sqrtl(ss / (long double)(v->count - 1)) : 0.0;
	v->median = tally_sketch_median(&g->sk, m->min, m->max);
}

static void finish_group(const struct stats *st, struct group *g)
{
	struct stats_group_view *v = &g->view;
	long double mean, ss = 0;
	uint64_t mid, next;
	size_t i;

	memset(v, 0, sizeof(*v));
	v->name = g->name;
	memcpy(v->grid, g->grid, sizeof(v->grid));
	memcpy(v->block, g->block, sizeof(v->block));
	if (st->sketching) {
		finish_sketched(g, v);
		return;
	}
	v->count = g->vals.n;
	if (!v->count)
		return;
	if (!exact_moments(&g->vals, v, &ss, &mean)) { /* huge values: two passes, long double */
		for (ss = 0, i = 0; i < g->vals.n; i++) {
			long double d = (long double)g->vals.v[i] - mean;

			ss += d * d;
		}
	}
	v->avg = (double)mean;
	/* the sample standard deviation (n - 1), as nsys reports it; 0 for a single value */
	v->stddev = v->count > 1 ? (double)sqrtl(ss / (long double)(v->count - 1)) : 0.0;
	mid = stats_select(g->vals.v, g->vals.n, (g->vals.n - 1) / 2, v->min, v->max,
			   g->vals.n % 2 ? NULL : &next);
	v->median = g->vals.n % 2 ? (double)mid : ((double)mid + (double)next) / 2;
}

static int cmp_group(const void *pa, const void *pb)
{
	const struct group *a = *(struct group *const *)pa, *b = *(struct group *const *)pb;
	int c;

	if (a->view.total != b->view.total)
		return a->view.total > b->view.total ? -1 : 1;
	c = strcmp(a->name, b->name);
	if (c)
		return c;
	c = memcmp(a->grid, b->grid, sizeof(a->grid));
	return c ? c : memcmp(a->block, b->block, sizeof(a->block));
}

static int finish_table(const struct stats *st, struct gtable *t)
{
	size_t i;

	free(t->order);
	t->order = calloc(t->n ? t->n : 1, sizeof(*t->order));
	if (!t->order)
		return -ENOMEM;
	t->grand_total = 0;
	t->saturated = false;
	for (i = 0; i < t->n; i++) {
		uint64_t total;

		finish_group(st, &t->g[i]);
		total = t->g[i].view.total;
		t->saturated |= t->g[i].view.saturated || t->grand_total > UINT64_MAX - total;
		t->grand_total =
		    t->grand_total > UINT64_MAX - total ? UINT64_MAX : t->grand_total + total;
		t->order[i] = &t->g[i];
	}
	if (t->n > 1)
		qsort(t->order, t->n, sizeof(*t->order), cmp_group);
	return 0;
}

/* Rows of style 0 first, then style 1, each still by total (a stable partition). */
static void group_by_style(struct gtable *t)
{
	struct group **tmp = t->n ? malloc(t->n * sizeof(*tmp)) : NULL;
	size_t i, k = 0;
	unsigned style;

	if (!tmp)
		return;
	for (style = 0; style < 2; style++)
		for (i = 0; i < t->n; i++)
			if (t->order[i]->style == style)
				tmp[k++] = t->order[i];
	if (k == t->n)
		memcpy(t->order, tmp, k * sizeof(*tmp));
	free(tmp);
}

const struct bd_row *stats_breakdown(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->bd ? breakdown_rows(st->bd, n) : NULL;
}

const struct spread_row *stats_spread(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->spread ? spread_rows(st->spread, n) : NULL;
}

const struct bound_row *stats_bound(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->bound ? bound_rows(st->bound, n) : NULL;
}

const struct report_gap *stats_gaps(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->gaps ? report_gpu_gaps_list(st->gaps, n) : NULL;
}

const struct qseries *stats_queues(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->queues ? queues_list(st->queues, n) : NULL;
}

const struct mem_usage *stats_mem_usage(const struct stats *st)
{
	return st->mem ? &st->mem_usage : NULL;
}

const struct report_jobs *stats_jobs(const struct stats *st)
{
	return &st->jobs;
}

void stats_jobs_warning(const struct stats *st, FILE *out, const char *prefix)
{
	char buf[80];
	size_t i;

	if (st->jobs.njobs > 1) {
		fprintf(
		    out,
		    "%stally: WARNING: these traces are of %zu different jobs, not the ranks of "
		    "one: reports that compare ranks compare unrelated runs\n",
		    prefix, st->jobs.njobs);
		snprintf(buf, sizeof(buf), "%stally:   ", prefix);
		report_jobs_print(&st->jobs, out, buf);
	}
	for (i = 0; i < st->jobs.njobs; i++)
		if (report_job_missing(&st->jobs.jobs[i], buf, sizeof(buf)))
			fprintf(out, "%stally: job %zu: only %s are here\n", prefix, i + 1, buf);
}

/*
 * The one time origin of every output: the earliest session start of the set, or the earliest
 * timed record where one came before it (a clock that is not the session's), so that no time is
 * negative.  Every Start (ns), every "+N s" and the page's axes count from it.
 */
static uint64_t time_base(const struct stats *st, const struct report_set *set)
{
	if (!set->base)
		return st->first == UINT64_MAX ? 0 : st->first;
	return st->first < set->base ? st->first : set->base;
}

int stats_finish(struct stats *st, const struct report_set *set)
{
	unsigned r;
	size_t i;
	int rc;

	if (st->failed)
		return -ENOMEM;
	st->set = set;
	st->base = time_base(st, set);
	for (r = 0; r < R_COUNT; r++)
		if (finish_table(st, &st->t[r]) < 0)
			return -ENOMEM;
	group_by_style(&st->t[R_KERN_STACK_SUM]);
	for (i = 0; i < NANALYSES; i++)
		if (analyses[i].finish && runs(st, &analyses[i]) &&
		    (rc = analyses[i].finish(st, set)) < 0)
			return rc == -ENOMEM || !st->err[0] ? -ENOMEM : rc;
	if (spill_sort(&st->gpu) < 0 || spill_sort(&st->api) < 0)
		return -ENOMEM;
	return 0;
}

uint64_t stats_time_base(const struct stats *st)
{
	return st->base;
}

const char *stats_time_origin(const struct stats *st)
{
	if (st->set && st->set->base && st->base == st->set->base)
		return "the session started";
	return st->set && st->set->base ? "the first record (it came before any session start)"
					: "the first record (no session start is recorded)";
}

const char *stats_error(const struct stats *st)
{
	return st->err[0] ? st->err : NULL;
}

const struct stats_group_view *stats_group(const struct stats *st, unsigned report, size_t i)
{
	if (report >= R_COUNT || i >= st->t[report].n || !st->t[report].order)
		return NULL;
	return &st->t[report].order[i]->view;
}
