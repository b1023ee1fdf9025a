/* SPDX-License-Identifier: MIT */
/*
 * One GPU's PM sampling, for the sampler thread (pmsampler.c), in CUPTI's terms: settle whether
 * this process samples the device (the lock, CUPTI's support, availability and privileges, the
 * metric set that fits one pass), then start, decode, stop.  Decoded samples go to the pipeline
 * as batches (metricbatch.h), their counts and gaps to the ledger (docs/ledger.md 80-89).
 *
 * Only the sampler thread touches a device, so nothing here locks; the evaluating thread
 * (pmeval.h) reads an image only while the device's busy flag for it is set.
 */
#ifndef TALLY_COLLECTOR_PMDEVICE_H
#define TALLY_COLLECTOR_PMDEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cupti-pm.h"
#include "metriclock.h"
#include "metricset.h"
#include "pmeval.h"

/* What the sampler asks of every device (from TALLY_GPU_METRICS_*). */
struct pm_request {
	const struct pm_metric *metrics; /* asked for, in order */
	size_t nmetrics;
	uint64_t interval_ns;
	uint64_t hw_buffer;	    /* bytes */
	uint32_t image_samples;	    /* samples the counter data image holds */
	const char *lock_dir;	    /* NULL: no lock file (the directory took none) */
	struct pm_lock_holder self; /* what the lock file says of this process */
	/* Bit i: device i's CUDA context is gone; no CUPTI call for it may begin (set by another
	 * thread: pmsampler.c). */
	const _Atomic uint64_t *contexts_gone;
	struct pm_eval *eval; /* where decoded samples are evaluated (NULL: on the sampler) */
};

struct pm_device {
	unsigned ordinal;
	uint8_t uuid[16];
	bool has_uuid;
	unsigned state; /* enum tally_gpu_metrics_state; 0 until settled */
	char chip[64];
	struct tally_kept lock;	      /* the lock file, while claimed */
	struct pm_lock_holder holder; /* state ELSEWHERE: who */
	char lock_path[4096];
	unsigned result; /* CUptiResult that refused or stopped it */
	char why[512];
	/* the set that fits one pass, and what was left out */
	struct pm_metric set[PM_METRICS_MAX];
	const char *names[PM_METRICS_MAX];
	size_t nset;
	char left_out[PM_METRICS_MAX][PM_METRIC_NAME_MAX + 80];
	size_t nleft_out;
	/* CUPTI's objects */
	uint8_t *avail, *config;
	/* Two counter data images: one decoded into (images[cur]) while the other's samples are
	 * evaluated (pmeval.h); each in its own mapping, of image_size bytes. */
	uint8_t *images[2];
	_Atomic bool busy[2]; /* images[i] is held by an evaluation job */
	unsigned cur;
	size_t avail_size, config_size, image_size;
	uint32_t image_samples; /* each image's */
	CUpti_Profiler_Host_Object *host;
	CUpti_PmSampling_Object *obj;
	unsigned trigger;  /* enum tally_gpu_metrics_trigger */
	uint64_t interval; /* as configured: ns, or SYS clock cycles */
	uint64_t expected_ns;
	uint64_t hw_buffer;
	double *values;
	/* sampling */
	bool running;
	bool skip_next; /* the first sample after a start spans from an arbitrary moment */
	bool bridge;	/* an overflow restarted sampling: the next kept sample may follow a gap */
	uint64_t started_at, prev_end; /* CUPTI ns; prev_end: end of the last kept sample */
	uint64_t gap_from;	       /* bridge: where the samples stopped covering */
	uint32_t number;	       /* samples taken out of the hardware */
	unsigned overflows_in_row;
	/* the hardware buffer overflowed, or a decode stopped at a full image, since the sampler
	 * last looked: it then decodes more often */
	bool behind;
	uint64_t kept;
	bool set_up; /* was set up to sample (state sampled at some point) */
	bool ended;  /* its CUDA context went: sampling is over, its CUPTI objects released */
};

/* Settle the device's state (sampled, elsewhere, refused, unsupported, busy, stopped); on
 * "sampled" it is ready to start.  cu_dev: the driver's CUdevice for it. */
void pm_device_setup(struct pm_device *d, int cu_dev, const struct pm_request *rq,
		     struct pm_cost *cost);
/* Settle the device as r, the result of call, says (refused, busy, unsupported, or a failure),
 * before any setup. */
void pm_device_settle(struct pm_device *d, CUptiResult r, const char *call);
/* The lock file's descriptor is still tally's, or the device is claimed again (or said). */
void pm_device_keep_lock(struct pm_device *d, const struct pm_request *rq);
/* Start sampling (a deliberate start: no gap is owed across it). */
void pm_device_start(struct pm_device *d, const struct pm_request *rq);
/* Take what the hardware holds, until the deadline (CLOCK_MONOTONIC ns), and hand it on; true
 * when nothing was left there (or sampling ended).  After an overflow the device is set up
 * again; after an overflow or a full image d->behind is set. */
bool pm_device_decode(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		      uint64_t deadline);
/* Stop sampling and hand on what the hardware still holds, until the deadline: what is left
 * then is lost, and counted as a gap. */
void pm_device_stop(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		    uint64_t deadline);
/*
 * The device's CUDA context is being destroyed: sampling ends for good.  While the context is
 * still there (it is, unless rq->contexts_gone says otherwise): stop, hand on what the hardware
 * holds until the deadline, release.  Once it is gone, no CUPTI call is made: the stretch from the
 * last sample kept to gone_at (CUPTI ns) is a gap, and CUPTI's objects are left as they are.
 */
void pm_device_end(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		   uint64_t deadline, uint64_t gone_at);
/* The GPU_METRICS chunk and the note for the device's state, to the pipeline. */
void pm_device_report(const struct pm_device *d);

#endif
