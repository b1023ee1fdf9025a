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
 *   future          a RECORDS column (id 60) and a ledger counter (id 90) this reader does not know
 *   early-records   records 10 s before the session's start
 *   overlap         5 kernels on one stream, each overlapping the next (and their launches)
 *   enospc          writes failed with ENOSPC, then the process ended without a final ledger
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "codec.h"
#include "ledger.h"
#include "writer.h"

#define T0 1796000000000000000ull /* session start, CUPTI ns */

static const char *session_host = "crafted", *session_rank; /* control-chars changes them */

struct craft {
	int fd;
	struct tally_writer w;
	struct tally_codec codec;
	struct tally_buf b;
	uint64_t kernels, runtime, nvtx; /* records written, for the final ledger */
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void chunk(struct craft *c, unsigned type, unsigned flags, const struct tally_buf *p)
{
	if (tally_writer_chunk(&c->w, type, flags, p->data, p->len, 0) < 0 ||
	    tally_writer_flush(&c->w) < 0)
		die("write");
}

/* A chunk header followed by len bytes of payload, written as they are (no writer checks). */
static void raw_chunk(struct craft *c, unsigned type, const void *payload, size_t declared,
		      size_t written)
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

static void session(struct craft *c, const char *cmdline, size_t cmdlen)
{
	uint8_t id[16];
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
	tally_kv_bytes(&c->b, TALLY_SK_SESSION_ID, id, sizeof(id));
	chunk(c, TALLY_CHUNK_SESSION, 0, &c->b);
}

/* STRINGS: ids first, first + 1, ... */
static void strings(struct craft *c, uint32_t first, const char *const *s, const size_t *len,
		    unsigned n)
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

static void records(struct craft *c, const struct tally_record *r, size_t n)
{
	size_t i;

	tally_buf_reset(&c->b);
	if (tally_records_encode(&c->codec, &c->b, r[0].kind, r, n, TALLY_COLUMNS_ALL) < 0)
		die("encode");
	chunk(c, TALLY_CHUNK_RECORDS, 0, &c->b);
	for (i = 0; i < n; i++) {
		c->kernels += r[i].kind == TALLY_KIND_KERNEL;
		c->runtime += r[i].kind == TALLY_KIND_RUNTIME;
		c->nvtx += r[i].kind == TALLY_KIND_NVTX_RANGE;
	}
}

static void ledger(struct craft *c, bool final, const struct tally_ledger *extra)
{
	struct tally_ledger l;

	if (extra)
		l = *extra;
	else
		memset(&l, 0, sizeof(l));
	l.t_begin = T0;
	l.t_end = T0 + 1000000000ull;
	l.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL] = c->kernels;
	l.v[TALLY_C_BY_KIND + TALLY_KIND_RUNTIME] = c->runtime;
	l.v[TALLY_C_BY_KIND + TALLY_KIND_NVTX_RANGE] = c->nvtx;
	l.v[TALLY_C_RECORDS_PARSED] = c->kernels + c->runtime + c->nvtx;
	l.v[TALLY_C_FLUSH_COMPLETED] = final;
	tally_buf_reset(&c->b);
	tally_ledger_encode(&c->b, &l);
	chunk(c, TALLY_CHUNK_LEDGER, final ? TALLY_CHUNK_FLAG_FINAL : 0, &c->b);
}

static struct tally_record kernel_rec(uint64_t start, uint64_t dur, uint32_t name, uint32_t corr)
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

static struct tally_record launch_rec(uint64_t start, uint32_t name, uint32_t corr)
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
	c->kernels = 1;
	memset(&l, 0, sizeof(l));
	l.unknown_counters = 1;
	l.unknown[0].id = 90;
	l.unknown[0].value = 7;
	ledger(c, true, &l);
}

static void early_records(struct craft *c)
{
	session(c, "early", 5);
	plain_trace(c, "_Z4workv", 8, 3, T0 - 10000000000ull, 10000, 3000);
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

static const struct {
	const char *name;
	void (*make)(struct craft *c);
} cases[] = {
    {"rows-bomb", rows_bomb},	      {"strings-bomb", strings_bomb}, {"resync-bomb", resync_bomb},
    {"demangle-bomb", demangle_bomb}, {"partial-mid", NULL},	      {"partial-eof", NULL},
    {"control-chars", control_chars}, {"bad-text", bad_text},	      {"future", future},
    {"early-records", early_records}, {"overlap", overlap},	      {"enospc", enospc},
};

int main(int argc, char **argv)
{
	struct tally_sink sink;
	struct craft c;
	size_t i;

	if (argc != 3) {
		fprintf(stderr, "usage: tally-craft CASE OUT\n");
		return 2;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			break;
	if (i == sizeof(cases) / sizeof(cases[0])) {
		fprintf(stderr, "tally-craft: unknown case %s\n", argv[1]);
		return 2;
	}
	memset(&c, 0, sizeof(c));
	srand((unsigned)getpid());
	c.fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c.fd < 0)
		die(argv[2]);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)c.fd};
	if (tally_writer_init(&c.w, &sink, 1) < 0 || tally_writer_preamble(&c.w) < 0 ||
	    tally_writer_flush(&c.w) < 0)
		die("writer");
	if (cases[i].make)
		cases[i].make(&c);
	else
		partial(&c, strcmp(argv[1], "partial-eof") == 0);
	tally_writer_flush(&c.w);
	tally_writer_fini(&c.w);
	tally_codec_fini(&c.codec);
	tally_buf_fini(&c.b);
	close(c.fd);
	return 0;
}
