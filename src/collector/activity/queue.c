/* SPDX-License-Identifier: MIT */
/* The queue of buffers, on ring.h; see queue.h. */
#include "queue.h"

#include <string.h>

int tally_queue_init(struct tally_queue *q, size_t min_capacity)
{
	atomic_init(&q->high_water, 0);
	return tally_ring_init(&q->ring, min_capacity, sizeof(struct tally_queue_item));
}

void tally_queue_fini(struct tally_queue *q)
{
	tally_ring_fini(&q->ring);
}

size_t tally_queue_capacity(const struct tally_queue *q)
{
	return tally_ring_capacity(&q->ring);
}

static void note_depth(struct tally_queue *q, size_t pos)
{
	/* Depth is approximate; only the high-water mark uses it. */
	size_t depth = tally_ring_depth(&q->ring, pos);
	size_t hw = atomic_load_explicit(&q->high_water, memory_order_relaxed);

	while (depth > hw &&
	       !atomic_compare_exchange_weak_explicit(&q->high_water, &hw, depth,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

bool tally_queue_push(struct tally_queue *q, const struct tally_queue_item *item)
{
	size_t pos;
	void *slot = tally_ring_claim(&q->ring, &pos);

	if (!slot)
		return false;
	memcpy(slot, item, sizeof(*item));
	tally_ring_publish(&q->ring, pos);
	note_depth(q, pos);
	return true;
}

bool tally_queue_pop(struct tally_queue *q, struct tally_queue_item *item)
{
	const void *slot = tally_ring_front(&q->ring);

	if (!slot)
		return false;
	memcpy(item, slot, sizeof(*item));
	tally_ring_pop(&q->ring);
	return true;
}
