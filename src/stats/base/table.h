/* SPDX-License-Identifier: MIT */
/*
 * Rows of a report as a table (nsys's column layout), CSV or JSON.  A report is a view: columns
 * and a function giving the cell at (row, column), so that a trace report of millions of rows is
 * written from its compact rows without building strings for all of them first.
 */
#ifndef TALLY_STATS_TABLE_H
#define TALLY_STATS_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"

enum report_format {
	REPORT_FMT_TABLE,
	REPORT_FMT_CSV,
	REPORT_FMT_JSON,
};

enum col_type {
	COL_PCT, /* 87.6 */
	COL_U64, /* 2,527,438,955 */
	COL_I64,
	COL_F1,	 /* 439,631.1 (averages, medians, deviations in ns) */
	COL_F3,	 /* 805.306 (MB) */
	COL_STR, /* left-aligned text */
	/* text that may hold call stacks ("f (a.py:3) <- g (b.py:9) <- ..."): a table cuts them at
	 * a frame, to at most TABLE_STACK_COLS, ending in " <- ..." (CSV and JSON keep them whole)
	 */
	COL_STACK,
};

struct report_col {
	const char *header;
	enum col_type type;
};

enum cell_type {
	CELL_EMPTY,
	CELL_U64,
	CELL_I64,
	CELL_DBL,
	CELL_STR,
};

struct report_cell {
	enum cell_type t;
	uint64_t u;
	int64_t i;
	double d;
	const char *s;
};

struct report_view {
	const char *name;  /* cuda_gpu_kern_sum */
	const char *title; /* CUDA GPU Kernel Summary */
	const struct report_col *cols;
	size_t ncols;
	size_t nrows;
	void (*cell)(const void *ctx, size_t row, size_t col, struct report_cell *c);
	const void *ctx;
	const char *empty; /* said instead of a table when there is no row */
	const char *note;  /* said after the rows (or the empty text), when not NULL */
	/* the table format as blocks, not columns (long text: the diagnosis): each row numbered,
	 * column block_title on its first line, every other column on a line of its own */
	bool blocks;
	size_t block_title;
};

/* A cell's value, for the views' cell functions. */
static inline void set_u(struct report_cell *c, uint64_t v)
{
	c->t = CELL_U64;
	c->u = v;
}

static inline void set_i(struct report_cell *c, int64_t v)
{
	c->t = CELL_I64;
	c->i = v;
}

static inline void set_d(struct report_cell *c, double v)
{
	c->t = CELL_DBL;
	c->d = v;
}

static inline void set_s(struct report_cell *c, const char *s)
{
	c->t = CELL_STR;
	c->s = s;
}

/*
 * Tables are for people: every text cell is escaped for the terminal (common/text.h's one rule)
 * and no column is wider than TABLE_MAX_COLS characters, or TABLE_LAST_MAX_COLS for the last one
 * (where names go, as nsys puts them), or TABLE_STACK_COLS for call stacks; written to a terminal,
 * the last column is cut to what the terminal's width leaves it (TABLE_MIN_LAST_COLS at least).
 * A cut text ends in U+2026 and the table says so.  CSV is data: written as it is to a file,
 * escaped by the same rule when the stream is a terminal.
 */
#define TABLE_MAX_COLS	    40u
#define TABLE_LAST_MAX_COLS 1000u
#define TABLE_STACK_COLS    120u
#define TABLE_MIN_LAST_COLS 24u

/* Write one report; j is the open JSON writer for REPORT_FMT_JSON (an array element). */
void report_view_write(FILE *out, const struct report_view *v, enum report_format fmt,
		       struct tally_json *j);

/* CSV field: quoted (RFC 4180) when it holds a comma, quote, CR or LF. */
void report_csv_field(FILE *out, const char *s);

#endif
