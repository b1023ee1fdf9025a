/* SPDX-License-Identifier: MIT */
/* The database a SQLite export writes, for both its halves; see sqlite-db.h. */
#include "sqlite-db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "text.h"

int sq_fail(struct sq_db *q, const char *what)
{
	snprintf(q->err, q->errlen, "%s: %s: %s", q->path, what,
		 q->db ? sqlite3_errmsg(q->db) : "cannot open");
	return -EIO;
}

int sq_exec(struct sq_db *q, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	snprintf(q->err, q->errlen, "%s: %s", q->path, msg ? msg : "sqlite error");
	sqlite3_free(msg);
	return -EIO;
}

/* Bind ints (values), then run and reset. */
int sq_run(struct sq_db *q, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sq_fail(q, "insert");
	q->rows++;
	return 0;
}

/* Values past SQLite's largest integer (a time past 2^63 ns, a byte count past 2^63), stored as
 * that integer rather than as a negative one, and counted (export_stats.clamped). */
static uint64_t clamped;

static int64_t clamp_u(uint64_t v)
{
	if (v > INT64_MAX) {
		clamped++;
		v = INT64_MAX;
	}
	return (int64_t)v;
}

void sq_bind_u(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, clamp_u(v));
}

/* ---- batches ----------------------------------------------------------------------------- */

static struct bval *b_at(struct batch *b, int i)
{
	struct bval *v = &b->v[b->nrows * b->ncols + i - 1];

	free(v->s);
	memset(v, 0, sizeof(*v));
	return v;
}

void sq_put_i(struct batch *b, int i, int64_t x)
{
	b_at(b, i)->i = x;
}

void sq_put_u(struct batch *b, int i, uint64_t x)
{
	b_at(b, i)->i = clamp_u(x);
}

void sq_put_real(struct batch *b, int i, double x)
{
	struct bval *v = b_at(b, i);

	v->d = x;
	v->is_real = true;
}

void sq_put_null(struct batch *b, int i)
{
	b_at(b, i)->is_null = true;
}

/* TEXT as valid UTF-8 (see bind_text); out of memory stores NULL. */
void sq_put_text(struct batch *b, int i, const char *s)
{
	struct bval *v = b_at(b, i);
	size_t len, n;

	if (!s) {
		v->is_null = true;
		return;
	}
	len = strlen(s);
	v->s = tally_text_is_utf8(s, len) ? strdup(s) : tally_text_utf8(s, len, &n);
	v->is_text = v->s != NULL;
	v->is_null = v->s == NULL;
	v->n = v->s ? (int)strlen(v->s) : 0;
}

/* "INSERT ... VALUES (?,..)" made into "... VALUES (?,..),(?,..)..." for rows rows. */
static char *batch_sql(const char *sql, int rows)
{
	const char *values = strstr(sql, "VALUES ");
	size_t head = (size_t)(values + 7 - sql), group = strlen(values + 7);
	char *out = malloc(head + (size_t)rows * (group + 1) + 1), *p;
	int r;

	if (!out)
		return NULL;
	memcpy(out, sql, head);
	p = out + head;
	for (r = 0; r < rows; r++) {
		if (r)
			*p++ = ',';
		memcpy(p, values + 7, group);
		p += group;
	}
	*p = '\0';
	return out;
}

static sqlite3_stmt *batch_prepare(struct sq_db *q, const char *sql, int rows)
{
	char *text = batch_sql(sql, rows);
	sqlite3_stmt *st = NULL;

	if (text && sqlite3_prepare_v2(q->db, text, -1, &st, NULL) != SQLITE_OK)
		st = NULL;
	free(text);
	return st;
}

int sq_batch_open(struct sq_db *q, struct batch *b, const char *sql)
{
	const char *p;

	b->sql = sql;
	for (p = strstr(sql, "VALUES"); *p; p++)
		b->ncols += *p == '?';
	b->v = calloc((size_t)BATCH_ROWS * (size_t)b->ncols, sizeof(*b->v));
	b->full = batch_prepare(q, sql, BATCH_ROWS);
	return b->v && b->full ? 0 : sq_fail(q, sql);
}

/* Insert the rows waiting in b. */
int sq_batch_flush(struct sq_db *q, struct batch *b)
{
	sqlite3_stmt *st = b->nrows == BATCH_ROWS ? b->full : batch_prepare(q, b->sql, b->nrows);
	int k, n = b->nrows * b->ncols, rc;

	if (!b->nrows)
		return 0;
	if (!st)
		return sq_fail(q, b->sql);
	for (k = 0; k < n; k++) {
		struct bval *v = &b->v[k];

		if (v->is_null)
			sqlite3_bind_null(st, k + 1);
		else if (v->is_text)
			sqlite3_bind_text(st, k + 1, v->s, v->n, SQLITE_TRANSIENT);
		else if (v->is_real)
			sqlite3_bind_double(st, k + 1, v->d);
		else
			sqlite3_bind_int64(st, k + 1, v->i);
	}
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (st != b->full)
		sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sq_fail(q, "insert");
	q->rows += (uint64_t)b->nrows;
	b->nrows = 0;
	return 0;
}

/* The row being bound in b is complete. */
int sq_row_done(struct sq_db *q, struct batch *b)
{
	return ++b->nrows == BATCH_ROWS ? sq_batch_flush(q, b) : 0;
}

void sq_batch_close(struct batch *b)
{
	int k;

	for (k = 0; b->v && k < BATCH_ROWS * b->ncols; k++)
		free(b->v[k].s);
	free(b->v);
	sqlite3_finalize(b->full);
	memset(b, 0, sizeof(*b));
}

uint64_t sq_clamped(void)
{
	return clamped;
}

void sq_clamped_reset(void)
{
	clamped = 0;
}

/* ---- strings ----------------------------------------------------------------------------- */

/*
 * Every TEXT value goes through here: SQLite stores whatever bytes it is given, and Python's
 * sqlite3 (and others) fail on a row that is not UTF-8, so a string from the trace that is not
 * (a crafted one, an NVTX message or command line in another encoding) is stored with each bad
 * byte as U+FFFD.
 */
void sq_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	size_t len, n;
	char *fixed;

	if (!s) {
		sqlite3_bind_null(st, i);
		return;
	}
	len = strlen(s);
	if (tally_text_is_utf8(s, len)) {
		sqlite3_bind_text(st, i, s, (int)len, SQLITE_TRANSIENT);
		return;
	}
	fixed = tally_text_utf8(s, len, &n);
	if (fixed)
		sqlite3_bind_text(st, i, fixed, (int)n, free);
	else
		sqlite3_bind_null(st, i);
}

struct str_lookup {
	const struct sq_db *q;
	const char *s;
};

static bool same_string(void *ctx, uint32_t value)
{
	const struct str_lookup *l = ctx;

	return strcmp(l->q->strs[value - 1].s, l->s) == 0;
}

int64_t sq_string(struct sq_db *q, const char *s)
{
	struct str_lookup l = {q, s};
	uint64_t h = tally_hash_str(s);
	uint32_t found = tally_map_find(&q->str_index, h, same_string, &l);
	struct sq_str *e;

	if (found)
		return q->strs[found - 1].id;
	if (q->nstrs >= UINT32_MAX - 1 ||
	    !tally_grow_in(&q->strs, &q->strs_cap, q->nstrs + 1, sizeof(*q->strs)))
		return -1;
	e = &q->strs[q->nstrs];
	if (!(e->s = strdup(s)))
		return -1;
	if (tally_map_add(&q->str_index, h, (uint32_t)q->nstrs + 1) < 0) {
		free(e->s);
		return -1;
	}
	e->id = q->next_id++;
	q->nstrs++;
	sq_put_i(q->strings, 1, e->id);
	sq_put_text(q->strings, 2, s);
	return sq_row_done(q, q->strings) < 0 ? -1 : e->id;
}

void sq_strings_free(struct sq_db *q)
{
	size_t i;

	for (i = 0; i < q->nstrs; i++)
		free(q->strs[i].s);
	free(q->strs);
	tally_map_fini(&q->str_index);
	q->strs = NULL;
	q->nstrs = q->strs_cap = 0;
}
