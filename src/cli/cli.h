/* SPDX-License-Identifier: MIT */
/*
 * What every tally command shares: the command table, exit codes, messages, option tables,
 * colour on terminals only, and progress on terminals only.
 */
#ifndef TALLY_CLI_CLI_H
#define TALLY_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli-options.h"
#include "outfile.h"
#include "text.h"

/* Exit codes, one meaning each and stable: docs/architecture.md ("Exit codes") has the table,
 * each command's page in docs/ says which it returns. */
enum tally_exit {
	TALLY_EXIT_OK = 0,	   /* done; for check: every trace COMPLETE */
	TALLY_EXIT_FAIL = 1,	   /* check/stats: a trace is INCOMPLETE; doctor: a blocking FAIL */
	TALLY_EXIT_USAGE = 2,	   /* bad command line */
	TALLY_EXIT_UNREADABLE = 3, /* a file could not be read at all (missing, not a trace) */
	TALLY_EXIT_ERROR = 4,	   /* an operation failed (cannot write output, out of memory) */
	TALLY_EXIT_UNUSABLE = 5,   /* compare: a side lost records in the stretch compared */
};

struct tally_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_check(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_report(int argc, char **argv);

extern const char *tally_progname;

/* "tally CMD: message" on stderr; returns code, so `return cli_error(2, ...)` reads well. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The signals that end a process (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ; one that was
 * ignored stays so) first remove the temporary files of the outputs being written, then end it
 * as they would have. */
void cli_remove_outputs_on_signal(void);
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * The one refusal of an output, the same in every command: before anything is read, and after the
 * inputs are open (report_set_open registers them, so that none of them is replaced however the
 * output names it), refuse an -o that exists without --force, that is not a regular file (with
 * OUTFILE_DIRECTORY: a directory), or that is an input.  path NULL or "-" (standard output) is
 * always taken.  0, or TALLY_EXIT_USAGE said on stderr.
 */
int cli_output_check(const char *path, unsigned flags);
static inline unsigned cli_output_flags(bool force)
{
	return force ? OUTFILE_FORCE : 0;
}

/*
 * For commands whose library opens the inputs itself (compare, report): the inputs opened, and so
 * protected, while it runs.  0, or TALLY_EXIT_UNREADABLE said on stderr.  cli_inputs_release
 * closes them.
 */
struct report_set;
int cli_inputs_hold(struct report_set *held, char *const *paths, size_t npaths);
void cli_inputs_release(struct report_set *held);

/*
 * A report's output: standard output (path NULL or "-"), or FILE written through a temporary
 * file beside it and renamed at the end (outfile.h), after cli_output_check.  cli_output_open
 * returns 0 or an exit code (said on stderr); cli_output_close takes the writer's result (0 or
 * -errno) and returns 0 or an exit code.
 */
struct cli_output {
	FILE *f;
	const char *path;
	struct outfile of;
	unsigned flags;
};
int cli_output_open(struct cli_output *o, const char *path, bool force);
int cli_output_close(struct cli_output *o, int write_rc);

/* Says how many kernel names were too big to demangle (report_demangle), and how many texts were
 * cut at REPORT_TEXT_MAX (report_string), if any. */
void cli_warn_demangle_refused(void);
/* Says how native frames were named where it matters: why not symbolized (libdw missing), names
 * that could not be checked against the trace's build IDs, files here of other builds, naming at
 * record time cut short. */
void cli_warn_symbolizer_missing(void);
/* --symfs DIR, one row shared by the commands that name frames (stats, export, report, compare). */
int cli_set_symfs(void *opts, const char *arg, char *err, size_t len);
#define CLI_SYMFS_OPTION                                                                           \
	CLI_CALLBACK(0, "symfs", "DIR", cli_set_symfs,                                             \
		     "native frames: look for the recorded programs' and libraries' files\n"       \
		     "under DIR too (DIR/PATH, perf's meaning); a file names frames only\n"        \
		     "when its build ID is the trace's (docs/stats.md, \"Native frames\")")
/* s with control bytes and invalid UTF-8 escaped (text.h), for printing text from a trace;
 * valid until 16 more calls.  NULL stays NULL. */
static inline const char *cli_text(const char *s)
{
	return tally_text_shown(s);
}

/* table, csv, json: the names of enum report_format, in its order, for CLI_CHOICE. */
extern const char *const cli_report_formats[];

/* Colour escape sequences when stream is a terminal (and NO_COLOR is unset), else "". */
struct cli_colors {
	const char *red, *green, *yellow, *bold, *dim, *reset;
};
struct cli_colors cli_colors_for(FILE *stream);

/* Progress on stderr, shown only on a terminal and only for work that lasts over a second. */
struct cli_progress {
	const char *what;
	uint64_t start_ns;
	uint64_t last_ns;
	bool enabled, shown;
};
void cli_progress_begin(struct cli_progress *p, const char *what);
void cli_progress_end(struct cli_progress *p);
/* The same as a reader's progress callback (struct tally_read_ops.progress; ctx: the progress). */
void cli_progress_callback(void *ctx, uint64_t done, uint64_t total);

uint64_t cli_now_ns(void); /* CLOCK_MONOTONIC */

/*
 * Where libtally.so (the collector) is: $TALLY_COLLECTOR if set, else beside this tally binary
 * (installed: BINDIR/../lib/tally/libtally.so; build tree: build/src/collector/libtally.so).
 * Returns 0 and the absolute path, or -ENOENT with out holding the last place looked at.
 */
int cli_find_collector(char *out, size_t len);
/* The installed documentation (BINDIR/../share/doc/tally/docs, resolved); -ENOENT where there is
 * none (the build tree). */
int cli_docs_dir(char *out, size_t len);

#endif
