/* SPDX-License-Identifier: MIT */
/*
 * tally report FILE|DIR... [-o report.html]: one self-contained HTML page to look at a trace, or
 * the ranks of a merged run, offline (docs/report.md).
 * Exit 0: written (a warning says so when a trace is INCOMPLETE; --strict makes that exit 1);
 * 2: usage; 3: an input could not be read; 4: the page could not be written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "page.h"
#include "units.h"

#define DEFAULT_BUCKETS 16384
#define DEFAULT_EXACT	200000

struct report_cli {
	struct report_html_opts o;
	bool strict, quiet;
};

#define S struct report_cli
static const struct cli_option report_options[] = {
    CLI_STRING(S, 'o', "output", "FILE", o.output,
	       "the page to write (default: report.html; '-': standard output)"),
    CLI_BOOL(S, 0, "force", o.force, "replace an existing page"),
    CLI_BOOL(S, 0, "strict", strict,
	     "exit 1 when a trace is INCOMPLETE (the page is still written)"),
    CLI_UINT(S, 0, "buckets", "N", o.buckets, 16, 1u << 20,
	     "level-of-detail buckets per lane, 16 to 1048576 (default 16384)"),
    CLI_UINT(S, 0, "exact", "N", o.exact_budget, 0, 100000000,
	     "events kept one by one, at most (default 200000; 0: buckets only)"),
    CLI_STRING(S, 0, "range", "NAME", o.range,
	       "the NVTX range of a step, for the ranks' steps (default: step, then\n"
	       "ProfilerStep)"),
    CLI_BOOL(S, 0, "mixed-jobs", o.mixed_jobs,
	     "draw traces of different jobs on one page (refused without it: exit 2)"),
    CLI_SYMFS_OPTION,
    CLI_BOOL(S, 'q', "quiet", quiet, "no summary line on standard error"),
    CLI_END,
};
#undef S

static const struct cli_command report_command = {
    .usage = "tally report [-o FILE] [--force] [--strict] FILE|DIR...",
    .about = "Write one HTML page that opens offline (no network, everything inlined): the\n"
	     "verdict, the ledger over time, GPU busy and idle per device, the stats reports\n"
	     "as sortable tables, a timeline with zoom, and the ranks side by side.\n"
	     "Exit 0: written; 1: INCOMPLETE with --strict; 2: usage, or traces of several\n"
	     "jobs without --mixed-jobs; 3: unreadable input; 4: the page could not be written.",
    .options = report_options,
    .no_operand = "no trace given; usage: tally report FILE|DIR... [-o FILE]",
};

static void summary(const struct report_cli *x, const struct report_html_result *res, uint64_t t0)
{
	char size[32];

	fprintf(stderr,
		"%s: %" PRIu64 " records -> %s (%s, %zu lanes, %" PRIu64
		" exact events) in %.2f s: %s\n",
		tally_progname, res->records, x->o.output,
		tally_fmt_bytes(size, sizeof(size), res->bytes), res->lanes, res->exact_events,
		(double)(cli_now_ns() - t0) / 1e9, res->complete ? "COMPLETE" : "INCOMPLETE");
}

int cmd_report(int argc, char **argv)
{
	struct report_cli x = {.o = {.output = "report.html",
				     .buckets = DEFAULT_BUCKETS,
				     .exact_budget = DEFAULT_EXACT}};
	struct report_html_result res;
	struct cli_progress progress;
	struct report_set held;
	uint64_t t0 = cli_now_ns();
	char err[600];
	int first, rc = cli_parse(&report_command, &x, argc, argv, &first);

	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	if ((rc = cli_inputs_hold(&held, argv + first, (size_t)(argc - first))) != 0)
		return rc;
	rc = cli_output_check(x.o.output, cli_output_flags(x.o.force)); /* before the reading */
	if (rc == 0) {
		cli_progress_begin(&progress, "tally report");
		rc = report_html(argv + first, (size_t)(argc - first), &x.o, cli_progress_callback,
				 &progress, &res, err, sizeof(err));
		cli_progress_end(&progress);
		if (rc)
			rc = cli_error(res.mixed_jobs	  ? TALLY_EXIT_USAGE
				       : res.input_failed ? TALLY_EXIT_UNREADABLE
							  : TALLY_EXIT_ERROR,
				       "%s", err);
	}
	cli_inputs_release(&held);
	if (rc)
		return rc;
	cli_warn_demangle_refused();
	cli_warn_symbolizer_missing();
	if (!res.complete)
		cli_warn(
		    "INCOMPLETE: data was lost in the input (the page's banner says what, when "
		    "and the fix)");
	if (!x.quiet)
		summary(&x, &res, t0);
	return !res.complete && x.strict ? TALLY_EXIT_FAIL : TALLY_EXIT_OK;
}
