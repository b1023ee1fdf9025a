/* SPDX-License-Identifier: MIT */
/*
 * bench-pipeline: how fast the consumer side of the pipeline is on one core, and how small the
 * file is.  Buffers are filled beforehand with real CUPTI kernel records (CUpti_ActivityKernel10,
 * 216 bytes each) shaped like a launch loop: launches every 4-7 us, a few kernel names, fixed
 * geometry.  Then the clock runs while the pipeline walks them (cuptiActivityGetNextRecord),
 * checks, correlates, encodes and writes them.  No generation cost is timed.
 *
 *   bench-pipeline [RECORDS] [OUTPUT]      (defaults: 5000000, /dev/shm/tally-bench.tally)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testsrc.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(uint8_t *buf, size_t cap, size_t *used, uint64_t *t, uint32_t *corr, size_t n,
		 uint32_t *rng)
{
	static const char *const names[] = {"_Z6fill_kPfi", "_Z6scale_kPffi", "_Z6reduce_kPKfPfi"};
	size_t i;

	for (i = 0; i < n && *used + sizeof(CUpti_ActivityKernel10) <= cap; i++) {
		CUpti_ActivityKernel10 *k = (void *)(buf + *used);

		*rng ^= *rng << 13, *rng ^= *rng >> 17, *rng ^= *rng << 5;
		memset(k, 0, sizeof(*k));
		k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		*t += 4000 + *rng % 3000;
		k->start = *t;
		k->end = *t + 1500 + (*rng >> 8) % 1000;
		k->deviceId = 0;
		k->contextId = 1;
		k->streamId = 7;
		k->gridX = 1024, k->gridY = 1, k->gridZ = 1;
		k->blockX = 256, k->blockY = 1, k->blockZ = 1;
		k->registersPerThread = 16;
		k->correlationId = (*corr)++;
		k->name = names[(*rng >> 4) % 3];
		*used += sizeof(*k);
	}
}

int main(int argc, char **argv)
{
	size_t total = argc > 1 ? strtoull(argv[1], NULL, 0) : 5000000;
	const char *out = argc > 2 ? argv[2] : "/dev/shm/tally-bench.tally";
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct tally_sink sink;
	size_t per_buf, nbufs, i, placed = 0;
	uint8_t **bufs;
	uint64_t t = 1796000000000000000ull;
	uint32_t corr = 1, rng = 12345;
	double t0, t1;
	struct stat st;
	int fd;

	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false; /* the timed drain runs on this thread: one core */
	cfg.buffer_size = 8u << 20;
	per_buf = cfg.buffer_size / sizeof(CUpti_ActivityKernel10);
	nbufs = (total + per_buf - 1) / per_buf;
	cfg.pool_buffers = (unsigned)nbufs;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(out);
		return 1;
	}
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, 1u << TALLY_KIND_KERNEL);
	cfg.trace_api = false; /* kernel records only: no launch records to match */
	if (tally_pipeline_start(&cfg, &testsrc_source, &sink, &session) < 0)
		return 1;
	bufs = calloc(nbufs, sizeof(*bufs));
	for (i = 0; i < nbufs; i++) {
		size_t size, maxr, used = 0;

		tally_pipeline_buffer_request(&bufs[i], &size, &maxr);
		fill(bufs[i], size, &used, &t, &corr, total - placed, &rng);
		placed += used / sizeof(CUpti_ActivityKernel10);
		tally_pipeline_buffer_complete(NULL, 0, bufs[i], size, used);
	}
	t0 = now_s();
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	tally_pipeline_stop(&rep);
	t1 = now_s();
	fstat(fd, &st);
	close(fd);
	printf("records            %zu kernel records (%zu bytes each in CUPTI's buffers)\n",
	       placed, sizeof(CUpti_ActivityKernel10));
	printf("consume+encode+write %.3f s on one core: %.2f M records/s\n", t1 - t0,
	       (double)placed / (t1 - t0) / 1e6);
	printf("file               %lld bytes: %.2f bytes per kernel record (ratio %.1fx)\n",
	       (long long)st.st_size, (double)st.st_size / (double)placed,
	       (double)sizeof(CUpti_ActivityKernel10) * (double)placed / (double)st.st_size);
	printf("ledger             %s\n", rep.complete ? "clean" : "shows loss");
	return rep.records == placed ? 0 : 1;
}
