/* SPDX-License-Identifier: MIT */
/* CUPTI's PM sampling functions, bound at run time; see cupti-pm.h. */
#include "cupti-pm.h"

#include <dlfcn.h>
#include <stdio.h>

#include "cupti-api.h"

struct cupti_pm_api cupti_pm;

static const struct {
	const char *symbol;
	size_t offset;
} symbols[] = {
#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, offsetof(struct cupti_pm_api, field)                                         \
	}
    SYM(ProfilerInitialize, "cuptiProfilerInitialize"),
    SYM(DeviceSupported, "cuptiProfilerDeviceSupported"),
    SYM(GetChipName, "cuptiDeviceGetChipName"),
    SYM(GetCounterAvailability, "cuptiPmSamplingGetCounterAvailability"),
    SYM(HostInitialize, "cuptiProfilerHostInitialize"),
    SYM(HostDeinitialize, "cuptiProfilerHostDeinitialize"),
    SYM(ConfigAddMetrics, "cuptiProfilerHostConfigAddMetrics"),
    SYM(GetConfigImageSize, "cuptiProfilerHostGetConfigImageSize"),
    SYM(GetConfigImage, "cuptiProfilerHostGetConfigImage"),
    SYM(GetNumOfPasses, "cuptiProfilerHostGetNumOfPasses"),
    SYM(Evaluate, "cuptiProfilerHostEvaluateToGpuValues"),
    SYM(Enable, "cuptiPmSamplingEnable"),
    SYM(Disable, "cuptiPmSamplingDisable"),
    SYM(SetConfig, "cuptiPmSamplingSetConfig"),
    SYM(Start, "cuptiPmSamplingStart"),
    SYM(Stop, "cuptiPmSamplingStop"),
    SYM(DecodeData, "cuptiPmSamplingDecodeData"),
    SYM(GetCounterDataSize, "cuptiPmSamplingGetCounterDataSize"),
    SYM(CounterDataInitialize, "cuptiPmSamplingCounterDataImageInitialize"),
    SYM(GetCounterDataInfo, "cuptiPmSamplingGetCounterDataInfo"),
    SYM(GetSampleInfo, "cuptiPmSamplingCounterDataGetSampleInfo"),
#undef SYM
};

bool cupti_pm_load(char *why, size_t len)
{
	size_t i;

	if (cupti_pm.loaded)
		return true;
	if (!cupti.handle) {
		snprintf(why, len, "CUPTI is not loaded");
		return false;
	}
	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *fn = dlsym(cupti.handle, symbols[i].symbol);

		if (!fn) {
			snprintf(why, len, "%s has no %s (PM sampling needs CUDA 12.6 or newer)",
				 cupti.path, symbols[i].symbol);
			return false;
		}
		*(void **)((char *)&cupti_pm + symbols[i].offset) = fn;
	}
	cupti_pm.loaded = true;
	return true;
}

const char *cupti_pm_result(CUptiResult r, char *buf, size_t len)
{
	const char *s = NULL;

	if (!cupti.GetResultString || cupti.GetResultString(r, &s) != CUPTI_SUCCESS || !s)
		s = "CUPTI error";
	snprintf(buf, len, "%s (%d)", s, (int)r);
	return buf;
}
