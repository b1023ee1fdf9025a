/* SPDX-License-Identifier: MIT */
/* The evaluating thread; see pmeval.h. */
#include "pmeval.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "libc.h"
#include "ownthread.h"
#include "pipeline.h"

/* How long a batch may wait for room in the pipeline before it is dropped (counted): the
 * consumer takes a batch within a decode period unless it is stalled. */
#define HANDOVER_NS 100000000ull

struct pm_eval {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;			 /* a job came, a job is done, or stop */
	struct pm_eval_job *head, *tail;	 /* under lock */
	bool stop;				 /* under lock */
	uint64_t evaluate_ns, evaluated, cpu_ns; /* the thread's own */
};

static bool evaluate(const struct pm_eval_job *j, uint32_t index, double *values)
{
	CUpti_Profiler_Host_EvaluateToGpuValues_Params p = {
	    .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};

	p.pHostObject = j->host;
	p.pCounterDataImage = j->image;
	p.counterDataImageSize = j->image_size;
	p.rangeIndex = index;
	p.ppMetricNames = (const char **)j->names;
	p.numMetrics = j->nset;
	p.pMetricValues = values;
	return cupti_pm.Evaluate(&p) == CUPTI_SUCCESS;
}

/* To the consumer.  While the pipeline's metric batches wait, this waits (bounded): a batch
 * dropped here would lose samples already taken. */
static void hand_over(struct pm_batch *b)
{
	struct timespec step = {0, 1000000};
	uint64_t deadline = tally_monotonic_ns() + HANDOVER_NS;
	int rc = -ENOENT;

	while (b->nsamples && (rc = tally_pipeline_metric_batch(b)) == -ENOSPC &&
	       tally_monotonic_ns() < deadline)
		libc_nanosleep(&step, NULL);
	if (rc == 0)
		return;
	tally_pipeline_metric_count(TALLY_C_METRIC_DROPPED, b->nsamples);
	free(b);
}

static void run_job(const struct pm_eval_job *j, uint64_t *evaluate_ns, uint64_t *evaluated)
{
	struct pm_batch *b = pm_batch_new(j->ordinal, j->set, j->nset, j->n);
	double values[PM_METRICS_MAX];
	uint64_t t0 = tally_monotonic_ns();
	uint32_t i;

	if (!b) {
		tally_pipeline_metric_count(TALLY_C_METRIC_DROPPED, j->n);
		return;
	}
	for (i = 0; i < j->n; i++)
		if (!evaluate(j, j->samples[i].index, values) ||
		    !pm_batch_add(b, &j->samples[i].s, values))
			tally_pipeline_metric_count(TALLY_C_METRIC_DROPPED, 1);
	*evaluate_ns += tally_monotonic_ns() - t0;
	*evaluated += j->n;
	hand_over(b);
}

static void *eval_main(void *arg)
{
	struct pm_eval *e = arg;
	struct pm_eval_job *j;

	libc_pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->head && !e->stop)
			libc_pthread_cond_wait(&e->cond, &e->lock);
		if (!(j = e->head))
			break; /* stopped, and every job done */
		e->head = j->next;
		if (!e->head)
			e->tail = NULL;
		pthread_mutex_unlock(&e->lock);
		run_job(j, &e->evaluate_ns, &e->evaluated);
		libc_pthread_mutex_lock(&e->lock);
		atomic_store_explicit(j->busy, false, memory_order_release);
		pthread_cond_broadcast(&e->cond);
		free(j);
	}
	e->cpu_ns = tally_thread_cpu_ns();
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

struct pm_eval *pm_eval_start(void)
{
	struct pm_eval *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	/* one of tally's own: no signals, left out of host sampling and blocking calls */
	if (tally_own_thread_create(&e->thread, eval_main, e, "tally-metric-ev", false) < 0) {
		pthread_mutex_destroy(&e->lock);
		pthread_cond_destroy(&e->cond);
		free(e);
		return NULL;
	}
	return e;
}

struct pm_eval_job *pm_eval_job_new(uint32_t n)
{
	return calloc(1, sizeof(struct pm_eval_job) + (size_t)n * sizeof(struct pm_eval_sample));
}

void pm_eval_submit(struct pm_eval *e, struct pm_eval_job *j, struct pm_cost *cost)
{
	if (!e) {
		run_job(j, &cost->evaluate_ns, &cost->evaluated);
		free(j);
		return;
	}
	atomic_store_explicit(j->busy, true, memory_order_relaxed);
	libc_pthread_mutex_lock(&e->lock);
	if (e->tail)
		e->tail->next = j;
	else
		e->head = j;
	e->tail = j;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void pm_eval_wait_idle(struct pm_eval *e, _Atomic bool *busy)
{
	if (!e || !atomic_load_explicit(busy, memory_order_acquire))
		return;
	libc_pthread_mutex_lock(&e->lock);
	while (atomic_load_explicit(busy, memory_order_acquire))
		libc_pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void pm_eval_stop(struct pm_eval *e, struct pm_cost *cost)
{
	if (!e)
		return;
	libc_pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	libc_pthread_join(e->thread, NULL);
	cost->evaluate_ns += e->evaluate_ns;
	cost->evaluated += e->evaluated;
	cost->eval_cpu_ns += e->cpu_ns;
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	free(e);
}
