/* SPDX-License-Identifier: MIT */
/* The collector's environment; see config.h and docs/collector.md. */
#include "config.h"
#include "ranks.h"
#include "tally-format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bits;
} trace_names[] = {
    {"cuda", TRACE_CUDA},
    {"nvtx", TRACE_NVTX},
    {"kernel", TRACE_KERNEL},
    {"memcpy", TRACE_MEMCPY},
    {"memset", TRACE_MEMSET},
    {"runtime", TRACE_RUNTIME},
    {"driver", TRACE_DRIVER},
    {"sync", TRACE_SYNC},
    {"overhead", TRACE_OVERHEAD},
    {"cuda-launch-driver", TRACE_LAUNCH_DRIVER},
    {"memory", TRACE_MEMORY},
    {"osrt", TRACE_OSRT},
    {"none", 0},
};

/* "cuda,nvtx" -> bits; -1 with why for an unknown name. */
static int tally_trace_parse(const char *s, unsigned *bits, char *why, size_t len)
{
	char buf[256], *tok, *save = NULL;

	*bits = 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(trace_names) / sizeof(trace_names[0]); i++)
			if (strcmp(tok, trace_names[i].name) == 0)
				break;
		if (i == sizeof(trace_names) / sizeof(trace_names[0])) {
			snprintf(why, len,
				 "unknown trace kind '%s' (use cuda, nvtx, kernel, memcpy, "
				 "memset, runtime, driver, sync, overhead, memory, osrt)",
				 tok);
			return -1;
		}
		*bits |= trace_names[i].bits;
	}
	return 0;
}

/* "python", "native", "python,native", "none" -> TALLY_SAMPLE_BIT_*; -1 with why. */
static int sample_parse(const char *s, unsigned *bits, char *why, size_t len)
{
	char buf[64], *tok, *save = NULL;

	*bits = 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "python") == 0) {
			*bits |= TALLY_SAMPLE_BIT_PYTHON;
		} else if (strcmp(tok, "native") == 0) {
			*bits |= TALLY_SAMPLE_BIT_NATIVE;
		} else if (strcmp(tok, "none") != 0) {
			snprintf(
			    why, len,
			    "unknown sampling '%s' (use python, native, python,native or none)",
			    tok);
			return -1;
		}
	}
	return 0;
}

bool tally_config_from_start(const struct tally_config *c)
{
	return c->sample || (c->trace & TRACE_OSRT);
}

/* An unsigned number from the environment, with its default; false on a bad value. */
static bool env_u64(const char *name, uint64_t def, uint64_t scale, uint64_t *out, char *why,
		    size_t len)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	*out = def * scale;
	if (!v || !*v)
		return true;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || *v == '-') {
		snprintf(why, len, "%s=%s is not a number", name, v);
		return false;
	}
	*out = (uint64_t)x * scale;
	return true;
}

static void env_str(const char *name, const char *def, char *out, size_t len)
{
	const char *v = getenv(name);

	snprintf(out, len, "%s", v && *v ? v : def);
}

/* Set and not "0". */
static bool env_flag(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

static int parse_devices(const char *v, uint64_t *mask, char *why, size_t len)
{
	char buf[256], *tok, *save = NULL;

	*mask = 0;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long id = strtoul(tok, &end, 10);

		if (*end || id >= 64) {
			snprintf(why, len, "TALLY_DEVICES: '%s' is not a device id 0-63", tok);
			return -EINVAL;
		}
		*mask |= 1ull << id;
	}
	return 0;
}

/* Host sampling and blocking calls. */
static int load_host(struct tally_config *c, char *why, size_t len)
{
	const char *s = getenv("TALLY_SAMPLE");
	uint64_t v;

	if (s && *s && sample_parse(s, &c->sample, why, len) < 0)
		return -EINVAL;
	if (!env_u64("TALLY_SAMPLE_RATE", 1000, 1, &v, why, len))
		return -EINVAL;
	if (v < 1 || v > 20000) {
		snprintf(why, len, "TALLY_SAMPLE_RATE=%llu: use 1 to 20000 (Hz)",
			 (unsigned long long)v);
		return -EINVAL;
	}
	c->sample_rate = (unsigned)v;
	c->sample_fallback = env_flag("TALLY_SAMPLE_FALLBACK");
	if (!env_u64("TALLY_SAMPLE_SIGNAL", 0, 1, &v, why, len) ||
	    !env_u64("TALLY_SAMPLE_STALL_MS", 100, 1000000, &c->sample_stall_ns, why, len) ||
	    !env_u64("TALLY_OSRT_THRESHOLD_NS", 1000, 1, &c->osrt_threshold_ns, why, len) ||
	    !env_u64("TALLY_TEST_SAMPLE_RING", 0, 1, &c->test_sample_ring, why, len))
		return -EINVAL;
	c->sample_signal = (int)v;
	c->test_torn = env_flag("TALLY_TEST_TORN");
	return 0;
}

bool tally_config_gpu_metrics_asked(void)
{
	const char *v = getenv("TALLY_GPU_METRICS");

	return v && *v;
}

/* TALLY_GPU_METRICS*: what the device list and the set say is the sampler's to judge (a bad
 * one costs the metrics, with a note, never the recording); numbers are checked here. */
static int gpu_metrics_load(struct tally_config *c, char *why, size_t len)
{
	uint64_t v;

	env_str("TALLY_GPU_METRICS", "", c->gpu_metrics, sizeof(c->gpu_metrics));
	env_str("TALLY_GPU_METRICS_SET", "default", c->gpu_metrics_set, sizeof(c->gpu_metrics_set));
	if (!env_u64("TALLY_GPU_METRICS_FREQUENCY", 10000, 1, &v, why, len))
		return -EINVAL;
	c->gpu_metrics_hz = v < 10 ? 10 : v > 200000 ? 200000 : (unsigned)v;
	if (!env_u64("TALLY_GPU_METRICS_BUFFER", 0, 1, &c->gpu_metrics_buffer, why, len) ||
	    !env_u64("TALLY_GPU_METRICS_DECODE_MS", 0, 1, &v, why, len))
		return -EINVAL;
	c->gpu_metrics_decode_ms = v > 10000 ? 10000 : (unsigned)v;
	if (!env_u64("TALLY_BENCH_TOGGLE_MS", 0, 1000000, &c->bench_toggle_ns, why, len))
		return -EINVAL;
	return 0;
}

int tally_config_load(struct tally_config *c, char *why, size_t len)
{
	uint64_t v;
	const char *s;

	memset(c, 0, sizeof(*c));
	env_str("TALLY_OUTPUT", "tally-%p.tally", c->output, sizeof(c->output));
	c->trace = TRACE_DEFAULT;
	if ((s = getenv("TALLY_TRACE")) && *s && tally_trace_parse(s, &c->trace, why, len) < 0)
		return -EINVAL;
	if (!env_u64("TALLY_BUFFER_SIZE", 4u << 20, 1, &v, why, len))
		return -EINVAL;
	c->buffer_size = (size_t)v;
	if (!env_u64("TALLY_POOL_BUFFERS", 64, 1, &v, why, len))
		return -EINVAL;
	c->pool_buffers = (unsigned)v;
	if (!env_u64("TALLY_SLICE_MS", 1000, 1000000, &c->slice_ns, why, len) ||
	    !env_u64("TALLY_DELAY_MS", 0, 1000000, &c->delay_ns, why, len) ||
	    !env_u64("TALLY_DURATION_MS", 0, 1000000, &c->duration_ns, why, len) ||
	    !env_u64("TALLY_FLUSH_TIMEOUT_MS", 10000, 1000000, &c->flush_timeout_ns, why, len) ||
	    !env_u64("TALLY_DEVICE_BUFFER_SIZE", 0, 1, &v, why, len))
		return -EINVAL;
	c->device_buffer_size = (size_t)v;
	if (!env_u64("TALLY_DEVICE_BUFFER_POOL_LIMIT", 0, 1, &v, why, len))
		return -EINVAL;
	c->device_buffer_pool_limit = (unsigned)v;
	if (!env_u64("TALLY_ROOT_PID", 0, 1, &v, why, len) ||
	    !env_u64("TALLY_TEST_SLOW_CONSUMER_NS", 0, 1, &c->slow_consumer_ns, why, len))
		return -EINVAL;
	c->root_pid = (long)v;
	if (c->buffer_size < 4096 || c->pool_buffers == 0 || c->slice_ns == 0) {
		snprintf(why, len,
			 "TALLY_BUFFER_SIZE must be >= 4096, TALLY_POOL_BUFFERS and "
			 "TALLY_SLICE_MS > 0");
		return -EINVAL;
	}
	if ((s = getenv("TALLY_CAPTURE_RANGE")) && *s) {
		if (strcmp(s, "cudaProfilerApi") != 0) {
			snprintf(why, len, "TALLY_CAPTURE_RANGE=%s: only cudaProfilerApi is known",
				 s);
			return -EINVAL;
		}
		c->capture_profiler_api = true;
	}
	if ((s = getenv("TALLY_DEVICES")) && *s && parse_devices(s, &c->device_mask, why, len) < 0)
		return -EINVAL;
	env_str("TALLY_RANKS", "", c->ranks, sizeof(c->ranks));
	if (c->ranks[0] && !tally_ranks_valid(c->ranks, why, len))
		return -EINVAL;
	env_str("TALLY_MANIFEST", "", c->manifest, sizeof(c->manifest));
	c->force = env_flag("TALLY_FORCE");
	c->python_stacks = env_flag("TALLY_PYTHON_STACKS");
	s = getenv("TALLY_PYTHON_STACKS");
	c->python_stacks_gil = s && strcmp(s, "gil") == 0;
	c->native_stacks = env_flag("TALLY_NATIVE_STACKS");
	if (!env_u64("TALLY_STACK_DEPTH", 32, 1, &v, why, len))
		return -EINVAL;
	c->stack_depth = v < 1 ? 1 : v > 128 ? 128 : (unsigned)v;
	if (load_host(c, why, len) < 0)
		return -EINVAL;
	return gpu_metrics_load(c, why, len);
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
