/* SPDX-License-Identifier: MIT */
/* The weighted quantile sketch; see wsketch.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "satmath.h"

#include "wsketch.h"

#define SUB_BITS 6
#define SUB	 (1u << SUB_BITS) /* buckets per power of two, and the exact range below */
#define BUCKETS	 (1 + SUB + (63 - SUB_BITS) * SUB) /* the last: 2^62 .. 2^63 - 1 */

struct cell {
	uint64_t w; /* weight */
	double vw;  /* value x weight */
};

static const struct cell *cell_at(const struct wsketch *s, uint32_t k)
{
	return buckets_at(&s->b, sizeof(struct cell), k);
}

static uint32_t bucket_of(int64_t v)
{
	uint64_t u = (uint64_t)v;
	unsigned e;

	if (v < 0)
		return 0;
	if (u < SUB)
		return 1 + (uint32_t)u;
	e = 63u - (unsigned)__builtin_clzll(u); /* SUB_BITS .. 62 */
	return 1 + SUB + (e - SUB_BITS) * SUB + (uint32_t)(u >> (e - SUB_BITS) & (SUB - 1));
}

/* The first value of bucket b (b >= 1) and its width. */
static uint64_t bucket_low(uint32_t b, uint64_t *width)
{
	uint32_t k;

	if (b <= SUB) {
		*width = 1;
		return b - 1;
	}
	k = b - 1 - SUB;
	*width = 1ull << (k / SUB);
	return (uint64_t)(SUB + k % SUB) << (k / SUB);
}

/* The value the k-th cell stands for: the mean of its values, within its bucket and the
 * extremes. */
static int64_t cell_value(const struct wsketch *s, uint32_t k)
{
	const struct cell *c = cell_at(s, k);
	uint32_t b = buckets_index(&s->b, k);
	uint64_t width, low;
	double mean = c->w ? c->vw / (double)c->w : 0;
	int64_t v;

	if (b == 0)
		return s->min;
	low = bucket_low(b, &width);
	v = mean <= (double)low			? (int64_t)low
	    : mean >= (double)(low + width - 1) ? (int64_t)(low + width - 1)
						: (int64_t)llround(mean);
	return v < s->min ? s->min : v > s->max ? s->max : v;
}

/* weight more at value in the cell of bucket b; false when memory ran out. */
static bool add_at(struct wsketch *s, uint32_t b, uint64_t weight, double vw)
{
	struct cell *c = buckets_cell(&s->b, sizeof(*c), b, BUCKETS);

	if (!c)
		return false;
	c->w = tally_add_sat(c->w, weight, &s->saturated);
	c->vw += vw;
	s->total = tally_add_sat(s->total, weight, &s->saturated);
	return true;
}

bool wsketch_add(struct wsketch *s, int64_t value, uint64_t weight)
{
	bool first = !s->total;

	if (!weight)
		return true;
	if (!add_at(s, bucket_of(value), weight, (double)value * (double)weight))
		return false;
	if (first || value < s->min)
		s->min = value;
	if (first || value > s->max)
		s->max = value;
	return true;
}

int64_t wsketch_quantile(const struct wsketch *s, double q)
{
	uint64_t target, seen = 0;
	uint32_t k;

	if (!s->total)
		return 0;
	if (q <= 0)
		return s->min;
	if (q >= 1)
		return s->max;
	/* the first bucket by which more than q of the weight has been seen */
	target = (uint64_t)(q * (double)s->total);
	for (k = 0; k < s->b.n; k++) {
		seen = tally_add_sat(seen, cell_at(s, k)->w, &(bool){false});
		if (seen > target)
			return cell_value(s, k);
	}
	return s->max;
}

uint64_t wsketch_weight_above(const struct wsketch *s, int64_t t)
{
	uint64_t sum = 0;
	uint32_t k;

	if (!s->total || t > s->max)
		return 0;
	if (t <= s->min)
		return s->total;
	for (k = 0; k < s->b.n; k++)
		if (cell_at(s, k)->w && cell_value(s, k) >= t)
			sum = tally_add_sat(sum, cell_at(s, k)->w, &(bool){false});
	return sum;
}

bool wsketch_merge(struct wsketch *a, const struct wsketch *b)
{
	bool first = !a->total;
	uint32_t k;

	if (!b->total)
		return true;
	for (k = 0; k < b->b.n; k++) {
		const struct cell *c = cell_at(b, k);

		if (c->w && !add_at(a, buckets_index(&b->b, k), c->w, c->vw))
			return false;
	}
	if (first || b->min < a->min)
		a->min = b->min;
	if (first || b->max > a->max)
		a->max = b->max;
	a->saturated |= b->saturated;
	return true;
}

void wsketch_fini(struct wsketch *s)
{
	buckets_fini(&s->b);
	memset(s, 0, sizeof(*s));
}
