/* SPDX-License-Identifier: MIT */
/* CUPTI records to tally records; see convert.h. */
#include "convert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

int tally_convert_init(struct tally_convert *c, struct tally_strtab *strings,
		       const char *(*api_name)(CUpti_ActivityKind, uint32_t))
{
	memset(c, 0, sizeof(*c));
	c->strings = strings;
	c->api_name = api_name;
	memset(c->api_class, -1, sizeof(c->api_class));
	return 0;
}

void tally_convert_fini(struct tally_convert *c)
{
	free(c->markers);
	c->markers = NULL;
	c->markers_count = c->markers_cap = 0;
	tally_map_fini(&c->marker_at);
}

size_t tally_api_name_len(const char *name)
{
	size_t len = strlen(name);
	const char *v = strrchr(name, '_');

	if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' &&
	    strspn(v + 2, "0123456789") == strlen(v + 2))
		len = (size_t)(v - name);
	return len;
}

/* What an API call is, for the correlation check (stored in the record's SUBKIND). */
static enum tally_api_class tally_api_name_class(const char *name)
{
	if (!name)
		return TALLY_API_OTHER;
	if (strncmp(name, "cudaStreamBeginCapture", 22) == 0 ||
	    strncmp(name, "cuStreamBeginCapture", 20) == 0)
		return TALLY_API_CAPTURE_BEGIN;
	if (strncmp(name, "cudaStreamEndCapture", 20) == 0 ||
	    strncmp(name, "cuStreamEndCapture", 18) == 0)
		return TALLY_API_CAPTURE_END;
	return tally_api_name_launches(name) ? TALLY_API_LAUNCH : TALLY_API_OTHER;
}

bool tally_api_name_launches(const char *name)
{
	static const char *const prefixes[] = {
	    "cudaLaunch", "cudaMemcpy", "cudaMemset", "cudaGraphLaunch",
	    "cuLaunch",	  "cuMemcpy",	"cuMemset",   "cuGraphLaunch",
	};
	size_t i;

	/* Host functions run on the CPU: no GPU record answers them. */
	if (strncmp(name, "cudaLaunchHostFunc", 18) == 0 ||
	    strncmp(name, "cuLaunchHostFunc", 16) == 0)
		return false;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* The fields every CUPTI record of GPU work names alike: the structs differ, the names do not. */
#define CONVERT_GPU_OP(r, a)                                                                       \
	do {                                                                                       \
		(r)->start = (a)->start;                                                           \
		(r)->end = (a)->end;                                                               \
		(r)->device_id = (a)->deviceId;                                                    \
		(r)->context_id = (a)->contextId;                                                  \
		(r)->stream_id = (a)->streamId;                                                    \
		(r)->correlation_id = (a)->correlationId;                                          \
		(r)->graph_id = (a)->graphId;                                                      \
		(r)->graph_node_id = (a)->graphNodeId;                                             \
	} while (0)

static void convert_kernel(struct tally_convert *c, const CUpti_ActivityKernel10 *k,
			   struct tally_record *r)
{
	r->kind = TALLY_KIND_KERNEL;
	CONVERT_GPU_OP(r, k);
	r->name_id = tally_strtab_intern_ptr(c->strings, k->name);
	r->grid[0] = k->gridX;
	r->grid[1] = k->gridY;
	r->grid[2] = k->gridZ;
	r->block[0] = k->blockX;
	r->block[1] = k->blockY;
	r->block[2] = k->blockZ;
	r->registers = k->registersPerThread;
	r->static_smem = (uint32_t)k->staticSharedMemory;
	r->dynamic_smem = (uint32_t)k->dynamicSharedMemory;
	r->subkind = k->launchType;
}

static void convert_memcpy(const CUpti_ActivityMemcpy6 *m, struct tally_record *r)
{
	r->kind = TALLY_KIND_MEMCPY;
	CONVERT_GPU_OP(r, m);
	r->bytes = m->bytes;
	r->subkind = m->copyKind;
	r->src_kind = m->srcKind;
	r->dst_kind = m->dstKind;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
		r->flags |= TALLY_REC_ASYNC;
}

static void convert_p2p(const CUpti_ActivityMemcpyPtoP4 *m, struct tally_record *r)
{
	r->kind = TALLY_KIND_MEMCPY;
	CONVERT_GPU_OP(r, m);
	r->bytes = m->bytes;
	r->subkind = m->copyKind;
	r->src_kind = m->srcKind;
	r->dst_kind = m->dstKind;
	r->src_device = m->srcDeviceId;
	r->dst_device = m->dstDeviceId;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
		r->flags |= TALLY_REC_ASYNC;
}

static void convert_memset(const CUpti_ActivityMemset4 *m, struct tally_record *r)
{
	r->kind = TALLY_KIND_MEMSET;
	CONVERT_GPU_OP(r, m);
	r->bytes = m->bytes;
	r->value = m->value;
	r->subkind = m->memoryKind;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC)
		r->flags |= TALLY_REC_ASYNC;
}

/* Name and class of an API call, looked up once per cbid. */
static void api_lookup(struct tally_convert *c, CUpti_ActivityKind kind, uint32_t cbid,
		       uint32_t *name_id, uint32_t *cls)
{
	unsigned dom = kind == CUPTI_ACTIVITY_KIND_DRIVER;
	const char *name;

	if (cbid < CONVERT_CBID_MAX && c->api_class[dom][cbid] >= 0) {
		*name_id = c->api_name_id[dom][cbid];
		*cls = (uint32_t)c->api_class[dom][cbid];
		return;
	}
	name = c->api_name ? c->api_name(kind, cbid) : NULL;
	*name_id = name ? tally_strtab_intern_len(c->strings, name, tally_api_name_len(name)) : 0;
	*cls = tally_api_name_class(name);
	if (cbid < CONVERT_CBID_MAX && (*name_id || !name)) {
		c->api_name_id[dom][cbid] = *name_id;
		c->api_class[dom][cbid] = (int8_t)*cls;
	}
}

static void convert_api(struct tally_convert *c, const CUpti_ActivityAPI *a, struct tally_record *r)
{
	r->kind = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? TALLY_KIND_DRIVER : TALLY_KIND_RUNTIME;
	r->start = a->start;
	r->end = a->end;
	r->cbid = a->cbid;
	r->process_id = a->processId;
	r->thread_id = a->threadId;
	r->correlation_id = a->correlationId;
	r->value = a->returnValue;
	api_lookup(c, a->kind, a->cbid, &r->name_id, &r->subkind);
	if (r->subkind == TALLY_API_LAUNCH)
		r->flags |= TALLY_REC_LAUNCH;
}

static void convert_sync(const CUpti_ActivitySynchronization2 *s, struct tally_record *r)
{
	r->kind = TALLY_KIND_SYNC;
	r->start = s->start;
	r->end = s->end;
	r->correlation_id = s->correlationId;
	r->context_id = s->contextId;
	r->stream_id = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId;
	r->value = s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->cudaEventId;
	r->subkind = s->type;
}

static void convert_overhead(const CUpti_ActivityOverhead3 *o, struct tally_record *r)
{
	r->kind = TALLY_KIND_OVERHEAD;
	r->start = o->start;
	r->end = o->end;
	r->subkind = o->overheadKind;
	r->correlation_id = o->correlationId;
	r->process_id = o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ||
				o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD
			    ? o->objectId.pt.processId
			    : 0;
	r->thread_id = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
	/* CUPTI hands the detail block to us to free. */
	free(o->overheadData);
}

/* An allocation or release (CUPTI MEMORY2).  With a caching allocator (PyTorch) these are the
 * allocator's reservations from CUDA, not the program's tensors. */
static void convert_memory(const CUpti_ActivityMemory4 *m, struct tally_record *r)
{
	r->kind = TALLY_KIND_MEMORY;
	r->start = r->end = m->timestamp;
	r->subkind = m->memoryOperationType;
	r->src_kind = m->memoryKind;
	r->correlation_id = m->correlationId;
	r->address = m->address;
	r->bytes = m->bytes;
	r->process_id = m->processId;
	r->device_id = m->deviceId;
	r->context_id = m->contextId;
	r->stream_id = m->streamId;
	if (m->isAsync)
		r->flags |= TALLY_REC_ASYNC;
}

static void convert_device(const CUpti_ActivityDevice5 *d, struct tally_buf *kv)
{
	tally_kv_uint(kv, TALLY_DK_ID, d->id);
	tally_kv_str(kv, TALLY_DK_NAME, d->name);
	tally_kv_bytes(kv, TALLY_DK_UUID, d->uuid.bytes, sizeof(d->uuid.bytes));
	tally_kv_uint(kv, TALLY_DK_CC_MAJOR, d->computeCapabilityMajor);
	tally_kv_uint(kv, TALLY_DK_CC_MINOR, d->computeCapabilityMinor);
	tally_kv_uint(kv, TALLY_DK_GLOBAL_MEM, d->globalMemorySize);
	tally_kv_uint(kv, TALLY_DK_SM_COUNT, d->numMultiprocessors);
	/* "Client is responsible for freeing this memory" (cupti_activity.h, Device5.name) */
	free((void *)d->name);
}

/* Open CUPTI marker ranges, by marker id: the one found, or (insert) a new one; NULL when memory
 * ran out, or (not insert) when there is none. */
static struct open_marker *marker_slot(struct tally_convert *c, uint32_t id, bool insert)
{
	uint32_t found = tally_map_get(&c->marker_at, id, 0);

	if (found || !insert)
		return found ? &c->markers[found - 1] : NULL;
	if (c->markers_count >= UINT32_MAX - 1 ||
	    !tally_grow_in(&c->markers, &c->markers_cap, c->markers_count + 1,
			   sizeof(*c->markers)) ||
	    tally_map_put(&c->marker_at, id, 0, (uint32_t)c->markers_count + 1) < 0)
		return NULL;
	c->markers[c->markers_count] = (struct open_marker){.id = id};
	return &c->markers[c->markers_count++];
}

/* The range has ended: the last open one takes its place. */
static void marker_remove(struct tally_convert *c, struct open_marker *m)
{
	size_t i = (size_t)(m - c->markers), last = c->markers_count - 1;

	(void)tally_map_del(&c->marker_at, m->id, 0);
	if (i != last) {
		*m = c->markers[last];
		(void)tally_map_put(&c->marker_at, m->id, 0,
				    (uint32_t)i + 1); /* present: no growth */
	}
	c->markers_count--;
}

static void marker_object(const CUpti_ActivityMarker2 *m, uint32_t *pid, uint32_t *tid)
{
	bool pt = m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ||
		  m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD;

	*pid = pt ? m->objectId.pt.processId : 0;
	*tid = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
}

static enum convert_result convert_marker(struct tally_convert *c, const CUpti_ActivityMarker2 *m,
					  struct tally_record *r)
{
	struct open_marker *o;

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		r->kind = TALLY_KIND_NVTX_MARK;
		r->start = r->end = m->timestamp;
		r->name_id = tally_strtab_intern(c->strings, m->name);
		r->domain_id = tally_strtab_intern(c->strings, m->domain);
		marker_object(m, &r->process_id, &r->thread_id);
		return CONVERT_RECORD;
	}
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		o = m->id ? marker_slot(c, m->id, true) : NULL;
		if (!o)
			return CONVERT_UNKNOWN;
		o->start = m->timestamp;
		o->name_id = tally_strtab_intern(c->strings, m->name);
		o->domain_id = tally_strtab_intern(c->strings, m->domain);
		marker_object(m, &o->process_id, &o->thread_id);
		return CONVERT_NONE;
	}
	o = marker_slot(c, m->id, false);
	r->kind = TALLY_KIND_NVTX_RANGE;
	r->end = m->timestamp;
	if (!o) { /* an end without its start: keep it, flagged */
		r->start = m->timestamp;
		r->flags |= TALLY_REC_DEPTH_LOST;
		marker_object(m, &r->process_id, &r->thread_id);
		return CONVERT_RECORD;
	}
	r->start = o->start;
	r->name_id = o->name_id;
	r->domain_id = o->domain_id;
	r->process_id = o->process_id;
	r->thread_id = o->thread_id;
	r->subkind = 1; /* start/end, as CUPTI reports push/pop too */
	marker_remove(c, o);
	return CONVERT_RECORD;
}

enum convert_result tally_convert(struct tally_convert *c, const CUpti_Activity *rec,
				  struct tally_record *out, struct tally_buf *device)
{
	memset(out, 0, sizeof(*out));
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		convert_kernel(c, (const CUpti_ActivityKernel10 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		convert_memcpy((const CUpti_ActivityMemcpy6 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		convert_p2p((const CUpti_ActivityMemcpyPtoP4 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		convert_memset((const CUpti_ActivityMemset4 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		convert_api(c, (const CUpti_ActivityAPI *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		convert_sync((const CUpti_ActivitySynchronization2 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		convert_overhead((const CUpti_ActivityOverhead3 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		convert_memory((const CUpti_ActivityMemory4 *)rec, out);
		return CONVERT_RECORD;
	case CUPTI_ACTIVITY_KIND_MARKER:
		return convert_marker(c, (const CUpti_ActivityMarker2 *)rec, out);
	case CUPTI_ACTIVITY_KIND_DEVICE:
		convert_device((const CUpti_ActivityDevice5 *)rec, device);
		return CONVERT_DEVICE;
	case CUPTI_ACTIVITY_KIND_CONTEXT:
	case CUPTI_ACTIVITY_KIND_MARKER_DATA:
		return CONVERT_NONE;
	default:
		return CONVERT_UNKNOWN;
	}
}
