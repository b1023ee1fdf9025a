/* SPDX-License-Identifier: MIT */
/*
 * The control thread's plumbing (control.h).  Signal handlers must not do the closing work
 * themselves (the thread they interrupt may hold CUDA's or malloc's locks), so they post a
 * request: its kind's slot takes the signal, and the semaphore wakes the control thread, which
 * takes no signals.  Requests of one kind that come before the thread takes the first are one
 * request (a repeat of the signal that is ending the process is counted by the session).
 */
#include "control.h"
#include "libc.h"
#include "ownthread.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The most urgent first: a crash cannot wait, a close before a flush makes the flush moot. */
static const enum ctl_cmd by_urgency[] = {CTL_CLOSE_CRASH, CTL_CLOSE_SIGNAL, CTL_FLUSH};

static void clear(struct control *c)
{
	size_t i;

	for (i = 0; i < CTL_KINDS; i++)
		atomic_store_explicit(&c->pending[i], 0, memory_order_relaxed);
}

void control_init(struct control *c)
{
	sem_init(&c->wake, 0, 0);
	clear(c);
	atomic_store_explicit(&c->running, false, memory_order_relaxed);
}

int control_start(struct control *c, void *(*main)(void *), void *arg, const char *name)
{
	int rc = tally_own_thread_create(&c->thread, main, arg, name, true);

	if (rc < 0)
		return rc;
	atomic_store_explicit(&c->running, true, memory_order_release);
	return 0;
}

/* The most urgent request waiting, taken. */
static bool take(struct control *c, struct ctl_msg *m)
{
	size_t i;

	for (i = 0; i < sizeof(by_urgency) / sizeof(by_urgency[0]); i++) {
		unsigned v =
		    atomic_exchange_explicit(&c->pending[by_urgency[i]], 0, memory_order_acquire);

		if (v) {
			m->cmd = (uint8_t)by_urgency[i];
			m->signo = (uint8_t)(v - 1);
			return true;
		}
	}
	return false;
}

bool control_wait(struct control *c, int timeout_ms, struct ctl_msg *m)
{
	struct timespec at;
	int rc;

	if (timeout_ms < 0) {
		do
			rc = libc_sem_wait(&c->wake);
		while (rc < 0 && errno == EINTR);
	} else {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += timeout_ms / 1000;
		at.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		do
			rc = libc_sem_clockwait(&c->wake, CLOCK_MONOTONIC, &at);
		while (rc < 0 && errno == EINTR);
	}
	return rc == 0 && take(c, m);
}

bool control_alive(const struct control *c)
{
	return atomic_load_explicit(&c->running, memory_order_acquire);
}

/* Async-signal-safe: atomics and sem_post. */
bool control_post(struct control *c, enum ctl_cmd cmd, int signo)
{
	if (!control_alive(c) || cmd <= 0 || cmd >= CTL_KINDS)
		return false;
	atomic_store_explicit(&c->pending[cmd], 1u + (unsigned)(uint8_t)signo,
			      memory_order_release);
	return sem_post(&c->wake) == 0;
}

void control_forget(struct control *c)
{
	atomic_store_explicit(&c->running, false, memory_order_relaxed);
	sem_init(&c->wake, 0, 0); /* the parent's, copied in any state: made anew */
	clear(c);
}
