/* SPDX-License-Identifier: MIT */
/*
 * tally compare A B: two runs over the same stretch, like with like (docs/compare.md).  Exit 0:
 * same; 1: differs; 5: unusable for timing (a side lost records in the stretch); 2: usage (also a
 * range or capture window that is not in the traces); 3: unreadable input; 4: output failed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"

struct compare_cli {
	struct compare_opts o;
	enum report_format fmt;
	const char *output;
	bool force;
	char *range; /* owned copy of --range's NAME */
};

static const struct cli_opt_help compare_help[] = {
    {"--range NAME[:K]", "compare GPU work launched inside the NVTX range NAME: its K-th"},
    {"", "occurrence in each process (1 = first), or every occurrence"},
    {"--capture", "compare the capture range (cudaProfilerStart..Stop window)"},
    {"-f, --format FMT", "table (default), csv or json"},
    {"-o, --output FILE", "write to FILE instead of standard output (never over an input)"},
    {"--force", "replace FILE if it exists (only ever a regular file)"},
    {"--alpha P", "significance level of the KS test (default 0.01)"},
    {"--min-effect PCT", "smallest p50/p90 shift that counts as different (default 5)"},
    {"--max-edits N", "compute the edit distance up to N (default 1000)"},
    {"-h, --help", "show this help"},
    {NULL, NULL},
};

static void usage(FILE *out)
{
	cli_usage(out, "tally compare [options] A B",
		  "Compare two runs (each a trace file or a directory of them) over the same\n"
		  "stretch: per kernel name and copy kind the counts, p50/p90/p99 and a\n"
		  "Kolmogorov-Smirnov distance with a same/differs call; per stream the kernel\n"
		  "order (first divergence, edit distance); both verdicts and every loss counter.\n"
		  "A side that lost records in the stretch makes the timings unusable.\n"
		  "Exit 0: same; 1: differs; 5: unusable for timing; 2: usage (or no such range);\n"
		  "3: unreadable input; 4: output failed.",
		  compare_help);
}

static int parse_range(struct compare_cli *c, const char *arg)
{
	char *colon, *end;

	free(c->range);
	c->range = strdup(arg);
	if (!c->range)
		return cli_error(TALLY_EXIT_ERROR, "out of memory");
	c->o.stretch = COMPARE_RANGE;
	c->o.range_name = c->range;
	colon = strrchr(c->range, ':');
	if (!colon)
		return 0;
	c->o.range_k = (unsigned)strtoul(colon + 1, &end, 10);
	if (*end || end == colon + 1 || !c->o.range_k)
		return cli_error(TALLY_EXIT_USAGE, "--range %s: K must be a number from 1", arg);
	*colon = '\0';
	return 0;
}

static int parse_number(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || !(v > lo && v <= hi))
		return cli_error(TALLY_EXIT_USAGE, "%s %s: a number in (%g, %g]", opt, s, lo, hi);
	*out = v;
	return 0;
}

static int parse_format(const char *s, enum report_format *fmt)
{
	static const char *const names[] = {"table", "csv", "json"};
	unsigned i;

	for (i = 0; i < 3; i++)
		if (strcmp(s, names[i]) == 0) {
			*fmt = (enum report_format)i;
			return 0;
		}
	return cli_error(TALLY_EXIT_USAGE, "'%s' is not a format: table, csv or json", s);
}

static int parse_opt(struct compare_cli *c, int opt, const char *arg)
{
	double v;
	int rc;

	switch (opt) {
	case 'R':
		return parse_range(c, arg);
	case 'C':
		c->o.stretch = COMPARE_CAPTURE;
		return 0;
	case 'f':
		return parse_format(arg, &c->fmt);
	case 'o':
		c->output = arg;
		return 0;
	case 'F':
		c->force = true;
		return 0;
	case 'a':
		return parse_number("--alpha", arg, 0, 0.5, &c->o.alpha);
	case 'e':
		rc = parse_number("--min-effect", arg, -1e-9, 1000, &v);
		c->o.min_effect = v / 100;
		return rc;
	case 'm':
		rc = parse_number("--max-edits", arg, 0, 1e7, &v);
		c->o.max_edits = (unsigned)v;
		return rc;
	case 'h':
		usage(stdout);
		return -1;
	default:
		return TALLY_EXIT_USAGE;
	}
}

static int parse(int argc, char **argv, struct compare_cli *c)
{
	static const struct option longopts[] = {
	    {"range", required_argument, NULL, 'R'},
	    {"capture", no_argument, NULL, 'C'},
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, 'F'},
	    {"alpha", required_argument, NULL, 'a'},
	    {"min-effect", required_argument, NULL, 'e'},
	    {"max-edits", required_argument, NULL, 'm'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1)
		if ((rc = parse_opt(c, opt, optarg)) != 0)
			return rc;
	if (argc - optind != 2)
		return cli_error(TALLY_EXIT_USAGE, "two traces (or directories) to compare: "
						   "tally compare [options] A B");
	return 0;
}

/* To standard output, or to -o FILE (cli_output: a temporary file renamed over it). */
static int write_out(const struct compare_result *r, const struct compare_cli *c, char **inputs)
{
	struct cli_output out;
	int rc = cli_output_open(&out, c->output, c->force, inputs, 2);

	if (rc)
		return rc;
	return cli_output_close(&out, compare_write(r, out.f, c->fmt));
}

static int exit_for(enum compare_verdict v)
{
	static const int codes[] = {TALLY_EXIT_OK, TALLY_EXIT_FAIL, TALLY_EXIT_UNUSABLE};

	return codes[v];
}

static int run(char **argv, const struct compare_cli *c)
{
	struct compare_result *r;
	char err[700];
	int rc = cli_output_check(c->output, c->force, argv, 2); /* before the reading */

	if (rc)
		return rc;
	rc = compare_run(&argv[0], 1, &argv[1], 1, &c->o, &r, err, sizeof(err));
	if (rc == -ENOMEM)
		return cli_error(TALLY_EXIT_ERROR, "%s", err);
	if (rc == -ESRCH)
		return cli_error(TALLY_EXIT_USAGE, "%s", err);
	if (rc < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", err);
	rc = write_out(r, c, argv);
	if (rc == 0)
		rc = exit_for(r->verdict);
	compare_free(r);
	return rc;
}

int cmd_compare(int argc, char **argv)
{
	struct compare_cli c = {.fmt = REPORT_FMT_TABLE};
	int rc;

	compare_opts_default(&c.o);
	rc = parse(argc, argv, &c);
	if (rc == 0)
		rc = run(argv + optind, &c);
	else if (rc < 0)
		rc = TALLY_EXIT_OK;
	free(c.range);
	return rc;
}
