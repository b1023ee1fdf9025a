/* SPDX-License-Identifier: MIT */
/* The pipeline's source calls, answered by the real CUPTI. */
#include "pipeline.h"

static CUptiResult cupti_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	return cuptiActivityGetNextRecord(buf, valid, rec);
}

static CUptiResult cupti_dropped(size_t *dropped)
{
	/* Buffers are global since CUDA 6.0: NULL context, stream 0 selects the one queue. */
	return cuptiActivityGetNumDroppedRecords(NULL, 0, dropped);
}

static uint64_t cupti_now(void)
{
	uint64_t ts = 0;

	(void)cuptiGetTimestamp(&ts);
	return ts;
}

static const char *cupti_api_name(CUpti_ActivityKind kind, uint32_t cbid)
{
	CUpti_CallbackDomain dom = kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
								      : CUPTI_CB_DOMAIN_RUNTIME_API;
	const char *name = NULL;

	if (cuptiGetCallbackName(dom, cbid, &name) != CUPTI_SUCCESS)
		return NULL;
	return name;
}

const struct tally_source tally_cupti_source = {
    .next_record = cupti_next_record,
    .dropped = cupti_dropped,
    .now = cupti_now,
    .api_name = cupti_api_name,
};
