/* SPDX-License-Identifier: MIT */
/*
 * CUPTI setup: buffer callbacks, the activity kinds asked for, and the few API callbacks the
 * collector needs (a context going away, cudaProfilerStart/Stop for the capture range, CUPTI's
 * fatal error).  See docs/collector.md for what each --trace name turns on.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "convert.h"
#include "cupti-api.h"
#include "cupti-tracer.h"
#include "libc.h"
#include "log.h"
#include "pipeline.h"
#include "stackcap.h"

uint64_t cupti_now(void)
{
	uint64_t ts = 0;

	if (cupti.GetTimestamp)
		(void)cupti.GetTimestamp(&ts);
	return ts;
}

static const char *result_string(CUptiResult r)
{
	const char *s = NULL;

	if (cupti.GetResultString && cupti.GetResultString(r, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}

/*
 * The CUPTI kinds behind each --trace bit, GPU kinds first and API kinds last: the window opens in
 * this order and closes in the reverse, so no launch is recorded while its kernel's kind is off
 * (on the H200, closing kernels before the runtime API while a program kept launching left 15
 * launches with no kernel record).
 */
static const struct {
	unsigned bit;
	CUpti_ActivityKind kinds[2];
} kind_map[] = {
    {TRACE_KERNEL, {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_MEMCPY, {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
    {TRACE_MEMSET, {CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_SYNC, {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_OVERHEAD, {CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_RUNTIME, {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_DRIVER, {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_INVALID}},
    {TRACE_MEMORY, {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_INVALID}},
};
#define KIND_MAP_LEN (sizeof(kind_map) / sizeof(kind_map[0]))

static void switch_kinds(unsigned trace_bits, size_t i, bool open)
{
	size_t j;

	if (!(trace_bits & kind_map[i].bit))
		return;
	for (j = 0; j < 2 && kind_map[i].kinds[j] != CUPTI_ACTIVITY_KIND_INVALID; j++) {
		CUptiResult r = open ? cupti.ActivityEnable(kind_map[i].kinds[j])
				     : cupti.ActivityDisable(kind_map[i].kinds[j]);

		if (r != CUPTI_SUCCESS)
			tally_log("activity kind %d: %s", kind_map[i].kinds[j], result_string(r));
	}
}

/* Only the driver calls that launch work: for programs that launch through the driver API
 * (JAX, Triton, CuPy's raw kernels), without a record for every other driver call. */
static void enable_launch_driver_calls(uint8_t enable)
{
	CUpti_CallbackId cbid;

	if (!cupti.ActivityEnableDriverApi)
		return;
	for (cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++) {
		const char *name = NULL;

		if (cupti.GetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) ==
			CUPTI_SUCCESS &&
		    name && tally_api_name_launches(name))
			(void)cupti.ActivityEnableDriverApi(cbid, enable);
	}
}

void cupti_tracer_window(struct cupti_tracer *t, bool open)
{
	unsigned bits = t->trace_bits;
	bool launch_driver = (bits & TRACE_LAUNCH_DRIVER) && !(bits & TRACE_DRIVER);
	size_t i;

	libc_pthread_mutex_lock(&t->window_lock);
	if (!cupti_tracer_on(t) || t->window_open == open)
		goto unlock;
	if (open) {
		for (i = 0; i < KIND_MAP_LEN; i++)
			switch_kinds(bits, i, true);
		if (launch_driver)
			enable_launch_driver_calls(1);
	} else {
		if (launch_driver)
			enable_launch_driver_calls(0);
		for (i = KIND_MAP_LEN; i-- > 0;)
			switch_kinds(bits, i, false);
	}
	t->window_open = open;
	tally_pipeline_window_edge(open);
	tally_pipeline_note(TALLY_NOTE_INFO, open ? "window-open" : "window-close",
			    open ? "collection window opened" : "collection window closed");
unlock:
	pthread_mutex_unlock(&t->window_lock);
}

bool cupti_tracer_window_open(struct cupti_tracer *t)
{
	bool open;

	libc_pthread_mutex_lock(&t->window_lock);
	open = t->window_open;
	pthread_mutex_unlock(&t->window_lock);
	return open;
}

bool cupti_tracer_on(const struct cupti_tracer *t)
{
	return atomic_load_explicit(&t->on, memory_order_acquire);
}

void cupti_tracer_flush(struct cupti_tracer *t, bool forced)
{
	if (cupti_tracer_on(t))
		(void)cupti.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

/* The device of a context being destroyed, as a bit; all bits when CUPTI cannot say. */
static uint64_t context_devices(const CUpti_ResourceData *r)
{
	uint32_t dev;

	if (r && r->context && cupti.GetDeviceId &&
	    cupti.GetDeviceId(r->context, &dev) == CUPTI_SUCCESS && dev < 64)
		return 1ull << dev;
	return ~0ull;
}

/* CUPTI calls this on the application's threads, inside the CUDA call: keep it short. */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
				 const void *data)
{
	const CUpti_CallbackData *api = data;
	struct cupti_tracer *t = userdata;

	if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
	    cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		/* The context's records must reach us before it goes (cudaDeviceReset, exit), and
		 * what needs it must end while it is there. */
		cupti_tracer_flush(t, false);
		if (t->context_ending)
			t->context_ending(t->context_arg, context_devices(data));
		return;
	}
	if (domain == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
		tally_pipeline_note(TALLY_NOTE_ERROR, "cupti-fatal",
				    "CUPTI reported a fatal error and finalized itself");
		return;
	}
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (tally_stackcap_callback(domain, cbid, api))
		return;
	/* cudaProfilerStart opens the window when it returns; Stop closes it on entry. */
	if ((cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 &&
	     domain == CUPTI_CB_DOMAIN_RUNTIME_API) ||
	    (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart &&
	     domain == CUPTI_CB_DOMAIN_DRIVER_API)) {
		if (api->callbackSite == CUPTI_API_EXIT)
			cupti_tracer_window(t, true);
	} else if (api->callbackSite == CUPTI_API_ENTER) {
		cupti_tracer_flush(t, false);
		cupti_tracer_window(t, false);
	}
}

static void subscribe(struct cupti_tracer *t, const struct tally_config *cfg)
{
	CUpti_SubscriberHandle subscriber;
	CUptiResult r = cupti.Subscribe(&subscriber, on_callback, t);
	char text[256];

	if (r != CUPTI_SUCCESS) {
		snprintf(text, sizeof(text),
			 "cuptiSubscribe failed (%s): another CUPTI client (nsys, ncu, "
			 "torch.profiler) holds CUPTI; context-exit flushes and the capture range "
			 "are off",
			 result_string(r));
		tally_pipeline_note(TALLY_NOTE_WARNING, "other-subscriber", text);
		tally_log("%s", text);
		return;
	}
	t->subscriber = subscriber;
	t->subscribed = true;
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
				   CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_STATE,
				   CUPTI_CBID_STATE_FATAL_ERROR);
	tally_stackcap_subscribe(subscriber, cfg);
	if (!cfg->capture_profiler_api)
		return;
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
				   CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
				   CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				   CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
	(void)cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				   CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
}

static void set_attribute(CUpti_ActivityAttribute attr, size_t value, const char *name)
{
	size_t size = sizeof(value);
	CUptiResult r;

	if (!value || !cupti.ActivitySetAttribute)
		return;
	r = cupti.ActivitySetAttribute(attr, &size, &value);
	if (r != CUPTI_SUCCESS)
		tally_log("%s=%zu: %s", name, value, result_string(r));
}

void cupti_tracer_init(struct cupti_tracer *t)
{
	pthread_mutex_init(&t->window_lock, NULL);
	t->trace_bits = 0;
	t->subscribed = false;
	t->window_open = false;
	t->context_ending = NULL;
	t->context_arg = NULL;
	atomic_store_explicit(&t->on, false, memory_order_relaxed);
}

int cupti_tracer_setup(struct cupti_tracer *t, const struct tally_config *cfg, char *why,
		       size_t len)
{
	CUptiResult r;

	t->trace_bits = cfg->trace;
	set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, cfg->device_buffer_size,
		      "TALLY_DEVICE_BUFFER_SIZE");
	set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, cfg->device_buffer_pool_limit,
		      "TALLY_DEVICE_BUFFER_POOL_LIMIT");
	r = cupti.ActivityRegisterCallbacks(tally_pipeline_buffer_request,
					    tally_pipeline_buffer_complete);
	if (r != CUPTI_SUCCESS) {
		/* CUPTI takes one client a process: under cuda-gdb its debugger back-end is one */
		snprintf(why, len, "cuptiActivityRegisterCallbacks: %s%s", result_string(r),
			 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
			     ? ": another CUPTI client holds this process (a debugger such as "
			       "cuda-gdb, or a profiler that started first); its CUDA activity is "
			       "not recorded"
			     : "");
		return -EIO;
	}
	subscribe(t, cfg);
	(void)cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
	atomic_store_explicit(&t->on, true, memory_order_release);
	if (!cfg->delay_ns && !cfg->capture_profiler_api)
		cupti_tracer_window(t, true);
	return 0;
}

void cupti_tracer_teardown(struct cupti_tracer *t)
{
	if (!cupti_tracer_on(t))
		return;
	cupti_tracer_window(t, false);
	(void)cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_DEVICE);
	if (t->subscribed)
		(void)cupti.Unsubscribe(t->subscriber);
	t->subscribed = false;
	/* Detach CUPTI: without it, CUDA keeps paying for tracing after we stopped
	 * (pytorch/pytorch#146604). */
	if (cupti.Finalize)
		(void)cupti.Finalize();
	atomic_store_explicit(&t->on, false, memory_order_release);
}

void cupti_tracer_before_fork(struct cupti_tracer *t)
{
	libc_pthread_mutex_lock(&t->window_lock);
}

void cupti_tracer_after_fork_parent(struct cupti_tracer *t)
{
	pthread_mutex_unlock(&t->window_lock);
}

/* CUDA does not work in a child of a process that initialised it, and the parent's CUPTI
 * subscription is the parent's: the child's tracer starts from nothing.  The window lock was
 * taken by this very thread before the fork: it gives it back. */
void cupti_tracer_after_fork_child(struct cupti_tracer *t)
{
	t->trace_bits = 0;
	t->subscribed = false;
	t->window_open = false;
	atomic_store_explicit(&t->on, false, memory_order_relaxed);
	pthread_mutex_unlock(&t->window_lock);
}
