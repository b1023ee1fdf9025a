/* SPDX-License-Identifier: MIT */
/*
 * Safe output files, for every writer of the CLI (export, stats -o, merge -o).  Outputs are
 * written under a temporary name beside the target (made with O_EXCL, so it never follows a
 * link) and renamed over it once complete, so that a failed or interrupted write leaves the old
 * file as it was, and only a regular file is ever replaced: a symbolic link, a device node, a
 * FIFO or a directory at the target is refused, --force or not (as root in a container,
 * `-o /dev/null --force` must not unlink /dev/null).
 */
#ifndef TALLY_COMMON_OUTFILE_H
#define TALLY_COMMON_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

struct outfile {
	char *path; /* the target */
	char *tmp;  /* the temporary name beside it, while open */
	int fd;
};

enum {
	OUTFILE_FORCE = 1u << 0,     /* replace an existing regular file */
	OUTFILE_DIRECTORY = 1u << 1, /* the target is a directory to write into (export -f csv) */
	/* outfile_commit: do not hold the stop signals back (outfile_hold_signals): for a file of
	 * a set written one after another as the command goes (CSV), or a command whose signals
	 * are its program's (record) */
	OUTFILE_KEEP_SIGNALS = 1u << 2,
};

/*
 * May path be written?  The one check of every output of tally, before and again just before it
 * is replaced.  0 when it is absent, or a regular file (with OUTFILE_DIRECTORY: a directory) and
 * flags has OUTFILE_FORCE; else err says why in words and:
 *   -EEXIST  it exists and OUTFILE_FORCE is not given
 *   -EPERM   it is not a regular file (a link, a FIFO, a device, a directory ...)
 *   -EINVAL  it is one of the inputs being read (outfile_protect), however it is named
 * and -errno from lstat(2) for anything but ENOENT.
 */
int outfile_check(const char *path, unsigned flags, char *err, size_t errlen);

/*
 * The inputs no output may replace.  Whoever reads a file registers it while it reads
 * (report_set_open does, for every file of every directory it expands, and report_set_close
 * lets go): outfile_check then refuses a target with the same device and inode, whether it is
 * named by the same path, another one, a hard link, or an entry of a directory given as input.
 * The process's one list, for the CLI's one thread.  0, or -ENOMEM.
 */
int outfile_protect(const char *path, unsigned long long dev, unsigned long long ino);
void outfile_unprotect(unsigned long long dev, unsigned long long ino);

/* outfile_check, then create the temporary file (mode 0666 less the umask).  0 or -errno. */
int outfile_open(struct outfile *o, const char *path, unsigned flags, char *err, size_t errlen);

/*
 * Rename the temporary file over the target, checking again that the target is still absent or
 * a regular file.  The caller has written and closed (or still holds) o->fd: it is closed here.
 * 0 or -errno; on failure the temporary file is removed.
 */
int outfile_commit(struct outfile *o, unsigned flags, char *err, size_t errlen);

/* Remove the temporary file and free (NULL-safe, idempotent); the target is untouched. */
void outfile_abort(struct outfile *o);

/* The signals a commit holds back for the rest of the process (the CLI's stop signals): from
 * the rename of a command's output on, they are blocked, never unblocked, and discarded when
 * the command exits, so that a stop signal that comes as the command finishes leaves its
 * outputs whole and its exit 0: never a complete output under an exit that says it was
 * stopped, nor half a set of files written together (Kineto's).  OUTFILE_KEEP_SIGNALS: not. */
void outfile_hold_signals(const int *sigs, size_t n);

/* Remove every temporary file still being written: async-signal-safe (unlink(2) only), for a
 * handler of the signals that end the process, so that none is left beside its target. */
void outfile_remove_temporaries(void);

#endif
