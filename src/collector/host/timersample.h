/* SPDX-License-Identifier: MIT */
/* Native samples from per-thread CPU-time timers: the fallback where perf events are refused;
 * see timersample.c. */
#ifndef TALLY_COLLECTOR_TIMERSAMPLE_H
#define TALLY_COLLECTOR_TIMERSAMPLE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TIMER_SAMPLE_DEPTH 64 /* frames kept per sample at most */

/* One sample as the handler leaves it in the ring (time CLOCK_MONOTONIC ns). */
struct timer_sample {
	uint64_t time;
	pid_t tid;
	uint32_t n;
	uint32_t overrun; /* expirations merged into this signal (si_overrun) */
	uint32_t pad;
	uint64_t pcs[TIMER_SAMPLE_DEPTH]; /* pcs[0] the interrupted instruction */
};

/* The process's signals, as their owner (entry/signals.c) hands them down at load:
 *   claim           tally's handler stays in front of sig whatever the program asks later, and a
 *                   delivery that is a POSIX timer's carrying si_value tag goes to fn
 *                   (async-signal-safe); every other delivery of sig is the program's
 *   program_action  what the program has asked for sig */
struct timer_signals {
	void (*claim)(int sig, int tag, void (*fn)(int, siginfo_t *, void *));
	void (*program_action)(int sig, struct sigaction *out);
};
void tally_timer_use_signals(const struct timer_signals *s);

/* The signal it would use: signo if given (1..64), else the highest real-time signal the
 * program leaves at its default and does not block here; 0 if none, with why. */
int tally_timer_pick_signal(int signo, char *why, size_t len);

/* Sample every thread of the process on CPU time at rate_hz with signal signo, frames up to
 * depth; slots: the ring between the handler and the sampler.  0, or -errno with why. */
int tally_timer_start(unsigned rate_hz, unsigned depth, int signo, size_t slots, char *why,
		      size_t len);
/* A thread to sample (from the thread registry's start hook, or the sampler's scan). */
void tally_timer_arm(pid_t tid);
/* A thread that is gone: its timer goes. */
void tally_timer_disarm(pid_t tid);
/* Every sample taken since the last drain, oldest first; returns how many. */
size_t tally_timer_drain(void (*fn)(void *ctx, const struct timer_sample *s), void *ctx);
/* Benchmarks (TALLY_BENCH_TOGGLE_MS): every thread's timer held still, or going again. */
void tally_timer_pause(bool paused);
/* Stop every timer; signals already sent are ignored when they land. */
void tally_timer_stop(void);
void tally_timer_after_fork_child(void);

#endif
