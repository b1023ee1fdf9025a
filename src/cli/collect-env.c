/* SPDX-License-Identifier: MIT */
/* Shared record/env options and the collector's environment; see collect-env.h. */
#include "collect-env.h"
#include "ranks.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pattern.h"

#define CHILD_SUFFIX_MAX 8 /* "-4194304" */

enum {
	O_OUTPUT = COLLECT_OPT_BASE,
	O_TRACE,
	O_DELAY,
	O_DURATION,
	O_CAPTURE,
	O_DEVICES,
	O_RANKS,
	O_BUFSIZE,
	O_POOL,
	O_SLICE,
	O_FORCE,
	O_PY_STACKS,
	O_NATIVE_STACKS,
	O_STACK_DEPTH,
};

const struct option collect_longopts[] = {
    {"output", required_argument, NULL, O_OUTPUT},
    {"trace", required_argument, NULL, O_TRACE},
    {"delay", required_argument, NULL, O_DELAY},
    {"duration", required_argument, NULL, O_DURATION},
    {"capture-range", required_argument, NULL, O_CAPTURE},
    {"devices", required_argument, NULL, O_DEVICES},
    {"ranks", required_argument, NULL, O_RANKS},
    {"buffer-size", required_argument, NULL, O_BUFSIZE},
    {"pool-buffers", required_argument, NULL, O_POOL},
    {"flush-interval", required_argument, NULL, O_SLICE},
    {"force", no_argument, NULL, O_FORCE},
    {"python-stacks", no_argument, NULL, O_PY_STACKS},
    {"native-stacks", no_argument, NULL, O_NATIVE_STACKS},
    {"stack-depth", required_argument, NULL, O_STACK_DEPTH},
};
const unsigned collect_longopts_count = sizeof(collect_longopts) / sizeof(collect_longopts[0]);

/* Help rows for them (terminated by {NULL, NULL}). */
static const struct cli_opt_help collect_help[] = {
    {"-o, --output PATTERN", "file name; %p pid, %h host, %n sequence, %q{VAR} env variable "
			     "(default tally-%p.tally)"},
    {"-t, --trace LIST", "cuda,nvtx (default), or: kernel memcpy memset runtime driver sync "
			 "overhead memory (CUDA allocations and frees)"},
    {"--python-stacks", "the Python stack of every launch, copy and memset call"},
    {"--native-stacks", "the native call stack (return addresses) of every launch"},
    {"--stack-depth N", "frames kept per stack (default 32, at most 128)"},
    {"--delay SECONDS", "start recording this long after the program starts"},
    {"--duration SECONDS", "stop recording after this long (the file is closed then)"},
    {"--capture-range cudaProfilerApi", "record only between cudaProfilerStart and Stop"},
    {"--devices LIST", "keep GPU records of these device ids only (e.g. 0,1)"},
    {"--ranks LIST", "record only these ranks (SLURM_PROCID, RANK, ...): 0 or 0,4-7"},
    {"--buffer-size BYTES", "CUPTI buffer size (default 4M)"},
    {"--pool-buffers N", "buffers the pool may hold (default 64)"},
    {"--flush-interval MS", "ledger slice and periodic flush; bounds SIGKILL loss (1000)"},
    {"-f, --force", "overwrite existing files"},
    {NULL, NULL},
};

void collect_print_help(const char *title)
{
	const struct cli_opt_help *h;

	printf("\n%s:\n", title);
	for (h = collect_help; h->flags; h++)
		printf("  %-28s %s\n", h->flags, h->help);
}

void collect_opts_init(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "tally-%p.tally";
}

int collect_opts_parse(struct collect_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'o':
	case O_OUTPUT:
		o->output = arg;
		return 1;
	case 't':
	case O_TRACE:
		o->trace = arg;
		return 1;
	case O_DELAY:
		o->delay = arg;
		return 1;
	case O_DURATION:
		o->duration = arg;
		return 1;
	case O_CAPTURE:
		o->capture_range = arg;
		return 1;
	case O_DEVICES:
		o->devices = arg;
		return 1;
	case O_RANKS:
		o->ranks = arg;
		return 1;
	case O_BUFSIZE:
		o->buffer_size = arg;
		return 1;
	case O_POOL:
		o->pool_buffers = arg;
		return 1;
	case O_SLICE:
		o->slice_ms = arg;
		return 1;
	case 'f':
	case O_FORCE:
		o->force = true;
		return 1;
	case O_PY_STACKS:
		o->python_stacks = true;
		return 1;
	case O_NATIVE_STACKS:
		o->native_stacks = true;
		return 1;
	case O_STACK_DEPTH:
		o->stack_depth = arg;
		return 1;
	default:
		return 0;
	}
}

static int check_trace(const char *t)
{
	static const char *const known[] = {"cuda",	"nvtx",	   "kernel", "memcpy",
					    "memset",	"runtime", "driver", "sync",
					    "overhead", "none",	   "memory", NULL};
	char buf[256], *tok, *save = NULL;
	size_t i;

	snprintf(buf, sizeof(buf), "%s", t);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; known[i] && strcmp(known[i], tok) != 0; i++)
			;
		if (!known[i])
			return cli_error(
			    TALLY_EXIT_USAGE,
			    "--trace: unknown kind '%s' (use cuda, nvtx, kernel, memcpy, "
			    "memset, runtime, driver, sync, overhead)",
			    tok);
	}
	return 0;
}

static int check_seconds(const char *opt, const char *v)
{
	uint64_t ns;

	if (v && cli_parse_duration_ns(v, &ns) < 0)
		return cli_error(TALLY_EXIT_USAGE,
				 "%s: '%s' is not a duration (e.g. 10, 2.5, 500ms)", opt, v);
	return 0;
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
			return cli_error(TALLY_EXIT_USAGE,
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

	if (tally_pattern_expand(o->output, &vars, test, sizeof(test), err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "--output: %s", err);
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
		return cli_error(TALLY_EXIT_USAGE, "--output: path too long");
	return 0;
}

int collect_opts_finish(struct collect_opts *o)
{
	char err[256];
	int rc;
	uint64_t v;

	if (o->trace && (rc = check_trace(o->trace)) != 0)
		return rc;
	if ((rc = check_seconds("--delay", o->delay)) ||
	    (rc = check_seconds("--duration", o->duration)))
		return rc;
	if (o->ranks && !tally_ranks_valid(o->ranks, err, sizeof(err)))
		return cli_error(TALLY_EXIT_USAGE, "--ranks: %s", err);
	if (o->capture_range && strcmp(o->capture_range, "cudaProfilerApi") != 0)
		return cli_error(TALLY_EXIT_USAGE,
				 "--capture-range: only cudaProfilerApi is known");
	if (o->buffer_size && (cli_parse_size(o->buffer_size, &v) < 0 || v < 4096))
		return cli_error(TALLY_EXIT_USAGE, "--buffer-size: '%s' is not a size >= 4096",
				 o->buffer_size);
	if (o->pool_buffers && (cli_parse_size(o->pool_buffers, &v) < 0 || !v))
		return cli_error(TALLY_EXIT_USAGE, "--pool-buffers: '%s' is not a positive number",
				 o->pool_buffers);
	if (o->slice_ms && (cli_parse_size(o->slice_ms, &v) < 0 || !v))
		return cli_error(TALLY_EXIT_USAGE, "--flush-interval: '%s' is not a number of ms",
				 o->slice_ms);
	if ((rc = absolute_output(o)) != 0)
		return rc;
	if (cli_find_collector(o->collector, sizeof(o->collector)) < 0)
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

static void put_ms(struct env_var *vars, size_t *n, size_t max, const char *name, const char *s)
{
	uint64_t ns;
	char ms[32];

	if (!s || cli_parse_duration_ns(s, &ns) < 0)
		return;
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)(ns / 1000000));
	put(vars, n, max, name, ms);
}

static void put_size(struct env_var *vars, size_t *n, size_t max, const char *name, const char *s)
{
	uint64_t v;
	char num[32];

	if (!s || cli_parse_size(s, &v) < 0)
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
	put_ms(vars, &n, max, "TALLY_DELAY_MS", o->delay);
	put_ms(vars, &n, max, "TALLY_DURATION_MS", o->duration);
	put(vars, &n, max, "TALLY_CAPTURE_RANGE", o->capture_range);
	put(vars, &n, max, "TALLY_DEVICES", o->devices);
	put(vars, &n, max, "TALLY_RANKS", o->ranks);
	put_size(vars, &n, max, "TALLY_BUFFER_SIZE", o->buffer_size);
	put_size(vars, &n, max, "TALLY_POOL_BUFFERS", o->pool_buffers);
	put_size(vars, &n, max, "TALLY_SLICE_MS", o->slice_ms);
	if (o->force)
		put(vars, &n, max, "TALLY_FORCE", "1");
	if (o->python_stacks)
		put(vars, &n, max, "TALLY_PYTHON_STACKS", "1");
	if (o->native_stacks)
		put(vars, &n, max, "TALLY_NATIVE_STACKS", "1");
	put(vars, &n, max, "TALLY_STACK_DEPTH", o->stack_depth);
	return n;
}
