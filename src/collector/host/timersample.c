/* SPDX-License-Identifier: MIT */
/*
 * Native samples where perf_event_open is refused (perf_event_paranoid 3, a seccomp filter), or
 * where TALLY_SAMPLE_FALLBACK asks for this: a POSIX timer per thread on that thread's CPU-time
 * clock, delivering a signal to that very thread (SIGEV_THREAD_ID) every 1/rate seconds of its
 * CPU time.  A CPU-time clock advances only while its thread runs, so a thread asleep in read()
 * or sleep() is never woken by it.
 *
 * The signal: the highest real-time signal the program leaves at its default and does not
 * block (or TALLY_SAMPLE_SIGNAL), named in the trace.  tally's signal handler is already in
 * front of every real-time signal (signals.c), keeping the program's own handlers and masks as
 * the program set them; a delivery that is our timer's (SI_TIMER with our tag) comes here and
 * never reaches the program.  It is installed with SA_RESTART, so a read() on a pipe the signal
 * interrupts is restarted by the kernel, not failed with EINTR (calls the kernel never restarts,
 * such as poll or nanosleep, can return EINTR if the timer fires during the microseconds of CPU
 * they use: measured by tests/exitpath/test-sampling.sh).
 *
 * The handler is async-signal-safe: it unwinds the interrupted thread with libgcc
 * (tally_unwind_from_signal: lock-free where glibc has _dl_find_object, 2.35+, and refused
 * otherwise), writes the return addresses into a lock-free ring (ring.h) that the sampler
 * thread drains, and restores errno.  A signal that lands while the thread is inside tally's
 * own unwinder (a --native-stacks capture) is skipped and counted, never nested.
 *
 * The kernel checks CPU-time timers at its scheduler tick (CONFIG_HZ, 250 on many distributions):
 * above that rate one signal stands for several periods, which it says (si_overrun), and the
 * sample's DURATION carries them (docs/format.md §14).
 *
 * Threads are armed when they start (the thread registry's hook runs in each new thread before
 * its start routine) and by the sampler's scans (threads that were there before, or not made
 * by pthread_create); a thread that blocks the signal is not armed (its samples would only pile
 * up, as overruns).  What this mechanism cannot see: kernel frames, and time off CPU.
 */
#include "timersample.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "hostthreads.h"
#include "ledger.h"
#include "ownthread.h"
#include "pipeline.h"
#include "ring.h"
#include "unwinder.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define TAG 0x74616c79 /* "taly": the si_value of tally's timers */

static struct {
	_Atomic bool running, paused;
	int signo;
	uint64_t period_ns;
	unsigned depth;
	struct tally_ring ring;
	_Atomic bool ring_ready;
} ts;

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uintptr_t interrupted_pc(const void *ucv)
{
	const ucontext_t *uc = ucv;

#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* ---- the handler (async-signal-safe) -------------------------------------------------------- */

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	struct timer_sample *s;
	size_t pos;
	int n;

	(void)sig;
	if (!atomic_load_explicit(&ts.running, memory_order_acquire))
		return; /* a signal sent before the timer was deleted */
	if (tally_unwind_busy()) {
		tally_pipeline_count(TALLY_C_SAMPLES_SKIPPED, 1);
		return;
	}
	s = tally_ring_claim(&ts.ring, &pos);
	if (!s) {
		tally_pipeline_count(TALLY_C_SAMPLES_TAKEN, 1);
		tally_pipeline_count(TALLY_C_SAMPLES_DROPPED, 1);
		return;
	}
	s->time = mono_ns();
	s->tid = tally_gettid();
	s->overrun = si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0;
	n = tally_unwind_from_signal(s->pcs, (int)ts.depth, interrupted_pc(uc));
	if (!n) /* not found among the unwound frames: the interrupted instruction alone */
		s->pcs[n++] = interrupted_pc(uc);
	s->n = (uint32_t)n;
	tally_ring_publish(&ts.ring, pos);
}

/* ---- the signal ----------------------------------------------------------------------------- */

static bool blocked_here(int sig)
{
	sigset_t cur;

	return pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, sig) == 1;
}

/* The signals' owner (entry/signals.c), handed down at load: the timer never calls up. */
static struct timer_signals owner;

void tally_timer_use_signals(const struct timer_signals *s)
{
	owner = *s;
}

int tally_timer_pick_signal(int signo, char *why, size_t len)
{
	struct sigaction a;
	int sig;

	if (!owner.program_action) {
		snprintf(why, len, "no signal handler of tally's in this process");
		return 0;
	}
	/* TALLY_SAMPLE_SIGNAL (its row in common/settings.c refused those no handler can have) */
	if (signo) {
		owner.program_action(signo, &a);
		if (signo > SIGRTMAX || a.sa_handler != SIG_DFL || (a.sa_flags & SA_SIGINFO)) {
			snprintf(why, len, "TALLY_SAMPLE_SIGNAL=%d: %s", signo,
				 signo > SIGRTMAX ? "not a signal here"
						  : "the program has a handler for it");
			return 0;
		}
		return signo;
	}
	for (sig = SIGRTMAX; sig >= SIGRTMIN; sig--) {
		owner.program_action(sig, &a);
		if (a.sa_handler == SIG_DFL && !(a.sa_flags & SA_SIGINFO) && !blocked_here(sig))
			return sig;
	}
	snprintf(why, len, "every real-time signal is in use by the program");
	return 0;
}

/* ---- the timers ----------------------------------------------------------------------------- */

/* Does thread tid block sig?  (SigBlk of its status; a thread we cannot read is not armed.) */
static bool thread_blocks(pid_t tid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = ~0ull;
	FILE *f;

	if (tid == tally_gettid())
		return blocked_here(sig);
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask >> (sig - 1) & 1;
}

/* The CPU-time clock of any thread of this process (glibc's pthread_getcpuclockid, by tid). */
static clockid_t thread_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6); /* CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED */
}

static struct itimerspec every_period(void)
{
	struct itimerspec it = {{0, 0}, {0, 0}};

	if (!atomic_load_explicit(&ts.paused, memory_order_relaxed)) {
		it.it_interval.tv_sec = it.it_value.tv_sec = (time_t)(ts.period_ns / 1000000000ull);
		it.it_interval.tv_nsec = it.it_value.tv_nsec = (long)(ts.period_ns % 1000000000ull);
	}
	return it;
}

void tally_timer_arm(pid_t tid)
{
	struct sigevent ev;
	struct itimerspec it;
	timer_t t;
	uintptr_t old;

	if (!atomic_load_explicit(&ts.running, memory_order_acquire) || tally_own_tid(tid) ||
	    thread_blocks(tid, ts.signo))
		return;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = ts.signo;
	ev.sigev_notify_thread_id = tid;
	ev.sigev_value.sival_int = TAG;
	if (timer_create(thread_clock(tid), &ev, &t) < 0)
		return;
	it = every_period();
	if (timer_settime(t, 0, &it, NULL) < 0) {
		timer_delete(t);
		return;
	}
	/* the thread's previous timer, if any: a thread of the same tid that has ended, or this
	 * one armed twice by a scan and its start hook at once */
	old = tally_host_thread_swap_word(tid, (uintptr_t)t + 1);
	if (old)
		timer_delete((timer_t)(old - 1));
}

void tally_timer_disarm(pid_t tid)
{
	uintptr_t old = tally_host_thread_swap_word(tid, 0);

	if (old)
		timer_delete((timer_t)(old - 1));
}

static void arm_existing(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0 && !tally_host_thread_word(tid))
			tally_timer_arm(tid);
	}
	closedir(d);
}

int tally_timer_start(unsigned rate_hz, unsigned depth, int signo, size_t slots, char *why,
		      size_t len)
{
	int rc;

	if (!tally_unwind_signal_safe()) {
		snprintf(why, len,
			 "the timer fallback needs libgcc_s and glibc 2.35's _dl_find_object "
			 "to unwind inside a signal handler without a lock");
		return -ENOTSUP;
	}
	if (!owner.claim) {
		snprintf(why, len, "no signal handler of tally's in this process");
		return -ENOTSUP;
	}
	if (!atomic_load(&ts.ring_ready)) {
		rc = tally_ring_init(&ts.ring, slots, sizeof(struct timer_sample));
		if (rc < 0) {
			snprintf(why, len, "out of memory");
			return rc;
		}
		atomic_store(&ts.ring_ready, true);
	}
	ts.signo = signo;
	ts.period_ns = 1000000000ull / rate_hz;
	atomic_store(&ts.paused, false); /* a fork child's session starts its sampling afresh */
	ts.depth = depth < TIMER_SAMPLE_DEPTH ? depth : TIMER_SAMPLE_DEPTH;
	owner.claim(signo, TAG, on_timer);
	atomic_store_explicit(&ts.running, true, memory_order_release);
	arm_existing();
	return 0;
}

size_t tally_timer_drain(void (*fn)(void *ctx, const struct timer_sample *s), void *ctx)
{
	const struct timer_sample *s;
	size_t n = 0;

	if (!atomic_load(&ts.ring_ready))
		return 0;
	while ((s = tally_ring_front(&ts.ring))) {
		fn(ctx, s);
		tally_ring_pop(&ts.ring);
		n++;
	}
	return n;
}

/* A timer deleted meanwhile (its thread ended, or was armed again) fails settime, harmlessly;
 * were its id given to a new timer of the program's in that instant, that one would be set: a
 * benchmark's setting takes that chance, the sampling a user asks for never comes here. */
void tally_timer_pause(bool paused)
{
	pid_t tids[4096];
	size_t i, n;
	struct itimerspec it;

	atomic_store_explicit(&ts.paused, paused, memory_order_relaxed);
	it = every_period();
	n = tally_host_threads_list(tids, sizeof(tids) / sizeof(tids[0]));
	for (i = 0; i < n; i++) {
		uintptr_t w = tally_host_thread_word(tids[i]);

		if (w)
			(void)timer_settime((timer_t)(w - 1), 0, &it, NULL);
	}
}

void tally_timer_stop(void)
{
	pid_t tids[4096];
	size_t i, n;

	if (!atomic_exchange(&ts.running, false))
		return;
	n = tally_host_threads_list(tids, sizeof(tids) / sizeof(tids[0]));
	for (i = 0; i < n; i++)
		tally_timer_disarm(tids[i]);
}

/* Timers are not inherited by fork; the ring may hold a slot the parent's threads had claimed. */
void tally_timer_after_fork_child(void)
{
	atomic_store(&ts.running, false);
	if (atomic_load(&ts.ring_ready))
		tally_ring_fini(&ts.ring);
	atomic_store(&ts.ring_ready, false);
}
