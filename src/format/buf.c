/* SPDX-License-Identifier: MIT */
/* Growable byte buffer and key/value entries; see buf.h. */
#include "buf.h"

#include <stdlib.h>

#include "tally-format.h"

void tally_buf_fini(struct tally_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

bool tally_buf_grow(struct tally_buf *b, size_t extra)
{
	size_t want = b->len + extra;

	if (b->failed)
		return false;
	/* 256 bytes at first: most payloads are small */
	if (want < b->len || !tally_grow_in(&b->data, &b->cap, want < 256 ? 256 : want, 1)) {
		b->failed = true;
		return false;
	}
	return true;
}

void tally_kv_uint(struct tally_buf *b, unsigned key, uint64_t v)
{
	tally_buf_put_varint(b, key);
	tally_buf_put_u8(b, TALLY_KV_UINT);
	tally_buf_put_varint(b, v);
}

void tally_kv_sint(struct tally_buf *b, unsigned key, int64_t v)
{
	tally_buf_put_varint(b, key);
	tally_buf_put_u8(b, TALLY_KV_SINT);
	tally_buf_put_varint(b, tally_zigzag(v));
}

void tally_kv_bytes(struct tally_buf *b, unsigned key, const void *p, size_t n)
{
	tally_buf_put_varint(b, key);
	tally_buf_put_u8(b, TALLY_KV_BYTES);
	tally_buf_put_varint(b, n);
	tally_buf_put(b, p, n);
}

void tally_kv_str(struct tally_buf *b, unsigned key, const char *s)
{
	if (s)
		tally_kv_bytes(b, key, s, strlen(s));
}

bool tally_kv_next(struct tally_cursor *c, struct tally_kv *kv)
{
	if (c->bad || c->p >= c->end)
		return false;
	memset(kv, 0, sizeof(*kv));
	kv->key = (unsigned)tally_cur_varint(c);
	kv->type = tally_cur_u8(c);
	switch (kv->type) {
	case TALLY_KV_UINT:
		kv->u = tally_cur_varint(c);
		break;
	case TALLY_KV_SINT:
		kv->s = tally_unzigzag(tally_cur_varint(c));
		kv->u = (uint64_t)kv->s;
		break;
	case TALLY_KV_BYTES:
		kv->len = (size_t)tally_cur_varint(c);
		kv->ptr = tally_cur_bytes(c, kv->len);
		break;
	default:
		/* An unknown type has no known length: the rest of the payload is unreadable. */
		c->bad = true;
		return false;
	}
	return !c->bad;
}

void tally_kv_copy(struct tally_buf *b, const struct tally_kv *kv)
{
	if (kv->type == TALLY_KV_UINT)
		tally_kv_uint(b, kv->key, kv->u);
	else if (kv->type == TALLY_KV_SINT)
		tally_kv_sint(b, kv->key, kv->s);
	else if (kv->type == TALLY_KV_BYTES)
		tally_kv_bytes(b, kv->key, kv->ptr, kv->len);
}

void tally_buf_put_str(struct tally_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	tally_buf_put_varint(b, n);
	tally_buf_put(b, s, n);
}
