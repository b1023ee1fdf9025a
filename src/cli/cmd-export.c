/* SPDX-License-Identifier: MIT */
/*
 * tally export FILE|DIR... [--format chrome|perfetto|sqlite|csv|kineto] -o OUT: the traces in
 * formats other tools read (docs/export.md, docs/sqlite.md); the format from OUT's extension when
 * --format is not given.  Loss travels with the data: DATA LOST slices in
 * Chrome JSON and Perfetto's format, TALLY_* tables in SQLite, verdict.csv and loss_windows.csv
 * in CSV.
 * Exit 0: written (a warning says so when a trace is INCOMPLETE; --strict makes that exit 1);
 * 2: usage; 3: an input could not be read; 4: the output could not be written.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "export.h"
#include "outfile.h"
#include "trace-set.h"

struct export_cli {
	const struct exporter *e;
	struct export_opts o;
	bool strict, no_align, quiet;
};

static int set_format(void *opts, const char *arg, char *err, size_t len)
{
	struct export_cli *x = opts;

	x->e = export_find(arg);
	if (!x->e) {
		snprintf(err, len,
			 "'%s' is not a format: chrome, perfetto, sqlite, csv or kineto%s",
			 cli_text(arg),
			 strcmp(arg, "perfetto") == 0 ? " (this tally was built without protobuf-c)"
						      : "");
		return -EINVAL;
	}
	return 0;
}

static void list_formats(FILE *out)
{
	size_t i;

	fputs("\nformats:\n", out);
	for (i = 0; export_formats[i]; i++)
		fprintf(out, "  %-8s %s\n", export_formats[i]->name, export_formats[i]->what);
}

#define S struct export_cli
static const struct cli_option export_options[] = {
    CLI_CALLBACK('f', "format", "FMT", set_format,
		 "chrome (JSON: Perfetto UI, chrome://tracing), perfetto (Perfetto's\n"
		 "protobuf: traces too big for JSON), sqlite, csv or kineto (a directory\n"
		 "of Kineto JSON, a file per rank, for HTA); default: from -o's\n"
		 "extension (.json chrome, .pftrace perfetto, .sqlite or .db sqlite)"),
    CLI_STRING(S, 'o', "output", "OUT", o.output,
	       "file (chrome, perfetto: '-' is standard output; sqlite) or directory\n"
	       "(csv, kineto)"),
    CLI_BOOL(S, 0, "force", o.force, "replace an existing output"),
    CLI_BOOL(S, 0, "strict", strict,
	     "exit 1 when a trace is INCOMPLETE (the output is still written)"),
    CLI_BOOL(S, 0, "no-align", no_align,
	     "keep each trace's own timestamps (default: aligned by clock pairs)"),
    CLI_BOOL(S, 'q', "quiet", quiet, "no summary line on standard error"),
    CLI_BOOL(S, 0, "index", o.index,
	     "sqlite: also make the indexes of docs/sqlite.md (joins by correlation\n"
	     "id, lookups by name and thread); the export takes about 2.5 times as long"),
    CLI_SYMFS_OPTION,
    CLI_DURATION(S, 0, "metric-step", "DURATION", o.metric_step_ns, 0, UINT64_MAX,
		 "chrome: GPU metrics as one point per DURATION, the mean of its\n"
		 "samples (default: every sample; 10 kHz is about 1 MB/s per metric)"),
    CLI_END,
};
#undef S

static const struct cli_command export_command = {
    .usage = "tally export [-f chrome|perfetto|sqlite|csv|kineto] -o OUT [--force] [--strict]\n"
	     "       FILE|DIR...",
    .about = "Write traces in formats other tools read. Several files (or a directory of\n"
	     "*.tally) go onto one timeline, aligned through their clock pairs. Loss is\n"
	     "written too: DATA LOST slices, TALLY_* tables, verdict.csv.\n"
	     "Exit 0: written; 1: --strict and a trace is INCOMPLETE; 2: usage;\n"
	     "3: unreadable input; 4: output failed.",
    .options = export_options,
    .more_help = list_formats,
    .no_operand = "no trace given; usage: tally export FILE|DIR...",
};

static int parse(int argc, char **argv, struct export_cli *x, int *first)
{
	int rc = cli_parse(&export_command, x, argc, argv, first);

	if (rc)
		return rc;
	if (!x->o.output)
		return cli_error(TALLY_EXIT_USAGE, "no output given: -o OUT");
	if (!x->e)
		x->e = export_for_output(x->o.output);
	if (!x->e)
		return cli_error(TALLY_EXIT_USAGE,
				 "no format given, and '%s' does not name one (.json, .pftrace, "
				 ".sqlite, .db): --format chrome|perfetto|sqlite|csv|kineto",
				 cli_text(x->o.output));
	if (x->o.index && strcmp(x->e->name, "sqlite") != 0)
		return cli_error(TALLY_EXIT_USAGE,
				 "--index makes SQLite's indexes: it needs --format sqlite");
	return 0;
}

/*
 * JSON past what browsers load: chrome://tracing stops at 256 MB, Perfetto's UI works within
 * about 2 GB of browser memory and needs 2-4 times a trace's size.  Say so, and what to use.
 */
#define JSON_BROWSER_BYTES (256ull << 20)
static void warn_json_size(const char *path)
{
	struct stat sb;

	if (strcmp(path, "-") == 0 || stat(path, &sb) < 0 ||
	    (uint64_t)sb.st_size <= JSON_BROWSER_BYTES)
		return;
	cli_warn("%s is %.0f MB of JSON: chrome://tracing loads at most 256 MB and Perfetto's UI "
		 "runs out of memory near 500 MB; --format perfetto writes Perfetto's own format, "
		 "several times smaller, which ui.perfetto.dev and trace_processor load",
		 path, (double)sb.st_size / 1e6);
}

static int run(char **paths, size_t npaths, const struct export_cli *x)
{
	struct cli_progress progress;
	struct export_stats st;
	struct report_set set;
	char err[600];
	uint64_t t0 = cli_now_ns();
	int rc;

	if (report_set_open(&set, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", err);
	/* before the reading: the same refusal, and exit code, as every command's -o */
	if (report_export_check(x->e, &x->o, err, sizeof(err)) < 0) {
		rc = cli_error(TALLY_EXIT_USAGE, "%s", cli_text(err));
		goto close_set;
	}
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
	if (st.clamped)
		cli_warn("%" PRIu64
			 " value(s) past 2^63 - 1 (a time or a byte count) are stored as "
			 "9223372036854775807, SQLite's largest integer, not as negative numbers",
			 st.clamped);
	cli_warn_symbolizer_missing();
	if (st.processes_left_out)
		cli_warn("%" PRIu64 " process(es) with no rank and no GPU work (a launcher such as "
			 "torchrun) left out, with their %" PRIu64
			 " event(s): HTA would read each file in %s as one more rank of the job",
			 st.processes_left_out, st.events_left_out, x->o.output);
	if (!set.complete)
		cli_warn("INCOMPLETE: data was lost in the input (the export shows where: 'tally "
			 "stats %s' says what)",
			 paths[0]);
	if (!x->quiet) {
		double s = (double)(cli_now_ns() - t0) / 1e9;

		fprintf(stderr, "%s: %" PRIu64 " records -> %" PRIu64 " %s in %s (%.2f s): %s\n",
			tally_progname, st.records, st.events,
			x->e == &export_chrome || x->e == &export_perfetto || x->e == &export_kineto
			    ? "events"
			    : "rows",
			x->o.output, s, set.complete ? "COMPLETE" : "INCOMPLETE");
	}
	if (x->e == &export_chrome)
		warn_json_size(x->o.output);
	rc = !set.complete && x->strict ? TALLY_EXIT_FAIL : TALLY_EXIT_OK;
close_set:
	report_set_close(&set);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_cli x = {0};
	int first, rc = parse(argc, argv, &x, &first);

	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	return run(argv + first, (size_t)(argc - first), &x);
}
