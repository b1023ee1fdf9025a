/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer (after bpftool's json_writer): objects and arrays nest, commas
 * and indentation are handled here, and strings are always escaped so that the output parses for
 * any input - quotes, backslashes, control characters and invalid UTF-8 (replaced by U+FFFD).
 */
#ifndef TALLY_COMMON_JSON_H
#define TALLY_COMMON_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TALLY_JSON_MAX_DEPTH 32

struct tally_json {
	FILE *out;
	bool pretty;
	unsigned depth;
	bool first[TALLY_JSON_MAX_DEPTH]; /* nothing written yet at this depth */
	bool after_name;		  /* a name was written: the value needs no comma */
};

void tally_json_init(struct tally_json *j, FILE *out, bool pretty);
void tally_json_object_begin(struct tally_json *j);
void tally_json_object_end(struct tally_json *j);
void tally_json_array_begin(struct tally_json *j);
void tally_json_array_end(struct tally_json *j);
void tally_json_name(struct tally_json *j, const char *name);
void tally_json_string(struct tally_json *j, const char *s);
void tally_json_uint(struct tally_json *j, uint64_t v);
void tally_json_int(struct tally_json *j, int64_t v);
void tally_json_double(struct tally_json *j, double v);
/* A number of thousandths, as the shortest decimal: 2125 is 2.125, 1500 is 1.5, 0 is 0 (the same
 * double to a reader as thousandths / 1000.0, in a few bytes and without printf's float path). */
void tally_json_milli(struct tally_json *j, int64_t thousandths);
void tally_json_null(struct tally_json *j);
/* Ends the document with a newline. */
void tally_json_finish(struct tally_json *j);

/* name + value in one call */
void tally_json_field_string(struct tally_json *j, const char *name, const char *s);
void tally_json_field_uint(struct tally_json *j, const char *name, uint64_t v);
void tally_json_field_int(struct tally_json *j, const char *name, int64_t v);
void tally_json_field_double(struct tally_json *j, const char *name, double v);
void tally_json_field_bool(struct tally_json *j, const char *name, bool v);

/* Write s as the body of a JSON string (no quotes), escaped.  Exposed for fast exporters. */
void tally_json_escape(FILE *out, const char *s, size_t len);

#endif
