/* SPDX-License-Identifier: MIT */
/*
 * tally's own threads (consumer, control, sampler, watchdog helpers): created with every signal
 * blocked, and known as tally's, so that the host sampler, the blocking-call interposers and the
 * thread registry leave them out (their waits are tally's, not the program's).
 */
#ifndef TALLY_COLLECTOR_OWNTHREAD_H
#define TALLY_COLLECTOR_OWNTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

/* pthread_create with every signal blocked in the new thread, which is marked as tally's before
 * fn runs; name (may be NULL) is its pthread name; detached: nobody joins it.  0 or -errno. */
int tally_own_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name,
			    bool detached);

/* Is the calling thread one of tally's?  (A thread-local read: the interposers' fast path.) */
bool tally_own_thread(void);
/* Is tid one of tally's threads in this process? */
bool tally_own_tid(pid_t tid);
/* A fork child: the parent's threads are not here. */
void tally_own_threads_forget(void);

/* The calling thread's kernel id, cached per thread (async-signal-safe). */
pid_t tally_gettid(void);

#endif
