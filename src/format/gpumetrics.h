/* SPDX-License-Identifier: MIT */
/*
 * The GPU_METRICS chunk (docs/format.md §13): one device's hardware-metric sampling, its metric
 * set or why the section has no samples of it.  Both sides: the collector encodes it, readers
 * decode it.
 */
#ifndef TALLY_FORMAT_GPUMETRICS_H
#define TALLY_FORMAT_GPUMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "tally-format.h"

#define TALLY_GPU_METRICS_MAX 64 /* metrics per set, left-out entries, devices per section */

/* One metric of a set (key 9).  Its records carry scale in SUBKIND. */
struct tally_metric_desc {
	unsigned scale; /* value = METRIC_VALUE / 10^scale */
	char *name;	/* CUPTI's: sm__cycles_active.avg.pct_of_peak_sustained_elapsed */
	char *unit;	/* "%", "bytes/s", "Hz", "" */
	char *label;	/* for displays: "SM Active" */
};

struct tally_gpu_metrics {
	uint32_t device; /* CUDA ordinal, as records' DEVICE */
	uint8_t uuid[16];
	bool has_uuid;
	unsigned state; /* enum tally_gpu_metrics_state */
	char *chip;
	uint64_t interval; /* ns (trigger TIME) or SYS clock cycles (trigger SYSCLK) */
	unsigned trigger;  /* enum tally_gpu_metrics_trigger */
	uint64_t hw_buffer;
	unsigned passes;
	struct tally_metric_desc *metrics;
	size_t nmetrics;
	char **left_out; /* "NAME: why" */
	size_t nleft_out;
	uint64_t result; /* CUptiResult of a refusal or failure; 0 none */
	char *why, *remedy;
	/* state ELSEWHERE: the process that samples the device */
	uint64_t holder_pid;
	char *holder_host, *holder_file;
	uint8_t holder_session[16];
	bool has_holder_session;
};

/* Append the payload for g (strings that are NULL are left out). */
void tally_gpu_metrics_encode(struct tally_buf *b, const struct tally_gpu_metrics *g);

/*
 * Parse a payload into g (zeroed first; its strings are owned: tally_gpu_metrics_fini).
 * Unknown keys are counted in *unknown_keys; entries past TALLY_GPU_METRICS_MAX are ignored.
 * false if the payload is damaged (g then holds what came before the damage).
 */
bool tally_gpu_metrics_decode(const uint8_t *p, size_t len, struct tally_gpu_metrics *g,
			      uint64_t *unknown_keys);

void tally_gpu_metrics_fini(struct tally_gpu_metrics *g);

#endif
