/* SPDX-License-Identifier: MIT */
/*
 * The two clocks tally reads, in nanoseconds.  CLOCK_REALTIME is also CUPTI's default timestamp
 * clock on Linux, so it is the timeline records are on; CLOCK_MONOTONIC is for intervals.
 */
#ifndef TALLY_COMMON_CLOCK_H
#define TALLY_COMMON_CLOCK_H

#include <stdbool.h>
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

/* Benchmarks only (TALLY_BENCH_TOGGLE_MS): with a period, CLOCK_MONOTONIC is cut into
 * intervals of that length and an optional recorder (GPU metrics, host sampling) is off in
 * those whose index a hash (splitmix64's finalizer) makes odd, so what it costs shows inside
 * one run, beside the same run without it.  Not every other one: tally's own periodic work (the
 * 1 s slice's flush) would fall in the on intervals more often than in the off ones for some
 * periods and starts.  The programs measured compute the same hash (docs/collector.md). */
static inline bool tally_toggled_off(uint64_t period_ns, uint64_t monotonic_ns)
{
	uint64_t z;

	if (!period_ns)
		return false;
	z = monotonic_ns / period_ns + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) & 1;
}

/* CLOCK_MONOTONIC ns from now, as pthread_cond_timedwait takes it (on a condition variable
 * whose clock is CLOCK_MONOTONIC). */
static inline struct timespec tally_monotonic_after(uint64_t ns)
{
	uint64_t t = tally_monotonic_ns() + ns;

	return (struct timespec){(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
}

#endif
