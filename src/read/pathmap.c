/* SPDX-License-Identifier: MIT */
/* An index of strings into the caller's table; see pathmap.h. */
#include "pathmap.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

size_t pathmap_find(const struct pathmap *m, const char *s)
{
	size_t i;

	if (!m->cap)
		return SIZE_MAX;
	for (i = tally_hash_str(s) & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1))
		if (strcmp(m->key(m->ctx, m->slot[i] - 1), s) == 0)
			return m->slot[i] - 1;
	return SIZE_MAX;
}

static void put(uint32_t *slot, size_t cap, uint64_t h, size_t i)
{
	size_t j;

	for (j = h & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
		;
	slot[j] = (uint32_t)i + 1;
}

bool pathmap_add(struct pathmap *m, size_t i)
{
	size_t cap = m->cap ? m->cap : 64, k;
	uint32_t *slot;

	if (2 * (i + 1) > m->cap) { /* grow, and index every entry again */
		while (2 * (i + 1) > cap)
			cap *= 2;
		if (!(slot = calloc(cap, sizeof(*slot))))
			return false;
		for (k = 0; k < i; k++)
			if (m->key(m->ctx, k))
				put(slot, cap, tally_hash_str(m->key(m->ctx, k)), k);
		free(m->slot);
		m->slot = slot;
		m->cap = cap;
	}
	put(m->slot, m->cap, tally_hash_str(m->key(m->ctx, i)), i);
	return true;
}

void pathmap_fini(struct pathmap *m)
{
	free(m->slot);
	m->slot = NULL;
	m->cap = 0;
}
