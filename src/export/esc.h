/* SPDX-License-Identifier: MIT */
/*
 * The JSON exporters' strings, escaped once per string id of a section and copied after: a trace
 * names a few thousand kernels and launches them millions of times.
 */
#ifndef TALLY_EXPORT_ESC_H
#define TALLY_EXPORT_ESC_H

#include <stdbool.h>
#include <stdint.h>

#include "trace-set.h"

/* A name longer than ESC_ROW_MAX bytes is written whole the first time it is asked for and cut
 * there the other times (cut): a long name repeated over millions of rows must not make an export
 * thousands of times its trace. */
#define ESC_ROW_MAX 1024u

struct esc {
	char *s;
	uint32_t len;
	bool written;	 /* the whole name went out once */
	struct esc *cut; /* the name cut at ESC_ROW_MAX, when it is longer */
};

/* One section's strings by id: as they are, and kernel names demangled. */
struct esc_names {
	struct esc *raw, *kern;
	uint32_t nraw, nkern;
};

/* The escaped form of string id of rs (made the first time); kernel names demangled first, and cut
 * at ESC_ROW_MAX after the first time.  An id the section never defined is "[string lost]"; out
 * of memory, "". */
const struct esc *esc_name(struct esc_names *n, struct report_section *rs, uint32_t id,
			   bool kernel);
void esc_names_free(struct esc_names *n);

#endif
