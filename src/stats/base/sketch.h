/* SPDX-License-Identifier: MIT */
/*
 * A quantile sketch with a relative-error guarantee, for medians and percentiles where keeping
 * every value would make memory grow with the trace: the DDSketch idea (Masson, Rim, Lee, VLDB
 * 2019: buckets whose width is a fixed fraction of their value, so any quantile is known to within
 * that fraction) with its cheap "linearly interpolated" index, the one of HdrHistogram: a value's
 * bucket is its binary exponent and its next SKETCH_SUB_BITS bits.
 *
 *   values below 2^(SKETCH_SUB_BITS+1) (256) have a bucket each: exact;
 *   above, a bucket spans [m * 2^k, (m + 1) * 2^k) with 128 <= m < 256, so its width is at most
 *   1/128 of its smallest value, and its centre is within 1/256 of every value in it.
 *
 * The error bound: the estimate of the k-th smallest value lies within SKETCH_REL_ERROR (1/256,
 * 0.39%) of the true k-th smallest value, whatever the values and however many (a median of an
 * even count is the mean of two such estimates: the same bound).  Two sketches merge exactly by
 * adding counts, so sketches of many ranks, or of summaries made on other nodes, combine into the
 * sketch of all their values.
 *
 * Memory follows the buckets that hold a count, never the range between them (buckets.h): at
 * most 32 bytes per bucket holding a count plus 512 bytes, at most 58 KiB, in practice the octaves
 * a group spans (1 us .. 100 ms: 17 octaves, 17 KiB); two values at the two ends of the range (a
 * crafted summary's) cost two counts, not 58 KiB.  A count that would pass 2^64 - 1 stops there,
 * and the sketch says so (saturated).
 */
#ifndef TALLY_STATS_SKETCH_H
#define TALLY_STATS_SKETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buckets.h"
#include "buf.h"

#define SKETCH_SUB_BITS	 7
#define SKETCH_REL_ERROR (1.0 / 256)
#define SKETCH_BUCKETS	 ((64 - SKETCH_SUB_BITS + 1) << SKETCH_SUB_BITS)

struct tally_sketch {
	struct buckets b; /* a count (uint64_t) per bucket */
	uint64_t values;  /* the counts' sum */
	bool saturated;	  /* a count (or values) stopped at UINT64_MAX */
};

/* Add v, times times.  0, or -ENOMEM (the sketch is then unchanged). */
int tally_sketch_add(struct tally_sketch *s, uint64_t v, uint64_t times);
/* dst += src.  0, or -ENOMEM. */
int tally_sketch_merge(struct tally_sketch *dst, const struct tally_sketch *src);
/*
 * The k-th smallest value (0-based, k < values), within SKETCH_REL_ERROR of the true one; min and
 * max, the exact extremes when known (else 0 and UINT64_MAX), clamp the estimate.
 */
double tally_sketch_rank(const struct tally_sketch *s, uint64_t k, uint64_t min, uint64_t max);
/* The value bucket stands for (the centre of its integers), clamped to min and max. */
double tally_sketch_centre(uint32_t bucket, uint64_t min, uint64_t max);
/* The median as nsys defines it (the mean of the middle two for an even count). */
double tally_sketch_median(const struct tally_sketch *s, uint64_t min, uint64_t max);
void tally_sketch_fini(struct tally_sketch *s);
/* The cells in bucket order: how many, and the count of the k-th (k < cells) and its bucket. */
uint32_t tally_sketch_cells(const struct tally_sketch *s);
uint64_t tally_sketch_cell(const struct tally_sketch *s, uint32_t k, uint32_t *bucket);

/* Serialised (the summary file, docs/format.md): lo, n, then n counts, varints. */
void tally_sketch_encode(const struct tally_sketch *s, struct tally_buf *out);
/* From a cursor; false (and nothing kept) on a bad encoding or counts that are not < limit. */
struct tally_cursor;
bool tally_sketch_decode(struct tally_sketch *s, struct tally_cursor *c);

#endif
