/* SPDX-License-Identifier: MIT */
/*
 * tally stats FILE|DIR...: the summary reports users of `nsys stats` know, with nsys's report
 * names and columns, over every section of every trace given; the verdict comes first
 * (docs/stats.md).  Exit 0: every trace COMPLETE; 1: some INCOMPLETE (the reports are still
 * written in full); 2: usage; 3: an input could not be read; 4: output failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "outfile.h"
#include "stats.h"
#include "trace-set.h"

struct stats_opts {
	struct stats_request req;
	enum report_format fmt;
	const char *output;
	bool force;
	uint64_t exact_medians;
	bool partial;
};

static void list_reports(FILE *out)
{
	unsigned i;

	fputs("\nreports:\n", out);
	for (i = 0; i < report_defs_count; i++)
		fprintf(out, "  %-24s %s%s\n", report_defs[i].name, report_defs[i].title,
			report_defs[i].by_default ? " (default)" : "");
}

/* Report r is written after those asked before it (stats_request.order): as asked, once. */
static void add_in_order(struct stats_opts *o, unsigned r)
{
	unsigned k;

	for (k = 0; k < o->req.norder; k++)
		if (o->req.order[k] == r)
			return;
	if (o->req.norder < sizeof(o->req.order))
		o->req.order[o->req.norder++] = (unsigned char)r;
}

/* One NAME or NAME:base / NAME:mangled. */
static int add_report(struct stats_opts *o, char *name, char *err, size_t len)
{
	char *arg = strchr(name, ':');
	enum report_name_mode mode = REPORT_NAME_DEMANGLED;
	int r;
	unsigned i;

	if (arg)
		*arg++ = '\0';
	if (strcmp(name, "all") == 0 && !arg) {
		for (i = 0; i < report_defs_count; i++) {
			o->req.reports |= 1ull << i;
			add_in_order(o, i);
		}
		return 0;
	}
	r = report_find(name);
	if (r < 0)
		snprintf(err, len, "'%s' is not a report", cli_text(name));
	else if (arg && strcmp(arg, "base") == 0)
		mode = REPORT_NAME_BASE;
	else if (arg && strcmp(arg, "mangled") == 0)
		mode = REPORT_NAME_MANGLED;
	else if (arg)
		snprintf(err, len, "%s: unknown argument ':%s' (base or mangled)", name,
			 cli_text(arg));
	if (!err[0] && arg && !report_defs[r].names)
		snprintf(err, len, "%s takes no :%s", name, arg);
	if (err[0])
		return -EINVAL;
	o->req.reports |= 1ull << r;
	o->req.names[r] = mode;
	add_in_order(o, (unsigned)r);
	return 0;
}

/* -r NAME[,NAME...], as often as wanted */
static int add_reports(void *opts, const char *list, char *err, size_t len)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save))
		rc = add_report(opts, tok, err, len);
	free(copy);
	return rc;
}

#define S struct stats_opts
static const struct cli_option stats_options[] = {
    CLI_CALLBACK('r', "report", "NAME[,NAME]", add_reports,
		 "reports to run, written in the order given (default: nvtx_sum, cuda_api_sum,\n"
		 "cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum; 'all': every "
		 "one)\n"
		 "kernel reports take :base or :mangled, as nsys's do"),
    CLI_DURATION(S, 0, "gap-min", "DURATION", req.gap_min_ns, 0, UINT64_MAX,
		 "gpu_gaps, gpu_idle_why: shortest gap listed (default 1ms; 500us, 2s ...)"),
    CLI_DURATION(S, 0, "util-bucket", "DURATION", req.util_bucket_ns, 0, UINT64_MAX,
		 "gpu_time_util: bucket (default: a twentieth of the span)"),
    CLI_DURATION(S, 0, "kernel-wait", "DURATION", req.kernel_wait_ns, 0, UINT64_MAX,
		 "gpu_idle_why, gpu_idle_breakdown, diagnosis: a gap after work already\n"
		 "submitted is kernel wait below this (default: the launching call's own\n"
		 "duration; HTA's consecutive_kernel_delay)"),
    CLI_STRING(S, 0, "range", "NAME", req.range,
	       "rank_steps: the NVTX range of a step (default: step, then ProfilerStep)"),
    CLI_UINT(S, 0, "top", "N", req.top, 1, 1000,
	     "kern_rank_spread: the kernels compared, by GPU time (default 10)"),
    CLI_UINT(S, 0, "exact-medians", "N", exact_medians, 0, UINT64_MAX,
	     "values kept for exact medians, all reports together (default\n"
	     "4000000: 32 MB); past them, medians come from a quantile sketch within\n"
	     "0.39%, and memory stops growing with the trace (0: always the sketch)"),
    CLI_CHOICE(S, 'f', "format", "FMT", fmt, cli_report_formats, "table (default), csv or json"),
    CLI_STRING(S, 'o', "output", "FILE", output,
	       "write to FILE instead of standard output (never over an input)"),
    CLI_BOOL(S, 0, "force", force, "replace FILE if it exists (only ever a regular file)"),
    CLI_SYMFS_OPTION,
    CLI_BOOL(S, 0, "partial", partial,
	     "write -o FILE as a summary (.tsum) that stats, compare and report\n"
	     "combine with others: counts, sums, extremes, quantile sketches, verdicts\n"
	     "and loss windows of every process (docs/stats.md, \"Summaries\")"),
    CLI_END,
};
#undef S

static const struct cli_command stats_command = {
    .usage = "tally stats [-r REPORT[,REPORT...]] [-f table|csv|json] [-o FILE] FILE|DIR...\n"
	     "       tally stats --partial -o FILE.tsum FILE|DIR...",
    .about = "Summary reports with nsys's names and columns (times in ns, sizes in MB), over\n"
	     "every process in the traces (a directory means every *.tally in it). The\n"
	     "verdict comes first: COMPLETE, or what was lost and when.\n"
	     "Exit 0: all COMPLETE; 1: some INCOMPLETE; 2: usage; 3: unreadable input;\n"
	     "4: output failed.",
    .options = stats_options,
    .more_help = list_reports,
    .no_operand = "no trace given; usage: tally stats FILE|DIR...",
};

/* To standard output, or to -o FILE (cli_output: a temporary file renamed over it). */
static int write_reports(struct stats *st, struct report_set *set, const struct stats_opts *o)
{
	struct cli_output out;
	int rc = cli_output_open(&out, o->output, o->force);

	if (rc)
		return rc;
	return cli_output_close(&out, stats_write(st, set, out.f, o->fmt));
}

/* --partial: the summary to -o FILE (never over an input), and one line on what it holds. */
static int write_summary(struct stats *st, struct report_set *set, const struct stats_opts *o)
{
	char err[600];
	struct stat sb;
	int rc = stats_partial_write(st, set, o->output, o->force, err, sizeof(err));

	if (rc < 0)
		return cli_error(TALLY_EXIT_ERROR, "%s", err);
	fprintf(stderr, "%s: %zu section(s), %" PRIu64 " records -> %s (%lld bytes): %s\n",
		tally_progname, set->nsections, set->records, o->output,
		stat(o->output, &sb) == 0 ? (long long)sb.st_size : -1LL,
		set->complete ? "COMPLETE" : "INCOMPLETE");
	return 0;
}

static int run(char **paths, size_t npaths, const struct stats_opts *o)
{
	struct report_scan_ops ops;
	struct cli_progress progress;
	struct report_set set;
	struct stats *st;
	char err[600];
	int rc;

	if (report_set_open(&set, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", err);
	/* before the reading, so that a refused -o costs nothing */
	if ((rc = cli_output_check(o->output, cli_output_flags(o->force))) != 0)
		goto close_set;
	report_set_find_base(&set);
	st = stats_new(&o->req);
	if (!st) {
		rc = cli_error(TALLY_EXIT_ERROR, "out of memory");
		goto close_set;
	}
	if (o->partial && stats_partial_begin(st) < 0) {
		rc = cli_error(TALLY_EXIT_ERROR, "out of memory");
		goto free_stats;
	}
	stats_scan_ops(st, &ops);
	cli_progress_begin(&progress, "tally stats: reading");
	ops.progress = cli_progress_callback;
	ops.pctx = &progress;
	rc = report_scan(&set, &ops, err, sizeof(err));
	cli_progress_end(&progress);
	if (rc == 0)
		rc = stats_finish(st, &set);
	if (rc < 0 && stats_error(st)) { /* the second pass (GPU metrics) could not read again */
		rc = cli_error(TALLY_EXIT_UNREADABLE, "%s", stats_error(st));
		goto free_stats;
	}
	if (rc < 0) {
		rc = cli_error(set.read_failed ? TALLY_EXIT_UNREADABLE : TALLY_EXIT_ERROR, "%s",
			       set.read_failed ? err : "out of memory");
		goto free_stats;
	}
	report_warn_damage(&set, stderr, tally_progname);
	rc = o->partial ? write_summary(st, &set, o) : write_reports(st, &set, o);
	cli_warn_demangle_refused();   /* names are made as the reports are written */
	cli_warn_symbolizer_missing(); /* frames are labelled as the reports are written */
	if (rc == 0 && !set.complete)
		rc = TALLY_EXIT_FAIL;
free_stats:
	stats_free(st);
close_set:
	report_set_close(&set);
	return rc;
}

int cmd_stats(int argc, char **argv)
{
	struct stats_opts o = {.fmt = REPORT_FMT_TABLE, .exact_medians = STATS_EXACT_VALUES};
	unsigned i;
	int first, rc = cli_parse(&stats_command, &o, argc, argv, &first);

	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	if (o.partial && !o.output)
		return cli_error(TALLY_EXIT_USAGE,
				 "--partial writes a file: give it with -o FILE.tsum");
	o.req.exact_values = o.exact_medians ? o.exact_medians : 1;
	o.req.sketch_only = o.exact_medians == 0;
	if (!o.req.reports)
		for (i = 0; i < report_defs_count; i++)
			if (report_defs[i].by_default)
				o.req.reports |= 1ull << i;
	return run(argv + first, (size_t)(argc - first), &o);
}
