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
    [TALLY_KIND_MEMORY] = "memory",	  [TALLY_KIND_GPU_METRIC] = "gpu_metric",
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

const char *tally_gpu_metrics_state_name(unsigned state)
{
	static const char *const names[TALLY_GM_STATE_MAX] = {
	    [TALLY_GM_SAMPLED] = "sampled", [TALLY_GM_ELSEWHERE] = "elsewhere",
	    [TALLY_GM_REFUSED] = "refused", [TALLY_GM_UNSUPPORTED] = "unsupported",
	    [TALLY_GM_BUSY] = "busy",	    [TALLY_GM_STOPPED] = "stopped",
	};

	return state < TALLY_GM_STATE_MAX && names[state] ? names[state] : "unknown";
}
