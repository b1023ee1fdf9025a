/* SPDX-License-Identifier: MIT */
/*
 * tally env [options]: the environment that records a program where the launch line cannot be
 * wrapped in `tally record` (a Kubernetes pod spec, a serverless platform, a Dockerfile ENV,
 * an MPI launcher's -x).  Same options as record; the output format picks the syntax.
 */
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "collect-env.h"
#include "json.h"

enum env_format { FMT_SH, FMT_DOCKER, FMT_K8S, FMT_JSON };

static void usage(void)
{
	static const struct cli_opt_help own[] = {
	    {"--format sh|docker|k8s|json", "shell exports (default), Dockerfile ENV lines, a "
					    "Kubernetes env: list, or JSON"},
	    {"-h, --help", "show this help"},
	    {NULL, NULL},
	};

	cli_usage(stdout, "tally env [options]",
		  "Print the variables that make a program record itself, for places where\n"
		  "'tally record -- PROGRAM' cannot wrap the launch line.  Files land where\n"
		  "--output says (make it a mounted volume); check them with 'tally check'.",
		  own);
	collect_print_help("recording options");
}

/* Single quotes for the shell: ' becomes '\'' */
static void sh_quote(const char *v)
{
	putchar('\'');
	for (; *v; v++)
		if (*v == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*v);
	putchar('\'');
}

/* A YAML double-quoted scalar: \\ \" and every control byte escaped (YAML 1.2, section 5.7). */
static void yaml_quote(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		unsigned char ch = (unsigned char)*v;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* A Dockerfile ENV value in double quotes: \\, \" and \$ (Docker expands variables). */
static void docker_quote(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		if (*v == '"' || *v == '\\' || *v == '$')
			putchar('\\');
		putchar(*v);
	}
	putchar('"');
}

/* A Dockerfile has no way to write a newline or other control byte inside an ENV value. */
static int check_docker_values(const struct env_var *v, size_t n)
{
	size_t i;
	const char *p;

	for (i = 0; i < n; i++)
		for (p = v[i].value; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return cli_error(
				    TALLY_EXIT_USAGE,
				    "%s holds a control character (byte %#x), which a "
				    "Dockerfile ENV line cannot carry: use --format sh, "
				    "k8s or json",
				    v[i].name, (unsigned char)*p);
	return 0;
}

static void print_vars(enum env_format f, const struct env_var *v, size_t n)
{
	struct tally_json j;
	size_t i;

	if (f == FMT_JSON) {
		tally_json_init(&j, stdout, true);
		tally_json_object_begin(&j);
		for (i = 0; i < n; i++)
			tally_json_field_string(&j, v[i].name, v[i].value);
		tally_json_object_end(&j);
		tally_json_finish(&j);
		return;
	}
	if (f == FMT_K8S)
		printf("env:\n");
	for (i = 0; i < n; i++) {
		switch (f) {
		case FMT_SH:
			printf("export %s=", v[i].name);
			sh_quote(v[i].value);
			putchar('\n');
			break;
		case FMT_DOCKER:
			printf("ENV %s=", v[i].name);
			docker_quote(v[i].value);
			putchar('\n');
			break;
		default:
			printf("  - name: %s\n    value: ", v[i].name);
			yaml_quote(v[i].value);
			putchar('\n');
		}
	}
}

int cmd_env(int argc, char **argv)
{
	struct option longopts[32];
	struct collect_opts o;
	enum env_format fmt = FMT_SH;
	struct env_var vars[32];
	unsigned i, n = 0;
	int c, rc;

	collect_opts_init(&o);
	for (i = 0; i < collect_longopts_count; i++)
		longopts[n++] = collect_longopts[i];
	longopts[n++] = (struct option){"format", required_argument, NULL, 'F'};
	longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	longopts[n] = (struct option){NULL, 0, NULL, 0};
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:t:fh", longopts, NULL)) != -1) {
		if (collect_opts_parse(&o, c, optarg) == 1)
			continue;
		switch (c) {
		case 'F':
			if (strcmp(optarg, "sh") == 0)
				fmt = FMT_SH;
			else if (strcmp(optarg, "docker") == 0)
				fmt = FMT_DOCKER;
			else if (strcmp(optarg, "k8s") == 0)
				fmt = FMT_K8S;
			else if (strcmp(optarg, "json") == 0)
				fmt = FMT_JSON;
			else
				return cli_error(TALLY_EXIT_USAGE,
						 "--format: '%s' is not sh, docker, "
						 "k8s or json",
						 optarg);
			break;
		case 'h':
			usage();
			return TALLY_EXIT_OK;
		default:
			return TALLY_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_error(TALLY_EXIT_USAGE,
				 "unexpected argument '%s' (tally env takes "
				 "options only)",
				 argv[optind]);
	if ((rc = collect_opts_finish(&o)) != 0)
		return rc;
	n = (unsigned)collect_env(&o, vars, 32);
	if (fmt == FMT_DOCKER && (rc = check_docker_values(vars, n)) != 0)
		return rc;
	print_vars(fmt, vars, n);
	return TALLY_EXIT_OK;
}
