/* SPDX-License-Identifier: MIT */
/*
 * tally merge FILE|DIR... -o OUT: several processes' or ranks' traces (fork children, DataLoader
 * workers, torchrun or srun ranks, several nodes) into one file on one timeline, aligned through
 * the clock pairs each recorded (docs/merge.md).  The merged file's verdict is the worst of its
 * parts; the merged file is read back to show it.
 * Exit 0: written (a warning says so when a part is INCOMPLETE; --strict makes that exit 1);
 * 2: usage; 3: an input could not be read; 4: the output could not be written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "merge.h"
#include "trace-set.h"

struct merge_cli {
	const char *output;
	bool force, strict, quiet, mixed_jobs;
};

#define S struct merge_cli
static const struct cli_option merge_options[] = {
    CLI_STRING(S, 'o', "output", "FILE", output, "the merged trace (required)"),
    CLI_BOOL(S, 0, "force", force, "replace FILE if it exists"),
    CLI_BOOL(S, 0, "strict", strict,
	     "exit 1 when a part is INCOMPLETE (the merged file is still written)"),
    CLI_BOOL(S, 0, "mixed-jobs", mixed_jobs,
	     "merge traces of different jobs (refused without it: exit 2)"),
    CLI_BOOL(S, 'q', "quiet", quiet, "no summary on standard error"),
    CLI_END,
};
#undef S

static const struct cli_command merge_command = {
    .usage = "tally merge -o OUT [--force] [--strict] [--mixed-jobs] FILE|DIR...",
    .about = "Merge several processes' traces into one, on one timeline: each\n"
	     "section's times are shifted by its clock pair (CLOCK_REALTIME minus\n"
	     "CUPTI time). Every part keeps its ledger and verdict; damage in a part\n"
	     "is carried into the merged file, so its verdict is the worst of them.\n"
	     "Traces of different jobs (job ids, run ids, or recordings far apart in\n"
	     "time) are refused unless --mixed-jobs.\n"
	     "Exit 0: written; 1: --strict and a part is INCOMPLETE; 2: usage, or traces\n"
	     "of several jobs; 3: unreadable input; 4: output failed.",
    .options = merge_options,
    .no_operand = "no trace given; usage: tally merge -o OUT FILE...",
};

static int parse(int argc, char **argv, struct merge_cli *x, int *first)
{
	int rc = cli_parse(&merge_command, x, argc, argv, first);

	if (rc)
		return rc;
	if (!x->output)
		return cli_error(TALLY_EXIT_USAGE, "no output given: -o OUT");
	return 0;
}

/* Read the merged file back: its verdict is what a reader of it will get. */
static bool merged_complete(const char *path, size_t *sections)
{
	char err[512], *p = (char *)path;
	struct report_set set;
	bool complete;

	*sections = 0;
	if (report_set_read(&set, &p, 1, err, sizeof(err)) < 0)
		return false;
	*sections = set.inputs[0].f->nsections;
	complete = set.complete;
	report_set_close(&set);
	return complete;
}

static void summary(const struct merge_cli *x, const struct report_set *set,
		    const struct merge_result *res, bool complete, size_t sections)
{
	fprintf(stderr,
		"%s: %zu file(s), %zu section(s), %" PRIu64
		" records -> %s (%zu section(s)); clock "
		"offsets %+.6f .. %+.6f s\n",
		tally_progname, set->ninputs, set->nsections, res->records, x->output, sections,
		(double)res->min_offset / 1e9, (double)res->max_offset / 1e9);
	fprintf(stderr, "%s: merged verdict: %s%s\n", tally_progname,
		complete ? "COMPLETE" : "INCOMPLETE",
		complete ? "" : " (the worst of its parts: 'tally check' on it says why)");
	if (res->damaged)
		cli_warn("%" PRIu64 " damaged range(s) in the inputs are carried into %s as "
			 "merge_damaged_chunks",
			 res->damaged, x->output);
	if (res->unknown_chunks)
		cli_warn("%" PRIu64 " chunk(s) of a kind this tally does not know were copied "
			 "unchanged (their times, if any, are not shifted)",
			 res->unknown_chunks);
}

static int run(char **paths, size_t npaths, const struct merge_cli *x)
{
	struct cli_progress progress;
	struct merge_result res;
	struct report_set set;
	size_t sections;
	bool complete;
	char err[600];
	int rc;

	if (report_set_open(&set, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", err);
	if ((rc = cli_output_check(x->output, cli_output_flags(x->force))) != 0)
		goto close_set;
	cli_progress_begin(&progress, "tally merge");
	rc = report_merge(&set, x->output,
			  (x->force ? MERGE_FORCE : 0) | (x->mixed_jobs ? MERGE_MIXED_JOBS : 0),
			  cli_progress_callback, &progress, &res, err, sizeof(err));
	cli_progress_end(&progress);
	if (rc) {
		rc = cli_error(res.mixed_jobs	 ? TALLY_EXIT_USAGE
			       : set.read_failed ? TALLY_EXIT_UNREADABLE
						 : TALLY_EXIT_ERROR,
			       "%s", err);
		goto close_set;
	}
	report_warn_damage(&set, stderr, tally_progname);
	complete = merged_complete(x->output, &sections);
	if (!x->quiet)
		summary(x, &set, &res, complete, sections);
	/* the worst of the parts, and it must survive the merge */
	if (complete && !set.complete)
		rc = cli_error(TALLY_EXIT_ERROR, "%s reads COMPLETE but a part was not: a bug",
			       x->output);
	else
		rc = !complete && x->strict ? TALLY_EXIT_FAIL : TALLY_EXIT_OK;
close_set:
	report_set_close(&set);
	return rc;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_cli x = {0};
	int first, rc = parse(argc, argv, &x, &first);

	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	return run(argv + first, (size_t)(argc - first), &x);
}
