/* SPDX-License-Identifier: MIT */
/*
 * The options `tally record` and `tally env` share, and the environment they turn into: the
 * contract between the CLI and the collector (docs/collector.md lists every variable).
 */
#ifndef TALLY_CLI_COLLECT_ENV_H
#define TALLY_CLI_COLLECT_ENV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

struct collect_opts {
	struct cli_settings set;   /* the settings given as options (common/settings.h) */
	char output_buf[PATH_MAX]; /* -o DIR/ or -o DIR: DIR/tally-%p.tally */
	char output_abs[PATH_MAX];
	char collector[PATH_MAX]; /* set before collect_opts_finish: that path, not looked for */
};

/*
 * The recording options, a group in record's, env's and control's tables (cli-options.h): one
 * CLI_SETTING row each.  A setting that reaches the collector is a row of common/settings.c;
 * collect_env writes every one given.
 */
extern const struct cli_option collect_options[];

void collect_opts_init(struct collect_opts *o);
/*
 * Check what the program will get before it runs: the settings of tally's own environment that
 * no option replaces (the program inherits them), each as the collector will read it; make the
 * output pattern absolute (checking the names it makes); find libtally.so.  0 or an exit code.
 */
int collect_opts_finish(struct collect_opts *o);
/* Whether the recording takes native frames (--native-stacks, --sample with native). */
bool collect_opts_native(const struct collect_opts *o);

/* A setting's text as given (NULL: not given as an option). */
const char *collect_given(const struct collect_opts *o, enum tally_setting_id id);
/* A setting as the collector will have it: the option's, else the inherited variable's (checked
 * by collect_opts_finish), else the default. */
uint64_t collect_value(const struct collect_opts *o, enum tally_setting_id id);
/* The output pattern as given (or the default). */
const char *collect_output(const struct collect_opts *o);

#define COLLECT_ENV_MAX (TALLY_SETTING_COUNT + 4)

struct env_var {
	const char *name;
	char value[PATH_MAX + 64];
};

/* The variables to set (at most COLLECT_ENV_MAX), in a stable order; returns how many. */
size_t collect_env(const struct collect_opts *o, struct env_var *vars, size_t max);

#endif
