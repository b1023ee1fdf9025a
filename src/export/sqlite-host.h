/* SPDX-License-Identifier: MIT */
/*
 * The host in the SQLite export (docs/sqlite.md, "Host samples and blocking calls"), in nsys's
 * shapes: samples as COMPOSITE_EVENTS with their frames in SAMPLING_CALLCHAINS (one chain per
 * sample, as nsys writes them), blocking calls as OSRT_API, the threads' names as ThreadNames,
 * and ENUM_SAMPLING_THREAD_STATE.  sqlite.c owns the database and calls this, a lower file that
 * never calls back: both write through sqlite-db.h.
 */
#ifndef TALLY_EXPORT_SQLITE_HOST_H
#define TALLY_EXPORT_SQLITE_HOST_H

#include <sqlite3.h>
#include <stdint.h>

#include "sqlite-db.h"
#include "trace-set.h"

extern const char sqlite_host_schema[];
/* --index: made after the load, as the host rows come last */
extern const char sqlite_host_indexes[];

struct sq_host;

/* After the schema: prepares the statements.  NULL when memory ran out or SQLite refused. */
struct sq_host *sq_host_open(struct sq_db *q);
void sq_host_close(struct sq_host *h);
/* OSRT and CPU_SAMPLE records (others are ignored).  0 or -errno. */
int sq_host_records(struct sq_host *h, struct sq_db *q, struct report_section *rs,
		    const struct tally_record *r);
/* At the end: ThreadNames of every section, the enum. */
int sq_host_finish(struct sq_host *h, struct sq_db *q, const struct report_set *set);

#endif
