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

/* The size a release frees: its own, else that of the allocation it ends (live: (address,
 * section) -> the allocation's event index + 1, in common/hashmap.c, which mixes every bit of the
 * 512 B- to 2 MiB-aligned addresses), which is no longer open. */
static uint64_t release_size(const struct mem_usage *m, struct tally_map *live,
			     const struct mem_event *e)
{
	uint32_t at = tally_map_del(live, e->addr, e->sec);

	return e->bytes || !at ? e->bytes : m->ev[at - 1].bytes;
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

static int apply(struct mem_usage *m, struct tally_map *live, size_t i)
{
	struct mem_event *e = &m->ev[i];
	struct mem_usage_row *row = row_for(m, e);

	if (!row)
		return -ENOMEM;
	if (e->op == TALLY_MEM_ALLOC) {
		if (tally_map_put(live, e->addr, e->sec, (uint32_t)i + 1) < 0)
			return -ENOMEM;
		row->allocs++;
		row->alloc_bytes = add_bytes(row->alloc_bytes, e->bytes, &m->saturated);
		row->in_use = add_bytes(row->in_use, e->bytes, &m->saturated);
	} else {
		e->bytes = release_size(m, live, e);
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
	struct tally_map live = {0}; /* the allocations still open */
	size_t i;
	int rc = 0;

	if (m->failed || m->n >= UINT32_MAX)
		return -ENOMEM;
	if (m->n > 1)
		qsort(m->ev, m->n, sizeof(*m->ev), cmp_event);
	for (i = 0; i < m->n && rc == 0; i++)
		rc = apply(m, &live, i);
	tally_map_fini(&live);
	return rc;
}

void mem_usage_fini(struct mem_usage *m)
{
	free(m->ev);
	free(m->rows);
	tally_map_fini(&m->row_map);
	memset(m, 0, sizeof(*m));
}
