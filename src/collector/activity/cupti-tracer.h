/* SPDX-License-Identifier: MIT */
/*
 * CUPTI as the session drives it: the buffer callbacks, the activity kinds of --trace, the few
 * API callbacks the collector needs, and the collection window.  The tracer's state is its own:
 * the session owns one and passes it in; CUPTI's callback finds it through its userdata.
 */
#ifndef TALLY_COLLECTOR_CUPTI_TRACER_H
#define TALLY_COLLECTOR_CUPTI_TRACER_H

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct cupti_tracer {
	/* The window moves from the control thread (delay, duration, close) and from application
	 * threads (cudaProfilerStart/Stop): one at a time. */
	pthread_mutex_t window_lock;
	unsigned trace_bits;
	CUpti_SubscriberHandle subscriber;
	bool subscribed;
	bool window_open; /* under window_lock */
	/* Set up: written at setup and teardown, read by flushes on other threads. */
	_Atomic bool on;
	/* Called from CUPTI's context-destroy callback, after its flush, on the thread destroying
	 * the context: devices is the context's (bit i: CUDA device i; all bits: not known).  Set
	 * once, before setup; NULL: none. */
	void (*context_ending)(void *arg, uint64_t devices);
	void *context_arg;
};

void cupti_tracer_init(struct cupti_tracer *t);
/* Register the buffer callbacks, subscribe, and open the window unless it opens later. */
int cupti_tracer_setup(struct cupti_tracer *t, const struct tally_config *cfg, char *why,
		       size_t len);
void cupti_tracer_window(struct cupti_tracer *t, bool open); /* enable/disable the kinds */
bool cupti_tracer_window_open(struct cupti_tracer *t);
void cupti_tracer_flush(struct cupti_tracer *t, bool forced); /* cuptiActivityFlushAll */
void cupti_tracer_teardown(struct cupti_tracer *t); /* disable, unsubscribe, cuptiFinalize */
bool cupti_tracer_on(const struct cupti_tracer *t);

/* fork: hold the window lock across it; the child's tracer is not set up (its CUDA is not). */
void cupti_tracer_before_fork(struct cupti_tracer *t);
void cupti_tracer_after_fork_parent(struct cupti_tracer *t);
void cupti_tracer_after_fork_child(struct cupti_tracer *t);

uint64_t cupti_now(void); /* CUPTI's clock; 0 without CUPTI */

#endif
