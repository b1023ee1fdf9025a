/* SPDX-License-Identifier: MIT */
/* Bounded MPSC ring of slots; see ring.h. */
#include "ring.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define SEQ_SIZE 16 /* the sequence number, padded so slots stay 16-byte aligned */

static _Atomic size_t *seq_of(const struct tally_ring *r, size_t pos)
{
	return (_Atomic size_t *)(void *)(r->cells + (pos & r->mask) * r->stride);
}

int tally_ring_init(struct tally_ring *r, size_t min_slots, size_t slot_size)
{
	size_t cap = 2, i;

	while (cap < min_slots)
		cap *= 2;
	r->slot_size = slot_size;
	r->stride = SEQ_SIZE + ((slot_size + 15) & ~(size_t)15);
	r->cells = aligned_alloc(16, cap * r->stride);
	if (!r->cells)
		return -ENOMEM;
	r->mask = cap - 1;
	for (i = 0; i < cap; i++)
		atomic_init(seq_of(r, i), i);
	atomic_init(&r->head, 0);
	r->tail = 0;
	return 0;
}

void tally_ring_fini(struct tally_ring *r)
{
	free(r->cells);
	r->cells = NULL;
}

size_t tally_ring_capacity(const struct tally_ring *r)
{
	return r->mask + 1;
}

void *tally_ring_claim(struct tally_ring *r, size_t *pos)
{
	size_t p = atomic_load_explicit(&r->head, memory_order_relaxed);

	for (;;) {
		/* Acquire: the consumer's release of this cell (it finished reading the slot). */
		size_t seq = atomic_load_explicit(seq_of(r, p), memory_order_acquire);
		intptr_t diff = (intptr_t)seq - (intptr_t)p;

		if (diff == 0) {
			/* Relaxed: the CAS only claims the position; the cell's seq publishes. */
			if (atomic_compare_exchange_weak_explicit(
				&r->head, &p, p + 1, memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (diff < 0) {
			return NULL; /* full */
		} else {
			p = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
	*pos = p;
	return r->cells + (p & r->mask) * r->stride + SEQ_SIZE;
}

void tally_ring_publish(struct tally_ring *r, size_t pos)
{
	/* Release: the slot's contents become visible before the consumer sees it ready. */
	atomic_store_explicit(seq_of(r, pos), pos + 1, memory_order_release);
}

void *tally_ring_front(struct tally_ring *r)
{
	/* Acquire: pairs with the producer's release; the slot is complete once seq says so. */
	if (atomic_load_explicit(seq_of(r, r->tail), memory_order_acquire) != r->tail + 1)
		return NULL; /* empty, or a producer has claimed but not yet filled the cell */
	return r->cells + (r->tail & r->mask) * r->stride + SEQ_SIZE;
}

void tally_ring_pop(struct tally_ring *r)
{
	/* Release: our read of the slot happens before a producer reuses the cell. */
	atomic_store_explicit(seq_of(r, r->tail), r->tail + r->mask + 1, memory_order_release);
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELAXED);
}

size_t tally_ring_depth(struct tally_ring *r, size_t pos)
{
	return pos + 1 - __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
}
