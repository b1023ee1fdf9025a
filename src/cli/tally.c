/* SPDX-License-Identifier: MIT */
/*
 * tally: main, the command table and dispatch (after perf's run_builtin).  Each command lives in
 * its own cmd-*.c file and is found here by exact name.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tally-format.h"
#include "version.h"

static const struct tally_cmd commands[] = {
    {"doctor", cmd_doctor, "check this machine, container or job for everything recording needs"},
    {"record", cmd_record, "run a program and record what it does on the GPU"},
    {"env", cmd_env, "print the environment that records a program you cannot wrap"},
    {"check", cmd_check, "verify traces: ledger, damage, and the COMPLETE/INCOMPLETE verdict"},
    {"stats", cmd_stats, "summary reports (nsys stats names and columns)"},
    {"export", cmd_export, "write Chrome/Perfetto JSON, SQLite or CSV"},
    {"merge", cmd_merge, "put several processes' traces on one timeline"},
    {"compare", cmd_compare, "compare two runs over the same stretch: durations, order, losses"},
    {"control", cmd_control, "run a program untraced, reduced and traced: what recording costs"},
    {"report", cmd_report, "write one self-contained HTML page to look at traces"},
};

static void usage(FILE *out)
{
	char docs[4096];
	size_t i;

	fprintf(out,
		"usage: tally [--version] [--help] COMMAND [ARGS]\n\n"
		"tally records CUDA kernels, copies, memsets, API calls and NVTX ranges as a\n"
		"timeline, and accounts for every record: a trace proves it is complete or says\n"
		"what is missing, when, and why.\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	if (cli_docs_dir(docs, sizeof(docs)) == 0)
		fprintf(out,
			"\n'tally COMMAND --help' describes a command; %s/ has a page for each.\n",
			docs);
	else
		fprintf(out,
			"\n'tally COMMAND --help' describes a command; the docs/ folder of tally's "
			"source has a page for each.\n");
}

static const struct tally_cmd *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct tally_cmd *cmd;
	static char progname[64];
	int rc;

	if (argc < 2) {
		usage(stderr);
		return TALLY_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		if (argc > 2 && (cmd = find_command(argv[2]))) {
			char *help_argv[] = {argv[2], "--help", NULL};

			return cmd->run(2, help_argv);
		}
		usage(stdout);
		return TALLY_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("tally %s (format %d.%d)\n", TALLY_VERSION, TALLY_FORMAT_MAJOR,
		       TALLY_FORMAT_MINOR);
		return TALLY_EXIT_OK;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return cli_error(TALLY_EXIT_USAGE,
				 "'%s' is not a tally command; see 'tally --help'", argv[1]);
	snprintf(progname, sizeof(progname), "tally %s", cmd->name);
	tally_progname = progname;
	cli_remove_outputs_on_signal();
	rc = cmd->run(argc - 1, argv + 1);
	if (fflush(stdout) != 0 || ferror(stdout))
		return cli_error(TALLY_EXIT_ERROR, "cannot write standard output");
	return rc;
}
