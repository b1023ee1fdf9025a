/* SPDX-License-Identifier: MIT */
/*
 * CUPTI's PM sampling and profiler host functions, resolved at run time from the libcupti the
 * collector already bound (cupti-api.h), as the activity functions are.  The GPU-metrics sampler
 * (pmsampler.h) is their only user.  A CUPTI without them (older, or the stand-in without its PM
 * part) leaves the table empty: metrics are then "unsupported", never a failed start.
 */
#ifndef TALLY_COLLECTOR_CUPTI_PM_H
#define TALLY_COLLECTOR_CUPTI_PM_H

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <stdbool.h>

struct cupti_pm_api {
	bool loaded;
	CUptiResult (*ProfilerInitialize)(CUpti_Profiler_Initialize_Params *);
	CUptiResult (*DeviceSupported)(CUpti_Profiler_DeviceSupported_Params *);
	CUptiResult (*GetChipName)(CUpti_Device_GetChipName_Params *);
	CUptiResult (*GetCounterAvailability)(CUpti_PmSampling_GetCounterAvailability_Params *);
	CUptiResult (*HostInitialize)(CUpti_Profiler_Host_Initialize_Params *);
	CUptiResult (*HostDeinitialize)(CUpti_Profiler_Host_Deinitialize_Params *);
	CUptiResult (*ConfigAddMetrics)(CUpti_Profiler_Host_ConfigAddMetrics_Params *);
	CUptiResult (*GetConfigImageSize)(CUpti_Profiler_Host_GetConfigImageSize_Params *);
	CUptiResult (*GetConfigImage)(CUpti_Profiler_Host_GetConfigImage_Params *);
	CUptiResult (*GetNumOfPasses)(CUpti_Profiler_Host_GetNumOfPasses_Params *);
	CUptiResult (*Evaluate)(CUpti_Profiler_Host_EvaluateToGpuValues_Params *);
	CUptiResult (*Enable)(CUpti_PmSampling_Enable_Params *);
	CUptiResult (*Disable)(CUpti_PmSampling_Disable_Params *);
	CUptiResult (*SetConfig)(CUpti_PmSampling_SetConfig_Params *);
	CUptiResult (*Start)(CUpti_PmSampling_Start_Params *);
	CUptiResult (*Stop)(CUpti_PmSampling_Stop_Params *);
	CUptiResult (*DecodeData)(CUpti_PmSampling_DecodeData_Params *);
	CUptiResult (*GetCounterDataSize)(CUpti_PmSampling_GetCounterDataSize_Params *);
	CUptiResult (*CounterDataInitialize)(CUpti_PmSampling_CounterDataImage_Initialize_Params *);
	CUptiResult (*GetCounterDataInfo)(CUpti_PmSampling_GetCounterDataInfo_Params *);
	CUptiResult (*GetSampleInfo)(CUpti_PmSampling_CounterData_GetSampleInfo_Params *);
};

extern struct cupti_pm_api cupti_pm;

/* Resolve the table from the CUPTI cupti_api_load bound; false (why says which symbol) if this
 * CUPTI lacks any of them. */
bool cupti_pm_load(char *why, size_t len);

/* CUPTI's name for a result ("CUPTI_ERROR_HARDWARE_BUSY"), or "CUPTI error N". */
const char *cupti_pm_result(CUptiResult r, char *buf, size_t len);

#endif
