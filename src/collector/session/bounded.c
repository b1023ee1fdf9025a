/* SPDX-License-Identifier: MIT */
/*
 * run_bounded (bounded.h): the helper thread and the waiter share one refcounted block, so
 * whichever finishes last frees it, and a helper stuck for good leaks only that block.
 */
#include "bounded.h"
#include "clock.h"
#include "libc.h"
#include "ownthread.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

struct bounded {
	void (*fn)(void *);
	void *arg;
	_Atomic int done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic int refs; /* the waiter and the runner; the last one frees */
};

static void bounded_put(struct bounded *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
	}
}

static void *bounded_main(void *arg)
{
	struct bounded *b = arg;

	b->fn(b->arg);
	libc_pthread_mutex_lock(&b->lock);
	atomic_store_explicit(&b->done, 1, memory_order_release);
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	bounded_put(b);
	return NULL;
}

static struct bounded *bounded_new(void (*fn)(void *), void *arg)
{
	struct bounded *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return NULL;
	b->fn = fn;
	b->arg = arg;
	atomic_init(&b->refs, 2);
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
	return b;
}

/* A detached thread that takes no signals; false if none could be made. */
static bool bounded_start(struct bounded *b)
{
	pthread_t t;

	return tally_own_thread_create(&t, bounded_main, b, NULL, true) == 0;
}

static bool bounded_wait(struct bounded *b, uint64_t timeout_ns)
{
	struct timespec deadline = tally_monotonic_after(timeout_ns);
	bool ok;

	libc_pthread_mutex_lock(&b->lock);
	while (!atomic_load_explicit(&b->done, memory_order_acquire))
		if (libc_pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
			break;
	ok = atomic_load_explicit(&b->done, memory_order_acquire);
	pthread_mutex_unlock(&b->lock);
	return ok;
}

bool run_bounded(void (*fn)(void *), void *arg, uint64_t timeout_ns)
{
	struct bounded *b = bounded_new(fn, arg);
	bool ok;

	if (!b || !bounded_start(b)) {
		/* No watchdog to be had (no memory, no threads): run it here, unbounded. */
		if (b) {
			atomic_store(&b->refs, 1);
			bounded_put(b);
		}
		fn(arg);
		return true;
	}
	ok = bounded_wait(b, timeout_ns);
	/* On a timeout the runner is left behind, stuck; it frees b if it ever returns. */
	bounded_put(b);
	return ok;
}
