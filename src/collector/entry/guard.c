/* SPDX-License-Identifier: MIT */
/*
 * Another CUPTI client in the process (torch.profiler's Kineto, a second tool): CUPTI 13.0 serves
 * one subscriber, and a client that registers its own buffer callbacks, disables kinds or calls
 * cuptiFinalize would silently take the trace away from us.  With libtally.so in LD_PRELOAD, the
 * client's calls of these functions come here first.  While this process is recording, they are
 * refused with the error CUPTI itself gives a second subscriber, and the trace gets a NOTE naming
 * what was refused; otherwise they go through to the real CUPTI untouched.  Our own calls do not
 * come here: they go straight to libcupti through cupti-api.c's table.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "collector.h"
#include "cupti-api.h"
#include "log.h"
#include "pipeline.h"

static _Atomic unsigned refusals;

static CUptiResult refuse(const char *what)
{
	char text[200];

	/* Say it once per process; count the rest in the log. */
	if (atomic_fetch_add_explicit(&refusals, 1, memory_order_relaxed) == 0) {
		snprintf(text, sizeof(text),
			 "another CUPTI client called %s while tally was recording; refused "
			 "(torch.profiler and nsys see no GPU activity from this process)",
			 what);
		tally_pipeline_note(TALLY_NOTE_WARNING, "other-client", text);
		tally_log_user("%s", text);
	}
	return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

/* Calls libcupti makes to its own exported functions (if it does so through its PLT) are not a
 * second client's: they pass. */
static bool from_cupti(const void *caller)
{
	Dl_info from, lib;

	return cupti.GetVersion && dladdr(caller, &from) &&
	       dladdr((void *)cupti.GetVersion, &lib) && from.dli_fbase == lib.dli_fbase;
}

#define FORWARD(ret_type, name, params, args)                                                      \
	TALLY_EXPORT ret_type name params                                                          \
	{                                                                                          \
		ret_type(*real) params = (ret_type(*) params)dlsym(RTLD_NEXT, #name);              \
		if (session_running(session_get()) && !from_cupti(__builtin_return_address(0)))    \
			return refuse(#name);                                                      \
		return real ? real args : CUPTI_ERROR_NOT_INITIALIZED;                             \
	}

FORWARD(CUptiResult, cuptiSubscribe, (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void *ud),
	(s, cb, ud))
FORWARD(CUptiResult, cuptiActivityRegisterCallbacks,
	(CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp), (rq, cp))
FORWARD(CUptiResult, cuptiActivityDisable, (CUpti_ActivityKind kind), (kind))
FORWARD(CUptiResult, cuptiActivityEnable, (CUpti_ActivityKind kind), (kind))
FORWARD(CUptiResult, cuptiFinalize, (void), ())
