// SPDX-License-Identifier: MIT
/*
 * osrt-cost: what the blocking-call interposers cost on calls that do not block, in ns per call
 * (bench/osrt-cost.sh runs it untraced, with libtally.so preloaded and recording off, and with
 * --trace osrt on): an uncontended pthread_mutex_lock/unlock pair (CUDA takes locks on every
 * launch), a read() of /dev/zero that returns at once, and a poll() of a ready pipe.  An idle
 * second thread runs throughout: glibc takes locks without atomic instructions in a process of
 * one thread, and a CUDA program (and any recording by tally) is never one.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, i;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	int fd = open("/dev/zero", O_RDONLY), p[2];
	struct pollfd pfd;
	char c;
	double t0;
	pthread_t t;

	pthread_create(&t, NULL, idle, NULL);
	if (fd < 0 || pipe(p) < 0 || write(p[1], "x", 1) != 1)
		return 1;
	t0 = now();
	for (i = 0; i < n / 4; i++)
		(void)now();
	printf("clock_ns %.2f\n", (now() - t0) / (n / 4)); /* what a timed call pays twice */
	t0 = now();
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	printf("mutex_ns %.2f\n", (now() - t0) / n);
	t0 = now();
	for (i = 0; i < n / 4; i++)
		if (read(fd, &c, 1) != 1)
			return 1;
	printf("read_ns %.2f\n", (now() - t0) / (n / 4));
	pfd.fd = p[0];
	pfd.events = POLLIN;
	t0 = now();
	for (i = 0; i < n / 4; i++)
		if (poll(&pfd, 1, 0) != 1)
			return 1;
	printf("poll_ns %.2f\n", (now() - t0) / (n / 4));
	return 0;
}
