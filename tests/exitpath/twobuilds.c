/* SPDX-License-Identifier: MIT */
/*
 * twobuilds MS: a program whose busy function is known, built twice (tests/exitpath/CMakeLists.txt)
 * with its functions laid out differently, for the test of names that travel
 * (test-buildids.sh).  Build 1 spends MS ms of its main thread's CPU time in crunch(); build 2
 * puts other functions (decoy_*) first, so that crunch's addresses in build 1 fall inside
 * another function of build 2: a reader that names build 1's samples from build 2's file names
 * them after a decoy.  Prints "crunch_cpu_ns N" (its own clock) and "build N".
 * Built with -fno-toplevel-reorder: functions are laid out in the order of this file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef TWOBUILDS_BUILD
#define TWOBUILDS_BUILD 1
#endif

static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#if TWOBUILDS_BUILD == 2
/* Straight-line work, long enough to cover where build 1 has crunch. */
#define STEP(k) x = x * 1.0000001 + (double)(k) / (x + 1.0)
#define STEP8(k)                                                                                   \
	STEP(k);                                                                                   \
	STEP(k + 1);                                                                               \
	STEP(k + 2);                                                                               \
	STEP(k + 3);                                                                               \
	STEP(k + 4);                                                                               \
	STEP(k + 5);                                                                               \
	STEP(k + 6);                                                                               \
	STEP(k + 7)
#define STEP64(k)                                                                                  \
	STEP8(k);                                                                                  \
	STEP8(k + 8);                                                                              \
	STEP8(k + 16);                                                                             \
	STEP8(k + 24);                                                                             \
	STEP8(k + 32);                                                                             \
	STEP8(k + 40);                                                                             \
	STEP8(k + 48);                                                                             \
	STEP8(k + 56)
__attribute__((noinline)) double decoy_first(double x)
{
	STEP64(0);
	STEP64(64);
	STEP64(128);
	STEP64(192);
	return x;
}

__attribute__((noinline)) double decoy_second(double x)
{
	STEP64(1000);
	STEP64(1064);
	STEP64(1128);
	STEP64(1192);
	return x;
}
#endif

/* The busy function: where the samples of build 1 land. */
__attribute__((noinline)) double crunch(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	volatile double x = 0;
	unsigned i;

	while (thread_cpu_ns() < end)
		for (i = 0; i < 20000; i++)
			x += i * 0.5;
	return x;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	uint64_t c0 = thread_cpu_ns();
	double r = crunch((uint64_t)ms * 1000000ull);

#if TWOBUILDS_BUILD == 2
	r += decoy_first(r) + decoy_second(r);
#endif
	printf("crunch_cpu_ns %llu\nbuild %d\n", (unsigned long long)(thread_cpu_ns() - c0),
	       TWOBUILDS_BUILD);
	return r < 0;
}
