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
	OUTFILE_FORCE = 1u << 0, /* replace an existing regular file */
};

/*
 * May path be written?  0 when it is absent, or a regular file and flags has OUTFILE_FORCE;
 * else -EEXIST or -EPERM (not a regular file) and err says why in words.  Also -errno from
 * lstat(2) for anything but ENOENT.
 */
int outfile_check(const char *path, unsigned flags, char *err, size_t errlen);

/*
 * Is path one of inputs[0..n) (same device and inode)?  An output must never be its own input:
 * -EINVAL and err says so.  0 otherwise (also when path does not exist).
 */
int outfile_not_input(const char *path, char *const *inputs, size_t n, char *err, size_t errlen);

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

#endif
