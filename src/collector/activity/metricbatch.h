/* SPDX-License-Identifier: MIT */
/*
 * A batch of one device's metric samples, as the sampler thread hands them to the pipeline's
 * consumer (in memory only; on disk each metric of each sample is a GPU_METRIC record, format
 * §13).  The batch carries its metrics' names and scales, so the consumer needs nothing of the
 * sampler's: it interns the names and writes the records, one metric's samples after another.
 */
#ifndef TALLY_COLLECTOR_METRICBATCH_H
#define TALLY_COLLECTOR_METRICBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metricset.h"
#include "tally-format.h"

struct pm_batch_sample {
	uint64_t start, end; /* CUPTI ns */
	uint32_t number;     /* the sample's number on its device, from 1 */
	uint32_t flags;	     /* enum tally_metric_sample_flag */
};

struct pm_batch {
	struct pm_batch *next; /* the pipeline's hand-off list */
	uint32_t device;
	uint32_t nmetrics, nsamples, capacity;
	const char *names[PM_METRICS_MAX]; /* copies, inside the batch's own allocation */
	uint8_t scales[PM_METRICS_MAX];
	struct pm_batch_sample *samples; /* [capacity] */
	int64_t *values;		 /* [capacity][nmetrics]: value x 10^scale */
};

/* A batch for up to capacity samples of set (nmetrics <= PM_METRICS_MAX); NULL without memory.
 * One allocation: free it with free(). */
struct pm_batch *pm_batch_new(uint32_t device, const struct pm_metric *set, size_t nmetrics,
			      uint32_t capacity);

/* Add a sample with its nmetrics values (CUPTI's doubles, scaled and rounded here; a value past
 * what 64 bits hold is clamped); false when the batch is full. */
bool pm_batch_add(struct pm_batch *b, const struct pm_batch_sample *s, const double *values);

/* The value as records hold it: v x 10^scale, rounded to nearest, clamped; NaN is 0. */
int64_t pm_scaled(double v, unsigned scale);

/* Record m of sample i (name_id: the interned name of metric m). */
void pm_batch_record(const struct pm_batch *b, uint32_t m, uint32_t i, uint32_t name_id,
		     struct tally_record *r);

#endif
