/* SPDX-License-Identifier: MIT */
/* Per-thread memory that is not thread-local storage; see threadmem.h. */
#include "threadmem.h"

#include <stdlib.h>

#include "libc.h"

static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;

static bool make_key(struct tally_thread_mem *m)
{
	libc_pthread_mutex_lock(&keys_lock);
	if (!atomic_load_explicit(&m->ready, memory_order_relaxed) &&
	    pthread_key_create(&m->key, free) == 0)
		atomic_store_explicit(&m->ready, true, memory_order_release);
	pthread_mutex_unlock(&keys_lock);
	return atomic_load_explicit(&m->ready, memory_order_acquire);
}

void *tally_thread_mem(struct tally_thread_mem *m)
{
	void *p;

	if (!atomic_load_explicit(&m->ready, memory_order_acquire) && !make_key(m))
		return NULL;
	p = pthread_getspecific(m->key);
	if (!p && (p = calloc(1, m->size)) && pthread_setspecific(m->key, p) != 0) {
		free(p);
		p = NULL;
	}
	return p;
}
