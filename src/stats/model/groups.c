/* SPDX-License-Identifier: MIT */
/*
 * The groups of the summary reports (stats-int.h's struct gtable and struct moments): a group found
 * or made by its name, launch shape and style, the exact moments of its values, and every group
 * turned to moments and a sketch once the values kept pass their budget.  Below both the pass
 * (stats.c) and the summaries (summary.c), which file values into groups and merge them: neither
 * calls the other through these.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "stats-int.h"

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

static uint64_t group_hash(const char *name, const int32_t *gb, unsigned style)
{
	uint64_t h = tally_hash_str(name);

	h = tally_hash_bytes_from(h, &style, sizeof(style));
	return gb ? tally_hash_bytes_from(h, gb, 6 * sizeof(int32_t)) : h;
}

/* What gtable_get looks for, and in which table (tally_map_find's ctx). */
struct group_key {
	const struct gtable *t;
	const char *name;
	const int32_t *gb;
	unsigned style;
};

static bool group_equal(void *ctx, uint32_t value)
{
	const struct group_key *k = ctx;
	const struct group *g = &k->t->g[value - 1];

	if (g->style != k->style || strcmp(g->name, k->name) != 0)
		return false;
	return !k->gb || (memcmp(g->grid, k->gb, 3 * sizeof(int32_t)) == 0 &&
			  memcmp(g->block, k->gb + 3, 3 * sizeof(int32_t)) == 0);
}

/*
 * The group for (name, grid/block, style), made if new.  Returns its index, or -1 when memory ran
 * out.  gb (six ints) is NULL for reports that do not split by launch shape.
 */
long gtable_get(struct gtable *t, const char *name, const int32_t *gb, unsigned style)
{
	struct group_key k = {t, name, gb, style};
	uint64_t h = group_hash(name, gb, style);
	uint32_t v = tally_map_find(&t->index, h, group_equal, &k);
	struct group *g;

	if (v)
		return (long)v - 1;
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
	if (tally_map_add(&t->index, h, (uint32_t)t->n + 1) < 0) {
		free(g->name);
		return -1;
	}
	return (long)t->n++;
}

void gtable_fini(struct gtable *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		free(t->g[i].name);
		free(t->g[i].vals.v);
		tally_sketch_fini(&t->g[i].sk);
	}
	free(t->g);
	tally_map_fini(&t->index);
	free(t->order);
	memset(t, 0, sizeof(*t));
}
