/* SPDX-License-Identifier: MIT */
/*
 * GPU metrics (`tally record --gpu-metrics`): a thread of the collector's own samples the GPUs'
 * performance counters through CUPTI's PM sampling API and hands the samples to the pipeline as
 * GPU_METRIC records (format §13).  It waits for the program to initialise CUDA, settles each
 * device asked for (this process samples it, or another process of the job does, or the driver
 * refuses, ...: pmdevice.h), follows the collection window, and decodes the hardware's buffer
 * every decode period, never on CUPTI's activity path nor on any thread of the program's.
 *
 * Nothing it meets fails the recording: a device that cannot be sampled gets a note and a
 * GPU_METRICS chunk saying why, and the rest of the trace is as it would have been.
 */
/*
 * The room metrics/ (pmsampler.c, pmdevice.c, pmeval.c, cupti-pm.c, metriclock.c): GPU metrics, on
 * threads of their own.  session/ starts and stops it; it hands batches to activity/ (metricq.h,
 * on the consumer's side) and uses base/.
 */
#ifndef TALLY_COLLECTOR_PMSAMPLER_H
#define TALLY_COLLECTOR_PMSAMPLER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "metriclock.h"
#include "metricset.h"

struct pm_sampler;

struct pm_sampler_config {
	uint64_t device_mask;	 /* CUDA ordinals asked for; 0: all */
	unsigned hz;		 /* samples per second */
	const char *set;	 /* "default" or metric names, comma-separated */
	uint64_t hw_buffer;	 /* bytes; 0: by frequency */
	unsigned decode_ms;	 /* 0: by frequency */
	char lock_dir[PATH_MAX]; /* where the per-device lock files go ("": none) */
	struct pm_lock_holder self;
	/* Is the collection window open?  Polled every decode period; NULL: always. */
	bool (*window_open)(void *arg);
	void *window_arg;
	/* Called once on the sampler thread when the PM libraries (libnvperf_host, loaded by
	 * CUPTI as sampling is set up) are in: their destructors run at exit, so what ends
	 * sampling at exit must be registered after them.  NULL: none. */
	void (*pm_loaded)(void *arg);
};

/* Start the sampler thread; NULL (a note says why) if it cannot run at all. */
struct pm_sampler *pm_sampler_start(const struct pm_sampler_config *cfg);

/*
 * Stop sampling, hand on what the hardware still holds, release the devices, and write the
 * cost note; waits at most timeout_ns.  true when the thread finished (and s is freed); false
 * when it is stuck inside CUPTI (it is left behind, and CUPTI must not be finalized under it).
 */
bool pm_sampler_stop(struct pm_sampler *s, uint64_t timeout_ns);

/*
 * CUPTI's context-destroy callback, on the thread destroying the context (CUDA's exit handler at
 * exit, or cudaDeviceReset): PM sampling needs the context, so sampling of the devices given (bit
 * i: CUDA device i; all bits: not known which) ends now, while it is still there: stop, the last
 * decode, disable, the lock released.  Waits for that at most timeout_ns; a sampler that has not
 * done it by then (stuck in CUPTI) makes no CUPTI call for those devices from then on, and what
 * they did not hand on, from the last sample kept to gone_at (CUPTI ns), is a gap.
 */
void pm_sampler_context_ending(struct pm_sampler *s, uint64_t devices, uint64_t gone_at,
			       uint64_t timeout_ns);

/* A fork child: the thread is not there.  Close the inherited lock files (the parent keeps its
 * locks) and forget the rest without touching it. */
void pm_sampler_forget(struct pm_sampler *s);

#endif
