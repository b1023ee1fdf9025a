/* SPDX-License-Identifier: MIT */
/*
 * The host in the SQLite export (docs/sqlite.md, "Host samples and blocking calls"), in nsys's
 * shapes: samples as COMPOSITE_EVENTS with their frames in SAMPLING_CALLCHAINS (one chain per
 * sample, as nsys writes them), blocking calls as OSRT_API, the threads' names as ThreadNames,
 * and ENUM_SAMPLING_THREAD_STATE.  sqlite.c owns the database; this writes through the calls
 * below.
 */
#ifndef TALLY_EXPORT_SQLITE_HOST_H
#define TALLY_EXPORT_SQLITE_HOST_H

#include <sqlite3.h>
#include <stdint.h>

#include "trace-set.h"

struct sq;
/* sqlite.c: the database, a prepared statement run and reset, a StringIds id, a globalTid. */
sqlite3 *sq_db(struct sq *q);
int sq_run(struct sq *q, sqlite3_stmt *st);
int64_t sq_string(struct sq *q, const char *s);
int64_t sq_gtid(struct sq *q, const struct report_section *rs, uint32_t pid, uint32_t tid);
int sq_error(struct sq *q, const char *what);

extern const char sqlite_host_schema[];
/* --index: made after the load, as the host rows come last */
extern const char sqlite_host_indexes[];

struct sq_host;

/* After the schema: prepares the statements.  NULL when memory ran out or SQLite refused. */
struct sq_host *sq_host_open(struct sq *q);
void sq_host_close(struct sq_host *h);
/* OSRT and CPU_SAMPLE records (others are ignored).  0 or -errno. */
int sq_host_records(struct sq_host *h, struct sq *q, struct report_section *rs,
		    const struct tally_record *r);
/* At the end: ThreadNames of every section, the enum. */
int sq_host_finish(struct sq_host *h, struct sq *q, const struct report_set *set);

#endif
