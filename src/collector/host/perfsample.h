/* SPDX-License-Identifier: MIT */
/* Native samples from perf_event_open's software events, with user callchains; see perfsample.c. */
#ifndef TALLY_COLLECTOR_PERFSAMPLE_H
#define TALLY_COLLECTOR_PERFSAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct perf_sink {
	/* A sample: ips[0] the instruction, the rest return addresses (CLOCK_MONOTONIC time). */
	void (*sample)(void *ctx, pid_t tid, uint64_t time, const uint64_t *ips, unsigned n);
	void (*lost)(void *ctx, uint64_t samples);   /* the kernel's buffer overflowed */
	void (*throttled)(void *ctx, uint64_t time); /* the kernel throttled sampling */
	void *ctx;
};

/* Would perf_event_open sample this process here?  false with why ("perf_event_open: ..."). */
bool tally_perf_probe(char *why, size_t len);

/* Sample every thread of the process (those there now and those they make) on CPU time at
 * rate_hz, callchains up to depth frames.  0, or -errno with why. */
int tally_perf_open(unsigned rate_hz, unsigned depth, char *why, size_t len);
/* Everything the kernel wrote since the last drain, through sink.  Sampler thread only. */
void tally_perf_drain(const struct perf_sink *sink);
void tally_perf_close(void);
/* Rings whose owning event's descriptor the program closed or took over (their events, and the
 * sampling of their threads, may have ended): 0 when all are tally's still. */
unsigned tally_perf_lost(void);
/* Benchmarks (TALLY_BENCH_TOGGLE_MS): stop or resume every event, in every thread. */
void tally_perf_enable(bool on);
/* A fork child: the parent's events and buffers are not its own. */
void tally_perf_after_fork_child(void);

#endif
