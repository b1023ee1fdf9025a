/* SPDX-License-Identifier: MIT */
/* Writer-side string interning; see strtab.h. */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "writer.h"

int tally_strtab_init(struct tally_strtab *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = 1024;
	t->ptr_cap = 1024;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->ptrs = calloc(t->ptr_cap, sizeof(*t->ptrs));
	t->next_id = 1;
	t->first_pending = 1;
	if (!t->slots || !t->ptrs) {
		tally_strtab_fini(t);
		return -ENOMEM;
	}
	return 0;
}

void tally_strtab_fini(struct tally_strtab *t)
{
	size_t i;

	for (i = 0; t->slots && i < t->cap; i++)
		free(t->slots[i].str);
	free(t->slots);
	free(t->ptrs);
	tally_buf_fini(&t->pending);
	memset(t, 0, sizeof(*t));
}

static bool grow_slots(struct tally_strtab *t)
{
	size_t cap = t->cap * 2, i;
	struct strtab_slot *s = calloc(cap, sizeof(*s));

	if (!s)
		return false;
	for (i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i].str)
			continue;
		for (j = t->slots[i].hash & (cap - 1); s[j].str; j = (j + 1) & (cap - 1))
			;
		s[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = s;
	t->cap = cap;
	return true;
}

uint32_t tally_strtab_intern_len(struct tally_strtab *t, const char *s, size_t len)
{
	uint64_t h;
	size_t i;

	if (!s || len > UINT32_MAX)
		return 0;
	if ((t->count + 1) * 4 > t->cap * 3 && !grow_slots(t))
		goto fail;
	h = tally_checksum(s, len);
	for (i = h & (t->cap - 1); t->slots[i].str; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].hash == h && t->slots[i].len == len &&
		    memcmp(t->slots[i].str, s, len) == 0)
			return t->slots[i].id;
	t->slots[i].str = malloc(len + 1);
	if (!t->slots[i].str)
		goto fail;
	memcpy(t->slots[i].str, s, len);
	t->slots[i].str[len] = '\0';
	t->slots[i].hash = h;
	t->slots[i].len = (uint32_t)len;
	t->slots[i].id = t->next_id++;
	t->count++;
	tally_buf_put_varint(&t->pending, len);
	tally_buf_put(&t->pending, s, len);
	t->pending_count++;
	return t->slots[i].id;
fail:
	t->failed = true;
	return 0;
}

uint32_t tally_strtab_intern(struct tally_strtab *t, const char *s)
{
	return s ? tally_strtab_intern_len(t, s, strlen(s)) : 0;
}

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static bool grow_ptrs(struct tally_strtab *t)
{
	size_t cap = t->ptr_cap * 2, i;
	struct ptr_slot *p = calloc(cap, sizeof(*p));

	if (!p)
		return false;
	for (i = 0; i < t->ptr_cap; i++) {
		size_t j;

		if (!t->ptrs[i].ptr)
			continue;
		for (j = ptr_hash(t->ptrs[i].ptr, cap); p[j].ptr; j = (j + 1) & (cap - 1))
			;
		p[j] = t->ptrs[i];
	}
	free(t->ptrs);
	t->ptrs = p;
	t->ptr_cap = cap;
	return true;
}

uint32_t tally_strtab_intern_ptr(struct tally_strtab *t, const char *s)
{
	size_t i;
	uint32_t id;

	if (!s)
		return 0;
	for (i = ptr_hash(s, t->ptr_cap); t->ptrs[i].ptr; i = (i + 1) & (t->ptr_cap - 1))
		if (t->ptrs[i].ptr == s)
			return t->ptrs[i].id;
	id = tally_strtab_intern(t, s);
	if (!id)
		return 0;
	if ((t->ptr_count + 1) * 4 > t->ptr_cap * 3) {
		if (!grow_ptrs(t))
			return id; /* the cache is only a shortcut */
		for (i = ptr_hash(s, t->ptr_cap); t->ptrs[i].ptr; i = (i + 1) & (t->ptr_cap - 1))
			;
	}
	t->ptrs[i].ptr = s;
	t->ptrs[i].id = id;
	t->ptr_count++;
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
