/* SPDX-License-Identifier: MIT */
/*
 * SQLite export (docs/sqlite.md).  Where nsys's export has a table for the same thing, this uses
 * its table and column names, so that queries written for nsys run unchanged: StringIds,
 * CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET / RUNTIME / SYNCHRONIZATION / OVERHEAD,
 * NVTX_EVENTS, TARGET_INFO_GPU, TARGET_INFO_SESSION_START_TIME and the ENUM_* tables.  What nsys
 * has no table for is in TALLY_* tables: the sessions, the verdict, the loss windows, the ledger
 * and the damage found in the files.
 *
 * globalPid and globalTid follow nsys's serialization, so its documented decoding works:
 * pid = globalTid / 0x1000000 % 0x1000000, tid = globalTid % 0x1000000; tally adds the section
 * number (+1) in bits 48 and up, so equal pids of different processes stay apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "grow.h"
#include "hash.h"
#include "outfile.h"
#include "sqlite-db.h"
#include "sqlite-host.h"
#include "sqlite-schema.h"
#include "text.h"

enum stmt {
	S_STRING,
	S_KERNEL,
	S_MEMCPY,
	S_MEMSET,
	S_RUNTIME,
	S_SYNC,
	S_OVERHEAD,
	S_NVTX,
	S_SNAPSHOT,
	S_DAMAGE,
	S_CALLCHAIN,
	S_MEMORY,
	S_METRIC,
	S_METRIC_INFO,
	S_COUNT,
};

static const char *const stmt_sql[S_COUNT] = {
    [S_STRING] = "INSERT INTO StringIds VALUES (?,?)",
    [S_KERNEL] = "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId,"
		 " streamId, correlationId, globalPid, demangledName, shortName, mangledName,"
		 " launchType, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,"
		 " staticSharedMemory, dynamicSharedMemory, graphNodeId, graphId, callchainId)"
		 " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [S_MEMCPY] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId,"
		 " streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind,"
		 " srcDeviceId, dstDeviceId, graphNodeId) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [S_MEMSET] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId,"
		 " streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind)"
		 " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [S_RUNTIME] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid,"
		  " correlationId, nameId, returnValue, callchainId) VALUES (?,?,?,?,?,?,?,?)",
    [S_SYNC] = "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, contextId, streamId,"
	       " correlationId, globalPid, syncType, eventId) VALUES (?,?,?,?,?,?,?,?)",
    [S_OVERHEAD] = "INSERT INTO CUPTI_ACTIVITY_KIND_OVERHEAD (start, end, globalTid,"
		   " correlationId, overheadType) VALUES (?,?,?,?,?)",
    [S_NVTX] = "INSERT INTO NVTX_EVENTS (start, end, eventType, category, color, text, globalTid,"
	       " endGlobalTid, domainId, uint32Value, tallyTextTruncated)"
	       " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [S_SNAPSHOT] = "INSERT INTO TALLY_LEDGER_SNAPSHOTS VALUES (?,?,?,?,?,?,?)",
    [S_DAMAGE] = "INSERT INTO TALLY_DAMAGE VALUES (?,?,?,?,?,?)",
    [S_CALLCHAIN] = "INSERT INTO CUDA_CALLCHAINS VALUES (?,?,?,?,?,?,?,?,?,?)",
    [S_MEMORY] = "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [S_METRIC] = "INSERT INTO GPU_METRICS VALUES (?,?,?,?,?,?,?)",
    [S_METRIC_INFO] = "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?,?,?,?,?,?,?,?,?)",
};

/* Per section: string id -> StringIds id, as recorded, demangled and base name. */
struct sqsec {
	int64_t *raw, *dem, *base;
	uint32_t n;
	int64_t global_pid;
	uint8_t *chain_done; /* by stack id: its CUDA_CALLCHAINS rows are written */
	uint32_t nchain;
	uint32_t metrics_described; /* report_metric indexes with a TARGET_INFO_GPU_METRICS row */
};

struct sq {
	struct sq_db d;	    /* the database (sqlite-db.h): its handle, batches, StringIds, errors */
	struct outfile out; /* the temporary database, renamed over path at the end */
	unsigned out_flags;
	bool index; /* --index: the indexes of docs/sqlite.md */
	struct batch b[S_COUNT];
	int64_t *domains; /* StringIds ids used as NVTX domains: a NvtxDomainCreate row each */
	size_t ndomains;
	struct sqsec *secs;
	size_t nsecs, secs_cap;
	struct sq_host *host; /* samples and blocking calls (sqlite-host.c) */
};

static struct sqsec *sqsec(struct sq *q, const struct report_section *rs)
{
	return rs->index < q->nsecs ? &q->secs[rs->index] : NULL;
}

static bool grow_ids(int64_t **a, uint32_t old, uint32_t cap)
{
	int64_t *t = tally_resize(*a, cap, sizeof(*t));

	if (!t)
		return false;
	memset(t + old, 0, (cap - old) * sizeof(*t));
	*a = t;
	return true;
}

/* StringIds id of string id of rs in the given form (0 for id 0); -1 on failure. */
static int64_t sid(struct sq *q, struct report_section *rs, uint32_t id, enum report_name_mode m,
		   bool kernel)
{
	struct sqsec *x = sqsec(q, rs);
	int64_t **cache;

	if (!x)
		return -1;
	if (id >= rs->s->nstrings) /* undefined: not cached per id */
		return id ? sq_string(&q->d, report_string(rs, id)) : 0;
	if (id >= x->n) {
		uint32_t cap = x->n ? x->n : 64;

		while (cap <= id)
			cap *= 2;
		if (!grow_ids(&x->raw, x->n, cap) || !grow_ids(&x->dem, x->n, cap) ||
		    !grow_ids(&x->base, x->n, cap))
			return -1;
		x->n = cap;
	}
	cache = !kernel || m == REPORT_NAME_MANGLED ? &x->raw
		: m == REPORT_NAME_DEMANGLED	    ? &x->dem
						    : &x->base;
	if (!(*cache)[id])
		(*cache)[id] = sq_string(&q->d, kernel ? report_kernel_name(rs, id, m)
						       : report_string(rs, id));
	return (*cache)[id];
}

/* ---- records ------------------------------------------------------------------------------ */

/* nsys numbers memory kinds from pageable = 0 (unknown = 7); CUPTI from unknown = 0. */
static int64_t nsys_mem_kind(unsigned cupti)
{
	return cupti == 0 ? 7 : cupti <= 7 ? (int64_t)cupti - 1 : 7;
}

static void bind_gpu_common(struct batch *st, struct report_section *rs, const struct sqsec *x,
			    const struct tally_record *r)
{
	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_u(st, 2, report_time(rs, r->end));
	sq_put_u(st, 3, r->device_id);
	sq_put_u(st, 4, r->context_id);
	sq_put_u(st, 5, r->stream_id);
	sq_put_u(st, 6, r->correlation_id);
	sq_put_i(st, 7, x->global_pid);
}

/* One CUDA_CALLCHAINS row: frame depth of stack chain. */
static int chain_frame(struct sq *q, struct report_section *rs, int64_t chain, uint32_t depth,
		       uint32_t frame_id, uint32_t user)
{
	struct batch *st = &q->b[S_CALLCHAIN];
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame_id);
	const struct tally_module *m = f ? tally_module_of(&rs->s->stacks, f->pc) : NULL;
	bool python = f && f->type == TALLY_FRAME_PYTHON;
	int64_t sym = sq_string(&q->d, python ? f->func : report_frame_label(rs, frame_id));
	int64_t mod = sq_string(&q->d, python ? f->file : m ? m->path : "");
	int64_t file = python ? mod : 0;

	if (sym < 0 || mod < 0)
		return sq_fail(&q->d, "string table");
	sq_put_i(st, 1, chain);
	sq_put_i(st, 2, sym);
	sq_put_i(st, 3, mod);
	sq_put_i(st, 4, !f || (!python && !m));
	sq_put_u(st, 5, f ? f->pc : 0);
	sq_put_u(st, 6, depth);
	sq_put_u(st, 7, f ? f->type : 0);
	if (file)
		sq_put_i(st, 8, file);
	else
		sq_put_null(st, 8);
	sq_put_u(st, 9, python ? f->line : 0);
	sq_put_i(st, 10, frame_id == user);
	return sq_row_done(&q->d, st);
}

/* The callchainId of a record's stack (section << 32 | stack id), its rows written on first use;
 * 0 for none. */
static int64_t callchain(struct sq *q, struct report_section *rs, struct sqsec *x,
			 uint32_t stack_id)
{
	const struct tally_stack *stk = tally_stack_get(&rs->s->stacks, stack_id);
	int64_t chain = (int64_t)rs->index << 32 | stack_id;
	uint32_t i, user;
	uint8_t *t;

	if (!stk)
		return 0;
	if (stack_id >= x->nchain) {
		uint32_t cap = x->nchain ? x->nchain : 64;

		while (cap <= stack_id)
			cap *= 2;
		if (!(t = tally_resize(x->chain_done, cap, 1)))
			return -1;
		memset(t + x->nchain, 0, cap - x->nchain);
		x->chain_done = t;
		x->nchain = cap;
	}
	if (x->chain_done[stack_id])
		return chain;
	user = report_user_frame(rs, stack_id);
	for (i = 0; i < stk->nframes; i++)
		if (chain_frame(q, rs, chain, i, stk->frames[i], user) < 0)
			return -1;
	x->chain_done[stack_id] = 1;
	return chain;
}

static void b_chain(struct batch *st, int i, int64_t chain)
{
	if (chain > 0)
		sq_put_i(st, i, chain);
	else
		sq_put_null(st, i);
}

static int memory_row(struct sq *q, struct report_section *rs, struct sqsec *x,
		      const struct tally_record *r)
{
	struct batch *st = &q->b[S_MEMORY];
	int64_t chain = callchain(q, rs, x, r->stack_id);

	if (chain < 0)
		return sq_fail(&q->d, "call chains");
	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_i(st, 2, x->global_pid);
	sq_put_u(st, 3, r->device_id);
	sq_put_u(st, 4, r->context_id);
	sq_put_u(st, 5, r->stream_id);
	sq_put_u(st, 6, r->correlation_id);
	sq_put_u(st, 7, r->address);
	sq_put_u(st, 8, r->bytes);
	sq_put_i(st, 9, nsys_mem_kind(r->src_kind));
	sq_put_u(st, 10, r->subkind);
	b_chain(st, 11, chain);
	return sq_row_done(&q->d, st);
}

static int kernel(struct sq *q, struct report_section *rs, struct sqsec *x,
		  const struct tally_record *r)
{
	int64_t chain = callchain(q, rs, x, r->stack_id);
	struct batch *st = &q->b[S_KERNEL];
	int64_t dem = sid(q, rs, r->name_id, REPORT_NAME_DEMANGLED, true);
	int64_t base = sid(q, rs, r->name_id, REPORT_NAME_BASE, true);
	int64_t raw = sid(q, rs, r->name_id, REPORT_NAME_MANGLED, true);
	int i;

	if (dem < 0 || base < 0 || raw < 0 || chain < 0)
		return sq_fail(&q->d, "string table");
	bind_gpu_common(st, rs, x, r);
	sq_put_i(st, 8, dem);
	sq_put_i(st, 9, base);
	sq_put_i(st, 10, raw);
	sq_put_u(st, 11, r->subkind);
	sq_put_u(st, 12, r->registers);
	for (i = 0; i < 3; i++) {
		sq_put_i(st, 13 + i, r->grid[i]);
		sq_put_i(st, 16 + i, r->block[i]);
	}
	sq_put_u(st, 19, r->static_smem);
	sq_put_u(st, 20, r->dynamic_smem);
	sq_put_u(st, 21, r->graph_node_id);
	sq_put_u(st, 22, r->graph_id);
	b_chain(st, 23, chain);
	return sq_row_done(&q->d, st);
}

static int memcpy_row(struct sq *q, struct report_section *rs, const struct sqsec *x,
		      const struct tally_record *r)
{
	struct batch *st = &q->b[S_MEMCPY];

	bind_gpu_common(st, rs, x, r);
	sq_put_u(st, 8, r->bytes);
	sq_put_u(st, 9, r->subkind);
	sq_put_i(st, 10, nsys_mem_kind(r->src_kind));
	sq_put_i(st, 11, nsys_mem_kind(r->dst_kind));
	sq_put_u(st, 12, r->src_device);
	sq_put_u(st, 13, r->dst_device);
	sq_put_u(st, 14, r->graph_node_id);
	return sq_row_done(&q->d, st);
}

static int memset_row(struct sq *q, struct report_section *rs, const struct sqsec *x,
		      const struct tally_record *r)
{
	struct batch *st = &q->b[S_MEMSET];

	bind_gpu_common(st, rs, x, r);
	sq_put_u(st, 8, r->value);
	sq_put_u(st, 9, r->bytes);
	sq_put_u(st, 10, r->graph_node_id);
	sq_put_i(st, 11, nsys_mem_kind(r->subkind));
	return sq_row_done(&q->d, st);
}

static int api_row(struct sq *q, struct report_section *rs, struct sqsec *x,
		   const struct tally_record *r)
{
	int64_t chain = callchain(q, rs, x, r->stack_id);
	struct batch *st = &q->b[S_RUNTIME];
	int64_t name = sid(q, rs, r->name_id, REPORT_NAME_MANGLED, false);
	uint32_t pid = r->process_id ? r->process_id : (uint32_t)rs->s->pid;

	if (name < 0 || chain < 0)
		return sq_fail(&q->d, "string table");
	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_u(st, 2, report_time(rs, r->end));
	/* nsys keeps driver calls in this table too, told apart by the event class */
	sq_put_i(st, 3, r->kind == TALLY_KIND_DRIVER ? 1 : 0);
	sq_put_i(st, 4, sq_gtid(rs, pid, r->thread_id));
	sq_put_u(st, 5, r->correlation_id);
	sq_put_i(st, 6, name);
	sq_put_i(st, 7, (int32_t)r->value);
	b_chain(st, 8, chain);
	return sq_row_done(&q->d, st);
}

static int sync_row(struct sq *q, struct report_section *rs, const struct sqsec *x,
		    const struct tally_record *r)
{
	struct batch *st = &q->b[S_SYNC];

	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_u(st, 2, report_time(rs, r->end));
	sq_put_u(st, 3, r->context_id);
	sq_put_u(st, 4, r->stream_id);
	sq_put_u(st, 5, r->correlation_id);
	sq_put_i(st, 6, x->global_pid);
	sq_put_u(st, 7, r->subkind);
	sq_put_u(st, 8, r->value);
	return sq_row_done(&q->d, st);
}

static int overhead_row(struct sq *q, struct report_section *rs, const struct sqsec *x,
			const struct tally_record *r)
{
	struct batch *st = &q->b[S_OVERHEAD];

	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_u(st, 2, report_time(rs, r->end));
	sq_put_i(st, 3, sq_gtid(rs, r->process_id, r->thread_id));
	sq_put_u(st, 4, r->correlation_id);
	sq_put_u(st, 5, r->subkind);
	return sq_row_done(&q->d, st);
}

static int add_domain(struct sq *q, int64_t id)
{
	size_t i;
	int64_t *t;

	for (i = 0; i < q->ndomains; i++)
		if (q->domains[i] == id)
			return 0;
	t = tally_array_push(&q->domains, &q->ndomains, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = id;
	return 0;
}

/* NVTX ranges as NvtxStartEndRange (60) or NvtxPushPopRange (59), marks as NvtxMark (34). */
static int nvtx_row(struct sq *q, struct report_section *rs, const struct sqsec *x,
		    const struct tally_record *r)
{
	struct batch *st = &q->b[S_NVTX];
	bool mark = r->kind == TALLY_KIND_NVTX_MARK;
	int64_t domain = r->domain_id ? sid(q, rs, r->domain_id, REPORT_NAME_MANGLED, false) : 0;
	uint32_t pid = r->process_id ? r->process_id : (uint32_t)rs->s->pid;

	if (domain < 0 || (domain && add_domain(q, domain) < 0))
		return sq_fail(&q->d, "string table");
	sq_put_u(st, 1, report_time(rs, r->start));
	if (mark)
		sq_put_null(st, 2);
	else
		sq_put_u(st, 2, report_time(rs, r->end));
	sq_put_i(st, 3, mark ? 34 : r->subkind ? 60 : 59);
	sq_put_u(st, 4, r->category);
	sq_put_u(st, 5, r->color);
	sq_put_text(st, 6, report_string(rs, r->name_id));
	sq_put_i(st, 7, sq_gtid(rs, pid, r->thread_id));
	if (mark)
		sq_put_null(st, 8);
	else
		sq_put_i(st, 8, sq_gtid(rs, pid, r->thread_id));
	sq_put_i(st, 9, domain);
	sq_put_u(st, 10, r->value);
	sq_put_i(st, 11, r->flags & TALLY_REC_TEXT_TRUNCATED ? 1 : 0);
	return sq_row_done(&q->d, st);
}

/* nsys's typeId names the GPU in its low byte; tally's is unique per section too. */
static int64_t metric_type(const struct report_section *rs, uint32_t device)
{
	return (int64_t)rs->index << 8 | (device & 0xff);
}

/* TARGET_INFO_GPU_METRICS: a row per metric of a device, when it first comes (indexes come in
 * order, 0, 1, ...). */
static int metric_info(struct sq *q, struct report_section *rs, struct sqsec *x,
		       const struct report_metric *m)
{
	struct batch *st = &q->b[S_METRIC_INFO];
	const struct tally_section *s = rs->s;
	const char *chip = NULL;
	char type[200];
	size_t i;

	for (i = 0; i < s->ngpu_metrics; i++)
		if (s->gpu_metrics[i].device == m->device)
			chip = s->gpu_metrics[i].chip;
	snprintf(type, sizeof(type), "GPU %u%s%s%s", m->device, chip ? " (" : "", chip ? chip : "",
		 chip ? ")" : "");
	sq_put_i(st, 1, metric_type(rs, m->device));
	sq_put_i(st, 2, x->global_pid);
	sq_put_text(st, 3, type);
	sq_put_u(st, 4, m->index);
	sq_put_text(st, 5, m->label);
	sq_put_text(st, 6, m->name);
	sq_put_text(st, 7, m->unit);
	sq_put_u(st, 8, m->device);
	sq_put_i(st, 9, x->global_pid);
	x->metrics_described++;
	return sq_row_done(&q->d, st);
}

/* GPU_METRICS: a sample's value of one metric, in its unit, from the sample's start. */
static int metric_row(struct sq *q, struct report_section *rs, struct sqsec *x,
		      const struct tally_record *r)
{
	const struct report_metric *m = report_metric(rs, r);
	struct batch *st = &q->b[S_METRIC];
	int rc;

	if (!m)
		return -ENOMEM;
	if (m->index >= x->metrics_described && (rc = metric_info(q, rs, x, m)) < 0)
		return rc;
	sq_put_u(st, 1, report_time(rs, r->start));
	sq_put_i(st, 2, metric_type(rs, r->device_id));
	sq_put_u(st, 3, m->index);
	sq_put_real(st, 4, report_metric_value(r));
	sq_put_u(st, 5, r->end - r->start);
	sq_put_u(st, 6, r->correlation_id);
	sq_put_u(st, 7, r->value);
	return sq_row_done(&q->d, st);
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct sq *q = ctx;
	struct sqsec *x = sqsec(q, rs);
	size_t i;
	int rc = 0;

	if (!x)
		return -ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		/* Records whose timing was lost have no place on a timeline: they are counted in
		 * TALLY_LEDGER (bad_timestamps) and their windows are in TALLY_LOSS_WINDOWS. */
		if (r[i].flags & TALLY_REC_BAD_TIME)
			continue;
		switch (r[i].kind) {
		case TALLY_KIND_KERNEL:
			rc = kernel(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_MEMCPY:
			rc = memcpy_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_MEMSET:
			rc = memset_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_RUNTIME:
		case TALLY_KIND_DRIVER:
			rc = api_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_SYNC:
			rc = sync_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_NVTX_RANGE:
		case TALLY_KIND_NVTX_MARK:
			rc = nvtx_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_OVERHEAD:
			rc = overhead_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_MEMORY:
			rc = memory_row(q, rs, x, &r[i]);
			break;
		case TALLY_KIND_CPU_SAMPLE:
		case TALLY_KIND_OSRT:
			rc = sq_host_records(q->host, &q->d, rs, &r[i]);
			break;
		case TALLY_KIND_GPU_METRIC:
			rc = metric_row(q, rs, x, &r[i]);
			break;
		default:
			break;
		}
	}
	return rc;
}

static int on_section(void *ctx, struct report_section *rs)
{
	struct sq *q = ctx;
	struct sqsec *t;

	if (!tally_grow_in(&q->secs, &q->secs_cap, (size_t)rs->index + 1, sizeof(*q->secs)))
		return -ENOMEM;
	t = q->secs;
	memset(&t[rs->index], 0, sizeof(*t));
	q->nsecs = rs->index + 1;
	t[rs->index].global_pid = sq_gtid(rs, (uint32_t)rs->s->pid, 0);
	return 0;
}

static int on_ledger(void *ctx, struct report_section *rs, const struct tally_ledger *l)
{
	struct sq *q = ctx;
	struct batch *st = &q->b[S_SNAPSHOT];
	unsigned id;
	int rc = 0;

	for (id = 1; id < TALLY_C_MAX && rc == 0; id++) {
		if (!l->v[id])
			continue;
		sq_put_u(st, 1, rs->index);
		sq_put_u(st, 2, l->slice);
		sq_put_u(st, 3, report_time(rs, l->t_begin));
		sq_put_u(st, 4, report_time(rs, l->t_end));
		sq_put_i(st, 5, l->final);
		sq_put_u(st, 6, id);
		sq_put_u(st, 7, l->v[id]);
		rc = sq_row_done(&q->d, st);
	}
	return rc;
}

static int on_damage(void *ctx, struct report_input *in, struct report_section *rs,
		     const struct tally_damage *d)
{
	struct sq *q = ctx;
	struct batch *st = &q->b[S_DAMAGE];

	sq_put_text(st, 1, in->path);
	if (rs)
		sq_put_u(st, 2, rs->index);
	else
		sq_put_null(st, 2);
	sq_put_text(st, 3, tally_damage_kind_name(d->kind));
	sq_put_u(st, 4, d->offset);
	sq_put_u(st, 5, d->end);
	sq_put_u(st, 6, d->missing);
	return sq_row_done(&q->d, st);
}

static const struct report_scan_ops sq_scan = {
    .section = on_section,
    .records = on_records,
    .ledger = on_ledger,
    .damage = on_damage,
};

/* ---- the tables written at the end ---------------------------------------------------------- */

static int fill_enum(struct sq *q, const char *table, const struct enum_row *rows, size_t n)
{
	char sql[200];
	sqlite3_stmt *st;
	size_t i;
	int rc = 0;

	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (?,?,?)", table);
	if (sqlite3_prepare_v2(q->d.db, sql, -1, &st, NULL) != SQLITE_OK)
		return sq_fail(&q->d, table);
	for (i = 0; i < n && rc == 0; i++) {
		sqlite3_bind_int(st, 1, rows[i].id);
		sqlite3_bind_text(st, 2, rows[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, rows[i].label, -1, SQLITE_STATIC);
		rc = sq_run(&q->d, st);
	}
	sqlite3_finalize(st);
	return rc;
}

#define ENUM(q, t, rows) fill_enum(q, t, rows, rows##_count)

static int write_enums(struct sq *q)
{
	int rc = ENUM(q, "ENUM_NSYS_EVENT_TYPE", enum_event_type);

	if (rc == 0)
		rc = ENUM(q, "ENUM_NSYS_EVENT_CLASS", enum_event_class);
	if (rc == 0)
		rc = ENUM(q, "ENUM_CUDA_MEMCPY_OPER", enum_memcpy_oper);
	if (rc == 0)
		rc = ENUM(q, "ENUM_CUDA_MEM_KIND", enum_mem_kind);
	if (rc == 0)
		rc = ENUM(q, "ENUM_CUDA_KERNEL_LAUNCH_TYPE", enum_launch_type);
	if (rc == 0)
		rc = ENUM(q, "ENUM_CUPTI_SYNC_TYPE", enum_sync_type);
	return rc;
}

/* For the few statements run only at the end. */
static int prepare(struct sq *q, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(q->d.db, sql, -1, st, NULL) == SQLITE_OK ? 0
									   : sq_fail(&q->d, sql);
}

static void uuid_text(const struct tally_device *d, char *out, size_t len)
{
	const uint8_t *u = d->uuid;

	snprintf(out, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static int write_gpus(struct sq *q, const struct report_set *set)
{
	sqlite3_stmt *st;
	size_t i, k;
	int rc = prepare(q, "INSERT INTO TARGET_INFO_GPU VALUES (0,?,?,?,?,?,?,?,?,?,?)", &st);

	for (i = 0; i < set->nsections && rc == 0; i++) {
		const struct tally_section *s = set->sections[i]->s;

		for (k = 0; k < s->ndevices && rc == 0; k++) {
			const struct tally_device *d = &s->devices[k];
			char uuid[64];

			uuid_text(d, uuid, sizeof(uuid));
			sq_bind_u(st, 1, d->id);
			sq_bind_text(st, 2, d->name);
			sq_bind_text(st, 3, d->pci_bus);
			sq_bind_u(st, 4, d->global_mem);
			sq_bind_u(st, 5, d->sm_count);
			sq_bind_text(st, 6, d->has_uuid ? uuid : NULL);
			sq_bind_u(st, 7, d->id);
			sq_bind_u(st, 8, d->cc_major);
			sq_bind_u(st, 9, d->cc_minor);
			sqlite3_bind_int64(st, 10, q->secs[i].global_pid);
			rc = sq_run(&q->d, st);
		}
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_session(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;

	sq_bind_u(st, 1, rs->index);
	sq_bind_text(st, 2, rs->in->path);
	sq_bind_u(st, 3, s->index);
	sqlite3_bind_int64(st, 4, q->secs[rs->index].global_pid);
	sq_bind_u(st, 5, s->pid);
	sq_bind_u(st, 6, s->ppid);
	sq_bind_text(st, 7, s->host);
	sq_bind_text(st, 8, s->rank);
	sq_bind_text(st, 9, s->cmdline);
	sq_bind_text(st, 10, s->exe);
	sq_bind_text(st, 11, s->writer);
	sq_bind_text(st, 12, s->source);
	sq_bind_u(st, 13, s->start_realtime);
	sq_bind_u(st, 14, s->start_cupti);
	sqlite3_bind_int64(st, 15, rs->offset);
	sqlite3_bind_int(st, 16, s->merged);
	sqlite3_bind_int64(st, 17, s->merge_offset);
	sq_bind_u(st, 18, s->driver_version);
	sq_bind_u(st, 19, s->runtime_version);
	sq_bind_u(st, 20, s->cupti_version);
	sq_bind_u(st, 21, s->records_total);
	sq_bind_text(st, 22, rs->verdict.complete ? "COMPLETE" : "INCOMPLETE");
	return sq_run(&q->d, st);
}

static int write_verdict(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	const struct tally_verdict *v = &rs->verdict;
	size_t i;
	int rc = 0;

	if (v->complete) {
		sq_bind_u(st, 1, rs->index);
		sq_bind_text(st, 2, "COMPLETE");
		for (i = 3; i <= 7; i++)
			sqlite3_bind_null(st, (int)i);
		return sq_run(&q->d, st);
	}
	for (i = 0; i < v->nreasons && rc == 0; i++) {
		const struct tally_reason *r = &v->reasons[i];
		const struct tally_counter_info *ci = tally_counter_info(r->counter);

		sq_bind_u(st, 1, rs->index);
		sq_bind_text(st, 2, "INCOMPLETE");
		sq_bind_text(st, 3, tally_reason_code_name(r->code));
		sq_bind_text(st, 4, r->code == TALLY_R_LOSS && ci ? ci->name : NULL);
		sq_bind_u(st, 5, r->count);
		sq_bind_text(st, 6, r->text);
		sq_bind_text(st, 7, r->hint);
		rc = sq_run(&q->d, st);
	}
	return rc;
}

static int write_windows(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->nwindows && rc == 0; i++) {
		const struct tally_window *w = &s->windows[i];
		const struct tally_counter_info *ci = tally_counter_info(w->counter);

		sq_bind_u(st, 1, rs->index);
		sqlite3_bind_int64(st, 2, q->secs[rs->index].global_pid);
		sq_bind_u(st, 3, report_time(rs, w->t_begin));
		sq_bind_u(st, 4, report_time(rs, w->t_end));
		sq_bind_u(st, 5, w->counter);
		sq_bind_text(st, 6, ci ? ci->name : NULL);
		sq_bind_u(st, 7, w->count);
		sq_bind_text(st, 8, ci ? ci->what : NULL);
		rc = sq_run(&q->d, st);
	}
	return rc;
}

/* CUPTI's drops by queue, and contexts tied to devices (DROPS, format 1.2). */
static int write_drops(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->ndrops && rc == 0; i++) {
		const struct tally_drops *d = &s->drops[i];

		sq_bind_u(st, 1, rs->index);
		sqlite3_bind_int64(st, 2, q->secs[rs->index].global_pid);
		sq_bind_text(st, 3, tally_drop_source_name(d->source));
		sq_bind_u(st, 4, d->context);
		sq_bind_u(st, 5, d->device);
		sq_bind_u(st, 6, d->stream);
		sq_bind_u(st, 7, d->count);
		sq_bind_text(st, 8, tally_drop_source_meaning(d->source));
		rc = sq_run(&q->d, st);
	}
	return rc;
}

static int write_ledger(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	unsigned id;
	int rc = 0;

	for (id = 1; id < TALLY_C_MAX && rc == 0; id++) {
		const struct tally_counter_info *ci = tally_counter_info(id);

		if (!ci)
			continue;
		sq_bind_u(st, 1, rs->index);
		sq_bind_u(st, 2, id);
		sq_bind_text(st, 3, ci->name);
		sq_bind_u(st, 4, rs->s->ledger.v[id]);
		sq_bind_text(st, 5, ci->cls == TALLY_CC_LOSS ? "loss" : "info");
		sq_bind_text(st, 6, ci->what);
		rc = sq_run(&q->d, st);
	}
	return rc;
}

static int write_notes(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < rs->s->nnotes && rc == 0; i++) {
		const struct tally_note *n = &rs->s->notes[i];

		sq_bind_u(st, 1, rs->index);
		sq_bind_u(st, 2, n->time ? report_time(rs, n->time) : 0);
		sq_bind_u(st, 3, n->severity);
		sq_bind_text(st, 4, n->code);
		sq_bind_text(st, 5, n->text);
		rc = sq_run(&q->d, st);
	}
	return rc;
}

/* Per section: TALLY_SESSIONS, TALLY_VERDICT, TALLY_LOSS_WINDOWS, TALLY_LEDGER, TALLY_NOTES,
 * TALLY_DROPS. */
/* TALLY_GPU_METRICS: what each section says of each device's metrics (sampled here, elsewhere by
 * whom, refused and what to change). */
static int write_metric_states(struct sq *q, sqlite3_stmt *st, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->ngpu_metrics && rc == 0; i++) {
		const struct tally_gpu_metrics *g = &s->gpu_metrics[i];
		char uuid[48];
		struct tally_device d = {.has_uuid = g->has_uuid};

		memcpy(d.uuid, g->uuid, 16);
		uuid_text(&d, uuid, sizeof(uuid));
		sq_bind_u(st, 1, rs->index);
		sqlite3_bind_int64(st, 2, q->secs[rs->index].global_pid);
		sq_bind_u(st, 3, g->device);
		sq_bind_text(st, 4, g->has_uuid ? uuid : NULL);
		sq_bind_text(st, 5, tally_gpu_metrics_state_name(g->state));
		sq_bind_text(st, 6, g->chip);
		if (g->trigger == TALLY_GM_TRIGGER_TIME && g->interval)
			sq_bind_u(st, 7, g->interval);
		else
			sqlite3_bind_null(st, 7);
		sq_bind_u(st, 8, g->nmetrics);
		sq_bind_text(st, 9, g->why);
		sq_bind_text(st, 10, g->remedy);
		if (g->holder_pid)
			sq_bind_u(st, 11, g->holder_pid);
		else
			sqlite3_bind_null(st, 11);
		sq_bind_text(st, 12, g->holder_host);
		sq_bind_text(st, 13, g->holder_file);
		rc = sq_run(&q->d, st);
	}
	return rc;
}

static int write_tally_tables(struct sq *q, const struct report_set *set)
{
	static const char *const sql[] = {
	    "INSERT INTO TALLY_SESSIONS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	    "INSERT INTO TALLY_VERDICT VALUES (?,?,?,?,?,?,?)",
	    "INSERT INTO TALLY_LOSS_WINDOWS VALUES (?,?,?,?,?,?,?,?)",
	    "INSERT INTO TALLY_LEDGER VALUES (?,?,?,?,?,?)",
	    "INSERT INTO TALLY_NOTES VALUES (?,?,?,?,?)",
	    "INSERT INTO TALLY_DROPS VALUES (?,?,?,?,?,?,?,?)",
	    "INSERT INTO TALLY_GPU_METRICS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
	};
	int (*const fill[])(struct sq *, sqlite3_stmt *, const struct report_section *) = {
	    write_session, write_verdict, write_windows,       write_ledger,
	    write_notes,   write_drops,	  write_metric_states,
	};
	sqlite3_stmt *st;
	size_t i, t;
	int rc = 0;

	for (t = 0; t < sizeof(fill) / sizeof(fill[0]) && rc == 0; t++) {
		rc = prepare(q, sql[t], &st);
		for (i = 0; i < set->nsections && i < q->nsecs && rc == 0; i++)
			rc = fill[t](q, st, set->sections[i]);
		sqlite3_finalize(st);
	}
	return rc;
}

static int write_domains(struct sq *q)
{
	sqlite3_stmt *st;
	size_t i;
	int rc = prepare(q,
			 "INSERT INTO NVTX_EVENTS (start, eventType, text, domainId) "
			 "VALUES (0, 75, (SELECT value FROM StringIds WHERE id = ?1), ?1)",
			 &st);

	for (i = 0; i < q->ndomains && rc == 0; i++) {
		sqlite3_bind_int64(st, 1, q->domains[i]);
		rc = sq_run(&q->d, st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_meta(struct sq *q, const struct report_set *set)
{
	sqlite3_stmt *st;
	char when[64] = "";
	time_t t = (time_t)(set->base / 1000000000ull);
	struct tm tm;
	int rc = prepare(q, "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?,?,?)", &st);

	if (rc)
		return rc;
	if (set->base && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sq_bind_u(st, 1, set->base);
	sq_bind_text(st, 2, when);
	sq_bind_text(st, 3, when);
	rc = sq_run(&q->d, st);
	sqlite3_finalize(st);
	if (rc == 0)
		rc = sq_exec(&q->d,
			     "INSERT INTO META_DATA_EXPORT VALUES ('TALLY_SCHEMA_VERSION', '1'),"
			     " ('EXPORT_TOOL', 'tally export --format sqlite');");
	return rc;
}

static int sq_finish(void *state, struct report_set *set, struct export_stats *out, char *err,
		     size_t errlen)
{
	struct sq *q = state;
	int rc = 0;
	size_t i;

	if (rc == 0)
		rc = write_enums(q);
	if (rc == 0)
		rc = write_gpus(q, set);
	if (rc == 0)
		rc = write_tally_tables(q, set);
	if (rc == 0)
		rc = write_domains(q);
	if (rc == 0)
		rc = write_meta(q, set);
	if (rc == 0)
		rc = sq_host_finish(q->host, &q->d, set);
	/* the last rows of every batch, strings named by the tables above included */
	for (i = 0; i < S_COUNT && rc == 0; i++)
		rc = sq_batch_flush(&q->d, &q->b[i]);
	if (rc == 0 && q->index)
		rc = sq_exec(&q->d, sqlite_host_indexes);
	if (rc == 0)
		rc = sq_exec(&q->d, "COMMIT;");
	if (rc == 0) {
		for (i = 0; i < S_COUNT; i++)
			sq_batch_close(&q->b[i]);
		sq_host_close(q->host);
		q->host = NULL;
		if (sqlite3_close(q->d.db) != SQLITE_OK)
			rc = -EIO;
		q->d.db = NULL;
	}
	if (rc == 0 && outfile_commit(&q->out, q->out_flags, err, errlen) < 0)
		rc = -EIO;
	(void)errlen; /* failures wrote q->d.err, which is err */
	out->events = q->d.rows;
	out->clamped = sq_clamped();
	return rc;
}

/* ---- open / close ------------------------------------------------------------------------- */

static void sq_destroy(void *state, bool failed);

static int sq_open(void **state, struct report_set *set, const struct export_opts *o, char *err,
		   size_t errlen)
{
	struct sq *q = calloc(1, sizeof(*q));
	int rc = -ENOMEM, i;

	sq_clamped_reset();
	(void)set;
	if (q)
		q->out.fd = -1;
	if (!q || !(q->d.path = strdup(o->output))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	q->d.err = err;
	q->d.errlen = errlen;
	q->out_flags = o->force ? OUTFILE_FORCE : 0;
	rc = outfile_open(&q->out, o->output, q->out_flags, err, errlen);
	if (rc < 0)
		goto fail;
	close(q->out.fd); /* SQLite opens it by name: an empty file is an empty database */
	q->out.fd = -1;
	rc = -EIO;
	/* One thread uses this connection: no mutexes (a fifth of an insert's cost). */
	if (sqlite3_open_v2(q->out.tmp, &q->d.db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		sq_fail(&q->d, "open");
		goto fail;
	}
	/* One writer, a file made from scratch: no journal, no syncs, one transaction.  No index
	 * unless asked (nsys makes none): they cost 1.5 times the load itself.  Asked, they are
	 * made before the load and filled row by row: records come in time and correlation order,
	 * so each index grows at its end: the same instructions as the sort of CREATE INDEX after
	 * the load, without its sorted runs in memory and temporary files (10 M records: peak RSS
	 * 84 MiB against 140, less system time; docs/scaling.md).  Pages of 8 KiB: a tenth less
	 * CPU than 4 KiB when rows are appended, none gained past 16 KiB. */
	q->index = o->index;
	if (sq_exec(&q->d, "PRAGMA page_size=8192; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			   " PRAGMA cache_size=-65536;"
			   " PRAGMA locking_mode=EXCLUSIVE; BEGIN;") < 0 ||
	    sq_exec(&q->d, sqlite_schema) < 0 || sq_exec(&q->d, sqlite_host_schema) < 0 ||
	    (q->index && sq_exec(&q->d, sqlite_indexes) < 0))
		goto fail;
	for (i = 0; i < S_COUNT; i++)
		if (sq_batch_open(&q->d, &q->b[i], stmt_sql[i]) < 0)
			goto fail;
	q->d.strings = &q->b[S_STRING];
	if (!(q->host = sq_host_open(&q->d)))
		goto fail;
	q->d.next_id = 1;
	*state = q;
	return 0;
fail:
	sq_destroy(q, true);
	return rc;
}

static void sq_destroy(void *state, bool failed)
{
	struct sq *q = state;
	size_t i;

	if (!q)
		return;
	for (i = 0; i < S_COUNT; i++)
		sq_batch_close(&q->b[i]);
	sq_host_close(q->host);
	if (q->d.db)
		sqlite3_close(q->d.db);
	(void)failed; /* whatever was not committed is only a temporary file */
	outfile_abort(&q->out);
	sq_strings_free(&q->d);
	for (i = 0; i < q->nsecs; i++) {
		free(q->secs[i].raw);
		free(q->secs[i].dem);
		free(q->secs[i].base);
		free(q->secs[i].chain_done);
	}
	free(q->secs);
	free(q->domains);
	free(q->d.path);
	free(q);
}

const struct exporter export_sqlite = {
    .name = "sqlite",
    .what = "SQLite database with nsys's table and column names (docs/sqlite.md)",
    .open = sq_open,
    .scan = &sq_scan,
    .finish = sq_finish,
    .destroy = sq_destroy,
};
