/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI functions the collector calls, resolved at run time from the libcupti this process
 * already has (PyTorch and JAX bring their own copy, and two copies of CUPTI in one process do
 * not mix), else from TALLY_CUPTI_PATH, the library path, or the usual CUDA places.  Resolving at
 * run time also keeps libtally.so free of a link-time CUDA dependency, and lets the CPU tests put
 * a stand-in CUPTI in its place.
 */
#ifndef TALLY_COLLECTOR_CUPTI_API_H
#define TALLY_COLLECTOR_CUPTI_API_H

#include <cupti.h>
#include <stdbool.h>

struct cupti_api {
	void *handle;
	char path[512];
	CUptiResult (*GetVersion)(uint32_t *version);
	CUptiResult (*GetResultString)(CUptiResult result, const char **str);
	CUptiResult (*Subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				 void *userdata);
	CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle subscriber);
	CUptiResult (*EnableDomain)(uint32_t enable, CUpti_SubscriberHandle subscriber,
				    CUpti_CallbackDomain domain);
	CUptiResult (*EnableCallback)(uint32_t enable, CUpti_SubscriberHandle subscriber,
				      CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
	CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc request,
						 CUpti_BuffersCallbackCompleteFunc complete);
	CUptiResult (*ActivityEnable)(CUpti_ActivityKind kind);
	CUptiResult (*ActivityDisable)(CUpti_ActivityKind kind);
	CUptiResult (*ActivityFlushAll)(uint32_t flag);
	CUptiResult (*ActivityFlushPeriod)(uint32_t time_ms);
	CUptiResult (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid, CUpti_Activity **rec);
	CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext ctx, uint32_t stream,
						    size_t *dropped);
	CUptiResult (*ActivitySetAttribute)(CUpti_ActivityAttribute attr, size_t *size,
					    void *value);
	CUptiResult (*GetTimestamp)(uint64_t *timestamp);
	CUptiResult (*GetCallbackName)(CUpti_CallbackDomain domain, uint32_t cbid,
				       const char **name);
	CUptiResult (*Finalize)(void);
	CUptiResult (*ActivityEnableDriverApi)(CUpti_CallbackId cbid, uint8_t enable);
	CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId cbid, uint8_t enable);
	CUptiResult (*GetDeviceId)(CUcontext context, uint32_t *device);
};

extern struct cupti_api cupti;

/* Load and resolve; 0 or -errno (why says which library or symbol failed). */
int cupti_api_load(char *why, size_t len);

/* The pipeline's source calls, on this table. */
extern const struct tally_source tally_collector_source;
/* The same for a session that started before CUPTI was loaded (host sampling from load). */
extern const struct tally_source tally_late_cupti_source;

#endif
