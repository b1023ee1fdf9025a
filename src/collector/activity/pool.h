/* SPDX-License-Identifier: MIT */
/*
 * The buffer pool: at most `capacity` buffers of `size` bytes, allocated on first use (memory is a
 * promise too), 8-byte aligned as CUPTI requires.  Taking and giving back hold a mutex for a few
 * instructions only; allocation happens outside it.
 */
#ifndef TALLY_COLLECTOR_POOL_H
#define TALLY_COLLECTOR_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tally_pool {
	size_t size;
	unsigned capacity;
	uint8_t **bufs;	      /* [capacity]; NULL until allocated */
	unsigned *free_stack; /* indices of allocated buffers not in use */
	unsigned nfree;
	unsigned allocated; /* slots claimed for allocation (bufs[0..allocated-1]) */
	unsigned in_use;
	unsigned high_water;
	uint64_t empty_since; /* time the pool was first found empty, 0 if not empty */
	uint64_t empty_ns;    /* total time spent empty */
	pthread_mutex_t lock;
};

int tally_pool_init(struct tally_pool *p, size_t size, unsigned capacity);
void tally_pool_fini(struct tally_pool *p); /* frees every buffer: none may be in use */

/* A free buffer, or NULL when all capacity is in use.  now: for the empty-time account. */
uint8_t *tally_pool_take(struct tally_pool *p, uint64_t now);

/* Give a buffer back; returns false if it is not one of the pool's (foreign). */
bool tally_pool_give(struct tally_pool *p, uint8_t *buf, uint64_t now);

/* Index of buf in the pool, or -1 if foreign.  Lock-free: bufs[] slots are set once. */
int tally_pool_index(struct tally_pool *p, const uint8_t *buf);

/* Of the buffers in use (none queued: the close drained the queue), those whose first EMPTY_LEN
 * bytes are still zero, as the request callback left them: CUPTI wrote no record there. */
#define TALLY_POOL_EMPTY_LEN 8
unsigned tally_pool_held_empty(struct tally_pool *p);

#endif
