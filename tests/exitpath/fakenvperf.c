/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libnvperf_host.so: the NVPW metrics evaluator the collector binds from the copy
 * CUPTI loaded (src/collector/pmeval.c).  The stand-in CUPTI (fakecupti-pm.c) loads it at its
 * first PM call, as the real CUPTI loads the real one, and hands it the function that gives a
 * metric's value in a sample of its images and the wait a sample's evaluation takes
 * (fakenvperf_bind), so both evaluations agree by construction.  As on the H200, it does not
 * take the PM sampler's "_realtime" metrics (NVPA_STATUS_INVALID_ARGUMENT), which the collector
 * must then evaluate through CUPTI; FAKENVPERF_REFUSE=all makes it take none.
 */
#include <nvperf_cuda_host.h>
#include <nvperf_host.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define API	 __attribute__((visibility("default")))
#define MAX_REQS 64

typedef int (*value_fn)(const void *image, size_t sample, const char *name, double *value);

static value_fn value_of;
static void (*evaluation_time)(void);

struct NVPW_MetricsEvaluator {
	const char *names[MAX_REQS]; /* a request's metricIndex is its place here */
	size_t n;
	bool attributes;
};

API void fakenvperf_bind(value_fn value, void (*per_sample)(void))
{
	value_of = value;
	evaluation_time = per_sample;
}

API NVPA_Status NVPW_InitializeHost(NVPW_InitializeHost_Params *p)
{
	(void)p;
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(
    NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params *p)
{
	if (!p->pChipName && !p->pCounterAvailabilityImage)
		return NVPA_STATUS_INVALID_ARGUMENT;
	p->scratchBufferSize = sizeof(struct NVPW_MetricsEvaluator);
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status NVPW_CUDA_MetricsEvaluator_Initialize(NVPW_CUDA_MetricsEvaluator_Initialize_Params *p)
{
	if (p->scratchBufferSize < sizeof(struct NVPW_MetricsEvaluator) || !value_of)
		return NVPA_STATUS_INVALID_ARGUMENT;
	p->pMetricsEvaluator = (struct NVPW_MetricsEvaluator *)p->pScratchBuffer;
	memset(p->pMetricsEvaluator, 0, sizeof(*p->pMetricsEvaluator));
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(
    NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params *p)
{
	struct NVPW_MetricsEvaluator *e = p->pMetricsEvaluator;
	const char *refuse = getenv("FAKENVPERF_REFUSE");

	if (e->n == MAX_REQS || strstr(p->pMetricName, "_realtime") ||
	    (refuse && strcmp(refuse, "all") == 0))
		return NVPA_STATUS_INVALID_ARGUMENT;
	memset(p->pMetricEvalRequest, 0, sizeof(*p->pMetricEvalRequest));
	p->pMetricEvalRequest->metricIndex = e->n;
	e->names[e->n++] = p->pMetricName;
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status
NVPW_MetricsEvaluator_SetDeviceAttributes(NVPW_MetricsEvaluator_SetDeviceAttributes_Params *p)
{
	if (!p->pCounterDataImage || !p->counterDataImageSize)
		return NVPA_STATUS_INVALID_ARGUMENT;
	p->pMetricsEvaluator->attributes = true;
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status
NVPW_MetricsEvaluator_EvaluateToGpuValues(NVPW_MetricsEvaluator_EvaluateToGpuValues_Params *p)
{
	const struct NVPW_MetricsEvaluator *e = p->pMetricsEvaluator;
	size_t i;

	if (!e->attributes || p->metricEvalRequestStrideSize != sizeof(NVPW_MetricEvalRequest))
		return NVPA_STATUS_INVALID_ARGUMENT;
	evaluation_time();
	for (i = 0; i < p->numMetricEvalRequests; i++) {
		size_t m = p->pMetricEvalRequests[i].metricIndex;

		if (m >= e->n ||
		    value_of(p->pCounterDataImage, p->rangeIndex, e->names[m], &p->pMetricValues[i]))
			return NVPA_STATUS_INVALID_ARGUMENT;
	}
	return NVPA_STATUS_SUCCESS;
}

API NVPA_Status NVPW_MetricsEvaluator_Destroy(NVPW_MetricsEvaluator_Destroy_Params *p)
{
	(void)p;
	return NVPA_STATUS_SUCCESS;
}
