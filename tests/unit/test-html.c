/* SPDX-License-Identifier: MIT */
/*
 * tally report's data, without a browser: traces written straight through the format library with
 * kernels at chosen times, then the page's JSON blocks read back with jansson.  Each expected value
 * comes from where the test put the kernels: the busy time, the idle stretch between them, the
 * exact events, and an idle stretch that a loss window makes unproven.  And the
 * page's safety: a name that would end the <script> block and U+2028 travel escaped and come
 * back intact.  The browser test (tests/cli/test-html-report.sh) checks what the page draws.
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
#include <jansson.h>

#include "buf.h"
#include "codec.h"
#include "page.h"
#include "payloads.h"
#include "scratch.h"
#include "strtab.h"
#include "timeline.h"
#include "writer.h"

#define T0	1000000000ull /* the first kernel's start (CUPTI ns) */
#define MS	1000000ull
#define HOSTILE "</script><script>document.body.dataset.pwned=1</script>\xe2\x80\xa8<!--"

struct kernel_at {
	uint64_t start, dur; /* relative to T0 */
	const char *name;
};

struct loss_at {
	uint64_t begin, end, count; /* relative to T0; count 0: no loss */
};

static void chunk(struct tally_writer *w, unsigned type, unsigned flags, struct tally_buf *b,
		  uint32_t records)
{
	assert_int_equal(tally_writer_chunk(w, type, flags, b->data, b->len, records), 0);
	tally_buf_reset(b);
}

static void write_records(struct tally_writer *w, struct tally_buf *b, const struct kernel_at *k,
			  size_t n, unsigned kind)
{
	struct tally_record *r = calloc(n, sizeof(*r));
	struct tally_codec codec = {0};
	struct tally_strtab strings;
	size_t i;

	tally_strtab_init(&strings);
	for (i = 0; i < n; i++)
		r[i] =
		    (struct tally_record){.kind = kind,
					  .start = T0 + k[i].start,
					  .end = T0 + k[i].start + k[i].dur,
					  .correlation_id = (uint32_t)i + 1,
					  .stream_id = 7,
					  .thread_id = (uint32_t)i, /* API calls: a thread each */
					  .name_id = tally_strtab_intern(&strings, k[i].name)};
	assert_true(tally_strtab_take_pending(&strings, b));
	chunk(w, TALLY_CHUNK_STRINGS, 0, b, 0);
	assert_int_equal(tally_records_encode(&codec, b, kind, r, n, TALLY_COLUMNS_ALL), 0);
	chunk(w, TALLY_CHUNK_RECORDS, 0, b, (uint32_t)n);
	tally_strtab_fini(&strings);
	tally_codec_fini(&codec);
	free(r);
}

/* A trace of records of one kind at the given times; with loss->count, CUPTI dropped records in
 * a window. */
static void write_trace_kind(const char *path, const struct kernel_at *k, size_t n,
			     const struct loss_at *loss, unsigned kind)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_ledger l = {.final = true, .t_begin = T0, .t_end = T0 + 20 * MS};
	struct tally_writer w;
	struct tally_buf b = {0};

	assert_true(fd >= 0);
	assert_int_equal(tally_writer_init(&w, &sink, 0), 0);
	assert_int_equal(tally_writer_preamble(&w), 0);
	tally_kv_uint(&b, TALLY_SK_PID, 42);
	tally_kv_uint(&b, TALLY_SK_START_CUPTI, T0);
	chunk(&w, TALLY_CHUNK_SESSION, 0, &b, 0);
	write_records(&w, &b, k, n, kind);
	if (loss->count) {
		tally_loss_put(&b, T0 + loss->begin, T0 + loss->end, TALLY_C_DROPPED_CUPTI,
			       loss->count);
		chunk(&w, TALLY_CHUNK_LOSS, 0, &b, 0);
		l.v[TALLY_C_DROPPED_CUPTI] = loss->count;
	}
	l.v[TALLY_C_BY_KIND + kind] = n;
	l.v[TALLY_C_RECORDS_PARSED] = n;
	tally_ledger_encode(&b, &l);
	chunk(&w, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, &b, 0);
	assert_int_equal(tally_writer_flush(&w), 0);
	tally_writer_fini(&w);
	tally_buf_fini(&b);
	close(fd);
}

static void write_trace(const char *path, const struct kernel_at *k, size_t n,
			const struct loss_at *loss)
{
	write_trace_kind(path, k, n, loss, TALLY_KIND_KERNEL);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	long n;
	char *s;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = malloc((size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* The JSON of <script type="application/json" id="ID">, checked to hold no raw '<' or U+2028. */
static json_t *json_block(const char *page, const char *id)
{
	char open[128];
	const char *begin, *end;
	json_error_t err;
	json_t *j;

	snprintf(open, sizeof(open), "<script type=\"application/json\" id=\"%s\">", id);
	begin = strstr(page, open);
	assert_non_null(begin);
	begin += strlen(open);
	end = strstr(begin, "</script>");
	assert_non_null(end);
	assert_null(memchr(begin, '<', (size_t)(end - begin)));
	assert_null(memmem(begin, (size_t)(end - begin), "\xe2\x80\xa8", 3));
	j = json_loadb(begin, (size_t)(end - begin), 0, &err);
	if (!j)
		fail_msg("%s: %s at %d", id, err.text, err.position);
	return j;
}

static json_t *report_of(const char *trace, unsigned buckets, json_t **stats)
{
	char *paths[] = {(char *)trace};
	struct report_html_opts o = {.output = scratch_path("page.html"),
				     .force = true,
				     .buckets = buckets,
				     .exact_budget = 1000};
	struct report_html_result res;
	char err[512], *page;
	json_t *tl;

	assert_int_equal(report_html(paths, 1, &o, NULL, NULL, &res, err, sizeof(err)), 0);
	page = slurp(o.output);
	assert_int_equal(res.bytes, strlen(page));
	tl = json_block(page, "tally-timeline");
	*stats = json_block(page, "tally-stats");
	free(page);
	return tl;
}

static json_t *lane_of_type(json_t *tl, const char *type)
{
	size_t i;
	json_t *l;

	json_array_foreach(json_object_get(tl, "lanes"), i,
			   l) if (strcmp(json_string_value(json_object_get(l, "type")), type) ==
				  0) return l;
	fail_msg("no %s lane", type);
	return NULL;
}

static json_int_t lane_index(json_t *tl, const char *type)
{
	json_t *lanes = json_object_get(tl, "lanes");
	size_t i;

	for (i = 0; i < json_array_size(lanes); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(lanes, i), "type")),
			   type) == 0)
			return (json_int_t)i;
	return -1;
}

/* Two kernels, 1 ms each, 10 ms apart: busy 2 ms, one idle stretch of 10 ms, both exact. */
static const struct kernel_at two[] = {{0, 1 * MS, "first"}, {11 * MS, 1 * MS, HOSTILE}};

static void test_busy_idle_exact(void **state)
{
	struct loss_at none = {0};
	json_t *stats, *tl, *dev, *gaps, *gap, *ev, *names;
	size_t i;

	(void)state;
	write_trace(scratch_path("two.tally"), two, 2, &none);
	tl = report_of(scratch_path("two.tally"), 1200, &stats);
	assert_string_equal(json_string_value(json_object_get(stats, "verdict")), "COMPLETE");
	assert_int_equal(json_integer_value(json_object_get(tl, "span_ns")), 12 * MS);
	dev = lane_of_type(tl, "device");
	assert_int_equal(json_integer_value(json_object_get(dev, "busy_ns")), 2 * MS);
	assert_int_equal(json_integer_value(json_object_get(dev, "events")), 2);
	/* the stretch between them, exactly, proven idle: on the device's row and its stream's */
	gaps = json_object_get(tl, "gaps");
	assert_int_equal(json_array_size(gaps), 2);
	for (i = 0; i < 2; i++) {
		gap = json_array_get(gaps, i);
		assert_int_equal(json_integer_value(json_array_get(gap, 0)),
				 lane_index(tl, i == 0 ? "device" : "gpu"));
		assert_int_equal(json_integer_value(json_array_get(gap, 1)), 1 * MS);
		assert_int_equal(json_integer_value(json_array_get(gap, 2)), 11 * MS);
		assert_int_equal(json_integer_value(json_array_get(gap, 3)), 0);
		assert_string_equal(json_string_value(json_array_get(gap, 4)),
				    "no loss overlaps it (the ledger proves it)");
	}
	/* exact events: lane, start, duration, name, correlation id */
	ev = json_object_get(tl, "events");
	names = json_object_get(tl, "names");
	assert_int_equal(json_array_size(ev), 10);
	assert_int_equal(json_integer_value(json_array_get(ev, 6)), 11 * MS);
	assert_int_equal(json_integer_value(json_array_get(ev, 7)), 1 * MS);
	assert_string_equal(
	    json_string_value(json_array_get(names, json_integer_value(json_array_get(ev, 8)))),
	    HOSTILE);
	json_decref(tl);
	json_decref(stats);
}

/* The same stretch with records CUPTI dropped inside it: unproven, and the verdict says so. */
static void test_loss_makes_gap_unproven(void **state)
{
	struct loss_at loss = {5 * MS, 6 * MS, 42};
	json_t *stats, *tl, *gap, *w;

	(void)state;
	write_trace(scratch_path("lossy.tally"), two, 2, &loss);
	tl = report_of(scratch_path("lossy.tally"), 1200, &stats);
	assert_string_equal(json_string_value(json_object_get(stats, "verdict")), "INCOMPLETE");
	gap = json_array_get(json_object_get(tl, "gaps"), 0);
	assert_int_equal(json_integer_value(json_array_get(gap, 3)), 1);
	assert_string_equal(json_string_value(json_array_get(gap, 4)),
			    "loss window: dropped_cupti, 42 lost");
	w = json_array_get(json_object_get(tl, "loss_windows"), 0);
	assert_int_equal(json_integer_value(json_object_get(w, "begin")), 5 * MS);
	assert_int_equal(json_integer_value(json_object_get(w, "end")), 6 * MS);
	assert_int_equal(json_integer_value(json_object_get(w, "count")), 42);
	json_decref(tl);
	json_decref(stats);
}

/* Dense windows fall back to buckets: a window with more events than it keeps is not exact. */
static void test_dense_windows_are_buckets(void **state)
{
	struct kernel_at *k = calloc(5000, sizeof(*k));
	struct loss_at none = {0};
	json_t *stats, *tl, *dev;
	size_t i;

	(void)state;
	for (i = 0; i < 5000; i++)
		k[i] = (struct kernel_at){i * 300, 250, i % 2 ? "odd" : "even"};
	/* the span is 100 ms (64 windows of 1.56 ms): the 4,999 others crowd the first window */
	k[4999].start = 100 * MS;
	write_trace(scratch_path("dense.tally"), k, 5000, &none);
	tl = report_of(scratch_path("dense.tally"), 1024, &stats);
	dev = lane_of_type(tl, "device");
	assert_int_equal(json_integer_value(json_object_get(dev, "events")), 5000);
	assert_int_equal(json_integer_value(json_object_get(dev, "busy_ns")), 5000 * 250);
	/* only the lone last kernel is exact */
	assert_int_equal(json_array_size(json_object_get(tl, "events")), 5);
	json_decref(tl);
	json_decref(stats);
	free(k);
}

/* Lanes are capped for the whole page (memory is lanes x buckets): 600 threads' API calls, none
 * lost; past the budget (less a shared lane per type) the rest share one lane of no rank. */
static void test_lanes_capped(void **state)
{
	struct kernel_at *k = calloc(600, sizeof(*k));
	struct loss_at none = {0};
	json_t *stats, *tl, *l;
	size_t i, lanes = 0, shared = 0;
	json_int_t events = 0;

	(void)state;
	for (i = 0; i < 600; i++)
		k[i] = (struct kernel_at){i * 1000, 500, "cudaLaunchKernel"};
	write_trace_kind(scratch_path("threads.tally"), k, 600, &none, TALLY_KIND_RUNTIME);
	tl = report_of(scratch_path("threads.tally"), 1024, &stats);
	json_array_foreach(json_object_get(tl, "lanes"), i, l)
	{
		lanes++;
		events += json_integer_value(json_object_get(l, "events"));
		shared += json_integer_value(json_object_get(l, "sec")) == TL_LANE_OTHER;
	}
	assert_int_equal(lanes, TL_LANES_MAX - TL_LANE_TYPES + 1); /* their own, one shared */
	assert_int_equal(shared, 1);
	assert_int_equal(events, 600);
	json_decref(tl);
	json_decref(stats);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_busy_idle_exact),
	    cmocka_unit_test(test_loss_makes_gap_unproven),
	    cmocka_unit_test(test_dense_windows_are_buckets),
	    cmocka_unit_test(test_lanes_capped),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
