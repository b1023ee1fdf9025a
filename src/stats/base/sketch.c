/* SPDX-License-Identifier: MIT */
/* The relative-error quantile sketch; see sketch.h for the buckets and the bound. */
#include "sketch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_BELOW (1u << (SKETCH_SUB_BITS + 1)) /* 256: a bucket per value below */

/* Bucket index of v, and the smallest and largest value of bucket i. */
static uint32_t tally_sketch_index(uint64_t v)
{
	unsigned e, shift;

	if (v < EXACT_BELOW)
		return (uint32_t)v;
	e = 63 - (unsigned)__builtin_clzll(v);
	shift = e - SKETCH_SUB_BITS;
	return (uint32_t)(((uint64_t)shift << SKETCH_SUB_BITS) + (v >> shift));
}

static uint64_t tally_sketch_bucket_low(uint32_t i)
{
	unsigned shift;

	if (i < EXACT_BELOW)
		return i;
	shift = (i >> SKETCH_SUB_BITS) - 1;
	return (uint64_t)((1u << SKETCH_SUB_BITS) | (i & ((1u << SKETCH_SUB_BITS) - 1))) << shift;
}

static uint64_t tally_sketch_bucket_high(uint32_t i)
{
	if (i < EXACT_BELOW)
		return i;
	return tally_sketch_bucket_low(i) + ((1ull << ((i >> SKETCH_SUB_BITS) - 1)) - 1);
}

/* Make room for buckets [a, b] (inclusive). */
static int cover(struct tally_sketch *s, uint32_t a, uint32_t b)
{
	uint32_t lo, hi;
	uint64_t *c;

	if (s->n && a >= s->lo && b < s->lo + s->n)
		return 0;
	lo = s->n && s->lo < a ? s->lo : a;
	hi = s->n && s->lo + s->n - 1 > b ? s->lo + s->n - 1 : b;
	/* grow by a few octaves at once on the side that grew: values come in any order */
	if (s->n && hi > s->lo + s->n - 1)
		hi = hi + 256 < SKETCH_BUCKETS ? hi + 256 : SKETCH_BUCKETS - 1;
	if (s->n && lo < s->lo)
		lo = lo > 256 ? lo - 256 : 0;
	c = calloc((size_t)(hi - lo + 1), sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (s->n)
		memcpy(c + (s->lo - lo), s->count, s->n * sizeof(*c));
	free(s->count);
	s->count = c;
	s->lo = lo;
	s->n = hi - lo + 1;
	return 0;
}

int tally_sketch_add(struct tally_sketch *s, uint64_t v, uint64_t times)
{
	uint32_t i = tally_sketch_index(v);

	if ((i < s->lo || i >= s->lo + s->n) && cover(s, i, i) < 0)
		return -ENOMEM;
	s->count[i - s->lo] += times;
	s->values += times;
	return 0;
}

int tally_sketch_merge(struct tally_sketch *dst, const struct tally_sketch *src)
{
	uint32_t i;

	if (!src->n)
		return 0;
	if (cover(dst, src->lo, src->lo + src->n - 1) < 0)
		return -ENOMEM;
	for (i = 0; i < src->n; i++)
		dst->count[src->lo + i - dst->lo] += src->count[i];
	dst->values += src->values;
	return 0;
}

double tally_sketch_rank(const struct tally_sketch *s, uint64_t k, uint64_t min, uint64_t max)
{
	uint64_t seen = 0;
	double mid;
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		seen += s->count[i];
		if (seen > k)
			break;
	}
	if (i == s->n)
		return (double)max;
	i += s->lo;
	/* the centre of the bucket's integers; the exact extremes are better where they apply */
	mid = ((double)tally_sketch_bucket_low(i) + (double)tally_sketch_bucket_high(i)) / 2;
	if (mid < (double)min)
		mid = (double)min;
	if (mid > (double)max)
		mid = (double)max;
	return mid;
}

double tally_sketch_median(const struct tally_sketch *s, uint64_t min, uint64_t max)
{
	uint64_t n = s->values;

	if (!n)
		return 0;
	if (n % 2)
		return tally_sketch_rank(s, (n - 1) / 2, min, max);
	return (tally_sketch_rank(s, n / 2 - 1, min, max) + tally_sketch_rank(s, n / 2, min, max)) /
	       2;
}

void tally_sketch_fini(struct tally_sketch *s)
{
	free(s->count);
	memset(s, 0, sizeof(*s));
}

void tally_sketch_encode(const struct tally_sketch *s, struct tally_buf *out)
{
	uint32_t a = 0, b = s->n, i;

	/* only the buckets from the first to the last one that counts */
	while (a < b && !s->count[a])
		a++;
	while (b > a && !s->count[b - 1])
		b--;
	tally_buf_put_varint(out, a < b ? s->lo + a : 0);
	tally_buf_put_varint(out, b - a);
	for (i = a; i < b; i++)
		tally_buf_put_varint(out, s->count[i]);
}

bool tally_sketch_decode(struct tally_sketch *s, struct tally_cursor *c)
{
	uint64_t lo = tally_cur_varint(c), n = tally_cur_varint(c), i, total = 0;

	memset(s, 0, sizeof(*s));
	/* every count is a byte at least: n is bounded by what is left of the payload */
	if (c->bad || lo >= SKETCH_BUCKETS || n > SKETCH_BUCKETS - lo ||
	    n > (uint64_t)(c->end - c->p))
		return false;
	if (!n)
		return true;
	s->count = calloc((size_t)n, sizeof(*s->count));
	if (!s->count)
		return false;
	s->lo = (uint32_t)lo;
	s->n = (uint32_t)n;
	for (i = 0; i < n; i++) {
		s->count[i] = tally_cur_varint(c);
		if (total + s->count[i] < total)
			c->bad = true;
		total += s->count[i];
	}
	s->values = total;
	if (c->bad) {
		tally_sketch_fini(s);
		return false;
	}
	return true;
}
