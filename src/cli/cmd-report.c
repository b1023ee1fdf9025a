/* SPDX-License-Identifier: MIT */
/*
 * tally report FILE|DIR... [-o report.html]: one self-contained HTML page to look at a trace, or
 * the ranks of a merged run, offline (docs/report.md).
 * Exit 0: written (a warning says so when a trace is INCOMPLETE; --strict makes that exit 1);
 * 2: usage; 3: an input could not be read; 4: the page could not be written.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "page.h"

#define DEFAULT_BUCKETS 16384
#define DEFAULT_EXACT	200000

struct report_cli {
	struct report_html_opts o;
	bool strict, quiet;
};

static const struct cli_opt_help report_help[] = {
    {"-o, --output FILE", "the page to write (default: report.html)"},
    {"--force", "replace an existing page"},
    {"--strict", "exit 1 when a trace is INCOMPLETE (the page is still written)"},
    {"--buckets N", "level-of-detail buckets per lane, 16 to 1048576 (default 16384)"},
    {"--exact N", "events kept one by one, at most (default 200000; 0: buckets only)"},
    {"-q, --quiet", "no summary line on standard error"},
    {"-h, --help", "show this help"},
    {NULL, NULL},
};

static void usage(FILE *out)
{
	cli_usage(out, "tally report [-o FILE] [--force] [--strict] FILE|DIR...",
		  "Write one HTML page that opens offline (no network, everything inlined): the\n"
		  "verdict, the ledger over time, GPU busy and idle per device, the stats reports\n"
		  "as sortable tables, a timeline with zoom, and the ranks side by side.\n"
		  "Exit 0: written; 1: INCOMPLETE with --strict; 2: usage; 3: unreadable input;\n"
		  "4: the page could not be written.",
		  report_help);
}

static int parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		return cli_error(TALLY_EXIT_USAGE,
				 "'%s' is not a count from %" PRIu64 " to %" PRIu64, s, min, max);
	*out = v;
	return 0;
}

enum { OPT_FORCE = 256, OPT_STRICT, OPT_BUCKETS, OPT_EXACT };

static int parse_opt(int c, struct report_cli *x)
{
	uint64_t v;
	int rc = 0;

	switch (c) {
	case 'o':
		x->o.output = optarg;
		break;
	case OPT_FORCE:
		x->o.force = true;
		break;
	case OPT_STRICT:
		x->strict = true;
		break;
	case OPT_BUCKETS:
		if ((rc = parse_count(optarg, 16, 1u << 20, &v)) == 0)
			x->o.buckets = (unsigned)v;
		break;
	case OPT_EXACT:
		rc = parse_count(optarg, 0, 100000000, &x->o.exact_budget);
		break;
	case 'q':
		x->quiet = true;
		break;
	case 'h':
		usage(stdout);
		return -1;
	default:
		return TALLY_EXIT_USAGE;
	}
	return rc;
}

static int parse(int argc, char **argv, struct report_cli *x)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, OPT_FORCE},
	    {"strict", no_argument, NULL, OPT_STRICT},
	    {"buckets", required_argument, NULL, OPT_BUCKETS},
	    {"exact", required_argument, NULL, OPT_EXACT},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1)
		if ((rc = parse_opt(c, x)) != 0)
			return rc;
	if (optind >= argc)
		return cli_error(TALLY_EXIT_USAGE,
				 "no trace given; usage: tally report FILE|DIR... [-o FILE]");
	return 0;
}

static void summary(const struct report_cli *x, const struct report_html_result *res, uint64_t t0)
{
	char size[32];

	fprintf(stderr,
		"%s: %" PRIu64 " records -> %s (%s, %zu lanes, %" PRIu64
		" exact events) in %.2f s: %s\n",
		tally_progname, res->records, x->o.output,
		cli_fmt_bytes(size, sizeof(size), res->bytes), res->lanes, res->exact_events,
		(double)(cli_now_ns() - t0) / 1e9, res->complete ? "COMPLETE" : "INCOMPLETE");
}

int cmd_report(int argc, char **argv)
{
	struct report_cli x = {.o = {.output = "report.html",
				     .buckets = DEFAULT_BUCKETS,
				     .exact_budget = DEFAULT_EXACT}};
	struct report_html_result res;
	struct cli_progress progress;
	uint64_t t0 = cli_now_ns();
	char err[600];
	int rc = parse(argc, argv, &x);

	if (rc)
		return rc < 0 ? TALLY_EXIT_OK : rc;
	cli_progress_begin(&progress, "tally report");
	rc = report_html(argv + optind, (size_t)(argc - optind), &x.o, cli_progress_callback,
			 &progress, &res, err, sizeof(err));
	cli_progress_end(&progress);
	if (rc)
		return cli_error(res.input_failed ? TALLY_EXIT_UNREADABLE : TALLY_EXIT_ERROR, "%s",
				 err);
	if (!res.complete)
		cli_warn(
		    "INCOMPLETE: data was lost in the input (the page's banner says what, when "
		    "and the fix)");
	if (!x.quiet)
		summary(&x, &res, t0);
	return !res.complete && x.strict ? TALLY_EXIT_FAIL : TALLY_EXIT_OK;
}
