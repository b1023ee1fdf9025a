/* SPDX-License-Identifier: MIT */
/* Collector logging; see log.h. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keptfd.h"

static int log_fd = -1;	     /* STDERR_FILENO (the program's), or the file's */
static const char *log_path; /* TALLY_DEBUG's file, kept as tally's (keptfd.h) */
static struct tally_kept log_file = {-1, 0, 0};

static int open_log(void)
{
	int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	return tally_kept_take(&log_file, fd) == 0 ? log_file.fd : -1;
}

void tally_log_init(void)
{
	const char *d = getenv("TALLY_DEBUG");
	int saved = errno;

	if (!d || !*d || strcmp(d, "0") == 0) {
		log_fd = -1;
	} else if (strcmp(d, "1") == 0) {
		log_fd = STDERR_FILENO;
	} else {
		log_path = d;
		log_fd = open_log();
	}
	errno = saved;
}

/* The log file's descriptor, opened again if the program closed it or took its number (a line
 * then never goes into the program's file; two threads that reopen at once leave one spare). */
static int log_target(void)
{
	if (log_path && !tally_kept_ours(&log_file))
		log_fd = open_log();
	return log_fd;
}

/* vsnprintf is not on POSIX's async-signal-safe list, but glibc's does not allocate or lock
 * for the integer and string conversions used here. */
static void vlog(int fd, const char *fmt, va_list ap)
{
	char line[512];
	int saved = errno, n;

	n = snprintf(line, sizeof(line), "tally[%d]: ", (int)getpid());
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(fd, line, (size_t)n);
	errno = saved;
}

void tally_log(const char *fmt, ...)
{
	int fd = log_target();
	va_list ap;

	if (fd < 0)
		return;
	va_start(ap, fmt);
	vlog(fd, fmt, ap);
	va_end(ap);
}

void tally_log_user(const char *fmt, ...)
{
	int fd = log_target();
	va_list ap;

	va_start(ap, fmt);
	vlog(fd >= 0 ? fd : STDERR_FILENO, fmt, ap);
	va_end(ap);
}
