/* SPDX-License-Identifier: MIT */
/*
 * The file format: varints, the column codec, key/value entries, string interning, chunk framing,
 * and the reader on intact, truncated, corrupted and newer-than-us files.
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
#include "ledger.h"
#include "payloads.h"
#include "reader.h"
#include "strtab.h"
#include "verdict.h"
#include "writer.h"

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_varint_roundtrip(void **state)
{
	static const uint64_t values[] = {
	    0, 1, 127, 128, 255, 16383, 16384, UINT32_MAX, UINT64_MAX - 1, UINT64_MAX};
	struct tally_buf b = {0};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		tally_buf_put_varint(&b, values[i]);
		tally_buf_put_varint(&b, tally_zigzag((int64_t)values[i]));
	}
	{
		struct tally_cursor c = {b.data, b.data + b.len, false};

		for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			assert_int_equal(tally_cur_varint(&c), values[i]);
			assert_int_equal(tally_unzigzag(tally_cur_varint(&c)), (int64_t)values[i]);
		}
		assert_false(c.bad);
		assert_ptr_equal(c.p, c.end);
	}
	/* A varint cut short is damage, not a read past the end. */
	{
		uint8_t cut[] = {0x80, 0x80};
		struct tally_cursor c = {cut, cut + sizeof(cut), false};

		assert_int_equal(tally_cur_varint(&c), 0);
		assert_true(c.bad);
	}
	assert_int_equal(tally_varint_len(127), 1);
	assert_int_equal(tally_varint_len(128), 2);
	assert_int_equal(tally_varint_len(UINT64_MAX), 10);
	tally_buf_fini(&b);
}

static void fill_random_record(struct tally_record *r, unsigned kind, uint64_t t)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->start = t;
	r->end = t + rnd64() % 100000;
	r->bytes = rnd64();
	r->graph_node_id = rnd64();
	r->flags = (uint32_t)rnd64() & 0xf;
	r->correlation_id = (uint32_t)rnd64();
	r->name_id = (uint32_t)(rnd64() % 5);
	r->device_id = (uint32_t)(rnd64() % 2);
	r->context_id = 1;
	r->stream_id = (uint32_t)rnd64();
	r->process_id = 4242;
	r->thread_id = (uint32_t)rnd64();
	r->cbid = 211;
	r->subkind = (uint32_t)(rnd64() % 4);
	r->src_kind = 1;
	r->dst_kind = 3;
	r->src_device = 0;
	r->dst_device = 1;
	r->grid[0] = (int32_t)rnd64();
	r->grid[1] = -5;
	r->grid[2] = 1;
	r->block[0] = 256;
	r->block[1] = (int32_t)(rnd64() % 3);
	r->block[2] = 1;
	r->registers = 32;
	r->static_smem = (uint32_t)rnd64();
	r->dynamic_smem = 0;
	r->graph_id = 7;
	r->value = UINT32_MAX;
	r->domain_id = 3;
	r->color = 0xff00ff00u;
	r->category = 9;
}

/* Every field of every record survives encode + decode, whatever the values. */
static void test_codec_roundtrip(void **state)
{
	static const size_t sizes[] = {1, 2, 3, 100, 8192};
	struct tally_codec codec = {0};
	struct tally_record *in, *out = NULL;
	size_t out_cap = 0, s;

	(void)state;
	in = calloc(8192, sizeof(*in));
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct tally_buf b = {0};
		uint64_t t = 1700000000000000000ull;
		unsigned kind;
		size_t i;
		long n;

		for (i = 0; i < sizes[s]; i++) {
			t += rnd64() % 1000000;
			fill_random_record(&in[i], TALLY_KIND_MEMCPY, t);
		}
		assert_int_equal(tally_records_encode(&codec, &b, TALLY_KIND_MEMCPY, in, sizes[s],
						      TALLY_COLUMNS_ALL),
				 0);
		n = tally_records_decode(&codec, b.data, b.len, &kind, &out, &out_cap);
		assert_int_equal(n, (long)sizes[s]);
		assert_int_equal(kind, TALLY_KIND_MEMCPY);
		for (i = 0; i < sizes[s]; i++)
			assert_memory_equal(&in[i], &out[i], sizeof(in[i]));
		tally_buf_fini(&b);
	}
	free(in);
	free(out);
	tally_codec_fini(&codec);
}

/* A realistic kernel stream (steady launches, few names, fixed geometry) stays small. */
static void test_codec_kernel_size(void **state)
{
	struct tally_codec codec = {0};
	struct tally_record *in = calloc(8192, sizeof(*in));
	struct tally_buf b = {0};
	uint64_t t = 1700000000000000000ull;
	uint32_t corr = 100;
	size_t i;

	(void)state;
	for (i = 0; i < 8192; i++) {
		struct tally_record *r = &in[i];

		t += 4000 + rnd64() % 3000; /* launches every 4-7 us */
		r->kind = TALLY_KIND_KERNEL;
		r->start = t;
		r->end = t + 1500 + rnd64() % 1000;
		corr += 1 + (uint32_t)(i % 4 == 0);
		r->correlation_id = corr;
		r->name_id = 1 + (uint32_t)(i % 3);
		r->context_id = 1;
		r->stream_id = 7;
		r->grid[0] = 1024;
		r->grid[1] = r->grid[2] = 1;
		r->block[0] = 256;
		r->block[1] = r->block[2] = 1;
		r->registers = 16;
	}
	assert_int_equal(tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, in, 8192,
					      tally_kind_columns(TALLY_KIND_KERNEL)),
			 0);
	/* 216 bytes raw per CUPTI kernel record; the target is at most 16 on disk. */
	assert_true(b.len + TALLY_CHUNK_HEADER_LEN <= 16 * 8192);
	print_message("kernel records: %.2f bytes each\n",
		      (double)(b.len + TALLY_CHUNK_HEADER_LEN) / 8192);
	tally_buf_fini(&b);
	tally_codec_fini(&codec);
	free(in);
}

/*
 * Rows perfectly regular in every column compress to a few bytes, more rows per byte than a
 * reader takes (docs/format.md §7): the encoder must spend a byte a row on START so that what it
 * writes reads back, and a payload declaring more rows than its bytes can hold is refused.
 */
static void test_codec_row_limits(void **state)
{
	struct tally_codec codec = {0};
	struct tally_record *in = calloc(8192, sizeof(*in)), *out = NULL;
	struct tally_buf b = {0};
	size_t cap = 0, i;
	unsigned kind;

	(void)state;
	for (i = 0; i < 8192; i++) {
		in[i].kind = TALLY_KIND_KERNEL;
		in[i].start = 1000000 + i * 1000;
		in[i].end = in[i].start + 500;
	}
	assert_int_equal(
	    tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, in, 8192, TALLY_COLUMNS_ALL), 0);
	assert_true(b.len * TALLY_ROWS_PER_BYTE >= 8192);
	assert_int_equal(tally_records_decode(&codec, b.data, b.len, &kind, &out, &cap), 8192);
	for (i = 0; i < 8192; i++)
		assert_true(out[i].start == in[i].start && out[i].end == in[i].end);
	assert_int_equal(tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, in,
					      TALLY_RECORDS_MAX + 1, TALLY_COLUMNS_ALL),
			 -E2BIG);
	/* 64 M rows of one CONST column: refused before anything is allocated */
	tally_buf_reset(&b);
	tally_buf_put_varint(&b, TALLY_KIND_KERNEL);
	tally_buf_put_varint(&b, 64u << 20);
	tally_buf_put_varint(&b, 1);
	tally_buf_put_varint(&b, TALLY_COL_START);
	tally_buf_put_u8(&b, TALLY_ENC_CONST);
	tally_buf_put_varint(&b, 1);
	tally_buf_put_varint(&b, 2);
	assert_int_equal(tally_records_decode(&codec, b.data, b.len, &kind, &out, &cap), -EINVAL);
	assert_true(cap <= 8192);
	tally_buf_fini(&b);
	tally_codec_fini(&codec);
	free(in);
	free(out);
}

/* Damaged columns are refused, not read past. */
static void test_codec_damage(void **state)
{
	struct tally_codec codec = {0};
	struct tally_record rec, *out = NULL;
	struct tally_buf b = {0};
	size_t cap = 0, cut;
	unsigned kind;

	(void)state;
	fill_random_record(&rec, TALLY_KIND_KERNEL, 12345);
	assert_int_equal(
	    tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, &rec, 1, TALLY_COLUMNS_ALL), 0);
	for (cut = 0; cut < b.len; cut++)
		assert_int_equal(tally_records_decode(&codec, b.data, cut, &kind, &out, &cap),
				 -EINVAL);
	free(out);
	tally_buf_fini(&b);
	tally_codec_fini(&codec);
}

static void test_strtab(void **state)
{
	struct tally_strtab t;
	struct tally_buf payload = {0};
	char name[32];
	const char *shared = "_Z6kernelv";
	uint32_t a, b, i;

	(void)state;
	assert_int_equal(tally_strtab_init(&t), 0);
	a = tally_strtab_intern_ptr(&t, shared);
	b = tally_strtab_intern(&t, "_Z6kernelv"); /* same text, other pointer: same id */
	assert_int_equal(a, 1);
	assert_int_equal(b, 1);
	assert_int_equal(tally_strtab_intern(&t, NULL), 0);
	for (i = 0; i < 5000; i++) { /* forces both tables to grow */
		snprintf(name, sizeof(name), "k%u", i);
		assert_int_equal(tally_strtab_intern(&t, name), 2 + i);
	}
	assert_int_equal(tally_strtab_intern(&t, "k4999"), 5001);
	assert_true(tally_strtab_take_pending(&t, &payload));
	{
		struct tally_cursor c = {payload.data, payload.data + payload.len, false};

		assert_int_equal(tally_cur_varint(&c), 1);    /* first id */
		assert_int_equal(tally_cur_varint(&c), 5001); /* count */
	}
	tally_buf_reset(&payload);
	assert_false(tally_strtab_take_pending(&t, &payload));
	assert_int_equal(tally_strtab_intern(&t, "new"), 5002);
	assert_true(tally_strtab_take_pending(&t, &payload));
	{
		struct tally_cursor c = {payload.data, payload.data + payload.len, false};

		assert_int_equal(tally_cur_varint(&c), 5002);
		assert_int_equal(tally_cur_varint(&c), 1);
	}
	tally_buf_fini(&payload);
	tally_strtab_fini(&t);
}

/* ---- whole files ----------------------------------------------------------------------- */

struct mem_file {
	char path[64];
	int fd;
};

static void mem_file_open(struct mem_file *m)
{
	strcpy(m->path, "/tmp/tally-test-XXXXXX");
	m->fd = mkstemp(m->path);
	assert_true(m->fd >= 0);
}

static void mem_file_close(struct mem_file *m)
{
	close(m->fd);
	unlink(m->path);
}

/* A small synthetic file: SESSION, STRINGS, 3 RECORDS chunks of 10 kernels, LEDGER x2 (final). */
static size_t write_sample(int fd, size_t *chunk_ends, size_t max_chunks, unsigned extra_type)
{
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_writer w;
	struct tally_codec codec = {0};
	struct tally_buf b = {0};
	struct tally_record recs[10];
	struct tally_ledger l;
	size_t n = 0, i;
	unsigned c;

	assert_int_equal(tally_writer_init(&w, &sink, 1), 0); /* flush after every chunk */
	tally_writer_preamble(&w);
	tally_writer_flush(&w);
#define MARK() (n < max_chunks ? (chunk_ends[n++] = (size_t)lseek(fd, 0, SEEK_CUR)) : 0)
	tally_kv_str(&b, TALLY_SK_WRITER, "tally test");
	tally_kv_uint(&b, TALLY_SK_PID, 77);
	tally_kv_uint(&b, 9999, 1); /* a key from the future */
	tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0);
	MARK();
	tally_buf_reset(&b);
	tally_buf_put_varint(&b, 1);
	tally_buf_put_varint(&b, 1);
	tally_buf_put_varint(&b, 5);
	tally_buf_put(&b, "kern1", 5);
	tally_writer_chunk(&w, TALLY_CHUNK_STRINGS, 0, b.data, b.len, 0);
	MARK();
	memset(&l, 0, sizeof(l));
	for (c = 0; c < 3; c++) {
		for (i = 0; i < 10; i++) {
			memset(&recs[i], 0, sizeof(recs[i]));
			recs[i].kind = TALLY_KIND_KERNEL;
			recs[i].start = 1000000 + c * 100000 + i * 1000;
			recs[i].end = recs[i].start + 500;
			recs[i].name_id = 1;
			recs[i].correlation_id = (uint32_t)(c * 10 + i + 1);
		}
		tally_buf_reset(&b);
		tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, recs, 10, TALLY_COLUMNS_ALL);
		tally_writer_chunk(&w, TALLY_CHUNK_RECORDS, 0, b.data, b.len, 10);
		MARK();
		if (c == 1 && extra_type) {
			tally_writer_chunk(&w, extra_type, 0, "future", 6, 0);
			MARK();
		}
		if (c == 1) {
			l.slice = 0;
			l.t_end = 1150000;
			l.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL] = 20;
			tally_buf_reset(&b);
			tally_ledger_encode(&b, &l);
			tally_writer_chunk(&w, TALLY_CHUNK_LEDGER, 0, b.data, b.len, 0);
			MARK();
		}
	}
	l.slice = 1;
	l.t_begin = 1150000;
	l.t_end = 1300000;
	l.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL] = 30;
	l.v[TALLY_C_RECORDS_PARSED] = 30;
	l.v[TALLY_C_FLUSH_COMPLETED] = 1;
	tally_buf_reset(&b);
	tally_ledger_encode(&b, &l);
	tally_writer_chunk(&w, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, b.data, b.len, 0);
	MARK();
#undef MARK
	assert_int_equal(w.stats.write_failures, 0);
	tally_writer_fini(&w);
	tally_codec_fini(&codec);
	tally_buf_fini(&b);
	return n;
}

struct count_ctx {
	uint64_t records;
	uint64_t bad_name;
};

static int count_records(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	struct count_ctx *c = ctx;
	size_t i;

	c->records += n;
	for (i = 0; i < n; i++) {
		const char *name = tally_section_string(s, r[i].name_id);

		if (!name || strcmp(name, "kern1") != 0)
			c->bad_name++;
	}
	return 0;
}

static void test_reader_intact(void **state)
{
	struct mem_file m;
	size_t ends[16];
	struct tally_file *f;
	struct count_ctx cc = {0};
	struct tally_read_ops ops = {.records = count_records, .ctx = &cc};
	struct tally_verdict v;
	char err[256];

	(void)state;
	mem_file_open(&m);
	write_sample(m.fd, ends, 16, 0);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	assert_int_equal(cc.records, 30);
	assert_int_equal(cc.bad_name, 0);
	assert_int_equal(f->nsections, 1);
	assert_int_equal(f->ndamage, 0);
	assert_int_equal(f->sections[0]->pid, 77);
	assert_string_equal(f->sections[0]->writer, "tally test");
	assert_int_equal(f->sections[0]->unknown_keys, 1);
	assert_true(f->sections[0]->has_final);
	assert_int_equal(f->intact_end, f->size);
	tally_verdict_compute(f, f->sections[0], &v);
	assert_true(v.complete);
	tally_verdict_fini(&v);
	tally_file_close(f);
	mem_file_close(&m);
}

/* Cut at every chunk boundary and inside chunks: read to the last intact chunk, say where. */
static void test_reader_truncated(void **state)
{
	struct mem_file m;
	size_t ends[16], nchunks, i, full;
	char err[256];

	(void)state;
	mem_file_open(&m);
	nchunks = write_sample(m.fd, ends, 16, 0);
	full = ends[nchunks - 1];
	for (i = TALLY_PREAMBLE_LEN; i < full; i += 1 + (i < 200 ? 0 : rnd64() % 7)) {
		struct tally_file *f;
		struct count_ctx cc = {0};
		struct tally_read_ops ops = {.records = count_records, .ctx = &cc};
		size_t intact = TALLY_PREAMBLE_LEN, k, expect_records = 0;
		struct tally_verdict v;

		assert_int_equal(ftruncate(m.fd, (off_t)i), 0);
		for (k = 0; k < nchunks && ends[k] <= i; k++)
			intact = ends[k];
		/* chunks 2,3,4 are the three RECORDS chunks; chunk 4 comes after a LEDGER */
		expect_records =
		    10 * ((intact >= ends[2]) + (intact >= ends[3]) + (intact >= ends[5]));
		assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), 0);
		assert_int_equal(tally_file_read(f, &ops), 0);
		assert_int_equal(f->intact_end, intact);
		assert_int_equal(cc.records, expect_records);
		if (intact < i) {
			assert_int_equal(f->ndamage, 1);
			assert_int_equal(f->damage[0].kind, TALLY_DAMAGE_TRUNCATED);
			assert_int_equal(f->damage[0].offset, intact);
		}
		if (f->nsections) {
			tally_verdict_compute(f, f->sections[0], &v);
			assert_false(v.complete); /* no final ledger: never COMPLETE */
			tally_verdict_fini(&v);
		}
		tally_file_close(f);
		/* restore the full file for the next cut */
		lseek(m.fd, 0, SEEK_SET);
		assert_int_equal(ftruncate(m.fd, 0), 0);
		write_sample(m.fd, ends, 16, 0);
	}
	mem_file_close(&m);
}

/* A flipped byte damages one chunk; the reader skips to the next intact one. */
static void test_reader_flipped(void **state)
{
	struct mem_file m;
	size_t ends[16], nchunks, i;
	char err[256];

	(void)state;
	mem_file_open(&m);
	nchunks = write_sample(m.fd, ends, 16, 0);
	for (i = TALLY_PREAMBLE_LEN; i < ends[nchunks - 1]; i += 3) {
		struct tally_file *f;
		struct count_ctx cc = {0};
		struct tally_read_ops ops = {.records = count_records, .ctx = &cc};
		uint8_t byte;
		size_t k = 0;

		assert_int_equal(pread(m.fd, &byte, 1, (off_t)i), 1);
		byte ^= 0x5a;
		assert_int_equal(pwrite(m.fd, &byte, 1, (off_t)i), 1);
		while (ends[k] <= i)
			k++;
		assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), 0);
		assert_int_equal(tally_file_read(f, &ops), 0);
		assert_true(f->ndamage >= 1);
		assert_int_equal(f->damage[0].kind, TALLY_DAMAGE_CORRUPT);
		assert_int_equal(f->damage[0].offset, k ? ends[k - 1] : TALLY_PREAMBLE_LEN);
		assert_int_equal(f->damage[0].end, ends[k]); /* resynchronised on the next chunk */
		/* only the damaged chunk's records are lost */
		assert_int_equal(cc.records, (k == 2 || k == 3 || k == 5) ? 20 : 30);
		tally_file_close(f);
		byte ^= 0x5a;
		assert_int_equal(pwrite(m.fd, &byte, 1, (off_t)i), 1);
	}
	mem_file_close(&m);
}

/* A chunk type from a newer writer is skipped and counted; everything else reads. */
static void test_reader_unknown_chunk(void **state)
{
	struct mem_file m;
	size_t ends[16];
	struct tally_file *f;
	struct count_ctx cc = {0};
	struct tally_read_ops ops = {.records = count_records, .ctx = &cc};
	char err[256];

	(void)state;
	mem_file_open(&m);
	write_sample(m.fd, ends, 16, 200);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	assert_int_equal(cc.records, 30);
	assert_int_equal(f->sections[0]->unknown_chunks, 1);
	assert_int_equal(f->ndamage, 0);
	tally_file_close(f);
	mem_file_close(&m);
}

static void test_reader_not_a_trace(void **state)
{
	struct mem_file m;
	struct tally_file *f = NULL;
	char err[256];
	uint8_t pre[16];

	(void)state;
	mem_file_open(&m);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), -EPROTO); /* empty */
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(write(m.fd, "hello, world, not a trace", 25), 25);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, m.path));
	/* a newer major version is refused with a message that says what to do */
	memcpy(pre, TALLY_MAGIC, 8);
	pre[8] = 2, pre[9] = 0, pre[10] = 0, pre[11] = 0;
	memset(pre + 12, 0, 4);
	assert_int_equal(pwrite(m.fd, pre, 16, 0), 16);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "format 2.0"));
	assert_int_equal(tally_file_open(&f, "/nonexistent/x.tally", err, sizeof(err)), -ENOENT);
	mem_file_close(&m);
}

/* A sequence gap (chunks lost in writing) is reported as missing chunks. */
static void test_reader_seq_gap(void **state)
{
	struct tally_sink sink;
	struct tally_writer w;
	struct mem_file m;
	struct tally_file *f;
	char err[256];
	struct tally_buf b = {0};

	(void)state;
	mem_file_open(&m);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)m.fd, NULL, NULL};
	tally_writer_init(&w, &sink, 0);
	tally_writer_preamble(&w);
	tally_kv_uint(&b, TALLY_SK_PID, 1);
	tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0);
	w.seq += 3; /* three chunks that never made it */
	tally_writer_chunk(&w, TALLY_CHUNK_NOTE, 0, b.data, b.len, 0);
	tally_writer_flush(&w);
	assert_int_equal(tally_file_open(&f, m.path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, NULL), 0);
	assert_int_equal(f->ndamage, 1);
	assert_int_equal(f->damage[0].kind, TALLY_DAMAGE_SEQ_GAP);
	assert_int_equal(f->damage[0].missing, 3);
	tally_file_close(f);
	tally_writer_fini(&w);
	tally_buf_fini(&b);
	mem_file_close(&m);
}

/* A signal came and the close never finished (SIGKILL after the grace): the reason names the
 * signal and its time, not "SIGKILL, OOM"; with the final ledger there, no such reason. */
static const struct tally_reason *not_closed(const struct tally_verdict *v)
{
	size_t i;

	for (i = 0; i < v->nreasons; i++)
		if (v->reasons[i].code == TALLY_R_NOT_CLOSED)
			return &v->reasons[i];
	return NULL;
}

static void test_verdict_signal_not_closed(void **state)
{
	struct tally_file f;
	struct tally_section s;
	struct tally_verdict v;
	const struct tally_reason *r;

	(void)state;
	memset(&f, 0, sizeof(f));
	memset(&s, 0, sizeof(s));
	s.ledgers = 3;
	s.ledger.slice = 12;
	tally_verdict_compute(&f, &s, &v);
	assert_non_null(r = not_closed(&v));
	assert_non_null(strstr(r->hint, "SIGKILL, OOM")); /* no signal known: as before */
	tally_verdict_fini(&v);

	s.ledger.v[TALLY_C_SIGNAL_RECEIVED] = 15;
	s.ledger.v[TALLY_C_SIGNAL_AT] = 12300000000ull;
	s.ledger.v[TALLY_C_SIGNALS_RECEIVED] = 2;
	tally_verdict_compute(&f, &s, &v);
	assert_false(v.complete);
	assert_non_null(r = not_closed(&v));
	assert_non_null(strstr(r->text, "SIGTERM at +12.3 s; the close did not finish"));
	assert_null(strstr(r->text, "SIGKILL, OOM"));
	assert_null(strstr(r->hint, "SIGKILL, OOM"));
	assert_non_null(strstr(r->hint, "KillWait"));
	tally_verdict_fini(&v);

	s.has_final = true;
	tally_verdict_compute(&f, &s, &v);
	assert_null(not_closed(&v));
	assert_true(v.complete);
	tally_verdict_fini(&v);
}

/* The signal counters go through the LEDGER codec; a reader that knows them not skips them. */
static void test_ledger_signal_counters(void **state)
{
	struct tally_ledger in, out;
	struct tally_buf b = {0};
	unsigned id;

	(void)state;
	memset(&in, 0, sizeof(in));
	for (id = TALLY_C_SIGNAL_RECEIVED; id <= TALLY_C_SIGNAL_TO_CLOSE; id++) {
		in.v[id] = 1000 + id;
		assert_non_null(tally_counter_info(id));
	}
	tally_ledger_encode(&b, &in);
	assert_true(tally_ledger_decode(b.data, b.len, true, &out));
	for (id = TALLY_C_SIGNAL_RECEIVED; id <= TALLY_C_SIGNAL_TO_CLOSE; id++)
		assert_int_equal(out.v[id], 1000 + id);
	assert_int_equal(out.unknown_counters, 0);
	assert_string_equal(tally_flush_path_name(TALLY_FLUSH_QUICK_EXIT), "quick_exit");
	tally_buf_fini(&b);
}

static void thread_entry(struct tally_buf *b, uint32_t tid, uint64_t pthread_id, unsigned flags,
			 const char *name)
{
	tally_thread_put(b, tid, pthread_id, flags, name, strlen(name));
}

/* Format 1.3: THREADS entries (a later one wins), the host loss counters in the verdict, and
 * CPU_SAMPLE / OSRT records through the codec with their columns. */
static void test_host_records(void **state)
{
	struct tally_sink sink;
	struct tally_writer w;
	struct tally_codec codec = {0};
	struct tally_buf b = {0};
	struct tally_record recs[2], *back = NULL;
	struct tally_ledger l;
	struct tally_verdict v;
	const struct tally_thread **all;
	struct tally_file *f;
	struct mem_file m;
	size_t cap = 0, n;
	unsigned kind;
	char err[256];
	bool loss_named = false;

	(void)state;
	memset(recs, 0, sizeof(recs));
	recs[0] = (struct tally_record){.kind = TALLY_KIND_CPU_SAMPLE,
					.start = 5000,
					.end = 6000,
					.thread_id = 12,
					.process_id = 10,
					.subkind = 1,
					.value = TALLY_THREAD_WAITING,
					.stack_id = 3,
					.flags = TALLY_REC_TORN};
	recs[1] = recs[0];
	recs[1].start = 7000;
	recs[1].end = 7000 + 1000;
	tally_records_encode(&codec, &b, TALLY_KIND_CPU_SAMPLE, recs, 2,
			     tally_kind_columns(TALLY_KIND_CPU_SAMPLE));
	assert_int_equal(tally_records_decode(&codec, b.data, b.len, &kind, &back, &cap), 2);
	assert_int_equal(kind, TALLY_KIND_CPU_SAMPLE);
	assert_int_equal(back[1].start, 7000);
	assert_int_equal(back[1].end - back[1].start, 1000);
	assert_int_equal(back[0].thread_id, 12);
	assert_int_equal(back[0].value, TALLY_THREAD_WAITING);
	assert_int_equal(back[0].stack_id, 3);
	assert_int_equal(back[0].flags, TALLY_REC_TORN);
	assert_string_equal(tally_kind_name(TALLY_KIND_OSRT), "osrt");
	assert_string_equal(tally_osrt_call_name(TALLY_OSRT_PTHREAD_MUTEX_LOCK),
			    "pthread_mutex_lock");
	assert_null(tally_osrt_call_name(TALLY_OSRT_CALL_MAX));
	free(back);

	mem_file_open(&m);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)m.fd, NULL, NULL};
	assert_int_equal(tally_writer_init(&w, &sink, 1), 0);
	tally_writer_preamble(&w);
	tally_buf_reset(&b);
	tally_kv_uint(&b, TALLY_SK_PID, 10);
	tally_kv_uint(&b, TALLY_SK_SAMPLE, TALLY_SAMPLE_BIT_PYTHON);
	tally_kv_uint(&b, TALLY_SK_SAMPLE_RATE, 1000);
	tally_kv_str(&b, TALLY_SK_SAMPLE_MECHANISM, "timer: a test");
	tally_kv_uint(&b, TALLY_SK_OSRT_THRESHOLD, 1000);
	tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0);
	tally_buf_reset(&b);
	thread_entry(&b, 12, 0, 0, "worker");
	thread_entry(&b, 10, 0x7f00, TALLY_THREADF_MAIN, "main");
	tally_writer_chunk(&w, TALLY_CHUNK_THREADS, 0, b.data, b.len, 0);
	tally_buf_reset(&b);
	thread_entry(&b, 12, 0x7f01, TALLY_THREADF_PYTHON | TALLY_THREADF_EXITED, "worker");
	tally_writer_chunk(&w, TALLY_CHUNK_THREADS, 0, b.data, b.len, 0);
	tally_buf_reset(&b);
	tally_records_encode(&codec, &b, TALLY_KIND_CPU_SAMPLE, recs, 2,
			     tally_kind_columns(TALLY_KIND_CPU_SAMPLE));
	tally_writer_chunk(&w, TALLY_CHUNK_RECORDS, 0, b.data, b.len, 2);
	memset(&l, 0, sizeof(l));
	l.v[TALLY_C_BY_KIND + TALLY_KIND_CPU_SAMPLE] = 2;
	l.v[TALLY_C_SAMPLES_TAKEN] = 5;
	l.v[TALLY_C_SAMPLES_DROPPED] = 3;
	tally_buf_reset(&b);
	tally_ledger_encode(&b, &l);
	tally_writer_chunk(&w, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL, b.data, b.len, 0);
	tally_writer_fini(&w);
	assert_int_equal(tally_file_load(&f, m.path, err, sizeof(err)), 0);
	assert_int_equal(f->sections[0]->unknown_chunks, 0);
	assert_int_equal(f->sections[0]->records[TALLY_KIND_CPU_SAMPLE], 2);
	assert_int_equal(f->sections[0]->sample_rate, 1000);
	assert_string_equal(f->sections[0]->sample_mechanism, "timer: a test");
	assert_int_equal(f->sections[0]->osrt_threshold, 1000);
	assert_int_equal(tally_section_thread(f->sections[0], 12)->pthread_id, 0x7f01);
	all = tally_section_threads(f->sections[0], &n);
	assert_int_equal(n, 2);
	assert_int_equal(all[0]->tid, 10);
	assert_string_equal(all[1]->name, "worker");
	assert_true(all[1]->flags & TALLY_THREADF_EXITED);
	free((void *)all);
	tally_verdict_compute(f, f->sections[0], &v);
	assert_false(v.complete);
	for (n = 0; n < v.nreasons; n++)
		loss_named |= v.reasons[n].counter == TALLY_C_SAMPLES_DROPPED;
	assert_true(loss_named);
	tally_verdict_fini(&v);
	tally_file_close(f);
	mem_file_close(&m);
	tally_codec_fini(&codec);
	tally_buf_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_varint_roundtrip),
	    cmocka_unit_test(test_codec_roundtrip),
	    cmocka_unit_test(test_codec_kernel_size),
	    cmocka_unit_test(test_codec_row_limits),
	    cmocka_unit_test(test_codec_damage),
	    cmocka_unit_test(test_strtab),
	    cmocka_unit_test(test_reader_intact),
	    cmocka_unit_test(test_reader_truncated),
	    cmocka_unit_test(test_reader_flipped),
	    cmocka_unit_test(test_reader_unknown_chunk),
	    cmocka_unit_test(test_reader_not_a_trace),
	    cmocka_unit_test(test_reader_seq_gap),
	    cmocka_unit_test(test_verdict_signal_not_closed),
	    cmocka_unit_test(test_ledger_signal_counters),
	    cmocka_unit_test(test_host_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
