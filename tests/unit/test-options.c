/* SPDX-License-Identifier: MIT */
/*
 * The option tables (src/cli/cli-options.c): every row kind, repeated options, "--opt=value" and
 * "--opt value", "--", a missing argument, an unknown option, bad numbers, and --help from the
 * same rows.  Messages are read from the parser's stderr.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

enum color { RED, GREEN, BLUE };
static const char *const colors[] = {"red", "green", "blue", NULL};

struct inner {
	const char *pattern;
	bool force;
};

struct opts {
	bool flag;
	const char *name, *own_output, *word, *json;
	unsigned count, small;
	uint64_t big, wait_ns, bytes;
	enum color color;
	struct cli_list tags;
	int touched, json_calls;
	struct inner in;
};

/* --check WORD: "bad" is refused with a message, "oom" fails as out of memory would */
static int check_word(void *opts, const char *arg, char *err, size_t len)
{
	if (strcmp(arg, "oom") == 0)
		return -ENOMEM;
	if (strcmp(arg, "bad") == 0) {
		snprintf(err, len, "'%s' is a bad word", arg);
		return -EINVAL;
	}
	((struct opts *)opts)->word = arg;
	return 0;
}

static int touch(void *opts, const char *arg, char *err, size_t len)
{
	assert_null(arg);
	((struct opts *)opts)->touched++;
	return 0;
}

static int json(void *opts, const char *arg, char *err, size_t len)
{
	((struct opts *)opts)->json_calls++;
	((struct opts *)opts)->json = arg;
	return 0;
}

static const struct cli_option inner_options[] = {
    CLI_STRING(struct inner, 'o', "output", "PATTERN", pattern, "the group's -o (shadowed)"),
    CLI_BOOL(struct inner, 'F', "force", force, "the group's own flag"),
    CLI_END,
};

#define S struct opts
static const struct cli_option test_options[] = {
    CLI_BOOL(S, 'b', "flag", flag, "a flag"),
    CLI_STRING(S, 'n', "name", "NAME", name, "a name\nwhose help has a second line"),
    CLI_UINT(S, 'c', "count", "N", count, 1, 10, "a count from 1 to 10"),
    CLI_UINT(S, 0, "small", "N", small, 0, UINT64_MAX, "as large as an unsigned holds"),
    CLI_UINT(S, 0, "big", "N", big, 0, UINT64_MAX, "as large as a uint64_t holds"),
    CLI_DURATION(S, 0, "wait", "DURATION", wait_ns, 1000000, 10000000000ull, "1ms to 10s"),
    CLI_SIZE(S, 0, "bytes", "BYTES", bytes, 4096, UINT64_MAX, "at least 4096"),
    CLI_CHOICE(S, 0, "color", "COLOR", color, colors, "red, green or blue"),
    CLI_LIST(S, 't', "tag", "TAG[,TAG]", tags, "tags, repeatable"),
    CLI_CALLBACK('k', "check", "WORD", check_word, "a word, checked"),
    CLI_CALLBACK(0, "touch", NULL, touch, "a callback without an argument"),
    CLI_CALLBACK_OPTARG(0, "json", "FILE", json, "an optional argument"),
    CLI_STRING(S, 'o', "output", "DIR", own_output, "replaces the group's -o"),
    CLI_GROUP(S, in, inner_options, "inner options"),
    CLI_END,
};
#undef S

static void more_help(FILE *out)
{
	fputs("\nmore:\n  the end\n", out);
}

static const struct cli_command permute = {
    .usage = "tally test [options] FILE...",
    .about = "A command for the parser's tests.",
    .options = test_options,
    .more_help = more_help,
};

static const struct cli_command stop = {
    .usage = "tally test [options] -- PROGRAM",
    .about = "The same, stopping at the first operand.",
    .options = test_options,
    .flags = CLI_STOP_AT_OPERAND,
};

static const struct cli_command needs_operand = {
    .usage = "tally test [options] FILE...",
    .about = "The same, with a file needed.",
    .options = test_options,
    .no_operand = "no file given",
};

/* ---- running the parser with its stdout and stderr captured ---------------------------- */

struct result {
	int rc, first;
	char out[8192], err[2048];
};

static int capture_begin(FILE *stream, FILE **tmp)
{
	int saved;

	fflush(stream);
	*tmp = tmpfile();
	assert_non_null(*tmp);
	saved = dup(fileno(stream));
	assert_true(saved >= 0);
	assert_true(dup2(fileno(*tmp), fileno(stream)) >= 0);
	return saved;
}

static void capture_end(FILE *stream, FILE *tmp, int saved, char *buf, size_t len)
{
	size_t n;

	fflush(stream);
	assert_true(dup2(saved, fileno(stream)) >= 0);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, len - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
}

static void parse(const struct cli_command *cmd, struct opts *o, char **argv, struct result *r)
{
	FILE *out, *err;
	int argc = 0, out_fd, err_fd;

	while (argv[argc])
		argc++;
	memset(o, 0, sizeof(*o));
	memset(r, 0, sizeof(*r));
	r->first = -1;
	out_fd = capture_begin(stdout, &out);
	err_fd = capture_begin(stderr, &err);
	r->rc = cli_parse(cmd, o, argc, argv, &r->first);
	capture_end(stderr, err, err_fd, r->err, sizeof(r->err));
	capture_end(stdout, out, out_fd, r->out, sizeof(r->out));
}

#define ARGV(...) ((char *[]){"test", __VA_ARGS__, NULL})

/* A usage error: exit 2, the message on stderr with the pointer to --help, nothing set. */
static void refused(char **argv, const char *message)
{
	struct opts o;
	struct result r;

	parse(&permute, &o, argv, &r);
	assert_int_equal(r.rc, TALLY_EXIT_USAGE);
	if (!strstr(r.err, message) || !strstr(r.err, "; see 'tally test --help'\n") ||
	    strncmp(r.err, "tally test: error: ", 19) != 0)
		fail_msg("wanted \"%s\" and the pointer to --help, got: %s", message, r.err);
	assert_int_equal(o.count, 0);
	assert_int_equal(o.big, 0);
	assert_int_equal(o.wait_ns, 0);
	assert_int_equal(o.bytes, 0);
	assert_int_equal(o.color, RED);
	assert_null(o.word);
	cli_list_free(&o.tags);
}

/* ---- the tests -------------------------------------------------------------------------- */

static void every_kind(void **state)
{
	struct opts o;
	struct result r;

	(void)state;
	parse(&permute, &o,
	      ARGV("-b", "--name", "x", "-c", "3", "--small", "4294967295", "--big",
		   "18446744073709551615", "--wait", "500ms", "--bytes", "64k", "--color", "blue",
		   "-t", "a,b", "--check", "fine", "--touch", "--json=j.json", "-F", "file"),
	      &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_true(o.flag);
	assert_string_equal(o.name, "x");
	assert_int_equal(o.count, 3);
	assert_int_equal(o.small, 4294967295u);
	assert_true(o.big == UINT64_MAX);
	assert_int_equal(o.wait_ns, 500000000);
	assert_int_equal(o.bytes, 65536);
	assert_int_equal(o.color, BLUE);
	assert_int_equal(o.tags.n, 2);
	assert_string_equal(o.tags.items[0], "a");
	assert_string_equal(o.tags.items[1], "b");
	assert_string_equal(o.word, "fine");
	assert_int_equal(o.touched, 1);
	assert_string_equal(o.json, "j.json");
	assert_true(o.in.force); /* a group's row sets the group's struct */
	assert_int_equal(r.first, 23);
	cli_list_free(&o.tags);
	assert_null(o.tags.items);
}

static void repeated(void **state)
{
	struct opts o;
	struct result r;

	(void)state;
	parse(&permute, &o,
	      ARGV("-n", "first", "-t", "a", "--name", "last", "-c", "2", "--tag=b,c", "-c", "9",
		   "--touch", "--touch", "-tz", "--json", "--json=x"),
	      &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(o.name, "last");
	assert_int_equal(o.count, 9);
	assert_int_equal(o.touched, 2);
	assert_int_equal(o.json_calls, 2);
	assert_string_equal(o.json, "x");
	assert_int_equal(o.tags.n, 4);
	assert_string_equal(o.tags.items[0], "a");
	assert_string_equal(o.tags.items[1], "b");
	assert_string_equal(o.tags.items[2], "c");
	assert_string_equal(o.tags.items[3], "z");
	cli_list_free(&o.tags);
}

static void spellings(void **state)
{
	struct opts o;
	struct result r;

	(void)state;
	parse(&permute, &o, ARGV("--name=a", "--count", "4", "--wait=2s", "file"), &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(o.name, "a");
	assert_int_equal(o.count, 4);
	assert_int_equal(o.wait_ns, 2000000000ull);
	parse(&permute, &o, ARGV("-nb", "-c5", "-bc", "6", "--col=green", "--sm", "7"), &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(o.name, "b"); /* -nb: the rest of the word is -n's argument */
	assert_int_equal(o.count, 6);
	assert_true(o.flag);
	assert_int_equal(o.color, GREEN); /* an unambiguous prefix */
	assert_int_equal(o.small, 7);
	/* --json takes its argument only after '=': the next word is an operand */
	parse(&permute, &o, ARGV("--json", "file"), &r);
	assert_int_equal(r.rc, 0);
	assert_null(o.json);
	assert_int_equal(o.json_calls, 1);
	assert_int_equal(r.first, 2);
}

static void shadowing(void **state)
{
	struct opts o;
	struct result r;

	(void)state;
	parse(&permute, &o, ARGV("-o", "dir", "--output", "dir2"), &r);
	assert_int_equal(r.rc, 0);
	assert_string_equal(o.own_output, "dir2");
	assert_null(o.in.pattern);
}

static void double_dash_and_operands(void **state)
{
	struct opts o;
	struct result r;
	char **argv;

	(void)state;
	parse(&permute, &o, ARGV("-b", "--", "-c", "3"), &r);
	assert_int_equal(r.rc, 0);
	assert_true(o.flag);
	assert_int_equal(o.count, 0);
	assert_int_equal(r.first, 3);

	/* options after an operand: taken (the operands move to the end) ... */
	argv = ARGV("a.tally", "-c", "2", "b.tally");
	parse(&permute, &o, argv, &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(o.count, 2);
	assert_int_equal(r.first, 3);
	assert_string_equal(argv[3], "a.tally");
	assert_string_equal(argv[4], "b.tally");

	/* ... unless the command stops at its first operand (a program and its own options) */
	argv = ARGV("-b", "prog", "-c", "2");
	parse(&stop, &o, argv, &r);
	assert_int_equal(r.rc, 0);
	assert_true(o.flag);
	assert_int_equal(o.count, 0);
	assert_int_equal(r.first, 2);
	assert_string_equal(argv[3], "-c");

	/* an operand the command needs: said when missing, even after "--" */
	parse(&needs_operand, &o, ARGV("-b", "--"), &r);
	assert_int_equal(r.rc, TALLY_EXIT_USAGE);
	assert_string_equal(r.err, "tally test: error: no file given\n");
	parse(&needs_operand, &o, ARGV("-b", "--", "-"), &r);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.first, 3);

	/* and the next parse in the same process permutes again */
	parse(&permute, &o, ARGV("x", "-b"), &r);
	assert_int_equal(r.rc, 0);
	assert_true(o.flag);
	assert_int_equal(r.first, 2);
}

static void missing_argument(void **state)
{
	(void)state;
	refused(ARGV("--name"), "option '--name' needs an argument (NAME)");
	refused(ARGV("-n"), "option '-n' needs an argument (NAME)");
	refused(ARGV("file", "--count"), "option '--count' needs an argument (N)");
}

static void unknown_option(void **state)
{
	(void)state;
	refused(ARGV("--nope", "file"), "unknown option '--nope'");
	refused(ARGV("--nope=3"), "unknown option '--nope';");
	refused(ARGV("-Z"), "unknown option '-Z'");
	refused(ARGV("-bZ"), "unknown option '-Z'");
	refused(ARGV("--b", "1"), "option '--b' is ambiguous: --big, --bytes");
	refused(ARGV("--flag=1"), "option '--flag' takes no argument");
	refused(ARGV("--touch=1"), "option '--touch' takes no argument");
	refused(ARGV("--help=1"), "option '--help' takes no argument");
}

static void bad_numbers(void **state)
{
	(void)state;
	refused(ARGV("--count", "11"), "--count: '11' is not a whole number from 1 to 10");
	refused(ARGV("-c", "0"), "-c: '0' is not a whole number from 1 to 10");
	refused(ARGV("--count=3x"), "--count: '3x' is not a whole number");
	refused(ARGV("--count", "-1"), "--count: '-1' is not a whole number");
	refused(ARGV("--count", " 3"), "--count: ' 3' is not a whole number");
	refused(ARGV("--count="), "--count: '' is not a whole number");
	refused(ARGV("--small", "4294967296"),
		"'4294967296' is not a whole number from 0 to 4294967295");
	refused(ARGV("--big", "18446744073709551616"),
		"--big: '18446744073709551616' is not a whole number");
	refused(ARGV("--wait", "10us"),
		"--wait: '10us' is not a duration from 1.000 ms to 10.000 s");
	refused(ARGV("--wait", "11"), "--wait: '11' is not a duration from");
	refused(ARGV("--wait", "nan"), "--wait: 'nan' is not a duration");
	refused(ARGV("--wait", "1h"), "--wait: '1h' is not a duration");
	refused(ARGV("--bytes", "1k"), "--bytes: '1k' is not a size of at least 4096");
	refused(ARGV("--bytes", "17179869184G"), "--bytes: '17179869184G' is not a size");
	refused(ARGV("--bytes", "+4096"), "--bytes: '+4096' is not a size");
	refused(ARGV("--bytes", "4q"), "--bytes: '4q' is not a size");
}

static void bad_values(void **state)
{
	struct opts o;
	struct result r;

	(void)state;
	refused(ARGV("--color", "pink"), "--color: 'pink' is not red, green or blue");
	refused(ARGV("-t", "a,,b"), "-t: 'a,,b' has an empty item");
	refused(ARGV("--check", "bad"), "--check: 'bad' is a bad word");
	refused(ARGV("--name", "x", "-k", "bad"), "-k: 'bad' is a bad word");
	parse(&permute, &o, ARGV("--check", "oom"), &r);
	assert_int_equal(r.rc, TALLY_EXIT_ERROR);
	assert_non_null(strstr(r.err, "out of memory"));
	/* control bytes in a value are not written to the terminal as they are */
	refused(ARGV("--color", "\033[2J"), "--color: '\\x1b[2J' is not red");
}

static void help_from_the_rows(void **state)
{
	static const char *const want[] = {
	    "usage: tally test [options] FILE...\n\nA command for the parser's "
	    "tests.\n\noptions:\n",
	    "\n  -b, --flag                   a flag\n",
	    "\n  -n, --name NAME              a name\n"
	    "                               whose help has a second line\n",
	    "\n  --wait DURATION              1ms to 10s\n",
	    "\n  -t, --tag TAG[,TAG]          tags, repeatable\n",
	    "\n  --touch                      a callback without an argument\n",
	    "\n  --json[=FILE]                an optional argument\n",
	    "\n  -o, --output DIR             replaces the group's -o\n"
	    "  -h, --help                   show this help\n\ninner options:\n"
	    "  -o, --output PATTERN         the group's -o (shadowed)\n"
	    "  -F, --force                  the group's own flag\n\nmore:\n  the end\n",
	};
	struct opts o;
	struct result r;
	size_t i;

	(void)state;
	parse(&permute, &o, ARGV("-c", "3", "--help", "--count", "x"), &r);
	assert_int_equal(r.rc, CLI_HELP_SHOWN);
	assert_string_equal(r.err, "");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(r.out, want[i]))
			fail_msg("--help lacks:\n%s\n--- in:\n%s", want[i], r.out);
	assert_int_equal(strncmp(r.out, want[0], strlen(want[0])), 0);
	parse(&stop, &o, ARGV("-h"), &r);
	assert_int_equal(r.rc, CLI_HELP_SHOWN);
	assert_non_null(strstr(r.out, "usage: tally test [options] -- PROGRAM\n"));
	assert_null(strstr(r.out, "more:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_kind),
	    cmocka_unit_test(repeated),
	    cmocka_unit_test(spellings),
	    cmocka_unit_test(shadowing),
	    cmocka_unit_test(double_dash_and_operands),
	    cmocka_unit_test(missing_argument),
	    cmocka_unit_test(unknown_option),
	    cmocka_unit_test(bad_numbers),
	    cmocka_unit_test(bad_values),
	    cmocka_unit_test(help_from_the_rows),
	};

	tally_progname = "tally test";
	return cmocka_run_group_tests(tests, NULL, NULL);
}
