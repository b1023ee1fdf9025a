/* SPDX-License-Identifier: MIT */
/* Host samples and blocking calls in the SQLite export; see sqlite-host.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite-host.h"
#include "stacks.h"

/* nsys's, with tally's own columns after them (the kind of sample, a torn one, the C library's
 * errno and the object waited on, Python frames' file and line). */
const char sqlite_host_schema[] =
    "CREATE TABLE COMPOSITE_EVENTS (id INTEGER NOT NULL PRIMARY KEY, start INTEGER NOT NULL,"
    " cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL,"
    " tallySource INTEGER, tallyTorn INTEGER);\n"
    "CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL,"
    " module INTEGER NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER,"
    " specialEntry INTEGER, originalIP INTEGER, unwindMethod INTEGER,"
    " stackDepth INTEGER NOT NULL, frameKind INTEGER, sourceFile INTEGER, line INTEGER,"
    " PRIMARY KEY (id, stackDepth));\n"
    "CREATE TABLE ENUM_SAMPLING_THREAD_STATE (id INTEGER NOT NULL PRIMARY KEY, name TEXT,"
    " label TEXT);\n"
    "CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL,"
    " returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER,"
    " tallyErrno INTEGER, tallyObject INTEGER);\n"
    "CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);\n";

const char sqlite_host_indexes[] =
    "CREATE INDEX sampling_callchains_id ON SAMPLING_CALLCHAINS (id, stackDepth);"
    " CREATE INDEX composite_tid_start ON COMPOSITE_EVENTS (globalTid, start);"
    " CREATE INDEX osrt_tid_start ON OSRT_API (globalTid, start);";

#define NSYS_EVENT_CLASS_OSRT 27 /* TRACE_PROCESS_EVENT_OS_RUNTIME */

enum { H_SAMPLE, H_FRAME, H_OSRT, H_THREAD, H_COUNT };

static const char *const host_sql[H_COUNT] = {
    [H_SAMPLE] = "INSERT INTO COMPOSITE_EVENTS VALUES (?,?,NULL,?,?,0,?,?)",
    [H_FRAME] = "INSERT INTO SAMPLING_CALLCHAINS VALUES (?,?,?,0,0,?,0,?,NULL,?,?,?,?)",
    [H_OSRT] = "INSERT INTO OSRT_API VALUES (?,?,?,?,?,?,0,NULL,?,?)",
    [H_THREAD] = "INSERT INTO ThreadNames VALUES (?,NULL,?)",
};

struct sq_host {
	sqlite3_stmt *st[H_COUNT];
	int64_t next_sample;
};

struct sq_host *sq_host_open(struct sq_db *q)
{
	struct sq_host *h = calloc(1, sizeof(*h));
	unsigned i;

	if (!h)
		return NULL;
	for (i = 0; i < H_COUNT; i++)
		if (sqlite3_prepare_v2(q->db, host_sql[i], -1, &h->st[i], NULL) != SQLITE_OK) {
			sq_fail(q, host_sql[i]);
			sq_host_close(h);
			return NULL;
		}
	h->next_sample = 1;
	return h;
}

void sq_host_close(struct sq_host *h)
{
	unsigned i;

	if (!h)
		return;
	for (i = 0; i < H_COUNT; i++)
		sqlite3_finalize(h->st[i]);
	free(h);
}

/* The thread a host record is filed under: its CUPTI id where THREADS ties them (the id its API
 * calls have in CUPTI_ACTIVITY_KIND_RUNTIME), else its kernel tid. */
static uint32_t host_thread(const struct report_section *rs, uint32_t tid)
{
	const struct tally_thread *t = tally_section_thread(rs->s, tid);

	return t && t->pthread_id ? (uint32_t)t->pthread_id : tid;
}

/* nsys's ENUM_SAMPLING_THREAD_STATE ids for tally's thread states (format 1.3). */
static int nsys_state(unsigned s)
{
	static const int map[] = {0, 1, 3, 2, 4}; /* unknown, R, D, S, T */

	return s < sizeof(map) / sizeof(map[0]) ? map[s] : 0;
}

static int frame_row(struct sq_host *h, struct sq_db *q, struct report_section *rs, int64_t id,
		     uint32_t depth, uint32_t frame_id)
{
	sqlite3_stmt *st = h->st[H_FRAME];
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame_id);
	const struct tally_module *m = f ? tally_module_of(&rs->s->stacks, f->pc) : NULL;
	bool python = f && f->type == TALLY_FRAME_PYTHON;
	int64_t sym = sq_string(q, python ? f->func : report_frame_label(rs, frame_id));
	int64_t mod = sq_string(q, python ? f->file : m ? m->path : "");

	if (sym < 0 || mod < 0)
		return sq_fail(q, "string table");
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, sym);
	sqlite3_bind_int64(st, 3, mod);
	sqlite3_bind_int(st, 4, !f || (!python && !m));
	sqlite3_bind_int64(st, 5, f ? (sqlite3_int64)f->pc : 0);
	sqlite3_bind_int(st, 6, (int)depth);
	sqlite3_bind_int(st, 7, f ? f->type : 0);
	if (python)
		sqlite3_bind_int64(st, 8, mod);
	else
		sqlite3_bind_null(st, 8);
	sqlite3_bind_int(st, 9, python ? (int)f->line : 0);
	return sq_run(q, st);
}

static int sample_row(struct sq_host *h, struct sq_db *q, struct report_section *rs,
		      const struct tally_record *r)
{
	sqlite3_stmt *st = h->st[H_SAMPLE];
	int64_t id = h->next_sample++;
	bool torn = (r->flags & TALLY_REC_TORN) != 0;
	const struct tally_stack *stk = torn ? NULL : tally_stack_get(&rs->s->stacks, r->stack_id);
	uint32_t pid = r->process_id ? r->process_id : (uint32_t)rs->s->pid, i;
	int rc;

	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)report_time(rs, r->start));
	sqlite3_bind_int(st, 3, nsys_state(r->value));
	sqlite3_bind_int64(st, 4, sq_gtid(rs, pid, host_thread(rs, r->thread_id)));
	sqlite3_bind_int(st, 5, (int)r->subkind);
	sqlite3_bind_int(st, 6, torn);
	rc = sq_run(q, st);
	for (i = 0; rc == 0 && stk && i < stk->nframes; i++)
		rc = frame_row(h, q, rs, id, i, stk->frames[i]);
	return rc;
}

static int osrt_row(struct sq_host *h, struct sq_db *q, struct report_section *rs,
		    const struct tally_record *r)
{
	sqlite3_stmt *st = h->st[H_OSRT];
	const char *call = tally_osrt_call_name(r->cbid);
	int64_t name = sq_string(q, call ? call : report_string(rs, r->name_id));
	uint32_t pid = r->process_id ? r->process_id : (uint32_t)rs->s->pid;

	if (name < 0)
		return sq_fail(q, "string table");
	sqlite3_bind_int64(st, 1, (sqlite3_int64)report_time(rs, r->start));
	sqlite3_bind_int64(st, 2, (sqlite3_int64)report_time(rs, r->end));
	sqlite3_bind_int(st, 3, NSYS_EVENT_CLASS_OSRT);
	sqlite3_bind_int64(st, 4, sq_gtid(rs, pid, host_thread(rs, r->thread_id)));
	sqlite3_bind_int64(st, 5, name);
	sqlite3_bind_int64(st, 6, (int32_t)r->value);
	sqlite3_bind_int(st, 7, (int)r->subkind);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)r->address);
	return sq_run(q, st);
}

int sq_host_records(struct sq_host *h, struct sq_db *q, struct report_section *rs,
		    const struct tally_record *r)
{
	if (r->kind == TALLY_KIND_CPU_SAMPLE)
		return sample_row(h, q, rs, r);
	if (r->kind == TALLY_KIND_OSRT)
		return osrt_row(h, q, rs, r);
	return 0;
}

static int thread_names(struct sq_host *h, struct sq_db *q, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->nthreads && rc == 0; i++) {
		const struct tally_thread *t = &s->threads[i];
		int64_t name;

		if (tally_section_thread(s, t->tid) != t || !t->name[0])
			continue; /* the latest entry of each thread, and only a name */
		if ((name = sq_string(q, t->name)) < 0)
			return sq_fail(q, "string table");
		sqlite3_bind_int64(h->st[H_THREAD], 1, name);
		sqlite3_bind_int64(h->st[H_THREAD], 2,
				   sq_gtid(rs, (uint32_t)s->pid, host_thread(rs, t->tid)));
		rc = sq_run(q, h->st[H_THREAD]);
	}
	return rc;
}

int sq_host_finish(struct sq_host *h, struct sq_db *q, const struct report_set *set)
{
	static const char enums[] =
	    "INSERT INTO ENUM_SAMPLING_THREAD_STATE VALUES (0,'Unknown','Unknown'),"
	    " (1,'Running','Running'), (2,'Interruptible','Interruptible'),"
	    " (3,'Uninterruptible','Uninterruptible'), (4,'Stopped','Stopped');"
	    " INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (27,'TRACE_PROCESS_EVENT_OS_RUNTIME',"
	    " 'OS runtime');";
	size_t i;
	int rc = 0;

	for (i = 0; i < set->nsections && rc == 0; i++)
		rc = thread_names(h, q, set->sections[i]);
	if (rc == 0 && sqlite3_exec(q->db, enums, NULL, NULL, NULL) != SQLITE_OK)
		rc = sq_fail(q, "host enums");
	return rc;
}
