/* SPDX-License-Identifier: MIT */
/*
 * How many threads the readers use: TALLY_JOBS when it is set (1: everything on the calling
 * thread, as a serial run), else the cores this process may run on (its affinity mask, which a
 * Slurm step or a container's cpuset narrows), at most TALLY_WORKERS_MAX.  Outputs never depend on
 * it: parallel reading hands every consumer the same calls in the same order
 * (docs/architecture.md).
 */
#ifndef TALLY_COMMON_WORKERS_H
#define TALLY_COMMON_WORKERS_H

#define TALLY_WORKERS_MAX 64

unsigned tally_workers(void);

#endif
