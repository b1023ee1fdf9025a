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
	const char *output; /* pattern as given (-o DIR/: DIR/tally-%p.tally, in output_buf) */
	char output_buf[PATH_MAX];
	char output_abs[PATH_MAX];
	const char *trace, *capture_range, *devices, *ranks, *stack_depth;
	uint64_t delay_ns, duration_ns;		      /* 0: from the start, to the end */
	uint64_t buffer_size, pool_buffers, slice_ms; /* 0: the collector's default */
	bool force, python_stacks, native_stacks;
	int sample;				   /* --sample: an index of the names, 0 none */
	unsigned sample_hz;			   /* 0: the collector's default */
	uint64_t osrt_threshold_ns;		   /* 0: the collector's default */
	const char *gpu_metrics, *gpu_metrics_set; /* devices ("all", "0,2"), metric list */
	unsigned gpu_metrics_hz;		   /* 0: the collector's default */
	char collector[PATH_MAX]; /* set before collect_opts_finish: that path, not looked for */
};

/*
 * The recording options, a group in record's, env's and control's tables (cli-options.h).  An
 * option that reaches the collector is a row here, a field above and a line in collect_env.
 */
extern const struct cli_option collect_options[];

void collect_opts_init(struct collect_opts *o);
/* Make the output pattern absolute (checking the names it makes), find libtally.so.  0 or an
 * exit code. */
int collect_opts_finish(struct collect_opts *o);
/* Whether the recording takes native frames (--native-stacks, --sample with native). */
bool collect_opts_native(const struct collect_opts *o);

struct env_var {
	const char *name;
	char value[PATH_MAX + 64];
};

/* The variables to set, in a stable order; returns how many. */
size_t collect_env(const struct collect_opts *o, struct env_var *vars, size_t max);

#endif
