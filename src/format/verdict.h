/* SPDX-License-Identifier: MIT */
/*
 * The verdict on a recorded section: COMPLETE only when the trace proves nothing was lost
 * (docs/ledger.md lists the rules); otherwise INCOMPLETE, with every reason, its count, the time
 * windows where it happened and what to change.  Shared by check, stats, export and record.
 */
#ifndef TALLY_FORMAT_VERDICT_H
#define TALLY_FORMAT_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"

enum tally_reason_code {
	TALLY_R_NOT_CLOSED,	 /* no final ledger */
	TALLY_R_DAMAGED,	 /* truncated, corrupt or missing chunks */
	TALLY_R_LOSS,		 /* a loss counter is non-zero */
	TALLY_R_STRANDED,	 /* buffers handed to CUPTI never came back */
	TALLY_R_NO_GPU_RECORDS,	 /* CUDA work launched, no GPU record at all */
	TALLY_R_MISSING_RECORDS, /* the ledger says more records were written than the file has */
	TALLY_R_NO_SESSION,	 /* the SESSION chunk was lost */
};

struct tally_reason {
	enum tally_reason_code code;
	unsigned counter; /* TALLY_R_LOSS: which counter */
	uint64_t count;
	char text[200];
	char hint[200];
};

struct tally_verdict {
	bool complete;
	struct tally_reason *reasons;
	size_t nreasons;
};

/* Stable short names for reasons ("loss", "not-closed", ...), as JSON, CSV and SQLite say them. */
const char *tally_reason_code_name(enum tally_reason_code c);

int tally_verdict_compute(const struct tally_file *f, const struct tally_section *s,
			  struct tally_verdict *v);
void tally_verdict_fini(struct tally_verdict *v);

/* Worst of all sections of all files given: complete only if every one is. */
bool tally_files_complete(struct tally_file *const *files, size_t nfiles);

#endif
