/* SPDX-License-Identifier: MIT */
/*
 * Which traces belong together (docs/merge.md, "Traces of different jobs"): the sections of a
 * set grouped into jobs, so that merge, report and the cross-rank reports do not take five runs
 * recorded hours apart for the ranks of one job.  Two sections are of one job when they carry
 * the same job and step (SLURM_JOB_ID/SLURM_STEP_ID, or another batch system's job id), or the
 * same launcher run (TORCHELASTIC_RUN_ID), or one is the other's fork child (parent session id),
 * or, where neither says otherwise, their recordings overlap in time (each widened by
 * JOBS_SLACK_NS).  Two sections that carry different job ids, steps or run ids are never of one
 * job, whatever their times.
 */
#ifndef TALLY_READ_JOBS_H
#define TALLY_READ_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace-set.h"

#define JOBS_SLACK_NS 60000000000ull /* 60 s: ranks of one job start within a minute */

struct report_job {
	size_t nsections;
	unsigned first;	     /* its first section */
	const char *key;     /* "SLURM_JOB_ID=123 SLURM_STEP_ID=0", a run id, or NULL; printable */
	uint64_t start, end; /* CLOCK_REALTIME ns: earliest start, latest end of its sections */
	unsigned ranks;	     /* distinct ranks among its sections */
	long world_size;     /* what its sections say the job has (-1: not said) */
	const char *hosts;   /* the first host, and " and others"; printable, owned by the jobs */
	bool many_hosts;
};

struct report_jobs {
	struct report_job *jobs;
	size_t njobs;
	unsigned *job_of; /* by section index: which job */
	size_t nsections;
	char **owned;
	size_t nowned;
};

/* Group the sections of a scanned set.  0 or -ENOMEM. */
int report_jobs_group(const struct report_set *set, struct report_jobs *out);
void report_jobs_free(struct report_jobs *j);
/* One line per job: its key or time span, host, sections and ranks, prefixed. */
void report_jobs_print(const struct report_jobs *j, FILE *out, const char *prefix);
/* The job's ranks less than its world size: "3 of WORLD_SIZE=4 ranks" into buf; NULL if whole. */
const char *report_job_missing(const struct report_job *job, char *buf, size_t len);

#endif
