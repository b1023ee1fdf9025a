/* SPDX-License-Identifier: MIT */
/*
 * Reading many traces on all cores, with the output of a serial read (inputs.c uses it).  Worker
 * threads run the framer (reader.h: checksums, damage, record decoding: most of a read's cost) of
 * the inputs in order, a few inputs ahead, each into a bounded queue; the calling thread applies
 * each input's items in file order, so every consumer sees the very calls, in the very order, of
 * a serial read, and the outputs are byte for byte the same whatever the thread count.  Memory:
 * items waiting take at most PREFETCH_BYTES in all, PREFETCH_QUEUE_BYTES for the input being
 * applied (an item larger than that still passes, alone); and one open file and read window per
 * worker: inputs are opened when a worker takes them and closed when it is done with them.
 */
#ifndef TALLY_READ_PREFETCH_H
#define TALLY_READ_PREFETCH_H

#include <stddef.h>

#include "trace-set.h"

#define PREFETCH_BYTES	     (16u << 20)
#define PREFETCH_QUEUE_BYTES (4u << 20)

struct prefetch;

/* Start workers over set's inputs (none when workers < 1): NULL when it cannot (then read
 * serially). */
struct prefetch *prefetch_start(struct report_set *set, unsigned workers);
/*
 * Apply input i's items, in order, through r (the inputs are taken in order: i is the next one).
 * 0, tally_reading_apply's non-zero value, or -errno when the input could not be opened (err says
 * so).
 */
int prefetch_input(struct prefetch *p, size_t i, struct tally_reading *r, char *err, size_t errlen);
/* Stop the workers (those still framing give up), wait for them and free p.  NULL is fine. */
void prefetch_stop(struct prefetch *p);

#endif
