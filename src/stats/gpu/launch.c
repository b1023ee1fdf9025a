/* SPDX-License-Identifier: MIT */
/* Launches joined to their GPU work; see launch.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "launch.h"
#include "select.h"
#include "spill.h"

/* A launch call or a GPU record waiting for its partner, by correlation id. */
struct pend {
	uint32_t corr; /* never 0 (a record without one waits for nothing) */
	uint8_t gpu;   /* 1: the GPU record came first */
	uint8_t kind;
	uint32_t device, stream, name_id, stack_id;
	uint64_t start, end;
};

struct short_name {
	uint64_t n;
	uint32_t stack_id;
};

struct lsec {
	struct pend *pend; /* waiting, in no order */
	size_t n, cap;
	struct tally_map pend_at; /* correlation id -> pend index + 1 */
	struct spill lat, call;	  /* per launch, for exact percentiles: in spills, not in memory */
	bool spills;
	struct short_name *shorts; /* by kernel name id */
	uint32_t nshorts;
	struct launch_row row;
	uint8_t *graph_call; /* by API name id: 1 not a graph launch, 2 a graph launch */
	uint32_t ngraph_call;
};

struct launches {
	struct queues *q;
	bool stats;
	struct lsec cur;
	unsigned cur_index;
	bool cur_used, failed;
	struct launch_row *rows;
	size_t nrows, rcap;
};

struct launches *launches_new(struct queues *q, bool stats)
{
	struct launches *l = calloc(1, sizeof(*l));

	if (l) {
		l->q = q;
		l->stats = stats;
	}
	return l;
}

static void sec_fini(struct lsec *s)
{
	free(s->pend);
	tally_map_fini(&s->pend_at);
	if (s->spills) {
		spill_fini(&s->lat);
		spill_fini(&s->call);
	}
	free(s->shorts);
	free(s->graph_call);
	free(s->row.top_short);
	free(s->row.top_where);
	memset(s, 0, sizeof(*s));
}

void launches_free(struct launches *l)
{
	size_t i;

	if (!l)
		return;
	sec_fini(&l->cur);
	for (i = 0; i < l->nrows; i++) {
		free(l->rows[i].top_short);
		free(l->rows[i].top_where);
	}
	free(l->rows);
	free(l);
}

const struct launch_row *launches_rows(const struct launches *l, size_t *n)
{
	*n = l->nrows;
	return l->rows;
}

/* ---- the pending table: what waits, by correlation id ---------------------------------------- */

static struct pend *pend_find(struct lsec *s, uint32_t corr)
{
	uint32_t k = tally_map_get(&s->pend_at, corr, 0);

	return k ? &s->pend[k - 1] : NULL;
}

static int pend_put(struct lsec *s, const struct pend *p)
{
	if (s->n >= UINT32_MAX - 1 ||
	    !tally_grow_in(&s->pend, &s->cap, s->n + 1, sizeof(*s->pend)) ||
	    tally_map_put(&s->pend_at, p->corr, 0, (uint32_t)s->n + 1) < 0)
		return -ENOMEM;
	s->pend[s->n++] = *p;
	return 0;
}

/* p leaves the table; the last one waiting takes its place, so the table holds only what waits. */
static void pend_del(struct lsec *s, struct pend *p)
{
	size_t i = (size_t)(p - s->pend);

	tally_map_del(&s->pend_at, p->corr, 0);
	if (i != --s->n) {
		s->pend[i] = s->pend[s->n];
		/* an entry present is only updated: it cannot run out of memory */
		(void)tally_map_put(&s->pend_at, s->pend[i].corr, 0, (uint32_t)i + 1);
	}
}

/* ---- matching ---------------------------------------------------------------------------- */

static bool push(struct spill *v, uint64_t x)
{
	uint64_t *p = spill_push(v);

	if (p)
		*p = x;
	return p != NULL;
}

static void note_short(struct lsec *s, const struct pend *gpu)
{
	if (gpu->name_id >= s->nshorts) {
		uint32_t n = gpu->name_id + 64;
		struct short_name *t = tally_resize(s->shorts, n, sizeof(*t));

		if (!t)
			return; /* the name of the most frequent one may then be missed; counts stay
				 */
		memset(t + s->nshorts, 0, (n - s->nshorts) * sizeof(*t));
		s->shorts = t;
		s->nshorts = n;
	}
	if (!s->shorts[gpu->name_id].n)
		s->shorts[gpu->name_id].stack_id = gpu->stack_id;
	s->shorts[gpu->name_id].n++;
}

static int matched(struct launches *l, const struct report_section *rs, const struct pend *call,
		   const struct pend *gpu)
{
	struct lsec *s = &l->cur;
	uint64_t call_ns = call->end - call->start, gpu_ns = gpu->end - gpu->start;

	if (l->q && queues_add(l->q, rs, gpu->device, gpu->stream, call->start, gpu->end) < 0)
		return -ENOMEM;
	if (gpu->kind != TALLY_KIND_KERNEL)
		return 0;
	s->row.matched++;
	if (l->stats && (!push(&s->lat, gpu->start > call->start ? gpu->start - call->start : 0) ||
			 !push(&s->call, call_ns)))
		return -ENOMEM;
	if (gpu_ns < call_ns) {
		s->row.short_n++;
		s->row.short_ns += gpu_ns;
		s->row.overhead_ns += call_ns - gpu_ns;
		note_short(s, gpu);
	}
	return 0;
}

static int take(struct launches *l, const struct report_section *rs, const struct pend *p)
{
	struct pend *other = pend_find(&l->cur, p->corr);
	int rc;

	if (!other || other->gpu == p->gpu)
		return other ? 0 : pend_put(&l->cur, p); /* a repeated id: keep the first */
	rc = p->gpu ? matched(l, rs, other, p) : matched(l, rs, p, other);
	pend_del(&l->cur, other);
	return rc;
}

/* Graph launches are told by name once per API name id: their kernels are counted apart. */
static bool is_graph_launch(struct lsec *s, struct report_section *rs, uint32_t id)
{
	if (id >= s->ngraph_call) {
		uint32_t n = id + 64;
		uint8_t *t = tally_resize(s->graph_call, n, 1);

		if (!t)
			return strstr(report_string(rs, id), "GraphLaunch") != NULL;
		memset(t + s->ngraph_call, 0, n - s->ngraph_call);
		s->graph_call = t;
		s->ngraph_call = n;
	}
	if (!s->graph_call[id])
		s->graph_call[id] = strstr(report_string(rs, id), "GraphLaunch") ? 2 : 1;
	return s->graph_call[id] == 2;
}

static int one(struct launches *l, struct report_section *rs, const struct tally_record *r)
{
	struct lsec *s = &l->cur;
	struct pend p = {.corr = r->correlation_id,
			 .kind = (uint8_t)r->kind,
			 .device = r->device_id,
			 .stream = r->stream_id,
			 .name_id = r->name_id,
			 .stack_id = r->stack_id,
			 .start = report_time(rs, r->start),
			 .end = report_time(rs, r->end)};

	if (p.end < p.start)
		p.end = p.start;
	if (tally_kind_is_api(r->kind)) {
		if (!(r->flags & TALLY_REC_LAUNCH)) /* not a launch, or captured into a graph */
			return 0;
		s->row.launch_calls++;
		if (!p.corr || is_graph_launch(s, rs, r->name_id))
			return 0;
		return take(l, rs, &p);
	}
	if (r->kind == TALLY_KIND_KERNEL) {
		s->row.kernels++;
		s->row.kernel_ns += p.end - p.start;
		if (r->graph_id) {
			s->row.graph_kernels++;
			return 0;
		}
	}
	p.gpu = 1;
	return p.corr ? take(l, rs, &p) : 0;
}

int launches_add(struct launches *l, struct report_section *rs, const struct tally_record *r,
		 size_t n)
{
	size_t i;
	int rc = 0;

	if (!n || !(tally_kind_is_gpu(r[0].kind) || tally_kind_is_api(r[0].kind)))
		return 0;
	if (l->cur_used && l->cur_index != rs->index)
		sec_fini(&l->cur); /* a section that never ended (damaged input) */
	l->cur_index = rs->index;
	l->cur_used = true;
	if (!l->cur.spills) {
		spill_init(&l->cur.lat, sizeof(uint64_t), 0, stats_by_u64);
		spill_init(&l->cur.call, sizeof(uint64_t), 0, stats_by_u64);
		l->cur.spills = true;
	}
	for (i = 0; i < n && rc == 0; i++)
		if (!(r[i].flags & TALLY_REC_BAD_TIME) &&
		    (tally_kind_is_gpu(r[i].kind) || tally_kind_is_api(r[i].kind)))
			rc = one(l, rs, &r[i]);
	return rc;
}

/* ---- a section's row ---------------------------------------------------------------------- */

static void top_short(struct lsec *s, struct report_section *rs)
{
	uint32_t id, best = 0, frame;
	char *base;

	for (id = 0; id < s->nshorts; id++)
		if (s->shorts[id].n > s->shorts[best].n)
			best = id;
	if (!s->nshorts || !s->shorts[best].n)
		return;
	s->row.top_short_n = s->shorts[best].n;
	base = strdup(report_kernel_name(rs, best, REPORT_NAME_BASE));
	s->row.top_short = base;
	if (s->shorts[best].stack_id && (frame = report_user_frame(rs, s->shorts[best].stack_id)))
		s->row.top_where = strdup(report_frame_label(rs, frame));
}

int launches_section_end(struct launches *l, struct report_section *rs)
{
	struct lsec *s = &l->cur;
	struct launch_row *row;
	static const double pct[] = {50, 90, 99, 100};
	uint64_t lat[4], call[1];

	if (!l->cur_used || l->cur_index != rs->index)
		return 0;
	if (l->nrows == l->rcap) {
		size_t cap = l->rcap ? 2 * l->rcap : 16;
		struct launch_row *t = tally_resize(l->rows, cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		l->rows = t;
		l->rcap = cap;
	}
	if (!s->spills) {
		spill_init(&s->lat, sizeof(uint64_t), 0, stats_by_u64);
		spill_init(&s->call, sizeof(uint64_t), 0, stats_by_u64);
		s->spills = true;
	}
	if (stats_spill_percentiles(&s->lat, pct, lat, 4) < 0 ||
	    stats_spill_percentiles(&s->call, pct, call, 1) < 0)
		return -ENOMEM;
	s->row.section = rs->index;
	s->row.lat_p50 = lat[0];
	s->row.lat_p90 = lat[1];
	s->row.lat_p99 = lat[2];
	s->row.lat_max = lat[3];
	s->row.call_p50 = call[0];
	top_short(s, rs);
	row = &l->rows[l->nrows++];
	*row = s->row;
	s->row.top_short = s->row.top_where = NULL; /* the row owns them now */
	sec_fini(s);
	l->cur_used = false;
	return 0;
}
