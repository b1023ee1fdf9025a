/* SPDX-License-Identifier: MIT */
/* Run-time CUPTI binding; see cupti-api.h. */
#include "cupti-api.h"
#include "clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline.h"

struct cupti_api cupti;

static void *try_open(const char *path, int extra)
{
	return path && *path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL | extra) : NULL;
}

/*
 * dir/libcupti.so.13, dir being where libtally.so itself lies: the copy a bundle made with
 * `make dist WITH_CUPTI=1` carries for images that have no CUPTI (CUDA runtime images).
 */
static void *open_bundled(char *where, size_t len)
{
	Dl_info self;
	char *slash;

	if (!dladdr((void *)open_bundled, &self) || !self.dli_fname)
		return NULL;
	snprintf(where, len, "%s", self.dli_fname);
	slash = strrchr(where, '/');
	if (!slash)
		return NULL;
	snprintf(slash + 1, len - (size_t)(slash + 1 - where), "libcupti.so.13");
	return access(where, R_OK) == 0 ? try_open(where, 0) : NULL;
}

/*
 * TALLY_CUPTI_PATH; else the copy already in the process (PyTorch and JAX load their own, and
 * two copies of CUPTI in one process do not mix); else the bundle's; else the first of the
 * usual places that loads.  A program that loads libcupti.so.13 by name after us gets the copy
 * we loaded: the loader reuses an object whose SONAME matches (docs/collector.md).
 */
static void *open_cupti(char *where, size_t len)
{
	static const char *const places[] = {
	    "libcupti.so.13",
	    "libcupti.so",
	    "/usr/local/cuda/lib64/libcupti.so.13",
	    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
	    "/usr/local/cuda/lib/libcupti.so.13",
	};
	const char *env = getenv("TALLY_CUPTI_PATH");
	char home[512];
	void *h;
	size_t i;

	if ((h = try_open(env, 0))) {
		snprintf(where, len, "%s", env);
		return h;
	}
	for (i = 0; i < 2; i++)
		if ((h = try_open(places[i], RTLD_NOLOAD))) {
			snprintf(where, len, "%s (already loaded)", places[i]);
			return h;
		}
	if ((h = open_bundled(where, len)))
		return h;
	if (getenv("CUDA_HOME")) {
		snprintf(home, sizeof(home), "%s/lib64/libcupti.so.13", getenv("CUDA_HOME"));
		if ((h = try_open(home, 0))) {
			snprintf(where, len, "%s", home);
			return h;
		}
	}
	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++)
		if ((h = try_open(places[i], 0))) {
			snprintf(where, len, "%s", places[i]);
			return h;
		}
	return NULL;
}

#define RESOLVE(field, name)                                                                       \
	do {                                                                                       \
		*(void **)&cupti.field = dlsym(cupti.handle, name);                                \
		if (!cupti.field && required) {                                                    \
			snprintf(why, len, "%s: no symbol %s", cupti.path, name);                  \
			return -ENOENT;                                                            \
		}                                                                                  \
	} while (0)

static _Atomic bool loaded;

int cupti_api_load(char *why, size_t len)
{
	bool required = true;

	if (cupti.handle)
		return 0;
	cupti.handle = open_cupti(cupti.path, sizeof(cupti.path));
	if (!cupti.handle) {
		snprintf(why, len, "libcupti not found (set TALLY_CUPTI_PATH): %s", dlerror());
		return -ENOENT;
	}
	RESOLVE(GetVersion, "cuptiGetVersion");
	RESOLVE(GetResultString, "cuptiGetResultString");
	RESOLVE(Subscribe, "cuptiSubscribe");
	RESOLVE(Unsubscribe, "cuptiUnsubscribe");
	RESOLVE(EnableDomain, "cuptiEnableDomain");
	RESOLVE(EnableCallback, "cuptiEnableCallback");
	RESOLVE(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
	RESOLVE(ActivityEnable, "cuptiActivityEnable");
	RESOLVE(ActivityDisable, "cuptiActivityDisable");
	RESOLVE(ActivityFlushAll, "cuptiActivityFlushAll");
	RESOLVE(ActivityGetNextRecord, "cuptiActivityGetNextRecord");
	RESOLVE(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
	RESOLVE(GetTimestamp, "cuptiGetTimestamp");
	RESOLVE(GetCallbackName, "cuptiGetCallbackName");
	required = false; /* older or stand-in CUPTIs may lack these; each use checks */
	RESOLVE(ActivityFlushPeriod, "cuptiActivityFlushPeriod");
	RESOLVE(ActivitySetAttribute, "cuptiActivitySetAttribute");
	RESOLVE(Finalize, "cuptiFinalize");
	RESOLVE(ActivityEnableDriverApi, "cuptiActivityEnableDriverApi");
	RESOLVE(ActivityEnableRuntimeApi, "cuptiActivityEnableRuntimeApi");
	RESOLVE(GetDeviceId, "cuptiGetDeviceId");
	/* Release: the table is whole before a late source (another thread) sees it. */
	atomic_store_explicit(&loaded, true, memory_order_release);
	return 0;
}

static CUptiResult src_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	return cupti.ActivityGetNextRecord(buf, valid, rec);
}

static CUptiResult src_dropped(size_t *dropped)
{
	/* Buffers are global since CUDA 6.0: NULL context, stream 0 selects the one queue. */
	return cupti.ActivityGetNumDroppedRecords(NULL, 0, dropped);
}

static uint64_t src_now(void)
{
	uint64_t ts = 0;

	(void)cupti.GetTimestamp(&ts);
	return ts;
}

static const char *src_api_name(CUpti_ActivityKind kind, uint32_t cbid)
{
	CUpti_CallbackDomain dom = kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
								      : CUPTI_CB_DOMAIN_RUNTIME_API;
	const char *name = NULL;

	return cupti.GetCallbackName(dom, cbid, &name) == CUPTI_SUCCESS ? name : NULL;
}

const struct tally_source tally_collector_source = {
    .next_record = src_next_record,
    .dropped = src_dropped,
    .now = src_now,
    .api_name = src_api_name,
};

/* A session started at load for host sampling: CUPTI comes later, if ever (at cuInit).  Its
 * clock is CLOCK_REALTIME from the start, CUPTI's own default, so that records from before and
 * after CUPTI share one timeline; CUPTI's calls are made only once it is loaded. */
static CUptiResult late_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	if (!atomic_load_explicit(&loaded, memory_order_acquire)) {
		*rec = NULL;
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	}
	return cupti.ActivityGetNextRecord(buf, valid, rec);
}

static CUptiResult late_dropped(size_t *dropped)
{
	*dropped = 0;
	return atomic_load_explicit(&loaded, memory_order_acquire) ? src_dropped(dropped)
								   : CUPTI_SUCCESS;
}

static uint64_t late_now(void)
{
	return tally_realtime_ns();
}

static const char *late_api_name(CUpti_ActivityKind kind, uint32_t cbid)
{
	return atomic_load_explicit(&loaded, memory_order_acquire) ? src_api_name(kind, cbid)
								   : NULL;
}

const struct tally_source tally_late_cupti_source = {
    .next_record = late_next_record,
    .dropped = late_dropped,
    .now = late_now,
    .api_name = late_api_name,
};
