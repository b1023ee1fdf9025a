/* SPDX-License-Identifier: MIT */
/*
 * tally compare A B: two runs over the same stretch, like with like (docs/compare.md).  Exit 0:
 * same; 1: differs; 5: unusable for timing (a side lost records in the stretch); 2: usage (also a
 * range or capture window that is not in the traces); 3: unreadable input; 4: output failed.
 */
#include <errno.h>
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

/* --range NAME[:K] */
static int set_range(void *opts, const char *arg, char *err, size_t len)
{
	struct compare_cli *c = opts;
	char *colon, *end;

	free(c->range);
	c->range = strdup(arg);
	if (!c->range)
		return -ENOMEM;
	c->o.stretch = COMPARE_RANGE;
	c->o.range_name = c->range;
	colon = strrchr(c->range, ':');
	if (!colon)
		return 0;
	c->o.range_k = (unsigned)strtoul(colon + 1, &end, 10);
	if (*end || end == colon + 1 || !c->o.range_k) {
		snprintf(err, len, "%s: K must be a number from 1", cli_text(arg));
		return -EINVAL;
	}
	*colon = '\0';
	return 0;
}

static int set_capture(void *opts, const char *arg, char *err, size_t len)
{
	((struct compare_cli *)opts)->o.stretch = COMPARE_CAPTURE;
	return 0;
}

/* A number in (lo, hi]. */
static int parse_number(const char *s, double lo, double hi, double *out, char *err, size_t len)
{
	char *end;
	double v = strtod(s, &end);

	if (*end || end == s || !(v > lo && v <= hi)) {
		snprintf(err, len, "'%s' is not a number in (%g, %g]", cli_text(s), lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int set_alpha(void *opts, const char *arg, char *err, size_t len)
{
	return parse_number(arg, 0, 0.5, &((struct compare_cli *)opts)->o.alpha, err, len);
}

static int set_min_effect(void *opts, const char *arg, char *err, size_t len)
{
	double pct;
	int rc = parse_number(arg, -1e-9, 1000, &pct, err, len);

	if (rc == 0)
		((struct compare_cli *)opts)->o.min_effect = pct / 100;
	return rc;
}

#define S struct compare_cli
static const struct cli_option compare_options[] = {
    CLI_CALLBACK(0, "range", "NAME[:K]", set_range,
		 "compare GPU work launched inside the NVTX range NAME: its K-th\n"
		 "occurrence in each process (1 = first), or every occurrence"),
    CLI_CALLBACK(0, "capture", NULL, set_capture,
		 "compare the capture range (cudaProfilerStart..Stop window)"),
    CLI_CHOICE(S, 'f', "format", "FMT", fmt, cli_report_formats, "table (default), csv or json"),
    CLI_STRING(S, 'o', "output", "FILE", output,
	       "write to FILE instead of standard output (never over an input)"),
    CLI_BOOL(S, 0, "force", force, "replace FILE if it exists (only ever a regular file)"),
    CLI_CALLBACK(0, "alpha", "P", set_alpha, "significance level of the KS test (default 0.01)"),
    CLI_CALLBACK(0, "min-effect", "PCT", set_min_effect,
		 "smallest p50/p90 shift that counts as different (default 5)"),
    CLI_SYMFS_OPTION,
    CLI_UINT(S, 0, "max-edits", "N", o.max_edits, 1, COMPARE_MAX_EDITS_CAP,
	     "compute the edit distance up to N (default 1000, at most 100000:\n"
	     "the time grows as N squared)"),
    CLI_END,
};
#undef S

static const struct cli_command compare_command = {
    .usage = "tally compare [options] A B",
    .about = "Compare two runs (each a trace file or a directory of them) over the same\n"
	     "stretch: per kernel name and copy kind the counts, p50/p90/p99 and a\n"
	     "Kolmogorov-Smirnov distance with a same/differs call; per stream the kernel\n"
	     "order (first divergence, edit distance); both verdicts and every loss counter.\n"
	     "A side that lost records in the stretch makes the timings unusable.\n"
	     "Exit 0: same; 1: differs; 5: unusable for timing; 2: usage (or no such range);\n"
	     "3: unreadable input; 4: output failed.",
    .options = compare_options,
};

/* To standard output, or to -o FILE (cli_output: a temporary file renamed over it). */
static int write_out(const struct compare_result *r, const struct compare_cli *c)
{
	struct cli_output out;
	int rc = cli_output_open(&out, c->output, c->force);

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
	struct report_set held;
	char err[700];
	int rc = cli_inputs_hold(&held, argv, 2);

	if (rc)
		return rc;
	rc = cli_output_check(c->output, cli_output_flags(c->force)); /* before the reading */
	if (rc)
		goto release;
	rc = compare_run(&argv[0], 1, &argv[1], 1, &c->o, &r, err, sizeof(err));
	if (rc < 0) {
		rc = cli_error(rc == -ENOMEM  ? TALLY_EXIT_ERROR
			       : rc == -ESRCH ? TALLY_EXIT_USAGE
					      : TALLY_EXIT_UNREADABLE,
			       "%s", err);
		goto release;
	}
	rc = write_out(r, c);
	cli_warn_demangle_refused();
	cli_warn_symbolizer_missing();
	if (rc == 0)
		rc = exit_for(r->verdict);
	compare_free(r);
release:
	cli_inputs_release(&held);
	return rc;
}

int cmd_compare(int argc, char **argv)
{
	struct compare_cli c = {.fmt = REPORT_FMT_TABLE};
	int first, rc;

	compare_opts_default(&c.o);
	rc = cli_parse(&compare_command, &c, argc, argv, &first);
	if (rc == 0 && argc - first != 2)
		rc = cli_error(TALLY_EXIT_USAGE, "two traces (or directories) to compare: "
						 "tally compare [options] A B");
	else if (rc == 0)
		rc = run(argv + first, &c);
	else if (rc == CLI_HELP_SHOWN)
		rc = TALLY_EXIT_OK;
	free(c.range);
	return rc;
}
