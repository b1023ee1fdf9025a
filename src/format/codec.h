/* SPDX-License-Identifier: MIT */
/*
 * Column codec for RECORDS chunks (docs/format.md §7): a batch of records of one kind becomes
 * columns of 64-bit values, each stored as CONST, DELTA or DELTA_RLE, whichever is smallest.
 */
#ifndef TALLY_FORMAT_CODEC_H
#define TALLY_FORMAT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "tally-format.h"

/*
 * Scratch space for encoding and decoding, owned by the caller and reused across batches so that
 * the hot path does not allocate.  Zero-initialise, then tally_codec_fini() when done.
 */
struct tally_codec {
	uint64_t *values; /* one column of a batch */
	size_t cap;
	uint32_t unknown_columns; /* decode: column ids this reader does not know, skipped */
};

void tally_codec_fini(struct tally_codec *c);

#define TALLY_COLUMNS_ALL (~1ull)

/* The columns a kind uses (docs/format.md §7): bit 1 << column id. */
uint64_t tally_kind_columns(unsigned kind);

/*
 * Append the payload of a RECORDS chunk for n records of one kind to out, writing the columns in
 * column_mask (tally_kind_columns(kind), or TALLY_COLUMNS_ALL); the others read back as zero.
 */
int tally_records_encode(struct tally_codec *c, struct tally_buf *out, unsigned kind,
			 const struct tally_record *recs, size_t n, uint64_t column_mask);

/*
 * Decode a RECORDS payload into *recs (grown as needed; caller owns it and frees it with free()).
 * Returns the number of records, or -EINVAL for a damaged payload (nothing usable), -ENOMEM.
 */
long tally_records_decode(struct tally_codec *c, const uint8_t *payload, size_t len,
			  unsigned *ret_kind, struct tally_record **recs, size_t *recs_cap);

/*
 * Copy the columns of a RECORDS payload that this reader does not know (ids >= TALLY_COL_MAX),
 * as they are, onto the end of out, whose RECORDS payload starts at begin (written by
 * tally_records_encode for the same rows), and count them in its column count.  So a rewriter
 * (tally merge) keeps a newer writer's columns, as docs/format.md promises.  Returns how many
 * were copied, or -EINVAL if payload does not decode; columns beyond 127 in all are left out.
 */
int tally_records_append_unknown(struct tally_buf *out, size_t begin, const uint8_t *payload,
				 size_t len);

#endif
