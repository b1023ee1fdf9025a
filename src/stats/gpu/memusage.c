/* SPDX-License-Identifier: MIT */
/*
 * CUDA memory over time, from MEMORY records (allocations and releases): the bytes in use per
 * device and memory kind after each event, its peak, and the totals.  Records come in CUPTI's
 * buffer order, so events are kept and replayed in time order at the end.  A release that does not
 * say its size takes it from its allocation, by address.
 *
 * What these bytes are depends on the program's allocator: PyTorch's caching allocator asks CUDA
 * for large blocks and keeps them, so the curve is its reserved memory
 * (torch.cuda.memory_reserved()), not the memory of live tensors.
 */
#include "memusage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void mem_usage_add(struct mem_usage *m, const struct report_section *rs,
		   const struct tally_record *r)
{
	struct mem_event *e;

	if (r->subkind != TALLY_MEM_ALLOC && r->subkind != TALLY_MEM_RELEASE)
		return;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct mem_event *t = tally_resize(m->ev, cap, sizeof(*t));

		if (!t) {
			m->failed = true;
			return;
		}
		m->ev = t;
		m->cap = cap;
	}
	e = &m->ev[m->n++];
	e->t = report_time(rs, r->start);
	e->bytes = r->bytes;
	e->addr = r->address;
	e->device = r->device_id;
	e->sec = rs->index;
	e->kind = (uint8_t)r->src_kind;
	e->op = (uint8_t)r->subkind;
	e->seq = (uint32_t)m->n;
}

static int cmp_event(const void *pa, const void *pb)
{
	const struct mem_event *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Open allocations by (section, address): the size a release without one frees. */
struct live_map {
	struct live {
		uint64_t addr, bytes;
		uint32_t sec;
		bool used;
	} * slot;
	size_t cap, n;
};

/* Addresses are 512 B- to 2 MiB-aligned: every bit must move the slot, not just the low ones. */
static uint64_t live_hash(uint64_t addr, uint32_t sec)
{
	return tally_hash_pair(addr, sec);
}

static struct live *live_find(struct live_map *lm, uint64_t addr, uint32_t sec)
{
	size_t i;

	for (i = live_hash(addr, sec) & (lm->cap - 1); lm->slot[i].used;
	     i = (i + 1) & (lm->cap - 1))
		if (lm->slot[i].addr == addr && lm->slot[i].sec == sec)
			return &lm->slot[i];
	return &lm->slot[i];
}

/* The section+device+kind row of e, made if new. */
static struct mem_usage_row *row_for(struct mem_usage *m, const struct mem_event *e)
{
	uint32_t found = tally_map_get(&m->row_map, tally_key32(e->sec, e->device), e->kind);
	struct mem_usage_row *t;

	if (found)
		return &m->rows[found - 1];
	if (m->nrows == m->rows_cap) {
		size_t cap = m->rows_cap ? 2 * m->rows_cap : 8;

		t = tally_resize(m->rows, cap, sizeof(*t));
		if (!t)
			return NULL;
		m->rows = t;
		m->rows_cap = cap;
	}
	if (tally_map_put(&m->row_map, tally_key32(e->sec, e->device), e->kind,
			  (uint32_t)m->nrows + 1) < 0)
		return NULL;
	t = &m->rows[m->nrows++];
	memset(t, 0, sizeof(*t));
	t->sec = e->sec;
	t->device = e->device;
	t->kind = e->kind;
	return t;
}

static uint64_t release_size(struct live_map *lm, const struct mem_event *e)
{
	struct live *l = live_find(lm, e->addr, e->sec);
	uint64_t bytes = e->bytes;

	if (l->used) {
		if (!bytes)
			bytes = l->bytes;
		/* Removed by marking it a tombstone of size 0: lookups keep probing past it. */
		l->bytes = 0;
		l->addr = ~l->addr;
	}
	return bytes;
}

/* a + b, or UINT64_MAX (and *saturated) when that does not fit: a crafted or broken trace may
 * claim more bytes than 64 bits count, and a total must not wrap to a small number. */
static uint64_t add_bytes(uint64_t a, uint64_t b, bool *saturated)
{
	if (a > UINT64_MAX - b) {
		*saturated = true;
		return UINT64_MAX;
	}
	return a + b;
}

static int apply(struct mem_usage *m, struct live_map *lm, struct mem_event *e)
{
	struct mem_usage_row *row = row_for(m, e);
	struct live *l;

	if (!row)
		return -ENOMEM;
	if (e->op == TALLY_MEM_ALLOC) {
		l = live_find(lm, e->addr, e->sec);
		*l = (struct live){e->addr, e->bytes, e->sec, true};
		lm->n++;
		row->allocs++;
		row->alloc_bytes = add_bytes(row->alloc_bytes, e->bytes, &m->saturated);
		row->in_use = add_bytes(row->in_use, e->bytes, &m->saturated);
	} else {
		e->bytes = release_size(lm, e);
		row->frees++;
		row->freed_bytes = add_bytes(row->freed_bytes, e->bytes, &m->saturated);
		row->in_use -= e->bytes < row->in_use ? e->bytes : row->in_use;
	}
	if (row->in_use > row->peak) {
		row->peak = row->in_use;
		row->peak_time = e->t;
	}
	e->in_use = row->in_use;
	return 0;
}

int mem_usage_finish(struct mem_usage *m)
{
	struct live_map lm = {0};
	size_t i;
	int rc = 0;

	if (m->failed)
		return -ENOMEM;
	if (m->n > 1)
		qsort(m->ev, m->n, sizeof(*m->ev), cmp_event);
	lm.cap = 64;
	while (lm.cap < 2 * m->n + 2)
		lm.cap *= 2;
	lm.slot = calloc(lm.cap, sizeof(*lm.slot));
	if (!lm.slot)
		return -ENOMEM;
	for (i = 0; i < m->n && rc == 0; i++)
		rc = apply(m, &lm, &m->ev[i]);
	free(lm.slot);
	return rc;
}

void mem_usage_fini(struct mem_usage *m)
{
	free(m->ev);
	free(m->rows);
	tally_map_fini(&m->row_map);
	memset(m, 0, sizeof(*m));
}
