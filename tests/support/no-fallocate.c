/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD stand-in for a file system that cannot allocate ahead (FUSE, some network file
 * systems): fallocate fails with EOPNOTSUPP, so that the hostile-input test sees the collector
 * fall back when it cannot keep room for the final ledger (docs/format.md §15).
 */
#include <errno.h>
#include <fcntl.h>

int fallocate(int fd, int mode, off_t offset, off_t len)
{
	(void)fd;
	(void)mode;
	(void)offset;
	(void)len;
	errno = EOPNOTSUPP;
	return -1;
}

int fallocate64(int fd, int mode, off64_t offset, off64_t len)
{
	return fallocate(fd, mode, (off_t)offset, (off_t)len);
}
