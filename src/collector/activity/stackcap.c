/* SPDX-License-Identifier: MIT */
/*
 * When to capture a stack: CUPTI's callback on entry to each runtime or driver call that
 * launches GPU work (kernel, copy, memset, graph launch), the same calls the correlation check
 * expects a GPU record for.  Only those callbacks are enabled, and only when --python-stacks or
 * --native-stacks asked for them, so a session without stacks pays nothing; --python-stacks in
 * a process without CPython enables nothing either.
 *
 * cudaLaunchKernel calls cuLaunchKernel inside: the driver call reuses the stack its runtime
 * call captured (a per-thread depth), so each launch is walked once.
 *
 * The capture runs on the launching thread's stack, which may be as small as PTHREAD_STACK_MIN
 * (16 KiB), below CUDA's and CUPTI's own frames: the frames it gathers are the thread's heap
 * block (threadmem.h), not an array on that stack.
 */
#include "stackcap.h"

#include <errno.h>
#include <stdio.h>

#include "convert.h"
#include "cupti-api.h"
#include "driver.h"
#include "log.h"
#include "nativestack.h"
#include "pipeline.h"
#include "pystack.h"
#include "stacks.h"
#include "stacktab.h"
#include "threadmem.h"

#define DOMAINS	  2 /* 0 runtime, 1 driver */
#define CBID_BITS 4096
#define MAX_DEPTH 128

static struct {
	bool python, python_gil, native;
	unsigned depth;
	uint64_t launches[DOMAINS][CBID_BITS / 64];
} cap;

static _Thread_local unsigned runtime_depth;
static _Thread_local uint32_t runtime_stack;

static int domain_index(CUpti_CallbackDomain domain)
{
	return domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? 0
	       : domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1
						      : -1;
}

static bool is_launch(int dom, CUpti_CallbackId cbid)
{
	return dom >= 0 && cbid < CBID_BITS && (cap.launches[dom][cbid / 64] >> (cbid % 64) & 1);
}

static void enable_launch_callbacks(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain,
				    CUpti_CallbackId size)
{
	int dom = domain_index(domain);
	CUpti_CallbackId cbid;

	for (cbid = 1; cbid < size && cbid < CBID_BITS; cbid++) {
		const char *name = NULL;

		if (cupti.GetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name ||
		    !tally_api_name_launches(name))
			continue;
		if (cupti.EnableCallback(1, sub, domain, cbid) == CUPTI_SUCCESS)
			cap.launches[dom][cbid / 64] |= 1ull << (cbid % 64);
	}
}

static void say_what(bool python_asked)
{
	char text[256];

	snprintf(text, sizeof(text), "call stacks on launches: python %s, native %s, depth %u",
		 cap.python	? "on"
		 : python_asked ? "off (no CPython 3.9+ in the process)"
				: "off",
		 cap.native ? "on" : "off", cap.depth);
	tally_pipeline_note(TALLY_NOTE_INFO, "stacks", text);
}

void tally_stackcap_subscribe(CUpti_SubscriberHandle sub, const struct tally_config *cfg)
{
	if (!cfg->python_stacks && !cfg->native_stacks)
		return;
	cap.python = cfg->python_stacks && tally_pystack_init(cfg->python_stacks_gil);
	cap.python_gil = cfg->python_stacks_gil;
	cap.native = cfg->native_stacks;
	cap.depth = cfg->stack_depth;
	say_what(cfg->python_stacks);
	if ((!cap.python && !cap.native) || !tally_stacktab_ready())
		return;
	if (cap.native) {
		/* CUPTI (any function of it) and the driver: their frames top every launch's stack
		 */
		const void *foreign[] = {(const void *)(uintptr_t)cupti.Subscribe,
					 tally_driver_sym("cuInit")};

		tally_nativestack_init(foreign, sizeof(foreign) / sizeof(foreign[0]));
	}
	enable_launch_callbacks(sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
	enable_launch_callbacks(sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
}

static struct tally_thread_mem captures =
    TALLY_THREAD_MEM(2 * MAX_DEPTH * sizeof(struct raw_frame));

/* Native frames first (innermost, down to the interpreter), then Python's. */
static uint32_t capture(void)
{
	struct raw_frame *frames = tally_thread_mem(&captures);
	frame_namer namer = NULL;
	unsigned n = 0;

	if (!frames)
		return 0;
	if (cap.native)
		n = tally_nativestack_capture(frames, cap.depth);
	if (cap.python)
		n += tally_pystack_capture(frames + n, cap.depth, &namer);
	return tally_stacktab_intern(frames, n, namer);
}

bool tally_stackcap_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			     const CUpti_CallbackData *api)
{
	int dom = domain_index(domain), saved_errno;
	uint32_t id;

	if (!is_launch(dom, cbid))
		return false;
	if (api->callbackSite == CUPTI_API_EXIT) {
		if (dom == 0 && runtime_depth)
			runtime_depth--;
		return true;
	}
	saved_errno = errno; /* the program's, inside its CUDA call */
	id = dom == 1 && runtime_depth ? runtime_stack : capture();
	tally_stacktab_note(api->correlationId, id);
	if (dom == 0) {
		runtime_depth++;
		runtime_stack = id;
	}
	errno = saved_errno;
	return true;
}
