/* SPDX-License-Identifier: MIT */
/*
 * PM samples evaluated by NVPW's metrics evaluator (libnvperf_host, the library CUPTI loads for
 * its profiler host API), with the set's metric names converted to requests once.  CUPTI's
 * cuptiProfilerHostEvaluateToGpuValues takes the names again on every call, one sample at a
 * time; at 10 kHz that evaluation was half the sampler thread's CPU on the H200.  Where the
 * library is not loaded, lacks a function, or refuses a step, pm_eval_new says why and the
 * sampler evaluates through CUPTI as before.
 */
#ifndef TALLY_COLLECTOR_PMEVAL_H
#define TALLY_COLLECTOR_PMEVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_eval;

/* TALLY_GPU_METRICS_EVAL: NVPW's evaluator where it can be had ("", the default), CUPTI's
 * always ("cupti"), or both on every sample, the values written NVPW's and the two compared
 * in the gpu-metrics-cost note ("check": for the GPU tests). */
enum pm_eval_mode { PM_EVAL_FAST, PM_EVAL_CUPTI, PM_EVAL_CHECK };

/* An evaluator for the metrics names[0..n) of the device that filled image (a counter data
 * image its sampler decoded into), whose counter availability image is avail and chip its
 * name: made from whichever of the three NVPW takes the most names with.  It evaluates those
 * (pm_eval_takes); the rest (on the H200 the sampler's "_realtime" metrics, which NVPW's CUDA
 * evaluator does not know) are CUPTI's to evaluate, and why names the first it refused.  NULL
 * with why when NVPW takes none. */
struct pm_eval *pm_eval_new(const uint8_t *image, size_t image_size, const uint8_t *avail,
			    const char *chip, const char *const *names, size_t n, char *why,
			    size_t len);
/* Take the device's attributes from a freshly decoded counter data image: once per decode,
 * before its samples.  0, or -1 when NVPW refused (the image's samples then go to CUPTI). */
int pm_eval_image(struct pm_eval *e, const uint8_t *image, size_t size);
/* Does it evaluate metric i of the set? */
bool pm_eval_takes(const struct pm_eval *e, size_t metric);
/* Sample i of the image: the metrics it takes, into their places in values[0..n).  0, or -1
 * when NVPW refused. */
int pm_eval_sample(struct pm_eval *e, const uint8_t *image, size_t size, size_t i,
		   double *values);
/* Destroy it; only while libnvperf_host is whole (as CUPTI's host object). */
void pm_eval_free(struct pm_eval *e);

#endif
