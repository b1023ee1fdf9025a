/* SPDX-License-Identifier: MIT */
/*
 * GPU metrics in the file format (docs/format.md §13): GPU_METRIC records through the codec, the
 * GPU_METRICS chunk both ways, and a whole file through the reader and the verdict.
 */
#include <errno.h>
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
#include "gpumetrics.h"
#include "ledger.h"
#include "payloads.h"
#include "reader.h"
#include "verdict.h"
#include "writer.h"

/* 3 metrics x 1000 samples, values of both signs, as the collector batches them: metric-major. */
static size_t make_samples(struct tally_record *r, size_t max)
{
	size_t n = 0, m, i;

	for (m = 0; m < 3; m++)
		for (i = 0; i < 1000 && n < max; i++, n++) {
			memset(&r[n], 0, sizeof(r[n]));
			r[n].kind = TALLY_KIND_GPU_METRIC;
			r[n].start = 1000000000ull + i * 100000 + (i % 7);
			r[n].end = r[n].start + 100000 - (i % 3);
			r[n].device_id = (uint32_t)(m == 2);
			r[n].name_id = (uint32_t)(m + 1);
			r[n].correlation_id = (uint32_t)(i + 1);
			r[n].subkind = m == 1 ? 0 : 3;
			r[n].value = i == 500 ? TALLY_METRIC_AFTER_GAP : 0;
			r[n].metric_value =
			    m == 0 ? (int64_t)(i * 37 % 100000) - 500 : (int64_t)i * 1000000007ll;
		}
	return n;
}

static void test_records_roundtrip(void **state)
{
	struct tally_record *in = calloc(3000, sizeof(*in)), *out = NULL;
	struct tally_codec codec = {0};
	struct tally_buf b = {0};
	size_t cap = 0, n, i;
	unsigned kind;

	(void)state;
	n = make_samples(in, 3000);
	assert_int_equal(tally_records_encode(&codec, &b, TALLY_KIND_GPU_METRIC, in, n,
					      tally_kind_columns(TALLY_KIND_GPU_METRIC)),
			 0);
	assert_int_equal(tally_records_decode(&codec, b.data, b.len, &kind, &out, &cap), (long)n);
	assert_int_equal(kind, TALLY_KIND_GPU_METRIC);
	for (i = 0; i < n; i++)
		assert_memory_equal(&in[i], &out[i], sizeof(in[i]));
	/* Regular samples of smooth values: a few bytes per value, not a record's 200. */
	assert_true(b.len < n * 8);
	assert_string_equal(tally_kind_name(TALLY_KIND_GPU_METRIC), "gpu_metric");
	assert_true(tally_kind_known(TALLY_KIND_GPU_METRIC));
	tally_buf_fini(&b);
	tally_codec_fini(&codec);
	free(in);
	free(out);
}

/* A column id below TALLY_COL_MAX that this build leaves unassigned is skipped as unknown, not
 * scattered over another field. */
static void test_unassigned_column(void **state)
{
	struct tally_record *out = NULL;
	struct tally_codec codec = {0};
	struct tally_buf b = {0};
	size_t cap = 0;
	unsigned kind;

	(void)state;
	tally_buf_put_varint(&b, TALLY_KIND_GPU_METRIC);
	tally_buf_put_varint(&b, 2); /* rows */
	tally_buf_put_varint(&b, 2); /* columns */
	tally_buf_put_varint(&b, TALLY_COL_START);
	tally_buf_put_u8(&b, TALLY_ENC_DELTA);
	tally_buf_put_varint(&b, 2);
	tally_buf_put_varint(&b, tally_zigzag(10));
	tally_buf_put_varint(&b, tally_zigzag(5));
	tally_buf_put_varint(&b, 35); /* assigned elsewhere, not here */
	tally_buf_put_u8(&b, TALLY_ENC_CONST);
	tally_buf_put_varint(&b, 1);
	tally_buf_put_varint(&b, tally_zigzag(9));
	assert_int_equal(tally_records_decode(&codec, b.data, b.len, &kind, &out, &cap), 2);
	assert_int_equal(codec.unknown_columns, 1);
	assert_int_equal(out[0].start, 10);
	assert_int_equal(out[1].start, 15);
	tally_buf_fini(&b);
	tally_codec_fini(&codec);
	free(out);
}

static struct tally_metric_desc descs[] = {
    {3, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "%", "SM Active"},
    {0, "dram__bytes_read.sum.per_second", "bytes/s", "DRAM Read"},
};
static char *left[] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed: needs 19 passes"};

static void test_chunk_roundtrip(void **state)
{
	struct tally_gpu_metrics in = {0}, out;
	struct tally_buf b = {0};
	uint64_t unknown = 0;
	size_t i;

	(void)state;
	in.device = 3;
	in.has_uuid = true;
	memset(in.uuid, 0xab, 16);
	in.state = TALLY_GM_SAMPLED;
	in.chip = "GH100";
	in.interval = 100000;
	in.trigger = TALLY_GM_TRIGGER_TIME;
	in.hw_buffer = 64u << 20;
	in.passes = 1;
	in.metrics = descs;
	in.nmetrics = 2;
	in.left_out = left;
	in.nleft_out = 1;
	tally_gpu_metrics_encode(&b, &in);
	tally_kv_uint(&b, 99, 7); /* a key from the future */
	assert_true(tally_gpu_metrics_decode(b.data, b.len, &out, &unknown));
	assert_int_equal(unknown, 1);
	assert_int_equal(out.device, 3);
	assert_true(out.has_uuid);
	assert_memory_equal(out.uuid, in.uuid, 16);
	assert_int_equal(out.state, TALLY_GM_SAMPLED);
	assert_string_equal(out.chip, "GH100");
	assert_int_equal(out.interval, 100000);
	assert_int_equal(out.trigger, TALLY_GM_TRIGGER_TIME);
	assert_int_equal(out.hw_buffer, 64u << 20);
	assert_int_equal(out.passes, 1);
	assert_int_equal(out.nmetrics, 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(out.metrics[i].scale, descs[i].scale);
		assert_string_equal(out.metrics[i].name, descs[i].name);
		assert_string_equal(out.metrics[i].unit, descs[i].unit);
		assert_string_equal(out.metrics[i].label, descs[i].label);
	}
	assert_int_equal(out.nleft_out, 1);
	assert_string_equal(out.left_out[0], left[0]);
	tally_gpu_metrics_fini(&out);

	/* Held by another process: who, and no sampling keys. */
	memset(&in, 0, sizeof(in));
	in.device = 0;
	in.state = TALLY_GM_ELSEWHERE;
	in.holder_pid = 4242;
	in.holder_host = "node7";
	in.holder_file = "/traces/rank0.tally";
	in.has_holder_session = true;
	memset(in.holder_session, 0x5a, 16);
	in.why = "first to claim the lock file";
	tally_buf_reset(&b);
	tally_gpu_metrics_encode(&b, &in);
	unknown = 0;
	assert_true(tally_gpu_metrics_decode(b.data, b.len, &out, &unknown));
	assert_int_equal(unknown, 0);
	assert_int_equal(out.state, TALLY_GM_ELSEWHERE);
	assert_int_equal(out.holder_pid, 4242);
	assert_string_equal(out.holder_host, "node7");
	assert_string_equal(out.holder_file, "/traces/rank0.tally");
	assert_true(out.has_holder_session);
	assert_int_equal(out.nmetrics, 0);
	assert_int_equal(out.interval, 0);
	tally_gpu_metrics_fini(&out);

	/* A metric entry cut short is damage. */
	tally_buf_reset(&b);
	tally_kv_bytes(&b, TALLY_GK_METRIC, "\x03\x10sm", 4);
	assert_false(tally_gpu_metrics_decode(b.data, b.len, &out, &unknown));
	tally_gpu_metrics_fini(&out);
	assert_string_equal(tally_gpu_metrics_state_name(TALLY_GM_REFUSED), "refused");
	assert_string_equal(tally_gpu_metrics_state_name(77), "unknown");
	tally_buf_fini(&b);
}

/* A file: SESSION (metrics asked for), GPU_METRICS for two devices (one replaced later), LOSS
 * of a gap, ledgers.  The reader keeps the last chunk per device, the exact gap window, and the
 * verdict names the gap. */
static void write_file(int fd)
{
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_gpu_metrics g = {0};
	struct tally_writer w;
	struct tally_buf b = {0};
	struct tally_ledger l;

	assert_int_equal(tally_writer_init(&w, &sink, 1), 0);
	tally_writer_preamble(&w);
	tally_kv_str(&b, TALLY_SK_WRITER, "tally test");
	tally_kv_str(&b, TALLY_SK_GPU_METRICS, "all");
	tally_kv_uint(&b, TALLY_SK_GPU_METRICS_HZ, 10000);
	tally_kv_str(&b, TALLY_SK_GPU_METRICS_SET, "default");
	tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0);
	g.state = TALLY_GM_SAMPLED;
	g.metrics = descs;
	g.nmetrics = 2;
	tally_buf_reset(&b);
	tally_gpu_metrics_encode(&b, &g);
	tally_writer_chunk(&w, TALLY_CHUNK_GPU_METRICS, 0, b.data, b.len, 0);
	g.device = 1;
	g.state = TALLY_GM_BUSY;
	g.nmetrics = 0;
	g.why = "another tool holds the counters";
	tally_buf_reset(&b);
	tally_gpu_metrics_encode(&b, &g);
	tally_writer_chunk(&w, TALLY_CHUNK_GPU_METRICS, 0, b.data, b.len, 0);
	g.device = 0;
	g.state = TALLY_GM_STOPPED;
	g.result = 999;
	g.why = "decode failed";
	tally_buf_reset(&b);
	tally_gpu_metrics_encode(&b, &g);
	tally_writer_chunk(&w, TALLY_CHUNK_GPU_METRICS, 0, b.data, b.len, 0);
	tally_buf_reset(&b);
	tally_loss_put(&b, 5000, 7000, TALLY_C_METRIC_GAPS, 1);
	tally_writer_chunk(&w, TALLY_CHUNK_LOSS, 0, b.data, b.len, 0);
	memset(&l, 0, sizeof(l));
	l.t_begin = 0;
	l.t_end = 10000;
	l.v[TALLY_C_METRIC_GAPS] = 1;
	l.v[TALLY_C_METRIC_GAP_NS] = 2000;
	l.v[TALLY_C_METRIC_FAILURES] = 1;
	l.v[TALLY_C_FLUSH_COMPLETED] = 1;
	tally_buf_reset(&b);
	tally_ledger_encode(&b, &l);
	tally_writer_chunk(&w, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, b.data, b.len, 0);
	assert_int_equal(w.stats.write_failures, 0);
	tally_writer_fini(&w);
	tally_buf_fini(&b);
}

static const struct tally_reason *loss_reason(const struct tally_verdict *v, unsigned counter)
{
	size_t i;

	for (i = 0; i < v->nreasons; i++)
		if (v->reasons[i].code == TALLY_R_LOSS && v->reasons[i].counter == counter)
			return &v->reasons[i];
	return NULL;
}

static void test_file_and_verdict(void **state)
{
	char path[] = "/tmp/tally-gm-XXXXXX", err[256];
	int fd = mkstemp(path);
	struct tally_file *f;
	struct tally_section *s;
	struct tally_verdict v;
	size_t i, gap_windows = 0;

	(void)state;
	assert_true(fd >= 0);
	write_file(fd);
	assert_int_equal(tally_file_load(&f, path, err, sizeof(err)), 0);
	s = f->sections[0];
	assert_string_equal(s->gpu_metrics_asked, "all");
	assert_string_equal(s->gpu_metrics_set, "default");
	assert_int_equal(s->gpu_metrics_hz, 10000);
	assert_int_equal(s->unknown_chunks, 0);
	assert_int_equal(s->ngpu_metrics, 2);
	assert_int_equal(s->gpu_metrics[0].device, 0);
	assert_int_equal(s->gpu_metrics[0].state, TALLY_GM_STOPPED); /* the later chunk won */
	assert_int_equal(s->gpu_metrics[0].result, 999);
	assert_int_equal(s->gpu_metrics[1].state, TALLY_GM_BUSY);
	for (i = 0; i < s->nwindows; i++)
		if (s->windows[i].counter == TALLY_C_METRIC_GAPS) {
			gap_windows++;
			assert_int_equal(s->windows[i].t_begin, 5000);
			assert_int_equal(s->windows[i].t_end, 7000);
		}
	assert_int_equal(gap_windows, 1); /* the exact one, not the slice's as well */
	tally_verdict_compute(f, s, &v);
	assert_false(v.complete);
	assert_non_null(loss_reason(&v, TALLY_C_METRIC_GAPS));
	assert_non_null(loss_reason(&v, TALLY_C_METRIC_FAILURES));
	assert_non_null(strstr(loss_reason(&v, TALLY_C_METRIC_GAPS)->hint, "unproven"));
	assert_null(loss_reason(&v, TALLY_C_METRIC_GAP_NS)); /* info, not loss */
	tally_verdict_fini(&v);
	tally_file_close(f);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_records_roundtrip),
	    cmocka_unit_test(test_unassigned_column),
	    cmocka_unit_test(test_chunk_roundtrip),
	    cmocka_unit_test(test_file_and_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
