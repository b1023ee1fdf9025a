/* SPDX-License-Identifier: MIT */
/*
 * tally export FILE|DIR... --format chrome|sqlite|csv -o OUT: the traces in formats other tools
 * read (docs/export.md, docs/sqlite.md).  Loss travels with the data: DATA LOST slices in
 * Chrome JSON, TALLY_* tables in SQLite, verdict.csv and loss_windows.csv in CSV.
 * Exit 0: written (a warning says so when a trace is INCOMPLETE; --strict makes that exit 1);
 * 2: usage; 3: an input could not be read; 4: the output could not be written.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "outfile.h"
#include "trace-set.h"

struct export_cli {
	const struct exporter *e;
	struct export_opts o;
	bool strict, no_align, quiet;
};

static const struct cli_opt_help export_help[] = {
    {"-f, --format FMT", "chrome (Perfetto UI, chrome://tracing), sqlite or csv"},
    {"-o, --output OUT", "file (chrome: '-' is standard output; sqlite) or directory (csv)"},
    {"--force", "replace an existing output"},
    {"--strict", "exit 1 when a trace is INCOMPLETE (the output is still written)"},
    {"--no-align", "keep each trace's own timestamps (default: aligned by clock pairs)"},
    {"-q, --quiet", "no summary line on standard error"},
    {"-h, --help", "show this help"},
    {NULL, NULL},
};

static void usage(FILE *out)
{
	size_t i;

	cli_usage(out, "tally export -f chrome|sqlite|csv -o OUT [--force] [--strict] FILE|DIR...",
		  "Write traces in formats other tools read. Several files (or a directory of\n"
		  "*.tally) go onto one timeline, aligned through their clock pairs. Loss is\n"
		  "written too: DATA LOST slices, TALLY_* tables, verdict.csv.\n"
		  "Exit 0: written; 1: --strict and a trace is INCOMPLETE; 2: usage;\n"
		  "3: unreadable input; 4: output failed.",
		  export_help);
	fputs("\nformats:\n", out);
	for (i = 0; export_formats[i]; i++)
		fprintf(out, "  %-8s %s\n", export_formats[i]->name, export_formats[i]->what);
}

static int parse(int argc, char **argv, struct export_cli *x)
{
	enum { O_FORCE = 256, O_STRICT, O_NO_ALIGN };
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, O_FORCE},
	    {"strict", no_argument, NULL, O_STRICT},
	    {"no-align", no_argument, NULL, O_NO_ALIGN},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			x->e = export_find(optarg);
			if (!x->e)
				return cli_error(TALLY_EXIT_USAGE,
						 "'%s' is not a format: chrome, sqlite or csv",
						 optarg);
			break;
		case 'o':
			x->o.output = optarg;
			break;
		case O_FORCE:
			x->o.force = true;
			break;
		case O_STRICT:
			x->strict = true;
			break;
		case O_NO_ALIGN:
			x->no_align = true;
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
	}
	if (!x->e)
		return cli_error(TALLY_EXIT_USAGE, "no format given: --format chrome|sqlite|csv");
	if (!x->o.output)
		return cli_error(TALLY_EXIT_USAGE, "no output given: -o OUT");
	if (optind >= argc)
		return cli_error(TALLY_EXIT_USAGE,
				 "no trace given; usage: tally export FILE|DIR...");
	return 0;
}

static int run(char **paths, size_t npaths, const struct export_cli *x)
{
	struct cli_progress progress;
	struct export_stats st;
	struct report_set set;
	char err[600];
	uint64_t t0 = cli_now_ns();
	int rc;

	if (strcmp(x->o.output, "-") != 0 &&
	    outfile_not_input(x->o.output, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "%s", err);
	if (report_set_open(&set, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", err);
	set.align = !x->no_align;
	report_set_find_base(&set);
	cli_progress_begin(&progress, "tally export");
	rc = report_export(x->e, &set, &x->o, cli_progress_callback, &progress, &st, err,
			   sizeof(err));
	cli_progress_end(&progress);
	if (rc) {
		rc = cli_error(set.read_failed ? TALLY_EXIT_UNREADABLE : TALLY_EXIT_ERROR, "%s",
			       err);
		goto close_set;
	}
	report_warn_damage(&set, stderr, tally_progname);
	cli_warn_demangle_refused();
	cli_warn_symbolizer_missing();
	if (!set.complete)
		cli_warn("INCOMPLETE: data was lost in the input (the export shows where: 'tally "
			 "stats %s' says what)",
			 paths[0]);
	if (!x->quiet) {
		double s = (double)(cli_now_ns() - t0) / 1e9;

		fprintf(stderr, "%s: %" PRIu64 " records -> %" PRIu64 " %s in %s (%.2f s): %s\n",
			tally_progname, st.records, st.events,
			x->e == &export_chrome ? "events" : "rows", x->o.output, s,
			set.complete ? "COMPLETE" : "INCOMPLETE");
	}
	rc = !set.complete && x->strict ? TALLY_EXIT_FAIL : TALLY_EXIT_OK;
close_set:
	report_set_close(&set);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_cli x = {0};
	int rc = parse(argc, argv, &x);

	if (rc)
		return rc < 0 ? TALLY_EXIT_OK : rc;
	return run(argv + optind, (size_t)(argc - optind), &x);
}
