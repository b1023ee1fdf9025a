/* SPDX-License-Identifier: MIT */
/*
 * The database a SQLite export writes (docs/sqlite.md), as both halves of the export write it:
 * sqlite.c (the GPU's rows, the sessions, the verdict) and sqlite-host.c (samples, blocking
 * calls, threads).  Rows go in batches of prepared INSERTs; every string goes into StringIds once,
 * as UTF-8; every value past SQLite's largest integer is clamped and counted; every failure is
 * said once, naming the file.  sqlite.c opens it and calls sqlite-host.c; both call this.
 */
#ifndef TALLY_EXPORT_SQLITE_DB_H
#define TALLY_EXPORT_SQLITE_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "trace-set.h"

/*
 * Rows are inserted BATCH_ROWS at a time, by one INSERT of that many VALUES groups: a statement's
 * run (its cursor opened, the table's end found, the program halted and reset) is then paid once
 * per batch, not once per row, and that is most of an insert's cost.  Values wait here until
 * their batch is full; a last, shorter batch has a statement of its own.
 */
#define BATCH_ROWS 64

struct bval {
	int64_t i;
	double d; /* with is_real: REAL */
	char *s;  /* owned: TEXT; NULL with is_text: NULL */
	int n;
	bool is_text, is_null, is_real;
};

struct batch {
	const char *sql;
	sqlite3_stmt *full; /* BATCH_ROWS rows */
	int ncols, nrows;
	struct bval *v; /* BATCH_ROWS x ncols */
};

/* A StringIds entry. */
struct sq_str {
	char *s;
	int64_t id;
};

struct sq_db {
	sqlite3 *db;
	char *path;
	char *err; /* the caller's, from open */
	size_t errlen;
	uint64_t rows;
	struct batch *strings; /* StringIds' INSERTs */
	struct sq_str *strs;   /* every string given an id, in the order they came */
	size_t nstrs, strs_cap;
	struct tally_map str_index; /* a string's hash -> its index in strs + 1 */
	int64_t next_id;
};

/* err says what failed (and SQLite's message); -EIO. */
int sq_fail(struct sq_db *q, const char *what);
/* SQL run whole (the schema, the enums).  0 or -EIO. */
int sq_exec(struct sq_db *q, const char *sql);
/* A prepared statement with its values bound: run, reset, the row counted.  0 or -EIO. */
int sq_run(struct sq_db *q, sqlite3_stmt *st);
/* Binding one value: an unsigned one (clamped), a string (as UTF-8; NULL: NULL). */
void sq_bind_u(sqlite3_stmt *st, int i, uint64_t v);
void sq_bind_text(sqlite3_stmt *st, int i, const char *s);
/* Values past INT64_MAX stored as INT64_MAX since the last sq_clamped_reset. */
uint64_t sq_clamped(void);
void sq_clamped_reset(void);

/* Batches: opened on an INSERT, a row's values set (column i from 1), the row done (the batch
 * inserted when full), what waits flushed, closed. */
int sq_batch_open(struct sq_db *q, struct batch *b, const char *sql);
void sq_put_i(struct batch *b, int i, int64_t x);
void sq_put_u(struct batch *b, int i, uint64_t x);
void sq_put_real(struct batch *b, int i, double x);
void sq_put_null(struct batch *b, int i);
void sq_put_text(struct batch *b, int i, const char *s);
int sq_row_done(struct sq_db *q, struct batch *b);
int sq_batch_flush(struct sq_db *q, struct batch *b);
void sq_batch_close(struct batch *b);

/* The StringIds id of s, inserting it the first time; -1 on failure. */
int64_t sq_string(struct sq_db *q, const char *s);
void sq_strings_free(struct sq_db *q);

/* nsys's globalTid of a thread of a section: the section number (+1) from bit 48, the pid from
 * bit 24, the tid (each cut to 24 bits), so nsys's decoding works and equal pids stay apart. */
static inline int64_t sq_gtid(const struct report_section *rs, uint32_t pid, uint32_t tid)
{
	return (int64_t)(rs->index + 1) << 48 | (int64_t)(pid & 0xffffff) << 24 |
	       (int64_t)(tid & 0xffffff);
}

#endif
