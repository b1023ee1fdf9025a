/* SPDX-License-Identifier: MIT */
/*
 * The analyses of tally stats (docs/stats.md, "Where the time went, across ranks") on traces
 * written straight through the format library with GPU work at chosen times, in chosen orders:
 * every expected value comes from where the test put the work.  And their building blocks on
 * their own: the exact union of intervals (spans.c) against a brute force, the queue buckets as
 * they widen (depth.c) against a brute force, the percentiles (select.c), and the rules of the
 * diagnosis, each documented in docs/diagnosis.md.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "codec.h"
#include "depth.h"
#include "diagnosis.h"
#include "payloads.h"
#include "phases.h"
#include "report-fixture.h"
#include "scratch.h"
#include "select.h"
#include "spans.h"
#include "stats-int.h"
#include "strtab.h"
#include "writer.h"

#define T0   1000000000ull /* CUPTI ns of the session start */
#define US   1000ull
#define MS   1000000ull
#define NCCL "ncclDevKernel_AllReduce_Sum_f32_RING_LL"

struct work {
	unsigned kind;	     /* TALLY_KIND_KERNEL, _MEMCPY, _MEMSET */
	uint64_t start, dur; /* after T0 */
	const char *name;    /* kernels */
	uint32_t stream;
};

static void chunk(struct tally_writer *w, unsigned type, unsigned flags, struct tally_buf *b,
		  uint32_t records)
{
	assert_int_equal(tally_writer_chunk(w, type, flags, b->data, b->len, records), 0);
	tally_buf_reset(b);
}

/* The records of one kind among w[0..n), in the order given, as one RECORDS chunk. */
static size_t put_kind(struct tally_writer *tw, struct tally_buf *b, struct tally_strtab *strings,
		       const struct work *w, size_t n, unsigned kind)
{
	struct tally_record *r = calloc(n ? n : 1, sizeof(*r));
	struct tally_codec codec = {0};
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (w[i].kind == kind)
			r[k++] = (struct tally_record){
			    .kind = kind,
			    .start = T0 + w[i].start,
			    .end = T0 + w[i].start + w[i].dur,
			    .correlation_id = (uint32_t)i + 1,
			    .stream_id = w[i].stream ? w[i].stream : 7,
			    .subkind = kind == TALLY_KIND_MEMCPY ? 1 : 0,
			    .name_id = w[i].name ? tally_strtab_intern(strings, w[i].name) : 0};
	if (k && tally_strtab_take_pending(strings, b))
		chunk(tw, TALLY_CHUNK_STRINGS, 0, b, 0);
	tally_buf_reset(b);
	for (i = 0; i < k; i += 50000) { /* a chunk holds at most TALLY_RECORDS_MAX rows */
		size_t m = k - i < 50000 ? k - i : 50000;

		assert_int_equal(tally_records_encode(&codec, b, kind, r + i, m, TALLY_COLUMNS_ALL),
				 0);
		chunk(tw, TALLY_CHUNK_RECORDS, 0, b, (uint32_t)m);
	}
	tally_codec_fini(&codec);
	free(r);
	return k;
}

/* A closed trace of the work; a loss window [loss0, loss1] when loss1 > 0. */
static void write_work(const char *path, const struct work *w, size_t n, uint64_t loss0,
		       uint64_t loss1)
{
	static const unsigned kinds[] = {TALLY_KIND_KERNEL, TALLY_KIND_MEMCPY, TALLY_KIND_MEMSET};
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_ledger l = {.final = true, .t_begin = T0, .t_end = T0 + 100000 * MS};
	struct tally_strtab strings;
	struct tally_writer tw;
	struct tally_buf b = {0};
	size_t k, total = 0;

	assert_true(fd >= 0);
	tally_strtab_init(&strings);
	assert_int_equal(tally_writer_init(&tw, &sink, 0), 0);
	assert_int_equal(tally_writer_preamble(&tw), 0);
	tally_kv_uint(&b, TALLY_SK_PID, 42);
	tally_kv_uint(&b, TALLY_SK_START_CUPTI, T0);
	chunk(&tw, TALLY_CHUNK_SESSION, 0, &b, 0);
	for (k = 0; k < 3; k++) {
		size_t c = put_kind(&tw, &b, &strings, w, n, kinds[k]);

		l.v[TALLY_C_BY_KIND + kinds[k]] = c;
		total += c;
	}
	if (loss1) {
		tally_loss_put(&b, T0 + loss0, T0 + loss1, TALLY_C_DROPPED_CUPTI, 10);
		chunk(&tw, TALLY_CHUNK_LOSS, 0, &b, 0);
		l.v[TALLY_C_DROPPED_CUPTI] = 10;
	}
	l.v[TALLY_C_RECORDS_PARSED] = total;
	tally_ledger_encode(&b, &l);
	chunk(&tw, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, &b, 0);
	assert_int_equal(tally_writer_flush(&tw), 0);
	tally_writer_fini(&tw);
	tally_buf_fini(&b);
	tally_strtab_fini(&strings);
	close(fd);
}

static uint32_t bit(const char *report)
{
	int r = report_find(report);

	assert_true(r >= 0);
	return 1u << r;
}

/* The breakdown row of the one device of the trace at path. */
static struct stats *breakdown_of(const char *path, struct report_set *set,
				  const struct bd_row **row)
{
	char *paths[] = {(char *)path};
	struct stats *st =
	    fixture_stats(paths, 1, bit("gpu_time_breakdown") | bit("diagnosis"), set);
	size_t n;

	*row = stats_breakdown(st, &n);
	assert_int_equal(n, 1);
	return st;
}

/*
 * compute [0, 10] ms on stream 7, an NCCL kernel [5, 15] on stream 8, a copy [12, 20], nothing
 * until a compute kernel [30, 31]: in the precedence compute > communication > copy, compute 11,
 * communication 5 (of 10, the other 5 under compute), copies 5 (of 8), idle the 10 between.
 * Given out of time order.
 */
static const struct work shape[] = {
    {TALLY_KIND_KERNEL, 30 * MS, 1 * MS, "gemm", 7},
    {TALLY_KIND_MEMCPY, 12 * MS, 8 * MS, NULL, 7},
    {TALLY_KIND_KERNEL, 5 * MS, 10 * MS, NCCL, 8},
    {TALLY_KIND_KERNEL, 0, 10 * MS, "gemm", 7},
};

static void test_breakdown_precedence(void **state)
{
	struct report_set set = {0};
	const struct bd_row *r;
	struct stats *st;

	(void)state;
	write_work(scratch_path("shape.tally"), shape, 4, 0, 0);
	st = breakdown_of(scratch_path("shape.tally"), &set, &r);
	assert_int_equal(r->t1 - r->t0, 31 * MS);
	assert_int_equal(r->compute, 11 * MS);
	assert_int_equal(r->comm, 10 * MS);
	assert_int_equal(r->comm_exposed, 5 * MS);
	assert_int_equal(r->copy_exposed, 5 * MS);
	assert_int_equal(r->busy, 21 * MS);
	assert_int_equal(r->idle, 10 * MS);
	assert_int_equal(r->idle_unproven, 0);
	assert_int_equal(r->gap_idle, 10 * MS); /* the one gap of 1 ms or more */
	assert_int_equal(r->longest_gap, 10 * MS);
	assert_int_equal(r->longest_gap_at, T0 + 20 * MS + (uint64_t)set.sections[0]->offset);
	assert_int_equal(r->compute + r->comm_exposed + r->copy_exposed + r->idle, r->t1 - r->t0);
	stats_free(st);
	report_set_close(&set);
}

/* A loss window inside the gap: the whole gap is unproven (the rule gpu_gaps uses). */
static void test_breakdown_loss(void **state)
{
	struct report_set set = {0};
	const struct bd_row *r;
	struct stats *st;

	(void)state;
	write_work(scratch_path("lossy.tally"), shape, 4, 22 * MS, 25 * MS);
	st = breakdown_of(scratch_path("lossy.tally"), &set, &r);
	assert_int_equal(r->idle, 10 * MS);
	assert_int_equal(r->idle_unproven, 10 * MS);
	assert_int_equal(r->gap_unproven, 10 * MS);
	assert_true(r->longest_unproven);
	stats_free(st);
	report_set_close(&set);
}

/*
 * Kernels 1 us long with 1 us between, in reverse order: exact while they fit the open set.
 * More of them than a set keeps open (BD_OPEN_MAX), in time order: folded as they go, still
 * exact; then one that comes after its time was folded: counted as late, its time not added.
 */
static void test_breakdown_folds(void **state)
{
	size_t n = BD_OPEN_MAX * 2 + 10, few = 20000, i;
	struct work *w = calloc(n + 1, sizeof(*w));
	struct report_set set = {0};
	const struct bd_row *r;
	struct stats *st;

	(void)state;
	for (i = 0; i < few; i++)
		w[i] = (struct work){TALLY_KIND_KERNEL, (few - 1 - i) * 2 * US, US, "tiny", 7};
	write_work(scratch_path("many.tally"), w, few, 0, 0);
	st = breakdown_of(scratch_path("many.tally"), &set, &r);
	assert_int_equal(r->compute, few * US);
	assert_int_equal(r->idle, (few - 1) * US);
	assert_int_equal(r->late, 0);
	stats_free(st);
	report_set_close(&set);

	/* in time order, then one at the very start again: the start was folded long ago */
	for (i = 0; i < n; i++)
		w[i] = (struct work){TALLY_KIND_KERNEL, i * 2 * US, US, "tiny", 7};
	w[n] = (struct work){TALLY_KIND_KERNEL, US / 2, US, "tiny", 7};
	write_work(scratch_path("late.tally"), w, n + 1, 0, 0);
	st = breakdown_of(scratch_path("late.tally"), &set, &r);
	assert_int_equal(r->late, 1);
	assert_int_equal(r->late_ns, US);
	assert_int_equal(r->compute, n * US);
	stats_free(st);
	report_set_close(&set);
	free(w);
}

/* ---- the building blocks --------------------------------------------------------------------- */

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Random intervals in random order: the union's measure, against a bitmap of the time. */
static void test_spans_union(void **state)
{
	enum { N = 3000, T = 200000 };
	unsigned char *cover = calloc(T, 1);
	struct span_set set = {.merge_gap = 1};
	uint64_t want = 0, got = 0;
	uint32_t s = 12345;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		uint64_t a = rnd(&s) % (T - 100), len = rnd(&s) % 60;

		memset(cover + a, 1, len);
		assert_int_equal(span_add(&set, a, a + len, 0), 0);
	}
	for (i = 0; i < T; i++)
		want += cover[i];
	for (i = 0; i < set.n; i++) {
		got += set.s[i].t1 - set.s[i].t0;
		assert_true(i == 0 || set.s[i - 1].t1 < set.s[i].t0); /* disjoint, not touching */
	}
	assert_int_equal(got, want);
	assert_int_equal(span_settle(&set, T / 2, NULL, NULL) + set.n > 0, 1);
	for (i = 0; i < set.n; i++)
		assert_true(set.s[i].t1 >= T / 2);
	span_set_fini(&set);
	free(cover);
}

/* The queue's buckets, widened many times over, against the brute-force mean per bucket. */
static void test_depth_buckets(void **state)
{
	enum { N = 2000, T = 50000000 };
	struct tally_section s = {.start_cupti = 1000};
	struct report_section rs = {.index = 0, .s = &s};
	struct queues *q = queues_new(64);
	uint64_t *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
	const struct qseries *qs;
	uint32_t seed = 99, k;
	size_t n, i;

	(void)state;
	assert_non_null(q);
	queues_section(q, &rs);
	for (i = 0; i < N; i++) {
		a[i] = 1000 + rnd(&seed) % T;
		b[i] = a[i] + rnd(&seed) % (T / 20);
		assert_int_equal(queues_add(q, &rs, 0, 7, a[i], b[i]), 0);
	}
	assert_int_equal(queues_finish(q), 0);
	qs = queues_list(q, &n);
	assert_int_equal(n, 1);
	assert_true(qs->width > 1000); /* it widened */
	for (k = 0; k < qs->n; k++) {
		uint64_t b0 = qs->origin + k * qs->width, b1 = b0 + qs->width;
		double area = 0;

		for (i = 0; i < N; i++) {
			uint64_t lo = a[i] > b0 ? a[i] : b0, hi = b[i] < b1 ? b[i] : b1;

			area += hi > lo ? (double)(hi - lo) : 0;
		}
		assert_true(qs->mean[k] > area / (double)qs->width - 1e-6 &&
			    qs->mean[k] < area / (double)qs->width + 1e-6);
	}
	queues_free(q);
	free(a);
	free(b);
}

static void test_percentiles(void **state)
{
	uint64_t v[] = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4}, out[4];
	static const double p[] = {10, 50, 90, 100};

	(void)state;
	assert_int_equal(stats_percentiles(v, 10, p, out, 4), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 5);
	assert_int_equal(out[2], 9);
	assert_int_equal(out[3], 10);
	assert_int_equal(v[0], 7); /* left as it was */
	assert_true(stats_median(v, 10) == 5.5);
}

/* Steps from the launch pattern: a step of P kernels whose first name occurs once per step, the
 * first step irregular (warm-up launched more); the marks at that name's launches. */
static void test_phases_pattern(void **state)
{
	struct phase_kernel k[400];
	struct phase_span out[64];
	uint32_t name;
	uint64_t period, t = 0;
	size_t n = 0, steps, i;
	unsigned s, j;

	(void)state;
	for (j = 0; j < 13; j++, t += 100) /* a warm-up step of other names, launched apart */
		k[n++] = (struct phase_kernel){t, 100 + j % 4};
	for (s = 0; s < 20; s++) /* 20 steps of 10 kernels: 7 opens each, 8 and 9 alternate */
		for (j = 0; j < 10; j++, t += 100)
			k[n++] = (struct phase_kernel){t, j == 0 ? 7 : j == 9 ? 11 : 8 + j % 2};
	steps = phases_from_pattern(k, n, out, 64, &name, &period);
	assert_int_equal(name, 7);
	assert_int_equal(period, 10);
	assert_int_equal(steps, 19); /* 20 marks: 19 whole steps between them */
	for (i = 0; i < steps; i++)
		assert_int_equal(out[i].t1 - out[i].t0, 1000);
	/* names drawn at random from 1000: none recurs at one period, no steps */
	for (i = 0, t = 12345; i < n; i++) {
		t = t * 6364136223846793005ull + 1442695040888963407ull;
		k[i].name = (uint32_t)(t >> 33) % 1000;
	}
	assert_int_equal(phases_from_pattern(k, n, out, 64, &name, &period), 0);
}

/* Warm-up: the leading steps over 3 times the median, at most half; the median of the rest. */
static void test_phases_warmup(void **state)
{
	struct phase_span s[10];
	uint64_t median, t = 0;
	unsigned i;

	(void)state;
	for (i = 0; i < 10; i++) {
		uint64_t len = i == 0 ? 5000 : i == 1 ? 400 : i == 5 ? 900 : 100 + i;

		s[i] = (struct phase_span){t, t + len};
		t += len;
	}
	assert_int_equal(phases_warmup(s, 10, &median), 2); /* step 5 (900) is not leading */
	assert_int_equal(median, 106);
	for (i = 0; i < 10; i++)
		s[i].t1 = s[i].t0 + 10000; /* all long: none is warm-up */
	assert_int_equal(phases_warmup(s, 10, &median), 0);
	assert_int_equal(median, 10000);
}

/* Ranges inside the one before are not steps of their own. */
static void test_phases_top_level(void **state)
{
	struct phase_span v[] = {{0, 100}, {10, 20}, {100, 200}, {150, 160}, {200, 300}, {5, 5}};

	(void)state;
	assert_int_equal(phases_top_level(v, 6), 3);
	assert_true(v[0].t0 == 0 && v[1].t0 == 100 && v[2].t0 == 200);
}

/* Every rule of the diagnosis, and its threshold, is in docs/diagnosis.md. */
static void test_rules_documented(void **state)
{
	const char *docs = getenv("TALLY_DOCS");
	char path[512], *text;
	FILE *f;
	long len;
	unsigned r;

	(void)state;
	assert_non_null(docs);
	snprintf(path, sizeof(path), "%s/diagnosis.md", docs);
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (r = 0; r < diag_rules_count; r++) {
		char head[80];

		snprintf(head, sizeof(head), "### `%s`", diag_rules[r].id);
		if (!strstr(text, head))
			fail_msg("docs/diagnosis.md has no section %s", head);
		if (!strstr(text, diag_rules[r].threshold))
			fail_msg("docs/diagnosis.md does not state %s's threshold \"%s\"",
				 diag_rules[r].id, diag_rules[r].threshold);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_breakdown_precedence), cmocka_unit_test(test_breakdown_loss),
	    cmocka_unit_test(test_breakdown_folds),	 cmocka_unit_test(test_spans_union),
	    cmocka_unit_test(test_depth_buckets),	 cmocka_unit_test(test_percentiles),
	    cmocka_unit_test(test_rules_documented),	 cmocka_unit_test(test_phases_pattern),
	    cmocka_unit_test(test_phases_warmup),	 cmocka_unit_test(test_phases_top_level),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
