/* SPDX-License-Identifier: MIT */
/*
 * tally env [options]: the environment that records a program where the launch line cannot be
 * wrapped in `tally record` (a Kubernetes pod spec, a serverless platform, a Dockerfile ENV,
 * an MPI launcher's -x).  Same options as record; the output format picks the syntax.
 */
#include <string.h>

#include "cli.h"
#include "collect-env.h"
#include "json.h"

enum env_format { FMT_SH, FMT_DOCKER, FMT_K8S, FMT_JSON };
static const char *const env_formats[] = {"sh", "docker", "k8s", "json", NULL};

struct env_opts {
	struct collect_opts c;
	enum env_format fmt;
	const char *prefix; /* where tally is installed where the program runs */
};

static const struct cli_option env_options[] = {
    CLI_CHOICE(struct env_opts, 0, "format", "sh|docker|k8s|json", fmt, env_formats,
	       "shell exports (default), Dockerfile ENV lines, a Kubernetes env: list, or JSON"),
    CLI_STRING(struct env_opts, 0, "prefix", "DIR", prefix,
	       "tally's install directory where the program runs (a container's\n"
	       "/opt/tally): the collector is DIR/lib/tally/libtally.so there, whatever\n"
	       "this machine has; --output must then be that side's absolute path too"),
    CLI_GROUP(struct env_opts, c, collect_options, "recording options"),
    CLI_END,
};

static const struct cli_command env_command = {
    .usage = "tally env [options]",
    .about = "Print the variables that make a program record itself, for places where\n"
	     "'tally record -- PROGRAM' cannot wrap the launch line.  Files land where\n"
	     "--output says (make it a mounted volume); check them with 'tally check'.",
    .options = env_options,
    .flags = CLI_STOP_AT_OPERAND,
};

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

/*
 * --prefix: the paths of the other side (a container, another node), which this machine cannot
 * check: the collector under DIR, and an output that is absolute there (a relative one would be
 * made absolute against this machine's directory).
 */
static int use_prefix(struct env_opts *o)
{
	size_t n = strlen(o->prefix);

	if (o->prefix[0] != '/')
		return cli_error(TALLY_EXIT_USAGE,
				 "--prefix %s: give the absolute path tally has where the program "
				 "runs (e.g. /opt/tally)",
				 cli_text(o->prefix));
	if (collect_output(&o->c)[0] != '/')
		return cli_error(TALLY_EXIT_USAGE,
				 "--prefix: give --output as the absolute path where the program "
				 "runs, on a mounted volume (e.g. -o /traces/); '%s' would be made "
				 "absolute against this machine's directory",
				 cli_text(collect_output(&o->c)));
	if ((size_t)snprintf(o->c.collector, sizeof(o->c.collector), "%.*s/lib/tally/libtally.so",
			     (int)(n > 1 && o->prefix[n - 1] == '/' ? n - 1 : n),
			     o->prefix) >= sizeof(o->c.collector))
		return cli_error(TALLY_EXIT_USAGE, "--prefix: path too long");
	return 0;
}

int cmd_env(int argc, char **argv)
{
	struct env_opts o = {.fmt = FMT_SH};
	struct env_var vars[COLLECT_ENV_MAX];
	size_t n;
	int first, rc;

	collect_opts_init(&o.c);
	if ((rc = cli_parse(&env_command, &o, argc, argv, &first)) != 0)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	if (first < argc)
		return cli_error(TALLY_EXIT_USAGE,
				 "unexpected argument '%s' (tally env takes "
				 "options only)",
				 argv[first]);
	if (o.prefix && (rc = use_prefix(&o)) != 0)
		return rc;
	if ((rc = collect_opts_finish(&o.c)) != 0)
		return rc;
	n = collect_env(&o.c, vars, COLLECT_ENV_MAX);
	if (o.fmt == FMT_DOCKER && (rc = check_docker_values(vars, n)) != 0)
		return rc;
	print_vars(o.fmt, vars, n);
	return TALLY_EXIT_OK;
}
