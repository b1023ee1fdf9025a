/* SPDX-License-Identifier: MIT */
/* A native function for tests/exitpath/mixed.py to call through ctypes: it burns MS ms of the
 * calling thread's CPU time in c_burn itself (test-proctree.sh, mixed stacks). */
#include <time.h>

double c_burn(double ms);

__attribute__((noinline)) double c_burn(double ms)
{
	struct timespec a, b;
	volatile double x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += i * 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
	return x;
}
