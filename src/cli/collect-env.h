/* SPDX-License-Identifier: MIT */
/*
 * The options `tally record` and `tally env` share, and the environment they turn into: the
 * contract between the CLI and the collector (docs/collector.md lists every variable).
 */
#ifndef TALLY_CLI_COLLECT_ENV_H
#define TALLY_CLI_COLLECT_ENV_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli.h"

struct collect_opts {
	const char *output; /* pattern as given */
	char output_abs[PATH_MAX];
	const char *trace;
	const char *delay, *duration, *capture_range, *devices, *ranks;
	const char *buffer_size, *pool_buffers, *slice_ms, *stack_depth;
	bool force, python_stacks, native_stacks;
	char collector[PATH_MAX];
};

/* Long options of the shared part, for getopt tables; ids start at COLLECT_OPT_BASE. */
#define COLLECT_OPT_BASE 1000
extern const struct option collect_longopts[];
extern const unsigned collect_longopts_count;

/* Print the shared options' help under title (for record's and env's --help). */
void collect_print_help(const char *title);

void collect_opts_init(struct collect_opts *o);
/* Handle option c (from getopt_long); returns 1 if it was one of ours, 0 if not, -1 bad value. */
int collect_opts_parse(struct collect_opts *o, int c, const char *arg);
/* Check values, find libtally.so, make the output pattern absolute.  0 or an exit code. */
int collect_opts_finish(struct collect_opts *o);

struct env_var {
	const char *name;
	char value[PATH_MAX + 64];
};

/* The variables to set, in a stable order; returns how many. */
size_t collect_env(const struct collect_opts *o, struct env_var *vars, size_t max);

#endif
