/* SPDX-License-Identifier: MIT */
/*
 * stats, export and merge on traces made by the CPU test source through the real pipeline.  Every
 * expected sum, count, median and standard deviation is computed here from the CUPTI records the
 * test source generated (its observer), never from tally's output.  The Chrome JSON is parsed by
 * jansson; the SQLite file is queried by the sqlite3 command with nsys-style queries.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "codec.h"
#include "compare.h"
#include "convert.h"
#include "export.h"
#include "gaps.h"
#include "merge.h"
#include "report-fixture.h"
#include "scratch.h"
#include "stats.h"
#include "strtab.h"
#include "testsrc.h"
#include "trace-set.h"
#include "verdict.h"
#include "writer.h"

/* ---- what the test source generated ---------------------------------------------------- */

struct dist {
	char *name;
	uint64_t *v;
	size_t n, cap;
};

struct dists {
	struct dist *d;
	size_t n;
};

struct open_range {
	uint32_t id;
	uint64_t start;
	const char *name;
};

struct observed {
	pthread_mutex_t lock;
	struct dists kern, kern_gb, api, memtime, memsize, nvtx;
	uint64_t untimed;   /* GPU records with start == 0 */
	uint64_t launches;  /* API records (every one the test source makes launches) */
	uint64_t gpu_timed; /* GPU records with timing: each one's Chrome event and flow */
	uint64_t kernels_timed;
	struct open_range *open; /* NVTX ranges started, waiting for their end */
	size_t nopen;
	uint64_t first_kernel_start; /* of thread 0's first kernel, for merge alignment */
	uint64_t kernel_starts[64];  /* first starts seen, in order */
	size_t nkernel_starts;
};

static void dist_add(struct dists *ds, const char *name, uint64_t v)
{
	struct dist *d = NULL;
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (strcmp(ds->d[i].name, name) == 0)
			d = &ds->d[i];
	if (!d) {
		ds->d = realloc(ds->d, (ds->n + 1) * sizeof(*ds->d));
		d = &ds->d[ds->n++];
		memset(d, 0, sizeof(*d));
		d->name = strdup(name);
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 64;
		d->v = realloc(d->v, d->cap * sizeof(*d->v));
	}
	d->v[d->n++] = v;
}

static void dists_free(struct dists *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++) {
		free(ds->d[i].name);
		free(ds->d[i].v);
	}
	free(ds->d);
	memset(ds, 0, sizeof(*ds));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The expected figures of d, the slow obvious way: sort, sum, two-pass deviation. */
static void expect(const struct dist *d, struct stats_group_view *e)
{
	uint64_t *s = malloc(d->n * sizeof(*s));
	double mean, ss = 0;
	size_t i;

	memcpy(s, d->v, d->n * sizeof(*s));
	qsort(s, d->n, sizeof(*s), cmp_u64);
	memset(e, 0, sizeof(*e));
	e->count = d->n;
	for (i = 0; i < d->n; i++)
		e->total += s[i];
	e->min = s[0];
	e->max = s[d->n - 1];
	e->median = d->n % 2 ? (double)s[d->n / 2] : ((double)s[d->n / 2 - 1] + s[d->n / 2]) / 2;
	mean = (double)e->total / (double)d->n;
	for (i = 0; i < d->n; i++)
		ss += ((double)s[i] - mean) * ((double)s[i] - mean);
	e->stddev = d->n > 1 ? sqrt(ss / (double)(d->n - 1)) : 0;
	e->avg = mean;
	free(s);
}

static const char *api_name(CUpti_ActivityKind kind, uint32_t cbid, char *buf, size_t len)
{
	const char *name = NULL;
	CUpti_CallbackDomain dom = kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
								      : CUPTI_CB_DOMAIN_RUNTIME_API;

	assert_int_equal(cuptiGetCallbackName(dom, cbid, &name), CUPTI_SUCCESS);
	snprintf(buf, len, "%.*s", (int)tally_api_name_len(name), name);
	return buf;
}

static void memop_name(char *buf, size_t len, unsigned copy_kind, bool memset_op)
{
	static const char *const kinds[] = {"Unknown", "Host-to-Device", "Device-to-Host",
					    "Host-to-Array", "Array-to-Host"};

	if (memset_op)
		snprintf(buf, len, "[CUDA memset]");
	else
		snprintf(buf, len, "[CUDA memcpy %s]", kinds[copy_kind]);
}

/* cuda_gpu_kern_gb_sum's groups: launch shape and name, as "gx gy gz|bx by bz|name". */
static void gb_add(struct dists *ds, const char *shape, const char *kernel, uint64_t v)
{
	char key[512];

	snprintf(key, sizeof(key), "%s%s", shape, kernel);
	dist_add(ds, key, v);
}

static void observe_gpu(struct observed *x, const CUpti_Activity *rec)
{
	char name[64];

	if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		const CUpti_ActivityKernel10 *k = (const void *)rec;

		if (!k->start) {
			x->untimed++;
			return;
		}
		dist_add(&x->kern, k->name, k->end - k->start);
		snprintf(name, sizeof(name), "%d %d %d|%d %d %d|", k->gridX, k->gridY, k->gridZ,
			 k->blockX, k->blockY, k->blockZ);
		gb_add(&x->kern_gb, name, k->name, k->end - k->start);
		x->kernels_timed++;
		if (x->nkernel_starts < 64)
			x->kernel_starts[x->nkernel_starts++] = k->start;
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		const CUpti_ActivityMemcpy6 *m = (const void *)rec;

		if (!m->start) {
			x->untimed++;
			return;
		}
		memop_name(name, sizeof(name), m->copyKind, false);
		dist_add(&x->memtime, name, m->end - m->start);
		dist_add(&x->memsize, name, m->bytes);
	} else {
		const CUpti_ActivityMemset4 *m = (const void *)rec;

		if (!m->start) {
			x->untimed++;
			return;
		}
		memop_name(name, sizeof(name), 0, true);
		dist_add(&x->memtime, name, m->end - m->start);
		dist_add(&x->memsize, name, m->bytes);
	}
	x->gpu_timed++;
}

static void observe_marker(struct observed *x, const CUpti_ActivityMarker2 *m)
{
	char name[128];
	size_t i;

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		x->open = realloc(x->open, (x->nopen + 1) * sizeof(*x->open));
		x->open[x->nopen++] = (struct open_range){m->id, m->timestamp, m->name};
		return;
	}
	if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END))
		return;
	for (i = 0; i < x->nopen; i++)
		if (x->open[i].id == m->id) {
			/* nsys's "domain:message"; the test source uses the default domain */
			snprintf(name, sizeof(name), ":%s", x->open[i].name);
			dist_add(&x->nvtx, name, m->timestamp - x->open[i].start);
			x->open[i] = x->open[--x->nopen];
			return;
		}
}

static void observe(void *ctx, const CUpti_Activity *rec, size_t size)
{
	struct observed *x = ctx;
	char name[128];

	(void)size;
	if (!rec)
		return;
	pthread_mutex_lock(&x->lock);
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_MEMCPY:
	case CUPTI_ACTIVITY_KIND_MEMSET:
		observe_gpu(x, rec);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)rec;

		dist_add(&x->api, api_name(a->kind, a->cbid, name, sizeof(name)),
			 a->end - a->start);
		x->launches += a->cbid != CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MARKER:
		observe_marker(x, (const CUpti_ActivityMarker2 *)rec);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&x->lock);
}

static void observed_init(struct observed *x)
{
	memset(x, 0, sizeof(*x));
	pthread_mutex_init(&x->lock, NULL);
}

static void observed_free(struct observed *x)
{
	dists_free(&x->kern);
	dists_free(&x->kern_gb);
	dists_free(&x->api);
	dists_free(&x->memtime);
	dists_free(&x->memsize);
	dists_free(&x->nvtx);
	free(x->open);
	pthread_mutex_destroy(&x->lock);
}

/* ---- making traces ------------------------------------------------------------------------- */

/* A CUPTI clock that is CLOCK_REALTIME shifted by clock_delta (what merge must undo). */
static int64_t clock_delta;

static uint64_t shifted_now(void)
{
	return testsrc_now() + (uint64_t)clock_delta;
}

struct trace_spec {
	struct testsrc_workload w;
	unsigned threads;
	int64_t clock_delta;
	bool devices;
};

struct worker {
	pthread_t thread;
	const struct trace_spec *spec;
	struct observed *x;
	unsigned index;
	struct testsrc_emitter e;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct testsrc_workload w = wk->spec->w;

	w.seed += wk->index;
	w.t0 = shifted_now();
	w.device_records = wk->index == 0 && wk->spec->devices ? 1 : 0;
	testsrc_emitter_init(&wk->e, 100 + wk->index, observe, wk->x);
	testsrc_run(&wk->e, &w, 1 + wk->index * 1000000u);
	testsrc_flush(&wk->e);
	return NULL;
}

/* Write a trace to path through the real pipeline; x sees every record generated. */
static void make_trace(const char *path, const struct trace_spec *spec, struct observed *x)
{
	struct tally_source src = testsrc_source;
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct tally_sink sink;
	struct worker wk[8];
	unsigned i, n = spec->threads ? spec->threads : 1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0 && n <= 8);
	clock_delta = spec->clock_delta;
	src.now = shifted_now;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &src, &sink, &session), 0);
	tally_buf_fini(&session);
	for (i = 0; i < n; i++) {
		wk[i] = (struct worker){.spec = spec, .x = x, .index = i};
		assert_int_equal(pthread_create(&wk[i].thread, NULL, worker_main, &wk[i]), 0);
	}
	for (i = 0; i < n; i++) {
		pthread_join(wk[i].thread, NULL);
		tally_pipeline_drain();
	}
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	assert_int_equal(tally_pipeline_stop(&rep), 0);
	tally_pipeline_reset();
	close(fd);
}

/* ---- running the report layer -------------------------------------------------------------- */

static const struct stats_group_view *find_group(const struct stats *st, int report,
						 const char *name)
{
	const struct stats_group_view *g;
	char key[512];
	size_t i;

	for (i = 0; (g = stats_group(st, (unsigned)report, i)); i++) {
		if (report == report_find("cuda_gpu_kern_gb_sum")) {
			snprintf(key, sizeof(key), "%d %d %d|%d %d %d|%s", g->grid[0], g->grid[1],
				 g->grid[2], g->block[0], g->block[1], g->block[2], g->name);
			if (strcmp(key, name) == 0)
				return g;
		} else if (strcmp(g->name, name) == 0) {
			return g;
		}
	}
	return NULL;
}

/* Every expected group is in the report with exactly these figures, and nothing else is. */
static void check_report(const struct stats *st, const char *report, const struct dists *ds)
{
	int r = report_find(report);
	size_t i, n = 0;

	assert_true(r >= 0);
	while (stats_group(st, (unsigned)r, n))
		n++;
	assert_int_equal(n, ds->n);
	for (i = 0; i < ds->n; i++) {
		const struct stats_group_view *g = find_group(st, r, ds->d[i].name);
		struct stats_group_view e;

		if (!g)
			fail_msg("%s: no group '%s'", report, ds->d[i].name);
		expect(&ds->d[i], &e);
		assert_int_equal(g->count, e.count);
		assert_int_equal(g->total, e.total);
		assert_int_equal(g->min, e.min);
		assert_int_equal(g->max, e.max);
		assert_true(g->median == e.median); /* exact: an integer or a half */
		assert_true(fabs(g->stddev - e.stddev) <= 1e-9 * (e.stddev + 1));
		assert_true(fabs(g->avg - e.avg) <= 1e-9 * e.avg);
	}
}

/* ---- stats ------------------------------------------------------------------------------------
 */

static const struct trace_spec rich = {
    .w = {.kernels = 1500,
	  .driver_kernels = 101,
	  .memcpys = 120,
	  .memsets = 61,
	  .syncs = 20,
	  .ranges = 40,
	  .marks = 5,
	  .kernel_names = 8,
	  .seed = 11,
	  .bad_time_every = 97},
    .threads = 3,
    .devices = true,
};

static void test_stats_exact(void **state)
{
	struct observed x;
	struct report_set set;
	struct stats *st;
	char *path = strdup(scratch_path("rich.tally"));

	(void)state;
	observed_init(&x);
	make_trace(path, &rich, &x);
	st = fixture_stats(&path, 1, ~0u, &set);
	assert_true(x.untimed > 0);
	assert_int_equal(stats_untimed(st), x.untimed);
	check_report(st, "cuda_gpu_kern_sum", &x.kern);
	check_report(st, "cuda_gpu_kern_gb_sum", &x.kern_gb);
	check_report(st, "cuda_api_sum", &x.api);
	check_report(st, "cuda_gpu_mem_time_sum", &x.memtime);
	check_report(st, "cuda_gpu_mem_size_sum", &x.memsize);
	check_report(st, "nvtx_sum", &x.nvtx);
	assert_false(set.complete); /* bad timestamps were generated: the verdict says so */
	stats_free(st);
	report_set_close(&set);
	observed_free(&x);
	free(path);
}

/* Medians of even and odd counts, single values, and huge values (the long double path). */
static void test_stats_median_edges(void **state)
{
	static const struct trace_spec one = {.w = {.kernels = 1, .kernel_names = 1, .seed = 5}};
	static const struct trace_spec even = {.w = {.kernels = 64, .kernel_names = 4, .seed = 6}};
	const struct trace_spec *specs[] = {&one, &even};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct observed x;
		struct report_set set;
		struct stats *st;
		char *path = strdup(scratch_path("edge.tally"));

		observed_init(&x);
		make_trace(path, specs[i], &x);
		st = fixture_stats(&path, 1, 1u << report_find("cuda_gpu_kern_sum"), &set);
		check_report(st, "cuda_gpu_kern_sum", &x.kern);
		assert_true(set.complete);
		stats_free(st);
		report_set_close(&set);
		observed_free(&x);
		free(path);
	}
}

/* A trace written straight through the format library: kernels named name[i] lasting dur[i]. */
static void write_kernels(const char *path, const char *const *names, const uint64_t *dur, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_record *r = calloc(n, sizeof(*r));
	struct tally_ledger l = {.final = true};
	struct tally_codec codec = {0};
	struct tally_strtab strings;
	struct tally_writer w;
	struct tally_buf b = {0};
	uint64_t t = 1000000000;
	size_t i;

	assert_int_equal(tally_writer_init(&w, &sink, 0), 0);
	assert_int_equal(tally_writer_preamble(&w), 0);
	tally_kv_uint(&b, TALLY_SK_PID, 42);
	tally_kv_uint(&b, TALLY_SK_START_CUPTI, t);
	tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0);
	tally_strtab_init(&strings);
	for (i = 0; i < n; i++) {
		r[i] = (struct tally_record){.kind = TALLY_KIND_KERNEL,
					     .start = t,
					     .end = t + dur[i],
					     .correlation_id = (uint32_t)i + 1};
		r[i].name_id = tally_strtab_intern(&strings, names[i]);
		t += dur[i] + 1000;
	}
	tally_buf_reset(&b);
	assert_true(tally_strtab_take_pending(&strings, &b));
	tally_writer_chunk(&w, TALLY_CHUNK_STRINGS, 0, b.data, b.len, 0);
	tally_buf_reset(&b);
	assert_int_equal(
	    tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, r, n, TALLY_COLUMNS_ALL), 0);
	tally_writer_chunk(&w, TALLY_CHUNK_RECORDS, 0, b.data, b.len, n);
	l.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL] = n;
	l.t_end = t;
	tally_buf_reset(&b);
	tally_ledger_encode(&b, &l);
	tally_writer_chunk(&w, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, b.data, b.len, 0);
	assert_int_equal(tally_writer_flush(&w), 0);
	tally_writer_fini(&w);
	tally_strtab_fini(&strings);
	tally_codec_fini(&codec);
	tally_buf_fini(&b);
	free(r);
	close(fd);
}

/* Durations past 2^32 ns take the long double path; just under it, the exact integer one. */
static void test_stats_huge_values(void **state)
{
	static const uint64_t huge[] = {5000000000ull, 9000000000123ull,   7000000000001ull,
					4294967296ull, 123456789012345ull, 8000000000000ull};
	static const uint64_t big[] = {4294967295ull, 4294967294ull, 4000000000ull, 1ull};
	const char *names[10];
	uint64_t dur[10];
	struct dists want = {0};
	struct report_set set;
	struct stats *st;
	char *path = strdup(scratch_path("huge.tally"));
	size_t i;

	(void)state;
	for (i = 0; i < 6; i++) {
		names[i] = "huge";
		dur[i] = huge[i];
		dist_add(&want, "huge", huge[i]);
	}
	for (i = 0; i < 4; i++) {
		names[6 + i] = "big";
		dur[6 + i] = big[i];
		dist_add(&want, "big", big[i]);
	}
	write_kernels(path, names, dur, 10);
	st = fixture_stats(&path, 1, 1u << report_find("cuda_gpu_kern_sum"), &set);
	check_report(st, "cuda_gpu_kern_sum", &want);
	assert_true(set.complete);
	stats_free(st);
	report_set_close(&set);
	dists_free(&want);
	free(path);
}

/* Several files, and a directory of them, are one set: the groups add up across processes. */
static void test_stats_several_files(void **state)
{
	struct trace_spec a = {.w = {.kernels = 300, .kernel_names = 3, .seed = 21}};
	struct trace_spec b = {.w = {.kernels = 200, .kernel_names = 5, .seed = 22}};
	char *paths[2], *dir[1];
	struct report_set set;
	struct observed x;
	struct stats *st;

	(void)state;
	observed_init(&x);
	mkdir(scratch_path("dir"), 0755);
	paths[0] = strdup(scratch_path("dir/a.tally"));
	paths[1] = strdup(scratch_path("dir/b.tally"));
	make_trace(paths[0], &a, &x);
	make_trace(paths[1], &b, &x);
	st = fixture_stats(paths, 2, 1u << report_find("cuda_gpu_kern_sum"), &set);
	check_report(st, "cuda_gpu_kern_sum", &x.kern);
	assert_int_equal(set.nsections, 2);
	stats_free(st);
	report_set_close(&set);
	dir[0] = strdup(scratch_path("dir"));
	st = fixture_stats(dir, 1, 1u << report_find("cuda_gpu_kern_sum"), &set);
	check_report(st, "cuda_gpu_kern_sum", &x.kern);
	assert_int_equal(set.ninputs, 2);
	assert_string_equal(set.inputs[0].path + strlen(set.inputs[0].path) - 7, "a.tally");
	stats_free(st);
	report_set_close(&set);
	observed_free(&x);
	free(paths[0]);
	free(paths[1]);
	free(dir[0]);
}

/* The written report: verdict first, nsys's headers, and JSON that parses with the same rows. */
static void test_stats_output(void **state)
{
	static const struct trace_spec spec = {
	    .w = {.kernels = 200, .memcpys = 10, .ranges = 4, .kernel_names = 8, .seed = 31}};
	struct report_set set;
	struct observed x;
	struct stats *st;
	char *path = strdup(scratch_path("out.tally")), *buf = NULL;
	size_t len = 0;
	FILE *f;
	json_t *root, *reports, *rows;
	json_error_t jerr;

	(void)state;
	observed_init(&x);
	make_trace(path, &spec, &x);
	st = fixture_stats(&path, 1, ~0u, &set);
	f = open_memstream(&buf, &len);
	assert_int_equal(stats_write(st, &set, f, REPORT_FMT_TABLE), 0);
	fclose(f);
	assert_true(strncmp(buf, "tally: 1 file(s), 1 section(s)", 30) == 0);
	assert_non_null(strstr(buf, ": COMPLETE\n"));
	assert_non_null(strstr(buf, " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):"));
	assert_non_null(strstr(buf, " Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)"));
	assert_non_null(strstr(buf, "StdDev (ns)"));
	assert_non_null(strstr(buf, "Total (MB)  Count  Avg (MB)"));
	assert_non_null(strstr(buf, "Start (ns)  Duration (ns)  CorrId  GrdX"));
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(stats_write(st, &set, f, REPORT_FMT_JSON), 0);
	fclose(f);
	root = json_loads(buf, 0, &jerr);
	if (!root)
		fail_msg("stats JSON does not parse: %s (line %d)", jerr.text, jerr.line);
	assert_string_equal(json_string_value(json_object_get(root, "verdict")), "COMPLETE");
	reports = json_object_get(root, "reports");
	assert_int_equal(json_array_size(reports), report_defs_count);
	rows = json_object_get(json_array_get(reports, 2), "rows"); /* cuda_gpu_kern_sum */
	assert_string_equal(json_string_value(json_object_get(json_array_get(reports, 2), "name")),
			    "cuda_gpu_kern_sum");
	assert_int_equal(json_array_size(rows), x.kern.n);
	/* the gpu trace has every timed GPU record, sorted by start */
	rows = json_object_get(json_array_get(reports, 6), "rows");
	assert_int_equal(json_array_size(rows), x.gpu_timed);
	for (size_t i = 1; i < json_array_size(rows); i++)
		assert_true(
		    json_integer_value(json_object_get(json_array_get(rows, i), "Start (ns)")) >=
		    json_integer_value(json_object_get(json_array_get(rows, i - 1), "Start (ns)")));
	json_decref(root);
	free(buf);
	stats_free(st);
	report_set_close(&set);
	observed_free(&x);
	free(path);
}

/* ---- Chrome JSON ------------------------------------------------------------------------------
 */

static size_t count_events(json_t *events, const char *ph, const char *cat)
{
	size_t i, n = 0;

	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *c = json_string_value(json_object_get(e, "cat"));

		n += p && strcmp(p, ph) == 0 && (!cat || (c && strcmp(c, cat) == 0));
	}
	return n;
}

static bool has_event_named(json_t *events, const char *ph, const char *name)
{
	size_t i;

	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *n = json_string_value(json_object_get(e, "name"));

		if (p && n && strcmp(p, ph) == 0 && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

static bool has_arg_value(json_t *events, const char *ph, const char *meta, const char *value)
{
	size_t i;

	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		const char *p = json_string_value(json_object_get(e, "ph"));
		const char *n = json_string_value(json_object_get(e, "name"));
		const char *v =
		    json_string_value(json_object_get(json_object_get(e, "args"), "name"));

		if (p && n && v && strcmp(p, ph) == 0 && strcmp(n, meta) == 0 && strstr(v, value))
			return true;
	}
	return false;
}

/* Hostile names (quotes, backslashes, control characters, non-ASCII, invalid UTF-8) parse. */
static void test_chrome_json(void **state)
{
	static const struct trace_spec spec = {
	    .w = {.kernels = 400,
		  .memcpys = 20,
		  .memsets = 10,
		  .syncs = 5,
		  .ranges = 6,
		  .marks = 2,
		  .kernel_names = 8,
		  .seed = 41},
	    .threads = 2,
	    .devices = true,
	};
	struct observed x;
	char *path = strdup(scratch_path("chrome.tally"));
	json_t *root, *events;
	size_t i, api = 0;

	(void)state;
	observed_init(&x);
	make_trace(path, &spec, &x);
	for (i = 0; i < x.api.n; i++)
		api += x.api.d[i].n;
	root = fixture_chrome(path, scratch_path("chrome.json"));
	assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(root, "otherData"), "tally_verdict")),
	    "COMPLETE");
	events = json_object_get(root, "traceEvents");
	assert_int_equal(count_events(events, "X", "kernel"), x.kernels_timed);
	assert_int_equal(count_events(events, "X", "cuda_runtime"), api);
	assert_int_equal(count_events(events, "s", NULL), x.launches);
	assert_int_equal(count_events(events, "f", NULL), x.gpu_timed);
	assert_int_equal(count_events(events, "X", "nvtx"), 2 * 6);
	/* every kernel name arrives intact: control characters and quotes survive escaping, the
	 * invalid UTF-8 one arrives with U+FFFD in place of its bad bytes */
	for (i = 0; i < x.kern.n; i++) {
		const char *want = x.kern.d[i].name;

		if (strstr(want, "bad utf8"))
			want = "bad utf8 \xef\xbf\xbd\xef\xbf\xbd here";
		if (!has_event_named(events, "X", want))
			fail_msg("no kernel event named '%s'", want);
	}
	assert_true(
	    has_arg_value(events, "M", "process_name", "GPU 0 (Test GPU (CPU test source))"));
	assert_true(has_arg_value(events, "M", "thread_name", "stream 7"));
	assert_true(has_arg_value(events, "M", "thread_name", "tally: DATA LOST"));
	json_decref(root);
	observed_free(&x);
	free(path);
}

/* Loss shows as its own slices: a window of bad timestamps is drawn, named and counted. */
static void test_chrome_loss(void **state)
{
	static const struct trace_spec spec = {.w = {.kernels = 500,
						     .kernel_names = 2,
						     .seed = 43,
						     .bad_time_every = 10,
						     .orphan_launches = 3}};
	struct observed x;
	char *path = strdup(scratch_path("lossy.tally"));
	json_t *root, *events;
	size_t i;
	uint64_t lost = 0;

	(void)state;
	observed_init(&x);
	make_trace(path, &spec, &x);
	root = fixture_chrome(path, scratch_path("lossy.json"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(root, "otherData"), "tally_verdict")),
	    "INCOMPLETE");
	events = json_object_get(root, "traceEvents");
	for (i = 0; i < json_array_size(events); i++) {
		json_t *e = json_array_get(events, i);
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && strncmp(n, "DATA LOST: bad_timestamps", 25) == 0 &&
		    json_integer_value(json_object_get(e, "pid")) < 1000000000)
			lost += (uint64_t)json_integer_value(
			    json_object_get(json_object_get(e, "args"), "lost"));
	}
	assert_int_equal(lost, x.untimed);
	assert_true(count_events(events, "X", "tally_loss") >= 2);
	assert_int_equal(count_events(events, "X", "kernel"), x.kernels_timed);
	json_decref(root);
	observed_free(&x);
	free(path);
}

/* ---- SQLite, through the sqlite3 command -------------------------------------------------------
 */

/* Run sql on db with the sqlite3 command; the output, one row a line, '|' between columns. */
static char *sqlite3_cli(const char *db, const char *sql)
{
	char cmd[2048], *out = NULL;
	size_t len = 0, n;
	char buf[4096];
	FILE *p, *m;

	snprintf(cmd, sizeof(cmd), "sqlite3 -batch -noheader -separator '|' '%s' \"%s\"", db, sql);
	p = popen(cmd, "r");
	assert_non_null(p);
	m = open_memstream(&out, &len);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, n, m);
	fclose(m);
	assert_int_equal(pclose(p), 0);
	return out;
}

static uint64_t sum_of(const struct dist *d)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < d->n; i++)
		s += d->v[i];
	return s;
}

/* nsys's classic: join the kernels with the string table, sum durations per name. */
static void check_kernel_sums(const char *db, const struct observed *x)
{
	char *out = sqlite3_cli(db, "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM "
				    "CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON "
				    "k.demangledName = s.id GROUP BY s.value;");
	char *line, *save = NULL;
	size_t i, rows = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sep = strrchr(line, '|'), *sep2;
		unsigned long long count, total;

		assert_non_null(sep);
		total = strtoull(sep + 1, NULL, 10);
		*sep = '\0';
		sep2 = strrchr(line, '|');
		count = strtoull(sep2 + 1, NULL, 10);
		*sep2 = '\0';
		for (i = 0; i < x->kern.n; i++)
			if (strcmp(x->kern.d[i].name, line) == 0 && !strstr(line, "bad utf8")) {
				assert_int_equal(count, x->kern.d[i].n);
				assert_int_equal(total, sum_of(&x->kern.d[i]));
				rows++;
			}
	}
	assert_int_equal(rows, x->kern.n - 1); /* all but the invalid UTF-8 name match bytewise */
	free(out);
	/* launches joined to their kernels by correlation id, as nsys's recipes do */
	out =
	    sqlite3_cli(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN "
			    "CUPTI_ACTIVITY_KIND_KERNEL AS k ON r.correlationId = k.correlationId "
			    "AND r.globalTid / 0x1000000 % 0x1000000 = k.globalPid / 0x1000000 % "
			    "0x1000000;");
	assert_int_equal(strtoull(out, NULL, 10), x->kernels_timed);
	free(out);
}

/* The API summary from the RUNTIME table and StringIds. */
static void check_api_sums(const char *db, const struct observed *x)
{
	char sql[512], *out;
	size_t i;

	for (i = 0; i < x->api.n; i++) {
		snprintf(
		    sql, sizeof(sql),
		    "SELECT COUNT(*), SUM(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r "
		    "JOIN StringIds AS s ON r.nameId = s.id WHERE s.value = '%s';",
		    x->api.d[i].name);
		out = sqlite3_cli(db, sql);
		assert_int_equal(strtoull(out, NULL, 10), x->api.d[i].n);
		assert_int_equal(strtoull(strchr(out, '|') + 1, NULL, 10), sum_of(&x->api.d[i]));
		free(out);
	}
}

/* Bytes per memory operation, through nsys's enum table. */
static void check_memop_bytes(const char *db, const struct observed *x)
{
	char sql[512], *out;
	size_t i;

	for (i = 0; i < x->memsize.n; i++) {
		if (strcmp(x->memsize.d[i].name, "[CUDA memset]") == 0)
			snprintf(sql, sizeof(sql),
				 "SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET;");
		else
			snprintf(sql, sizeof(sql),
				 "SELECT SUM(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m JOIN "
				 "ENUM_CUDA_MEMCPY_OPER AS e ON m.copyKind = e.id WHERE "
				 "'[CUDA memcpy ' || e.label || ']' = '%s';",
				 x->memsize.d[i].name);
		out = sqlite3_cli(db, sql);
		assert_int_equal(strtoull(out, NULL, 10), sum_of(&x->memsize.d[i]));
		free(out);
	}
}

/* NVTX ranges by their text, and what tally adds: the verdict, sessions, target info. */
static void check_nvtx_and_verdict(const char *db, const struct observed *x)
{
	char *out = sqlite3_cli(db, "SELECT COUNT(*), SUM(end - start) FROM NVTX_EVENTS WHERE "
				    "eventType IN (59, 60) AND text = 'step';");
	size_t i;

	for (i = 0; i < x->nvtx.n; i++)
		if (strcmp(x->nvtx.d[i].name, ":step") == 0) {
			assert_int_equal(strtoull(out, NULL, 10), x->nvtx.d[i].n);
			assert_int_equal(strtoull(strchr(out, '|') + 1, NULL, 10),
					 sum_of(&x->nvtx.d[i]));
		}
	free(out);
	out = sqlite3_cli(db, "SELECT verdict FROM TALLY_VERDICT; SELECT COUNT(*) FROM "
			      "TALLY_SESSIONS; SELECT name FROM TARGET_INFO_GPU;");
	assert_string_equal(out, "COMPLETE\n1\nTest GPU (CPU test source)\n");
	free(out);
}

static void test_sqlite_nsys_queries(void **state)
{
	static const struct trace_spec spec = {
	    .w = {.kernels = 600,
		  .driver_kernels = 30,
		  .memcpys = 40,
		  .memsets = 12,
		  .ranges = 10,
		  .kernel_names = 8,
		  .seed = 51},
	    .threads = 2,
	    .devices = true,
	};
	struct observed x;
	char *path = strdup(scratch_path("sq.tally")), db[256];

	(void)state;
	snprintf(db, sizeof(db), "%s", scratch_path("nsys.sqlite"));
	observed_init(&x);
	make_trace(path, &spec, &x);
	fixture_export(&export_sqlite, path, db);
	check_kernel_sums(db, &x);
	check_api_sums(db, &x);
	check_memop_bytes(db, &x);
	check_nvtx_and_verdict(db, &x);
	observed_free(&x);
	free(path);
}

/* ---- merge --------------------------------------------------------------------------------- */

/* Stats over a merged file equal stats over its parts. */
static void stats_equal_parts(const char *merged, const struct observed *xa,
			      const struct observed *xb)
{
	const struct observed *xs[2] = {xa, xb};
	struct dists both = {0};
	struct report_set set;
	char *mp = strdup(merged);
	struct stats *st;
	size_t i, k, j;

	for (k = 0; k < 2; k++)
		for (i = 0; i < xs[k]->kern.n; i++)
			for (j = 0; j < xs[k]->kern.d[i].n; j++)
				dist_add(&both, xs[k]->kern.d[i].name, xs[k]->kern.d[i].v[j]);
	st = fixture_stats(&mp, 1, 1u << report_find("cuda_gpu_kern_sum"), &set);
	check_report(st, "cuda_gpu_kern_sum", &both);
	stats_free(st);
	report_set_close(&set);
	dists_free(&both);
	free(mp);
}

static void test_merge_aligns_clocks(void **state)
{
	/* Two processes whose CUPTI clocks are 5 s behind and 7 s ahead of CLOCK_REALTIME */
	struct trace_spec a = {.w = {.kernels = 50, .kernel_names = 2, .seed = 61},
			       .clock_delta = -5000000000ll};
	struct trace_spec b = {.w = {.kernels = 50, .kernel_names = 2, .seed = 62},
			       .clock_delta = 7000000000ll,
			       .devices = true};
	struct observed xa, xb;
	struct merge_result res;
	struct report_set set;
	struct tally_file *f;
	char *paths[2], err[512];
	const char *out = scratch_path("merged.tally");

	(void)state;
	observed_init(&xa);
	observed_init(&xb);
	paths[0] = strdup(scratch_path("ma.tally"));
	paths[1] = strdup(scratch_path("mb.tally"));
	make_trace(paths[0], &a, &xa);
	make_trace(paths[1], &b, &xb);
	assert_int_equal(report_set_open(&set, paths, 2, err, sizeof(err)), 0);
	if (report_merge(&set, out, true, NULL, NULL, &res, err, sizeof(err)) != 0)
		fail_msg("merge: %s", err);
	assert_int_equal(res.sections, 2);
	report_set_close(&set);
	assert_int_equal(tally_file_load(&f, out, err, sizeof(err)), 0);
	assert_int_equal(f->nsections, 2);
	assert_true(f->sections[0]->merged && f->sections[1]->merged);
	/* the offsets found are the deltas undone, within the time it takes to read two clocks */
	assert_true(llabs(f->sections[0]->merge_offset - 5000000000ll) < 1000000);
	assert_true(llabs(f->sections[1]->merge_offset + 7000000000ll) < 1000000);
	/* both processes ran within a second of each other: on the merged timeline, so are they */
	assert_true(llabs((long long)f->sections[0]->t_min - (long long)f->sections[1]->t_min) <
		    2000000000ll);
	assert_true(llabs((long long)f->sections[0]->t_min -
			  (long long)(xa.kernel_starts[0] + 5000000000ull)) < 1000000);
	assert_true(tally_files_complete(&f, 1));
	tally_file_close(f);
	stats_equal_parts(out, &xa, &xb);
	observed_free(&xa);
	observed_free(&xb);
	free(paths[0]);
	free(paths[1]);
}

/* The merged verdict is the worst of the parts: loss and damage both survive the merge. */
static void test_merge_worst_verdict(void **state)
{
	struct trace_spec good = {.w = {.kernels = 100, .kernel_names = 2, .seed = 71}};
	struct trace_spec lossy = {
	    .w = {.kernels = 100, .kernel_names = 2, .seed = 72, .bad_time_every = 7}};
	struct observed x;
	struct merge_result res;
	struct report_set set;
	struct tally_file *f;
	struct tally_verdict v;
	char *paths[2], err[512];
	const char *out = scratch_path("worst.tally");
	struct stat sb;
	FILE *fp;

	(void)state;
	observed_init(&x);
	paths[0] = strdup(scratch_path("good.tally"));
	paths[1] = strdup(scratch_path("lossy2.tally"));
	make_trace(paths[0], &good, &x);
	make_trace(paths[1], &lossy, &x);
	assert_int_equal(report_set_open(&set, paths, 2, err, sizeof(err)), 0);
	assert_int_equal(report_merge(&set, out, true, NULL, NULL, &res, err, sizeof(err)), 0);
	report_set_close(&set);
	assert_int_equal(tally_file_load(&f, out, err, sizeof(err)), 0);
	assert_false(tally_files_complete(&f, 1));
	tally_verdict_compute(f, f->sections[0], &v);
	assert_true(v.complete);
	tally_verdict_fini(&v);
	tally_verdict_compute(f, f->sections[1], &v);
	assert_false(v.complete);
	assert_int_equal(v.reasons[0].counter, TALLY_C_BAD_TIME);
	tally_verdict_fini(&v);
	tally_file_close(f);

	/* a good trace with one byte flipped in a chunk: the merged file still says so */
	assert_int_equal(stat(paths[0], &sb), 0);
	fp = fopen(paths[0], "r+b");
	fseek(fp, sb.st_size / 2, SEEK_SET);
	{
		int c = fgetc(fp);

		fseek(fp, sb.st_size / 2, SEEK_SET);
		fputc(c ^ 0x5a, fp);
	}
	fclose(fp);
	assert_int_equal(report_set_open(&set, paths, 1, err, sizeof(err)), 0);
	assert_int_equal(report_merge(&set, out, true, NULL, NULL, &res, err, sizeof(err)), 0);
	assert_true(res.damaged >= 1);
	report_set_close(&set);
	assert_int_equal(tally_file_load(&f, out, err, sizeof(err)), 0);
	assert_int_equal(f->ndamage, 0); /* the merged file itself is intact... */
	tally_verdict_compute(f, f->sections[0], &v);
	assert_false(v.complete); /* ...and still INCOMPLETE, saying why */
	assert_true(f->sections[0]->ledger.v[TALLY_C_MERGE_DAMAGED] >= 1);
	assert_true(f->sections[0]->nnotes >= 1);
	assert_string_equal(f->sections[0]->notes[0].code, "merge-input-damaged");
	tally_verdict_fini(&v);
	tally_file_close(f);
	observed_free(&x);
	free(paths[0]);
	free(paths[1]);
}

/* ---- names and numbers ------------------------------------------------------------------------
 */

static void test_names(void **state)
{
	static const struct {
		const char *in, *base;
	} cases[] = {
	    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
	     " at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>)",
	     "vectorized_elementwise_kernel"},
	    {"vectorAdd(float const*, float const*, float*, int)", "vectorAdd"},
	    {"void (anonymous namespace)::softmax_warp_forward<float, 4>(float*, int)",
	     "softmax_warp_forward"},
	    {"ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"},
	    {"ns::Outer<int>::inner(int)", "inner"},
	};
	char *d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *b = report_base_name(cases[i].in);

		assert_string_equal(b, cases[i].base);
		free(b);
	}
	d = report_demangle("_Z9vectorAddPKfS0_Pfi");
	if (d) { /* libstdc++ is on the machine: names are demangled */
		assert_string_equal(d, "vectorAdd(float const*, float const*, float*, int)");
		free(d);
	}
	assert_null(report_demangle("_Z10vectorAddPKfS0_Pfi")); /* not a valid mangling */
	assert_null(report_demangle("ampere_sgemm_128x64_nn"));
}

/* ---- every input the reader's fuzzer keeps: stats and every export, no crash --------------- */

static void run_everything(const char *input)
{
	char *path = strdup(input), err[512];
	struct stats_request req = {.reports = ~0u};
	struct export_opts o = {.force = true};
	struct export_stats es;
	struct merge_result res;
	struct report_scan_ops ops;
	struct report_set set;
	struct stats *st;
	FILE *devnull = fopen("/dev/null", "w");
	size_t i;

	if (report_set_open(&set, &path, 1, err, sizeof(err)) == 0) {
		report_set_find_base(&set);
		st = stats_new(&req);
		stats_scan_ops(st, &ops);
		if (report_scan(&set, &ops, err, sizeof(err)) == 0 && stats_finish(st, &set) == 0) {
			stats_write(st, &set, devnull, REPORT_FMT_TABLE);
			stats_write(st, &set, devnull, REPORT_FMT_JSON);
		}
		stats_free(st);
		report_set_close(&set);
	}
	for (i = 0; export_formats[i]; i++) { /* every format, each to its own output */
		char out[32];

		if (report_set_open(&set, &path, 1, err, sizeof(err)) != 0)
			break;
		snprintf(out, sizeof(out), "c.%s", export_formats[i]->name);
		o.output = scratch_path(out);
		(void)report_export(export_formats[i], &set, &o, NULL, NULL, &es, err, sizeof(err));
		report_set_close(&set);
	}
	if (report_set_open(&set, &path, 1, err, sizeof(err)) == 0) {
		(void)report_merge(&set, scratch_path("c.tally"), true, NULL, NULL, &res, err,
				   sizeof(err));
		report_set_close(&set);
	}
	fclose(devnull);
	free(path);
}

static void test_fuzz_corpus(void **state)
{
	const char *dir = getenv("TALLY_FUZZ_CORPUS");
	char path[4096];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	(void)state;
	if (!dir)
		skip();
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		run_everything(path);
		n++;
	}
	closedir(d);
	assert_true(n > 0);
}

/* ---- compare's statistics and the gaps library ------------------------------------------- */

static void test_compare_statistics(void **state)
{
	static const uint32_t a[] = {1, 2, 3, 4, 5, 6, 7, 8}, b[] = {11, 12, 13, 14},
			      c[] = {1, 2, 3, 4, 9, 10, 11, 12};
	static const uint32_t s1[] = {5, 6, 7, 8, 9}, s2[] = {5, 7, 6, 8, 9}, s3[] = {5, 6, 8, 9},
			      s4[] = {1, 2, 3};
	bool capped;

	(void)state;
	assert_true(compare_ks_distance(a, 8, a, 8) == 0);
	assert_true(compare_ks_distance(a, 8, b, 4) == 1);		  /* disjoint */
	assert_true(fabs(compare_ks_distance(a, 8, c, 8) - 0.5) < 1e-12); /* half moved up */
	/* c(0.05) = 1.358 for n = m = 100: 1.358 * sqrt(2 / 100) */
	assert_true(fabs(compare_ks_critical(100, 100, 0.05) - 0.19206) < 1e-4);
	assert_int_equal(compare_edit_distance(s1, 5, s1, 5, 10, &capped), 0);
	assert_false(capped);
	assert_int_equal(compare_edit_distance(s1, 5, s2, 5, 10, &capped), 2); /* a swap */
	assert_int_equal(compare_edit_distance(s1, 5, s3, 4, 10, &capped), 1); /* a deletion */
	assert_int_equal(compare_edit_distance(s1, 5, s4, 3, 10, &capped), 8); /* all different */
	assert_int_equal(compare_edit_distance(s1, 5, s4, 3, 3, &capped), 4);  /* past the cap */
	assert_true(capped);
	assert_int_equal(compare_edit_distance(s1, 0, s4, 3, 1, &capped), 3); /* one side empty */
}

/* Idle stretches the test source was told to make, found by the library, classed by the ledger. */
static void test_gpu_gaps_library(void **state)
{
	static const struct trace_spec spec = {
	    .w = {.kernels = 2000,
		  .kernel_names = 2,
		  .seed = 9,
		  .nidle = 2,
		  .idle = {{.at = 500, .ms = 20}, {.at = 1500, .ms = 30}}}};
	struct report_gaps_opts o = {.gap_min_ns = 5000000, .util = true};
	struct report_gpu_gaps *g;
	const struct report_gap *gp;
	struct report_set set;
	struct observed x;
	char err[256], *path = strdup(scratch_path("gaps.tally"));
	size_t n, i, dev = 0;

	(void)state;
	observed_init(&x);
	make_trace(path, &spec, &x);
	assert_int_equal(report_set_open(&set, &path, 1, err, sizeof(err)), 0);
	assert_int_equal(report_gpu_gaps(&set, &o, &g, err, sizeof(err)), 0);
	gp = report_gpu_gaps_list(g, &n);
	for (i = 0; i < n; i++) {
		assert_false(gp[i].unproven); /* nothing was lost */
		if (gp[i].stream != REPORT_GAP_ALL_STREAMS)
			continue;
		/* the idle begins when the last kernel was launched, which may run 25 us into it */
		assert_true(gp[i].t1 - gp[i].t0 >= (dev ? 29900000u : 19900000u));
		dev++;
	}
	assert_int_equal(dev, 2);
	assert_true(n == 2 + 2 * 3); /* and each of the three streams has both */
	report_gpu_util_list(g, &n);
	assert_true(n > 0);
	report_gpu_gaps_free(g);
	report_set_close(&set);
	observed_free(&x);
	free(path);
}

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Records in a shuffled order: the busy segments merge as they come, and the gaps are those a
 * plain sort-and-sweep finds (done here, independently). */
static void test_gpu_gaps_any_order(void **state)
{
	enum { N = 3000 };
	static uint64_t iv[N][2];
	static struct tally_record r[N];
	struct tally_section s = {.has_final = true, .ledgers = 1};
	struct tally_file f = {0};
	struct report_input in = {.f = &f};
	struct report_section rs = {.s = &s, .in = &in};
	struct report_gaps_opts o = {.gap_min_ns = 1000000};
	struct report_gpu_gaps *g = report_gpu_gaps_new(&o);
	const struct report_gap *gp;
	uint32_t rng = 7;
	uint64_t t = 1000, end = 0;
	size_t i, n, want = 0, got = 0;

	(void)state;
	for (i = 0; i < N; i++) { /* mostly dense, now and then a pause of 0.5 to 3 ms */
		rng = rng * 1103515245u + 12345u;
		t += (rng >> 16) % 97 == 0 ? 500000 + (rng >> 8) % 2500000 : (rng >> 16) % 5000;
		iv[i][0] = t;
		iv[i][1] = t + 1000 + (rng >> 4) % 40000;
	}
	for (i = 0; i < N; i++) { /* shuffled */
		size_t k;

		rng = rng * 1103515245u + 12345u;
		k = (rng >> 8) % N;
		uint64_t a = iv[i][0], b = iv[i][1];
		iv[i][0] = iv[k][0], iv[i][1] = iv[k][1];
		iv[k][0] = a, iv[k][1] = b;
	}
	for (i = 0; i < N; i++)
		r[i] = (struct tally_record){.kind = TALLY_KIND_KERNEL,
					     .start = iv[i][0],
					     .end = iv[i][1],
					     .stream_id = 7 + (uint32_t)(i % 2)};
	assert_int_equal(report_gpu_gaps_add(g, &rs, r, N), 0);
	assert_int_equal(report_gpu_gaps_section(g, &rs), 0);
	qsort(iv, N, sizeof(iv[0]), cmp_iv);
	gp = report_gpu_gaps_list(g, &n);
	for (i = 0; i < N; i++) {
		if (i && iv[i][0] > end && iv[i][0] - end >= 1000000) {
			while (got < n && gp[got].stream != REPORT_GAP_ALL_STREAMS)
				got++;
			assert_true(got < n);
			assert_true(gp[got].t0 == end && gp[got].t1 == iv[i][0]);
			assert_false(gp[got].unproven);
			got++;
			want++;
		}
		if (iv[i][1] > end)
			end = iv[i][1];
	}
	assert_true(want > 5);
	for (i = 0, got = 0; i < n; i++)
		got += gp[i].stream == REPORT_GAP_ALL_STREAMS;
	assert_int_equal(got, want);
	report_gpu_gaps_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats_exact),
	    cmocka_unit_test(test_stats_median_edges),
	    cmocka_unit_test(test_stats_huge_values),
	    cmocka_unit_test(test_stats_several_files),
	    cmocka_unit_test(test_stats_output),
	    cmocka_unit_test(test_chrome_json),
	    cmocka_unit_test(test_chrome_loss),
	    cmocka_unit_test(test_sqlite_nsys_queries),
	    cmocka_unit_test(test_merge_aligns_clocks),
	    cmocka_unit_test(test_merge_worst_verdict),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_compare_statistics),
	    cmocka_unit_test(test_gpu_gaps_library),
	    cmocka_unit_test(test_gpu_gaps_any_order),
	    cmocka_unit_test(test_fuzz_corpus),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
