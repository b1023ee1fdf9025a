/* SPDX-License-Identifier: MIT */
/*
 * tally control [record options] -- PROGRAM ARGS: the two control runs a trace needs before its
 * timings are evidence (docs/control.md).  N alternating rounds of the same program with the same
 * arguments and environment: untraced (what recording perturbs), reduced (GPU activity only: is a
 * loss record pressure?) and the chosen kinds.  Wall time per configuration, drops per
 * configuration, compare of reduced vs full, and what follows, in words.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "collect-env.h"
#include "compare.h"
#include "json.h"
#include "record-run.h"
#include "trace-set.h"

#define MAX_ROUNDS 50
#define REDUCED	   "kernel,memcpy,memset"

enum config { C_UNTRACED, C_REDUCED, C_FULL, C_COUNT };
static const char *const config_names[C_COUNT] = {"untraced", "reduced", "full"};

struct round_result {
	uint64_t wall_ns;
	int status;
	size_t files, complete;
	uint64_t records, dropped_cupti, lost; /* lost: every loss counter */
};

struct config_result {
	struct round_result r[MAX_ROUNDS];
	double median_s, min_s, max_s;
	uint64_t dropped_cupti, lost;
	size_t files, complete;
};

struct control {
	struct collect_opts base;
	unsigned rounds;
	bool json, skip_checks;
	const char
	    *json_path; /* --json=FILE; plain --json: standard output, the program's to stderr */
	const char *dir;
	char dir_abs[PATH_MAX];
	char **argv; /* the program and its arguments, the same every round */
	struct config_result cfg[C_COUNT];
	struct compare_result *cmp;
	char cmp_err[600];
};

/* --json or --json=FILE ("-" or nothing: standard output) */
static int set_json(void *opts, const char *arg, char *err, size_t len)
{
	struct control *ctl = opts;

	(void)err;
	(void)len;
	ctl->json = true;
	ctl->json_path = arg && *arg && strcmp(arg, "-") != 0 ? arg : NULL;
	return 0;
}

#define S struct control
static const struct cli_option control_options[] = {
    CLI_STRING(S, 'o', "output", "DIR", dir,
	       "where the traces go: DIR/CONFIG-rK/ (default tally-control-PID)"),
    CLI_UINT(S, 'n', "rounds", "N", rounds, 1, MAX_ROUNDS,
	     "rounds of untraced, reduced and full runs (default 3)"),
    CLI_CALLBACK_OPTARG(0, "json", "FILE", set_json,
			"the summary as JSON (docs/control.md): into FILE, or on standard\n"
			"output with the program's standard output sent to standard error"),
    CLI_BOOL(S, 0, "no-checks", skip_checks, "do not stop on the doctor's blocking findings"),
    /* after -o: the directory's, not the pattern's (the first row with a name wins) */
    CLI_GROUP(S, base, collect_options,
	      "recording options (as for tally record; -o is the directory)"),
    CLI_END,
};
#undef S

static const struct cli_command control_command = {
    .usage = "tally control [options] [record options] -- PROGRAM [ARGS...]",
    .about =
	"Run PROGRAM in alternating rounds: untraced, reduced (GPU activity only: " REDUCED ")\n"
	"and with the recording options given (--trace; default cuda,nvtx), the same\n"
	"arguments and environment each time.  Reports wall time per configuration\n"
	"(median, range, ratio to untraced), the records lost per configuration, and\n"
	"tally compare of reduced vs full, then says what follows.  Traces are kept in\n"
	"DIR/reduced-r1/, DIR/full-r1/, ...\n"
	"Exit 0: every run exited 0, wrote its traces and lost no record; 1: records\n"
	"were lost, a traced round wrote no trace, or the program failed in a round;\n"
	"2: usage, or PROGRAM cannot be run (the rounds stop there); 4: tally failed.",
    .options = control_options,
    .no_operand = "no program given: tally control [options] -- PROGRAM [ARGS]",
    .flags = CLI_STOP_AT_OPERAND,
};

/* The output directory, made absolute and created (it must not hold earlier rounds). */
static int make_dir(struct control *ctl)
{
	char def[64], cwd[PATH_MAX];

	if (!ctl->dir) {
		snprintf(def, sizeof(def), "tally-control-%ld", (long)getpid());
		ctl->dir = def;
	}
	if (ctl->dir[0] == '/')
		snprintf(ctl->dir_abs, sizeof(ctl->dir_abs), "%s", ctl->dir);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(ctl->dir_abs, sizeof(ctl->dir_abs), "%.3000s/%.1000s", cwd, ctl->dir);
	else
		return cli_error(TALLY_EXIT_ERROR, "cannot read the current directory");
	if (mkdir(ctl->dir_abs, 0755) < 0 &&
	    !(errno == EEXIST && collect_value(&ctl->base, TS_FORCE)))
		return cli_error(errno == EEXIST ? TALLY_EXIT_USAGE : TALLY_EXIT_ERROR, "%s: %s%s",
				 ctl->dir_abs, strerror(errno),
				 errno == EEXIST ? " (use --force to reuse it)" : "");
	ctl->dir = NULL; /* def goes out of scope: only dir_abs is used from here */
	return 0;
}

/* ---- the runs ------------------------------------------------------------------------------ */

/* What one trace file says: records, CUPTI's drops, every loss counter, the verdict. */
static void trace_facts(char *path, struct round_result *rr)
{
	struct report_set set;
	char err[256];
	size_t i, j;

	rr->files++;
	if (report_set_read(&set, &path, 1, err, sizeof(err)) < 0) {
		rr->lost++; /* an unreadable trace lost everything it had */
		return;
	}
	for (i = 0; i < set.nsections; i++) {
		const struct tally_section *s = set.sections[i]->s;

		rr->records += s->records_total;
		rr->dropped_cupti += s->ledger.v[TALLY_C_DROPPED_CUPTI];
		for (j = 0; j < tally_loss_counters_count; j++)
			rr->lost += s->ledger.v[tally_loss_counters[j]];
		rr->complete += set.sections[i]->verdict.complete;
	}
	report_set_close(&set);
}

static int run_one(struct control *ctl, enum config cfg, unsigned round)
{
	struct collect_opts c = ctl->base;
	struct round_result *rr = &ctl->cfg[cfg].r[round];
	struct record_run run;
	char dir[PATH_MAX + 32];
	size_t i;
	int rc;

	if (cfg != C_UNTRACED) {
		snprintf(dir, sizeof(dir), "%.4000s/%s-r%u", ctl->dir_abs, config_names[cfg],
			 round + 1);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return cli_error(TALLY_EXIT_ERROR, "%s: %s", dir, strerror(errno));
		snprintf(c.output_abs, sizeof(c.output_abs), "%.4000s/trace-%%p.tally", dir);
		c.set.text[TS_FORCE] = "1";
		if (cfg == C_REDUCED)
			c.set.text[TS_TRACE] = REDUCED;
	}
	rc = record_run_program(cfg == C_UNTRACED ? NULL : &c, ctl->argv,
				ctl->json && !ctl->json_path ? RECORD_RUN_STDOUT_TO_STDERR : 0,
				&run);
	if (rc)
		return rc;
	if (run.exec_errno) { /* no round can run it: its timings would be of nothing */
		rc = run.exec_errno;
		record_run_fini(&run);
		return cli_error(TALLY_EXIT_USAGE, "cannot run %s: %s; stopped after round %u (%s)",
				 cli_text(ctl->argv[0]), strerror(rc), round + 1,
				 config_names[cfg]);
	}
	rr->wall_ns = run.wall_ns;
	rr->status = run.status;
	for (i = 0; i < run.nfiles; i++)
		trace_facts(run.files[i].path, rr);
	record_run_fini(&run);
	if (!ctl->json)
		fprintf(stderr, "tally control: round %u %-8s %.3f s, exit %d\n", round + 1,
			config_names[cfg], (double)rr->wall_ns / 1e9, rr->status);
	return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void summarize_config(struct config_result *cr, unsigned rounds)
{
	double v[MAX_ROUNDS];
	unsigned i;

	for (i = 0; i < rounds; i++) {
		v[i] = (double)cr->r[i].wall_ns / 1e9;
		cr->dropped_cupti += cr->r[i].dropped_cupti;
		cr->lost += cr->r[i].lost;
		cr->files += cr->r[i].files;
		cr->complete += cr->r[i].complete;
	}
	qsort(v, rounds, sizeof(v[0]), dbl_cmp);
	cr->min_s = v[0];
	cr->max_s = v[rounds - 1];
	cr->median_s = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
}

/* Recording only a window of the run: compare the windows, not the whole runs. */
static bool windowed(const struct control *ctl)
{
	return collect_value(&ctl->base, TS_CAPTURE_RANGE) || collect_value(&ctl->base, TS_DELAY) ||
	       collect_value(&ctl->base, TS_DURATION);
}

/* tally compare of every reduced round against every full round (process k = round k). */
static void compare_configs(struct control *ctl)
{
	char *paths[2][MAX_ROUNDS], buf[2][MAX_ROUNDS][PATH_MAX + 32];
	struct compare_opts o;
	unsigned k, i;

	compare_opts_default(&o);
	if (windowed(ctl))
		o.stretch = COMPARE_CAPTURE;
	for (k = 0; k < 2; k++)
		for (i = 0; i < ctl->rounds; i++) {
			snprintf(buf[k][i], sizeof(buf[k][i]), "%.4000s/%s-r%u", ctl->dir_abs,
				 config_names[C_REDUCED + k], i + 1);
			paths[k][i] = buf[k][i];
		}
	if (compare_run(paths[0], ctl->rounds, paths[1], ctl->rounds, &o, &ctl->cmp, ctl->cmp_err,
			sizeof(ctl->cmp_err)) < 0)
		ctl->cmp = NULL;
}

/* ---- what follows ------------------------------------------------------------------------ */

/* What the losses say, by where they appear: [lost with reduced][lost with full]. */
static const char *const loss_meaning[2][2] = {
    {"no record was lost in any configuration: the traces are complete",
     "losses appear only with the full kinds: record pressure; use --trace " REDUCED
     " (or fewer kinds), a larger pool (--pool-buffers), or a shorter window (--duration)"},
    {"losses appear with reduced collection but not with the full kinds: not record pressure; "
     "read tally check on the reduced traces",
     "losses appear even with GPU activity only: the kernel rate alone outruns the buffers; "
     "give CUPTI more buffer space (--pool-buffers, --buffer-size) or record a shorter window "
     "(--duration)"},
};

/* Median wall time over the untraced one's; 0 when the untraced run took no measurable time. */
static double ratio(const struct control *ctl, enum config c)
{
	double base = ctl->cfg[C_UNTRACED].median_s;

	return base > 0 ? ctl->cfg[c].median_s / base : 0;
}

static double cost_pct(const struct control *ctl, enum config c)
{
	return ratio(ctl, c) > 0 ? 100 * (ratio(ctl, c) - 1) : 0;
}

static bool statuses_differ(const struct control *ctl)
{
	unsigned c, i;

	for (c = 0; c < C_COUNT; c++)
		for (i = 0; i < ctl->rounds; i++)
			if (ctl->cfg[c].r[i].status != ctl->cfg[C_UNTRACED].r[0].status)
				return true;
	return false;
}

/* Traced rounds that wrote no trace at all: nothing is known about what they would have lost. */
static unsigned rounds_without_trace(const struct control *ctl)
{
	unsigned c, i, n = 0;

	for (c = C_REDUCED; c < C_COUNT; c++)
		for (i = 0; i < ctl->rounds; i++)
			n += ctl->cfg[c].r[i].files == 0;
	return n;
}

/* What the traces say about loss; never "complete" for a trace that is missing or not read so. */
static void loss_conclusion(const struct control *ctl, char *out, size_t len)
{
	const struct config_result *r = &ctl->cfg[C_REDUCED], *f = &ctl->cfg[C_FULL];
	unsigned missing = rounds_without_trace(ctl);

	if (missing)
		snprintf(out, len,
			 "%u of %u traced round(s) wrote no trace: the program never initialised "
			 "CUDA or used NVTX, or tally could not load into it (tally record says "
			 "which); nothing is known about what those rounds lost",
			 missing, 2 * ctl->rounds);
	else if (!r->lost && !f->lost && (r->complete < r->files || f->complete < f->files))
		snprintf(out, len,
			 "no loss counter moved, but %zu of %zu trace(s) are not COMPLETE: tally "
			 "check on DIR says why",
			 r->files + f->files - r->complete - f->complete, r->files + f->files);
	else
		snprintf(out, len, "%s", loss_meaning[r->lost > 0][f->lost > 0]);
}

static void conclusions(const struct control *ctl, char out[4][400])
{
	const struct config_result *u = &ctl->cfg[C_UNTRACED];
	double spread = u->median_s > 0 ? 100 * (u->max_s - u->min_s) / u->median_s : 0;
	double full = cost_pct(ctl, C_FULL), reduced = cost_pct(ctl, C_REDUCED);

	snprintf(
	    out[0], sizeof(out[0]),
	    "recording costs %.1f%% wall time with the full kinds, %.1f%% reduced%s", full, reduced,
	    fabs(full) <= spread ? " (within the untraced runs' own spread: not measurable)" : "");
	loss_conclusion(ctl, out[1], sizeof(out[1]));
	if (!ctl->cmp)
		snprintf(out[2], sizeof(out[2]), "reduced vs full could not be compared: %.300s",
			 ctl->cmp_err);
	else if (ctl->cmp->verdict == COMPARE_SAME)
		snprintf(out[2], sizeof(out[2]),
			 "reduced vs full: the same kernels, order and "
			 "durations: the full kinds do not perturb GPU "
			 "timings");
	else if (ctl->cmp->verdict == COMPARE_DIFFERS)
		snprintf(
		    out[2], sizeof(out[2]),
		    "reduced vs full: %zu name(s) and %zu stream(s) differ: tracing more kinds "
		    "changes what the GPU does or when (tally compare on the directories says "
		    "which)",
		    ctl->cmp->keys_differ, ctl->cmp->streams_differ);
	else
		snprintf(out[2], sizeof(out[2]),
			 "reduced vs full: durations cannot be compared, "
			 "records were lost in the stretch");
	snprintf(out[3], sizeof(out[3]), "%s",
		 statuses_differ(ctl) ? "the program did not exit the same way every round: the "
					"rounds may not be comparable"
				      : "");
}

/* ---- output ----------------------------------------------------------------------------- */

static void text_report(const struct control *ctl)
{
	char what[4][400];
	unsigned c;

	printf("tally control: %u round(s) of %s; traces in %s/\n\n", ctl->rounds,
	       cli_text(ctl->argv[0]), cli_text(ctl->dir_abs));
	printf("  %-9s %10s  %-21s %9s  %7s  %13s  %s\n", "config", "wall (med)", "range",
	       "vs untr.", "records", "lost (cupti)", "complete");
	for (c = 0; c < C_COUNT; c++) {
		const struct config_result *cr = &ctl->cfg[c];
		uint64_t recs = 0;
		unsigned i;
		char range[64], lost[48], done[32];

		for (i = 0; i < ctl->rounds; i++)
			recs += cr->r[i].records;
		snprintf(range, sizeof(range), "%.3f .. %.3f s", cr->min_s, cr->max_s);
		snprintf(lost, sizeof(lost), "%" PRIu64 " (%" PRIu64 ")", cr->lost,
			 cr->dropped_cupti);
		snprintf(done, sizeof(done), "%zu/%zu files", cr->complete, cr->files);
		printf("  %-9s %8.3f s  %-21s %8.3fx  %7" PRIu64 "  %13s  %s\n", config_names[c],
		       cr->median_s, range, ratio(ctl, (enum config)c), c ? recs : 0,
		       c ? lost : "-", c ? done : "-");
	}
	if (ctl->cmp) {
		printf("\n  reduced vs full (tally compare, %s): %s\n",
		       windowed(ctl) ? "capture range" : "whole run",
		       compare_verdict_name(ctl->cmp->verdict));
	}
	conclusions(ctl, what);
	printf("\nwhat follows:\n");
	for (c = 0; c < 4; c++)
		if (what[c][0])
			printf("  - %s\n", what[c]);
}

static void json_config(struct tally_json *j, const struct control *ctl, enum config c)
{
	const struct config_result *cr = &ctl->cfg[c];
	unsigned i;

	tally_json_object_begin(j);
	tally_json_field_string(j, "config", config_names[c]);
	tally_json_field_string(j, "trace",
				c == C_UNTRACED	 ? ""
				: c == C_REDUCED ? REDUCED
				: collect_given(&ctl->base, TS_TRACE)
				    ? collect_given(&ctl->base, TS_TRACE)
				    : tally_settings[TS_TRACE].def_text);
	tally_json_field_double(j, "wall_median_s", cr->median_s);
	tally_json_field_double(j, "wall_min_s", cr->min_s);
	tally_json_field_double(j, "wall_max_s", cr->max_s);
	tally_json_field_double(j, "ratio_to_untraced", ratio(ctl, c));
	tally_json_field_uint(j, "lost", cr->lost);
	tally_json_field_uint(j, "dropped_cupti", cr->dropped_cupti);
	tally_json_field_uint(j, "files", cr->files);
	tally_json_field_uint(j, "complete", cr->complete);
	tally_json_name(j, "rounds");
	tally_json_array_begin(j);
	for (i = 0; i < ctl->rounds; i++) {
		const struct round_result *rr = &cr->r[i];

		tally_json_object_begin(j);
		tally_json_field_double(j, "wall_s", (double)rr->wall_ns / 1e9);
		tally_json_field_int(j, "exit_status", rr->status);
		tally_json_field_uint(j, "files", rr->files);
		tally_json_field_uint(j, "records", rr->records);
		tally_json_field_uint(j, "lost", rr->lost);
		tally_json_field_uint(j, "dropped_cupti", rr->dropped_cupti);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_object_end(j);
}

static void json_report(const struct control *ctl, FILE *out)
{
	struct tally_json j;
	char what[4][400];
	unsigned c;

	conclusions(ctl, what);
	tally_json_init(&j, out, true);
	tally_json_object_begin(&j);
	tally_json_field_string(&j, "directory", ctl->dir_abs);
	tally_json_field_uint(&j, "rounds", ctl->rounds);
	tally_json_field_uint(&j, "rounds_without_trace", rounds_without_trace(ctl));
	tally_json_name(&j, "configs");
	tally_json_array_begin(&j);
	for (c = 0; c < C_COUNT; c++)
		json_config(&j, ctl, (enum config)c);
	tally_json_array_end(&j);
	tally_json_field_string(&j, "compare",
				ctl->cmp ? compare_verdict_name(ctl->cmp->verdict) : "failed");
	if (ctl->cmp) {
		tally_json_field_uint(&j, "compare_names_differ", ctl->cmp->keys_differ);
		tally_json_field_uint(&j, "compare_streams_differ", ctl->cmp->streams_differ);
	}
	tally_json_name(&j, "conclusions");
	tally_json_array_begin(&j);
	for (c = 0; c < 4; c++)
		if (what[c][0])
			tally_json_string(&j, what[c]);
	tally_json_array_end(&j);
	tally_json_object_end(&j);
	tally_json_finish(&j);
}

/* The text on standard output, or the JSON there or into --json=FILE (never over anything but a
 * regular file: cli_output). */
static int write_report(const struct control *ctl)
{
	struct cli_output out;
	int rc;

	if (!ctl->json) {
		text_report(ctl);
		return 0;
	}
	if ((rc = cli_output_open(&out, ctl->json_path, true)) != 0)
		return rc;
	json_report(ctl, out.f);
	return cli_output_close(&out, ferror(out.f) ? -EIO : 0);
}

/* ---- the command ----------------------------------------------------------------------- */

/* The doctor's blocking checks, for the directory the traces go to; it is removed again (still
 * empty) when they fail. */
static int preflight(struct control *ctl)
{
	struct collect_opts c = ctl->base;
	int rc;

	snprintf(c.output_abs, sizeof(c.output_abs), "%.4000s/trace-%%p.tally", ctl->dir_abs);
	rc = record_preflight(&c);
	if (rc)
		rmdir(ctl->dir_abs);
	return rc;
}

static int run_rounds(struct control *ctl)
{
	unsigned i, c;
	int rc;

	for (i = 0; i < ctl->rounds; i++)
		for (c = 0; c < C_COUNT; c++)
			if ((rc = run_one(ctl, (enum config)c, i)) != 0)
				return rc;
	for (c = 0; c < C_COUNT; c++)
		summarize_config(&ctl->cfg[c], ctl->rounds);
	compare_configs(ctl);
	return 0;
}

int cmd_control(int argc, char **argv)
{
	static struct control ctl; /* rounds of results: too large for the stack */
	int rc, first;

	memset(&ctl, 0, sizeof(ctl));
	collect_opts_init(&ctl.base);
	ctl.rounds = 3;
	rc = cli_parse(&control_command, &ctl, argc, argv, &first);
	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	ctl.argv = argv + first;
	if ((rc = collect_opts_finish(&ctl.base)) != 0 ||
	    (rc = cli_output_check(ctl.json_path, OUTFILE_FORCE)) != 0 ||
	    (rc = make_dir(&ctl)) != 0)
		return rc;
	if (!ctl.skip_checks && (rc = preflight(&ctl)) != 0)
		return rc;
	if ((rc = run_rounds(&ctl)) != 0)
		return rc;
	rc = write_report(&ctl);
	if (rc == 0)
		rc = ctl.cfg[C_REDUCED].lost || ctl.cfg[C_FULL].lost || statuses_differ(&ctl) ||
			     ctl.cfg[C_UNTRACED].r[0].status || rounds_without_trace(&ctl)
			 ? TALLY_EXIT_FAIL
			 : TALLY_EXIT_OK;
	compare_free(ctl.cmp);
	return rc;
}
