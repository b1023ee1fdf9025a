/* SPDX-License-Identifier: MIT */
/*
 * A write buffer for exporters that emit millions of small events: numbers are formatted by hand
 * straight into the buffer and whole megabytes go to the file at once.  stdio's per-call locking
 * and printf's format parsing cost more than the rest of an event put together.
 */
#ifndef TALLY_EXPORT_OBUF_H
#define TALLY_EXPORT_OBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OBUF_SIZE  (4u << 20)
#define OBUF_SLACK 512 /* room every event may use without asking */

struct obuf {
	FILE *f;
	char *buf, *p, *end; /* end leaves OBUF_SLACK spare bytes */
	uint64_t written;    /* bytes handed to the file */
	int err;	     /* errno of the first failed write */
};

int obuf_init(struct obuf *o, FILE *f); /* -ENOMEM */
int obuf_flush(struct obuf *o);		/* 0 or -errno (sticky) */
void obuf_fini(struct obuf *o);		/* frees; does not flush */

/* Make sure an event of up to OBUF_SLACK bytes fits. */
static inline void obuf_room(struct obuf *o)
{
	if (o->p >= o->end)
		obuf_flush(o);
}

static inline void obuf_put(struct obuf *o, const char *s, size_t n)
{
	if ((size_t)(o->end + OBUF_SLACK - o->p) < n) {
		obuf_flush(o);
		if (n > OBUF_SIZE) {
			if (!o->err && fwrite(s, 1, n, o->f) != n)
				o->err = 5; /* EIO */
			o->written += n;
			return;
		}
	}
	memcpy(o->p, s, n);
	o->p += n;
}

#define obuf_lit(o, s) obuf_put((o), (s), sizeof(s) - 1)

static inline void obuf_str(struct obuf *o, const char *s)
{
	obuf_put(o, s, strlen(s));
}

static inline void obuf_c(struct obuf *o, char c)
{
	*o->p++ = c;
}

extern const char obuf_digits2[200]; /* "00" "01" ... "99" */

/* Decimal digits of v, without any check of room (callers made room); two digits a step. */
static inline void obuf_u64(struct obuf *o, uint64_t v)
{
	char tmp[20];
	int n = 20;

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		tmp[--n] = obuf_digits2[d + 1];
		tmp[--n] = obuf_digits2[d];
	}
	if (v >= 10) {
		tmp[--n] = obuf_digits2[v * 2 + 1];
		tmp[--n] = obuf_digits2[v * 2];
	} else {
		tmp[--n] = (char)('0' + v);
	}
	memcpy(o->p, tmp + n, (size_t)(20 - n));
	o->p += 20 - n;
}

static inline void obuf_i64(struct obuf *o, int64_t v)
{
	if (v < 0) {
		*o->p++ = '-';
		obuf_u64(o, 0 - (uint64_t)v);
	} else {
		obuf_u64(o, (uint64_t)v);
	}
}

/* ns as microseconds with three decimals: 1234567 -> "1234.567" (Chrome's ts and dur, which
 * count from the earliest moment and so are never negative). */
static inline void obuf_us(struct obuf *o, uint64_t ns)
{
	uint64_t frac = ns % 1000;

	obuf_u64(o, ns / 1000);
	o->p[0] = '.';
	o->p[1] = (char)('0' + frac / 100);
	memcpy(o->p + 2, obuf_digits2 + (frac % 100) * 2, 2);
	o->p += 4;
}

/* s escaped as the inside of a JSON string (malloc'd; *len set). */
char *obuf_json_escaped(const char *s, size_t *len);

#endif
