/* SPDX-License-Identifier: MIT */
/*
 * Evaluating decoded PM samples on a thread of their own.  At 10 kHz on the H200 decoding a
 * sample (and resetting its slot of the counter data image) took about 60 us and evaluating its
 * metrics about 40 us: one thread doing both was busy 95-98% of the time, and anything that
 * slowed it (a fork's copy-on-write, a busy machine) left breaks in the samples.  So the sampler
 * thread decodes into one of a device's two images while this thread evaluates the other's
 * samples and hands them to the pipeline, in the order they were decoded.
 *
 * Evaluation is host-side only (the profiler host object and the image; no CUDA context).  A
 * job's image is busy until its samples are handed on; the sampler waits for that before it
 * resets or frees the image.  Without the thread (it could not be started) a job runs at once
 * in the caller: the samples are the same, only the time is spent on the sampler thread.
 */
#ifndef TALLY_COLLECTOR_PMEVAL_H
#define TALLY_COLLECTOR_PMEVAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cupti-pm.h"
#include "metricbatch.h"
#include "metricset.h"

/* The sampler's cost, for the note it writes at close. */
struct pm_cost {
	uint64_t setup_ns, decode_ns, evaluate_ns, reset_ns;
	uint64_t decodes, evaluated;
	uint64_t full_stops;  /* decodes that stopped at a full image */
	uint64_t eval_cpu_ns; /* the evaluating thread's CPU time */
	unsigned faster;      /* times the decode period was halved after an overflow */
};

/* One image's completed samples, to evaluate and hand on as one batch. */
struct pm_eval_job {
	struct pm_eval_job *next;
	CUpti_Profiler_Host_Object *host;
	const char *const *names; /* the device's metric set, nset of them */
	const struct pm_metric *set;
	size_t nset;
	unsigned ordinal;
	uint8_t *image; /* busy until the job is done */
	size_t image_size;
	_Atomic bool *busy; /* cleared when the job is done */
	uint32_t n;
	struct pm_eval_sample {
		uint32_t index; /* in the image */
		struct pm_batch_sample s;
	} samples[];
};

struct pm_eval;

/* The thread; NULL when it could not be started (jobs then run in the caller). */
struct pm_eval *pm_eval_start(void);
/* A job for n samples (its fields are the caller's to fill); NULL without memory. */
struct pm_eval_job *pm_eval_job_new(uint32_t n);
/* Take the job (and free it when done).  e NULL: it runs now, its cost added to cost. */
void pm_eval_submit(struct pm_eval *e, struct pm_eval_job *j, struct pm_cost *cost);
/* Until no job holds the image *busy belongs to. */
void pm_eval_wait_idle(struct pm_eval *e, _Atomic bool *busy);
/* Every job done, the thread ended; its cost added to cost. */
void pm_eval_stop(struct pm_eval *e, struct pm_cost *cost);

#endif
