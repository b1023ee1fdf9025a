/* SPDX-License-Identifier: MIT */
/*
 * tally doctor [-o PATTERN] [--json] [--root DIR]: every gate and landmine between a program and
 * a complete trace, checked before recording (docs/doctor.md).  Exit 0 when recording can
 * proceed, 1 when a FAIL blocks it, 2 for a usage error.  The checks live in src/doctor/; this
 * file parses options and prints the report as text or JSON.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "doctor.h"
#include "json.h"
#include "pattern.h"
#include "version.h"

struct doctor_cli {
	struct tally_doctor_opts o;
	bool json;
};

#define S struct doctor_cli
static const struct cli_option doctor_options[] = {
    CLI_STRING(S, 'o', "output", "PATTERN", o.pattern,
	       "check where this output pattern lands here (%p %h %n %q{VAR})"),
    CLI_BOOL(S, 0, "json", json, "machine-readable output (schema tally-doctor/1, docs/doctor.md)"),
    CLI_STRING(S, 0, "root", "DIR", o.root,
	       "read /proc, /sys, /etc, ... under DIR instead of / (fixture trees)"),
    CLI_END,
};
#undef S

/* The checks that can FAIL: only a FAIL blocks recording (docs/doctor.md, "Which checks block"). */
static void list_blocking(FILE *out)
{
	const char *id;
	size_t i, col = 2;

	fputs("\nchecks that can FAIL (only a FAIL blocks recording):\n ", out);
	for (i = 0; (id = tally_doctor_blocking_check(i)); i++) {
		if (col + strlen(id) + 2 > 78) {
			fputs("\n ", out);
			col = 2;
		}
		fprintf(out, " %s", id);
		col += strlen(id) + 1;
	}
	fputc('\n', out);
}

static const struct cli_command doctor_command = {
    .usage = "tally doctor [-o OUTPUT_PATTERN] [--json] [--root DIR]",
    .about = "Check everything recording needs here - the card, the tool, CPU sampling and GPU\n"
	     "counters (which cuda/nvtx tracing does not need), forked children, where the\n"
	     "file lands, and where we are (container, Kubernetes, Slurm, serverless). Changes\n"
	     "nothing. Exit 0: recording can proceed; 1: a FAIL blocks it; 2: usage;\n"
	     "4: the checks could not run.",
    .options = doctor_options,
    .more_help = list_blocking,
    .flags = CLI_STOP_AT_OPERAND,
};

static const char *status_color(const struct cli_colors *c, enum tally_doctor_status s)
{
	switch (s) {
	case TALLY_DOCTOR_OK:
		return c->green;
	case TALLY_DOCTOR_WARN:
		return c->yellow;
	case TALLY_DOCTOR_FAIL:
		return c->red;
	default:
		return c->dim;
	}
}

static void print_finding(const struct tally_doctor_finding *f, const struct cli_colors *c)
{
	bool explain = f->status == TALLY_DOCTOR_WARN || f->status == TALLY_DOCTOR_FAIL;

	printf("  %s%-4s%s  %-19s  %s\n", status_color(c, f->status),
	       tally_doctor_status_name(f->status), c->reset, f->id, f->value);
	if (explain && f->why[0])
		printf("        %swhy:%s %s\n", c->dim, c->reset, f->why);
	if (explain && f->remedy[0])
		printf("        %sfix:%s %s\n", c->dim, c->reset, f->remedy);
	else if (f->status == TALLY_DOCTOR_OK && f->advise && f->remedy[0])
		printf("        %snote:%s %s\n", c->dim, c->reset, f->remedy);
}

static void print_verdict(const struct tally_doctor_report *r, const struct cli_colors *c)
{
	size_t i, shown = 0;

	printf("\n%s%s%s: %u OK, %u WARN, %u FAIL, %u SKIP", c->bold,
	       r->can_record ? "recording can proceed" : "recording is BLOCKED", c->reset,
	       r->counts[TALLY_DOCTOR_OK], r->counts[TALLY_DOCTOR_WARN],
	       r->counts[TALLY_DOCTOR_FAIL], r->counts[TALLY_DOCTOR_SKIP]);
	for (i = 0; i < r->count; i++) {
		if (r->findings[i].status != TALLY_DOCTOR_FAIL)
			continue;
		printf("%s%s", shown++ ? ", " : " (blocked by ", r->findings[i].id);
	}
	printf("%s\n", shown ? ")" : "");
}

static void print_text(const struct tally_doctor_report *r, const char *pattern)
{
	struct cli_colors c = cli_colors_for(stdout);
	const struct tally_doctor_gate *gates;
	size_t ngates, g, i;

	printf("tally doctor %s: root %s, %s%s\n", TALLY_VERSION, r->root,
	       pattern ? "output " : "no -o: checking the current directory",
	       pattern ? (r->output[0] ? r->output : pattern) : "");
	gates = tally_doctor_gates(&ngates);
	for (g = 0; g < ngates; g++) {
		printf("\n%s%s%s\n", c.bold, gates[g].title, c.reset);
		for (i = 0; i < r->count; i++)
			if (strcmp(r->findings[i].gate, gates[g].id) == 0)
				print_finding(&r->findings[i], &c);
	}
	print_verdict(r, &c);
}

static const char *json_status(enum tally_doctor_status s)
{
	static const char *const names[] = {"ok", "warn", "fail", "skip"};

	return (unsigned)s < TALLY_DOCTOR_STATUS_MAX ? names[s] : "?";
}

static void json_checks(struct tally_json *j, const struct tally_doctor_report *r)
{
	size_t i;

	tally_json_name(j, "checks");
	tally_json_array_begin(j);
	for (i = 0; i < r->count; i++) {
		const struct tally_doctor_finding *f = &r->findings[i];

		tally_json_object_begin(j);
		tally_json_field_string(j, "id", f->id);
		tally_json_field_string(j, "gate", f->gate);
		tally_json_field_string(j, "status", json_status(f->status));
		tally_json_field_bool(j, "needed_for_tracing", f->needed);
		tally_json_field_bool(j, "can_block", tally_doctor_check_blocks(f->id));
		tally_json_field_string(j, "value", f->value);
		tally_json_field_string(j, "source", f->source);
		tally_json_field_string(j, "why", f->why);
		tally_json_field_string(j, "remedy", f->remedy);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

static void json_head(struct tally_json *j, const struct tally_doctor_report *r,
		      const char *pattern)
{
	tally_json_field_string(j, "schema", TALLY_DOCTOR_SCHEMA);
	tally_json_field_string(j, "tally_version", TALLY_VERSION);
	tally_json_field_string(j, "root", r->root);
	tally_json_name(j, "output_pattern");
	if (pattern)
		tally_json_string(j, pattern);
	else
		tally_json_null(j);
	tally_json_name(j, "output");
	if (r->output[0])
		tally_json_string(j, r->output);
	else
		tally_json_null(j);
	tally_json_field_bool(j, "can_record", r->can_record);
	tally_json_name(j, "counts");
	tally_json_object_begin(j);
	tally_json_field_uint(j, "ok", r->counts[TALLY_DOCTOR_OK]);
	tally_json_field_uint(j, "warn", r->counts[TALLY_DOCTOR_WARN]);
	tally_json_field_uint(j, "fail", r->counts[TALLY_DOCTOR_FAIL]);
	tally_json_field_uint(j, "skip", r->counts[TALLY_DOCTOR_SKIP]);
	tally_json_object_end(j);
}

static void print_json(const struct tally_doctor_report *r, const char *pattern)
{
	const struct tally_doctor_gate *gates;
	struct tally_json j;
	size_t ngates, i;

	tally_json_init(&j, stdout, true);
	tally_json_object_begin(&j);
	json_head(&j, r, pattern);
	tally_json_name(&j, "blocking");
	tally_json_array_begin(&j);
	for (i = 0; i < r->count; i++)
		if (r->findings[i].status == TALLY_DOCTOR_FAIL)
			tally_json_string(&j, r->findings[i].id);
	tally_json_array_end(&j);
	gates = tally_doctor_gates(&ngates);
	tally_json_name(&j, "gates");
	tally_json_array_begin(&j);
	for (i = 0; i < ngates; i++) {
		tally_json_object_begin(&j);
		tally_json_field_string(&j, "id", gates[i].id);
		tally_json_field_string(&j, "title", gates[i].title);
		tally_json_field_bool(&j, "needed_for_tracing", gates[i].needed);
		tally_json_object_end(&j);
	}
	tally_json_array_end(&j);
	json_checks(&j, r);
	tally_json_object_end(&j);
	tally_json_finish(&j);
}

/* A malformed pattern is a usage error, caught before any check runs. */
static int validate_pattern(const char *pattern)
{
	struct tally_pattern_vars vars = {.pid = getpid()};
	char out[PATH_MAX], err[256];
	int rc = tally_pattern_expand(pattern, &vars, out, sizeof(out), err, sizeof(err));

	if (rc == -EINVAL || rc == -ENAMETOOLONG)
		return cli_usage_error("-o %s: %s", pattern, err);
	return 0;
}

static int validate_root(const char *root)
{
	struct stat st;

	if (stat(root, &st) < 0)
		return cli_usage_error("--root %s: %s", root, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_usage_error("--root %s: not a directory", root);
	return 0;
}

static int parse_args(int argc, char **argv, struct doctor_cli *x)
{
	int first, rc = cli_parse(&doctor_command, x, argc, argv, &first);

	if (rc)
		return rc;
	if (first < argc)
		return cli_error(TALLY_EXIT_USAGE,
				 "unexpected argument '%s'; usage: tally doctor "
				 "[-o PATTERN] [--json] [--root DIR]",
				 argv[first]);
	if (x->o.root && validate_root(x->o.root))
		return TALLY_EXIT_USAGE;
	if (x->o.pattern && validate_pattern(x->o.pattern))
		return TALLY_EXIT_USAGE;
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_cli x = {0};
	struct tally_doctor_opts o;
	struct tally_doctor_report r;
	char collector[PATH_MAX] = "";
	int rc;

	rc = parse_args(argc, argv, &x);
	if (rc)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	o = x.o;
	if (o.root && strspn(o.root, "/") == strlen(o.root))
		o.root = NULL; /* --root / is this system */
	/* Under --root the tree's own $TALLY_COLLECTOR says where the collector is. */
	if (!o.root && cli_find_collector(collector, sizeof(collector)) == 0)
		o.collector = collector;
	else if (!o.root)
		o.collector_looked = collector[0] ? collector : "beside the tally binary";
	rc = tally_doctor_run(&o, &r);
	if (rc < 0)
		return cli_error(TALLY_EXIT_ERROR, "cannot run the checks: %s", strerror(-rc));
	if (x.json)
		print_json(&r, o.pattern);
	else
		print_text(&r, o.pattern);
	rc = r.can_record ? TALLY_EXIT_OK : TALLY_EXIT_FAIL;
	tally_doctor_report_fini(&r);
	return rc;
}
