/* SPDX-License-Identifier: MIT */
/* Exact order statistics of a set of values; see select.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"
#include "spill.h"

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/* The smallest value of a[0..n) whose digit at shift is want. */
static uint64_t bucket_min(const uint64_t *a, size_t n, uint64_t lo, unsigned shift, size_t want)
{
	uint64_t m = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++)
		if ((((a[i] - lo) >> shift) & (RADIX_SIZE - 1)) == want && a[i] < m)
			m = a[i];
	return m;
}

/*
 * The k-th smallest of a[0..n) (0-based), all in [lo, hi], by radix selection: count the top
 * digit of x - lo over the candidates, keep the bucket holding k, go on with the next digit.
 * A pass to count and a pass to keep per digit, all sequential; a[] is reordered.  If next is
 * not NULL (and k + 1 < n), *next gets the (k+1)-th, for medians of an even count.
 */
uint64_t stats_select(uint64_t *a, size_t n, size_t k, uint64_t lo, uint64_t hi, uint64_t *next)
{
	unsigned bits = hi > lo ? 64 - (unsigned)__builtin_clzll(hi - lo) : 0;
	size_t hist[RADIX_SIZE];

	while (bits) {
		unsigned shift = bits > RADIX_BITS ? bits - RADIX_BITS : 0;
		size_t i, j, b, before = 0;

		memset(hist, 0, sizeof(hist));
		for (i = 0; i < n; i++)
			hist[((a[i] - lo) >> shift) & (RADIX_SIZE - 1)]++;
		for (b = 0; before + hist[b] <= k; b++)
			before += hist[b];
		if (next && k + 1 == before + hist[b]) { /* k is its bucket's last: next is after */
			size_t b2 = b + 1;

			while (b2 < RADIX_SIZE && !hist[b2])
				b2++;
			*next = b2 < RADIX_SIZE ? bucket_min(a, n, lo, shift, b2) : a[0];
			next = NULL;
		}
		for (i = j = 0; i < n; i++)
			if ((((a[i] - lo) >> shift) & (RADIX_SIZE - 1)) == b)
				a[j++] = a[i];
		n = j;
		k -= before;
		bits = shift;
	}
	/* every candidate left is the same value */
	if (next)
		*next = a[k];
	return a[k];
}

static void extremes(const uint64_t *a, size_t n, uint64_t *lo, uint64_t *hi)
{
	size_t i;

	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < n; i++) {
		*lo = a[i] < *lo ? a[i] : *lo;
		*hi = a[i] > *hi ? a[i] : *hi;
	}
}

double stats_median(uint64_t *a, size_t n)
{
	uint64_t lo, hi, mid, next;

	if (!n)
		return 0;
	extremes(a, n, &lo, &hi);
	mid = stats_select(a, n, (n - 1) / 2, lo, hi, n % 2 ? NULL : &next);
	return n % 2 ? (double)mid : ((double)mid + (double)next) / 2;
}

size_t stats_rank_index(size_t n, double p)
{
	/* nearest rank: the smallest value with at least p percent of the values at or below it */
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999999);

	k = k ? k - 1 : 0;
	return k < n ? k : (n ? n - 1 : 0);
}

/* The p-th percentile by nearest rank (p50 of 1..4 is 2, p90 of 1..10 is 9). 0 for none. */
static uint64_t stats_percentile(uint64_t *a, size_t n, double p)
{
	uint64_t lo, hi;
	size_t k;

	if (!n)
		return 0;
	k = stats_rank_index(n, p);
	extremes(a, n, &lo, &hi);
	return stats_select(a, n, k, lo, hi, NULL);
}

int stats_percentiles(const uint64_t *v, size_t n, const double *p, uint64_t *out, size_t np)
{
	uint64_t *scratch;
	size_t i;

	if (!n) {
		memset(out, 0, np * sizeof(*out));
		return 0;
	}
	if (!(scratch = malloc(n * sizeof(*scratch))))
		return -ENOMEM;
	for (i = 0; i < np; i++) {
		memcpy(scratch, v, n * sizeof(*v));
		out[i] = stats_percentile(scratch, n, p[i]);
	}
	free(scratch);
	return 0;
}

int stats_by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int stats_spill_percentiles(struct spill *s, const double *p, uint64_t *out, size_t np)
{
	uint64_t n = spill_count(s), at = 0, last = 0;
	const uint64_t *v;
	size_t i = 0;
	int rc;

	memset(out, 0, np * sizeof(*out));
	if (!n)
		return 0;
	if ((rc = spill_sort(s)) < 0)
		return rc;
	while (i < np && (v = spill_next(s))) {
		last = *v;
		/* nearest rank, as stats_percentile: the k-th in order, k = ceil(p n) - 1 */
		while (i < np) {
			uint64_t k = (uint64_t)(p[i] / 100.0 * (double)n + 0.999999999);

			k = k ? k - 1 : 0;
			k = k < n ? k : n - 1;
			if (k != at)
				break;
			out[i++] = last;
		}
		at++;
	}
	return s->err ? -s->err : 0;
}
