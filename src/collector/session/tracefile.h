/* SPDX-License-Identifier: MIT */
/*
 * The trace file, kept as tally's inside the program (keptfd.h).  The pipeline's writer writes
 * through trace_file_write, which first checks that the descriptor still names the trace: where
 * the program closed it or put a file of its own at its number, the trace is opened again by its
 * path (O_APPEND, so the next chunk goes after the last one written) and nothing is lost.  Where
 * it cannot be opened again (the path names no file, or another file: removed, renamed or
 * replaced), the write fails with that errno (ESTALE for another file) and is counted as lost
 * (write_failures, and fd_lost_writes for the cause); nothing is ever written through a number
 * that is the program's.  Either way a note says what happened, and, for a trace that could not
 * be reopened, the manifest too (tally record says it after the run: the trace itself may never
 * get the word).
 */
#ifndef TALLY_COLLECTOR_TRACEFILE_H
#define TALLY_COLLECTOR_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "keptfd.h"

struct trace_file {
	struct tally_kept kept;
	const char *path; /* the session's */
	/* what to call once, the first time the trace could not be reopened (the manifest) */
	void (*lost)(void *arg, const char *text);
	void *lost_arg;
	int lost_errno; /* the last reopen's failure, 0 after a success */
};

/* Keep fd (moved high) as the trace at path.  0 or -errno (fd closed). */
int trace_file_adopt(struct trace_file *f, int fd, const char *path);
/* A struct tally_sink's write (ctx: the struct trace_file). */
ssize_t trace_file_write(void *ctx, const void *buf, size_t len);
/* The descriptor, whoever's it is now (fstatfs for the session header, right after adopt). */
int trace_file_fd(const struct trace_file *f);
/* Close it if it is still tally's. */
void trace_file_close(struct trace_file *f);

#endif
