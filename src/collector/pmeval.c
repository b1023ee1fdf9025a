/* SPDX-License-Identifier: MIT */
/* NVPW's metrics evaluator for PM samples; see pmeval.h. */
#include "pmeval.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <nvperf_cuda_host.h>
#include <nvperf_host.h>

#define EVAL_METRICS_MAX 64

static struct {
	bool tried, loaded;
	NVPA_Status (*InitializeHost)(NVPW_InitializeHost_Params *);
	NVPA_Status (*ScratchSize)(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params *);
	NVPA_Status (*Initialize)(NVPW_CUDA_MetricsEvaluator_Initialize_Params *);
	NVPA_Status (*Convert)(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params *);
	NVPA_Status (*SetDeviceAttributes)(NVPW_MetricsEvaluator_SetDeviceAttributes_Params *);
	NVPA_Status (*Evaluate)(NVPW_MetricsEvaluator_EvaluateToGpuValues_Params *);
	NVPA_Status (*Destroy)(NVPW_MetricsEvaluator_Destroy_Params *);
} nvpw;

static const struct {
	const char *symbol;
	size_t offset;
} symbols[] = {
#define SYM(field, name) {name, offsetof(__typeof__(nvpw), field)}
    SYM(InitializeHost, "NVPW_InitializeHost"),
    SYM(ScratchSize, "NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize"),
    SYM(Initialize, "NVPW_CUDA_MetricsEvaluator_Initialize"),
    SYM(Convert, "NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest"),
    SYM(SetDeviceAttributes, "NVPW_MetricsEvaluator_SetDeviceAttributes"),
    SYM(Evaluate, "NVPW_MetricsEvaluator_EvaluateToGpuValues"),
    SYM(Destroy, "NVPW_MetricsEvaluator_Destroy"),
#undef SYM
};

struct pm_eval {
	NVPW_MetricsEvaluator *ev;
	uint8_t *scratch;
	NVPW_MetricEvalRequest req[EVAL_METRICS_MAX];
	size_t idx[EVAL_METRICS_MAX]; /* request k is metric idx[k] of the set */
	size_t n;		      /* requests: the metrics NVPW took */
};

/* Bound from the copy CUPTI loaded (never loaded here: RTLD_NOLOAD), once; the sampler thread
 * is the only caller. */
static bool load(char *why, size_t len)
{
	NVPW_InitializeHost_Params ip = {.structSize = NVPW_InitializeHost_Params_STRUCT_SIZE};
	void *h;
	size_t i;

	if (nvpw.tried) {
		snprintf(why, len, "NVPW's evaluator is not there (as before)");
		return nvpw.loaded;
	}
	nvpw.tried = true;
	if (!(h = dlopen("libnvperf_host.so", RTLD_NOW | RTLD_NOLOAD))) {
		snprintf(why, len, "libnvperf_host.so is not loaded");
		return false;
	}
	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *fn = dlsym(h, symbols[i].symbol);

		if (!fn) {
			snprintf(why, len, "libnvperf_host.so has no %s", symbols[i].symbol);
			dlclose(h);
			return false;
		}
		*(void **)((char *)&nvpw + symbols[i].offset) = fn;
	}
	dlclose(h); /* CUPTI's reference keeps it */
	if (nvpw.InitializeHost(&ip) != NVPA_STATUS_SUCCESS) {
		snprintf(why, len, "NVPW_InitializeHost failed");
		return false;
	}
	nvpw.loaded = true;
	return true;
}

/* What the evaluator is made from: the counter data image (the device itself, as it sampled),
 * else the counter availability image, else the chip's name (a virtual device). */
struct source {
	const char *what;
	bool usable;
	const uint8_t *image, *avail;
	size_t image_size;
	const char *chip;
};

static bool make(struct pm_eval *e, const struct source *src, char *why, size_t len)
{
	NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params sp = {
	    .structSize = NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params_STRUCT_SIZE};
	NVPW_CUDA_MetricsEvaluator_Initialize_Params ip = {
	    .structSize = NVPW_CUDA_MetricsEvaluator_Initialize_Params_STRUCT_SIZE};
	NVPA_Status st;

	/* the scratch size is had from the availability image or the chip (not the data image) */
	sp.pCounterAvailabilityImage = src->avail;
	sp.pChipName = src->avail ? NULL : src->chip;
	if ((st = nvpw.ScratchSize(&sp)) != NVPA_STATUS_SUCCESS ||
	    !(e->scratch = malloc(sp.scratchBufferSize))) {
		snprintf(why, len, "NVPW's evaluator scratch size: status %d", (int)st);
		return false;
	}
	ip.pScratchBuffer = e->scratch;
	ip.scratchBufferSize = sp.scratchBufferSize;
	if (src->image) {
		ip.pCounterDataImage = src->image;
		ip.counterDataImageSize = src->image_size;
	} else {
		ip.pCounterAvailabilityImage = sp.pCounterAvailabilityImage;
		ip.pChipName = sp.pChipName;
	}
	if ((st = nvpw.Initialize(&ip)) != NVPA_STATUS_SUCCESS) {
		snprintf(why, len, "NVPW_CUDA_MetricsEvaluator_Initialize from the %s: status %d",
			 src->what, (int)st);
		return false;
	}
	e->ev = ip.pMetricsEvaluator;
	return true;
}

/* Every name NVPW takes becomes a request; why names the first it refused. */
static void convert(struct pm_eval *e, const char *const *names, size_t n, char *why, size_t len)
{
	NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params p = {
	    .structSize = NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params_STRUCT_SIZE};
	bool refused = false;
	NVPA_Status st;
	size_t i;

	for (i = 0; i < n; i++) {
		p.pMetricsEvaluator = e->ev;
		p.pMetricName = names[i];
		p.pMetricEvalRequest = &e->req[e->n];
		p.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
		if ((st = nvpw.Convert(&p)) == NVPA_STATUS_SUCCESS) {
			e->idx[e->n++] = i;
		} else if (!refused) {
			snprintf(why, len, "NVPW cannot evaluate %s: status %d", names[i], (int)st);
			refused = true;
		}
	}
}

/* An evaluator made from src that takes every name; NULL with why. */
static struct pm_eval *made_from(const struct source *src, const char *const *names, size_t n,
				 char *why, size_t len)
{
	struct pm_eval *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(why, len, "no memory");
		return NULL;
	}
	if (make(e, src, why, len))
		convert(e, names, n, why, len);
	if (!e->n) {
		pm_eval_free(e);
		return NULL;
	}
	return e;
}

struct pm_eval *pm_eval_new(const uint8_t *image, size_t image_size, const uint8_t *avail,
			    const char *chip, const char *const *names, size_t n, char *why,
			    size_t len)
{
	const struct source sources[] = {
	    {"counter data image", image != NULL, image, avail, image_size, avail ? NULL : chip},
	    {"counter availability image", avail != NULL, NULL, avail, 0, NULL},
	    {"chip name", chip && *chip, NULL, NULL, 0, chip},
	};
	struct pm_eval *e = NULL, *next;
	char next_why[256];
	size_t i;

	if (n > EVAL_METRICS_MAX) {
		snprintf(why, len, "more than %d metrics", EVAL_METRICS_MAX);
		return NULL;
	}
	if (!load(why, len))
		return NULL;
	snprintf(next_why, sizeof(next_why), "nothing to make NVPW's evaluator from");
	/* the source that takes the most names (all, and the search ends) */
	for (i = 0; i < sizeof(sources) / sizeof(sources[0]) && (!e || e->n < n); i++) {
		if (!sources[i].usable ||
		    !(next = made_from(&sources[i], names, n, next_why, sizeof(next_why))))
			continue;
		if (e && e->n >= next->n) {
			pm_eval_free(next);
			continue;
		}
		pm_eval_free(e);
		e = next;
		snprintf(why, len, "%s", e->n < n ? next_why : "");
	}
	if (!e)
		snprintf(why, len, "%s", next_why);
	return e;
}

int pm_eval_image(struct pm_eval *e, const uint8_t *image, size_t size)
{
	NVPW_MetricsEvaluator_SetDeviceAttributes_Params p = {
	    .structSize = NVPW_MetricsEvaluator_SetDeviceAttributes_Params_STRUCT_SIZE};

	p.pMetricsEvaluator = e->ev;
	p.pCounterDataImage = image;
	p.counterDataImageSize = size;
	return nvpw.SetDeviceAttributes(&p) == NVPA_STATUS_SUCCESS ? 0 : -1;
}

bool pm_eval_takes(const struct pm_eval *e, size_t metric)
{
	size_t k;

	for (k = 0; k < e->n; k++)
		if (e->idx[k] == metric)
			return true;
	return false;
}

int pm_eval_sample(struct pm_eval *e, const uint8_t *image, size_t size, size_t i,
		   double *values)
{
	NVPW_MetricsEvaluator_EvaluateToGpuValues_Params p = {
	    .structSize = NVPW_MetricsEvaluator_EvaluateToGpuValues_Params_STRUCT_SIZE};
	double got[EVAL_METRICS_MAX];
	size_t k;

	p.pMetricsEvaluator = e->ev;
	p.pMetricEvalRequests = e->req;
	p.numMetricEvalRequests = e->n;
	p.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
	p.metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest);
	p.pCounterDataImage = image;
	p.counterDataImageSize = size;
	p.rangeIndex = i;
	p.isolated = 1;
	p.pMetricValues = got;
	if (nvpw.Evaluate(&p) != NVPA_STATUS_SUCCESS)
		return -1;
	for (k = 0; k < e->n; k++)
		values[e->idx[k]] = got[k];
	return 0;
}

void pm_eval_free(struct pm_eval *e)
{
	NVPW_MetricsEvaluator_Destroy_Params p = {
	    .structSize = NVPW_MetricsEvaluator_Destroy_Params_STRUCT_SIZE};

	if (!e)
		return;
	if (e->ev) {
		p.pMetricsEvaluator = e->ev;
		(void)nvpw.Destroy(&p);
	}
	free(e->scratch);
	free(e);
}
