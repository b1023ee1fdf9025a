/* SPDX-License-Identifier: MIT */
/*
 * One option table per command, which drives both its parsing (getopt_long underneath, so long
 * names may be abbreviated and "--opt=value", "--opt value", "-ovalue", "-o value" and "--" all
 * work) and its --help, so the two cannot drift apart.  After perf's parse-options: each row
 * names the option, the argument it takes, its help, and what it sets in the command's options
 * struct (by offset, checked against the field's type at compile time).
 *
 * Adding an option is one row in the table (and the field it sets):
 *
 *	CLI_UINT(struct stats_opts, 0, "top", "N", top, 1, 1000000,
 *		 "the N longest rows only"),
 *
 * Row kinds, by what they set:
 *   CLI_BOOL      bool, made true               --strict
 *   CLI_STRING    const char *, the argument    -o FILE (a pointer into argv: no copy)
 *   CLI_UINT      unsigned / uint64_t in [min, max], decimal digits only (max UINT64_MAX:
 *                 as large as the field holds)
 *   CLI_DURATION  uint64_t ns in [min, max]     10, 2.5, 500ms, 20us, 100ns (seconds if bare)
 *   CLI_SIZE      uint64_t in [min, max]        4096, 64k, 4M, 1GiB
 *   CLI_CHOICE    an int or enum: the index of the argument in a NULL-ended list of names
 *   CLI_LIST      struct cli_list: every occurrence appended, split at commas (cli_list_free)
 *   CLI_CALLBACK  anything else: set(opts, arg, err, len) returns 0 or -errno with a message;
 *                 arg is NULL for a row without an argument name
 *   CLI_GROUP     another table, for the struct at a field of this one, shown under its title
 *                 (the recording options record, env and control share)
 *   CLI_SETTING   struct cli_settings: a setting of the collector (common/settings.h), whose
 *                 row there gives the option's names, argument, check, help, default and
 *                 range; what it stores is the text for the setting's environment variable
 * When two rows name one option, the first wins: a command lists its own -o before the group it
 * includes to replace the group's.  --help (-h) is in every table without a row.  Help text
 * may hold '\n': the lines after the first go under it.
 */
#ifndef TALLY_CLI_CLI_OPTIONS_H
#define TALLY_CLI_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "settings.h"

enum cli_opt_type {
	CLI_OPT_END,
	CLI_OPT_BOOL,
	CLI_OPT_STRING,
	CLI_OPT_UINT,
	CLI_OPT_DURATION,
	CLI_OPT_SIZE,
	CLI_OPT_CHOICE,
	CLI_OPT_LIST,
	CLI_OPT_CALLBACK,
	CLI_OPT_GROUP,
	CLI_OPT_SETTING,
};

enum {
	CLI_OPT_ARG_OPTIONAL = 1, /* "--json" or "--json=FILE", never "--json FILE" */
};

struct cli_option {
	enum cli_opt_type type;
	int short_name;	       /* 'o', or 0 */
	const char *long_name; /* "output"; for a group, its title */
	const char *arg;       /* "FILE" in the help; NULL: the option takes no argument */
	const char *help;
	size_t offset, size; /* the field set, in the options struct given to cli_parse */
	uint64_t min, max;
	const char *const *choices;
	int (*set)(void *opts, const char *arg, char *err, size_t len);
	const struct cli_option *group;
	unsigned flags;
	enum tally_setting_id setting;
};

/* What CLI_SETTING rows fill: each setting's text for its environment variable (NULL: not
 * given), numbers written into number[] in the variable's unit. */
struct cli_settings {
	const char *text[TALLY_SETTING_COUNT];
	char number[TALLY_SETTING_COUNT][32];
};

/* The field's offset, or a compile error when its type is not one of the ones listed.
 * (clang-format 14 breaks _Generic's associations apart: left as written.) */
/* clang-format off */
#define CLI__AT(S, f, ...) _Generic(((S *)0)->f, __VA_ARGS__: offsetof(S, f))
#define CLI__UINT_AT(S, f)                                                                         \
	_Generic(((S *)0)->f, unsigned: offsetof(S, f), unsigned long: offsetof(S, f),             \
		 unsigned long long: offsetof(S, f))
#define CLI__U64_AT(S, f)                                                                          \
	_Generic(((S *)0)->f, unsigned long: offsetof(S, f), unsigned long long: offsetof(S, f))
/* An enum is an int or an unsigned, as the compiler chooses. */
#define CLI__INT_AT(S, f) _Generic(((S *)0)->f, int: offsetof(S, f), unsigned: offsetof(S, f))
/* clang-format on */
#define CLI__SIZE(S, f) sizeof(((S *)0)->f)

#define CLI_BOOL(S, s, l, f, h)                                                                    \
	{                                                                                          \
		.type = CLI_OPT_BOOL, .short_name = (s), .long_name = (l), .help = (h),            \
		.offset = CLI__AT(S, f, bool), .size = CLI__SIZE(S, f)                             \
	}
#define CLI_STRING(S, s, l, a, f, h)                                                               \
	{                                                                                          \
		.type = CLI_OPT_STRING, .short_name = (s), .long_name = (l), .arg = (a),           \
		.help = (h), .offset = CLI__AT(S, f, const char *), .size = CLI__SIZE(S, f)        \
	}
#define CLI_UINT(S, s, l, a, f, lo, hi, h)                                                         \
	{                                                                                          \
		.type = CLI_OPT_UINT, .short_name = (s), .long_name = (l), .arg = (a),             \
		.help = (h), .offset = CLI__UINT_AT(S, f), .size = CLI__SIZE(S, f), .min = (lo),   \
		.max = (hi)                                                                        \
	}
#define CLI_DURATION(S, s, l, a, f, lo, hi, h)                                                     \
	{                                                                                          \
		.type = CLI_OPT_DURATION, .short_name = (s), .long_name = (l), .arg = (a),         \
		.help = (h), .offset = CLI__U64_AT(S, f), .size = CLI__SIZE(S, f), .min = (lo),    \
		.max = (hi)                                                                        \
	}
#define CLI_SIZE(S, s, l, a, f, lo, hi, h)                                                         \
	{                                                                                          \
		.type = CLI_OPT_SIZE, .short_name = (s), .long_name = (l), .arg = (a),             \
		.help = (h), .offset = CLI__U64_AT(S, f), .size = CLI__SIZE(S, f), .min = (lo),    \
		.max = (hi)                                                                        \
	}
#define CLI_CHOICE(S, s, l, a, f, names, h)                                                        \
	{                                                                                          \
		.type = CLI_OPT_CHOICE, .short_name = (s), .long_name = (l), .arg = (a),           \
		.help = (h), .offset = CLI__INT_AT(S, f), .size = CLI__SIZE(S, f),                 \
		.choices = (names)                                                                 \
	}
#define CLI_LIST(S, s, l, a, f, h)                                                                 \
	{                                                                                          \
		.type = CLI_OPT_LIST, .short_name = (s), .long_name = (l), .arg = (a),             \
		.help = (h), .offset = CLI__AT(S, f, struct cli_list), .size = CLI__SIZE(S, f)     \
	}
#define CLI_CALLBACK(s, l, a, fn, h)                                                               \
	{                                                                                          \
		.type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), .arg = (a),         \
		.help = (h), .set = (fn)                                                           \
	}
#define CLI_CALLBACK_OPTARG(s, l, a, fn, h)                                                        \
	{                                                                                          \
		.type = CLI_OPT_CALLBACK, .short_name = (s), .long_name = (l), .arg = (a),         \
		.help = (h), .set = (fn), .flags = CLI_OPT_ARG_OPTIONAL                            \
	}
#define CLI_GROUP(S, f, table, title)                                                              \
	{                                                                                          \
		.type = CLI_OPT_GROUP, .long_name = (title), .offset = offsetof(S, f),             \
		.group = (table)                                                                   \
	}
#define CLI_SETTING(S, f, id)                                                                      \
	{                                                                                          \
		.type = CLI_OPT_SETTING, .offset = CLI__AT(S, f, struct cli_settings),             \
		.setting = (id)                                                                    \
	}
#define CLI_END                                                                                    \
	{                                                                                          \
		.type = CLI_OPT_END                                                                \
	}

/* What CLI_LIST fills: copies of the items, in order; free with cli_list_free. */
struct cli_list {
	char **items;
	size_t n;
};
void cli_list_free(struct cli_list *l);

/* A command's --help and options.  CLI_STOP_AT_OPERAND: options end at the first operand, so
 * that what follows is a program's own (record, control); otherwise options may follow files. */
enum { CLI_STOP_AT_OPERAND = 1 };
struct cli_command {
	const char *usage; /* "tally stats [-r REPORT] FILE|DIR..." */
	const char *about;
	const struct cli_option *options;
	void (*more_help)(FILE *out); /* lists after the options (reports, formats), or NULL */
	const char *no_operand;	      /* the error when no operand follows; NULL: none needed */
	unsigned flags;
};

#define CLI_HELP_SHOWN (-1)
/*
 * Parse argv[1..] (argv[0] is the command's name) into opts as cmd's table says.  Returns 0 and
 * *first the index of the first operand; CLI_HELP_SHOWN when --help was printed (exit 0); or an
 * exit code, said on stderr as "tally CMD: error: ...; see 'tally CMD --help'".
 */
int cli_parse(const struct cli_command *cmd, void *opts, int argc, char **argv, int *first);
/* A bad value found after parsing: the message, the pointer to --help; returns the usage code. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
