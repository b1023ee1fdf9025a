/* SPDX-License-Identifier: MIT */
/*
 * From CUPTI activity records to tally records (docs/format.md §7).  Runs on the consumer thread
 * only, so its caches need no locks.
 */
#ifndef TALLY_COLLECTOR_CONVERT_H
#define TALLY_COLLECTOR_CONVERT_H

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "hashmap.h"
#include "strtab.h"
#include "tally-format.h"

#define CONVERT_CBID_MAX 4096

/* An open CUPTI marker range (START seen, END not yet). */
struct open_marker {
	uint32_t id;
	uint32_t name_id, domain_id;
	uint32_t thread_id, process_id;
	uint64_t start;
};

struct tally_convert {
	struct tally_strtab *strings; /* borrowed */
	const char *(*api_name)(CUpti_ActivityKind kind, uint32_t cbid);
	/* per API domain (0 runtime, 1 driver) and cbid: interned name + 1, and launch class */
	uint32_t api_name_id[2][CONVERT_CBID_MAX];
	int8_t api_class[2][CONVERT_CBID_MAX]; /* enum tally_api_class, -1 not looked up yet */
	struct open_marker *markers;	       /* the open ranges, in no order */
	size_t markers_cap, markers_count;
	struct tally_map marker_at; /* id -> index in markers + 1 */
};

enum convert_result {
	CONVERT_RECORD,	 /* *out holds a record */
	CONVERT_DEVICE,	 /* *device holds a DEVICE chunk payload */
	CONVERT_NONE,	 /* consumed, nothing to write (a marker start, a context record) */
	CONVERT_UNKNOWN, /* a kind tally does not decode */
};

int tally_convert_init(struct tally_convert *c, struct tally_strtab *strings,
		       const char *(*api_name)(CUpti_ActivityKind, uint32_t));
void tally_convert_fini(struct tally_convert *c);

enum convert_result tally_convert(struct tally_convert *c, const CUpti_Activity *rec,
				  struct tally_record *out, struct tally_buf *device);

/* Does a call of this name launch GPU work (kernel, copy, memset, graph)? */
bool tally_api_name_launches(const char *name);

/* Strip CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel". */
size_t tally_api_name_len(const char *name);

#endif
