/* SPDX-License-Identifier: MIT */
/* The collector's environment; see config.h and docs/collector.md. */
#include "config.h"
#include "ranks.h"
#include "tally-format.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trace's sample bits are the setting's names' (format 1.3). */
_Static_assert((unsigned)SAMPLE_PYTHON == (unsigned)TALLY_SAMPLE_BIT_PYTHON &&
		   (unsigned)SAMPLE_NATIVE == (unsigned)TALLY_SAMPLE_BIT_NATIVE,
	       "TALLY_SAMPLE's bits are the trace's");

bool tally_config_from_start(const struct tally_config *c)
{
	return c->sample || (c->trace & TRACE_OSRT);
}

bool tally_config_gpu_metrics_asked(void)
{
	const char *v = getenv(tally_settings[TS_GPU_METRICS].env);

	return v && *v;
}

#define AT(f) offsetof(struct tally_config, f), sizeof(((struct tally_config *)0)->f)

/* Where each setting lands: its value (a bool, unsigned, int, long, uint64_t or size_t field),
 * or its text (a char array). */
static const struct {
	enum tally_setting_id id;
	size_t offset, size;
	bool text;
} fields[] = {
    {TS_OUTPUT, AT(output), true},
    {TS_TRACE, AT(trace), false},
    {TS_SAMPLE, AT(sample), false},
    {TS_SAMPLE_RATE, AT(sample_rate), false},
    {TS_OSRT_THRESHOLD, AT(osrt_threshold_ns), false},
    {TS_PYTHON_STACKS, AT(python_stacks), false},
    {TS_NATIVE_STACKS, AT(native_stacks), false},
    {TS_STACK_DEPTH, AT(stack_depth), false},
    {TS_DELAY, AT(delay_ns), false},
    {TS_DURATION, AT(duration_ns), false},
    {TS_CAPTURE_RANGE, AT(capture_profiler_api), false},
    {TS_DEVICES, AT(device_mask), false},
    {TS_RANKS, AT(ranks), true},
    {TS_BUFFER_SIZE, AT(buffer_size), false},
    {TS_POOL_BUFFERS, AT(pool_buffers), false},
    {TS_SLICE, AT(slice_ns), false},
    {TS_GPU_METRICS, AT(gpu_metrics_devices), false},
    {TS_GPU_METRICS_HZ, AT(gpu_metrics_hz), false},
    {TS_GPU_METRICS_SET, AT(gpu_metrics_set), true},
    {TS_FORCE, AT(force), false},
    {TS_SAMPLE_FALLBACK, AT(sample_fallback), false},
    {TS_SAMPLE_SIGNAL, AT(sample_signal), false},
    {TS_SAMPLE_STALL, AT(sample_stall_ns), false},
    {TS_FLUSH_TIMEOUT, AT(flush_timeout_ns), false},
    {TS_DEVICE_BUFFER_SIZE, AT(device_buffer_size), false},
    {TS_DEVICE_BUFFER_POOL_LIMIT, AT(device_buffer_pool_limit), false},
    {TS_GPU_METRICS_BUFFER, AT(gpu_metrics_buffer), false},
    {TS_GPU_METRICS_DECODE, AT(gpu_metrics_decode_ns), false},
    {TS_BENCH_TOGGLE, AT(bench_toggle_ns), false},
    {TS_MANIFEST, AT(manifest), true},
    {TS_ROOT_PID, AT(root_pid), false},
    {TS_TEST_SLOW_CONSUMER, AT(slow_consumer_ns), false},
    {TS_TEST_SAMPLE_RING, AT(test_sample_ring), false},
    {TS_TEST_TORN, AT(test_torn), false},
};

/* A value into a field of its size (the table's ranges keep it within the field's type). */
static void store(void *field, size_t size, uint64_t v)
{
	bool b = v != 0;
	uint32_t u32 = (uint32_t)v;

	if (size == sizeof(bool))
		memcpy(field, &b, sizeof(b));
	else if (size == sizeof(u32))
		memcpy(field, &u32, sizeof(u32));
	else
		memcpy(field, &v, sizeof(v));
}

int tally_config_load(struct tally_config *c, char *why, size_t len)
{
	char pattern[PATH_MAX];
	const char *text;
	uint64_t v;
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		char *field = (char *)c + fields[i].offset;

		if (tally_setting_get(fields[i].id, &v, &text, why, len) < 0)
			return -EINVAL;
		if (!fields[i].text)
			store(field, fields[i].size, v);
		else if ((size_t)snprintf(field, fields[i].size, "%s", text) >= fields[i].size) {
			snprintf(why, len, "%s: longer than %zu bytes",
				 tally_settings[fields[i].id].env, fields[i].size - 1);
			return -EINVAL;
		}
	}
	if (tally_output_pattern(c->output, pattern, sizeof(pattern)) == pattern)
		snprintf(c->output, sizeof(c->output), "%s", pattern); /* DIR/: checked to fit */
	c->python_stacks_gil = c->python_stacks == PYTHON_STACKS_GIL;
	c->gpu_metrics = tally_config_gpu_metrics_asked();
	return 0;
}

static const char *const rank_vars[] = {"SLURM_PROCID", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};

bool tally_rank_selected(const char *list, char *rank_var, size_t len)
{
	char buf[256], *tok, *save = NULL;
	const char *rank = NULL;
	size_t i;

	for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]) && !rank; i++)
		if ((rank = getenv(rank_vars[i])) && *rank)
			snprintf(rank_var, len, "%s=%s", rank_vars[i], rank);
		else
			rank = NULL;
	if (!rank && rank_var && len)
		rank_var[0] = '\0';
	if (!list || !*list)
		return true;
	if (!rank)
		return false; /* a rank list was given, and this process has no rank */
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		long r = strtol(rank, NULL, 10);

		if (dash) {
			*dash = '\0';
			if (r >= strtol(tok, NULL, 10) && r <= strtol(dash + 1, NULL, 10))
				return true;
		} else if (strcmp(tok, rank) == 0) {
			return true;
		}
	}
	return false;
}
