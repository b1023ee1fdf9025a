/* SPDX-License-Identifier: MIT */
/*
 * Three chunk payloads of docs/format.md, each encoder beside its decoder, so that the collector,
 * the readers and the tests write and read them one way:
 *
 *   LOSS     windows (t_begin t_end counter count)*: where a loss counter moved
 *   DROPS    (source context device stream count)*: CUPTI's drops by queue, contexts by device
 *            (cumulative: a reader keeps the latest chunk)
 *   THREADS  (tid pthread_id flags name_len name)*: the process's threads (a later entry for a
 *            tid wins)
 */
#ifndef TALLY_FORMAT_PAYLOADS_H
#define TALLY_FORMAT_PAYLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "reader.h"

/* One LOSS window: count of counter lost between t0 and t1. */
void tally_loss_put(struct tally_buf *b, uint64_t t0, uint64_t t1, unsigned counter,
		    uint64_t count);
/* A LOSS payload into s's windows (a counter so placed is not placed again by the ledger). */
bool tally_loss_decode(struct tally_section *s, const uint8_t *p, size_t len);

/* One DROPS entry. */
void tally_drops_put(struct tally_buf *b, const struct tally_drops *d);
/* A DROPS payload: s's drops replaced by it. */
bool tally_drops_decode(struct tally_section *s, const uint8_t *p, size_t len);

/* One THREADS entry (name: name_len bytes, not NUL-terminated; a tid past 32 bits is the
 * decoder's to refuse). */
void tally_thread_put(struct tally_buf *b, uint64_t tid, uint64_t pthread_id, unsigned flags,
		      const char *name, size_t name_len);
/* A THREADS payload appended to s's threads. */
bool tally_threads_decode(struct tally_section *s, const uint8_t *p, size_t len);

#endif
