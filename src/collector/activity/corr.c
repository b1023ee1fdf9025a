/* SPDX-License-Identifier: MIT */
/* Correlation check; see corr.h. */
#include "corr.h"

#include <stdlib.h>
#include <string.h>

void tally_corr_init(struct tally_corr *c)
{
	memset(c, 0, sizeof(*c));
}

void tally_corr_fini(struct tally_corr *c)
{
	unsigned i, j;

	for (i = 0; i < CORR_DIR_SIZE; i++) {
		if (!c->dir[i])
			continue;
		for (j = 0; j < CORR_TABLE_SIZE; j++)
			free(c->dir[i][j]);
		free(c->dir[i]);
	}
	free(c->recent);
	memset(c, 0, sizeof(*c));
}

static void remember(struct tally_corr *c, uint32_t id, bool gpu, uint64_t ts)
{
	if (!c->recent && !(c->recent = calloc(CORR_RECENT, sizeof(*c->recent))))
		return;
	c->recent[c->recent_next] = (struct corr_recent){id, gpu, ts};
	c->recent_next = (c->recent_next + 1) % CORR_RECENT;
}

static struct corr_page *page_for(struct tally_corr *c, uint32_t id)
{
	unsigned d = id >> 22, t = (id >> 12) & (CORR_TABLE_SIZE - 1);
	struct corr_page *p;

	if (!c->dir[d]) {
		c->dir[d] = calloc(CORR_TABLE_SIZE, sizeof(*c->dir[d]));
		if (!c->dir[d])
			goto fail;
	}
	p = c->dir[d][t];
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			goto fail;
		p->t_first = UINT64_MAX;
		c->dir[d][t] = p;
		c->pages++;
	}
	return p;
fail:
	c->failed = true;
	return NULL;
}

static void page_touch(struct tally_corr *c, struct corr_page *p, uint32_t id, uint64_t ts)
{
	if (ts && ts < p->t_first)
		p->t_first = ts;
	if (ts > p->t_last)
		p->t_last = ts;
	p->touched = true;
	if (id > c->max_id)
		c->max_id = id;
}

void tally_corr_api(struct tally_corr *c, uint32_t id, bool launches, uint64_t ts)
{
	unsigned bit = id & (CORR_PAGE_IDS - 1);
	struct corr_page *p;

	if (!id || !(p = page_for(c, id)))
		return;
	p->api[bit / 64] |= 1ull << (bit % 64);
	if (launches) {
		p->launch[bit / 64] |= 1ull << (bit % 64);
		if (!(p->gpu[bit / 64] & 1ull << (bit % 64)))
			remember(c, id, false, ts);
	}
	page_touch(c, p, id, ts);
}

void tally_corr_gpu(struct tally_corr *c, uint32_t id, uint64_t ts)
{
	unsigned bit = id & (CORR_PAGE_IDS - 1);
	struct corr_page *p;

	if (!id || !(p = page_for(c, id)))
		return;
	if (!(p->api[bit / 64] & 1ull << (bit % 64)) && !(p->gpu[bit / 64] & 1ull << (bit % 64)))
		remember(c, id, true, ts);
	p->gpu[bit / 64] |= 1ull << (bit % 64);
	page_touch(c, p, id, ts);
}

/* Unmatched launches and GPU records in one page. */
static void page_unmatched(const struct corr_page *p, uint64_t *launches, uint64_t *gpu)
{
	unsigned w;

	*launches = *gpu = 0;
	for (w = 0; w < CORR_PAGE_WORDS; w++) {
		*launches += (uint64_t)__builtin_popcountll(p->launch[w] & ~p->gpu[w]);
		*gpu += (uint64_t)__builtin_popcountll(p->gpu[w] & ~p->api[w]);
	}
}

void tally_corr_sweep(struct tally_corr *c)
{
	unsigned i, j;

	for (i = 0; i < CORR_DIR_SIZE; i++) {
		for (j = 0; c->dir[i] && j < CORR_TABLE_SIZE; j++) {
			struct corr_page *p = c->dir[i][j];
			uint64_t page_end = ((uint64_t)i << 22 | (uint64_t)j << 12) + CORR_PAGE_IDS;
			uint64_t l, g;

			if (!p)
				continue;
			if (p->touched) {
				p->touched = false;
				p->quiet = 0;
				continue;
			}
			if (++p->quiet < 2 || page_end + 2 * CORR_PAGE_IDS > c->max_id)
				continue;
			page_unmatched(p, &l, &g);
			if (l || g)
				continue;
			free(p);
			c->dir[i][j] = NULL;
			c->pages_freed++;
		}
	}
}

static bool is_unmatched(const struct tally_corr *c, const struct corr_recent *r)
{
	unsigned d = r->id >> 22, t = (r->id >> 12) & (CORR_TABLE_SIZE - 1);
	unsigned bit = r->id & (CORR_PAGE_IDS - 1);
	struct corr_page *p = c->dir[d] ? c->dir[d][t] : NULL;
	uint64_t m = 1ull << (bit % 64);

	if (!p)
		return false;
	if (r->gpu)
		return (p->gpu[bit / 64] & m) && !(p->api[bit / 64] & m);
	return (p->launch[bit / 64] & m) && !(p->gpu[bit / 64] & m);
}

/* Entries cut by a window's edge: taken out of the bitmaps (so they count once, as cut). */
static uint64_t take_edges(struct tally_corr *c, bool check_gpu, corr_edge_fn at_edge, void *ctx)
{
	uint64_t cut = 0;
	uint32_t i;

	for (i = 0; c->recent && at_edge && i < CORR_RECENT; i++) {
		struct corr_recent *r = &c->recent[i];
		unsigned d = r->id >> 22, t = (r->id >> 12) & (CORR_TABLE_SIZE - 1);
		unsigned bit = r->id & (CORR_PAGE_IDS - 1);

		if (!r->id || (r->gpu && !check_gpu) || !is_unmatched(c, r) || !at_edge(ctx, r->ts))
			continue;
		if (r->gpu)
			c->dir[d][t]->gpu[bit / 64] &= ~(1ull << (bit % 64));
		else
			c->dir[d][t]->launch[bit / 64] &= ~(1ull << (bit % 64));
		cut++;
	}
	return cut;
}

void tally_corr_finish(struct tally_corr *c, bool check_gpu,
		       void (*window)(void *ctx, uint64_t t0, uint64_t t1, uint64_t launches,
				      uint64_t gpu),
		       corr_edge_fn at_edge, void *ctx, uint64_t *unmatched_launches,
		       uint64_t *unmatched_gpu, uint64_t *cut_at_edges)
{
	unsigned i, j;

	*cut_at_edges = take_edges(c, check_gpu, at_edge, ctx);
	*unmatched_launches = *unmatched_gpu = 0;
	for (i = 0; i < CORR_DIR_SIZE; i++) {
		for (j = 0; c->dir[i] && j < CORR_TABLE_SIZE; j++) {
			struct corr_page *p = c->dir[i][j];
			uint64_t l, g;

			if (!p)
				continue;
			page_unmatched(p, &l, &g);
			if (!check_gpu)
				g = 0;
			if ((l || g) && window)
				window(ctx, p->t_first == UINT64_MAX ? 0 : p->t_first, p->t_last, l,
				       g);
			*unmatched_launches += l;
			*unmatched_gpu += g;
		}
	}
}

void tally_corr_count(const struct tally_corr *c, bool check_gpu, uint64_t since, uint64_t *cut,
		      uint64_t *unmatched_launches, uint64_t *unmatched_gpu)
{
	uint64_t cut_l = 0, cut_g = 0, l_all = 0, g_all = 0, l, g;
	unsigned i, j;
	uint32_t k;

	for (k = 0; c->recent && k < CORR_RECENT; k++) {
		const struct corr_recent *r = &c->recent[k];

		if (!r->id || (r->gpu && !check_gpu) || r->ts < since || !is_unmatched(c, r))
			continue;
		if (r->gpu)
			cut_g++;
		else
			cut_l++;
	}
	for (i = 0; i < CORR_DIR_SIZE; i++)
		for (j = 0; c->dir[i] && j < CORR_TABLE_SIZE; j++) {
			if (!c->dir[i][j])
				continue;
			page_unmatched(c->dir[i][j], &l, &g);
			l_all += l;
			g_all += check_gpu ? g : 0;
		}
	*unmatched_launches = l_all > cut_l ? l_all - cut_l : 0;
	*unmatched_gpu = g_all > cut_g ? g_all - cut_g : 0;
	*cut = l_all + g_all - *unmatched_launches - *unmatched_gpu;
}
