/* SPDX-License-Identifier: MIT */
/* Report views as nsys-style tables, CSV and JSON; see table.h. */
#include "table.h"
#include "text.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* A text cell of a table, escaped and cut to its column's cap: up to 4 bytes a column. */
struct text_cell {
	char buf[4 * TABLE_LAST_MAX_COLS + 8];
	size_t cols;
	bool cut;
};

/* 1234567 -> "1,234,567" into buf (at least 32 bytes). */
static const char *with_commas(char *buf, uint64_t v, bool negative)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v), i, o = 0;

	if (negative)
		buf[o++] = '-';
	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* A fixed-point double with thousands separators: 439631.06 -> "439,631.1"; one past 2^64 keeps
 * every digit (1.15e20 -> "115,292,150,460,684,697,600.0"), not a wrapped or stopped integer. */
static const char *decimal_commas(char *buf, size_t len, double d, int decimals)
{
	char tmp[64];
	const char *dot;
	size_t n, i, o = 0;

	if (!isfinite(d) || fabs(d) >= 1e30) { /* past 30 digits, or no number: as C says it */
		snprintf(buf, len, "%.6g", d);
		return buf;
	}
	snprintf(tmp, sizeof(tmp), "%.*f", decimals, d);
	if (tmp[0] == '-')
		buf[o++] = '-';
	dot = strchr(tmp, '.');
	n = (size_t)((dot ? dot : tmp + strlen(tmp)) - tmp) - (tmp[0] == '-');
	for (i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i + (tmp[0] == '-')];
	}
	snprintf(buf + o, len - o, "%s", dot ? dot : "");
	return buf;
}

static int col_decimals(enum col_type t)
{
	return t == COL_F3 ? 3 : 1;
}

/* The text of a cell for the table (pretty) or CSV (plain numbers). */
static const char *cell_text(const struct report_col *col, const struct report_cell *c, bool pretty,
			     char *buf, size_t len)
{
	switch (c->t) {
	case CELL_EMPTY:
		return "";
	case CELL_STR:
		return c->s ? c->s : "";
	case CELL_U64:
		if (pretty)
			return with_commas(buf, c->u, false);
		snprintf(buf, len, "%" PRIu64, c->u);
		return buf;
	case CELL_I64:
		if (pretty)
			return with_commas(buf, c->i < 0 ? 0 - (uint64_t)c->i : (uint64_t)c->i,
					   c->i < 0);
		snprintf(buf, len, "%" PRId64, c->i);
		return buf;
	case CELL_DBL:
		if (pretty && col->type != COL_PCT)
			return decimal_commas(buf, len, c->d, col_decimals(col->type));
		if (!isfinite(c->d) || fabs(c->d) >= 1e30)
			snprintf(buf, len, "%.6g", c->d);
		else
			snprintf(buf, len, "%.*f", col_decimals(col->type), c->d);
		return buf;
	}
	return "";
}

static bool is_text(enum col_type t)
{
	return t == COL_STR || t == COL_STACK;
}

/* Display columns of escaped text (text.h: one a code point; escapes are ASCII). */
static size_t text_cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* A stack cut by tally_text_printable_to: cut again at the last whole frame, " <- ..." after it. */
static void frame_cut(struct text_cell *t, size_t cap)
{
	static const char more[] = " <- \xe2\x80\xa6";
	char *p, *at = NULL;

	for (p = strstr(t->buf, " <- "); p; p = strstr(p + 1, " <- ")) {
		*p = '\0';
		if (text_cols(t->buf) + 5 <= cap)
			at = p;
		*p = ' ';
	}
	if (!at)
		return;
	memcpy(at, more, sizeof(more));
	t->cols = text_cols(t->buf);
}

/* The text of a string cell as the table shows it: escaped for the terminal (text.h), at most
 * last_cap wide in the last column (where the names are, as nsys puts them), TABLE_MAX_COLS in any
 * other and TABLE_STACK_COLS for stacks, so that no row is padded to a crafted name's width. */
static void text_cell(const struct report_view *v, size_t k, size_t last_cap, const char *s,
		      struct text_cell *t)
{
	size_t cap = k + 1 == v->ncols ? last_cap : TABLE_MAX_COLS;

	if (v->cols[k].type == COL_STACK && cap > TABLE_STACK_COLS)
		cap = TABLE_STACK_COLS;
	t->cols = tally_text_printable_to(s, cap, t->buf, sizeof(t->buf), &t->cut);
	if (t->cut && v->cols[k].type == COL_STACK)
		frame_cut(t, cap);
}

static void pad(FILE *out, size_t n)
{
	while (n--)
		fputc(' ', out);
}

/* Widths of the columns; returns how many text cells will be cut. */
static size_t table_widths(const struct report_view *v, size_t last_cap, size_t *w,
			   struct text_cell *t)
{
	struct report_cell c;
	char buf[64];
	size_t r, k, cut = 0;

	for (k = 0; k < v->ncols; k++)
		w[k] = strlen(v->cols[k].header);
	for (r = 0; r < v->nrows; r++)
		for (k = 0; k < v->ncols; k++) {
			const char *s;
			size_t n;

			memset(&c, 0, sizeof(c));
			v->cell(v->ctx, r, k, &c);
			s = cell_text(&v->cols[k], &c, true, buf, sizeof(buf));
			if (is_text(v->cols[k].type)) {
				text_cell(v, k, last_cap, s, t);
				n = t->cols;
				cut += t->cut;
			} else {
				n = strlen(s);
			}
			if (n > w[k])
				w[k] = n;
		}
	return cut;
}

static void table_header(FILE *out, const struct report_view *v, const size_t *w)
{
	size_t k;

	for (k = 0; k < v->ncols; k++) {
		size_t h = strlen(v->cols[k].header), left = w[k] - h;
		bool last = k + 1 == v->ncols;

		fputs(k ? "  " : " ", out);
		if (is_text(v->cols[k].type)) { /* centred, as nsys does */
			pad(out, left / 2);
			fputs(v->cols[k].header, out);
			if (!last)
				pad(out, left - left / 2);
		} else {
			pad(out, left);
			fputs(v->cols[k].header, out);
		}
	}
	fputc('\n', out);
	for (k = 0; k < v->ncols; k++) {
		fputs(k ? "  " : " ", out);
		for (size_t i = 0; i < w[k]; i++)
			fputc('-', out);
	}
	fputc('\n', out);
}

/* The width of the terminal out is, or 0 when it is not one. */
static size_t terminal_width(FILE *out)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (!isatty(fileno(out)))
		return 0;
	if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	return env && atoi(env) > 0 ? (size_t)atoi(env) : 80;
}

/* Written to a terminal, the last (text) column gets what the others leave of its width. */
static size_t fit_last(FILE *out, const struct report_view *v, const size_t *w)
{
	size_t width = terminal_width(out), used = 0, k;

	if (!width || !is_text(v->cols[v->ncols - 1].type))
		return TABLE_LAST_MAX_COLS;
	for (k = 0; k + 1 < v->ncols; k++)
		used += w[k] + (k ? 2 : 1);
	used += 2;
	return width > used + TABLE_MIN_LAST_COLS ? width - used : TABLE_MIN_LAST_COLS;
}

static void write_table(FILE *out, const struct report_view *v)
{
	size_t *w = calloc(v->ncols, sizeof(*w)), r, k, cut, last_cap = TABLE_LAST_MAX_COLS;
	struct text_cell *t = malloc(sizeof(*t));
	struct report_cell c;
	char buf[64];

	if (!w || !t)
		goto out;
	cut = table_widths(v, last_cap, w, t);
	if (fit_last(out, v, w) < w[v->ncols - 1]) {
		last_cap = fit_last(out, v, w);
		cut = table_widths(v, last_cap, w, t);
	}
	table_header(out, v, w);
	for (r = 0; r < v->nrows; r++) {
		for (k = 0; k < v->ncols; k++) {
			const char *s;

			memset(&c, 0, sizeof(c));
			v->cell(v->ctx, r, k, &c);
			s = cell_text(&v->cols[k], &c, true, buf, sizeof(buf));
			fputs(k ? "  " : " ", out);
			if (is_text(v->cols[k].type)) {
				text_cell(v, k, last_cap, s, t);
				fputs(t->buf, out);
				if (k + 1 < v->ncols)
					pad(out, w[k] - t->cols);
			} else {
				pad(out, w[k] - strlen(s));
				fputs(s, out);
			}
		}
		fputc('\n', out);
	}
	if (cut)
		fprintf(
		    out,
		    "\n (%zu text(s) cut, ending in \"\xe2\x80\xa6\": a table's columns are at "
		    "most %u characters wide, %u for call stacks, %zu for the last; -f csv or -f "
		    "json has the whole text)\n",
		    cut, TABLE_MAX_COLS, TABLE_STACK_COLS, last_cap);
out:
	free(t);
	free(w);
}

/* Text of a block, under the one escaping rule (common/text.h); not cut: a block is a line of
 * its own. */
static void put_text(FILE *out, const char *s)
{
	fputs(tally_text_shown(s), out);
}

/* Rows as numbered blocks: for text too long for columns. */
static void write_blocks(FILE *out, const struct report_view *v)
{
	size_t r, k, w = 0;
	struct report_cell c;
	char buf[64];

	for (k = 0; k < v->ncols; k++)
		if (k != v->block_title && strlen(v->cols[k].header) > w)
			w = strlen(v->cols[k].header);
	for (r = 0; r < v->nrows; r++) {
		memset(&c, 0, sizeof(c));
		v->cell(v->ctx, r, v->block_title, &c);
		fprintf(out, "%s %zu. ", r ? "\n" : "", r + 1);
		put_text(out, cell_text(&v->cols[v->block_title], &c, true, buf, sizeof(buf)));
		fputc('\n', out);
		for (k = 0; k < v->ncols; k++) {
			const char *t;

			if (k == v->block_title)
				continue;
			memset(&c, 0, sizeof(c));
			v->cell(v->ctx, r, k, &c);
			t = cell_text(&v->cols[k], &c, true, buf, sizeof(buf));
			if (!*t)
				continue;
			fprintf(out, "     %s", v->cols[k].header);
			pad(out, w - strlen(v->cols[k].header) + 2);
			put_text(out, t);
			fputc('\n', out);
		}
	}
}

void report_csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

/* A CSV field to a terminal: the same text, escaped (CSV to a file stays data). */
static void csv_field_for(FILE *out, const char *s, bool terminal)
{
	char *t;

	if (!terminal) {
		report_csv_field(out, s);
		return;
	}
	t = tally_text_printable(s);
	report_csv_field(out, t ? t : "[out of memory]");
	free(t);
}

static void write_csv(FILE *out, const struct report_view *v)
{
	bool terminal = isatty(fileno(out));
	struct report_cell c;
	char buf[64];
	size_t r, k;

	for (k = 0; k < v->ncols; k++) {
		fputs(k ? "," : "", out);
		report_csv_field(out, v->cols[k].header);
	}
	fputc('\n', out);
	for (r = 0; r < v->nrows; r++) {
		for (k = 0; k < v->ncols; k++) {
			memset(&c, 0, sizeof(c));
			v->cell(v->ctx, r, k, &c);
			fputs(k ? "," : "", out);
			csv_field_for(out, cell_text(&v->cols[k], &c, false, buf, sizeof(buf)),
				      terminal);
		}
		fputc('\n', out);
	}
}

static void write_json(const struct report_view *v, struct tally_json *j)
{
	struct report_cell c;
	size_t r, k;

	tally_json_object_begin(j);
	tally_json_field_string(j, "name", v->name);
	tally_json_field_string(j, "title", v->title);
	if (v->note)
		tally_json_field_string(j, "note", v->note);
	tally_json_name(j, "rows");
	tally_json_array_begin(j);
	for (r = 0; r < v->nrows; r++) {
		tally_json_object_begin(j);
		for (k = 0; k < v->ncols; k++) {
			memset(&c, 0, sizeof(c));
			v->cell(v->ctx, r, k, &c);
			tally_json_name(j, v->cols[k].header);
			switch (c.t) {
			case CELL_EMPTY:
				tally_json_null(j);
				break;
			case CELL_U64:
				tally_json_uint(j, c.u);
				break;
			case CELL_I64:
				tally_json_int(j, c.i);
				break;
			case CELL_DBL:
				tally_json_double(j, c.d);
				break;
			case CELL_STR:
				tally_json_string(j, c.s ? c.s : "");
				break;
			}
		}
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_object_end(j);
}

void report_view_write(FILE *out, const struct report_view *v, enum report_format fmt,
		       struct tally_json *j)
{
	switch (fmt) {
	case REPORT_FMT_TABLE:
		fprintf(out, "\n ** %s (%s):\n\n", v->title, v->name);
		if (v->nrows == 0)
			fprintf(out, v->blocks ? " %s\n" : " SKIPPED: %s\n", v->empty);
		else if (v->blocks)
			write_blocks(out, v);
		else
			write_table(out, v);
		if (v->note)
			fprintf(out, "\n NOTE: %s\n", v->note);
		break;
	case REPORT_FMT_CSV:
		fprintf(out, "\n# %s: %s\n", v->name, v->title);
		if (v->note)
			fprintf(out, "# note: %s\n", v->note);
		write_csv(out, v);
		break;
	case REPORT_FMT_JSON:
		write_json(v, j);
		break;
	}
}
