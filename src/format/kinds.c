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
    [TALLY_KIND_MEMORY] = "memory",
};

const char *tally_kind_name(unsigned kind)
{
	static _Thread_local char other[24];

	if (kind < TALLY_KIND_MAX)
		return kind_names[kind];
	snprintf(other, sizeof(other), "kind-%u", kind);
	return other;
}

int tally_kind_from_name(const char *name)
{
	int k;

	for (k = 1; k < TALLY_KIND_MAX; k++)
		if (strcmp(name, kind_names[k]) == 0)
			return k;
	return -1;
}
