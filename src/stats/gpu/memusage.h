/* SPDX-License-Identifier: MIT */
/* CUDA memory in use over time, from MEMORY records; see memusage.c. */
#ifndef TALLY_STATS_MEMUSAGE_H
#define TALLY_STATS_MEMUSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "trace-set.h"

struct mem_event {
	uint64_t t, bytes, addr;
	uint64_t in_use; /* after mem_usage_finish: bytes in use on (sec, device, kind) after it */
	uint32_t device, sec, seq;
	uint8_t kind, op; /* CUPTI memory kind; TALLY_MEM_ALLOC / TALLY_MEM_RELEASE */
};

/* One device and memory kind of one process (section), over the whole timeline. */
struct mem_usage_row {
	uint32_t sec, device;
	uint8_t kind;
	uint64_t allocs, frees, alloc_bytes, freed_bytes;
	uint64_t in_use, peak, peak_time; /* in_use: at the end */
};

struct mem_usage {
	struct mem_event *ev; /* in time order after mem_usage_finish */
	size_t n, cap;
	struct mem_usage_row *rows; /* in order of first appearance */
	size_t nrows, rows_cap;
	struct tally_map row_map; /* (section, device, kind) -> row index + 1 */
	bool failed;
	bool saturated; /* a byte count stopped at UINT64_MAX rather than wrap */
};

void mem_usage_add(struct mem_usage *m, const struct report_section *rs,
		   const struct tally_record *r);
/* Sort and replay: fills in_use of every event and the rows.  0 or -ENOMEM. */
int mem_usage_finish(struct mem_usage *m);
void mem_usage_fini(struct mem_usage *m);

#endif
