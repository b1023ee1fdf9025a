/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls (`--trace osrt`, format 1.3 OSRT records): the C library's waiting calls,
 * interposed by libtally.so (LD_PRELOAD), timed, and kept when they lasted the threshold or
 * longer; see osrt.c for the list and the cost.
 */
/*
 * The room osrt/ (osrt.c): the blocking-call interposers alone.  They define libc's names, so
 * every call of them in the program comes here; tally's own calls go to libc's (base/libc.h).
 * host/'s sampler starts, drains and stops them; they use activity/ (the ring, the pipeline's
 * clock and counters) and base/.
 */
#ifndef TALLY_COLLECTOR_OSRT_H
#define TALLY_COLLECTOR_OSRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One blocking call, as the interposer hands it to the sampler (times CLOCK_MONOTONIC ns). */
struct osrt_event {
	uint64_t start, end;
	uint64_t object; /* what was waited on (docs/format.md §14, ADDRESS) */
	pid_t tid;
	uint16_t call; /* enum tally_osrt_call */
	int16_t err;   /* errno after a failed call, 0 otherwise */
	int32_t ret;
};

/* Start recording calls of threshold_ns or longer; slots: the ring's size.  0 or -errno. */
int tally_osrt_start(uint64_t threshold_ns, size_t slots);
/* Stop recording (the ring stays for the process's life, to be drained: a call that began while
 * recording was on may still be about to claim a slot). */
void tally_osrt_stop(void);
/* The sampler: each recorded call, oldest first, through fn; returns how many. */
size_t tally_osrt_drain(void (*fn)(void *ctx, const struct osrt_event *e), void *ctx);
/* A fork child: nothing is recorded there (the ring is the parent's copy). */
void tally_osrt_after_fork_child(void);

#endif
