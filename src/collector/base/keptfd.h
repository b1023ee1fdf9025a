/* SPDX-License-Identifier: MIT */
/*
 * Descriptors tally keeps open inside the program: the trace and the room beside it, the lock
 * files of GPU metrics, /proc files read again and again, the fallback's probe pipe, the log.
 * The descriptor table is the program's: it may close every number it did not open itself
 * (close_range(3, ~0U), a daemon's loop over 3..1023, a shell's `exec 3>FILE`), and its next open
 * takes the lowest free number, perhaps one of tally's.  tally must then neither lose its file
 * nor read, write or close through a number that now names the program's.  So:
 *
 *   tally_fd_high    moves a descriptor out of the way at once: F_DUPFD_CLOEXEC to the top
 *                    sixteenth below RLIMIT_NOFILE, never above 1024 (a loop that closes 3..1023
 *                    misses it, select()'s FD_SETSIZE is not crossed, and the kernel's table,
 *                    which grows to the highest number, stays small).  Fewer collisions, not
 *                    none: a program may close every number there is.
 *   struct tally_kept a descriptor with what it named when tally opened it (device, inode),
 *                    checked with fstat before each use (tally_kept_check: one system call,
 *                    async-signal-safe), and closed only while it still names that file.  The
 *                    caller decides what to do when it does not: open the file again by its
 *                    path, or do without.
 *
 * Between the check and the use the program could still close and reuse the number: it would
 * have to do both in those microseconds, and reach a number near its limit.  Descriptors held
 * for one read (open, read, close in one function) are not kept here: the same is true of them.
 * perf events share one inode (anonymous inodes): perfsample.c checks their event ids instead.
 */
#ifndef TALLY_COLLECTOR_KEPTFD_H
#define TALLY_COLLECTOR_KEPTFD_H

#include <stdbool.h>
#include <sys/types.h>

/* fd moved to a high number (the old one closed), or fd itself where none is free. */
int tally_fd_high(int fd);

struct tally_kept {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
};

enum tally_kept_state {
	TALLY_KEPT_OURS,   /* the number still names the file tally opened */
	TALLY_KEPT_CLOSED, /* the program closed it (or there is none) */
	TALLY_KEPT_TAKEN,  /* the number now names another file: the program's */
};

#define TALLY_KEPT_NONE ((struct tally_kept){-1, 0, 0})

/* Keep fd (moved high first): 0, or -errno (fd is then closed and k->fd is -1). */
int tally_kept_take(struct tally_kept *k, int fd);
/* Async-signal-safe; errno kept. */
enum tally_kept_state tally_kept_check(const struct tally_kept *k);
bool tally_kept_ours(const struct tally_kept *k);
/* Does fd name k's file?  (A file opened again by its path must be the same file.) */
bool tally_kept_same_file(const struct tally_kept *k, int fd);
/* Close it if it is still tally's; forget it either way. */
void tally_kept_close(struct tally_kept *k);

#endif
