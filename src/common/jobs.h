/* SPDX-License-Identifier: MIT */
/*
 * How many threads the readers use: TALLY_JOBS when it is set (1: everything on the calling
 * thread, as a serial run), else the cores this process may run on (its affinity mask, which a
 * Slurm step or a container's cpuset narrows), at most TALLY_JOBS_MAX.  Outputs never depend on
 * it: parallel reading hands every consumer the same calls in the same order (docs/architecture.md).
 */
#ifndef TALLY_COMMON_JOBS_H
#define TALLY_COMMON_JOBS_H

#define TALLY_JOBS_MAX 64

unsigned tally_jobs(void);

#endif
