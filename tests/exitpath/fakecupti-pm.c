/* SPDX-License-Identifier: MIT */
/*
 * The stand-in CUPTI's PM sampling part, for the GPU-metrics tests on machines with no GPU:
 * the profiler host and PM sampling entry points the collector's sampler calls, and the three
 * driver calls it makes (cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid_v2).  It behaves as the
 * H200 did under tests/gpu/pm-probe.cu: samples come every sampling interval on the CUPTI clock
 * (here CLOCK_REALTIME, as cuptiGetTimestamp's), the first after a start spans from far back,
 * NVLink's metrics fail to add, sm__throughput needs 19 passes, and a full hardware buffer makes
 * every decode fail (CUPTI_ERROR_OUT_OF_MEMORY, overflow set) until sampling is set up again.
 *
 * Values are made by construction: while the app says it is busy (fakecupti_pm_busy), a
 * percentage metric reads 75, a bytes-per-second one 2e9, a clock 1.98e9, others 1.5; idle,
 * all read 0 but the clock (and bytes per second 1e3).  A sample is busy when its midpoint is.
 *
 * Knobs (environment): FAKECUPTI_PM_DEVICES=N devices (1); FAKECUPTI_PM_RESULT=R the counter
 * availability query fails with R (35 privileges, 26 busy); FAKECUPTI_PM_UNSUPPORTED=1 the
 * device's architecture cannot be sampled; FAKECUPTI_PM_OVERFLOW_AT=K the K-th decode finds
 * the hardware buffer overflowed (its samples lost); FAKECUPTI_PM_LOG=FILE appends, at each
 * disable, "pm pid=P device=D decoded=N overflows=K" (what the "hardware" handed out);
 * FAKECUPTI_PM_EVAL_US=N makes evaluating a sample take N us (a sampler that falls behind);
 * FAKECUPTI_PM_DECODE_US=N makes decoding take N us a sample; FAKECUPTI_PM_STALL_AT=K:MS makes
 * the K-th decode start MS ms late (the sampler held up: a fork's copy-on-write, a busy machine).
 * FAKECUPTI_PM_SETUP_MS=N makes the counter availability query take N ms (a slow setup);
 * FAKECUPTI_PM_HOLE=T:MS: T ms after a start the GPU takes no sample for MS ms (see hole_at);
 * FAKECUPTI_PM_STOP_MS=N makes cuptiPmSamplingStop take N ms.
 * The hardware buffer holds hardwareBufferSize / 1024 samples; more pending is an overflow.
 * A decode that fills the counter data image loses the samples pending beyond it, as the H200's
 * appeared to (images of half a decode period's samples, filled at every step, left breaks of
 * tens of ms in the samples; with room for two periods, none).
 *
 * PM sampling needs the device's context: a call for a device whose context is gone
 * (fakecupti_pm_context_gone, at the runtime's teardown in fakecupti.c), or any call after
 * CUPTI's own teardown, aborts, as the real ones crashed on the H200 (SIGSEGV in
 * cuptiPmSamplingStop, SIGABRT in cuptiPmSamplingDisable).  So does a call after the PM
 * libraries' destructors ran: the real libnvperf_host, loaded by CUPTI at the first PM call,
 * registers them then, so exit() runs them before any exit handler registered earlier (a double
 * free in its state at the sampler's last disable, on the H200); here the first device call
 * registers one that marks them gone.
 */
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API	    __attribute__((visibility("default")))
#define MAX_NAMES   64
#define MAX_BUSY    256
#define IMAGE_MAGIC 0x46414b45u /* "FAKE" */

struct CUpti_Profiler_Host_Object {
	const char *names[MAX_NAMES];
	size_t n;
	unsigned passes;
};

struct CUpti_PmSampling_Object {
	int device;
	uint64_t interval, capacity; /* ns; samples the "hardware buffer" holds */
	bool running, overflowed;
	uint64_t first_end; /* end of the first (far-reaching) sample; regular ones follow it */
	uint64_t next;	    /* the next sample to decode: 0 the first, k the k-th regular one */
	uint64_t stop_at;   /* when sampling stopped (0 while running) */
	uint64_t decoded, overflows;
};

struct image {
	uint32_t magic, count, capacity, pad;
	struct {
		uint64_t start, end;
	} s[];
};

static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t start, end; /* end 0: still busy */
} busy[MAX_BUSY];
static unsigned nbusy, decodes;
static long knob(const char *name, long def);
static _Atomic uint64_t contexts_gone; /* bit d: device d's context was destroyed */

/* fakecupti.c: aborts after CUPTI's teardown. */
void fakecupti_check_alive(const char *call);
void fakecupti_crash(const char *call, const char *why);

void fakecupti_pm_context_gone(int device)
{
	atomic_fetch_or(&contexts_gone, 1ull << (device & 63));
}

static atomic_bool pm_libraries_gone;

static void pm_libraries_destroyed(void)
{
	atomic_store(&pm_libraries_gone, true);
}

static void pm_libraries_loaded(void)
{
	atexit(pm_libraries_destroyed);
}

/* A call that needs device d's context (and the PM libraries, loaded by the first of them). */
static void check_device(const char *call, int d)
{
	static pthread_once_t loaded = PTHREAD_ONCE_INIT;

	fakecupti_check_alive(call);
	if (atomic_load(&pm_libraries_gone))
		fakecupti_crash(call, "after the PM libraries' destructors ran (at exit)");
	pthread_once(&loaded, pm_libraries_loaded);
	if (atomic_load(&contexts_gone) >> (d & 63) & 1)
		fakecupti_crash(call, "after the device's context was destroyed");
}

static void sleep_knob(const char *name)
{
	long ms = knob(name, 0);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms && nanosleep(&ts, &ts) < 0)
		;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long knob(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? atol(v) : def;
}

/* The app side: busy from now on (true) or idle (false). */
API void fakecupti_pm_busy(bool on)
{
	pthread_mutex_lock(&busy_lock);
	if (on && nbusy < MAX_BUSY)
		busy[nbusy++].start = now_ns();
	else if (!on && nbusy && !busy[nbusy - 1].end)
		busy[nbusy - 1].end = now_ns();
	pthread_mutex_unlock(&busy_lock);
}

static bool busy_at(uint64_t t)
{
	bool b = false;
	unsigned i;

	pthread_mutex_lock(&busy_lock);
	for (i = 0; i < nbusy && !b; i++)
		b = t >= busy[i].start && (!busy[i].end || t < busy[i].end);
	pthread_mutex_unlock(&busy_lock);
	return b;
}

/* ---- the driver's three calls ------------------------------------------------------------- */

API CUresult cuDeviceGetCount(int *n)
{
	*n = (int)knob("FAKECUPTI_PM_DEVICES", 1);
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	*dev = ordinal;
	return CUDA_SUCCESS;
}

/* The same "GPU" in every process, as processes of a job on one node share one. */
API CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice dev)
{
	static const char base[16] = {(char)0xfa, (char)0xce, 0x0d, 0x0e, 1, 2,	 3,  4,
				      5,	  6,	      7,    8,	  9, 10, 11, 0};

	memcpy(u->bytes, base, 16);
	u->bytes[15] = (char)dev;
	return CUDA_SUCCESS;
}

/* ---- profiler: support, chip, availability ------------------------------------------------ */

API CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p)
{
	(void)p;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p)
{
	bool no = knob("FAKECUPTI_PM_UNSUPPORTED", 0) != 0;

	p->isSupported =
	    no ? CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED : CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
	p->architecture = p->isSupported;
	p->sli = p->vGpu = p->confidentialCompute = p->cmp = p->wsl =
	    CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p)
{
	p->pChipName = "FAKE100";
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params *p)
{
	long refuse = knob("FAKECUPTI_PM_RESULT", 0);

	check_device("cuptiPmSamplingGetCounterAvailability", (int)p->deviceIndex);
	if (p->pCounterAvailabilityImage)
		sleep_knob("FAKECUPTI_PM_SETUP_MS");
	if (refuse)
		return (CUptiResult)refuse;
	if (!p->pCounterAvailabilityImage)
		p->counterAvailabilityImageSize = 64;
	else
		memset(p->pCounterAvailabilityImage, 0xa5, p->counterAvailabilityImageSize);
	return CUPTI_SUCCESS;
}

/* ---- the host API: sets, config images, evaluation ---------------------------------------- */

API CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p)
{
	if (p->profilerType != CUPTI_PROFILER_TYPE_PM_SAMPLING || !p->pChipName)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->pHostObject = calloc(1, sizeof(*p->pHostObject));
	return p->pHostObject ? CUPTI_SUCCESS : CUPTI_ERROR_OUT_OF_MEMORY;
}

API CUptiResult cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p)
{
	free(p->pHostObject);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p)
{
	CUpti_Profiler_Host_Object *h = p->pHostObject;
	size_t i;

	for (i = 0; i < p->numMetrics; i++)
		if (strncmp(p->ppMetricNames[i], "nvl", 3) == 0)
			return CUPTI_ERROR_UNKNOWN; /* as on a GPU without NVLink peers */
	for (i = 0; i < p->numMetrics && h->n < MAX_NAMES; i++) {
		h->names[h->n++] = p->ppMetricNames[i];
		if (strstr(p->ppMetricNames[i], "sm__throughput"))
			h->passes = 19;
	}
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *p)
{
	p->configImageSize = 64 + 8 * p->pHostObject->n;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p)
{
	unsigned passes = p->pHostObject->passes ? p->pHostObject->passes : 1;

	memset(p->pConfigImage, 0, p->configImageSize);
	memcpy(p->pConfigImage, &passes, sizeof(passes));
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p)
{
	unsigned passes;

	memcpy(&passes, p->pConfigImage, sizeof(passes));
	p->numOfPasses = passes;
	return CUPTI_SUCCESS;
}

static double value_of(const char *name, bool b)
{
	if (strstr(name, "cycles_elapsed") && strstr(name, "per_second"))
		return 1.98e9;
	if (strstr(name, "pct"))
		return b ? 75.0 : 0.0;
	if (strstr(name, "bytes"))
		return b ? 2.0e9 : 1.0e3;
	return b ? 1.5 : 0.0;
}

/* Time owed by the calling thread (us more each call, in *owed_ns): slept 2 ms or more at a
 * time, the oversleep paid back, so that a busy machine's late wake-ups do not make it longer. */
static void spend(long us, int64_t *owed_ns)
{
	*owed_ns += us * 1000;
	if (*owed_ns >= 2000000) {
		struct timespec ts = {0, (long)*owed_ns};
		uint64_t t0 = now_ns();

		nanosleep(&ts, NULL);
		*owed_ns -= (int64_t)(now_ns() - t0);
	}
}

/* FAKECUPTI_PM_EVAL_US: a sample's evaluation takes that long on average. */
static void evaluation_time(void)
{
	static long eval_us = -1;
	static __thread int64_t owed_ns;

	if (eval_us < 0)
		eval_us = knob("FAKECUPTI_PM_EVAL_US", 0);
	spend(eval_us, &owed_ns);
}

/* FAKECUPTI_PM_DECODE_US: decoding a sample takes that long on average. */
static void decode_time(uint64_t samples)
{
	static long decode_us = -1;
	static __thread int64_t owed_ns;

	if (decode_us < 0)
		decode_us = knob("FAKECUPTI_PM_DECODE_US", 0);
	spend(decode_us * (long)samples, &owed_ns);
}

API CUptiResult
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p)
{
	const struct image *im = (const struct image *)p->pCounterDataImage;
	size_t i;
	bool b;

	if (im->magic != IMAGE_MAGIC || p->rangeIndex >= im->count)
		return CUPTI_ERROR_INVALID_PARAMETER;
	evaluation_time();
	b = busy_at(im->s[p->rangeIndex].start / 2 + im->s[p->rangeIndex].end / 2);
	for (i = 0; i < p->numMetrics; i++)
		p->pMetricValues[i] = value_of(p->ppMetricNames[i], b);
	return CUPTI_SUCCESS;
}

/* ---- the PM sampler ----------------------------------------------------------------------- */

API CUptiResult cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params *p)
{
	CUpti_PmSampling_Object *o;

	check_device("cuptiPmSamplingEnable", (int)p->deviceIndex);
	if (!(o = calloc(1, sizeof(*o))))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	o->device = (int)p->deviceIndex;
	p->pPmSamplingObject = o;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params *p)
{
	CUpti_PmSampling_Object *o = p->pPmSamplingObject;
	const char *log = getenv("FAKECUPTI_PM_LOG");
	FILE *f;

	check_device("cuptiPmSamplingDisable", o->device);
	if ((f = log ? fopen(log, "a") : NULL)) {
		fprintf(f, "pm pid=%d device=%d decoded=%llu overflows=%llu\n", (int)getpid(),
			o->device, (unsigned long long)o->decoded,
			(unsigned long long)o->overflows);
		fclose(f);
	}
	free(o);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params *p)
{
	CUpti_PmSampling_Object *o = p->pPmSamplingObject;
	unsigned passes;

	check_device("cuptiPmSamplingSetConfig", o->device);
	memcpy(&passes, p->pConfig, sizeof(passes));
	if (passes != 1)
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (p->triggerMode != CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL ||
	    !p->samplingInterval)
		return CUPTI_ERROR_INVALID_PARAMETER;
	o->interval = p->samplingInterval;
	o->capacity = p->hardwareBufferSize / 1024;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingStart(CUpti_PmSampling_Start_Params *p)
{
	CUpti_PmSampling_Object *o = p->pPmSamplingObject;
	uint64_t t = now_ns();

	check_device("cuptiPmSamplingStart", o->device);
	if (!o->interval || o->running)
		return CUPTI_ERROR_INVALID_OPERATION;
	o->running = true;
	o->first_end = t + o->interval / 3;
	o->next = 0;
	o->stop_at = 0;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params *p)
{
	CUpti_PmSampling_Object *o = p->pPmSamplingObject;

	check_device("cuptiPmSamplingStop", o->device);
	sleep_knob("FAKECUPTI_PM_STOP_MS");
	if (!o->running)
		return CUPTI_ERROR_INVALID_OPERATION;
	o->running = false;
	o->stop_at = now_ns();
	return CUPTI_SUCCESS;
}

/* FAKECUPTI_PM_HOLE=T:MS: T ms after a start the GPU takes no sample for MS ms (as a GPU
 * whose PM unit pauses): the samples after it come that much later, in order.  0: none. */
static uint64_t hole_at(const CUpti_PmSampling_Object *o, uint64_t *length)
{
	static long long t = -1, ms;
	const char *v;

	if (t < 0) {
		v = getenv("FAKECUPTI_PM_HOLE");
		if (!v || sscanf(v, "%lld:%lld", &t, &ms) != 2 || t < 0 || ms < 0)
			t = ms = 0;
	}
	*length = (uint64_t)ms * 1000000ull;
	return ms ? o->first_end + (uint64_t)t * 1000000ull : 0;
}

static void sample_span(const CUpti_PmSampling_Object *o, uint64_t k, uint64_t *start,
			uint64_t *end)
{
	uint64_t hole, length;

	if (k == 0) {
		*start = o->first_end - 777000000ull; /* from an arbitrary earlier moment */
		*end = o->first_end;
		return;
	}
	*start = o->first_end + (k - 1) * o->interval;
	hole = hole_at(o, &length);
	if (hole && *start >= hole)
		*start += length;
	*end = *start + o->interval;
}

static uint64_t span_end(const CUpti_PmSampling_Object *o, uint64_t k)
{
	uint64_t start, end;

	sample_span(o, k, &start, &end);
	return end;
}

/* Samples complete by now (or by the stop) and not yet decoded: the most there could be at
 * one a interval, then as many of those as end by the limit (a hole makes fewer). */
static uint64_t pending(const CUpti_PmSampling_Object *o, uint64_t limit)
{
	uint64_t lo = 0, hi, mid;

	if (span_end(o, o->next) > limit)
		return 0;
	hi = 2 + (limit - span_end(o, o->next)) / o->interval;
	while (lo < hi) { /* the count: samples next .. next+count-1 end by the limit */
		mid = lo + (hi - lo + 1) / 2;
		if (span_end(o, o->next + mid - 1) <= limit)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* FAKECUPTI_PM_STALL_AT=K:MS: the K-th decode (counted from 1) sleeps MS ms first; true then. */
static bool stall_now(unsigned decode)
{
	const char *v = getenv("FAKECUPTI_PM_STALL_AT");
	unsigned k, ms;
	struct timespec ts;

	if (!v || sscanf(v, "%u:%u", &k, &ms) != 2 || decode != k)
		return false;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	return true;
}

API CUptiResult cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params *p)
{
	CUpti_PmSampling_Object *o = p->pPmSamplingObject;
	struct image *im = (struct image *)p->pCounterDataImage;
	uint64_t limit = o->stop_at ? o->stop_at : now_ns(), n, room, i;
	long overflow_at = knob("FAKECUPTI_PM_OVERFLOW_AT", 0);

	check_device("cuptiPmSamplingDecodeData", o->device);
	p->overflow = 0;
	if (im->magic != IMAGE_MAGIC)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (stall_now(decodes + 1) && !o->stop_at)
		limit = now_ns();
	n = pending(o, limit);
	if (!o->overflowed && (n > o->capacity || ++decodes == (unsigned long)overflow_at)) {
		o->overflowed = true; /* what the hardware held is lost */
		o->overflows++;
		o->next += n;
	}
	if (o->overflowed) {
		p->overflow = 1;
		return CUPTI_ERROR_OUT_OF_MEMORY;
	}
	room = im->capacity - im->count;
	for (i = 0; i < n && i < room; i++, im->count++, o->decoded++)
		sample_span(o, o->next++, &im->s[im->count].start, &im->s[im->count].end);
	decode_time(i);
	if (n > room) { /* the image is full: what did not fit is lost */
		o->next += n - room;
		p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
	} else {
		p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
	}
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params *p)
{
	if (!p->numMetrics || !p->maxSamples)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->counterDataSize = sizeof(struct image) + (size_t)p->maxSamples * 16;
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params *p)
{
	struct image *im = (struct image *)p->pCounterData;

	if (p->counterDataSize < sizeof(*im))
		return CUPTI_ERROR_INVALID_PARAMETER;
	im->magic = IMAGE_MAGIC;
	im->count = 0;
	im->capacity = (uint32_t)((p->counterDataSize - sizeof(*im)) / 16);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params *p)
{
	const struct image *im = (const struct image *)p->pCounterDataImage;

	if (im->magic != IMAGE_MAGIC)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->numTotalSamples = im->capacity;
	p->numPopulatedSamples = p->numCompletedSamples = im->count;
	return CUPTI_SUCCESS;
}

API CUptiResult
cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params *p)
{
	const struct image *im = (const struct image *)p->pCounterDataImage;

	if (im->magic != IMAGE_MAGIC || p->sampleIndex >= im->count)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->startTimestamp = im->s[p->sampleIndex].start;
	p->endTimestamp = im->s[p->sampleIndex].end;
	return CUPTI_SUCCESS;
}
