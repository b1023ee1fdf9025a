/* SPDX-License-Identifier: MIT */
/* Writer-side string interning; see strtab.h. */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "writer.h"

int tally_strtab_init(struct tally_strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->next_id = 1;
	t->first_pending = 1;
	return 0;
}

void tally_strtab_fini(struct tally_strtab *t)
{
	size_t i;

	for (i = 0; i < t->count; i++)
		free(t->strs[i].str);
	free(t->strs);
	tally_map_fini(&t->by_text);
	tally_map_fini(&t->by_ptr);
	tally_buf_fini(&t->pending);
	memset(t, 0, sizeof(*t));
}

struct lookup {
	const struct tally_strtab *t;
	const char *s;
	size_t len;
};

static bool same_text(void *ctx, uint32_t id)
{
	const struct lookup *l = ctx;
	const struct strtab_entry *e = &l->t->strs[id - 1];

	return e->len == l->len && memcmp(e->str, l->s, l->len) == 0;
}

uint32_t tally_strtab_intern_len(struct tally_strtab *t, const char *s, size_t len)
{
	struct lookup l = {t, s, len};
	struct strtab_entry *e;
	uint64_t h;
	uint32_t id;

	if (!s || len > UINT32_MAX)
		return 0;
	h = tally_checksum(s, len);
	if ((id = tally_map_find(&t->by_text, h, same_text, &l)))
		return id;
	if (t->next_id == UINT32_MAX ||
	    !tally_grow_in(&t->strs, &t->cap, t->count + 1, sizeof(*t->strs)))
		goto fail;
	e = &t->strs[t->count];
	if (!(e->str = malloc(len + 1)))
		goto fail;
	memcpy(e->str, s, len);
	e->str[len] = '\0';
	e->len = (uint32_t)len;
	if (tally_map_add(&t->by_text, h, t->next_id) < 0) {
		free(e->str);
		goto fail;
	}
	t->count++;
	tally_buf_put_varint(&t->pending, len);
	tally_buf_put(&t->pending, s, len);
	t->pending_count++;
	return t->next_id++;
fail:
	t->failed = true;
	return 0;
}

uint32_t tally_strtab_intern(struct tally_strtab *t, const char *s)
{
	return s ? tally_strtab_intern_len(t, s, strlen(s)) : 0;
}

uint32_t tally_strtab_intern_ptr(struct tally_strtab *t, const char *s)
{
	uint32_t id;

	if (!s)
		return 0;
	if ((id = tally_map_get(&t->by_ptr, (uint64_t)(uintptr_t)s, 0)))
		return id;
	id = tally_strtab_intern(t, s);
	if (id)
		(void)tally_map_put(&t->by_ptr, (uint64_t)(uintptr_t)s, 0,
				    id); /* only a shortcut */
	return id;
}

bool tally_strtab_take_pending(struct tally_strtab *t, struct tally_buf *payload)
{
	if (!t->pending_count)
		return false;
	tally_buf_put_varint(payload, t->first_pending);
	tally_buf_put_varint(payload, t->pending_count);
	tally_buf_put(payload, t->pending.data, t->pending.len);
	t->first_pending += t->pending_count;
	t->pending_count = 0;
	tally_buf_reset(&t->pending);
	return true;
}
