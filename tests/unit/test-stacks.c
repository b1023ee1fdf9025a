/* SPDX-License-Identifier: MIT */
/*
 * Call stacks and CUDA memory (format 1.2): the collector's interning, the FRAMES/STACKS round
 * trip, and the reports and exports over traces the CPU test source wrote through the real
 * pipeline.  Expected values come from what the generator was told (testsrc_stack_frames,
 * testsrc_alloc_bytes) and from the records it produced, never from tally's output.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <execinfo.h>
#include <jansson.h>

#include "buildid.h"
#include "codec.h"
#include "export.h"
#include "pathmap.h"
#include "reader.h"
#include "report-fixture.h"
#include "scratch.h"
#include "stacks.h"
#include "stacktab.h"
#include "stats.h"
#include "testsrc.h"
#include "trace-set.h"
#include "unwinder.h"
#include "writer.h"

/* ---- interning ---------------------------------------------------------------------------- */

static bool namer(uint64_t key, uint32_t *line, char *file, size_t flen, char *func, size_t fnlen)
{
	(void)line;
	snprintf(file, flen, "/src/f%llu.py", (unsigned long long)key);
	snprintf(func, fnlen, "fn%llu", (unsigned long long)key);
	return true;
}

static uint32_t intern3(uint64_t a, uint64_t b, uint32_t line)
{
	struct raw_frame f[3] = {{a, line, TALLY_FRAME_PYTHON, 0},
				 {b, 20, TALLY_FRAME_PYTHON, 0},
				 {0x4000, 0, TALLY_FRAME_NATIVE, 0}};

	return tally_stacktab_intern(f, 3, namer);
}

static void *intern_other_thread(void *arg)
{
	*(uint32_t *)arg = intern3(1, 2, 10);
	return NULL;
}

static void test_interning(void **state)
{
	struct tally_buf frames = {0}, stacks = {0}, modules = {0};
	struct tally_stack_tables t = {0};
	const struct tally_stack *s;
	const struct tally_frame *f;
	uint32_t a, b, c, other = 0;
	uint64_t budget;
	pthread_t th;
	int i;

	(void)state;
	assert_int_equal(tally_stacktab_reset(), 0);
	a = intern3(1, 2, 10);
	assert_int_not_equal(a, 0);
	for (i = 0; i < 20000; i++) /* a loop's launches: one stack */
		assert_int_equal(intern3(1, 2, 10), a);
	pthread_create(&th, NULL, intern_other_thread, &other);
	pthread_join(th, NULL);
	assert_int_equal(other, a); /* another thread, no cache: the table finds it */
	b = intern3(1, 2, 11);	    /* another line of the same function: another stack */
	c = intern3(3, 2, 10);
	assert_true(b != a && c != a && c != b);
	tally_stacktab_take(&frames, &stacks, &modules, NULL);
	budget = frames.len + stacks.len; /* what a file holding just these chunks allows */
	assert_true(tally_frames_parse(&t, frames.data, frames.len, &budget));
	assert_true(tally_stacks_parse(&t, stacks.data, stacks.len, &budget));
	/* 3 stacks of 3 frames share: (1,10) (2,20) native (1,11) (3,10): 5 frames */
	assert_int_equal(t.nframes, 6);
	assert_int_equal(t.nstacks, 4);
	s = tally_stack_get(&t, b);
	assert_non_null(s);
	assert_int_equal(s->nframes, 3);
	f = tally_frame_get(&t, s->frames[0]);
	assert_string_equal(f->file, "/src/f1.py");
	assert_string_equal(f->func, "fn1");
	assert_int_equal(f->line, 11);
	f = tally_frame_get(&t, s->frames[2]);
	assert_int_equal(f->type, TALLY_FRAME_NATIVE);
	assert_int_equal(f->pc, 0x4000);
	/* nothing new since: nothing to take */
	tally_buf_reset(&frames);
	tally_buf_reset(&stacks);
	tally_stacktab_take(&frames, &stacks, &modules, NULL);
	assert_int_equal(frames.len + stacks.len, 0);
	tally_stack_tables_fini(&t);
	tally_buf_fini(&frames);
	tally_buf_fini(&stacks);
	tally_buf_fini(&modules);
}

/* The module map: a later entry covering the same addresses wins (a library unloaded and another
 * loaded there), nested and adjoining ranges each find their own, gaps find none; and ids past
 * what the file's bytes could hold are refused before anything is allocated. */
static void test_module_map(void **state)
{
	struct tally_stack_tables t = {0};
	struct tally_buf b = {0};
	uint64_t budget = 16;

	(void)state;
	tally_module_put(&b, 0, 0x1000, 0x5000, "/a.so", NULL); /* module 0 */
	tally_module_put(&b, 0, 0x2000, 0x3000, "/b.so", NULL); /* 1, inside a */
	tally_module_put(&b, 0, 0x5000, 0x6000, "/c.so", NULL); /* 2, adjoining a */
	assert_true(tally_modules_parse(&t, b.data, b.len));
	tally_buf_reset(&b);
	tally_module_put(&b, 0, 0x2800, 0x4000, "/d.so", NULL); /* 3, later, over b and a */
	assert_true(tally_modules_parse(&t, b.data, b.len));
	assert_null(tally_module_of(&t, 0xfff));
	assert_string_equal(tally_module_of(&t, 0x1000)->path, "/a.so");
	assert_string_equal(tally_module_of(&t, 0x2000)->path, "/b.so");
	assert_string_equal(tally_module_of(&t, 0x27ff)->path, "/b.so");
	assert_string_equal(tally_module_of(&t, 0x2800)->path, "/d.so");
	assert_string_equal(tally_module_of(&t, 0x3fff)->path, "/d.so");
	assert_string_equal(tally_module_of(&t, 0x4000)->path, "/a.so");
	assert_string_equal(tally_module_of(&t, 0x5000)->path, "/c.so");
	assert_null(tally_module_of(&t, 0x6000));
	/* a frame id near 2^24 in a file of 16 bytes: refused, nothing allocated */
	tally_buf_reset(&b);
	tally_buf_put_varint(&b, (1u << 24) - 2);
	tally_buf_put_varint(&b, 1);
	for (int i = 0; i < 5; i++)
		tally_buf_put_varint(&b, i == 0 ? TALLY_FRAME_NATIVE : 0);
	assert_false(tally_frames_parse(&t, b.data, b.len, &budget));
	assert_int_equal(t.nframes, 0);
	assert_int_equal(budget, 16);
	tally_stack_tables_fini(&t);
	tally_buf_fini(&b);
}

/* Format 1.4: a module's build ID and size after a NUL in its path's bytes.  A 1.3 reader takes
 * the bytes as a C string: the path, and nothing of what follows. */
static void test_module_facts(void **state)
{
	static const uint8_t id[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
				       11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
	struct tally_module_facts with = {id, sizeof(id), 4096}, no_id = {NULL, 0, 77};
	struct tally_stack_tables t = {0};
	struct tally_buf b = {0};
	struct tally_cursor c;
	const struct tally_module *m;

	(void)state;
	tally_module_put(&b, 0, 0x1000, 0x2000, "/lib/a.so", &with);
	tally_module_put(&b, 0, 0x2000, 0x3000, "/lib/b.so", &no_id);
	tally_module_put(&b, 0, 0x3000, 0x4000, "/lib/c.so", NULL);
	/* what a 1.3 reader does with the first entry: three varints, then len-bytes as a C string
	 */
	c = (struct tally_cursor){b.data, b.data + b.len, false};
	for (int i = 0; i < 3; i++)
		(void)tally_cur_varint(&c);
	{
		uint64_t n = tally_cur_varint(&c);
		const uint8_t *bytes = tally_cur_bytes(&c, n);

		assert_non_null(bytes);
		assert_int_equal(strnlen((const char *)bytes, n), strlen("/lib/a.so"));
		assert_true(n > strlen("/lib/a.so") + sizeof(id));
	}
	assert_true(tally_modules_parse(&t, b.data, b.len));
	m = tally_module_of(&t, 0x1800);
	assert_string_equal(m->path, "/lib/a.so");
	assert_true(m->described);
	assert_int_equal(m->build_id_len, sizeof(id));
	assert_memory_equal(m->build_id, id, sizeof(id));
	assert_int_equal(m->file_size, 4096);
	m = tally_module_of(&t, 0x2800);
	assert_string_equal(m->path, "/lib/b.so");
	assert_true(m->described);
	assert_int_equal(m->build_id_len, 0);
	assert_int_equal(m->file_size, 77);
	m = tally_module_of(&t, 0x3800);
	assert_string_equal(m->path, "/lib/c.so");
	assert_false(m->described);
	/* a later writer's key (9, bytes) is skipped; an unknown type ends the facts, not the chunk
	 */
	tally_buf_reset(&b);
	tally_buf_put_varint(&b, 0);
	tally_buf_put_varint(&b, 0x5000);
	tally_buf_put_varint(&b, 0x6000);
	tally_buf_put_varint(&b, 3 + 6 + 3 + 2 + 3); /* the bytes below, to the next entry */
	tally_buf_put(&b, "/d\0", 3);
	tally_kv_bytes(&b, 9, "xyz", 3);	  /* 6 */
	tally_kv_uint(&b, TALLY_MK_FILE_SIZE, 5); /* 3 */
	tally_buf_put(&b, "\x0a\x09", 2);	  /* key 10 of type 9 */
	tally_kv_uint(&b, TALLY_MK_FILE_SIZE, 6); /* after it: not read */
	tally_buf_put_varint(&b, 0);		  /* the next entry */
	tally_buf_put_varint(&b, 0x6000);
	tally_buf_put_varint(&b, 0x7000);
	tally_buf_put_str(&b, "/e");
	assert_true(tally_modules_parse(&t, b.data, b.len));
	assert_int_equal(tally_module_of(&t, 0x5000)->file_size, 5);
	assert_string_equal(tally_module_of(&t, 0x6000)->path, "/e");
	tally_stack_tables_fini(&t);
	tally_buf_fini(&b);
}

/* Build IDs from ELF notes: the GNU one among others, none from notes that run past their end. */
static void test_build_id_notes(void **state)
{
	uint8_t notes[96] = {0}, id[TALLY_BUILD_ID_MAX];
	uint32_t *w = (uint32_t *)notes;

	(void)state;
	/* an ABI tag note (name "GNU", 16 bytes), then the build ID (8 bytes) */
	w[0] = 4, w[1] = 16, w[2] = 1 /* NT_GNU_ABI_TAG */, memcpy(&w[3], "GNU", 4);
	w[8] = 4, w[9] = 8, w[10] = 3 /* NT_GNU_BUILD_ID */, memcpy(&w[11], "GNU", 4);
	memcpy(&w[12], "\xde\xad\xbe\xef\x01\x02\x03\x04", 8);
	assert_int_equal(tally_build_id_parse(notes, 56, id), 8);
	assert_memory_equal(id, "\xde\xad\xbe\xef\x01\x02\x03\x04", 8);
	assert_int_equal(tally_build_id_parse(notes, 55, id), 0); /* its descriptor cut */
	w[9] = 0xfffffff0u;					  /* a size past everything */
	assert_int_equal(tally_build_id_parse(notes, sizeof(notes), id), 0);
	w[9] = 8, w[8] = 5; /* name "GNU" of 5 bytes: not the GNU note */
	assert_int_equal(tally_build_id_parse(notes, 56, id), 0);
}

/* SYMBOLS: the entries by frame id, the info after them, the length at the end; damage refused. */
static void test_symbols_chunk(void **state)
{
	struct tally_symbols_info info = {.present = true,
					  .has_session_id = true,
					  .state = 2,
					  .frames = 9,
					  .named = 3,
					  .how = "libdw"};
	struct tally_stack_tables t = {0};
	struct tally_buf e = {0}, p = {0}, again = {0};
	uint32_t prev = 0;

	(void)state;
	memset(info.session_id, 0xab, sizeof(info.session_id));
	tally_symbol_put(&e, &prev, 2, 0, 12, "_Z6crunchd", "a.cu");
	tally_symbol_put(&e, &prev, 5, TALLY_SYMF_UNVERIFIED, 0, "helper", "");
	tally_symbol_put(&e, &prev, 300, 0, 1, "main", "m.c");
	tally_symbols_payload(&p, 3, &e, &info);
	assert_true(tally_symbols_parse(&t, p.data, p.len));
	assert_int_equal(t.nsymbols, 3);
	assert_null(tally_symbol_of(&t, 1));
	assert_string_equal(tally_symbol_of(&t, 2)->func, "_Z6crunchd");
	assert_int_equal(tally_symbol_of(&t, 2)->line, 12);
	assert_int_equal(tally_symbol_of(&t, 5)->flags, TALLY_SYMF_UNVERIFIED);
	assert_string_equal(tally_symbol_of(&t, 300)->file, "m.c");
	assert_null(tally_symbol_of(&t, 301));
	assert_true(t.symbols_info.present && t.symbols_info.has_session_id);
	assert_int_equal(t.symbols_info.state, 2);
	assert_int_equal(t.symbols_info.frames, 9);
	assert_string_equal(t.symbols_info.how, "libdw");
	assert_memory_equal(t.symbols_info.session_id, info.session_id, 16);
	/* encoded again (tally merge): the same bytes */
	tally_symbols_encode(&again, &t);
	assert_int_equal(again.len, p.len);
	assert_memory_equal(again.data, p.data, p.len);
	/* its own length wrong, cut short, a frame id not above the one before: damage, none kept
	 */
	p.data[p.len - 1] ^= 1;
	assert_false(tally_symbols_parse(&t, p.data, p.len));
	assert_int_equal(t.nsymbols, 0);
	assert_false(t.symbols_info.present);
	p.data[p.len - 1] ^= 1;
	assert_false(tally_symbols_parse(&t, p.data, p.len - 1));
	tally_buf_reset(&e);
	tally_buf_reset(&p);
	prev = 0;
	tally_symbol_put(&e, &prev, 4, 0, 0, "a", "");
	tally_symbol_put(&e, &prev, 4, 0, 0, "b", "");
	tally_symbols_payload(&p, 2, &e, &info);
	assert_false(tally_symbols_parse(&t, p.data, p.len));
	tally_buf_reset(&p);
	tally_symbols_payload(&p, 1000, &e, &info); /* more entries than the bytes hold */
	assert_false(tally_symbols_parse(&t, p.data, p.len));
	/* a delta that wraps past 2^64 to an id below the one before */
	tally_buf_reset(&e);
	tally_buf_reset(&p);
	for (int i = 0; i < 2; i++) {
		tally_buf_put_varint(&e, i ? UINT64_MAX - 2 : 5);
		tally_buf_put_varint(&e, 0);
		tally_buf_put_varint(&e, 0);
		tally_buf_put_str(&e, "f");
		tally_buf_put_str(&e, "");
	}
	tally_symbols_payload(&p, 2, &e, &info);
	assert_false(tally_symbols_parse(&t, p.data, p.len));
	tally_stack_tables_fini(&t);
	tally_buf_fini(&e);
	tally_buf_fini(&p);
	tally_buf_fini(&again);
}

/* A SYMBOLS chunk that ends the file names the section's frames before its first record: the
 * labels made as records stream by (the exporters', the page's) are record's names. */
struct ahead_seen {
	bool at_records; /* the names were there when the first records came */
	size_t calls;
};

static int ahead_records(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	struct ahead_seen *a = ctx;

	(void)r;
	(void)n;
	if (!a->calls++)
		a->at_records = tally_symbol_of(&s->stacks, 1) != NULL;
	return 0;
}

static void test_symbols_ahead(void **state)
{
	struct tally_sink sink;
	struct tally_writer w;
	struct tally_buf b = {0}, e = {0};
	struct tally_symbols_info info = {.present = true, .has_session_id = true, .state = 1};
	struct tally_record rec = {.kind = TALLY_KIND_KERNEL, .start = 10, .end = 20};
	struct ahead_seen seen = {0};
	struct tally_read_ops ops = {.records = ahead_records, .ctx = &seen};
	struct tally_file *f;
	char err[256];
	uint32_t prev = 0;
	int fd;

	(void)state;
	memset(info.session_id, 7, sizeof(info.session_id));
	fd = open(scratch_path("ahead.tally"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	assert_int_equal(tally_writer_init(&w, &sink, 0), 0);
	assert_int_equal(tally_writer_preamble(&w), 0);
	tally_kv_bytes(&b, TALLY_SK_SESSION_ID, info.session_id, 16);
	assert_int_equal(tally_writer_chunk(&w, TALLY_CHUNK_SESSION, 0, b.data, b.len, 0), 0);
	tally_buf_reset(&b);
	{
		struct tally_codec codec = {0};

		assert_int_equal(tally_records_encode(&codec, &b, TALLY_KIND_KERNEL, &rec, 1,
						      tally_kind_columns(TALLY_KIND_KERNEL)),
				 0);
		tally_codec_fini(&codec);
	}
	assert_int_equal(tally_writer_chunk(&w, TALLY_CHUNK_RECORDS, 0, b.data, b.len, 1), 0);
	tally_symbol_put(&e, &prev, 1, 0, 3, "crunch", "c.c");
	tally_buf_reset(&b);
	tally_symbols_payload(&b, 1, &e, &info);
	assert_int_equal(tally_writer_chunk(&w, TALLY_CHUNK_SYMBOLS, 0, b.data, b.len, 0), 0);
	assert_int_equal(tally_writer_flush(&w), 0);
	tally_writer_fini(&w);
	close(fd);
	assert_int_equal(tally_file_open(&f, scratch_path("ahead.tally"), err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	assert_true(seen.calls > 0 && seen.at_records);
	assert_int_equal(f->chunks, 3); /* read ahead, and once in its place: counted once */
	assert_int_equal(f->ndamage, 0);
	assert_int_equal(f->sections[0]->unknown_chunks, 0);
	tally_file_close(f);
	/* another session's names are not this section's */
	memset(info.session_id, 8, sizeof(info.session_id));
	tally_buf_reset(&b);
	tally_symbols_payload(&b, 1, &e, &info);
	seen = (struct ahead_seen){0};
	fd = open(scratch_path("ahead.tally"), O_WRONLY | O_APPEND);
	{
		uint8_t hdr[TALLY_CHUNK_HEADER_LEN];

		tally_chunk_header(hdr, TALLY_CHUNK_SYMBOLS, 0, 3, b.data, b.len);
		assert_int_equal(write(fd, hdr, sizeof(hdr)), sizeof(hdr));
		assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
	}
	close(fd);
	assert_int_equal(tally_file_open(&f, scratch_path("ahead.tally"), err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	assert_false(seen.at_records);
	tally_file_close(f);
	tally_buf_fini(&b);
	tally_buf_fini(&e);
}

/* The module-path index of the frame labels: every path found after the table grew past the
 * index's first size, none that was never added. */
static char pm_paths[300][32];

static const char *pm_key(const void *ctx, size_t i)
{
	(void)ctx;
	return pm_paths[i];
}

static void test_pathmap(void **state)
{
	struct pathmap m = {.key = pm_key};
	size_t i;

	(void)state;
	assert_int_equal(pathmap_find(&m, "/lib/a.so"), SIZE_MAX);
	for (i = 0; i < 300; i++) {
		snprintf(pm_paths[i], sizeof(pm_paths[i]), "/lib/m%zu.so", i);
		assert_true(pathmap_add(&m, i));
	}
	for (i = 0; i < 300; i++)
		assert_int_equal(pathmap_find(&m, pm_paths[i]), i);
	assert_int_equal(pathmap_find(&m, "/lib/m300.so"), SIZE_MAX);
	pathmap_fini(&m);
}

static void test_correlation_ring(void **state)
{
	(void)state;
	assert_int_equal(tally_stacktab_reset(), 0);
	tally_stacktab_note(5, 7);
	tally_stacktab_note(6, 8);
	assert_int_equal(tally_stacktab_lookup(5), 7);
	assert_int_equal(tally_stacktab_lookup(6), 8);
	assert_int_equal(tally_stacktab_lookup(7), 0);
	tally_stacktab_note(5 + (1u << 20), 9); /* a million launches later: the slot is reused */
	assert_int_equal(tally_stacktab_lookup(5), 0);
	assert_int_equal(tally_stacktab_lookup(5 + (1u << 20)), 9);
}

/* ---- the cached unwinder against glibc's backtrace() ----------------------------------------- */

struct probe_result {
	void *ours[64], *ref[64];
	int nours, nref;
};

/* Different depths, and two call sites at each: the chains a loop of launches alternates. */
__attribute__((noinline)) static int probe(int depth, int site, struct probe_result *r)
{
	volatile int keep = depth;

	if (depth > 0) { /* not a tail call: each level keeps its frame */
		int below = probe(depth - 1, site, r);

		return below + keep - depth;
	}
	if (site) {
		r->nours = tally_unwind(r->ours, 64);
		r->nref = backtrace(r->ref, 64);
	} else {
		r->nref = backtrace(r->ref, 64);
		r->nours = tally_unwind(r->ours, 64);
	}
	return keep;
}

static void test_unwinder_cache(void **state)
{
	struct probe_result r;
	unsigned i, seed = 12345;

	(void)state;
	tally_unwind_init();
	for (i = 0; i < 5000; i++) {
		/* runs of 8 captures from one chain, then another depth or call site */
		static int depth, site;

		if (i % 8 == 0) {
			seed = seed * 1103515245u + 12345u;
			depth = (int)(seed >> 16) % 12;
			site = (int)(seed >> 8) & 1;
		}
		memset(&r, 0, sizeof(r));
		probe(depth, site, &r);
		/* [0] are the two call sites in probe: from probe's caller on, the same chain (a
		 * sanitizer's backtrace interceptor adds a frame of its own to the reference) */
		int extra = r.nref - r.nours;

		assert_true(extra == 0 || extra == 1);
		assert_memory_equal(r.ours + 1, r.ref + extra + 1,
				    (size_t)(r.nours - 1) * sizeof(void *));
	}
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
	/* the cache answered, and was right (under ASan, frames may live on its fake stack, which
	 * the cache does not trust: every capture is unwound) */
	assert_true(tally_unwind_cache_hits() > 1000);
#endif
}

/* ---- traces through the pipeline ----------------------------------------------------------- */

#define STACKS 3
#define ALLOCS 8

struct observed {
	uint64_t by_stack[STACKS]; /* kernel ns launched from stack s */
	uint64_t kernels[STACKS];
};

static void observe(void *ctx, const CUpti_Activity *rec, size_t size)
{
	struct observed *x = ctx;
	const CUpti_ActivityKernel10 *k = (const void *)rec;
	unsigned s;

	(void)size;
	if (!rec || rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
		return;
	s = testsrc_stack_index(k->correlationId, STACKS);
	x->by_stack[s] += k->end - k->start;
	x->kernels[s]++;
}

static void make_trace(const char *path, struct observed *x)
{
	struct testsrc_workload w = {.kernels = 600,
				     .memcpys = 30,
				     .kernel_names = 3,
				     .seed = 7,
				     .stacks = STACKS,
				     .mem_allocs = ALLOCS};
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct testsrc_emitter e;
	struct tally_sink sink;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	memset(x, 0, sizeof(*x));
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	cfg.stacks = true;
	cfg.batch_records = 100; /* many RECORDS chunks: stacks must precede each user */
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	tally_buf_fini(&session);
	testsrc_emitter_init(&e, 100, observe, x);
	testsrc_run(&e, &w, 1);
	testsrc_flush(&e);
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	assert_int_equal(tally_pipeline_stop(&rep), 0);
	assert_true(rep.complete);
	tally_pipeline_reset();
	close(fd);
}

/* "Layer1.forward (/work/model.py:11)" and the whole stack, from what the generator says. */
static void expected_labels(unsigned s, char *frame, size_t flen, char *stack, size_t slen)
{
	struct testsrc_frame f[TESTSRC_STACK_DEPTH];
	unsigned n = testsrc_stack_frames(s, f), i, user = s % 2 ? 1 : 0;
	size_t used = 0;

	snprintf(frame, flen, "%s (%s:%u)", f[user].func, f[user].file, f[user].line);
	for (i = 0; i < n; i++)
		used += (size_t)snprintf(stack + used, slen - used, "%s%s (%s:%u)", i ? " <- " : "",
					 f[i].func, f[i].file, f[i].line);
}

static uint64_t alloc_total(void)
{
	uint64_t t = 0;
	unsigned i;

	for (i = 0; i < ALLOCS; i++)
		t += testsrc_alloc_bytes(i);
	return t;
}

static const struct stats_group_view *group_named(const struct stats *st, int r, const char *n)
{
	const struct stats_group_view *g;
	size_t i;

	for (i = 0; (g = stats_group(st, (unsigned)r, i)); i++)
		if (strcmp(g->name, n) == 0)
			return g;
	return NULL;
}

static void test_stack_report(void **state)
{
	int r = report_find("cuda_kern_stack_sum");
	const struct stats_group_view *g;
	struct report_set set = {0};
	struct observed x;
	struct stats *st;
	char *path;
	char frame[256], stack[1024];
	unsigned s, rows = 0;

	(void)state;
	assert_true(r >= 0);
	make_trace(scratch_path("stacks.tally"), &x);
	path = (char *)scratch_path("stacks.tally");
	st = fixture_stats(&path, 1, 1u << r, &set);
	for (s = 0; s < STACKS; s++) {
		expected_labels(s, frame, sizeof(frame), stack, sizeof(stack));
		g = group_named(st, r, frame);
		assert_non_null(g);
		assert_int_equal(g->total, x.by_stack[s]);
		assert_int_equal(g->count, x.kernels[s]);
		g = group_named(st, r, stack);
		assert_non_null(g);
		assert_int_equal(g->total, x.by_stack[s]);
	}
	while (stats_group(st, (unsigned)r, rows))
		rows++;
	assert_int_equal(rows, 2 * STACKS); /* nothing else: every kernel had its stack */
	stats_free(st);
	report_set_close(&set);
}

static void test_memory_report(void **state)
{
	int r = report_find("cuda_gpu_mem_usage");
	struct report_set set = {0};
	struct observed x;
	struct stats *st;
	char *path;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	make_trace(scratch_path("mem.tally"), &x);
	path = (char *)scratch_path("mem.tally");
	st = fixture_stats(&path, 1, 1u << r, &set);
	f = open_memstream(&out, &len);
	assert_int_equal(stats_write(st, &set, f, REPORT_FMT_CSV), 0);
	fclose(f);
	/* device 0, Device memory: 8 allocations then 8 releases, peak = all of them, in exact
	 * bytes; nothing in use at the end */
	{
		char want[256];
		unsigned long long b = (unsigned long long)alloc_total();

		snprintf(want, sizeof(want), "0,Device,%u,%u,%llu,%llu,%llu,", ALLOCS, ALLOCS, b, b,
			 b);
		assert_non_null(strstr(out, want));
		assert_non_null(strstr(out, ",0\n"));
	}
	free(out);
	stats_free(st);
	report_set_close(&set);
}

static void test_chrome(void **state)
{
	json_t *root, *events, *ev;
	struct observed x;
	size_t i, launches = 0, counters = 0;
	uint64_t peak = 0;
	char frame[256], stack[1024];

	(void)state;
	make_trace(scratch_path("chrome.tally"), &x);
	root = fixture_chrome(scratch_path("chrome.tally"), scratch_path("chrome.json"));
	events = json_object_get(root, "traceEvents");
	json_array_foreach(events, i, ev)
	{
		json_t *args = json_object_get(ev, "args");
		const char *cat = json_string_value(json_object_get(ev, "cat"));
		const char *name = json_string_value(json_object_get(ev, "name"));

		if (cat && strcmp(cat, "cuda_runtime") == 0) {
			uint32_t corr =
			    (uint32_t)json_integer_value(json_object_get(args, "correlation"));

			expected_labels(testsrc_stack_index(corr, STACKS), frame, sizeof(frame),
					stack, sizeof(stack));
			assert_string_equal(
			    json_string_value(json_object_get(args, "launched_from")), frame);
			assert_string_equal(json_string_value(json_object_get(args, "stack")),
					    stack);
			launches++;
		} else if (name && strcmp(name, "CUDA memory (bytes)") == 0) {
			uint64_t v = (uint64_t)json_integer_value(json_object_get(args, "Device"));

			peak = v > peak ? v : peak;
			counters++;
		}
	}
	assert_int_equal(launches, 630); /* 600 kernels + 30 copies, each from its stack */
	assert_int_equal(counters, 2 * ALLOCS);
	assert_int_equal(peak, alloc_total());
	json_decref(root);
}

static void test_sqlite(void **state)
{
	struct observed x;
	char cmd[512], line[256] = "";
	FILE *p;

	(void)state;
	make_trace(scratch_path("sq.tally"), &x);
	fixture_export(&export_sqlite, scratch_path("sq.tally"), scratch_path("s.db"));
	/* per stack: its frames, innermost at depth 0, the user frame marked */
	snprintf(cmd, sizeof(cmd),
		 "sqlite3 %s \"SELECT count(DISTINCT id), count(*), sum(userFrame),"
		 " (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE callchainId IS NOT NULL),"
		 " (SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS) FROM CUDA_CALLCHAINS\"",
		 scratch_path("s.db"));
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	/* stacks 0 and 2 have 3 frames, stack 1 has 4 (a library frame first) */
	assert_string_equal(line, "3|10|3|600|16\n");
}

static void test_csv_memory(void **state)
{
	struct observed x;
	char line[512];
	uint64_t alloc = 0, freed = 0, rows = 0;
	FILE *f;

	(void)state;
	make_trace(scratch_path("csv.tally"), &x);
	fixture_export(&export_csv, scratch_path("csv.tally"), scratch_path("csv"));
	snprintf(line, sizeof(line), "%s/memory.csv", scratch_path("csv"));
	f = fopen(line, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* header */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long bytes;
		char op[16];

		/* section,pid,time,correlation,device,context,stream,address,bytes,operation,... */
		assert_int_equal(
		    sscanf(line, "%*u,%*u,%*u,%*u,%*u,%*u,%*u,%*u,%llu,%15[a-z]", &bytes, op), 2);
		*(strcmp(op, "alloc") == 0 ? &alloc : &freed) += bytes;
		rows++;
	}
	fclose(f);
	assert_int_equal(rows, 2 * ALLOCS);
	assert_int_equal(alloc, alloc_total());
	assert_int_equal(freed, alloc_total());
}

/* An older reader meets the new chunks: they are skipped, counted, and the rest reads. */
struct renumber {
	struct tally_writer w;
	int fd;
};

static int copy_chunk(void *ctx, struct tally_section *s, const struct tally_chunk_info *c,
		      const uint8_t *payload)
{
	struct renumber *rn = ctx;
	unsigned type = c->type;

	(void)s;
	if (type >= TALLY_CHUNK_FRAMES && type <= TALLY_CHUNK_MODULES)
		type += 200; /* types no reader knows: what 1.1 sees in a 1.2 file */
	return tally_writer_chunk(&rn->w, type, c->flags, payload, c->len, 0) < 0;
}

static void test_unknown_chunks(void **state)
{
	struct renumber rn;
	struct tally_sink sink;
	struct tally_read_ops ops = {.chunk_payload = copy_chunk, .ctx = &rn};
	struct tally_file *f;
	struct observed x;
	char err[256];
	uint64_t frames = 0, stacks = 0;

	(void)state;
	make_trace(scratch_path("new.tally"), &x);
	assert_int_equal(tally_file_load(&f, scratch_path("new.tally"), err, sizeof(err)), 0);
	frames = f->sections[0]->stacks.nframes;
	stacks = f->sections[0]->stacks.nstacks;
	assert_true(frames > 0 && stacks > 0);
	tally_file_close(f);
	rn.fd = open(scratch_path("old.tally"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)rn.fd, NULL, NULL};
	assert_int_equal(tally_writer_init(&rn.w, &sink, 0), 0);
	assert_int_equal(tally_writer_preamble(&rn.w), 0);
	assert_int_equal(tally_file_open(&f, scratch_path("new.tally"), err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	tally_file_close(f);
	tally_writer_flush(&rn.w);
	tally_writer_fini(&rn.w);
	close(rn.fd);
	assert_int_equal(tally_file_load(&f, scratch_path("old.tally"), err, sizeof(err)), 0);
	assert_int_equal(f->ndamage, 0);
	assert_int_equal(f->sections[0]->unknown_chunks, 2); /* one FRAMES, one STACKS */
	assert_int_equal(f->sections[0]->stacks.nstacks, 0);
	assert_int_equal(f->sections[0]->records[TALLY_KIND_KERNEL], 600);
	tally_file_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unwinder_cache),   cmocka_unit_test(test_interning),
	    cmocka_unit_test(test_correlation_ring), cmocka_unit_test(test_stack_report),
	    cmocka_unit_test(test_memory_report),    cmocka_unit_test(test_chrome),
	    cmocka_unit_test(test_sqlite),	     cmocka_unit_test(test_csv_memory),
	    cmocka_unit_test(test_unknown_chunks),   cmocka_unit_test(test_module_map),
	    cmocka_unit_test(test_pathmap),	     cmocka_unit_test(test_module_facts),
	    cmocka_unit_test(test_build_id_notes),   cmocka_unit_test(test_symbols_chunk),
	    cmocka_unit_test(test_symbols_ahead),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
