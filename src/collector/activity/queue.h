/* SPDX-License-Identifier: MIT */
/*
 * The bounded multi-producer, single-consumer queue of completed buffers, on ring.h.  Producers
 * are CUPTI's completion callbacks on any thread (and NVTX and the host sampler): they never
 * block and never take a lock.  The consumer is the consumer thread (or whoever drains).
 * Capacity is a power of two, at least the pool's, so a buffer from the pool always finds a slot.
 */
#ifndef TALLY_COLLECTOR_QUEUE_H
#define TALLY_COLLECTOR_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

enum tally_origin {
	ORIGIN_CUPTI = 0,
	ORIGIN_NVTX = 1,
	ORIGIN_HOST = 2, /* an array of struct tally_record: host samples and blocking calls */
};

struct tally_queue_item {
	uint8_t *buf;
	size_t valid;
	uint64_t delivered_at;
	unsigned origin; /* enum tally_origin: how to walk it, and whose it is */
};

struct tally_queue {
	struct tally_ring ring;
	_Atomic size_t high_water;
};

int tally_queue_init(struct tally_queue *q, size_t min_capacity);
void tally_queue_fini(struct tally_queue *q);
bool tally_queue_push(struct tally_queue *q, const struct tally_queue_item *item);
bool tally_queue_pop(struct tally_queue *q, struct tally_queue_item *item);
size_t tally_queue_capacity(const struct tally_queue *q);

#endif
