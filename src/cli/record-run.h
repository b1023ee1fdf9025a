/* SPDX-License-Identifier: MIT */
/*
 * One run of a program under tally record's machinery (fork, the collector's environment,
 * forwarded signals, the manifest of files written), shared by `tally record` and
 * `tally control`, which runs the same program traced and untraced.
 */
#ifndef TALLY_CLI_RECORD_RUN_H
#define TALLY_CLI_RECORD_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect-env.h"

struct record_written {
	char path[PATH_MAX];
	long pid;
	bool ended;
};

struct record_run {
	int status;	  /* the program's exit status; 128+N if it died of signal N */
	int exec_errno;	  /* not 0: the program could not be started at all (execvp's errno) */
	uint64_t wall_ns; /* fork to exit */
	struct record_written *files;
	size_t nfiles;
	char **off; /* "  pid N not recorded: why" lines */
	size_t noff;
	size_t nrefused; /* processes that said why they were not recorded ("off" lines) */
	/* processes (and exec'd images) that recorded nothing and left no file ("quiet" lines) */
	uint64_t nquiet;
	struct record_quiet {
		char name[16];
		uint64_t count;
	} quiet[16]; /* by name, the first 15; the rest under "others" */
	size_t nquiet_names;
};

enum {
	RECORD_RUN_STDOUT_TO_STDERR = 1u << 0, /* the program's standard output goes to stderr */
};

/* Run argv to its end: traced as c says, or untraced (c NULL: nothing injected, nothing set).
 * Returns 0 (run->status is the program's; run->exec_errno when it could not be executed) or an
 * exit code when tally could not fork. */
int record_run_program(const struct collect_opts *c, char **argv, unsigned flags,
		       struct record_run *run);
void record_run_fini(struct record_run *run);

/* The doctor's blocking checks for recording with c; 0, or an exit code (said on stderr). */
int record_preflight(const struct collect_opts *c);

#endif
