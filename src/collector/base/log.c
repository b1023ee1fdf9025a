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

static int log_fd = -1; /* set once at init, read-only afterwards */

void tally_log_init(void)
{
	const char *d = getenv("TALLY_DEBUG");
	int saved = errno;

	if (!d || !*d || strcmp(d, "0") == 0)
		log_fd = -1;
	else if (strcmp(d, "1") == 0)
		log_fd = STDERR_FILENO;
	else
		log_fd = open(d, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	errno = saved;
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
	va_list ap;

	if (log_fd < 0)
		return;
	va_start(ap, fmt);
	vlog(log_fd, fmt, ap);
	va_end(ap);
}

void tally_log_user(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(log_fd >= 0 ? log_fd : STDERR_FILENO, fmt, ap);
	va_end(ap);
}
