/* SPDX-License-Identifier: MIT */
/*
 * NVTX ranges projected onto the GPU, as Kineto does for its user annotations
 * (gpu_user_annotation): each range (a user_annotation on its host thread) owns the GPU work
 * launched inside it on that thread, the innermost range where they nest (the one open at the
 * launch with the latest start); on each stream that work ran on, the range's projection spans
 * from the first start of that work to its last end.  kineto.c collects a section's ranges,
 * API calls and GPU work here as it writes them, and asks for the spans at the section's end;
 * a lower file that never calls back.
 *
 * Memory: 32 bytes per range, 24 per API call with a correlation id, 32 per GPU record with one,
 * for one section at a time.  Time: a sort of each list, then one sweep.
 */
#ifndef TALLY_EXPORT_KINETO_ANNOT_H
#define TALLY_EXPORT_KINETO_ANNOT_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct kanno_range {
	uint64_t thread, t0, t1;
	uint32_t name_id;
	uint32_t index; /* in the order added: the user_annotation's number in its section */
};

struct kanno_launch {
	uint64_t thread, t;
	uint32_t corr;
};

struct kanno_gpu {
	uint64_t start, end;
	uint32_t corr, device, stream;
};

/* One range's projection on one stream (times as recorded, ns). */
struct kanno_span {
	uint32_t range; /* kanno_range.index */
	uint32_t name_id;
	uint32_t device, stream;
	uint64_t start, end;
};

struct kanno {
	struct kanno_range *ranges;
	size_t nranges, ranges_cap;
	struct kanno_launch *launches;
	size_t nlaunches, launches_cap;
	struct kanno_gpu *gpu;
	size_t ngpu, gpu_cap;
	struct kanno_span *spans;
	size_t nspans, spans_cap;
	struct tally_map owner; /* correlation id -> range (sorted position) + 1 */
	struct tally_map at;	/* (range, device << 32 | stream) -> spans index + 1 */
};

/* Each returns 0 or -ENOMEM.  A range's index is the number of ranges added before it. */
int kanno_range(struct kanno *a, uint64_t thread, uint64_t t0, uint64_t t1, uint32_t name_id);
int kanno_launch(struct kanno *a, uint64_t thread, uint64_t t, uint32_t corr);
int kanno_gpu(struct kanno *a, uint32_t corr, uint32_t device, uint32_t stream, uint64_t start,
	      uint64_t end);
/* The projections of what was added, by range and then stream; valid until kanno_reset.  0 or
 * -ENOMEM (*spans then NULL). */
int kanno_spans(struct kanno *a, const struct kanno_span **spans, size_t *n);
/* Empty for the next section (memory kept); kanno_free gives it back. */
void kanno_reset(struct kanno *a);
void kanno_free(struct kanno *a);

#endif
