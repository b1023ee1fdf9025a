/* SPDX-License-Identifier: MIT */
/*
 * Memory of tally's for each thread of the program, where thread-local storage would do but
 * must not: libtally.so, loaded at the start (LD_PRELOAD), has its thread-local variables carved
 * out of every thread's stack, and a thread made with PTHREAD_STACK_MIN (16 KiB: Go's and
 * Rust's runtimes, thread pools, JVMs) has little to spare.  So what is large (a stack capture's
 * frames, the unwinder's cache) is allocated on the thread's first need and freed when the
 * thread ends (a pthread key's destructor); the thread-local part is one pointer.
 *
 * Never from a signal handler (it may allocate).
 */
#ifndef TALLY_COLLECTOR_THREADMEM_H
#define TALLY_COLLECTOR_THREADMEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct tally_thread_mem {
	size_t size;
	_Atomic bool ready;
	pthread_key_t key;
};

#define TALLY_THREAD_MEM(bytes)                                                                    \
	{                                                                                          \
		.size = (bytes)                                                                    \
	}

/* The calling thread's block (zeroed when made), or NULL when memory ran out. */
void *tally_thread_mem(struct tally_thread_mem *m);

#endif
