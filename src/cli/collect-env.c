/* SPDX-License-Identifier: MIT */
/* Shared record/env options and the collector's environment; see collect-env.h. */
#include "collect-env.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "pattern.h"

#define CHILD_SUFFIX_MAX 8 /* "-4194304" */

#define C struct collect_opts
const struct cli_option collect_options[] = {
    CLI_SETTING(C, set, TS_OUTPUT),
    CLI_SETTING(C, set, TS_TRACE),
    CLI_SETTING(C, set, TS_SAMPLE),
    CLI_SETTING(C, set, TS_SAMPLE_RATE),
    CLI_SETTING(C, set, TS_OSRT_THRESHOLD),
    CLI_SETTING(C, set, TS_PYTHON_STACKS),
    CLI_SETTING(C, set, TS_NATIVE_STACKS),
    CLI_SETTING(C, set, TS_STACK_DEPTH),
    CLI_SETTING(C, set, TS_DELAY),
    CLI_SETTING(C, set, TS_DURATION),
    CLI_SETTING(C, set, TS_CAPTURE_RANGE),
    CLI_SETTING(C, set, TS_DEVICES),
    CLI_SETTING(C, set, TS_RANKS),
    CLI_SETTING(C, set, TS_BUFFER_SIZE),
    CLI_SETTING(C, set, TS_POOL_BUFFERS),
    CLI_SETTING(C, set, TS_SLICE),
    CLI_SETTING(C, set, TS_GPU_METRICS),
    CLI_SETTING(C, set, TS_GPU_METRICS_HZ),
    CLI_SETTING(C, set, TS_GPU_METRICS_SET),
    CLI_SETTING(C, set, TS_FORCE),
    CLI_END,
};
#undef C

void collect_opts_init(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
}

const char *collect_given(const struct collect_opts *o, enum tally_setting_id id)
{
	return o->set.text[id];
}

uint64_t collect_value(const struct collect_opts *o, enum tally_setting_id id)
{
	const char *text;
	char why[8];
	uint64_t v;

	if (o->set.text[id] && tally_setting_parse(id, o->set.text[id], false, &v, why, 1) == 0)
		return v;
	if (tally_setting_get(id, &v, &text, why, sizeof(why)) == 0)
		return v;
	return tally_settings[id].def;
}

const char *collect_output(const struct collect_opts *o)
{
	return o->set.text[TS_OUTPUT] ? o->set.text[TS_OUTPUT] : tally_settings[TS_OUTPUT].def_text;
}

bool collect_opts_native(const struct collect_opts *o)
{
	return collect_value(o, TS_NATIVE_STACKS) || (collect_value(o, TS_SAMPLE) & SAMPLE_NATIVE);
}

/* -o DIR/ or -o DIR (a directory that is there): the default name in it. */
static void output_in_directory(struct collect_opts *o)
{
	const char *given = collect_output(o);
	size_t n = strlen(given);
	struct stat st;

	if (!n || (given[n - 1] != '/' &&
		   (strchr(given, '%') || stat(given, &st) < 0 || !S_ISDIR(st.st_mode))))
		return;
	snprintf(o->output_buf, sizeof(o->output_buf), "%s%s%s", given,
		 given[n - 1] == '/' ? "" : "/", tally_settings[TS_OUTPUT].def_text);
	o->set.text[TS_OUTPUT] = o->output_buf;
}

/* The variables every run sets whatever tally's environment holds: TALLY_OUTPUT (collect_env),
 * and TALLY_MANIFEST and TALLY_ROOT_PID (tally record's child). */
static bool set_always(size_t id)
{
	return id == TS_OUTPUT || id == TS_MANIFEST || id == TS_ROOT_PID;
}

/* The settings the program inherits from tally's own environment, where no option replaces
 * them: each is checked now, as the collector will read it, so that a bad one stops the run
 * before the program starts instead of leaving it unrecorded. */
static int check_inherited(const struct collect_opts *o)
{
	char why[512];
	const char *text;
	uint64_t v;
	size_t i;

	for (i = 0; i < TALLY_SETTING_COUNT; i++)
		if (!o->set.text[i] && !set_always(i) &&
		    tally_setting_get(i, &v, &text, why, sizeof(why)) < 0)
			return cli_usage_error("%s (in tally's environment, which the program "
					       "inherits: fix it or unset it)",
					       cli_text(why));
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

	const char *output;

	output_in_directory(o);
	output = collect_output(o);
	if (tally_pattern_expand(output, &vars, test, sizeof(test), err, sizeof(err)) < 0)
		return cli_usage_error("--output: %s", err);
	if ((rc = check_name_lengths(test)) != 0)
		return rc;
	if (output[0] == '/') {
		snprintf(o->output_abs, sizeof(o->output_abs), "%s", output);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return cli_error(TALLY_EXIT_ERROR, "cannot read the current directory: %s",
				 strerror(errno));
	if ((size_t)snprintf(o->output_abs, sizeof(o->output_abs), "%s/%s", cwd, output) >=
	    sizeof(o->output_abs))
		return cli_usage_error("--output: path too long");
	return 0;
}

int collect_opts_finish(struct collect_opts *o)
{
	int rc;

	if ((o->set.text[TS_GPU_METRICS_HZ] || o->set.text[TS_GPU_METRICS_SET]) &&
	    !o->set.text[TS_GPU_METRICS])
		return cli_usage_error("--gpu-metrics-frequency and --gpu-metrics-set go with "
				       "--gpu-metrics");
	if ((rc = check_inherited(o)) != 0 || (rc = absolute_output(o)) != 0)
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

size_t collect_env(const struct collect_opts *o, struct env_var *vars, size_t max)
{
	const char *preload = getenv("LD_PRELOAD");
	size_t n = 0, i;

	put(vars, &n, max, "CUDA_INJECTION64_PATH", o->collector);
	if (collect_value(o, TS_TRACE) & TRACE_NVTX)
		put(vars, &n, max, "NVTX_INJECTION64_PATH", o->collector);
	if (preload && *preload && !strstr(preload, o->collector)) {
		char both[PATH_MAX * 2];

		snprintf(both, sizeof(both), "%s:%s", o->collector, preload);
		put(vars, &n, max, "LD_PRELOAD", both);
	} else {
		put(vars, &n, max, "LD_PRELOAD", o->collector);
	}
	put(vars, &n, max, tally_settings[TS_OUTPUT].env, o->output_abs);
	for (i = 0; i < TALLY_SETTING_COUNT; i++)
		if (i != TS_OUTPUT)
			put(vars, &n, max, tally_settings[i].env, o->set.text[i]);
	return n;
}
