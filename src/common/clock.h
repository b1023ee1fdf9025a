/* SPDX-License-Identifier: MIT */
/*
 * The two clocks tally reads, in nanoseconds.  CLOCK_REALTIME is also CUPTI's default timestamp
 * clock on Linux, so it is the timeline records are on; CLOCK_MONOTONIC is for intervals.
 */
#ifndef TALLY_COMMON_CLOCK_H
#define TALLY_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t tally_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tally_realtime_ns(void)
{
	return tally_clock_ns(CLOCK_REALTIME);
}

static inline uint64_t tally_monotonic_ns(void)
{
	return tally_clock_ns(CLOCK_MONOTONIC);
}

/* The CPU time the calling thread has used. */
static inline uint64_t tally_thread_cpu_ns(void)
{
	return tally_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* CLOCK_MONOTONIC ns from now, as pthread_cond_timedwait takes it (on a condition variable
 * whose clock is CLOCK_MONOTONIC). */
static inline struct timespec tally_monotonic_after(uint64_t ns)
{
	uint64_t t = tally_monotonic_ns() + ns;

	return (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
}

#endif
