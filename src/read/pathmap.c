/* SPDX-License-Identifier: MIT */
/* An index of strings into the caller's table, on the one hash map; see pathmap.h. */
#include "pathmap.h"

#include <string.h>

#include "hash.h"

struct lookup {
	const struct pathmap *m;
	const char *s;
};

static bool same(void *ctx, uint32_t value)
{
	const struct lookup *l = ctx;
	const char *key = l->m->key(l->m->ctx, value - 1);

	return key && strcmp(key, l->s) == 0;
}

size_t pathmap_find(const struct pathmap *m, const char *s)
{
	struct lookup l = {m, s};
	uint32_t found = tally_map_find(&m->map, tally_hash_str(s), same, &l);

	return found ? found - 1 : SIZE_MAX;
}

bool pathmap_add(struct pathmap *m, size_t i)
{
	const char *key = m->key(m->ctx, i);

	return key && i < UINT32_MAX - 1 &&
	       tally_map_add(&m->map, tally_hash_str(key), (uint32_t)i + 1) == 0;
}

void pathmap_fini(struct pathmap *m)
{
	tally_map_fini(&m->map);
}
