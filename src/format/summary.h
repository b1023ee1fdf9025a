/* SPDX-License-Identifier: MIT */
/*
 * Summaries (format 1.3, docs/format.md §16): a .tsum file is a .tally file whose sections hold no
 * records.  Each stands for one section of the traces it was made from: its SESSION (marked with
 * the SUMMARY key, its times already aligned, as a merged file's are), its DEVICE, NOTE and DROPS
 * chunks, and a SUMMARY chunk of part SUMMARY_PART_SECTION carrying what the reader would have
 * found in the records: counts, span, loss windows, the latest ledger, the verdict as it was
 * judged on the trace, and the figures a rank is compared by.  The aggregates (the reports of
 * tally stats) follow in chunks of other parts, which the format passes on to whoever reads them
 * (src/stats/summary.c).  This file encodes and decodes the section part.
 */
#ifndef TALLY_FORMAT_SUMMARY_H
#define TALLY_FORMAT_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ledger.h"

enum tally_summary_part {
	TALLY_SUMMARY_SECTION = 1, /* one per section, after its SESSION */
	TALLY_SUMMARY_STATS = 2,   /* the aggregates of tally stats (src/stats/summary.c) */
};

/* Keys of the SECTION part (a key/value list after the part number). */
enum tally_summary_key {
	TALLY_SUMK_RECORDS = 1, /* bytes: (kind, count) varint pairs */
	TALLY_SUMK_T_MIN = 2,	/* aligned ns, 0: none */
	TALLY_SUMK_T_MAX = 3,
	TALLY_SUMK_COMPLETE = 4,     /* the verdict on the trace: 1 COMPLETE */
	TALLY_SUMK_REASON = 5,	     /* bytes, repeated: code, counter, count, text, hint */
	TALLY_SUMK_WINDOW = 6,	     /* bytes, repeated: t_begin, t_end, counter, count */
	TALLY_SUMK_LEDGER = 7,	     /* bytes: the latest LEDGER payload */
	TALLY_SUMK_LEDGER_FINAL = 8, /* 1: that ledger was the final one */
	TALLY_SUMK_LEDGERS = 9,	     /* snapshots the trace had */
	TALLY_SUMK_GPU_BUSY = 10,    /* ns some GPU work ran, devices added */
	TALLY_SUMK_KERNEL_NS = 11,
	TALLY_SUMK_NCCL_NS = 12, /* kernels whose name holds "nccl" */
	TALLY_SUMK_TOP_KERNEL = 13,
	TALLY_SUMK_TOP_KERNEL_NS = 14,
	TALLY_SUMK_TRACE = 15,	 /* bytes: the path of the trace it was made from */
	TALLY_SUMK_UNTIMED = 16, /* records whose timing was lost */
};

struct tally_summary_reason {
	unsigned code, counter; /* enum tally_reason_code, enum tally_counter */
	uint64_t count;
	char text[200], hint[200];
};

/* What a summary says of its section beyond what struct tally_section holds. */
struct tally_summary_facts {
	bool complete;
	struct tally_summary_reason *reasons;
	size_t nreasons;
	uint64_t gpu_busy_ns, kernel_ns, nccl_ns, top_kernel_ns, untimed;
	char *top_kernel, *trace;
};

void tally_summary_facts_free(struct tally_summary_facts *f);

struct tally_section;
/* The SECTION part of s (its reader's summary plus facts) into out, part number first; offset
 * (ns) aligns its times, as the summary's SESSION says its times are aligned. */
void tally_summary_section_encode(struct tally_buf *out, const struct tally_section *s,
				  int64_t offset, const struct tally_summary_facts *facts);
/* Parse a SECTION part (after its part number) into s: false on a bad payload. */
bool tally_summary_section_parse(struct tally_section *s, const uint8_t *p, size_t len);

#endif
