/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the parts of CUPTI the collector calls, for the exit-path tests on machines with
 * no GPU (CI).  The collector loads it through TALLY_CUPTI_PATH exactly as it loads the real
 * libcupti; fakeapp "launches" work with fakecupti_launch(), which writes real CUPTI record
 * structs (CUpti_ActivityAPI + CUpti_ActivityKernel10) into buffers obtained from the collector's
 * request callback, per thread, as CUPTI 13 does, and hands them back when full or flushed.
 *
 * It also does what CUDA and CUPTI do at the end of a process, which the collector's close must
 * fit around (seen on the H200):
 * - CUPTI is torn down by an exit handler it registers when it is loaded (the C++ destructors of a
 *   dlopen'ed library): any activity or PM sampling call after that aborts here (the real one
 *   crashed with SIGSEGV in cuptiActivityDisable);
 * - the CUDA runtime registers its teardown at its first call (here: the first launch or memory
 *   record); at exit it destroys each device's context, which fires CUPTI's context-destroy
 *   callback; a PM sampling call for a device whose context is gone aborts (fakecupti-pm.c).
 *
 * Knobs (environment): FAKECUPTI_HANG_FLUSH=1 makes a forced flush never return (the watchdog
 * test); FAKECUPTI_SLOW_FLUSH_MS=N makes it take N ms (a close that takes a while, as with a
 * large backlog); FAKECUPTI_OTHER_SUBSCRIBER=1 makes cuptiSubscribe fail as with nsys attached;
 * FAKECUPTI_REGISTER_TAKEN=1 makes cuptiActivityRegisterCallbacks fail as under cuda-gdb.
 * FAKECUPTI_RECORD_US=N makes each record take N us to fill in after its room in the buffer is
 * taken, as CUPTI's records are: a forced flush (cuptiActivityFlushAll's FLUSH_FORCED, "all the
 * activity buffers including the ones which have one or more incomplete activity records")
 * meanwhile hands the buffer over with that record unfinished (kind 0), on which
 * cuptiActivityGetNextRecord answers CUPTI_ERROR_INVALID_KIND ("incomplete or invalid"), and the
 * record is lost.
 */
#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define API	    __attribute__((visibility("default")))
#define MAX_THREADS 64

struct fake_thread {
	pid_t tid;
	uint8_t *buf;
	size_t size, used;
	unsigned handed; /* buffers handed back so far */
};

static CUpti_BuffersCallbackRequestFunc request_cb;
static CUpti_BuffersCallbackCompleteFunc complete_cb;
static CUpti_CallbackFunc subscriber_cb;
static void *subscriber_data; /* what cuptiSubscribe was given, passed back as CUPTI does */
/* Enabled kinds: switched by the collector's control thread while the app launches. */
static _Atomic bool kinds[CUPTI_ACTIVITY_KIND_COUNT];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* threads[] and buffers */
static struct fake_thread threads[MAX_THREADS];
static _Atomic uint64_t dropped;
static _Atomic uint32_t next_corr = 1;
/* The collector asked for cudaLaunchKernel's API callback (call stacks on launches). */
static _Atomic bool launch_callback;
/* CUPTI's exit handler has run: every later activity call aborts. */
static _Atomic bool torn_down;
static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;
static pid_t runtime_pid; /* the process whose runtime registered the teardown */

/* fakecupti-pm.c: the driver's device count, and a context gone (its PM calls then abort). */
CUresult cuDeviceGetCount(int *n);
void fakecupti_pm_context_gone(int device);

/* A call the real CUPTI crashes on: say which, and end as it would have. */
void fakecupti_crash(const char *call, const char *why)
{
	char text[256];
	int n = snprintf(text, sizeof(text), "fakecupti: %s %s\n", call, why);

	(void)!write(2, text, (size_t)n);
	abort();
}

void fakecupti_check_alive(const char *call)
{
	if (atomic_load(&torn_down))
		fakecupti_crash(call, "after CUPTI's teardown");
}

static void check_alive(const char *call)
{
	fakecupti_check_alive(call);
}

static void runtime_call(void);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

API CUptiResult cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_SUCCESS ? "success (fake)" : "error (fake)";
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud)
{
	if (getenv("FAKECUPTI_OTHER_SUBSCRIBER"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	subscriber_data = ud;
	subscriber_cb = cb;
	*s = (CUpti_SubscriberHandle)&subscriber_cb;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s)
{
	check_alive("cuptiUnsubscribe");
	(void)s;
	subscriber_cb = NULL;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableDomain(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d)
{
	(void)e, (void)s, (void)d;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableCallback(uint32_t e, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
				    CUpti_CallbackId c)
{
	(void)s;
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    c == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
		atomic_store(&launch_callback, e != 0);
	return CUPTI_SUCCESS;
}

/* CUPTI's API callback around a launch, on the launching thread, as the runtime makes it. */
static void api_callback(CUpti_ApiCallbackSite site, uint32_t corr)
{
	CUpti_CallbackData data;

	if (!atomic_load(&launch_callback) || !subscriber_cb)
		return;
	memset(&data, 0, sizeof(data));
	data.callbackSite = site;
	data.functionName = "cudaLaunchKernel";
	data.correlationId = corr;
	subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_RUNTIME_API,
		      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &data);
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc rq,
					       CUpti_BuffersCallbackCompleteFunc cp)
{
	check_alive("cuptiActivityRegisterCallbacks");
	if (getenv("FAKECUPTI_REGISTER_TAKEN"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	request_cb = rq;
	complete_cb = cp;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	check_alive("cuptiActivityEnable");
	if ((unsigned)k < CUPTI_ACTIVITY_KIND_COUNT)
		kinds[k] = true;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	check_alive("cuptiActivityDisable");
	if ((unsigned)k < CUPTI_ACTIVITY_KIND_COUNT)
		kinds[k] = false;
	return CUPTI_SUCCESS;
}

static struct fake_thread *this_thread(void);

/* FAKECUPTI_EMPTY_AFTER_FLUSH: a forced flush asks for a new buffer for the calling thread and
 * keeps it, with nothing written, as CUPTI on an H100 was seen to keep one at a SIGTERM's close
 * (caller holds lock). */
static void request_locked(struct fake_thread *t)
{
	size_t max;

	if (t && !t->buf && request_cb) {
		request_cb(&t->buf, &t->size, &max);
		t->used = 0;
	}
}

static void keep_empty_locked(void)
{
	request_locked(this_thread());
}

/* Hand back t's buffer (caller holds lock). */
static void complete_locked(struct fake_thread *t)
{
	if (!t->buf)
		return;
	complete_cb(NULL, 0, t->buf, t->size, t->used);
	t->handed++;
	t->buf = NULL;
	t->used = t->size = 0;
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	unsigned i;

	check_alive("cuptiActivityFlushAll");
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && getenv("FAKECUPTI_HANG_FLUSH"))
		for (;;)
			pause(); /* what HPCToolkit saw CUPTI do */
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && getenv("FAKECUPTI_SLOW_FLUSH_MS")) {
		long ms = atol(getenv("FAKECUPTI_SLOW_FLUSH_MS"));
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

		while (nanosleep(&ts, &ts) < 0)
			;
	}
	pthread_mutex_lock(&lock);
	for (i = 0; i < MAX_THREADS; i++)
		complete_locked(&threads[i]);
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && getenv("FAKECUPTI_EMPTY_AFTER_FLUSH"))
		keep_empty_locked();
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	(void)ms;
	return CUPTI_SUCCESS;
}

static size_t record_size(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return sizeof(CUpti_ActivityMemory4);
	default:
		return 0;
	}
}

/* CUPTI's walking rules: NULL starts, each call moves on, MAX_LIMIT_REACHED at the end. */
API CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	size_t off = 0, size;

	if (*rec)
		off = (size_t)((uint8_t *)*rec - buf) + record_size((*rec)->kind);
	if (off + sizeof(CUpti_ActivityKind) > valid) {
		*rec = NULL;
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	}
	size = record_size(((CUpti_Activity *)(buf + off))->kind);
	if (!size || off + size > valid) {
		*rec = NULL;
		return CUPTI_ERROR_INVALID_KIND;
	}
	*rec = (CUpti_Activity *)(buf + off);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
	(void)c, (void)s;
	*n = (size_t)atomic_exchange(&dropped, 0);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *size, void *v)
{
	(void)a, (void)size, (void)v;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetTimestamp(uint64_t *ts)
{
	*ts = now_ns();
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API &&
	    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
		*name = "cudaLaunchKernel_v7000";
	else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
		*name = "cuLaunchKernel";
	else
		*name = "cudaFakeOther";
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiFinalize(void)
{
	check_alive("cuptiFinalize");
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	check_alive("cuptiActivityEnableDriverApi");
	(void)cbid, (void)enable;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	(void)cbid, (void)enable;
	return CUPTI_SUCCESS;
}

static struct fake_thread *this_thread(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	unsigned i;

	for (i = 0; i < MAX_THREADS; i++)
		if (threads[i].tid == tid)
			return &threads[i];
	for (i = 0; i < MAX_THREADS; i++)
		if (!threads[i].tid) {
			threads[i].tid = tid;
			return &threads[i];
		}
	return NULL;
}

/* Room for a record of size in t's buffer: a full one handed over, a new one asked for (one too
 * small to be of use is not used: CUPTI would not use it either). */
static bool room_locked(struct fake_thread *t, size_t size)
{
	if (t && t->buf && t->size - t->used < size)
		complete_locked(t);
	request_locked(t);
	if (t && t->buf && t->size < size)
		t->buf = NULL;
	return t && t->buf;
}

/* FAKECUPTI_RECORD_US: the record's room is taken, and it is filled in later (unless a forced
 * flush took the buffer meanwhile: then it is lost, as incomplete). */
static bool place_slowly(const void *rec, size_t size, long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
	struct fake_thread *t;
	uint8_t *buf;
	unsigned handed;
	size_t at;

	pthread_mutex_lock(&lock);
	t = this_thread();
	if (!room_locked(t, size)) {
		pthread_mutex_unlock(&lock);
		return false;
	}
	buf = t->buf;
	handed = t->handed;
	at = t->used;
	memset(buf + at, 0, size); /* kind 0: CUPTI_ACTIVITY_KIND_INVALID, until filled in */
	t->used += size;
	pthread_mutex_unlock(&lock);
	while (nanosleep(&ts, &ts) < 0)
		;
	pthread_mutex_lock(&lock);
	if (t->handed == handed) /* not handed over meanwhile */
		memcpy(buf + at, rec, size);
	pthread_mutex_unlock(&lock);
	return true;
}

/* Place one record in this thread's buffer, as CUPTI does: drop and count if refused. */
static void place(const void *rec, size_t size)
{
	static _Atomic long record_us = -1;
	long us = atomic_load_explicit(&record_us, memory_order_relaxed);
	struct fake_thread *t;

	if (us < 0) {
		us = getenv("FAKECUPTI_RECORD_US") ? atol(getenv("FAKECUPTI_RECORD_US")) : 0;
		atomic_store_explicit(&record_us, us, memory_order_relaxed);
	}
	if (us > 0) {
		if (!place_slowly(rec, size, us))
			atomic_fetch_add(&dropped, 1);
		return;
	}
	pthread_mutex_lock(&lock);
	t = this_thread();
	if (room_locked(t, size)) {
		memcpy(t->buf + t->used, rec, size);
		t->used += size;
	} else {
		atomic_fetch_add(&dropped, 1);
	}
	pthread_mutex_unlock(&lock);
}

/* The app side: n kernel launches (runtime API record + kernel record each). */
API void fakecupti_launch(unsigned n)
{
	unsigned i;

	runtime_call();
	for (i = 0; i < n; i++) {
		uint32_t corr = atomic_fetch_add(&next_corr, 1);
		uint64_t t = now_ns();
		CUpti_ActivityAPI a;
		CUpti_ActivityKernel10 k;

		api_callback(CUPTI_API_ENTER, corr);
		memset(&a, 0, sizeof(a));
		a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
		a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
		a.start = t;
		a.end = t + 2000;
		a.processId = (uint32_t)getpid();
		a.threadId = (uint32_t)syscall(SYS_gettid);
		a.correlationId = corr;
		memset(&k, 0, sizeof(k));
		k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k.start = t + 5000;
		k.end = t + 8000;
		k.streamId = 7;
		k.contextId = 1;
		k.gridX = k.gridY = k.gridZ = 1;
		k.blockX = 128, k.blockY = k.blockZ = 1;
		k.correlationId = corr;
		k.name = "_Z10fakeKernelv";
		if (kinds[CUPTI_ACTIVITY_KIND_RUNTIME])
			place(&a, sizeof(a));
		if (kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
			place(&k, sizeof(k));
		api_callback(CUPTI_API_EXIT, corr);
	}
}

/* The app side: an allocation (or, release true, its release) of device memory, as CUPTI's
 * MEMORY2 activity records it. */
/* The stand-in's own lock (a program's CUPTI takes locks of its own): the tests tell it from
 * tally's. */
API pthread_mutex_t *fakecupti_lock_address(void)
{
	return &lock;
}

API void fakecupti_memory(uint64_t address, uint64_t bytes, bool release)
{
	CUpti_ActivityMemory4 m;

	runtime_call();
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = release ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
					: CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.address = address;
	m.bytes = bytes;
	m.timestamp = now_ns();
	m.correlationId = atomic_fetch_add(&next_corr, 1);
	m.processId = (uint32_t)getpid();
	m.contextId = 1;
	if (kinds[CUPTI_ACTIVITY_KIND_MEMORY2])
		place(&m, sizeof(m));
}

/* Device d's context: a handle cuptiGetDeviceId maps back. */
static CUcontext context_of(int d)
{
	return (CUcontext)(uintptr_t)(d + 1);
}

API CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *id)
{
	*id = ctx ? (uint32_t)((uintptr_t)ctx - 1) : 0;
	return CUPTI_SUCCESS;
}

/* The app side: device d's context going away (cudaDeviceReset, exit): CUPTI's callback while it
 * is still there, then it is gone. */
API void fakecupti_context_destroy(int d)
{
	CUpti_ResourceData data;

	memset(&data, 0, sizeof(data));
	data.context = context_of(d);
	if (subscriber_cb)
		subscriber_cb(subscriber_data, CUPTI_CB_DOMAIN_RESOURCE,
			      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &data);
	fakecupti_pm_context_gone(d);
}

/* The CUDA runtime's exit handler: every device's context is destroyed. */
static void runtime_teardown(void)
{
	int d, n = 0;

	if (getpid() != runtime_pid)
		return; /* a fork child's copy: CUDA has no contexts there */
	(void)cuDeviceGetCount(&n);
	for (d = 0; d < n; d++)
		fakecupti_context_destroy(d);
}

static void register_runtime_teardown(void)
{
	runtime_pid = getpid();
	atexit(runtime_teardown);
}

/* The runtime's first call registers its teardown, after CUDA (and the injection) started. */
static void runtime_call(void)
{
	pthread_once(&runtime_once, register_runtime_teardown);
}

/* A fork child has no CUPTI state of its own (CUDA does not even work there): the parent's
 * per-thread buffers are the parent's, and must not come back to a session of the child's. */
static void forget_parent(void)
{
	pthread_mutex_init(&lock, NULL);
	memset(threads, 0, sizeof(threads));
	request_cb = NULL;
	complete_cb = NULL;
	subscriber_cb = NULL;
}

/* CUPTI's own exit handler, registered at its load. */
static void cupti_teardown(void)
{
	atomic_store(&torn_down, true);
}

__attribute__((constructor)) static void fakecupti_loaded(void)
{
	pthread_atfork(NULL, NULL, forget_parent);
	atexit(cupti_teardown);
}
