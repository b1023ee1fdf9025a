/* SPDX-License-Identifier: MIT */
/*
 * Steps across ranks (docs/stats.md, rank_steps): the NVTX ranges of one name in every process,
 * the k-th of each process taken as step k (in order of start).  Per step, the slowest process
 * and its lead: its range's duration less the median of the other processes' (with two, the
 * other's).  A straggler is named only when one process is the slowest in at least half the
 * steps and its median lead is larger than the processes' own step-to-step spread: the median,
 * over processes, of the spread of each one's step durations between its 10th and 90th
 * percentile.  A lead inside that spread is noise, whoever is slowest.
 *
 * The range: --range NAME; by default "step", and where no range is named so, torch.profiler's
 * "ProfilerStep".  A range matches NAME when its message is NAME, or NAME followed by digits
 * with at most one of " #_-:." between ("step 12", "ProfilerStep#3").  Memory: 16 bytes per
 * matching range, and the distinct range names (at most 4096) to suggest one when none matched.
 */
#ifndef TALLY_STATS_STEPS_H
#define TALLY_STATS_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace-set.h"

#define STEPS_MIN 3 /* steps a straggler needs before it can be named */

struct step_row {
	uint64_t step;	  /* 0-based; UINT64_MAX: the summary row */
	unsigned ranks;	  /* processes compared */
	uint64_t median;  /* median duration over the processes */
	unsigned slowest; /* section of the slowest process */
	uint64_t slowest_ns;
	int64_t lead; /* slowest - median of the others */
};

struct steps_verdict {
	const char *range;  /* the name matched ("step"), NULL when none did */
	unsigned ranks;	    /* processes with the range */
	unsigned missing;   /* processes without it */
	uint64_t steps;	    /* steps compared: the fewest any process has */
	unsigned candidate; /* section slowest most often */
	uint64_t slowest_count;
	int64_t lead;	 /* its median lead over the others' median, over the steps */
	uint64_t spread; /* the processes' own step-to-step spread (median of p90 - p10) */
	uint64_t candidate_median; /* its median step */
	bool named;		   /* a straggler */
	char candidates[200];	   /* when no range matched: the repeated range names seen */
};

struct steps;

/* A range message msg matches NAME: NAME, or NAME then at most one separator and digits. */
bool steps_name_matches(const char *msg, const char *name);
/* The range names steps look for when none is given ("step", then "ProfilerStep"). */
extern const char *const steps_default_names[];
extern const unsigned steps_default_count;

struct steps *steps_new(const char *range); /* NULL: the default names */
void steps_free(struct steps *s);
int steps_add(struct steps *s, struct report_section *rs, const struct tally_record *r, size_t n);
/* After the scan: steps, leads and the verdict.  0 or -ENOMEM. */
int steps_finish(struct steps *s);
const struct step_row *steps_rows(const struct steps *s, size_t *n);
const struct steps_verdict *steps_verdict(const struct steps *s);

#endif
