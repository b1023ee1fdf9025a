/* SPDX-License-Identifier: MIT */
/* Option tables: parsing through getopt_long, and --help, from the same rows; see cli-options.h. */
#include "cli.h"
#include "grow.h"
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HELP_VAL   'h'
#define SLOT_BASE  256 /* getopt_long's value for a long name: SLOT_BASE + its slot */
#define ERR_LEN	   512
#define HELP_WIDTH 70 /* the help's column, as the rows are written (cli-options.h) */

/* An option getopt may return: its row, and the struct that row's offset is in. */
struct slot {
	const struct cli_option *row;
	void *base;
};

struct parser {
	struct slot *slots;
	size_t nslots;
	struct cli_option *made; /* the rows made from settings (setting_row) */
	size_t nmade;
	struct option *longopts; /* one per slot with a long name, --help, the end */
	size_t nlong;
	char *shorts; /* getopt's optstring */
};

/* ---- building getopt's tables from the rows --------------------------------------------- */

static size_t count_rows(const struct cli_option *t)
{
	size_t n = 0;

	for (; t->type != CLI_OPT_END; t++)
		n += t->type == CLI_OPT_GROUP ? count_rows(t->group) : 1;
	return n;
}

static bool taken(const struct parser *p, const struct cli_option *row)
{
	size_t i;

	for (i = 0; i < p->nslots; i++) {
		const struct cli_option *r = p->slots[i].row;

		if ((row->short_name && r->short_name == row->short_name) ||
		    (row->long_name && r->long_name && strcmp(r->long_name, row->long_name) == 0))
			return true;
	}
	return false;
}

/* A CLI_SETTING row as an ordinary one: names, argument and help from the setting's row. */
static void setting_row(const struct cli_option *t, struct cli_option *out)
{
	const struct tally_setting *s = &tally_settings[t->setting];

	*out = *t;
	out->short_name = s->short_name;
	out->long_name = s->option;
	out->arg = s->arg;
	out->help = s->help;
	out->flags = s->bare ? CLI_OPT_ARG_OPTIONAL : 0;
}

static int has_arg(const struct cli_option *row)
{
	if (!row->arg)
		return no_argument;
	return row->flags & CLI_OPT_ARG_OPTIONAL ? optional_argument : required_argument;
}

static void add_rows(struct parser *p, const struct cli_option *rows, char *base)
{
	const struct cli_option *t;

	for (; rows->type != CLI_OPT_END; rows++) {
		t = rows;
		if (t->type == CLI_OPT_GROUP) {
			add_rows(p, t->group, base + t->offset);
			continue;
		}
		if (t->type == CLI_OPT_SETTING) {
			setting_row(t, &p->made[p->nmade]);
			t = &p->made[p->nmade++];
		}
		if (taken(p, t))
			continue; /* the first row with a name wins (cli-options.h) */
		if (t->long_name)
			p->longopts[p->nlong++] = (struct option){t->long_name, has_arg(t), NULL,
								  SLOT_BASE + (int)p->nslots};
		if (t->short_name) {
			size_t n = strlen(p->shorts);

			p->shorts[n++] = (char)t->short_name;
			if (has_arg(t) != no_argument)
				p->shorts[n++] = ':';
			if (has_arg(t) == optional_argument)
				p->shorts[n++] = ':';
			p->shorts[n] = '\0';
		}
		p->slots[p->nslots++] = (struct slot){t, base};
	}
}

static void parser_fini(struct parser *p)
{
	free(p->slots);
	free(p->made);
	free(p->longopts);
	free(p->shorts);
}

static int parser_init(struct parser *p, const struct cli_command *cmd, void *opts)
{
	size_t n = count_rows(cmd->options);

	memset(p, 0, sizeof(*p));
	p->slots = calloc(n + 1, sizeof(*p->slots));
	p->made = calloc(n + 1, sizeof(*p->made));
	p->longopts = calloc(n + 2, sizeof(*p->longopts));
	p->shorts = calloc(3 * n + 8, 1);
	if (!p->slots || !p->made || !p->longopts || !p->shorts) {
		parser_fini(p);
		return -ENOMEM;
	}
	/* '+': stop at the first operand; ':': report a missing argument as ':', not '?' */
	strcpy(p->shorts, cmd->flags & CLI_STOP_AT_OPERAND ? "+:h" : ":h");
	p->longopts[p->nlong++] = (struct option){"help", no_argument, NULL, HELP_VAL};
	add_rows(p, cmd->options, opts);
	return 0;
}

static const struct slot *slot_for(const struct parser *p, int val)
{
	size_t i;

	if (val <= 0)
		return NULL;
	if (val >= SLOT_BASE)
		return (size_t)(val - SLOT_BASE) < p->nslots ? &p->slots[val - SLOT_BASE] : NULL;
	for (i = 0; i < p->nslots; i++)
		if (p->slots[i].row->short_name == val)
			return &p->slots[i];
	return NULL;
}

/* The option as the user wrote it: "-o" or "--output". */
static const char *spelled(const struct slot *s, int val, char *buf, size_t len)
{
	if (val < SLOT_BASE || !s->row->long_name)
		snprintf(buf, len, "-%c", s->row->short_name);
	else
		snprintf(buf, len, "--%s", s->row->long_name);
	return buf;
}

/* ---- values --------------------------------------------------------------------------- */

static uint64_t field_max(const struct cli_option *row)
{
	uint64_t type_max = row->size >= 8 ? UINT64_MAX : (1ull << (8 * row->size)) - 1;

	return row->max < type_max ? row->max : type_max;
}

static void store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t)) {
		uint64_t u = v;

		memcpy(field, &u, sizeof(u));
	} else {
		unsigned u = (unsigned)v;

		memcpy(field, &u, sizeof(u));
	}
}

/* " from A to B", " of at least A" or "", as the bounds say; show turns a bound into text. */
static const char *range_text(const struct cli_option *row, char *buf, size_t len,
			      const char *(*show)(char *, size_t, uint64_t))
{
	char lo[32], hi[32];
	uint64_t max = field_max(row);

	if (max != UINT64_MAX)
		snprintf(buf, len, " from %s to %s", show(lo, sizeof(lo), row->min),
			 show(hi, sizeof(hi), max));
	else if (row->min)
		snprintf(buf, len, " of at least %s", show(lo, sizeof(lo), row->min));
	else
		buf[0] = '\0';
	return buf;
}

static const char *show_uint(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

static int parse_uint(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno ? -EINVAL : 0;
}

/* A parsed number into its field, if it is in range; what it should have been, if not. */
static int set_number(const struct slot *s, const char *arg, char *err, size_t len,
		      int (*parse)(const char *, uint64_t *),
		      const char *(*show)(char *, size_t, uint64_t), const char *what,
		      const char *examples)
{
	const struct cli_option *row = s->row;
	char range[80];
	uint64_t v;

	if (parse(arg, &v) < 0 || v < row->min || v > field_max(row)) {
		snprintf(err, len, "'%s' is not %s%s%s", cli_text(arg), what,
			 range_text(row, range, sizeof(range), show), examples);
		return -EINVAL;
	}
	store_uint((char *)s->base + row->offset, row->size, v);
	return 0;
}

static int set_uint(const struct slot *s, const char *arg, char *err, size_t len)
{
	return set_number(s, arg, err, len, parse_uint, show_uint, "a whole number", "");
}

static const char *show_ns(char *buf, size_t len, uint64_t ns)
{
	return tally_fmt_ns(buf, len, ns);
}

static int parse_seconds(const char *s, uint64_t *out)
{
	return tally_parse_duration(s, 1000000000ull, out);
}

static int set_duration(const struct slot *s, const char *arg, char *err, size_t len)
{
	return set_number(s, arg, err, len, parse_seconds, show_ns, "a duration",
			  " (10, 2.5, 500ms, 20us: seconds unless a unit says)");
}

static int set_size(const struct slot *s, const char *arg, char *err, size_t len)
{
	return set_number(s, arg, err, len, tally_parse_size, show_uint, "a size",
			  " (4096, 64k, 4M, 1G)");
}

static int set_bool(const struct slot *s, const char *arg, char *err, size_t len)
{
	bool yes = true;

	memcpy((char *)s->base + s->row->offset, &yes, sizeof(yes));
	return 0;
}

static int set_string(const struct slot *s, const char *arg, char *err, size_t len)
{
	memcpy((char *)s->base + s->row->offset, &arg, sizeof(arg));
	return 0;
}

/* "'x' is not a, b or c" */
static void say_choices(const char *arg, const char *const *names, char *err, size_t len)
{
	size_t i, at = (size_t)snprintf(err, len, "'%s' is not ", cli_text(arg));

	for (i = 0; names[i] && at < len; i++)
		at += (size_t)snprintf(err + at, len - at, "%s%s",
				       i == 0	      ? ""
				       : names[i + 1] ? ", "
						      : " or ",
				       names[i]);
}

static int set_choice(const struct slot *s, const char *arg, char *err, size_t len)
{
	const char *const *names = s->row->choices;
	int i;

	for (i = 0; names[i]; i++)
		if (strcmp(names[i], arg) == 0) {
			memcpy((char *)s->base + s->row->offset, &i, sizeof(i));
			return 0;
		}
	say_choices(arg, names, err, len);
	return -EINVAL;
}

static int list_add(struct cli_list *l, const char *item, size_t n)
{
	char **slot = tally_array_push(&l->items, &l->n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	if (!(*slot = strndup(item, n))) {
		l->n--; /* the slot stays, empty: the array's capacity is its own */
		return -ENOMEM;
	}
	return 0;
}

static int set_list(const struct slot *s, const char *arg, char *err, size_t len)
{
	struct cli_list *l = (struct cli_list *)((char *)s->base + s->row->offset);
	const char *p = arg;
	int rc;

	for (;;) {
		size_t n = strcspn(p, ",");

		if (n == 0) {
			snprintf(err, len, "'%s' has an empty item", cli_text(arg));
			return -EINVAL;
		}
		if ((rc = list_add(l, p, n)) < 0)
			return rc;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

void cli_list_free(struct cli_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

static int set_callback(const struct slot *s, const char *arg, char *err, size_t len)
{
	return s->row->set(s->base, arg, err, len);
}

/* A setting: its text for the environment, checked as the collector will check it. */
static int set_setting(const struct slot *s, const char *arg, char *err, size_t len)
{
	struct cli_settings *v = (struct cli_settings *)((char *)s->base + s->row->offset);
	enum tally_setting_id id = s->row->setting;

	return tally_setting_option(id, arg, v->number[id], sizeof(v->number[id]), &v->text[id],
				    err, len);
}

static int (*const setters[])(const struct slot *, const char *, char *, size_t) = {
    [CLI_OPT_BOOL] = set_bool,	     [CLI_OPT_STRING] = set_string,
    [CLI_OPT_UINT] = set_uint,	     [CLI_OPT_DURATION] = set_duration,
    [CLI_OPT_SIZE] = set_size,	     [CLI_OPT_CHOICE] = set_choice,
    [CLI_OPT_LIST] = set_list,	     [CLI_OPT_CALLBACK] = set_callback,
    [CLI_OPT_SETTING] = set_setting,
};

/* ---- errors --------------------------------------------------------------------------- */

int cli_usage_error(const char *fmt, ...)
{
	char msg[ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cli_error(TALLY_EXIT_USAGE, "%s; see '%s --help'", msg, tally_progname);
}

/* The long names text (up to '=') begins: "--fo" may be --format or --force. */
static size_t matches(const struct parser *p, const char *text, char *list, size_t len)
{
	size_t n = strcspn(text, "="), i, found = 0, at = 0;

	list[0] = '\0';
	for (i = 0; i < p->nlong; i++)
		if (strncmp(p->longopts[i].name, text, n) == 0 && at < len)
			at += (size_t)snprintf(list + at, len - at, "%s--%s", found++ ? ", " : "",
					       p->longopts[i].name);
	return found;
}

/* getopt said '?': an unknown or ambiguous option, or an argument given to one that takes none. */
static int unknown(const struct parser *p, char **argv)
{
	const char *text = argv[optind - 1];
	const struct slot *s = slot_for(p, optopt);
	char list[256], name[80];

	if (optopt == HELP_VAL)
		return cli_usage_error("option '--help' takes no argument");
	if (s)
		return cli_usage_error("option '%s' takes no argument",
				       spelled(s, optopt, name, sizeof(name)));
	if (optopt)
		return cli_usage_error(
		    isprint(optopt) ? "unknown option '-%c'" : "unknown option (byte %#x)", optopt);
	if (strncmp(text, "--", 2) == 0 && matches(p, text + 2, list, sizeof(list)) > 1)
		return cli_usage_error("option '%.*s' is ambiguous: %s", (int)strcspn(text, "="),
				       cli_text(text), list);
	return cli_usage_error("unknown option '%.*s'", (int)strcspn(text, "="), cli_text(text));
}

static int missing(const struct parser *p)
{
	const struct slot *s = slot_for(p, optopt);
	char name[80];

	if (!s)
		return cli_usage_error("an option needs an argument");
	return cli_usage_error("option '%s' needs an argument (%s)",
			       spelled(s, optopt, name, sizeof(name)), s->row->arg);
}

static int apply(const struct parser *p, int val, const char *arg)
{
	const struct slot *s = slot_for(p, val);
	char err[ERR_LEN] = "", name[80];
	int rc;

	if (!s)
		return cli_error(TALLY_EXIT_ERROR, "option value %d: not in the table (a bug)",
				 val);
	rc = setters[s->row->type](s, arg, err, sizeof(err));
	if (rc == -ENOMEM)
		return cli_error(TALLY_EXIT_ERROR, "out of memory");
	if (rc < 0)
		return cli_usage_error("%s: %s", spelled(s, val, name, sizeof(name)),
				       err[0] ? err : strerror(-rc));
	return 0;
}

/* ---- the two uses of a table ---------------------------------------------------------- */

static void print_row(FILE *out, const char *flags, const char *help)
{
	size_t n = strcspn(help, "\n");

	fprintf(out, "  %-28s %.*s\n", flags, (int)n, help);
	while (help[n]) {
		help += n + 1;
		n = strcspn(help, "\n");
		fprintf(out, "  %-28s %.*s\n", "", (int)n, help);
	}
}

/* "-o, --output FILE", "--json[=FILE]", "-q" */
static const char *flags_text(const struct cli_option *row, char *buf, size_t len)
{
	size_t at = 0;

	if (row->short_name)
		at += (size_t)snprintf(buf, len, "-%c%s", row->short_name,
				       row->long_name ? ", " : "");
	if (row->long_name)
		at += (size_t)snprintf(buf + at, len - at, "--%s", row->long_name);
	if (row->arg && at < len)
		snprintf(buf + at, len - at, row->flags & CLI_OPT_ARG_OPTIONAL ? "[=%s]" : " %s",
			 row->arg);
	return buf;
}

/* A setting's row: its help, with its default and range from the table. */
static void print_setting(FILE *out, const struct cli_option *t)
{
	struct cli_option row;
	char flags[128], help[1024], more[160];

	setting_row(t, &row);
	tally_setting_describe(t->setting, more, sizeof(more));
	/* on the help's last line where it fits, else on a line of its own */
	if (strlen(strrchr(row.help, '\n') ? strrchr(row.help, '\n') + 1 : row.help) +
		strlen(more) >
	    HELP_WIDTH)
		snprintf(help, sizeof(help), "%s\n%s", row.help, more[0] ? more + 1 : "");
	else
		snprintf(help, sizeof(help), "%s%s", row.help, more);
	print_row(out, flags_text(&row, flags, sizeof(flags)), help);
}

/* The rows of t, then each group under its title. */
static void print_table(FILE *out, const struct cli_option *t, bool with_help)
{
	const struct cli_option *row;
	char flags[128];

	for (row = t; row->type != CLI_OPT_END; row++)
		if (row->type == CLI_OPT_SETTING)
			print_setting(out, row);
		else if (row->type != CLI_OPT_GROUP)
			print_row(out, flags_text(row, flags, sizeof(flags)), row->help);
	if (with_help)
		print_row(out, "-h, --help", "show this help");
	for (row = t; row->type != CLI_OPT_END; row++)
		if (row->type == CLI_OPT_GROUP) {
			fprintf(out, "\n%s:\n", row->long_name);
			print_table(out, row->group, false);
		}
}

static void cli_print_help(FILE *out, const struct cli_command *cmd)
{
	fprintf(out, "usage: %s\n\n%s\n\noptions:\n", cmd->usage, cmd->about);
	print_table(out, cmd->options, true);
	if (cmd->more_help)
		cmd->more_help(out);
}

int cli_parse(const struct cli_command *cmd, void *opts, int argc, char **argv, int *first)
{
	struct parser p;
	int c, rc = 0;

	if (parser_init(&p, cmd, opts) < 0)
		return cli_error(TALLY_EXIT_ERROR, "out of memory");
	optind = 0; /* 0, not 1: glibc reads the optstring's '+' again (one process, many tables) */
	opterr = 0; /* the messages are ours */
	while (rc == 0 && (c = getopt_long(argc, argv, p.shorts, p.longopts, NULL)) != -1) {
		if (c == HELP_VAL) {
			cli_print_help(stdout, cmd);
			rc = CLI_HELP_SHOWN;
		} else if (c == '?') {
			rc = unknown(&p, argv);
		} else if (c == ':') {
			rc = missing(&p);
		} else {
			rc = apply(&p, c, optarg);
		}
	}
	*first = optind;
	parser_fini(&p);
	if (rc == 0 && cmd->no_operand && optind >= argc)
		rc = cli_error(TALLY_EXIT_USAGE, "%s", cmd->no_operand);
	return rc;
}
