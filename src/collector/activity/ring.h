/* SPDX-License-Identifier: MIT */
/*
 * A bounded multi-producer, single-consumer ring of fixed-size slots (Vyukov's bounded queue),
 * filled in place.  Producers never block and take no lock: a claim is one compare-and-swap, so
 * a signal handler may produce, even one that interrupted a producer on its own thread (that
 * producer's slot is then published after the handler's, and the consumer waits for it).  The
 * consumer is one thread at a time.
 *
 *   producer: slot = tally_ring_claim(r, &pos) ... fill slot ... tally_ring_publish(r, pos)
 *   consumer: while ((slot = tally_ring_front(r))) { ... read slot ... tally_ring_pop(r); }
 */
#ifndef TALLY_COLLECTOR_RING_H
#define TALLY_COLLECTOR_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct tally_ring {
	unsigned char *cells; /* capacity cells of stride bytes: a sequence number, then the slot */
	size_t mask, stride, slot_size;
	_Atomic size_t head; /* next position producers claim */
	size_t tail;	     /* next position the consumer reads; consumer-only */
};

/* At least min_slots slots (a power of two) of slot_size bytes.  0 or -ENOMEM. */
int tally_ring_init(struct tally_ring *r, size_t min_slots, size_t slot_size);
void tally_ring_fini(struct tally_ring *r);
size_t tally_ring_capacity(const struct tally_ring *r);

/* A slot to fill, or NULL when the ring is full.  Async-signal-safe. */
void *tally_ring_claim(struct tally_ring *r, size_t *pos);
void tally_ring_publish(struct tally_ring *r, size_t pos);

/* The oldest published slot, or NULL (empty, or its producer has not published it yet). */
void *tally_ring_front(struct tally_ring *r);
void tally_ring_pop(struct tally_ring *r);

/* Slots claimed and not yet consumed (approximate: the consumer's tail is read unlocked). */
size_t tally_ring_depth(struct tally_ring *r, size_t pos);

#endif
