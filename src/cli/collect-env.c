/* SPDX-License-Identifier: MIT */
/* Shared record/env options and the collector's environment; see collect-env.h. */
#include "collect-env.h"
#include "ranks.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "metricset.h"
#include "pattern.h"

#define CHILD_SUFFIX_MAX 8 /* "-4194304" */

/* --trace: the kinds the collector knows (TALLY_TRACE), comma-separated. */
static int set_trace(void *opts, const char *arg, char *err, size_t len)
{
	static const char *const known[] = {"cuda",    "nvtx",	 "kernel", "memcpy",   "memset",
					    "runtime", "driver", "sync",   "overhead", "none",
					    "memory",  "osrt",	 NULL};
	const char *p = arg;
	size_t i, n;

	for (; *p; p += n + (p[n] == ',')) {
		n = strcspn(p, ",");
		for (i = 0; known[i] && (strlen(known[i]) != n || strncmp(known[i], p, n)); i++)
			;
		if (n && !known[i]) {
			snprintf(err, len,
				 "unknown kind '%.*s' (use cuda, nvtx, kernel, memcpy, memset, "
				 "runtime, driver, sync, overhead, memory, osrt)",
				 (int)n, cli_text(p));
			return -EINVAL;
		}
	}
	((struct collect_opts *)opts)->trace = arg;
	return 0;
}

static int set_ranks(void *opts, const char *arg, char *err, size_t len)
{
	if (!tally_ranks_valid(arg, err, len))
		return -EINVAL;
	((struct collect_opts *)opts)->ranks = arg;
	return 0;
}

static int set_capture_range(void *opts, const char *arg, char *err, size_t len)
{
	if (strcmp(arg, "cudaProfilerApi") != 0) {
		snprintf(err, len, "only cudaProfilerApi is known");
		return -EINVAL;
	}
	((struct collect_opts *)opts)->capture_range = arg;
	return 0;
}

/* --sample: what TALLY_SAMPLE takes (docs/collector.md, "Host sampling"). */
static const char *const sample_names[] = {"none",	    "python",	     "native",
					   "python,native", "native,python", NULL};
bool collect_opts_native(const struct collect_opts *o)
{
	return o->native_stacks || (o->sample > 0 && strstr(sample_names[o->sample], "native"));
}

/* --gpu-metrics[=DEVICES]: all, or CUDA ordinals */
static int set_gpu_metrics(void *opts, const char *arg, char *err, size_t len)
{
	uint64_t mask;

	if (arg && *arg && pm_devices_parse(arg, &mask, err, len) < 0)
		return -EINVAL;
	((struct collect_opts *)opts)->gpu_metrics = arg && *arg ? arg : "all";
	return 0;
}

static int set_gpu_metrics_set(void *opts, const char *arg, char *err, size_t len)
{
	struct pm_metric m[PM_METRICS_MAX];
	char store[PM_METRICS_MAX * (PM_METRIC_NAME_MAX + 1)];

	if (pm_metric_list_parse(arg, m, PM_METRICS_MAX, store, sizeof(store), err, len) < 0)
		return -EINVAL;
	((struct collect_opts *)opts)->gpu_metrics_set = arg;
	return 0;
}

#define C struct collect_opts
const struct cli_option collect_options[] = {
    CLI_STRING(C, 'o', "output", "PATTERN", output,
	       "file name; %p pid, %h host, %n sequence, %q{VAR} env variable (default "
	       "tally-%p.tally)"),
    CLI_CALLBACK('t', "trace", "LIST", set_trace,
		 "cuda,nvtx (default), or: kernel memcpy memset runtime driver sync overhead "
		 "memory (CUDA allocations and frees) osrt (calls that block: locks, waits, "
		 "sleeps, reads)"),
    CLI_CHOICE(C, 0, "sample", "KINDS", sample, sample_names,
	       "host sampling: python (every thread's Python stack, wall clock), native (CPU\n"
	       "time, perf events or a timer), python,native, or none (default)"),
    CLI_UINT(C, 0, "sample-rate", "HZ", sample_hz, 1, 20000,
	     "samples per second per thread (default 1000)"),
    CLI_DURATION(C, 0, "osrt-threshold", "DURATION", osrt_threshold_ns, 1, UINT64_MAX,
		 "--trace osrt keeps calls this long or longer (default 1us)"),
    CLI_BOOL(C, 0, "python-stacks", python_stacks,
	     "the Python stack of every launch, copy and memset call"),
    CLI_BOOL(C, 0, "native-stacks", native_stacks,
	     "the native call stack (return addresses) of every launch"),
    CLI_STRING(C, 0, "stack-depth", "N", stack_depth,
	       "frames kept per stack (default 32, at most 128)"),
    CLI_DURATION(C, 0, "delay", "SECONDS", delay_ns, 0, UINT64_MAX,
		 "start recording this long after the program starts"),
    CLI_DURATION(C, 0, "duration", "SECONDS", duration_ns, 0, UINT64_MAX,
		 "stop recording after this long (the file is closed then)"),
    CLI_CALLBACK(0, "capture-range", "cudaProfilerApi", set_capture_range,
		 "record only between cudaProfilerStart and Stop"),
    CLI_STRING(C, 0, "devices", "LIST", devices,
	       "keep GPU records of these device ids only (e.g. 0,1)"),
    CLI_CALLBACK(0, "ranks", "LIST", set_ranks,
		 "record only these ranks (SLURM_PROCID, RANK, ...): 0 or 0,4-7"),
    CLI_SIZE(C, 0, "buffer-size", "BYTES", buffer_size, 4096, UINT64_MAX,
	     "CUPTI buffer size (default 4M)"),
    CLI_SIZE(C, 0, "pool-buffers", "N", pool_buffers, 1, UINT64_MAX,
	     "buffers the pool may hold (default 64)"),
    CLI_SIZE(C, 0, "flush-interval", "MS", slice_ms, 1, UINT64_MAX,
	     "ledger slice and periodic flush; bounds SIGKILL loss (1000)"),
    CLI_CALLBACK_OPTARG(0, "gpu-metrics", "DEVICES", set_gpu_metrics,
			"sample the GPUs' performance counters (SM, tensor, DRAM, PCIe,\n"
			"NVLink): all (the default) or CUDA ordinals 0,2; one process of a job\n"
			"samples each device, the others say which (docs/collector.md)"),
    CLI_UINT(C, 0, "gpu-metrics-frequency", "HZ", gpu_metrics_hz, 10, 200000,
	     "GPU metric samples per second (default 10000)"),
    CLI_CALLBACK(0, "gpu-metrics-set", "LIST", set_gpu_metrics_set,
		 "default, or CUPTI metric names (sm__cycles_active.avg...), comma-separated"),
    CLI_BOOL(C, 'f', "force", force, "overwrite existing files"),
    CLI_END,
};
#undef C

#define DEFAULT_OUTPUT "tally-%p.tally"

void collect_opts_init(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = DEFAULT_OUTPUT;
}

/* -o DIR/ or -o DIR (a directory that is there): the default name in it. */
static void output_in_directory(struct collect_opts *o)
{
	size_t n = strlen(o->output);
	struct stat st;

	if (!n || (o->output[n - 1] != '/' &&
		   (strchr(o->output, '%') || stat(o->output, &st) < 0 || !S_ISDIR(st.st_mode))))
		return;
	snprintf(o->output_buf, sizeof(o->output_buf), "%s%s%s", o->output,
		 o->output[n - 1] == '/' ? "" : "/", DEFAULT_OUTPUT);
	o->output = o->output_buf;
}

/*
 * Every name the pattern makes must fit NAME_MAX, with room for the "-PID" a child's file adds:
 * a %q{VAR} holding a long value would otherwise pass here and leave the program running
 * unrecorded.  The widest pid (7 digits) stands in for %p.
 */
static int check_name_lengths(const char *path)
{
	const char *p = path;

	while (*p) {
		size_t n = strcspn(p, "/");

		if (n + CHILD_SUFFIX_MAX > NAME_MAX)
			return cli_usage_error(
			    "--output: the name '%.40s...' would be %zu bytes; a file "
			    "name may have %d (less %d for a child's -PID)",
			    p, n, NAME_MAX, CHILD_SUFFIX_MAX);
		p += n + (p[n] == '/');
	}
	return 0;
}

/* Relative patterns are made absolute: the program (or its children) may change directory. */
static int absolute_output(struct collect_opts *o)
{
	struct tally_pattern_vars vars = {.pid = 4194304};
	char cwd[PATH_MAX], test[PATH_MAX], err[256];
	int rc;

	output_in_directory(o);
	if (tally_pattern_expand(o->output, &vars, test, sizeof(test), err, sizeof(err)) < 0)
		return cli_usage_error("--output: %s", err);
	if ((rc = check_name_lengths(test)) != 0)
		return rc;
	if (o->output[0] == '/') {
		snprintf(o->output_abs, sizeof(o->output_abs), "%s", o->output);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return cli_error(TALLY_EXIT_ERROR, "cannot read the current directory: %s",
				 strerror(errno));
	if ((size_t)snprintf(o->output_abs, sizeof(o->output_abs), "%s/%s", cwd, o->output) >=
	    sizeof(o->output_abs))
		return cli_usage_error("--output: path too long");
	return 0;
}

int collect_opts_finish(struct collect_opts *o)
{
	int rc;

	if ((o->gpu_metrics_hz || o->gpu_metrics_set) && !o->gpu_metrics)
		return cli_usage_error("--gpu-metrics-frequency and --gpu-metrics-set go with "
				       "--gpu-metrics");

	if ((rc = absolute_output(o)) != 0)
		return rc;
	if (!o->collector[0] && cli_find_collector(o->collector, sizeof(o->collector)) < 0)
		return cli_error(TALLY_EXIT_ERROR,
				 "libtally.so not found (looked at %s): reinstall tally, or set "
				 "TALLY_COLLECTOR",
				 o->collector);
	return 0;
}

static void put(struct env_var *vars, size_t *n, size_t max, const char *name, const char *value)
{
	if (*n >= max || !value)
		return;
	vars[*n].name = name;
	snprintf(vars[*n].value, sizeof(vars[*n].value), "%.4150s", value);
	(*n)++;
}

/* A number, unless 0 (unset: the collector's default). */
static void put_uint(struct env_var *vars, size_t *n, size_t max, const char *name, uint64_t v)
{
	char num[32];

	if (!v)
		return;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	put(vars, n, max, name, num);
}

size_t collect_env(const struct collect_opts *o, struct env_var *vars, size_t max)
{
	const char *preload = getenv("LD_PRELOAD");
	size_t n = 0;

	put(vars, &n, max, "CUDA_INJECTION64_PATH", o->collector);
	if (!o->trace || strstr(o->trace, "nvtx"))
		put(vars, &n, max, "NVTX_INJECTION64_PATH", o->collector);
	if (preload && *preload && !strstr(preload, o->collector)) {
		char both[PATH_MAX * 2];

		snprintf(both, sizeof(both), "%s:%s", o->collector, preload);
		put(vars, &n, max, "LD_PRELOAD", both);
	} else {
		put(vars, &n, max, "LD_PRELOAD", o->collector);
	}
	put(vars, &n, max, "TALLY_OUTPUT", o->output_abs);
	put(vars, &n, max, "TALLY_TRACE", o->trace);
	put_uint(vars, &n, max, "TALLY_DELAY_MS", o->delay_ns / 1000000);
	put_uint(vars, &n, max, "TALLY_DURATION_MS", o->duration_ns / 1000000);
	put(vars, &n, max, "TALLY_CAPTURE_RANGE", o->capture_range);
	put(vars, &n, max, "TALLY_DEVICES", o->devices);
	put(vars, &n, max, "TALLY_RANKS", o->ranks);
	put_uint(vars, &n, max, "TALLY_BUFFER_SIZE", o->buffer_size);
	put_uint(vars, &n, max, "TALLY_POOL_BUFFERS", o->pool_buffers);
	put_uint(vars, &n, max, "TALLY_SLICE_MS", o->slice_ms);
	if (o->force)
		put(vars, &n, max, "TALLY_FORCE", "1");
	if (o->python_stacks)
		put(vars, &n, max, "TALLY_PYTHON_STACKS", "1");
	if (o->native_stacks)
		put(vars, &n, max, "TALLY_NATIVE_STACKS", "1");
	put(vars, &n, max, "TALLY_STACK_DEPTH", o->stack_depth);
	if (o->sample)
		put(vars, &n, max, "TALLY_SAMPLE", sample_names[o->sample]);
	put_uint(vars, &n, max, "TALLY_SAMPLE_RATE", o->sample_hz);
	put_uint(vars, &n, max, "TALLY_OSRT_THRESHOLD_NS", o->osrt_threshold_ns);
	put(vars, &n, max, "TALLY_GPU_METRICS", o->gpu_metrics);
	put_uint(vars, &n, max, "TALLY_GPU_METRICS_FREQUENCY", o->gpu_metrics_hz);
	put(vars, &n, max, "TALLY_GPU_METRICS_SET", o->gpu_metrics_set);
	return n;
}
