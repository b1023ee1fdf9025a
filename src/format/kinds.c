/* SPDX-License-Identifier: MIT */
/* Record kind names, as used on the command line (--trace) and in reports. */
#include <stdio.h>
#include <string.h>

#include "tally-format.h"

static const char *const kind_names[TALLY_KIND_MAX] = {
    [TALLY_KIND_NONE] = "none",		  [TALLY_KIND_KERNEL] = "kernel",
    [TALLY_KIND_MEMCPY] = "memcpy",	  [TALLY_KIND_MEMSET] = "memset",
    [TALLY_KIND_RUNTIME] = "runtime",	  [TALLY_KIND_DRIVER] = "driver",
    [TALLY_KIND_SYNC] = "sync",		  [TALLY_KIND_NVTX_RANGE] = "nvtx_range",
    [TALLY_KIND_NVTX_MARK] = "nvtx_mark", [TALLY_KIND_OVERHEAD] = "overhead",
    [TALLY_KIND_MEMORY] = "memory",	  [TALLY_KIND_CPU_SAMPLE] = "cpu_sample",
    [TALLY_KIND_OSRT] = "osrt",		  [TALLY_KIND_GPU_METRIC] = "gpu_metric",
};

bool tally_kind_known(unsigned kind)
{
	return kind > TALLY_KIND_NONE && kind < TALLY_KIND_MAX && kind_names[kind];
}

const char *tally_kind_name(unsigned kind)
{
	static _Thread_local char other[24];

	if (kind == TALLY_KIND_NONE || tally_kind_known(kind))
		return kind_names[kind];
	snprintf(other, sizeof(other), "kind-%u", kind);
	return other;
}

static const struct {
	const char *name, *meaning;
} drop_sources[] = {
    [TALLY_DROPS_GLOBAL] = {"global queue",
			    "records CUPTI dropped from its global queue: CUPTI does not report "
			    "their context, stream or kind"},
    [TALLY_DROPS_CONTEXT] = {"context queue",
			     "records CUPTI dropped from this context's own queue: the kind is not "
			     "reported"},
    [TALLY_DROPS_SEEN] = {"context seen",
			  "not a drop: this context ran on this device (count: its GPU records "
			  "taken in); its drops, if any, are in the global queue's count"},
};

const char *tally_drop_source_name(unsigned source)
{
	return source < sizeof(drop_sources) / sizeof(drop_sources[0]) && drop_sources[source].name
		   ? drop_sources[source].name
		   : "unknown source";
}

const char *tally_drop_source_meaning(unsigned source)
{
	return source < sizeof(drop_sources) / sizeof(drop_sources[0]) && drop_sources[source].name
		   ? drop_sources[source].meaning
		   : "a source this tally does not know";
}

static const char *const osrt_names[TALLY_OSRT_CALL_MAX] = {
    [TALLY_OSRT_PTHREAD_MUTEX_LOCK] = "pthread_mutex_lock",
    [TALLY_OSRT_PTHREAD_COND_WAIT] = "pthread_cond_wait",
    [TALLY_OSRT_PTHREAD_COND_TIMEDWAIT] = "pthread_cond_timedwait",
    [TALLY_OSRT_PTHREAD_COND_CLOCKWAIT] = "pthread_cond_clockwait",
    [TALLY_OSRT_SEM_WAIT] = "sem_wait",
    [TALLY_OSRT_SEM_TIMEDWAIT] = "sem_timedwait",
    [TALLY_OSRT_SEM_CLOCKWAIT] = "sem_clockwait",
    [TALLY_OSRT_POLL] = "poll",
    [TALLY_OSRT_PPOLL] = "ppoll",
    [TALLY_OSRT_SELECT] = "select",
    [TALLY_OSRT_PSELECT] = "pselect",
    [TALLY_OSRT_EPOLL_WAIT] = "epoll_wait",
    [TALLY_OSRT_EPOLL_PWAIT] = "epoll_pwait",
    [TALLY_OSRT_READ] = "read",
    [TALLY_OSRT_RECV] = "recv",
    [TALLY_OSRT_RECVFROM] = "recvfrom",
    [TALLY_OSRT_RECVMSG] = "recvmsg",
    [TALLY_OSRT_NANOSLEEP] = "nanosleep",
    [TALLY_OSRT_CLOCK_NANOSLEEP] = "clock_nanosleep",
    [TALLY_OSRT_USLEEP] = "usleep",
    [TALLY_OSRT_SLEEP] = "sleep",
    [TALLY_OSRT_WAITPID] = "waitpid",
    [TALLY_OSRT_WAIT] = "wait",
    [TALLY_OSRT_FUTEX] = "futex",
    [TALLY_OSRT_PTHREAD_JOIN] = "pthread_join",
};

const char *tally_osrt_call_name(unsigned call)
{
	return call < TALLY_OSRT_CALL_MAX ? osrt_names[call] : NULL;
}

const char *tally_gpu_metrics_state_name(unsigned state)
{
	static const char *const names[TALLY_GM_STATE_MAX] = {
	    [TALLY_GM_SAMPLED] = "sampled", [TALLY_GM_ELSEWHERE] = "elsewhere",
	    [TALLY_GM_REFUSED] = "refused", [TALLY_GM_UNSUPPORTED] = "unsupported",
	    [TALLY_GM_BUSY] = "busy",	    [TALLY_GM_STOPPED] = "stopped",
	};

	return state < TALLY_GM_STATE_MAX && names[state] ? names[state] : "unknown";
}
