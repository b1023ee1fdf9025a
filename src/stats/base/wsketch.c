/* SPDX-License-Identifier: MIT */
/* The weighted quantile sketch; see wsketch.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#include "wsketch.h"

#define SUB_BITS 6
#define SUB	 (1u << SUB_BITS) /* buckets per power of two, and the exact range below */

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

/* The value a bucket stands for: the mean of its values, within the bucket and the extremes. */
static int64_t bucket_value(const struct wsketch *s, uint32_t b)
{
	uint64_t width, low;
	double mean = s->w[b] ? s->vw[b] / (double)s->w[b] : 0;
	int64_t v;

	if (b == 0)
		return s->min;
	low = bucket_low(b, &width);
	v = mean <= (double)low			? (int64_t)low
	    : mean >= (double)(low + width - 1) ? (int64_t)(low + width - 1)
						: (int64_t)llround(mean);
	return v < s->min ? s->min : v > s->max ? s->max : v;
}

static bool reserve(struct wsketch *s, uint32_t n)
{
	uint64_t *w;
	double *vw;

	if (n <= s->n)
		return true;
	if (!(w = tally_resize(s->w, n, sizeof(*w))))
		return false;
	s->w = w;
	if (!(vw = tally_resize(s->vw, n, sizeof(*vw))))
		return false; /* s->n unchanged: the larger w is only room */
	memset(w + s->n, 0, (n - s->n) * sizeof(*w));
	memset(vw + s->n, 0, (n - s->n) * sizeof(*vw));
	s->vw = vw;
	s->n = n;
	return true;
}

bool wsketch_add(struct wsketch *s, int64_t value, uint64_t weight)
{
	uint32_t b = bucket_of(value);

	if (!weight)
		return true;
	/* grow a power of two's worth at a time: a series' values seldom reach a new one */
	if (b >= s->n && !reserve(s, (b / SUB + 1) * SUB))
		return false;
	if (!s->total || value < s->min)
		s->min = value;
	if (!s->total || value > s->max)
		s->max = value;
	s->w[b] += weight;
	s->vw[b] += (double)value * (double)weight;
	s->total += weight;
	return true;
}

int64_t wsketch_quantile(const struct wsketch *s, double q)
{
	uint64_t target, seen = 0;
	uint32_t b;

	if (!s->total)
		return 0;
	if (q <= 0)
		return s->min;
	if (q >= 1)
		return s->max;
	/* the first bucket by which more than q of the weight has been seen */
	target = (uint64_t)(q * (double)s->total);
	for (b = 0; b < s->n; b++) {
		seen += s->w[b];
		if (seen > target)
			return bucket_value(s, b);
	}
	return s->max;
}

uint64_t wsketch_weight_above(const struct wsketch *s, int64_t t)
{
	uint64_t sum = 0;
	uint32_t b;

	if (!s->total || t > s->max)
		return 0;
	if (t <= s->min)
		return s->total;
	for (b = 0; b < s->n; b++)
		if (s->w[b] && bucket_value(s, b) >= t)
			sum += s->w[b];
	return sum;
}

bool wsketch_merge(struct wsketch *a, const struct wsketch *b)
{
	uint32_t i;

	if (!b->total)
		return true;
	if (!reserve(a, b->n))
		return false;
	for (i = 0; i < b->n; i++) {
		a->w[i] += b->w[i];
		a->vw[i] += b->vw[i];
	}
	if (!a->total || b->min < a->min)
		a->min = b->min;
	if (!a->total || b->max > a->max)
		a->max = b->max;
	a->total += b->total;
	return true;
}

void wsketch_fini(struct wsketch *s)
{
	free(s->w);
	free(s->vw);
	memset(s, 0, sizeof(*s));
}
