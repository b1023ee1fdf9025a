/* SPDX-License-Identifier: MIT */
/* Streaming JSON writer; see json.h. */
#include "json.h"
#include "text.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void tally_json_init(struct tally_json *j, FILE *out, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->pretty = pretty;
	j->first[0] = true;
}

static void newline_indent(struct tally_json *j)
{
	unsigned i;

	if (!j->pretty)
		return;
	fputc('\n', j->out);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Before any value or name: a comma unless first at this depth, then the indentation. */
static void separate(struct tally_json *j)
{
	if (j->after_name) {
		j->after_name = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (j->depth)
		newline_indent(j);
}

static void open_nested(struct tally_json *j, char c)
{
	separate(j);
	fputc(c, j->out);
	if (j->depth + 1 < TALLY_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_nested(struct tally_json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth)
		j->depth--;
	if (!empty)
		newline_indent(j);
	fputc(c, j->out);
}

void tally_json_object_begin(struct tally_json *j)
{
	open_nested(j, '{');
}

void tally_json_object_end(struct tally_json *j)
{
	close_nested(j, '}');
}

void tally_json_array_begin(struct tally_json *j)
{
	open_nested(j, '[');
}

void tally_json_array_end(struct tally_json *j)
{
	close_nested(j, ']');
}

void tally_json_escape(FILE *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t u;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			run++;
			continue;
		}
		fwrite(s + i - run, 1, run, out);
		run = 0;
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
			i++;
		} else if (c < 0x20) {
			static const char esc[] = "btn?fr";

			if (c >= '\b' && c <= '\r' && c != 0x0b)
				fprintf(out, "\\%c", esc[c - '\b']);
			else
				fprintf(out, "\\u%04x", c);
			i++;
		} else if (c == 0x7f) {
			fputs("\\u007f", out);
			i++;
		} else if ((u = tally_text_utf8_seq(s + i, len - i)) != 0) {
			/* C1 and the bidirectional controls (text.h): the same text, but never a
			 * raw control for a terminal that shows the JSON */
			if (tally_text_is_control(s + i, u))
				fprintf(out, "\\u%04x", tally_text_code_point(s + i, u));
			else
				fwrite(s + i, 1, u, out);
			i += u;
		} else {
			fputs("\\ufffd", out);
			i++;
		}
	}
	fwrite(s + i - run, 1, run, out);
}

void tally_json_name(struct tally_json *j, const char *name)
{
	separate(j);
	fputc('"', j->out);
	tally_json_escape(j->out, name, strlen(name));
	fputs(j->pretty ? "\": " : "\":", j->out);
	j->after_name = true;
}

static void tally_json_string_len(struct tally_json *j, const char *s, size_t len)
{
	separate(j);
	fputc('"', j->out);
	tally_json_escape(j->out, s, len);
	fputc('"', j->out);
}

void tally_json_string(struct tally_json *j, const char *s)
{
	if (!s) {
		tally_json_null(j);
		return;
	}
	tally_json_string_len(j, s, strlen(s));
}

void tally_json_uint(struct tally_json *j, uint64_t v)
{
	separate(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void tally_json_int(struct tally_json *j, int64_t v)
{
	separate(j);
	fprintf(j->out, "%lld", (long long)v);
}

void tally_json_double(struct tally_json *j, double v)
{
	separate(j);
	if (isfinite(v))
		fprintf(j->out, "%.17g", v);
	else
		fputs("null", j->out); /* JSON has no NaN or infinity */
}

void tally_json_milli(struct tally_json *j, int64_t thousandths)
{
	uint64_t a = thousandths < 0 ? -(uint64_t)thousandths : (uint64_t)thousandths;
	unsigned frac = (unsigned)(a % 1000);
	char digits[8];

	separate(j);
	if (!thousandths) { /* most of a queue curve: no printf for it */
		fputc('0', j->out);
		return;
	}
	fprintf(j->out, "%s%" PRIu64, thousandths < 0 ? "-" : "", a / 1000);
	if (!frac)
		return;
	snprintf(digits, sizeof(digits), ".%03u", frac);
	digits[frac % 10 ? 4 : frac % 100 ? 3 : 2] = '\0'; /* no trailing zeros */
	fputs(digits, j->out);
}

static void tally_json_bool(struct tally_json *j, bool v)
{
	separate(j);
	fputs(v ? "true" : "false", j->out);
}

void tally_json_null(struct tally_json *j)
{
	separate(j);
	fputs("null", j->out);
}

void tally_json_finish(struct tally_json *j)
{
	fputc('\n', j->out);
}

void tally_json_field_string(struct tally_json *j, const char *name, const char *s)
{
	tally_json_name(j, name);
	tally_json_string(j, s);
}

void tally_json_field_uint(struct tally_json *j, const char *name, uint64_t v)
{
	tally_json_name(j, name);
	tally_json_uint(j, v);
}

void tally_json_field_int(struct tally_json *j, const char *name, int64_t v)
{
	tally_json_name(j, name);
	tally_json_int(j, v);
}

void tally_json_field_double(struct tally_json *j, const char *name, double v)
{
	tally_json_name(j, name);
	tally_json_double(j, v);
}

void tally_json_field_bool(struct tally_json *j, const char *name, bool v)
{
	tally_json_name(j, name);
	tally_json_bool(j, v);
}
