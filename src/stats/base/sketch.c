/* SPDX-License-Identifier: MIT */
/* The relative-error quantile sketch; see sketch.h for the buckets and the bound. */
#include "sketch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "satmath.h"

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

/* The count of the k-th cell (k < n), and its bucket. */
static uint64_t count_at(const struct tally_sketch *s, uint32_t k)
{
	return *(const uint64_t *)buckets_at(&s->b, sizeof(uint64_t), k);
}

/* times more values in bucket i.  0, or -ENOMEM (the sketch holds the same counts). */
static int add_at(struct tally_sketch *s, uint32_t i, uint64_t times)
{
	uint64_t *c;

	if (!times)
		return 0;
	if (!(c = buckets_cell(&s->b, sizeof(*c), i, SKETCH_BUCKETS)))
		return -ENOMEM;
	*c = tally_add_sat(*c, times, &s->saturated);
	s->values = tally_add_sat(s->values, times, &s->saturated);
	return 0;
}

int tally_sketch_add(struct tally_sketch *s, uint64_t v, uint64_t times)
{
	return add_at(s, tally_sketch_index(v), times);
}

int tally_sketch_merge(struct tally_sketch *dst, const struct tally_sketch *src)
{
	uint32_t k;

	for (k = 0; k < src->b.n; k++)
		if (add_at(dst, buckets_index(&src->b, k), count_at(src, k)) < 0)
			return -ENOMEM;
	dst->saturated |= src->saturated;
	return 0;
}

double tally_sketch_rank(const struct tally_sketch *s, uint64_t k, uint64_t min, uint64_t max)
{
	uint64_t seen = 0;
	uint32_t i;

	for (i = 0; i < s->b.n; i++) {
		seen = tally_add_sat(seen, count_at(s, i), &(bool){false});
		if (seen > k)
			break;
	}
	if (i == s->b.n)
		return (double)max;
	return tally_sketch_centre(buckets_index(&s->b, i), min, max);
}

double tally_sketch_centre(uint32_t bucket, uint64_t min, uint64_t max)
{
	/* the centre of the bucket's integers; the exact extremes are better where they apply */
	double mid =
	    ((double)tally_sketch_bucket_low(bucket) + (double)tally_sketch_bucket_high(bucket)) /
	    2;

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
	buckets_fini(&s->b);
	memset(s, 0, sizeof(*s));
}

uint32_t tally_sketch_cells(const struct tally_sketch *s)
{
	return s->b.n;
}

uint64_t tally_sketch_cell(const struct tally_sketch *s, uint32_t k, uint32_t *bucket)
{
	*bucket = buckets_index(&s->b, k);
	return count_at(s, k);
}

void tally_sketch_encode(const struct tally_sketch *s, struct tally_buf *out)
{
	uint32_t a = 0, b = s->b.n, k, bucket;

	/* only the buckets from the first to the last one that counts, zeros between */
	while (a < b && !count_at(s, a))
		a++;
	while (b > a && !count_at(s, b - 1))
		b--;
	if (a == b) {
		tally_buf_put_varint(out, 0);
		tally_buf_put_varint(out, 0);
		return;
	}
	tally_buf_put_varint(out, buckets_index(&s->b, a));
	tally_buf_put_varint(out, buckets_index(&s->b, b - 1) - buckets_index(&s->b, a) + 1);
	for (k = a, bucket = buckets_index(&s->b, a); k < b; bucket++) {
		if (buckets_index(&s->b, k) == bucket)
			tally_buf_put_varint(out, count_at(s, k++));
		else
			tally_buf_put_varint(out, 0);
	}
}

bool tally_sketch_decode(struct tally_sketch *s, struct tally_cursor *c)
{
	uint64_t lo = tally_cur_varint(c), n = tally_cur_varint(c), i, total = 0;

	memset(s, 0, sizeof(*s));
	/* every count is a byte at least: n is bounded by what is left of the payload */
	if (c->bad || lo >= SKETCH_BUCKETS || n > SKETCH_BUCKETS - lo ||
	    n > (uint64_t)(c->end - c->p))
		return false;
	for (i = 0; i < n && !c->bad; i++) {
		uint64_t count = tally_cur_varint(c);

		if (total + count < total || add_at(s, (uint32_t)(lo + i), count) < 0)
			c->bad = true;
		total += count;
	}
	if (c->bad) {
		tally_sketch_fini(s);
		return false;
	}
	return true;
}
