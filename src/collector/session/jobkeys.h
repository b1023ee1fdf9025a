/* SPDX-License-Identifier: MIT */
/*
 * Which job this process belongs to, for the SESSION chunk (keys 40-43, docs/format.md §5): the
 * batch system's job and step, the launcher's run id and the world size, each as "VAR=value" of
 * the first variable of its list that is set (torchrun's default run id "none" is not an id).
 * Readers group traces by them (docs/merge.md). Read from the environment once, at session start;
 * the collector and the CPU test source both write them through here.
 */
#ifndef TALLY_COLLECTOR_JOBKEYS_H
#define TALLY_COLLECTOR_JOBKEYS_H

#include "buf.h"

void tally_job_keys(struct tally_buf *b);

#endif
