/* SPDX-License-Identifier: MIT */
/*
 * Host sampling and blocking calls (docs/collector.md, "Host sampling"): the sampler thread,
 * which takes Python samples of every thread on the wall clock, drains the native samples (perf
 * events or the CPU-time timers) and the blocking calls (osrt.c), and hands them to the pipeline
 * as CPU_SAMPLE and OSRT records, with the THREADS chunk and the ledger's counters 70-78.
 *
 *   session start:  tally_sampler_plan (before the SESSION chunk: it decides, and opens the perf
 *                   events, so the header says what runs) -> pipeline -> signals armed ->
 *                   tally_sampler_start
 *   session close:  tally_sampler_stop (before the pipeline's stop: everything drained)
 */
/*
 * The room host/ (sampler.c, perfsample.c, timersample.c, hostthreads.c): host sampling, on the
 * sampler thread and in the program's threads, and the process's thread registry.  session/ (and
 * entry/'s inject.c, at load) call it; it hands records to activity/, drains osrt/, and uses
 * stacks/ and base/.  timersample.c claims its signal from entry/'s signals.c: an upward include
 * scripts/include-graph.py knows of.
 */
#ifndef TALLY_COLLECTOR_SAMPLER_H
#define TALLY_COLLECTOR_SAMPLER_H

#include <stdbool.h>

#include "buf.h"
#include "config.h"

/* Decide how native samples are taken (perf events opened here, or the timer's signal picked),
 * and add the session keys 30-34 to header.  Nothing is sampled yet. */
void tally_sampler_plan(const struct tally_config *c, struct tally_buf *header);
/* Start: the pipeline runs and tally's signal handlers are in place.  0 or -errno. */
int tally_sampler_start(const struct tally_config *c);
/* Stop sampling and recording calls, write what is left (records, THREADS) to the pipeline. */
void tally_sampler_stop(void);
bool tally_sampler_running(void);
/* fork: the child has none of it (its own session, if any, starts a new one). */
void tally_sampler_after_fork_child(void);

/* At load, in the main thread: the things that must be known before anything else runs. */
void tally_sampler_init(void);

#endif
