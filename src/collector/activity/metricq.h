/* SPDX-License-Identifier: MIT */
/*
 * Where the GPU-metrics sampler leaves what the pipeline's consumer writes: batches of samples
 * (at most PIPELINE_METRIC_BATCHES waiting, so a stalled consumer costs bounded memory and
 * never takes a slot of CUPTI's buffer queue), the gaps in a device's samples, and the sampler's
 * counters.  The sampler is an ordinary thread, so a mutex is fine here.
 */
#ifndef TALLY_COLLECTOR_METRICQ_H
#define TALLY_COLLECTOR_METRICQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ledger.h"
#include "metricbatch.h"

#define METRICQ_GAPS 16 /* LOSS entries per ledger slice; the last one widens to take the rest */

struct metric_gap {
	uint64_t t0, t1; /* CUPTI ns: no sample of the device covers this */
	uint64_t count;	 /* gaps it stands for (more than 1 only in the widened last entry) */
	uint64_t ns;	 /* their unsampled time */
};

struct metricq {
	pthread_mutex_t lock;
	struct pm_batch *head, *tail; /* under lock */
	unsigned pending;	      /* under lock */
	unsigned limit;
	struct metric_gap gaps[METRICQ_GAPS]; /* under lock */
	unsigned ngaps;			      /* under lock */
	/* Sampler-side ledger counters, TALLY_C_METRIC_DECODED + i.  Relaxed: statistics. */
	_Atomic uint64_t counts[TALLY_C_METRIC_DEVICES - TALLY_C_METRIC_DECODED + 1];
};

void metricq_init(struct metricq *q, unsigned limit);
void metricq_fini(struct metricq *q); /* frees batches still waiting */
/* 0, or -ENOSPC when limit batches wait (b stays the caller's). */
int metricq_put(struct metricq *q, struct pm_batch *b);
/* Every waiting batch, oldest first, linked by next; the caller frees them. */
struct pm_batch *metricq_take(struct metricq *q);
void metricq_gap(struct metricq *q, uint64_t t0, uint64_t t1);
/* The gaps since the last call, into out[METRICQ_GAPS]; returns how many. */
unsigned metricq_take_gaps(struct metricq *q, struct metric_gap *out);
void metricq_count(struct metricq *q, unsigned counter, uint64_t n);
/* Add the sampler-side counters into a ledger's values. */
void metricq_snapshot(struct metricq *q, uint64_t *v);

#endif
