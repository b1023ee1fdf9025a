/* SPDX-License-Identifier: MIT */
/*
 * Naming native frames where they were recorded (tally record, after the program ended), as
 * Nsight Systems resolves symbols on the target: this machine has the very files the program ran,
 * the machine that reads the trace rarely does.  Each native frame of the trace is named through
 * the readers' own resolver (frames.c: a file of the module's build, never another), and the
 * names are appended to the trace as one SYMBOLS chunk (docs/format.md §12), which readers
 * prefer to any local file.
 *
 * Bounded: the naming stops at the deadline (or when tally record is told to stop), and the chunk
 * says so, with how many frames it named of how many.  One module's file is opened within a
 * frame's lookup, so the bound may be passed by what opening one file takes.
 *
 * The trace is appended to only when it is safe: its process has ended (the caller's word), the
 * file ends at an intact chunk, and it is the same file, of the same size, as the one read.  A
 * write that fails part way is cut off again, so the trace is never left ending in a partial
 * chunk.
 */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"
#include "trace-set.h"
#include "writer.h"

struct last_chunk {
	uint32_t seq;
	bool any;
};

static int note_chunk(void *ctx, const struct tally_chunk_info *c)
{
	struct last_chunk *l = ctx;

	l->seq = c->seq;
	l->any = true;
	return 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* "path: why" into err; returns rc. */
static int say(char *err, size_t len, int rc, const char *path, const char *why)
{
	snprintf(err, len, "%s: %s", path, why);
	return rc;
}

/* Frames are looked up in id order; each module's verdict is counted once. */
static void name_frames(const struct tally_section *s, uint64_t deadline_ns,
			const volatile sig_atomic_t *stop, struct tally_buf *entries,
			struct report_symbolized *res)
{
	const struct tally_stack_tables *t = &s->stacks;
	uint8_t *seen = calloc(t->nmodules ? t->nmodules : 1, 1);
	struct report_native_name *n = malloc(sizeof(*n));
	uint32_t id, prev = 0;

	res->state = TALLY_SYMBOLS_COMPLETE;
	for (id = 1; id < t->nframes && seen && n; id++) {
		const struct tally_frame *f = tally_frame_get(t, id);
		const struct tally_module *m =
		    f && tally_frame_is_native(f->type) ? tally_module_of(t, f->pc) : NULL;
		size_t k;

		if (!f || !tally_frame_is_native(f->type))
			continue;
		res->frames++;
		if (res->state != TALLY_SYMBOLS_COMPLETE)
			continue; /* counted, not looked up */
		if (stop && *stop) {
			res->state = TALLY_SYMBOLS_STOPPED;
			continue;
		}
		if (monotonic_ns() >= deadline_ns) {
			res->state = TALLY_SYMBOLS_CUT;
			continue;
		}
		if (!m)
			continue;
		if (report_native_name(
			m, f->pc - m->base - (f->type == TALLY_FRAME_NATIVE_PC ? 0 : 1), n)) {
			tally_symbol_put(entries, &prev, id,
					 n->unverified ? TALLY_SYMF_UNVERIFIED : 0, n->line, n->sym,
					 n->file);
			res->named++;
		}
		k = (size_t)(m - t->modules);
		if (!seen[k]) {
			seen[k] = 1;
			res->other_build += n->verdict == MODFILE_OTHER_BUILD;
			res->no_file += n->verdict == MODFILE_NONE;
		}
	}
	if (!seen || !n)
		entries->failed = true;
	free(seen);
	free(n);
}

/* The chunk after the last one read, at the end of the file as it was read. */
static int append_chunk(const struct tally_file *f, uint32_t seq, const struct tally_buf *payload,
			char *err, size_t errlen)
{
	uint8_t hdr[TALLY_CHUNK_HEADER_LEN];
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {payload->data, payload->len}};
	struct stat was, st;
	ssize_t wrote;
	int fd, rc = 0;

	if (fstat(f->fd, &was) < 0)
		return say(err, errlen, -errno, f->path, "cannot stat it");
	fd = open(f->path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return say(err, errlen, -errno, f->path, "cannot open it for writing");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != was.st_dev ||
	    st.st_ino != was.st_ino || (uint64_t)st.st_size != f->size) {
		close(fd);
		return say(err, errlen, -EBUSY, f->path, "changed while it was read");
	}
	tally_chunk_header(hdr, TALLY_CHUNK_SYMBOLS, 0, seq, payload->data, payload->len);
	wrote = pwritev(fd, iov, 2, (off_t)f->size);
	if (wrote != (ssize_t)(sizeof(hdr) + payload->len)) {
		rc = wrote < 0 ? -errno : -ENOSPC;
		if (ftruncate(fd, (off_t)f->size) < 0) /* never a partial chunk at its end */
			rc = -errno;
		snprintf(err, errlen, "%s: the names could not be written (%s)", f->path,
			 strerror(-rc));
	}
	if (close(fd) < 0 && rc == 0)
		rc = say(err, errlen, -errno, f->path, "the names could not be written");
	return rc;
}

int report_symbolize_trace(const char *path, uint64_t deadline_ns, uint64_t bound_ns,
			   const volatile sig_atomic_t *stop, struct report_symbolized *res,
			   char *err, size_t errlen)
{
	struct last_chunk last = {0};
	struct tally_read_ops ops = {.chunk = note_chunk, .ctx = &last};
	struct tally_symbols_info info = {.present = true};
	struct tally_buf entries = {0}, payload = {0};
	const struct tally_section *s;
	struct tally_file *f = NULL;
	uint64_t t0 = monotonic_ns();
	int rc;

	memset(res, 0, sizeof(*res));
	res->skipped = true;
	err[0] = 0;
	rc = tally_file_open(&f, path, err, errlen);
	if (rc == 0)
		rc = tally_file_read(f, &ops);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		tally_file_close(f);
		return rc;
	}
	s = f->nsections ? f->sections[f->nsections - 1] : NULL;
	if (!s || !s->has_session_id || !last.any)
		rc = say(err, errlen, 0, path, "no session to name frames of");
	else if (f->intact_end != f->size)
		rc = say(err, errlen, 0, path, "it does not end at an intact chunk");
	else if (s->stacks.symbols_info.present)
		rc = say(err, errlen, 0, path, "its frames are named already");
	if (err[0]) {
		tally_file_close(f);
		return rc;
	}
	name_frames(s, deadline_ns, stop, &entries, res);
	if (!res->frames) { /* nothing to name: the trace stays as it was */
		res->no_frames = true;
		tally_file_close(f);
		tally_buf_fini(&entries);
		return say(err, errlen, 0, path, "no native frames");
	}
	res->spent_ns = monotonic_ns() - t0;
	memcpy(info.session_id, s->session_id, sizeof(info.session_id));
	info.has_session_id = true;
	info.state = res->state;
	info.frames = res->frames;
	info.named = res->named;
	info.spent_ns = res->spent_ns;
	info.bound_ns = bound_ns;
	info.other_build = res->other_build;
	info.no_file = res->no_file;
	snprintf(info.how, sizeof(info.how), "%s",
		 report_symbolizer_missing() ? "ELF symbol tables" : "libdw");
	tally_symbols_payload(&payload, (uint32_t)res->named, &entries, &info);
	rc = entries.failed || payload.failed
		 ? say(err, errlen, -ENOMEM, path, "out of memory")
		 : append_chunk(f, last.seq + 1, &payload, err, errlen);
	res->skipped = rc < 0;
	tally_buf_fini(&entries);
	tally_buf_fini(&payload);
	tally_file_close(f);
	return rc;
}
