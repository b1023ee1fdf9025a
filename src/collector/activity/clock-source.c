/* SPDX-License-Identifier: MIT */
/* The pipeline's source for a session with no CUPTI (NVTX only): nothing to walk, and the
 * CLOCK_REALTIME clock, which is CUPTI's own default on Linux. */
#include <time.h>

#include "clock.h"
#include "pipeline.h"

static CUptiResult none_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	(void)buf;
	(void)valid;
	*rec = NULL;
	return CUPTI_ERROR_MAX_LIMIT_REACHED;
}

static CUptiResult none_dropped(size_t *dropped)
{
	*dropped = 0;
	return CUPTI_SUCCESS;
}

static uint64_t realtime_now(void)
{
	return tally_realtime_ns();
}

static const char *none_api_name(CUpti_ActivityKind kind, uint32_t cbid)
{
	(void)kind;
	(void)cbid;
	return NULL;
}

const struct tally_source tally_clock_source = {
    .next_record = none_next_record,
    .dropped = none_dropped,
    .now = realtime_now,
    .api_name = none_api_name,
};
