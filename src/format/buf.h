/* SPDX-License-Identifier: MIT */
/*
 * A growable byte buffer and the varint/zigzag primitives of docs/format.md.  Used to build chunk
 * payloads (writer side) and to parse them (reader side, through struct tally_cursor).
 *
 * Allocation failure is sticky: once a put fails, buf->failed is set, later puts do nothing, and
 * the owner checks the flag once before using the bytes.  That keeps encoders free of error checks
 * on every byte, and keeps the collector from ever aborting its host on ENOMEM.
 */
#ifndef TALLY_FORMAT_BUF_H
#define TALLY_FORMAT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grow.h" /* tally_array_push, tally_grow_in */

struct tally_buf {
	uint8_t *data; /* owned; NULL until the first put */
	size_t len;
	size_t cap;
	bool failed; /* an allocation failed: contents are incomplete */
};

void tally_buf_fini(struct tally_buf *b);
bool tally_buf_grow(struct tally_buf *b, size_t extra); /* ensure room for extra more bytes */

static inline void tally_buf_reset(struct tally_buf *b)
{
	b->len = 0;
	b->failed = false;
}

static inline void tally_buf_put(struct tally_buf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n && !tally_buf_grow(b, n))
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static inline void tally_buf_put_u8(struct tally_buf *b, uint8_t v)
{
	tally_buf_put(b, &v, 1);
}

static inline size_t tally_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t tally_varint_encode(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline void tally_buf_put_varint(struct tally_buf *b, uint64_t v)
{
	if (b->cap - b->len < 10 && !tally_buf_grow(b, 10))
		return;
	b->len += tally_varint_encode(b->data + b->len, v);
}

static inline uint64_t tally_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t tally_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Key/value entries (docs/format.md §5). */
void tally_kv_uint(struct tally_buf *b, unsigned key, uint64_t v);
void tally_kv_sint(struct tally_buf *b, unsigned key, int64_t v);
void tally_kv_bytes(struct tally_buf *b, unsigned key, const void *p, size_t n);
void tally_kv_str(struct tally_buf *b, unsigned key, const char *s); /* no-op for NULL */

/* A read position in a payload.  Reads past the end set bad and return zero. */
struct tally_cursor {
	const uint8_t *p;
	const uint8_t *end;
	bool bad;
};

static inline uint64_t tally_cur_varint(struct tally_cursor *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (c->p < c->end && shift < 64) {
		uint8_t byte = *c->p++;

		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
		shift += 7;
	}
	c->bad = true;
	return 0;
}

static inline uint8_t tally_cur_u8(struct tally_cursor *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

/* Borrow n bytes; NULL (and bad) if fewer remain. */
static inline const uint8_t *tally_cur_bytes(struct tally_cursor *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if ((uint64_t)(c->end - c->p) < n) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return p;
}

/* One key/value entry; returns false at the end of the payload or on damage. */
struct tally_kv {
	unsigned key;
	unsigned type;
	uint64_t u;	    /* TALLY_KV_UINT */
	int64_t s;	    /* TALLY_KV_SINT */
	const uint8_t *ptr; /* TALLY_KV_BYTES: borrowed from the payload */
	size_t len;
};

bool tally_kv_next(struct tally_cursor *c, struct tally_kv *kv);
/* Put an entry read by tally_kv_next back as it was (keys this tally does not know survive). */
void tally_kv_copy(struct tally_buf *b, const struct tally_kv *kv);

/* A string as its length (varint) then its bytes; NULL is the empty string. */
void tally_buf_put_str(struct tally_buf *b, const char *s);

#endif
