/* SPDX-License-Identifier: MIT */
/* The settings across the seam, one row each; see settings.h and docs/collector.md. */
#include "settings.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metricset.h"
#include "pattern.h"
#include "ranks.h"

#define NS	   1ull
#define US	   1000ull
#define MS	   1000000ull
#define S	   1000000000ull
#define ALL	   UINT64_MAX
#define SIGNAL_MAX 64 /* the kernel's real-time signals end at 64 */

/* ---- the texts' own checks ------------------------------------------------------------------ */

const char *tally_output_pattern(const char *given, char *buf, size_t len)
{
	size_t n = strlen(given);

	if (!n || given[n - 1] != '/')
		return given;
	if ((size_t)snprintf(buf, len, "%s%s", given, tally_settings[TS_OUTPUT].def_text) >= len)
		return given; /* too long: the pattern's check says so */
	return buf;
}

static int check_output(const char *text, uint64_t *value, char *why, size_t len)
{
	struct tally_pattern_vars vars = {.pid = 4194304};
	char out[PATH_MAX], in_dir[PATH_MAX];

	*value = 0;
	if (strcmp(text, "-") == 0) {
		snprintf(why, len,
			 "'-': a trace is written to a file, never to standard output "
			 "(the program's own); name a file");
		return -EINVAL;
	}
	text = tally_output_pattern(text, in_dir, sizeof(in_dir));
	return tally_pattern_expand(text, &vars, out, sizeof(out), why, len) < 0 ? -EINVAL : 0;
}

static int check_devices(const char *text, uint64_t *value, char *why, size_t len)
{
	return pm_devices_parse(text, value, why, len);
}

static int check_ranks(const char *text, uint64_t *value, char *why, size_t len)
{
	*value = 0;
	return tally_ranks_valid(text, why, len) ? 0 : -EINVAL;
}

/* The metric list is parsed in full (its names and count), on the heap: the collector reads its
 * settings on whatever thread starts the session, whose stack may be small. */
static int check_metric_set(const char *text, uint64_t *value, char *why, size_t len)
{
	struct pm_metric *m = malloc(PM_METRICS_MAX * sizeof(*m));
	size_t store_len = PM_METRICS_MAX * (PM_METRIC_NAME_MAX + 1);
	char *store = malloc(store_len);
	int n = -ENOMEM;

	if (m && store)
		n = pm_metric_list_parse(text, m, PM_METRICS_MAX, store, store_len, why, len);
	else
		snprintf(why, len, "out of memory");
	free(m);
	free(store);
	*value = n > 0 ? (uint64_t)n : 0;
	return n < 0 ? -EINVAL : 0;
}

/* The host sampler's timer signal: one a handler can catch, and none the program raises itself
 * when it faults or aborts (a sample's signal would be taken for the program's). */
static int check_signal(const char *text, uint64_t *value, char *why, size_t len)
{
	static const struct {
		int sig;
		const char *name, *why;
	} refused[] = {
	    {SIGKILL, "SIGKILL", "cannot be caught"},
	    {SIGSTOP, "SIGSTOP", "cannot be caught"},
	    {SIGSEGV, "SIGSEGV", "is the program's own (a fault)"},
	    {SIGBUS, "SIGBUS", "is the program's own (a fault)"},
	    {SIGILL, "SIGILL", "is the program's own (a fault)"},
	    {SIGFPE, "SIGFPE", "is the program's own (a fault)"},
	    {SIGTRAP, "SIGTRAP", "is the program's own (a debugger's)"},
	    {SIGABRT, "SIGABRT", "is the program's own (abort)"},
	    {SIGSYS, "SIGSYS", "is the program's own (a refused system call)"},
	};
	size_t i;

	(void)text;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (*value == (uint64_t)refused[i].sig) {
			snprintf(
			    why, len,
			    "signal %d (%s) %s: use a free real-time signal, or leave it unset",
			    refused[i].sig, refused[i].name, refused[i].why);
			return -EINVAL;
		}
	return 0;
}

/* ---- the table ------------------------------------------------------------------------------ */

static const struct tally_setting_name trace_names[] = {
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
    {NULL, 0},
};

static const struct tally_setting_name sample_names[] = {
    {"python", SAMPLE_PYTHON},
    {"native", SAMPLE_NATIVE},
    {"none", 0},
    {NULL, 0},
};

static const struct tally_setting_name capture_names[] = {{"cudaProfilerApi", 1}, {NULL, 0}};

static const struct tally_setting_name flag_words[] = {{"0", 0}, {"1", 1}, {NULL, 0}};

static const struct tally_setting_name python_stacks_words[] = {
    {"0", PYTHON_STACKS_OFF},
    {"1", PYTHON_STACKS_ON},
    {"gil", PYTHON_STACKS_GIL},
    {NULL, 0},
};

#define NUMBER(lo, hi, d) .type = SETTING_NUMBER, .min = (lo), .max = (hi), .def = (d)
#define SIZE(lo, hi, d)	  .type = SETTING_SIZE, .min = (lo), .max = (hi), .def = (d)
#define DURATION(env_u, opt_u, lo, hi, d)                                                          \
	.type = SETTING_DURATION, .env_unit = (env_u), .option_unit = (opt_u), .min = (lo),        \
	.max = (hi), .def = (d)
#define FLAG(words) .type = SETTING_FLAG, .names = (words)

const struct tally_setting tally_settings[TALLY_SETTING_COUNT] = {
    [TS_OUTPUT] = {"TALLY_OUTPUT", "output", 'o', "PATTERN", .type = SETTING_TEXT,
		   .max = PATH_MAX - 1, .def_text = "tally-%p.tally", .check = check_output,
		   .help = "file name; %p pid, %h host, %n sequence, %q{VAR} env variable;\n"
			   "DIR/: the default name in DIR; not - (a trace is a file:\n"
			   "standard output is the program's)"},
    [TS_TRACE] = {"TALLY_TRACE", "trace", 't', "LIST", .type = SETTING_NAMES, .names = trace_names,
		  .def_text = "cuda,nvtx",
		  .help = "cuda (kernels, copies, memsets, runtime calls, the driver's launches)\n"
			  "and nvtx, or: kernel memcpy memset runtime driver sync overhead\n"
			  "cuda-launch-driver, memory (CUDA allocations and frees), osrt (calls\n"
			  "that block: locks, waits, sleeps, reads), none"},
    [TS_SAMPLE] = {"TALLY_SAMPLE", "sample", 0, "KINDS", .type = SETTING_NAMES,
		   .names = sample_names, .def_text = "none",
		   .help = "host sampling: python (every thread's Python stack, wall clock),\n"
			   "native (CPU time, perf events or a timer), python,native, or none"},
    [TS_SAMPLE_RATE] = {"TALLY_SAMPLE_RATE", "sample-rate", 0, "HZ", NUMBER(1, 20000, 1000),
			.help = "samples per second per thread"},
    [TS_OSRT_THRESHOLD] = {"TALLY_OSRT_THRESHOLD_NS", "osrt-threshold", 0, "DURATION",
			   DURATION(NS, S, 1 * NS, ALL, 1 * US),
			   .help = "--trace osrt keeps calls this long or longer (a bare\n"
				   "number is seconds; the variable's, nanoseconds)"},
    [TS_PYTHON_STACKS] = {"TALLY_PYTHON_STACKS", "python-stacks", 0, NULL,
			  FLAG(python_stacks_words),
			  .help = "the Python stack of every launch, copy and memset call"},
    [TS_NATIVE_STACKS] = {"TALLY_NATIVE_STACKS", "native-stacks", 0, NULL, FLAG(flag_words),
			  .help = "the native call stack (return addresses) of every launch"},
    [TS_STACK_DEPTH] = {"TALLY_STACK_DEPTH", "stack-depth", 0, "N", NUMBER(1, 128, 32),
			.help = "frames kept per stack"},
    [TS_DELAY] = {"TALLY_DELAY_MS", "delay", 0, "SECONDS", DURATION(MS, S, 0, ALL, 0),
		  .def_text = "none", .help = "start recording this long after the program starts"},
    [TS_DURATION] = {"TALLY_DURATION_MS", "duration", 0, "SECONDS", DURATION(MS, S, 0, ALL, 0),
		     .def_text = "the whole run",
		     .help = "stop recording after this long (the file is closed then)"},
    [TS_CAPTURE_RANGE] = {"TALLY_CAPTURE_RANGE", "capture-range", 0, "cudaProfilerApi",
			  .type = SETTING_NAMES, .names = capture_names, .def_text = "",
			  .help = "record only between cudaProfilerStart and Stop"},
    [TS_DEVICES] = {"TALLY_DEVICES", "devices", 0, "LIST", .type = SETTING_TEXT, .def_text = "",
		    .check = check_devices,
		    .help = "keep GPU records of these device ids only (e.g. 0,1)"},
    [TS_RANKS] = {"TALLY_RANKS", "ranks", 0, "LIST", .type = SETTING_TEXT, .max = 255,
		  .def_text = "", .check = check_ranks,
		  .help = "record only these ranks (SLURM_PROCID, RANK, ...): 0 or 0,4-7"},
    [TS_BUFFER_SIZE] = {"TALLY_BUFFER_SIZE", "buffer-size", 0, "BYTES", SIZE(4096, ALL, 4u << 20),
			.help = "CUPTI buffer size"},
    [TS_POOL_BUFFERS] = {"TALLY_POOL_BUFFERS", "pool-buffers", 0, "N", NUMBER(1, UINT32_MAX, 64),
			 .help = "buffers the pool may hold"},
    [TS_SLICE] = {"TALLY_SLICE_MS", "flush-interval", 0, "MS", DURATION(MS, MS, 1 * MS, ALL, S),
		  .help = "ledger slice and periodic flush; bounds SIGKILL loss"},
    [TS_GPU_METRICS] = {"TALLY_GPU_METRICS", "gpu-metrics", 0, "DEVICES", .type = SETTING_TEXT,
			.def_text = "", .bare = "all", .check = check_devices,
			.help =
			    "sample the GPUs' performance counters (SM, tensor, DRAM, PCIe,\n"
			    "NVLink): all (the option alone) or CUDA ordinals 0,2; one process\n"
			    "of a job samples each device, the others say which\n"
			    "(docs/collector.md)"},
    [TS_GPU_METRICS_HZ] = {"TALLY_GPU_METRICS_FREQUENCY", "gpu-metrics-frequency", 0, "HZ",
			   NUMBER(10, 200000, 10000), .help = "GPU metric samples per second"},
    [TS_GPU_METRICS_SET] = {"TALLY_GPU_METRICS_SET", "gpu-metrics-set", 0, "LIST",
			    .type = SETTING_TEXT, .max = 4095, .def_text = "default",
			    .check = check_metric_set,
			    .help = "default (the set docs/collector.md lists), or CUPTI metric\n"
				    "names (sm__cycles_active.avg...), comma-separated"},
    [TS_FORCE] = {"TALLY_FORCE", "force", 'f', NULL, FLAG(flag_words),
		  .help = "overwrite existing files"},
    [TS_SAMPLE_FALLBACK] = {"TALLY_SAMPLE_FALLBACK", FLAG(flag_words),
			    .help = "the CPU-time timer even where perf events work"},
    [TS_SAMPLE_SIGNAL] = {"TALLY_SAMPLE_SIGNAL", NUMBER(1, SIGNAL_MAX, 0), .check = check_signal,
			  .def_text = "the highest real-time signal the program leaves alone",
			  .help = "the timer fallback's signal"},
    [TS_SAMPLE_STALL] = {"TALLY_SAMPLE_STALL_MS", DURATION(MS, MS, 0, ALL, 100 * MS),
			 .help = "a sampler that did not run this long stalled"},
    [TS_FLUSH_TIMEOUT] = {"TALLY_FLUSH_TIMEOUT_MS", DURATION(MS, MS, 0, ALL, 10 * S),
			  .help = "the watchdog of CUPTI's closing flush"},
    [TS_DEVICE_BUFFER_SIZE] = {"TALLY_DEVICE_BUFFER_SIZE", SIZE(0, ALL, 0), .def_text = "CUPTI's",
			       .help = "CUPTI's device buffer size"},
    [TS_DEVICE_BUFFER_POOL_LIMIT] = {"TALLY_DEVICE_BUFFER_POOL_LIMIT", NUMBER(0, UINT32_MAX, 0),
				     .def_text = "CUPTI's", .help = "CUPTI's device buffer pool"},
    [TS_GPU_METRICS_BUFFER] = {"TALLY_GPU_METRICS_BUFFER", SIZE(0, ALL, 0),
			       .def_text = "by the rate",
			       .help = "bytes of the hardware buffer CUPTI fills between decodes"},
    [TS_GPU_METRICS_DECODE] = {"TALLY_GPU_METRICS_DECODE_MS", DURATION(MS, MS, 0, 10 * S, 0),
			       .def_text = "by the rate", .help = "the period of the decodes"},
    [TS_BENCH_TOGGLE] = {"TALLY_BENCH_TOGGLE_MS", DURATION(MS, MS, 0, ALL, 0), .def_text = "none",
			 .help = "benchmarks: metrics and samples on in about half the intervals"},
    [TS_MANIFEST] = {"TALLY_MANIFEST", .type = SETTING_TEXT, .max = PATH_MAX - 1, .def_text = "",
		     .help = "tally record: where each session appends its file and verdict"},
    [TS_ROOT_PID] = {"TALLY_ROOT_PID", NUMBER(0, INT_MAX, 0),
		     .help = "tally record: the process it started"},
    [TS_TEST_SLOW_CONSUMER] = {"TALLY_TEST_SLOW_CONSUMER_NS", DURATION(NS, NS, 0, ALL, 0),
			       .help = "tests: the consumer sleeps this long per record"},
    [TS_TEST_SAMPLE_RING] = {"TALLY_TEST_SAMPLE_RING", NUMBER(0, UINT32_MAX, 0),
			     .help = "tests: slots of the timer's signal ring"},
    [TS_TEST_TORN] = {"TALLY_TEST_TORN", FLAG(flag_words),
		      .help = "tests: every Python sample reads torn"},
};

/* ---- numbers --------------------------------------------------------------------------------- */

static const struct {
	const char *suffix;
	uint64_t ns;
} duration_units[] = {{"ns", NS}, {"us", US}, {"ms", MS}, {"s", S}};

int tally_parse_duration(const char *s, uint64_t bare_unit, uint64_t *out)
{
	uint64_t unit = bare_unit;
	char *end;
	double v;
	size_t i;

	/* Decimal digits only: strtod would also take "nan", "inf", "0x10" and leading blanks. */
	if (strspn(s, "0123456789.") == 0 || s[1] == 'x' || s[1] == 'X')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0)) /* !(v >= 0) is also true of NaN */
		return -EINVAL;
	if (*end) {
		for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
			if (strcmp(end, duration_units[i].suffix) == 0)
				break;
		if (i == sizeof(duration_units) / sizeof(duration_units[0]))
			return -EINVAL;
		unit = duration_units[i].ns;
	}
	v *= (double)unit;
	if (v >= 18446744073709551616.0) /* 2^64 */
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int tally_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "kKmMgG"; /* 2^10, 2^20, 2^30 */
	const char *unit;
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	/* A digit first: strtoull would also take blanks and a sign. */
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end && (unit = strchr(units, *end))) {
		shift = 10 * (1 + (unsigned)(unit - units) / 2);
		end++;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end || v > UINT64_MAX >> shift)
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static int parse_number(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno ? -EINVAL : 0;
}

/* A duration as its option or variable would be written: "1s", "100ms", "1us", "7ns". */
static const char *show_duration(char *buf, size_t len, uint64_t ns)
{
	size_t i = sizeof(duration_units) / sizeof(duration_units[0]);

	while (--i > 0 && (ns == 0 || ns % duration_units[i].ns))
		;
	snprintf(buf, len, "%llu%s", (unsigned long long)(ns / duration_units[i].ns),
		 duration_units[i].suffix);
	return buf;
}

/* A size as its option would be written: "4096", "64k", "4M". */
static const char *show_size(char *buf, size_t len, uint64_t bytes)
{
	static const char units[] = "kMG";
	unsigned u = 0;

	while (bytes && bytes % 1024 == 0 && u < sizeof(units) - 1) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%.*s", (unsigned long long)bytes, u ? 1 : 0, &units[u ? u - 1 : 0]);
	return buf;
}

static const char *show(const struct tally_setting *r, uint64_t v, char *buf, size_t len)
{
	if (r->type == SETTING_DURATION)
		return show_duration(buf, len, v);
	if (r->type == SETTING_SIZE)
		return show_size(buf, len, v);
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static int out_of_range(const struct tally_setting *r, uint64_t v, char *why, size_t len)
{
	char lo[32], hi[32];

	if (v >= r->min && v <= r->max)
		return 0;
	if (r->max == ALL)
		snprintf(why, len, "is less than %s", show(r, r->min, lo, sizeof(lo)));
	else
		snprintf(why, len, "is not from %s to %s", show(r, r->min, lo, sizeof(lo)),
			 show(r, r->max, hi, sizeof(hi)));
	return -EINVAL;
}

/* ---- names ---------------------------------------------------------------------------------- */

/* "a, b or c" */
static void list_names(const struct tally_setting_name *names, char *buf, size_t len)
{
	size_t i, at = 0;

	buf[0] = '\0';
	for (i = 0; names[i].name && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       i == 0		   ? ""
				       : names[i + 1].name ? ", "
							   : " or ",
				       names[i].name);
}

static const struct tally_setting_name *find_name(const struct tally_setting_name *names,
						  const char *s, size_t n)
{
	for (; names->name; names++)
		if (strlen(names->name) == n && strncmp(names->name, s, n) == 0)
			return names;
	return NULL;
}

static int parse_names(const struct tally_setting *r, const char *s, uint64_t *out, char *why,
		       size_t len)
{
	const struct tally_setting_name *found;
	char known[256];
	size_t n;

	*out = 0;
	for (;; s += n + 1) {
		n = strcspn(s, ",");
		if (!(found = find_name(r->names, s, n))) {
			list_names(r->names, known, sizeof(known));
			snprintf(why, len, "'%.*s' is not %s", n ? (int)(n > 64 ? 64 : n) : 0, s,
				 known);
			return -EINVAL;
		}
		*out |= found->bits;
		if (!s[n])
			return 0;
	}
}

static int parse_word(const struct tally_setting *r, const char *s, uint64_t *out, char *why,
		      size_t len)
{
	const struct tally_setting_name *found = find_name(r->names, s, strlen(s));
	char known[128];

	if (!found) {
		list_names(r->names, known, sizeof(known));
		snprintf(why, len, "'%.64s' is not %s", s, known);
		return -EINVAL;
	}
	*out = found->bits;
	return 0;
}

/* ---- the three uses ------------------------------------------------------------------------- */

int tally_setting_parse(enum tally_setting_id id, const char *text, bool option, uint64_t *value,
			char *why, size_t len)
{
	const struct tally_setting *r = &tally_settings[id];
	char what[160];
	int rc = 0;

	*value = r->def;
	switch (r->type) {
	case SETTING_NUMBER:
		rc = parse_number(text, value);
		snprintf(what, sizeof(what), "a whole number");
		break;
	case SETTING_DURATION:
		rc = tally_parse_duration(text, option ? r->option_unit : r->env_unit, value);
		snprintf(what, sizeof(what),
			 "a duration (2.5, 500ms, 20us, 10ns: a bare number %s)",
			 (option ? r->option_unit : r->env_unit) == S	 ? "is seconds"
			 : (option ? r->option_unit : r->env_unit) == MS ? "is milliseconds"
									 : "is nanoseconds");
		break;
	case SETTING_SIZE:
		rc = tally_parse_size(text, value);
		snprintf(what, sizeof(what), "a size (4096, 64k, 4M, 1G)");
		break;
	case SETTING_NAMES:
		return parse_names(r, text, value, why, len);
	case SETTING_FLAG:
		return parse_word(r, text, value, why, len);
	case SETTING_TEXT:
		*value = 0;
		if (r->max && strlen(text) > r->max) {
			snprintf(why, len, "'%.32s...' is longer than %llu bytes", text,
				 (unsigned long long)r->max);
			return -EINVAL;
		}
		return r->check ? r->check(text, value, why, len) : 0;
	}
	if (rc < 0) {
		snprintf(why, len, "'%.64s' is not %s", text, what);
		return -EINVAL;
	}
	if (out_of_range(r, *value, what, sizeof(what)) < 0) {
		snprintf(why, len, "%.64s %s", text, what);
		return -EINVAL;
	}
	return r->check ? r->check(text, value, why, len) : 0;
}

/* The default's value, for the settings whose default is written as text. */
static uint64_t default_value(const struct tally_setting *r)
{
	uint64_t v = r->def;
	char why[8];

	if ((r->type == SETTING_NAMES || r->type == SETTING_TEXT) && r->def_text && *r->def_text)
		(void)tally_setting_parse((enum tally_setting_id)(r - tally_settings), r->def_text,
					  false, &v, why, sizeof(why));
	return v;
}

int tally_setting_get(enum tally_setting_id id, uint64_t *value, const char **text, char *why,
		      size_t len)
{
	const struct tally_setting *r = &tally_settings[id];
	const char *v = getenv(r->env);
	char reason[256];

	if (!v || !*v) {
		*value = default_value(r);
		*text = r->type == SETTING_NAMES || r->type == SETTING_TEXT ? r->def_text : NULL;
		return 0;
	}
	*text = v;
	if (tally_setting_parse(id, v, false, value, reason, sizeof(reason)) < 0) {
		snprintf(why, len, "%s=%.64s: %s", r->env, v, reason);
		return -EINVAL;
	}
	return 0;
}

int tally_setting_option(enum tally_setting_id id, const char *arg, char *own, size_t own_len,
			 const char **out, char *why, size_t len)
{
	const struct tally_setting *r = &tally_settings[id];
	uint64_t v;

	if (r->type == SETTING_FLAG) {
		*out = "1";
		return 0;
	}
	if (!arg)
		arg = r->bare ? r->bare : "";
	if (tally_setting_parse(id, arg, true, &v, why, len) < 0)
		return -EINVAL;
	switch (r->type) {
	case SETTING_NUMBER:
	case SETTING_SIZE:
		snprintf(own, own_len, "%llu", (unsigned long long)v);
		break;
	case SETTING_DURATION:
		if (v % r->env_unit == 0)
			snprintf(own, own_len, "%llu", (unsigned long long)(v / r->env_unit));
		else
			snprintf(own, own_len, "%lluns", (unsigned long long)v);
		break;
	default:
		*out = arg;
		return 0;
	}
	*out = own;
	return 0;
}

const char *tally_setting_describe(enum tally_setting_id id, char *buf, size_t len)
{
	const struct tally_setting *r = &tally_settings[id];
	char def[64], lo[32], hi[32];

	buf[0] = '\0';
	/* a flag has no default; a help that begins with the default word has said it */
	if (r->type == SETTING_FLAG || (r->def_text && *r->def_text &&
					strncmp(r->help, r->def_text, strlen(r->def_text)) == 0))
		return buf;
	if (r->def_text && *r->def_text)
		snprintf(def, sizeof(def), "%s", r->def_text);
	else if (r->type == SETTING_NUMBER || r->type == SETTING_DURATION ||
		 r->type == SETTING_SIZE)
		show(r, r->def, def, sizeof(def));
	else
		def[0] = '\0';
	if ((r->type == SETTING_NUMBER || r->type == SETTING_DURATION || r->type == SETTING_SIZE) &&
	    r->max != ALL && r->max != UINT32_MAX && r->max != INT_MAX)
		snprintf(buf, len, " (default %s; %s to %s)", def, show(r, r->min, lo, sizeof(lo)),
			 show(r, r->max, hi, sizeof(hi)));
	else if ((r->type == SETTING_NUMBER || r->type == SETTING_DURATION ||
		  r->type == SETTING_SIZE) &&
		 r->min > 1)
		snprintf(buf, len, " (default %s; at least %s)", def,
			 show(r, r->min, lo, sizeof(lo)));
	else if (def[0])
		snprintf(buf, len, " (default %s)", def);
	return buf;
}
