/* SPDX-License-Identifier: MIT */
/*
 * The readers' building blocks for scale: the quantile sketch's documented bound (every rank
 * within SKETCH_REL_ERROR of the exact value, however skewed the values), its exact merge and its
 * encoding; the hash table on the keys traces hand it (aligned addresses, counting ids); and the
 * spill, whose order must be the one sort of everything, however many runs it went to the file in.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hashmap.h"
#include "sketch.h"
#include "spill.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Values spread over twelve decades (1 ns .. 1000 s), as durations and sizes are. */
static uint64_t skewed(void)
{
	double e = (double)(next() % 1000000) / 1000000.0 * 12.0;

	return (uint64_t)pow(10.0, e);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void assert_within(double est, uint64_t exact)
{
	double err = fabs(est - (double)exact);

	/* the bucket's centre of the integers in it: a half more than the bound at most */
	if (err > (double)exact * SKETCH_REL_ERROR + 0.5)
		fail_msg("estimate %.1f for %llu: off by %.3f%%", est, (unsigned long long)exact,
			 100 * err / (double)exact);
}

static void test_bound_on_skewed_values(void **state)
{
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct tally_sketch s = {0};
	static const double qs[] = {0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1};
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		v[i] = skewed();
		assert_int_equal(tally_sketch_add(&s, v[i], 1), 0);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	assert_int_equal(s.values, N);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t k = (uint64_t)(qs[i] * (N - 1));

		assert_within(tally_sketch_rank(&s, k, v[0], v[N - 1]), v[k]);
	}
	/* the median of an even count: the mean of the middle two, each within the bound */
	assert_within(tally_sketch_median(&s, v[0], v[N - 1]), (v[N / 2 - 1] + v[N / 2]) / 2);
	/* memory: a few octaves of counters, not the values */
	assert_true(s.b.n <= SKETCH_BUCKETS && s.b.n * sizeof(uint64_t) < 64 * 1024);
	tally_sketch_fini(&s);
	free(v);
}

static void test_small_values_exact(void **state)
{
	struct tally_sketch s = {0};
	uint64_t k;

	(void)state;
	for (k = 0; k < 256; k++)
		tally_sketch_add(&s, k, 2);
	for (k = 0; k < 512; k++)
		assert_true(tally_sketch_rank(&s, k, 0, UINT64_MAX) == (double)(k / 2));
	tally_sketch_fini(&s);
}

/* Sketches of parts merge into the sketch of the whole, bucket for bucket. */
static void test_merge_is_exact(void **state)
{
	struct tally_sketch whole = {0}, part[3] = {0}, merged = {0};
	size_t i;

	(void)state;
	for (i = 0; i < 30000; i++) {
		uint64_t x = skewed();

		tally_sketch_add(&whole, x, 1);
		tally_sketch_add(&part[i % 3], x, 1);
	}
	for (i = 0; i < 3; i++)
		assert_int_equal(tally_sketch_merge(&merged, &part[i]), 0);
	assert_int_equal(merged.values, whole.values);
	for (i = 0; i < whole.values; i += 997)
		assert_true(tally_sketch_rank(&merged, i, 0, UINT64_MAX) ==
			    tally_sketch_rank(&whole, i, 0, UINT64_MAX));
	for (i = 0; i < 3; i++)
		tally_sketch_fini(&part[i]);
	tally_sketch_fini(&whole);
	tally_sketch_fini(&merged);
}

static void test_encoding(void **state)
{
	struct tally_sketch s = {0}, back;
	struct tally_buf b = {0};
	struct tally_cursor c;
	size_t i;

	(void)state;
	for (i = 0; i < 5000; i++)
		tally_sketch_add(&s, skewed(), 1 + i % 3);
	tally_sketch_encode(&s, &b);
	c = (struct tally_cursor){b.data, b.data + b.len, false};
	assert_true(tally_sketch_decode(&back, &c));
	assert_int_equal(back.values, s.values);
	for (i = 0; i < s.values; i += 101)
		assert_true(tally_sketch_rank(&back, i, 0, UINT64_MAX) ==
			    tally_sketch_rank(&s, i, 0, UINT64_MAX));
	tally_sketch_fini(&back);
	/* a crafted header: more buckets than there are, or than the bytes that follow */
	tally_buf_reset(&b);
	tally_buf_put_varint(&b, 0);
	tally_buf_put_varint(&b, 1ull << 40);
	c = (struct tally_cursor){b.data, b.data + b.len, false};
	assert_false(tally_sketch_decode(&back, &c));
	assert_null(back.b.cells);
	tally_buf_fini(&b);
	tally_sketch_fini(&s);
}

/* Memory follows the buckets that count (buckets.h): two values at the two ends of the range,
 * added or merged in either order, are two cells, not the 7,424 of the range between them; and a
 * sketch filled densely is a run again. */
static void test_memory_follows_buckets(void **state)
{
	struct tally_sketch a = {0}, b = {0}, dense = {0};
	uint64_t k;
	uint32_t bucket;

	(void)state;
	assert_int_equal(tally_sketch_add(&a, 1, 1), 0);
	assert_int_equal(tally_sketch_add(&b, 1ull << 62, 1), 0);
	assert_int_equal(tally_sketch_merge(&a, &b), 0);
	assert_int_equal(tally_sketch_add(&a, UINT64_MAX, 3), 0);
	assert_int_equal(tally_sketch_cells(&a), 3);
	assert_non_null(a.b.idx); /* pairs: 12 bytes a cell */
	assert_int_equal(tally_sketch_cell(&a, 2, &bucket), 3);
	assert_int_equal(bucket, SKETCH_BUCKETS - 1);
	assert_true(tally_sketch_rank(&a, 0, 1, UINT64_MAX) == 1);
	assert_within(tally_sketch_rank(&a, 1, 1, UINT64_MAX), 1ull << 62);
	/* every bucket of 256 .. 2^20: 1,664 buckets in use, one run of them, 8 bytes each */
	for (k = 256; k < (1u << 20); k += 1 + k / 256)
		assert_int_equal(tally_sketch_add(&dense, k, 1), 0);
	assert_null(dense.b.idx);
	assert_true(dense.b.n <= 4 * dense.b.used + 64);
	tally_sketch_fini(&a);
	tally_sketch_fini(&b);
	tally_sketch_fini(&dense);
}

/* Counts that would pass 2^64 - 1 stop there and say so, merged or added. */
static void test_counts_saturate(void **state)
{
	struct tally_sketch a = {0}, b = {0};
	uint32_t bucket;

	(void)state;
	assert_int_equal(tally_sketch_add(&a, 100, (1ull << 63) + 5), 0);
	assert_int_equal(tally_sketch_add(&b, 100, (1ull << 63) + 5), 0);
	assert_false(a.saturated);
	assert_int_equal(tally_sketch_merge(&a, &b), 0);
	assert_true(a.saturated);
	assert_true(a.values == UINT64_MAX);
	assert_true(tally_sketch_cell(&a, 0, &bucket) == UINT64_MAX);
	assert_true(tally_sketch_median(&a, 100, 100) == 100);
	tally_sketch_fini(&a);
	tally_sketch_fini(&b);
}

/* 2 MiB-aligned addresses and counting stream ids: every key found, none confused. */
static void test_map_on_aligned_keys(void **state)
{
	struct tally_map m = {0};
	uint64_t i;

	(void)state;
	for (i = 0; i < 200000; i++)
		assert_int_equal(
		    tally_map_put(&m, 0x7f0000000000ull + (i << 21), i % 7, (uint32_t)i + 1), 0);
	for (i = 0; i < 200000; i++)
		assert_int_equal(tally_map_get(&m, 0x7f0000000000ull + (i << 21), i % 7), i + 1);
	assert_int_equal(tally_map_get(&m, 0x7f0000000000ull + (1ull << 21), 0), 0);
	assert_int_equal(m.n, 200000);
	tally_map_fini(&m);
}

struct pair {
	uint64_t key, seq;
};

static int by_key_seq(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* budget bytes of run in memory: N elements in order, twice over (a rewind), and the same order
 * as sorting them all at once. */
static void spill_case(size_t budget, bool to_file, size_t N)
{
	struct pair *all = malloc(N * sizeof(*all));
	struct spill s;
	const struct pair *p;
	size_t i, pass;

	spill_init(&s, sizeof(struct pair), budget, by_key_seq);
	for (i = 0; i < N; i++) {
		struct pair *q = spill_push(&s);

		assert_non_null(q);
		all[i] = (struct pair){next() % 1000, i}; /* many ties: seq breaks them */
		*q = all[i];
	}
	assert_int_equal(spill_sort(&s), 0);
	assert_int_equal(spill_spilled(&s), to_file);
	assert_int_equal(spill_count(&s), N);
	qsort(all, N, sizeof(*all), by_key_seq);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; (p = spill_next(&s)); i++)
			assert_true(i < N && p->key == all[i].key && p->seq == all[i].seq);
		assert_int_equal(i, N);
		assert_int_equal(spill_rewind(&s), 0);
	}
	assert_int_equal(s.err, 0);
	spill_fini(&s);
	free(all);
}

static void test_spill_in_memory(void **state)
{
	(void)state;
	unsetenv("TALLY_SPILL_BUDGET");
	spill_case(0, false, 200000);
}

static void test_spill_to_file(void **state)
{
	(void)state;
	unsetenv("TALLY_SPILL_BUDGET");
	spill_case(1 << 16, true, 200000); /* 4,096 pairs a run: 49 runs merged */
	spill_case(16, true, 20000);	   /* one pair a run: 20,000 runs, windows of one */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bound_on_skewed_values),
	    cmocka_unit_test(test_small_values_exact),
	    cmocka_unit_test(test_merge_is_exact),
	    cmocka_unit_test(test_encoding),
	    cmocka_unit_test(test_memory_follows_buckets),
	    cmocka_unit_test(test_counts_saturate),
	    cmocka_unit_test(test_spill_in_memory),
	    cmocka_unit_test(test_spill_to_file),
	    cmocka_unit_test(test_map_on_aligned_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
