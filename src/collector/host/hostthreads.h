/* SPDX-License-Identifier: MIT */
/*
 * The process's threads, for host sampling (sampler.c): a registry of the threads made through
 * pthread_create since libtally.so loaded (interposed: each new thread registers its kernel id
 * and pthread id before its start routine runs, and calls the sampler's start hook there, so a
 * thread is sampled from its first instruction), and what /proc says about any thread.
 */
#ifndef TALLY_COLLECTOR_HOSTTHREADS_H
#define TALLY_COLLECTOR_HOSTTHREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Register new threads from now on; hook (may be NULL) runs in each new thread first. */
void tally_host_threads_watch(void (*hook)(pid_t tid));
void tally_host_threads_unwatch(void);

/* The pthread id registered for tid (0: unknown).  Any thread. */
unsigned long tally_host_thread_pthread(pid_t tid);
/* Record a pthread id learned elsewhere (a Python thread state). */
void tally_host_thread_set_pthread(pid_t tid, unsigned long pthread_id);
/* A per-tid word the sampler keeps with the registry (its timer); 0 none. */
uintptr_t tally_host_thread_word(pid_t tid);
/* Put word in place and return the one it replaced (0 none); 0 too if the table is full. */
uintptr_t tally_host_thread_swap_word(pid_t tid, uintptr_t word);

/* The registry's tids, up to max (for the sampler's scans); returns how many. */
size_t tally_host_threads_list(pid_t *out, size_t max);
/* Forget everything (a fork child: the parent's threads are not here). */
void tally_host_threads_forget(void);

/* /proc/self/task/TID: the thread's state (enum tally_thread_state), from field 3 of its stat
 * file, read through an fd kept open per thread (one pread per call); name from comm.  Sampler
 * thread only.  A thread that is gone answers TALLY_THREAD_UNKNOWN and its fd is closed. */
unsigned tally_host_thread_state(pid_t tid);
bool tally_host_thread_name(pid_t tid, char *out, size_t len);
void tally_host_thread_close(pid_t tid); /* the thread is gone: drop its fd */
void tally_host_thread_close_all(void);

#endif
