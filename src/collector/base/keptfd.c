/* SPDX-License-Identifier: MIT */
/* Descriptors kept as tally's inside the program; see keptfd.h. */
#include "keptfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define HIGHEST_FLOOR 1024

/* Where tally's descriptors go: the top sixteenth below the limit, at most from 1024 up. */
static int high_floor(void)
{
	struct rlimit rl;
	rlim_t lim;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return HIGHEST_FLOOR;
	lim = rl.rlim_cur;
	if (lim - lim / 16 > HIGHEST_FLOOR)
		return HIGHEST_FLOOR;
	return (int)(lim - lim / 16);
}

int tally_fd_high(int fd)
{
	int saved = errno, floor = high_floor(), high;

	if (fd < 0 || fd >= floor) {
		errno = saved;
		return fd;
	}
	high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (high < 0) { /* the limit is reached up there: keep the number it has */
		errno = saved;
		return fd;
	}
	close(fd);
	errno = saved;
	return high;
}

int tally_kept_take(struct tally_kept *k, int fd)
{
	struct stat st;
	int rc;

	*k = TALLY_KEPT_NONE;
	if (fd < 0)
		return -EBADF;
	fd = tally_fd_high(fd);
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	k->fd = fd;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	return 0;
}

enum tally_kept_state tally_kept_check(const struct tally_kept *k)
{
	struct stat st;
	int saved = errno;
	enum tally_kept_state rc;

	if (k->fd < 0 || fstat(k->fd, &st) < 0)
		rc = TALLY_KEPT_CLOSED;
	else if (st.st_dev != k->dev || st.st_ino != k->ino)
		rc = TALLY_KEPT_TAKEN;
	else
		rc = TALLY_KEPT_OURS;
	errno = saved;
	return rc;
}

bool tally_kept_ours(const struct tally_kept *k)
{
	return tally_kept_check(k) == TALLY_KEPT_OURS;
}

bool tally_kept_same_file(const struct tally_kept *k, int fd)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino;
}

void tally_kept_close(struct tally_kept *k)
{
	int saved = errno;

	if (tally_kept_ours(k))
		close(k->fd);
	*k = TALLY_KEPT_NONE;
	errno = saved;
}
