/* SPDX-License-Identifier: MIT */
/*
 * The floor: the cheapest CUPTI activity collector that still takes every record - it enables the
 * same kinds as tally's default, hands CUPTI buffers, and only counts what comes back.  The cost
 * of this over an untraced run is CUPTI's own; tally's cost over this is tally's.  Injected the
 * same way (CUDA_INJECTION64_PATH).  Prints the count at exit to stderr.
 */
#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_SIZE (4u << 20)

static _Atomic unsigned long long records, dropped_total;

static void CUPTIAPI request(uint8_t **buf, size_t *size, size_t *max)
{
	*buf = aligned_alloc(4096, BUF_SIZE);
	*size = *buf ? BUF_SIZE : 0;
	*max = 0;
}

static void CUPTIAPI complete(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	unsigned long long n = 0;
	size_t d = 0;

	(void)c, (void)s, (void)size;
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
		n++;
	atomic_fetch_add(&records, n);
	if (cuptiActivityGetNumDroppedRecords(NULL, 0, &d) == CUPTI_SUCCESS)
		atomic_fetch_add(&dropped_total, d);
	free(buf);
}

static void at_exit(void)
{
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	fprintf(stderr, "floor: %llu records, %llu dropped\n", (unsigned long long)records,
		(unsigned long long)dropped_total);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	static const CUpti_ActivityKind kinds[] = {
	    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
	    CUPTI_ACTIVITY_KIND_MEMCPY2,	   CUPTI_ACTIVITY_KIND_MEMSET,
	    CUPTI_ACTIVITY_KIND_RUNTIME,
	};
	size_t i;

	cuptiActivityRegisterCallbacks(request, complete);
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cuptiActivityEnable(kinds[i]);
	atexit(at_exit);
	return 1;
}
