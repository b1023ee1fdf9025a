/* SPDX-License-Identifier: MIT */
/* The trace file, checked before every write and opened again by its path; see tracefile.h. */
#include "tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "pipeline.h"
#include "tally-format.h"
#include "writer.h"

int trace_file_adopt(struct trace_file *f, int fd, const char *path)
{
	f->path = path;
	f->lost_errno = 0;
	return tally_kept_take(&f->kept, fd);
}

int trace_file_fd(const struct trace_file *f)
{
	return f->kept.fd;
}

void trace_file_close(struct trace_file *f)
{
	tally_kept_close(&f->kept);
}

static const char *why_not(int err)
{
	switch (err) {
	case ESTALE:
		return "its path names another file now";
	case ENOENT:
		return "no file has its path now (removed, or renamed)";
	default:
		return strerror(err);
	}
}

/* What became of the number: closed, or closed and given to another file since. */
static const char *what_became(enum tally_kept_state st)
{
	return st == TALLY_KEPT_TAKEN ? ", and the number now names another file" : "";
}

/* Said once per stretch of loss (and again after a success): the note, and the manifest. */
static void say_lost(struct trace_file *f, enum tally_kept_state st, int old_fd, int err)
{
	char text[PATH_MAX + 320];

	snprintf(text, sizeof(text),
		 "the program closed tally's descriptor of the trace (fd %d%s); %s cannot be "
		 "opened again: %s; what tally writes from here on is lost",
		 old_fd, what_became(st), f->path, why_not(err));
	tally_pipeline_note(TALLY_NOTE_ERROR, "trace-descriptor-lost", text);
	if (f->lost)
		f->lost(f->lost_arg, text);
}

static void say_reopened(const struct trace_file *f, enum tally_kept_state st, int old_fd)
{
	char text[PATH_MAX + 256];

	snprintf(text, sizeof(text),
		 "the program closed tally's descriptor of the trace (fd %d%s); tally opened %s "
		 "again by its path (now fd %d) and lost nothing",
		 old_fd, what_became(st), f->path, f->kept.fd);
	tally_pipeline_note(TALLY_NOTE_WARNING, "trace-reopened", text);
}

/*
 * The number is no longer tally's: it is not closed (it may be the program's now); the trace is
 * opened again by its path, and taken only if it is the very file (device and inode) tally made.
 */
static int reopen(struct trace_file *f, enum tally_kept_state st)
{
	int old = f->kept.fd, fd, err;

	fd = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && !tally_kept_same_file(&f->kept, fd)) {
		close(fd);
		fd = -1;
		errno = ESTALE;
	}
	if (fd < 0) {
		err = errno;
		if (!f->lost_errno)
			say_lost(f, st, old, err);
		f->lost_errno = err;
		tally_pipeline_fd_event(false);
		return -err;
	}
	f->kept.fd = tally_fd_high(fd);
	f->lost_errno = 0;
	say_reopened(f, st, old);
	tally_pipeline_fd_event(true);
	return 0;
}

ssize_t trace_file_write(void *ctx, const void *buf, size_t len)
{
	struct trace_file *f = ctx;
	enum tally_kept_state st = tally_kept_check(&f->kept);
	int rc;

	if (st != TALLY_KEPT_OURS && (rc = reopen(f, st)) < 0)
		return rc;
	return tally_fd_write((void *)(intptr_t)f->kept.fd, buf, len);
}
