/* SPDX-License-Identifier: MIT */
/*
 * tally-craft CASE OUT: writes a crafted or odd trace for the hostile-input tests
 * (tests/cli/test-hostile.sh).  Each case is what a hostile or unlucky file looks like; the test
 * says what every reader must do with it.  Valid chunks come from the real writer, so a case
 * differs from a good file only where it means to.
 *
 *   rows-bomb       a RECORDS chunk declaring 64 M rows of constant columns (about 200 bytes)
 *   strings-bomb    a STRINGS chunk whose first id is 2^28 - 1
 *   resync-bomb     4 MiB of chunk headers, each valid, each declaring a payload to near EOF
 *   demangle-bomb   a complete trace of one kernel whose name is a 40-deep chain of template
 *                   back-references (it demangles to gigabytes)
 *   partial-mid     intact chunks, a partial one (a failed write), intact chunks and the final
 *                   ledger after it
 *   partial-eof     the same, but the partial chunk declares a payload past the end of the file
 *   control-chars   a command line, host and rank holding newlines, a fake verdict and escapes
 *   bad-text        invalid UTF-8 in the command line and an NVTX message; a 5000-byte NVTX
 *                   message flagged as cut
 *   future          a RECORDS column (id 60) and a ledger counter (id 250) no reader knows
 *   early-records   records 10 s before the session's start
 *   strings-late    3 kernels named by a string id whose STRINGS chunk comes after them (a
 *                   higher id is defined before), then 2 more kernels of that name
 *   overlap         5 kernels on one stream, each overlapping the next (and their launches)
 *   enospc          writes failed with ENOSPC, then the process ended without a final ledger
 *
 * Call stacks, memory and drops (format 1.2):
 *   stacks-bomb     8 sections, each with a STACKS and a FRAMES chunk whose first id is 2^24 - 2
 *   module ARG      kernels launched from a native frame whose MODULES path is ARG (a FIFO, say)
 *   memory          MEMORY records: releases only on device 0 (no allocation seen), and on
 *                   device 1 three allocations of 2^63 bytes each (totals past 2^64)
 *   big-ids         a RECORDS chunk whose STACK and DEVICE columns hold 2^32 + 1, and a kernel
 *                   that starts and ends past 2^63 ns
 *   drops           a DROPS chunk of every source, names with escapes in the context's kernels
 *   long-name       runtime calls named by one 1 MiB name
 *   escapes         kernel, API, NVTX and session text holding ESC, BEL, BS, CR, a raw 0x9B,
 *                   U+009B, U+202E and invalid UTF-8
 *   header-only     the preamble and nothing else
 *   header-junk     the preamble and 4 KiB of bytes that hold no chunk
 *   note-overhead   a NOTE chunk (with an escape in its text) and OVERHEAD records: the chunk type
 *                   and record kind no other case has (tests/fuzz/corpus-coverage.py wants all)
 *
 * Native frames' names (format 1.4):
 *   symbols         MODULES entries with build IDs and sizes, and the SYMBOLS chunk tally record
 *                   appends at the end: names holding escapes, an unverified one, entries for a
 *                   Python frame and for a frame id no FRAMES chunk defines, naming cut short
 *
 * Processes that recorded nothing (format 1.4):
 *   processes       two PROCESSES chunks: names holding escapes and invalid UTF-8, one past the
 *                   15 bytes a comm holds, more entries than a reader keeps (100), and totals
 *                   that overflow 64 bits when added
 *   foreign-module PATH,BUILD_ID,SIZE,OFFSET
 *                   kernels launched from one native frame, the instruction at OFFSET (hex) of
 *                   the module at PATH whose MODULES entry says BUILD_ID (hex; "none": it had
 *                   none; "-": a 1.3 entry, which says nothing) and SIZE (bytes; 0 unknown): a
 *                   library of this machine, recorded (the trace says) as another build, or as
 *                   this one
 *
 * GPU metrics (format 1.3):
 *   metrics         GPU_METRICS chunks (device 0 sampled, with 2 metrics, one label holding an
 *                   escape; device 1 sampled elsewhere, by a host whose name holds one) and
 *                   GPU_METRIC records at the edges: values INT64_MIN and INT64_MAX, a scale of
 *                   255, a zero duration, a device with no GPU_METRICS chunk, a gap (LOSS 85)
 *
 * Host sampling (format 1.3):
 *   host-samples    THREADS entries (names holding escapes, an entry for a tid that exited, one
 *                   for a tid past 32 bits in a chunk of its own), CPU_SAMPLE records on stacks
 *                   (Python and native frames, one torn, states of every kind) and OSRT records
 *                   (a call id no table knows, a duration of 2^63 ns)
 *
 * Inputs that double, for the scaling tests (ARG: how many):
 *   names ARG       ARG kernels, each with a name of its own (and a launch of its own name)
 *   stack-ids ARG   ARG kernels, each launched from a stack of its own (Python and native
 *                   frames, ARG / 16 modules)
 *   files ARG       OUT is a directory of ARG small traces (overlap's), one rank each
 *   edits ARG       ARG kernels on one stream, all _Z4workv but every 100th, _Z5otherv: against
 *                   stack-ids ARG, the edit distance is ARG / 50, spread along the stream (the
 *                   worst case of compare's edit distance)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "craft.h"
#include "gpumetrics.h"
#include "payloads.h"
#include "stacks.h"

const char *session_host = "crafted", *session_rank; /* control-chars changes them */
const char *case_arg;				     /* ARG of the cases that take one */

void die(const char *what)
{
	perror(what);
	exit(1);
}

void chunk(struct craft *c, unsigned type, unsigned flags, const struct tally_buf *p)
{
	if (tally_writer_chunk(&c->w, type, flags, p->data, p->len, 0) < 0 ||
	    tally_writer_flush(&c->w) < 0)
		die("write");
}

/* A chunk header followed by len bytes of payload, written as they are (no writer checks). */
void raw_chunk(struct craft *c, unsigned type, const void *payload, size_t declared, size_t written)
{
	uint8_t hdr[TALLY_CHUNK_HEADER_LEN], *whole = calloc(1, declared + 1);

	/* the payload check covers what was declared: the bytes never written count as zeros */
	if (!whole)
		die("calloc");
	memcpy(whole, payload, written < declared ? written : declared);
	tally_chunk_header(hdr, type, 0, c->w.seq++, whole, declared);
	free(whole);
	if (write(c->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    (written && write(c->fd, payload, written) != (ssize_t)written))
		die("write");
}

static uint8_t session_id[16]; /* the last section's */

void session(struct craft *c, const char *cmdline, size_t cmdlen)
{
	uint8_t *id = session_id;
	unsigned i;

	for (i = 0; i < 16; i++)
		id[i] = (uint8_t)(rand() >> 7);
	tally_buf_reset(&c->b);
	tally_kv_str(&c->b, TALLY_SK_WRITER, "tally-craft");
	tally_kv_str(&c->b, TALLY_SK_HOST, session_host);
	tally_kv_str(&c->b, TALLY_SK_RANK, session_rank);
	tally_kv_uint(&c->b, TALLY_SK_PID, 4242);
	tally_kv_bytes(&c->b, TALLY_SK_CMDLINE, cmdline, cmdlen);
	tally_kv_uint(&c->b, TALLY_SK_START_CUPTI, T0);
	tally_kv_uint(&c->b, TALLY_SK_START_REALTIME, T0);
	tally_kv_str(&c->b, TALLY_SK_SOURCE, "tally-craft");
	tally_kv_bytes(&c->b, TALLY_SK_SESSION_ID, id, sizeof(session_id));
	chunk(c, TALLY_CHUNK_SESSION, 0, &c->b);
}

/* STRINGS: ids first, first + 1, ... */
void strings(struct craft *c, uint32_t first, const char *const *s, const size_t *len, unsigned n)
{
	unsigned i;

	tally_buf_reset(&c->b);
	tally_buf_put_varint(&c->b, first);
	tally_buf_put_varint(&c->b, n);
	for (i = 0; i < n; i++) {
		tally_buf_put_varint(&c->b, len[i]);
		tally_buf_put(&c->b, s[i], len[i]);
	}
	chunk(c, TALLY_CHUNK_STRINGS, 0, &c->b);
}

void records(struct craft *c, const struct tally_record *r, size_t n)
{
	size_t i;

	tally_buf_reset(&c->b);
	if (tally_records_encode(&c->codec, &c->b, r[0].kind, r, n, TALLY_COLUMNS_ALL) < 0)
		die("encode");
	chunk(c, TALLY_CHUNK_RECORDS, 0, &c->b);
	for (i = 0; i < n; i++)
		c->by_kind[r[i].kind]++;
}

void ledger(struct craft *c, bool final, const struct tally_ledger *extra)
{
	struct tally_ledger l;

	if (extra)
		l = *extra;
	else
		memset(&l, 0, sizeof(l));
	l.t_begin = T0;
	l.t_end = T0 + 1000000000ull;
	for (unsigned k = 0; k < TALLY_KIND_MAX; k++) {
		l.v[TALLY_C_BY_KIND + k] = c->by_kind[k];
		l.v[TALLY_C_RECORDS_PARSED] += c->by_kind[k];
	}
	l.v[TALLY_C_FLUSH_COMPLETED] = final;
	tally_buf_reset(&c->b);
	tally_ledger_encode(&c->b, &l);
	chunk(c, TALLY_CHUNK_LEDGER, final ? TALLY_CHUNK_FLAG_FINAL : 0, &c->b);
}

struct tally_record kernel_rec(uint64_t start, uint64_t dur, uint32_t name, uint32_t corr)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_KERNEL;
	r.start = start;
	r.end = start + dur;
	r.name_id = name;
	r.correlation_id = corr;
	r.stream_id = 7;
	r.context_id = 1;
	r.grid[0] = r.grid[1] = r.grid[2] = 1;
	r.block[0] = r.block[1] = r.block[2] = 32;
	return r;
}

struct tally_record launch_rec(uint64_t start, uint32_t name, uint32_t corr)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_RUNTIME;
	r.start = start;
	r.end = start + 2000;
	r.name_id = name;
	r.correlation_id = corr;
	r.process_id = 4242;
	r.thread_id = 1;
	r.flags = TALLY_REC_LAUNCH;
	r.subkind = TALLY_API_LAUNCH;
	return r;
}

uint32_t plain_stack; /* the STACK of plain_trace's records: 0, or a case's stack id */

/* A small complete trace: kernels (named by id 1) and their launches (id 2). */
static void plain_trace(struct craft *c, const char *kname, size_t klen, unsigned n, uint64_t at,
			uint64_t step, uint64_t dur)
{
	const char *s[] = {kname, "cudaLaunchKernel"};
	size_t len[] = {klen, 16};
	struct tally_record k[16], a[16];
	unsigned i;

	strings(c, 1, s, len, 2);
	for (i = 0; i < n && i < 16; i++) {
		a[i] = launch_rec(at + i * step, 2, i + 1);
		k[i] = kernel_rec(at + i * step + 5000, dur, 1, i + 1);
		a[i].stack_id = k[i].stack_id = plain_stack;
	}
	records(c, a, i);
	records(c, k, i);
}

/* ---- the cases ------------------------------------------------------------------------------ */

static void rows_bomb(struct craft *c)
{
	session(c, "bomb", 4);
	tally_buf_reset(&c->b);
	tally_buf_put_varint(&c->b, TALLY_KIND_KERNEL);
	tally_buf_put_varint(&c->b, 64u << 20); /* rows */
	tally_buf_put_varint(&c->b, 3);		/* columns, each CONST */
	for (unsigned col = TALLY_COL_START; col <= TALLY_COL_CORRELATION; col++) {
		tally_buf_put_varint(&c->b, col);
		tally_buf_put_u8(&c->b, TALLY_ENC_CONST);
		tally_buf_put_varint(&c->b, 1);
		tally_buf_put_varint(&c->b, 2);
	}
	chunk(c, TALLY_CHUNK_RECORDS, 0, &c->b);
}

static void strings_bomb(struct craft *c)
{
	const char *s[] = {"x"};
	size_t len[] = {1};

	session(c, "bomb", 4);
	strings(c, (1u << 28) - 1, s, len, 1);
}

/* Headers every 32 bytes, each with a good header check and a payload length reaching to near
 * the end: a resynchronisation that hashed each candidate's payload would be quadratic. */
static void resync_bomb(struct craft *c)
{
	const size_t size = 4u << 20;
	uint8_t *junk = calloc(1, size);
	size_t off;

	if (!junk)
		die("calloc");
	session(c, "bomb", 4);
	for (off = 0; off + 2 * TALLY_CHUNK_HEADER_LEN <= size; off += TALLY_CHUNK_HEADER_LEN) {
		size_t len = size - off - TALLY_CHUNK_HEADER_LEN - 1;

		tally_chunk_header(junk + off, TALLY_CHUNK_RECORDS, 0, 5, "", 0);
		junk[off + 8] = (uint8_t)len;
		junk[off + 9] = (uint8_t)(len >> 8);
		junk[off + 10] = (uint8_t)(len >> 16);
		junk[off + 11] = (uint8_t)(len >> 24);
		/* the header check covers the length: recompute it */
		uint32_t check = (uint32_t)tally_checksum(junk + off, 28);
		memcpy(junk + off + 28, &check, 4);
	}
	if (write(c->fd, junk, size) != (ssize_t)size)
		die("write");
	free(junk);
}

static char *b36(unsigned n, char *out)
{
	const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	char tmp[16];
	int k = 0;

	do {
		tmp[k++] = digits[n % 36];
		n /= 36;
	} while (n);
	for (int i = 0; i < k; i++)
		out[i] = tmp[k - 1 - i];
	out[k] = '\0';
	return out;
}

/* _Z1fI 1BI <inner(n-1)> S<n-1>_ E EvT_, inner(k) = S_I <inner(k-1)> S<k-1>_ E: each level
 * repeats the one below through a back-reference, so the demangled text doubles per level. */
static void demangle_bomb(struct craft *c)
{
	const unsigned levels = 40;
	char name[2048] = "_Z1fI1BI", sub[16], *p;
	unsigned k;

	for (k = 1; k < levels - 1; k++)
		strcat(name, "S_I");
	strcat(name, "1A");
	for (k = 0; k < levels - 1; k++) {
		p = name + strlen(name);
		sprintf(p, "S%s_E", b36(k, sub));
	}
	strcat(name, "EvT_");
	session(c, "bomb", 4);
	plain_trace(c, name, strlen(name), 1, T0 + 1000, 10000, 3000);
	ledger(c, true, NULL);
}

static void partial(struct craft *c, bool past_eof)
{
	uint8_t junk[100];
	struct tally_record k[3];

	memset(junk, 0xab, sizeof(junk));
	session(c, "partial", 7);
	plain_trace(c, "_Z4workv", 8, 3, T0 + 1000, 10000, 3000);
	/* what a failed write leaves: a header, then less payload than it declares */
	raw_chunk(c, TALLY_CHUNK_RECORDS, junk, past_eof ? (1u << 24) : 1000, sizeof(junk));
	for (unsigned i = 0; i < 3; i++)
		k[i] = kernel_rec(T0 + 100000 + i * 10000, 3000, 1, 0);
	records(c, k, 3);
	ledger(c, true, NULL);
}

static void control_chars(struct craft *c)
{
	static const char cmd[] = "prog\n  verdict   COMPLETE\n\033[8m";

	session_host = "node\033[2J";
	session_rank = "RANK=0\n  verdict   COMPLETE";
	session(c, cmd, sizeof(cmd) - 1);
	plain_trace(c, "_Z4workv", 8, 1, T0 + 1000, 10000, 3000);
	/* no final ledger: the real verdict is INCOMPLETE */
}

static void bad_text(struct craft *c)
{
	static const char cmd[] = "prog\0--name\0caf\xe9\xff";
	const char *s[] = {"_Z4workv", "cudaLaunchKernel", "range \xfe\xff end", NULL};
	size_t len[] = {8, 16, 13, 5000};
	char *long_text = malloc(5000);
	struct tally_record r[2];

	memset(long_text, 'n', 5000);
	s[3] = long_text;
	session(c, cmd, sizeof(cmd) - 1);
	strings(c, 1, s, len, 4);
	for (unsigned i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].kind = TALLY_KIND_NVTX_RANGE;
		r[i].start = T0 + 1000 + i * 5000;
		r[i].end = r[i].start + 2000;
		r[i].name_id = 3 + i;
		r[i].process_id = 4242;
		r[i].thread_id = 1;
		r[i].flags = i ? TALLY_REC_TEXT_TRUNCATED : 0;
	}
	records(c, r, 2);
	ledger(c, true, NULL);
	free(long_text);
}

/* What a newer minor version could write: an extra column and an extra ledger counter. */
static void future(struct craft *c)
{
	struct tally_record k = kernel_rec(T0 + 1000, 3000, 1, 1);
	const char *s[] = {"_Z4workv"};
	size_t len[] = {8};
	struct tally_ledger l;
	size_t begin;

	session(c, "future", 6);
	strings(c, 1, s, len, 1);
	tally_buf_reset(&c->b);
	begin = c->b.len;
	tally_records_encode(&c->codec, &c->b, TALLY_KIND_KERNEL, &k, 1, TALLY_COLUMNS_ALL);
	c->b.data[begin + 2]++; /* one column more: kind and rows are one byte each here */
	tally_buf_put_varint(&c->b, 60);
	tally_buf_put_u8(&c->b, TALLY_ENC_CONST);
	tally_buf_put_varint(&c->b, 1);
	tally_buf_put_varint(&c->b, 84); /* zigzag 42 */
	chunk(c, TALLY_CHUNK_RECORDS, 0, &c->b);
	c->by_kind[TALLY_KIND_KERNEL] = 1;
	memset(&l, 0, sizeof(l));
	l.unknown_counters = 1;
	l.unknown[0].id = 250;
	l.unknown[0].value = 7;
	ledger(c, true, &l);
}

static void early_records(struct craft *c)
{
	session(c, "early", 5);
	plain_trace(c, "_Z4workv", 8, 3, T0 - 10000000000ull, 10000, 3000);
	ledger(c, true, NULL);
}

/* Kernels 1-3 name id 2 before any STRINGS chunk defines it (id 3 is defined, so the readers'
 * table reaches past it); the chunk defining it comes next, then kernels 4-5 of the same name. */
static void strings_late(struct craft *c)
{
	const char *api[] = {"cudaLaunchKernel"}, *other[] = {"_Z5otherv"},
		   *late[] = {"_Z9late_namev"};
	size_t api_len[] = {16}, other_len[] = {9}, late_len[] = {13};
	struct tally_record k[5], a[5];
	unsigned i;

	session(c, "strings-late", 12);
	strings(c, 1, api, api_len, 1);
	strings(c, 3, other, other_len, 1);
	for (i = 0; i < 5; i++) {
		a[i] = launch_rec(T0 + 1000 + i * 20000ull, 1, i + 1);
		k[i] = kernel_rec(T0 + 6000 + i * 20000ull, 3000, 2, i + 1);
	}
	records(c, a, 3);
	records(c, k, 3);
	strings(c, 2, late, late_len, 1);
	records(c, a + 3, 2);
	records(c, k + 3, 2);
	ledger(c, true, NULL);
}

static void overlap(struct craft *c)
{
	session(c, "overlap", 7);
	/* each kernel starts 4 us after the last and runs 10 us: they overlap on stream 7 */
	plain_trace(c, "_Z4workv", 8, 5, T0 + 1000, 4000, 10000);
	ledger(c, true, NULL);
}

static void enospc(struct craft *c)
{
	struct tally_ledger l;

	session(c, "enospc", 6);
	plain_trace(c, "_Z4workv", 8, 2, T0 + 1000, 10000, 3000);
	memset(&l, 0, sizeof(l));
	l.v[TALLY_C_WRITE_FAILURES] = 3;
	l.v[TALLY_C_WRITE_ERRNO] = ENOSPC;
	ledger(c, false, &l);
}

/* ---- call stacks, memory, drops (1.2) ------------------------------------------------------- */

/* The FRAMES or STACKS chunk of what t holds. */
void pending_chunk(struct craft *c, unsigned type, struct tally_pending_table *t)
{
	tally_buf_reset(&c->b);
	if (tally_pending_take(t, &c->b))
		chunk(c, type, 0, &c->b);
	tally_pending_fini(t);
}

static void stacks_bomb(struct craft *c)
{
	const uint64_t first = (1u << 24) - 2;

	for (unsigned sec = 0; sec < 8; sec++) {
		session(c, "bomb", 4);
		tally_buf_reset(&c->b); /* one native frame: type, line, pc, no file, no function */
		tally_buf_put_varint(&c->b, first);
		tally_buf_put_varint(&c->b, 1);
		tally_buf_put_varint(&c->b, TALLY_FRAME_NATIVE);
		tally_buf_put_varint(&c->b, 0);
		tally_buf_put_varint(&c->b, 0x401000);
		tally_buf_put_varint(&c->b, 0);
		tally_buf_put_varint(&c->b, 0);
		chunk(c, TALLY_CHUNK_FRAMES, 0, &c->b);
		tally_buf_reset(&c->b); /* one stack of that frame */
		tally_buf_put_varint(&c->b, first);
		tally_buf_put_varint(&c->b, 1);
		tally_buf_put_varint(&c->b, 1);
		tally_buf_put_varint(&c->b, first);
		chunk(c, TALLY_CHUNK_STACKS, 0, &c->b);
	}
}

/* Kernels launched from train.py:12 through a native frame of the module at path ARG. */
static void module(struct craft *c)
{
	struct tally_pending_table frames = {0}, stacks = {0};
	uint32_t f[2];

	session(c, "module", 6);
	f[0] = tally_frame_put(&frames, TALLY_FRAME_NATIVE, 0, 0x401234, NULL, 0, NULL, 0);
	f[1] = tally_frame_put(&frames, TALLY_FRAME_PYTHON, 12, 0, "train.py", 8, "step", 4);
	plain_stack = tally_stack_put(&stacks, f, 2);
	pending_chunk(c, TALLY_CHUNK_FRAMES, &frames);
	pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
	tally_buf_reset(&c->b);
	tally_module_put(&c->b, 0, 0x400000, 0x500000, case_arg ? case_arg : "/nonexistent/lib.so",
			 NULL);
	chunk(c, TALLY_CHUNK_MODULES, 0, &c->b);
	plain_trace(c, "_Z4workv", 8, 3, T0 + 1000, 10000, 3000);
	ledger(c, true, NULL);
}

/* Frames of three modules (with build IDs, one without, one of 1.3), named by a SYMBOLS chunk
 * at the end, as tally record appends it: its payload ends with its own length. */
static void symbols(struct craft *c)
{
	static const uint8_t id[20] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa,
				       0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x01, 0x02, 0x03, 0x04};
	struct tally_module_facts with = {id, sizeof(id), 123456}, without = {NULL, 0, 99};
	struct tally_symbols_info info = {.present = true, .has_session_id = true};
	struct tally_pending_table frames = {0}, stacks = {0};
	struct tally_buf entries = {0};
	uint32_t f[4], prev = 0;

	session(c, "symbols", 7);
	f[0] = tally_frame_put(&frames, TALLY_FRAME_NATIVE_PC, 0, 0x401234, NULL, 0, NULL, 0);
	f[1] = tally_frame_put(&frames, TALLY_FRAME_NATIVE, 0, 0x7f0000001000, NULL, 0, NULL, 0);
	f[2] = tally_frame_put(&frames, TALLY_FRAME_NATIVE, 0, 0x600010, NULL, 0, NULL, 0);
	f[3] = tally_frame_put(&frames, TALLY_FRAME_PYTHON, 12, 0, "train.py", 8, "step", 4);
	plain_stack = tally_stack_put(&stacks, f, 4);
	pending_chunk(c, TALLY_CHUNK_FRAMES, &frames);
	pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
	tally_buf_reset(&c->b);
	tally_module_put(&c->b, 0, 0x400000, 0x500000, "/nonexistent/app\033[2J", &with);
	tally_module_put(&c->b, 0x7f0000000000, 0x7f0000000000, 0x7f0000100000,
			 "/nonexistent/libnoid.so", &without);
	tally_module_put(&c->b, 0, 0x600000, 0x700000, "/nonexistent/libold.so", NULL);
	chunk(c, TALLY_CHUNK_MODULES, 0, &c->b);
	plain_trace(c, "_Z4workv", 8, 3, T0 + 1000, 10000, 3000);
	ledger(c, true, NULL);
	tally_symbol_put(&entries, &prev, f[0], 0, 12, "_Z6crunchd", "crunch.cu\033]0;x\a");
	tally_symbol_put(&entries, &prev, f[1], TALLY_SYMF_UNVERIFIED, 0, "helper", "");
	tally_symbol_put(&entries, &prev, f[3], 0, 7, "not_python", "x.py");
	tally_symbol_put(&entries, &prev, 1000, 0, 1, "no_such_frame", "");
	memcpy(info.session_id, session_id, sizeof(session_id));
	info.state = TALLY_SYMBOLS_CUT;
	info.frames = 3;
	info.named = 2;
	info.bound_ns = 1000;
	tally_buf_reset(&c->b);
	tally_symbols_payload(&c->b, 4, &entries, &info);
	chunk(c, TALLY_CHUNK_SYMBOLS, 0, &c->b);
	tally_buf_fini(&entries);
}

static uint8_t hex_digit(char ch)
{
	return (uint8_t)(ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10);
}

/* foreign-module PATH,BUILD_ID,SIZE,OFFSET */
static void foreign_module(struct craft *c)
{
	char *arg = strdup(case_arg ? case_arg : ""), *save = NULL;
	char *path = strtok_r(arg, ",", &save), *hex = strtok_r(NULL, ",", &save);
	char *size = strtok_r(NULL, ",", &save), *offset = strtok_r(NULL, ",", &save);
	struct tally_pending_table frames = {0}, stacks = {0};
	uint8_t id[TALLY_BUILD_ID_MAX];
	struct tally_module_facts facts = {id, 0, 0};
	const uint64_t base = 0x7f0000000000ull;
	uint32_t f;

	if (!path || !hex || !size || !offset)
		die("foreign-module PATH,BUILD_ID|-|none,SIZE,OFFSET");
	for (; strcmp(hex, "none") != 0 && hex[0] && hex[1] && facts.build_id_len < sizeof(id);
	     hex += 2)
		id[facts.build_id_len++] = (uint8_t)(hex_digit(hex[0]) << 4 | hex_digit(hex[1]));
	facts.file_size = strtoull(size, NULL, 10);
	session(c, "foreign-module", 14);
	f = tally_frame_put(&frames, TALLY_FRAME_NATIVE_PC, 0, base + strtoull(offset, NULL, 16),
			    NULL, 0, NULL, 0);
	plain_stack = tally_stack_put(&stacks, &f, 1);
	pending_chunk(c, TALLY_CHUNK_FRAMES, &frames);
	pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
	tally_buf_reset(&c->b);
	tally_module_put(&c->b, base, base, base + (1ull << 32), path,
			 strcmp(hex, "-") == 0 ? NULL : &facts);
	chunk(c, TALLY_CHUNK_MODULES, 0, &c->b);
	plain_trace(c, "_Z4workv", 8, 3, T0 + 1000, 10000, 3000);
	ledger(c, true, NULL);
	free(arg);
}

static struct tally_record memory_rec(uint64_t at, unsigned op, uint32_t device, uint64_t address,
				      uint64_t bytes)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_MEMORY;
	r.start = r.end = at;
	r.subkind = op;
	r.src_kind = 3; /* device memory */
	r.device_id = device;
	r.context_id = 1;
	r.process_id = 4242;
	r.address = address;
	r.bytes = bytes;
	return r;
}

/* Releases with no allocation seen (device 0); 3 allocations of 2^63 bytes (device 1); copies of
 * 2^63 bytes each: every byte total passes 2^64. */
static void memory(struct craft *c)
{
	struct tally_record m[6], k[3];
	const uint64_t half = 1ull << 63;
	unsigned i;

	session(c, "memory", 6);
	for (i = 0; i < 3; i++) {
		m[i] = memory_rec(T0 + 1000 + i * 1000, TALLY_MEM_RELEASE, 0,
				  0x7f0000000000 + i * 4096, 4096);
		m[3 + i] = memory_rec(T0 + 5000 + i * 1000, TALLY_MEM_ALLOC, 1,
				      0x7e0000000000 + i * 4096, half);
	}
	records(c, m, 6);
	for (i = 0; i < 3; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		k[i].kind = TALLY_KIND_MEMCPY;
		k[i].start = T0 + 10000 + i * 10000;
		k[i].end = k[i].start + 3000;
		k[i].bytes = half;
		k[i].subkind = 1; /* host to device */
		k[i].stream_id = 7;
		k[i].context_id = 1;
	}
	records(c, k, 3);
	ledger(c, true, NULL);
}

/* A column of kind KERNEL, CONST v. */
static void const_column(struct tally_buf *b, unsigned col, uint64_t v)
{
	struct tally_buf one = {0};

	tally_buf_put_varint(&one, tally_zigzag((int64_t)v));
	tally_buf_put_varint(b, col);
	tally_buf_put_u8(b, TALLY_ENC_CONST);
	tally_buf_put_varint(b, one.len);
	tally_buf_put(b, one.data, one.len);
	tally_buf_fini(&one);
}

/* Ids past 32 bits (STACK, DEVICE) in one kernel; a kernel timed past 2^63 ns in another. */
static void big_ids(struct craft *c)
{
	const uint64_t wide = (1ull << 32) + 1, late = UINT64_MAX - 1000000000000ull;
	struct tally_record k;

	session(c, "big-ids", 7);
	plain_trace(c, "_Z4workv", 8, 1, T0 + 1000, 10000, 3000); /* device 0, stack 0 */
	tally_buf_reset(&c->b);
	tally_buf_put_varint(&c->b, TALLY_KIND_KERNEL);
	tally_buf_put_varint(&c->b, 1); /* rows */
	tally_buf_put_varint(&c->b, 6); /* columns */
	const_column(&c->b, TALLY_COL_START, T0 + 50000);
	const_column(&c->b, TALLY_COL_DURATION, 3000);
	const_column(&c->b, TALLY_COL_NAME, 1);
	const_column(&c->b, TALLY_COL_DEVICE, wide);
	const_column(&c->b, TALLY_COL_STREAM, 7);
	const_column(&c->b, TALLY_COL_STACK, wide);
	chunk(c, TALLY_CHUNK_RECORDS, 0, &c->b);
	k = kernel_rec(late, 3000, 1, 0);
	records(c, &k, 1);
	c->by_kind[TALLY_KIND_KERNEL]++; /* the raw chunk's */
	ledger(c, true, NULL);
}

static void drops(struct craft *c)
{
	static const struct tally_drops entries[] = {
	    {TALLY_DROPS_GLOBAL, 0, 0, 0, 5},
	    {TALLY_DROPS_CONTEXT, 1, 0, 7, 3},
	    {TALLY_DROPS_SEEN, 1, 0, 0, 10},
	};
	struct tally_ledger l;

	session(c, "drops", 5);
	plain_trace(c, "_Z4workv", 8, 3, T0 + 1000, 10000, 3000);
	tally_buf_reset(&c->b);
	for (unsigned i = 0; i < 3; i++)
		tally_drops_put(&c->b, &entries[i]);
	chunk(c, TALLY_CHUNK_DROPS, 0, &c->b);
	memset(&l, 0, sizeof(l));
	l.v[TALLY_C_DROPPED_CUPTI] = 5;
	ledger(c, true, &l);
}

/* 4096 runtime calls named by one 1 MiB name: a table padded to it would be gigabytes. */
static void long_name(struct craft *c)
{
	const size_t len = 1u << 20;
	static struct tally_record r[4096];
	char *name = malloc(len);
	const char *s[1];
	size_t slen[1] = {len};
	unsigned i;

	if (!name)
		die("malloc");
	memset(name, 'A', len);
	memcpy(name, "cudaLong", 8);
	s[0] = name;
	session(c, "long", 4);
	strings(c, 1, s, slen, 1);
	for (i = 0; i < 4096; i++) {
		r[i] = launch_rec(T0 + 1000 + i * 3000ull, 1, 0);
		r[i].flags = 0;
		r[i].subkind = TALLY_API_OTHER;
	}
	records(c, r, 4096);
	ledger(c, true, NULL);
	free(name);
}

/* Text that would drive a terminal: a title change and an OSC 52 clipboard write (ESC ... BEL),
 * backspaces and a carriage return over the line, CSI as the raw C1 byte 0x9B and as U+009B,
 * a right-to-left override (U+202E), and bytes that are not UTF-8. */
static void escapes(struct craft *c)
{
	static const char kname[] = "_Z4work\033]0;pwned\007\033]52;c;SGVsbG8=\007v";
	static const char api[] = "cudaLaunchKernel\b\b\b\b\rfake\xc2\x9b"
				  "2J\x9b"
				  "31m";
	static const char nvtx[] = "step \xe2\x80\xae"
				   "gnp.exe \xff\xfe end";
	static const char cmd[] = "prog\033[2J\0--x\xe2\x80\xae";
	const char *s[] = {kname, api, nvtx};
	size_t len[] = {sizeof(kname) - 1, sizeof(api) - 1, sizeof(nvtx) - 1};
	struct tally_record k[2], a[2], n[2];
	unsigned i;

	session_host = "node\xc2\x9b"
		       "2J";
	session_rank = "0\033[8m";
	session(c, cmd, sizeof(cmd) - 1);
	strings(c, 1, s, len, 3);
	for (i = 0; i < 2; i++) {
		a[i] = launch_rec(T0 + 1000 + i * 10000, 2, i + 1);
		k[i] = kernel_rec(T0 + 6000 + i * 10000, 3000, 1, i + 1);
		memset(&n[i], 0, sizeof(n[i]));
		n[i].kind = TALLY_KIND_NVTX_RANGE;
		n[i].start = T0 + 500 + i * 10000;
		n[i].end = n[i].start + 9000;
		n[i].name_id = 3;
		n[i].process_id = 4242;
		n[i].thread_id = 1;
	}
	records(c, a, 2);
	records(c, k, 2);
	records(c, n, 2);
	ledger(c, true, NULL);
}

static void header_only(struct craft *c)
{
	(void)c; /* main wrote the preamble */
}

static void header_junk(struct craft *c)
{
	uint8_t junk[4096];

	memset(junk, 0x5a, sizeof(junk));
	if (write(c->fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
		die("write");
}

static void note_overhead(struct craft *c)
{
	struct tally_record r[2];

	session(c, "note", 4);
	tally_buf_reset(&c->b);
	tally_kv_uint(&c->b, TALLY_NK_TIME, T0 + 500);
	tally_kv_uint(&c->b, TALLY_NK_SEVERITY, TALLY_NOTE_WARNING);
	tally_kv_str(&c->b, TALLY_NK_CODE, "crafted");
	tally_kv_str(&c->b, TALLY_NK_TEXT, "a note\033[2J with an escape");
	chunk(c, TALLY_CHUNK_NOTE, 0, &c->b);
	for (unsigned i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].kind = TALLY_KIND_OVERHEAD;
		r[i].start = T0 + 1000 + i * 5000;
		r[i].end = r[i].start + 700;
		r[i].process_id = 4242;
		r[i].subkind = 1;
	}
	records(c, r, 2);
	ledger(c, true, NULL);
}

void metrics_chunk(struct craft *c, const struct tally_gpu_metrics *g)
{
	tally_buf_reset(&c->b);
	tally_gpu_metrics_encode(&c->b, g);
	chunk(c, TALLY_CHUNK_GPU_METRICS, 0, &c->b);
}

struct tally_record metric_rec(uint64_t at, uint64_t dur, uint32_t device, uint32_t name,
			       unsigned scale, int64_t value, uint32_t sample)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_GPU_METRIC;
	r.start = at;
	r.end = at + dur;
	r.device_id = device;
	r.name_id = name;
	r.subkind = scale;
	r.metric_value = value;
	r.correlation_id = sample;
	return r;
}

static void metrics(struct craft *c)
{
	struct tally_metric_desc set[] = {
	    {3, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "%", "SM \033[2JActive"},
	    {0, "dram__bytes_read.sum.per_second", "bytes/s", "DRAM Read"},
	};
	struct tally_gpu_metrics sampled = {.device = 0,
					    .state = TALLY_GM_SAMPLED,
					    .chip = "GH100",
					    .interval = 100000,
					    .trigger = TALLY_GM_TRIGGER_TIME,
					    .hw_buffer = 1u << 20,
					    .passes = 1,
					    .metrics = set,
					    .nmetrics = 2};
	struct tally_gpu_metrics elsewhere = {.device = 1,
					      .state = TALLY_GM_ELSEWHERE,
					      .why = "another process samples it",
					      .holder_pid = 4343,
					      .holder_host = "node\xc2\x9b"
							     "2J",
					      .holder_file = "/tmp/other\342\200\256.tally"};
	const char *s[] = {set[0].name, set[1].name};
	size_t len[] = {strlen(set[0].name), strlen(set[1].name)};
	struct tally_record r[8];
	struct tally_buf loss = {0};

	session(c, "metrics", 7);
	strings(c, 1, s, len, 2);
	metrics_chunk(c, &sampled);
	metrics_chunk(c, &elsewhere);
	r[0] = metric_rec(T0 + 1000, 100000, 0, 1, 3, 55123, 1);
	r[1] = metric_rec(T0 + 1000, 100000, 0, 2, 0, INT64_MAX, 1);
	r[2] = metric_rec(T0 + 101000, 100000, 0, 1, 3, INT64_MIN, 2);
	r[3] = metric_rec(T0 + 101000, 100000, 0, 2, 255, 7, 2); /* a scale no double holds */
	r[4] = metric_rec(T0 + 201000, 0, 0, 1, 3, 1000, 3);	 /* no duration */
	r[5] = metric_rec(T0 + 201000, 0, 0, 2, 0, -5, 3);
	r[6] = metric_rec(T0 + 901000, 100000, 0, 1, 3, 2000, 9); /* after a gap */
	r[6].value = TALLY_METRIC_AFTER_GAP;
	r[7] = metric_rec(T0 + 5000, 100000, 7, 1, 3, 1, 1); /* a device no chunk describes */
	records(c, r, 8);
	tally_loss_put(&loss, T0 + 301000, T0 + 901000, TALLY_C_METRIC_GAPS,
		       1); /* the gap, exactly */
	chunk(c, TALLY_CHUNK_LOSS, 0, &loss);
	tally_buf_fini(&loss);
	ledger(c, true, NULL);
}

void thread_entry(struct tally_buf *b, uint64_t tid, uint64_t pthread_id, unsigned flags,
		  const char *name)
{
	tally_thread_put(b, tid, pthread_id, flags, name, strlen(name));
}

struct tally_record host_rec(unsigned kind, uint64_t at, uint64_t dur, uint32_t tid)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.start = at;
	r.end = at + dur;
	r.thread_id = tid;
	r.process_id = 4242;
	return r;
}

static void host_samples(struct craft *c)
{
	struct tally_pending_table frames = {0}, stacks = {0};
	const char *s[] = {"pthread_mutex_lock", "poll"}, *file = "train\033[2J.py";
	size_t len[] = {18, 4};
	struct tally_record r[8];
	uint32_t f[2], stack;

	session(c, "samples", 7);
	strings(c, 1, s, len, 2);
	f[0] = tally_frame_put(&frames, TALLY_FRAME_PYTHON, 7, 0, file, strlen(file), "step", 4);
	f[1] = tally_frame_put(&frames, TALLY_FRAME_NATIVE, 0, 0x401234, NULL, 0, NULL, 0);
	stack = tally_stack_put(&stacks, f, 2);
	pending_chunk(c, TALLY_CHUNK_FRAMES, &frames);
	pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
	tally_buf_reset(&c->b);
	thread_entry(&c->b, 4242, 0x7f0000001000ull, TALLY_THREADF_MAIN | TALLY_THREADF_PYTHON,
		     "python\033]0;t\007");
	thread_entry(&c->b, 4243, 0x7f0000002000ull, TALLY_THREADF_TALLY, "tally-sampler");
	thread_entry(&c->b, 4244, 0, TALLY_THREADF_EXITED, "gone\xe2\x80\xae");
	chunk(c, TALLY_CHUNK_THREADS, 0, &c->b);
	tally_buf_reset(&c->b); /* a tid no kernel hands out: its chunk is damage */
	thread_entry(&c->b, (1ull << 32) + 4242, 1, 0, "wide");
	chunk(c, TALLY_CHUNK_THREADS, 0, &c->b);
	for (unsigned i = 0; i < 5; i++) {
		r[i] =
		    host_rec(TALLY_KIND_CPU_SAMPLE, T0 + 1000 + i * 10000, 0, i < 4 ? 4242 : 4299);
		r[i].subkind = i % 3 + 1; /* python, perf, timer */
		r[i].value = i;		  /* every state, and one no table knows */
		r[i].stack_id = i == 3 ? 0 : stack;
		r[i].flags = i == 3 ? TALLY_REC_TORN : 0;
	}
	records(c, r, 5);
	r[5] = host_rec(TALLY_KIND_OSRT, T0 + 2000, 5000000, 4242);
	r[5].cbid = TALLY_OSRT_PTHREAD_MUTEX_LOCK;
	r[5].name_id = 1;
	r[5].address = 0x7ffd0000;
	r[6] = host_rec(TALLY_KIND_OSRT, T0 + 3000, 1ull << 63, 4243); /* a call of 2^63 ns */
	r[6].cbid = TALLY_OSRT_POLL;
	r[6].name_id = 2;
	r[6].value = 0xffffffffu;
	r[6].subkind = 4; /* EINTR */
	r[7] = host_rec(TALLY_KIND_OSRT, T0 + 4000, 1000, 4242);
	r[7].cbid = 999; /* no table knows it */
	records(c, r + 5, 3);
	ledger(c, true, NULL);
}

static void processes(struct craft *c)
{
	char name[32];
	unsigned i;

	session(c, "processes", 9);
	plain_trace(c, "_Z4workv", 8, 1, T0 + 1000, 10000, 3000);
	tally_buf_reset(&c->b);
	tally_processes_put(&c->b, UINT64_MAX - 1);
	tally_process_put(&c->b, 3, "bash\033[2J\xff");
	tally_process_put(&c->b, 1, "a-name-longer-than-a-comm-holds");
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "helper-%u", i);
		tally_process_put(&c->b, 1, name);
	}
	chunk(c, TALLY_CHUNK_PROCESSES, 0, &c->b);
	tally_buf_reset(&c->b);
	tally_processes_put(&c->b, 5);
	tally_process_put(&c->b, 5, "readlink");
	chunk(c, TALLY_CHUNK_PROCESSES, 0, &c->b);
	ledger(c, true, NULL);
}

unsigned count_arg(void)
{
	long n = case_arg ? strtol(case_arg, NULL, 10) : 0;

	if (n < 1 || n > (1l << 22)) {
		fprintf(stderr, "tally-craft: this case takes a count, 1 to 4194304\n");
		exit(2);
	}
	return (unsigned)n;
}

/* Kernels in batches of up to 16384 records, each launch then its kernel. */
void kernels_batched(struct craft *c, unsigned n, uint32_t (*name)(unsigned i),
		     uint32_t (*stack)(unsigned i))
{
	static struct tally_record a[16384], k[16384];
	unsigned i, b;

	for (i = 0; i < n; i += b) {
		for (b = 0; b < 16384 && i + b < n; b++) {
			uint64_t at = T0 + 1000 + (uint64_t)(i + b) * 10000;

			a[b] = launch_rec(at, 1, i + b + 1);
			k[b] = kernel_rec(at + 5000, 3000, name(i + b), i + b + 1);
			a[b].stack_id = k[b].stack_id = stack ? stack(i + b) : 0;
		}
		records(c, a, b);
		records(c, k, b);
	}
}

static uint32_t name_of_own(unsigned i)
{
	return i + 2;
}

static uint32_t stack_of_own(unsigned i)
{
	return i + 1;
}

static uint32_t name_shared(unsigned i)
{
	(void)i;
	return 2;
}

/* ARG kernels named _Z6kernelIXLiNEEEvv (kernel<N>), each its own; launches named by id 1. */
static void names(struct craft *c)
{
	unsigned n = count_arg(), i;
	const char **s = calloc(n + 1, sizeof(*s));
	size_t *len = calloc(n + 1, sizeof(*len));
	char *text = malloc((size_t)(n + 1) * 32);

	if (!s || !len || !text)
		die("calloc");
	s[0] = "cudaLaunchKernel";
	len[0] = 16;
	for (i = 0; i < n; i++) {
		s[i + 1] = text + (size_t)i * 32;
		len[i + 1] = (size_t)snprintf(text + (size_t)i * 32, 32, "_Z6kernelILi%uEEvv", i);
	}
	session(c, "names", 5);
	strings(c, 1, s, len, n + 1);
	kernels_batched(c, n, name_of_own, NULL);
	ledger(c, true, NULL);
	free(s);
	free(len);
	free(text);
}

/* ARG kernels, each launched from a stack of its own: a native frame in one of ARG / 16 modules
 * (none of them on disk: labelled module+0xoffset) under a Python frame of its own line. */
static void stack_ids(struct craft *c)
{
	struct tally_pending_table frames = {0}, stacks = {0};
	unsigned n = count_arg(), nmod = n / 16 ? n / 16 : 1, i;
	const char *s[] = {"cudaLaunchKernel", "_Z4workv"};
	size_t len[] = {16, 8};
	char path[64];

	if (nmod > TALLY_MODULES_MAX)
		nmod = TALLY_MODULES_MAX;
	session(c, "stacks", 6);
	strings(c, 1, s, len, 2);
	tally_buf_reset(&c->b);
	for (i = 0; i < nmod; i++) {
		snprintf(path, sizeof(path), "/nonexistent/libm%u.so", i);
		tally_module_put(&c->b, 0x10000000ull * (i + 1), 0x10000000ull * (i + 1),
				 0x10000000ull * (i + 2), path, NULL);
	}
	chunk(c, TALLY_CHUNK_MODULES, 0, &c->b);
	for (i = 0; i < n; i++) {
		uint32_t f[2];

		f[0] =
		    tally_frame_put(&frames, TALLY_FRAME_NATIVE, 0,
				    0x10000000ull * (i % nmod + 1) + 16 * i + 8, NULL, 0, NULL, 0);
		f[1] = tally_frame_put(&frames, TALLY_FRAME_PYTHON, i + 1, 0, "train.py", 8, "step",
				       4);
		tally_stack_put(&stacks, f, 2);
		if (frames.entries.len > (1u << 20) || i + 1 == n) {
			pending_chunk(c, TALLY_CHUNK_FRAMES, &frames);
			pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
			frames.next_id = 2 * (i + 1) + 1; /* fini cleared them: the ids go on */
			stacks.next_id = i + 2;
		}
	}
	kernels_batched(c, n, name_shared, stack_of_own);
	ledger(c, true, NULL);
}

static uint32_t name_every_100th(unsigned i)
{
	return i % 100 == 99 ? 3 : 2;
}

static void edits(struct craft *c)
{
	unsigned n = count_arg();
	const char *s[] = {"cudaLaunchKernel", "_Z4workv", "_Z5otherv"};
	size_t len[] = {16, 8, 9};

	session(c, "edits", 5);
	strings(c, 1, s, len, 3);
	kernels_batched(c, n, name_every_100th, NULL);
	ledger(c, true, NULL);
}

static const struct craft_case cases[] = {
    {"rows-bomb", rows_bomb},
    {"strings-bomb", strings_bomb},
    {"resync-bomb", resync_bomb},
    {"demangle-bomb", demangle_bomb},
    {"partial-mid", NULL},
    {"partial-eof", NULL},
    {"control-chars", control_chars},
    {"bad-text", bad_text},
    {"future", future},
    {"early-records", early_records},
    {"strings-late", strings_late},
    {"overlap", overlap},
    {"enospc", enospc},
    {"stacks-bomb", stacks_bomb},
    {"module", module},
    {"memory", memory},
    {"big-ids", big_ids},
    {"drops", drops},
    {"long-name", long_name},
    {"escapes", escapes},
    {"header-only", header_only},
    {"header-junk", header_junk},
    {"names", names},
    {"stack-ids", stack_ids},
    {"edits", edits},
    {"note-overhead", note_overhead},
    {"metrics", metrics},
    {"host-samples", host_samples},
    {"processes", processes},
    {"symbols", symbols},
    {"foreign-module", foreign_module},
};

/* One file: the preamble, then what the case writes. */
static void craft_file(const struct craft_case *which, const char *path)
{
	struct tally_sink sink;
	struct craft c;

	memset(&c, 0, sizeof(c));
	c.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c.fd < 0)
		die(path);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)c.fd, NULL, NULL};
	if (tally_writer_init(&c.w, &sink, 1) < 0 || tally_writer_preamble(&c.w) < 0 ||
	    tally_writer_flush(&c.w) < 0)
		die("writer");
	if (which->make)
		which->make(&c);
	else
		partial(&c, strcmp(which->name, "partial-eof") == 0);
	tally_writer_flush(&c.w);
	tally_writer_fini(&c.w);
	tally_codec_fini(&c.codec);
	tally_buf_fini(&c.b);
	close(c.fd);
}

static const struct craft_case *find_case(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(name, cases[i].name) == 0)
			return &cases[i];
	for (i = 0; i < craft_hostile_count; i++)
		if (strcmp(name, craft_hostile_cases[i].name) == 0)
			return &craft_hostile_cases[i];
	fprintf(stderr, "tally-craft: unknown case %s\n", name);
	exit(2);
}

/* files ARG: OUT is a directory of ARG small traces (rank0000.tally ...), one process each. */
static void craft_files(const char *dir)
{
	unsigned n = count_arg(), i;
	const struct craft_case *overlap_case = find_case("overlap");
	char path[4096], rank[32];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die(dir);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/rank%05u.tally", dir, i);
		snprintf(rank, sizeof(rank), "RANK=%u", i);
		session_rank = rank;
		craft_file(overlap_case, path);
	}
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: tally-craft CASE OUT [ARG]\n");
		return 2;
	}
	case_arg = argc == 4 ? argv[3] : NULL;
	srand((unsigned)getpid());
	if (strcmp(argv[1], "files") == 0)
		craft_files(argv[2]);
	else
		craft_file(find_case(argv[1]), argv[2]);
	return 0;
}
