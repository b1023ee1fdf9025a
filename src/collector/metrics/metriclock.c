/* SPDX-License-Identifier: MIT */
/* The per-device lock file; see metriclock.h. */
#include "metriclock.h"
#include "libc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOLDER_MAX 8192

void pm_lock_path(char *out, size_t len, const char *dir, const uint8_t *uuid, const char *host,
		  unsigned device)
{
	if (!uuid) {
		snprintf(out, len, "%s/.tally-gpu-metrics-%.64s-dev%u.lock", dir, host, device);
		return;
	}
	snprintf(out, len,
		 "%s/.tally-gpu-metrics-GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x.lock",
		 dir, uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
		 uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
}

/*
 * 0 locked, -EBUSY held by another process, or -errno.  A POSIX record lock: it belongs to this
 * process, so a fork child never holds it (an open-file-description or flock lock would go with
 * the descriptor into a child forked while the claim was being made, before the descriptor could
 * be closed there: a long-lived child, such as the debugger agent libcudadebugger forks inside
 * cuInit, then held the device for a process long gone).  The kernel drops it when this process
 * exits, however it exits, or closes the file.
 */
static int try_lock(int fd)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

	if (fcntl(fd, F_SETLK, &fl) == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : -errno;
}

static void hex16(char *out, const uint8_t *id)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* "pid=...\nhost=...\nfile=...\nsession=...\nend\n": the last line says the rest is all there.
 * Written only while the descriptor is still the lock file's (keptfd.h). */
static void write_holder(const struct tally_kept *kept, const struct pm_lock_holder *self)
{
	char text[HOLDER_MAX], sid[33] = "";
	int n;

	if (self->has_session)
		hex16(sid, self->session);
	n = snprintf(text, sizeof(text), "pid=%ld\nhost=%s\nfile=%s\nsession=%s\nend\n", self->pid,
		     self->host, self->file, sid);
	if (n < 0 || (size_t)n >= sizeof(text))
		n = snprintf(text, sizeof(text), "pid=%ld\nhost=%s\nend\n", self->pid, self->host);
	if (tally_kept_ours(kept) && ftruncate(kept->fd, 0) == 0 && tally_kept_ours(kept))
		(void)!pwrite(kept->fd, text, (size_t)n, 0);
}

static void field(const char *text, const char *key, char *out, size_t len)
{
	const char *p = strstr(text, key);
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	n = strcspn(p, "\n");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

static void parse_session(struct pm_lock_holder *h, const char *hex)
{
	unsigned i, byte;

	if (strlen(hex) != 32)
		return;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return;
		h->session[i] = (uint8_t)byte;
	}
	h->has_session = true;
}

/* What the holder wrote; false while it has not finished writing. */
static bool read_holder(const char *path, struct pm_lock_holder *h)
{
	char text[HOLDER_MAX + 1], num[32], sid[40];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? pread(fd, text, HOLDER_MAX, 0) : -1;

	if (fd >= 0)
		close(fd);
	memset(h, 0, sizeof(*h));
	if (n <= 0)
		return false;
	text[n] = '\0';
	field(text, "pid=", num, sizeof(num));
	h->pid = strtol(num, NULL, 10);
	field(text, "\nhost=", h->host, sizeof(h->host));
	field(text, "\nfile=", h->file, sizeof(h->file));
	field(text, "\nsession=", sid, sizeof(sid));
	parse_session(h, sid);
	return strstr(text, "\nend\n") != NULL;
}

int pm_lock_claim(const char *path, const struct pm_lock_holder *self,
		  struct pm_lock_holder *holder, struct tally_kept *kept)
{
	struct timespec step = {0, 5000000};
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	int rc, tries;

	*kept = TALLY_KEPT_NONE;
	if (fd < 0)
		return -errno;
	/* moved high before the lock is taken: closing the old number would drop it */
	rc = tally_kept_take(kept, fd);
	if (rc < 0)
		return rc;
	rc = tally_kept_ours(kept) ? try_lock(kept->fd) : -EBADF;
	if (rc == 0) {
		write_holder(kept, self);
		return 0;
	}
	tally_kept_close(kept);
	if (rc != -EBUSY)
		return rc;
	/* The holder writes its details right after it locks: give it a moment. */
	for (tries = 0; !read_holder(path, holder) && tries < 20; tries++)
		libc_nanosleep(&step, NULL);
	return -EBUSY;
}

bool pm_lock_held(const struct tally_kept *kept)
{
	return kept->fd >= 0 && tally_kept_ours(kept);
}

void pm_lock_release(struct tally_kept *kept)
{
	tally_kept_close(kept);
}
