/* SPDX-License-Identifier: MIT */
/* The one hash table; see hashmap.h. */
#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>

static size_t home(const struct tally_map *m, uint64_t k0, uint64_t k1)
{
	return (size_t)(tally_hash_pair(k0, k1) >> m->shift);
}

uint32_t tally_map_get(const struct tally_map *m, uint64_t k0, uint64_t k1)
{
	size_t i, mask = m->cap - 1;

	if (!m->cap)
		return 0;
	for (i = home(m, k0, k1); m->slot[i].value; i = (i + 1) & mask)
		if (m->slot[i].k0 == k0 && m->slot[i].k1 == k1)
			return m->slot[i].value;
	return 0;
}

static void place(struct tally_map *m, const struct tally_map_slot *s)
{
	size_t i, mask = m->cap - 1;

	for (i = home(m, s->k0, s->k1); m->slot[i].value; i = (i + 1) & mask)
		;
	m->slot[i] = *s;
}

static int grow(struct tally_map *m)
{
	struct tally_map old = *m;
	size_t i;

	m->cap = old.cap ? 2 * old.cap : 64;
	m->shift = old.cap ? old.shift - 1 : 64 - 6;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	if (!m->slot) {
		*m = old;
		return -ENOMEM;
	}
	for (i = 0; i < old.cap; i++)
		if (old.slot[i].value)
			place(m, &old.slot[i]);
	free(old.slot);
	return 0;
}

int tally_map_put(struct tally_map *m, uint64_t k0, uint64_t k1, uint32_t value)
{
	size_t i, mask;

	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	mask = m->cap - 1;
	for (i = home(m, k0, k1); m->slot[i].value; i = (i + 1) & mask)
		if (m->slot[i].k0 == k0 && m->slot[i].k1 == k1) {
			m->slot[i].value = value;
			return 0;
		}
	m->slot[i] = (struct tally_map_slot){k0, k1, value};
	m->n++;
	return 0;
}

uint32_t tally_map_find(const struct tally_map *m, uint64_t hash,
			bool (*same)(void *ctx, uint32_t value), void *ctx)
{
	size_t i, mask = m->cap - 1;

	if (!m->cap)
		return 0;
	for (i = home(m, hash, 0); m->slot[i].value; i = (i + 1) & mask)
		if (m->slot[i].k0 == hash && same(ctx, m->slot[i].value))
			return m->slot[i].value;
	return 0;
}

int tally_map_add(struct tally_map *m, uint64_t hash, uint32_t value)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	place(m, &(struct tally_map_slot){hash, 0, value});
	m->n++;
	return 0;
}

uint32_t tally_map_del(struct tally_map *m, uint64_t k0, uint64_t k1)
{
	size_t i, j, h, mask = m->cap - 1;
	uint32_t value;

	if (!m->cap)
		return 0;
	for (i = home(m, k0, k1); m->slot[i].value; i = (i + 1) & mask)
		if (m->slot[i].k0 == k0 && m->slot[i].k1 == k1)
			break;
	if (!(value = m->slot[i].value))
		return 0;
	m->slot[i].value = 0;
	m->n--;
	/* backward shift: an entry whose home lies at or before the hole, cyclically, fills it */
	for (j = (i + 1) & mask; m->slot[j].value; j = (j + 1) & mask) {
		h = home(m, m->slot[j].k0, m->slot[j].k1);
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->slot[i] = m->slot[j];
			m->slot[j].value = 0;
			i = j;
		}
	}
	return value;
}

void tally_map_fini(struct tally_map *m)
{
	free(m->slot);
	*m = (struct tally_map){0};
}
