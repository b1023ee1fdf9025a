/* SPDX-License-Identifier: MIT */
/* tally merge: every section of a trace set, aligned, into one .tally file (docs/merge.md). */
#ifndef TALLY_MERGE_MERGE_H
#define TALLY_MERGE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

struct merge_result {
	bool mixed_jobs; /* refused: the inputs are of several jobs (err lists them) */
	size_t sections;
	uint64_t records;
	uint64_t damaged; /* damaged ranges carried into merge_damaged_chunks */
	uint64_t unknown_chunks;
	int64_t min_offset, max_offset;
};

#define MERGE_FORCE	 1u /* replace an existing output */
#define MERGE_MIXED_JOBS 2u /* merge traces of several jobs all the same (docs/merge.md) */

/*
 * Write every section of set into one file at path (aligned, verdicts kept).  Traces of several
 * jobs (jobs.h) are refused, with res->mixed_jobs and err listing them, unless MERGE_MIXED_JOBS.
 */
int report_merge(struct report_set *set, const char *path, unsigned flags,
		 void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		 struct merge_result *res, char *err, size_t errlen);

#endif
