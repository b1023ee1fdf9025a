/* SPDX-License-Identifier: MIT */
/* Bounded MPSC queue; see queue.h. */
#include "queue.h"

#include <errno.h>
#include <stdlib.h>

int tally_queue_init(struct tally_queue *q, size_t min_capacity)
{
	size_t cap = 2, i;

	while (cap < min_capacity)
		cap *= 2;
	q->cells = calloc(cap, sizeof(*q->cells));
	if (!q->cells)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		atomic_init(&q->cells[i].seq, i);
	q->mask = cap - 1;
	atomic_init(&q->head, 0);
	atomic_init(&q->high_water, 0);
	q->tail = 0;
	return 0;
}

void tally_queue_fini(struct tally_queue *q)
{
	free(q->cells);
	q->cells = NULL;
}

size_t tally_queue_capacity(const struct tally_queue *q)
{
	return q->mask + 1;
}

static void note_depth(struct tally_queue *q, size_t pos)
{
	/* Depth is approximate (tail is the consumer's); only the high-water mark uses it. */
	size_t depth = pos + 1 - __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	size_t hw = atomic_load_explicit(&q->high_water, memory_order_relaxed);

	while (depth > hw &&
	       !atomic_compare_exchange_weak_explicit(&q->high_water, &hw, depth,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

bool tally_queue_push(struct tally_queue *q, const struct tally_queue_item *item)
{
	size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
	struct tally_queue_cell *cell;

	for (;;) {
		intptr_t diff;
		size_t seq;

		cell = &q->cells[pos & q->mask];
		/* Acquire: the consumer's release of this cell (it finished reading the item). */
		seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
		diff = (intptr_t)seq - (intptr_t)pos;
		if (diff == 0) {
			/* Relaxed: the CAS only claims the position; the cell's seq publishes. */
			if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (diff < 0) {
			return false; /* full */
		} else {
			pos = atomic_load_explicit(&q->head, memory_order_relaxed);
		}
	}
	cell->item = *item;
	/* Release: the item's contents become visible before the consumer sees the cell ready. */
	atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
	note_depth(q, pos);
	return true;
}

bool tally_queue_pop(struct tally_queue *q, struct tally_queue_item *item)
{
	struct tally_queue_cell *cell = &q->cells[q->tail & q->mask];
	/* Acquire: pairs with the producer's release; the item is complete once seq says so. */
	size_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);

	if (seq != q->tail + 1)
		return false; /* empty, or a producer has claimed but not yet filled the cell */
	*item = cell->item;
	/* Release: our read of the item happens before a producer reuses the cell. */
	atomic_store_explicit(&cell->seq, q->tail + q->mask + 1, memory_order_release);
	__atomic_store_n(&q->tail, q->tail + 1, __ATOMIC_RELAXED);
	return true;
}
