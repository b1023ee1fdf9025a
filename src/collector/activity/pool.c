/* SPDX-License-Identifier: MIT */
/* The bounded buffer pool; see pool.h. */
#include "pool.h"
#include "libc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POOL_ALIGN 4096 /* CUPTI needs 8; a page keeps buffers off each other's cache lines */

int tally_pool_init(struct tally_pool *p, size_t size, unsigned capacity)
{
	memset(p, 0, sizeof(*p));
	if (!size || !capacity)
		return -EINVAL;
	p->size = (size + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1);
	p->capacity = capacity;
	p->bufs = calloc(capacity, sizeof(*p->bufs));
	p->free_stack = calloc(capacity, sizeof(*p->free_stack));
	if (!p->bufs || !p->free_stack) {
		free(p->bufs);
		free(p->free_stack);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

void tally_pool_fini(struct tally_pool *p)
{
	unsigned i;

	for (i = 0; p->bufs && i < p->capacity; i++)
		free(p->bufs[i]);
	free(p->bufs);
	free(p->free_stack);
	pthread_mutex_destroy(&p->lock);
	memset(p, 0, sizeof(*p));
}

static void note_in_use(struct tally_pool *p)
{
	p->in_use++;
	if (p->in_use > p->high_water)
		p->high_water = p->in_use;
}

uint8_t *tally_pool_take(struct tally_pool *p, uint64_t now)
{
	unsigned slot;
	uint8_t *buf;

	libc_pthread_mutex_lock(&p->lock);
	if (p->nfree) {
		buf = p->bufs[p->free_stack[--p->nfree]];
		note_in_use(p);
		pthread_mutex_unlock(&p->lock);
		return buf;
	}
	if (p->allocated == p->capacity) {
		if (!p->empty_since)
			p->empty_since = now ? now : 1;
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	slot = p->allocated++; /* claim the slot; allocate without the lock */
	note_in_use(p);
	pthread_mutex_unlock(&p->lock);

	buf = aligned_alloc(POOL_ALIGN, p->size);
	libc_pthread_mutex_lock(&p->lock);
	if (!buf) {
		/* Give the slot back only if no later slot was claimed meanwhile. */
		if (p->allocated == slot + 1)
			p->allocated--;
		p->in_use--;
	} else {
		/* Publish under the lock; tally_pool_index reads slots lock-free (see there). */
		__atomic_store_n(&p->bufs[slot], buf, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->lock);
	return buf;
}

int tally_pool_index(struct tally_pool *p, const uint8_t *buf)
{
	unsigned i;

	/* A buffer reaches a completion only after take() published it: acquire pairs with that. */
	for (i = 0; i < p->capacity; i++)
		if (__atomic_load_n(&p->bufs[i], __ATOMIC_ACQUIRE) == buf)
			return (int)i;
	return -1;
}

static bool is_free(const struct tally_pool *p, unsigned slot)
{
	unsigned i;

	for (i = 0; i < p->nfree; i++)
		if (p->free_stack[i] == slot)
			return true;
	return false;
}

unsigned tally_pool_held_empty(struct tally_pool *p)
{
	static const uint8_t zero[TALLY_POOL_EMPTY_LEN];
	unsigned slot, n = 0;
	uint8_t *buf;

	libc_pthread_mutex_lock(&p->lock);
	for (slot = 0; slot < p->allocated; slot++) {
		buf = __atomic_load_n(&p->bufs[slot], __ATOMIC_ACQUIRE);
		if (buf && !is_free(p, slot) && !memcmp(buf, zero, sizeof(zero)))
			n++;
	}
	pthread_mutex_unlock(&p->lock);
	return n;
}

bool tally_pool_give(struct tally_pool *p, uint8_t *buf, uint64_t now)
{
	int i = tally_pool_index(p, buf);

	if (i < 0)
		return false;
	libc_pthread_mutex_lock(&p->lock);
	p->free_stack[p->nfree++] = (unsigned)i;
	p->in_use--;
	if (p->empty_since) {
		if (now > p->empty_since)
			p->empty_ns += now - p->empty_since;
		p->empty_since = 0;
	}
	pthread_mutex_unlock(&p->lock);
	return true;
}
