/* SPDX-License-Identifier: MIT */
/*
 * The weighted quantile sketch of the GPU metric reports (src/stats/base/wsketch.h): against exact
 * weighted quantiles of the same values, kept here in full and sorted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wsketch.h"

struct wv {
	int64_t v;
	uint64_t w;
};

static int by_value(const void *a, const void *b)
{
	const struct wv *x = a, *y = b;

	return x->v < y->v ? -1 : x->v > y->v;
}

/* The first value by which more than q of the weight is seen, as the sketch defines it. */
static int64_t exact_quantile(struct wv *s, size_t n, double q)
{
	uint64_t total = 0, seen = 0, target;
	size_t i;

	qsort(s, n, sizeof(*s), by_value);
	for (i = 0; i < n; i++)
		total += s[i].w;
	target = (uint64_t)(q * (double)total);
	for (i = 0; i < n; i++) {
		seen += s[i].w;
		if (seen > target)
			return s[i].v;
	}
	return s[n - 1].v;
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Below 64 every value is its own bucket: quantiles are exact. */
static void small_values_exact(void **state)
{
	struct wsketch s = {0};
	struct wv v[64];
	int i;

	(void)state;
	for (i = 0; i < 64; i++) {
		v[i] = (struct wv){63 - i, (uint64_t)i + 1};
		assert_true(wsketch_add(&s, v[i].v, v[i].w));
	}
	assert_int_equal(wsketch_quantile(&s, 0.5), exact_quantile(v, 64, 0.5));
	assert_int_equal(wsketch_quantile(&s, 0.9), exact_quantile(v, 64, 0.9));
	assert_int_equal(wsketch_quantile(&s, 0), 0);
	assert_int_equal(wsketch_quantile(&s, 1), 63);
	wsketch_fini(&s);
}

/* Percentages x 1000 and rates up to 4 TB/s, with weights: within 1/64 of the exact quantile,
 * extremes exact. */
static void within_the_bound(void **state)
{
	static const int64_t range[] = {100001, 4000000000000LL};
	static const double qs[] = {0.1, 0.5, 0.9, 0.99};
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	size_t n = 20000, i, r, k;
	struct wv *v = calloc(n, sizeof(*v));

	(void)state;
	assert_non_null(v);
	for (r = 0; r < 2; r++) {
		struct wsketch s = {0};
		int64_t lo = INT64_MAX, hi = 0;

		for (i = 0; i < n; i++) {
			v[i].v = (int64_t)(next(&seed) % (uint64_t)range[r]);
			v[i].w = 50000 + next(&seed) % 100000;
			lo = v[i].v < lo ? v[i].v : lo;
			hi = v[i].v > hi ? v[i].v : hi;
			assert_true(wsketch_add(&s, v[i].v, v[i].w));
		}
		assert_int_equal(s.min, lo);
		assert_int_equal(s.max, hi);
		for (k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			int64_t want = exact_quantile(v, n, qs[k]),
				got = wsketch_quantile(&s, qs[k]);
			int64_t err = got > want ? got - want : want - got;

			assert_true(err <= want / 64 + 1);
		}
		wsketch_fini(&s);
	}
	free(v);
}

/* Two sketches merged answer as one sketch of all the values. */
static void merged_is_whole(void **state)
{
	struct wsketch a = {0}, b = {0}, whole = {0};
	uint64_t seed = 42;
	int i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		int64_t x = (int64_t)(next(&seed) % 3000000000ull);
		uint64_t w = 1 + next(&seed) % 1000;

		assert_true(wsketch_add(i % 3 ? &a : &b, x, w));
		assert_true(wsketch_add(&whole, x, w));
	}
	assert_true(wsketch_merge(&a, &b));
	assert_int_equal(a.total, whole.total);
	assert_int_equal(a.min, whole.min);
	assert_int_equal(a.max, whole.max);
	assert_int_equal(wsketch_quantile(&a, 0.5), wsketch_quantile(&whole, 0.5));
	assert_int_equal(wsketch_quantile(&a, 0.9), wsketch_quantile(&whole, 0.9));
	wsketch_fini(&a);
	wsketch_fini(&b);
	wsketch_fini(&whole);
}

/* The weight at or above a threshold: exact when the threshold's bucket holds one value. */
static void weight_above(void **state)
{
	struct wsketch s = {0};

	(void)state;
	assert_true(wsketch_add(&s, 0, 600));	  /* idle: 60% of the time */
	assert_true(wsketch_add(&s, 90000, 300)); /* 90.000%: 30% */
	assert_true(wsketch_add(&s, 50000, 100)); /* 50.000%: 10% */
	assert_true(wsketch_add(&s, 0, 0));	  /* no weight: nothing */
	assert_int_equal(s.total, 1000);
	assert_int_equal(wsketch_weight_above(&s, 80000), 300);
	assert_int_equal(wsketch_weight_above(&s, 50000), 400);
	assert_int_equal(wsketch_weight_above(&s, 0), 1000);
	assert_int_equal(wsketch_weight_above(&s, 90001), 0);
	assert_int_equal(wsketch_quantile(&s, 0.5), 0);
	assert_int_equal(wsketch_quantile(&s, 0.65), 50000);
	assert_int_equal(wsketch_quantile(&s, 0.8), 90000);
	wsketch_fini(&s);
}

/* A series of one sample costs one cell whatever its value (a rate of 2^62 once took the 3,700
 * buckets below it); weights past 2^64 - 1 stop there and say so. */
static void memory_and_saturation(void **state)
{
	struct wsketch s = {0}, t = {0};

	(void)state;
	assert_true(wsketch_add(&s, INT64_MAX, 10));
	assert_int_equal(s.b.n, 1);
	assert_true(wsketch_add(&s, -5, 10));
	assert_int_equal(s.b.n, 2);
	assert_true(wsketch_quantile(&s, 0.9) == INT64_MAX);
	assert_int_equal(wsketch_quantile(&s, 0.1), -5);
	assert_true(wsketch_add(&t, 7, UINT64_MAX - 1));
	assert_true(wsketch_merge(&t, &s));
	assert_true(t.saturated);
	assert_true(t.total == UINT64_MAX);
	assert_int_equal(wsketch_quantile(&t, 0.5), 7);
	wsketch_fini(&s);
	wsketch_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(small_values_exact),    cmocka_unit_test(within_the_bound),
	    cmocka_unit_test(merged_is_whole),	     cmocka_unit_test(weight_above),
	    cmocka_unit_test(memory_and_saturation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
