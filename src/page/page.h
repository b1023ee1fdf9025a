/* SPDX-License-Identifier: MIT */
/*
 * tally report: one self-contained HTML page (docs/report.md).  html.c runs the passes and writes
 * the page, timeline*.c build its level-of-detail lanes, html/ holds the page's own files.
 */
#ifndef TALLY_PAGE_PAGE_H
#define TALLY_PAGE_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

struct report_html_opts {
	const char *output;    /* the .html file */
	bool force;	       /* replace an existing output */
	unsigned buckets;      /* level-of-detail buckets per lane */
	uint64_t exact_budget; /* events drawn one by one, at most */
	const char *range;     /* rank_steps' NVTX range (NULL: step, ProfilerStep) */
	bool mixed_jobs;       /* draw traces of several jobs on one page all the same */
};

struct report_html_result {
	uint64_t records;      /* records read */
	uint64_t bytes;	       /* size of the page */
	uint64_t exact_events; /* events in the page one by one */
	size_t lanes;
	bool complete;	   /* every section COMPLETE */
	bool input_failed; /* the failure was reading an input, not writing the page */
	bool mixed_jobs;   /* refused: the traces are of several jobs (err lists them) */
};

/*
 * Read the traces (two passes) and write one self-contained HTML page: verdict, ledger over time,
 * GPU busy and idle, the stats reports, a timeline, ranks.  Returns 0 or -errno with err saying
 * why; a partial page is removed.
 */
int report_html(char *const *paths, size_t npaths, const struct report_html_opts *o,
		void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		struct report_html_result *res, char *err, size_t errlen);

#endif
