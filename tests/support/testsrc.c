/* SPDX-License-Identifier: MIT */
/* The CPU test source; see testsrc.h. */
#include "testsrc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobkeys.h"
#include "stacks.h"
#include "stacktab.h"
#include "tally-format.h"

_Atomic uint64_t testsrc_dropped_pending;
_Atomic uint64_t testsrc_walk_delay_ns;
int64_t testsrc_realtime_shift_ns;

const char *const testsrc_kernel_names[] = {
    "_Z10vectorAddPKfS0_Pfi",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
    "ampere_sgemm_128x64_nn",
    "kernel \"with\" quotes\\and\tcontrol\x01 chars",
    "ядро_κέρνελ_カーネル",
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
    "reduce_kernel<512, 1, ReduceOp<float, Sum>>",
    "bad utf8 \xff\xfe here",
    /* for pages: a name that would end a <script> block and run code if pasted as HTML */
    "</script><img src=x onerror=\"document.body.dataset.pwned=1\">\xe2\x80\xa8<!--",
};
const unsigned testsrc_kernel_names_count =
    sizeof(testsrc_kernel_names) / sizeof(testsrc_kernel_names[0]);

static uint64_t clock_base, clock_real0;

static uint64_t real_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void testsrc_clock_start(uint64_t t0)
{
	clock_real0 = real_now();
	clock_base = t0;
}

/* One clock for records, ledger and session start, so that a fixed --t0 moves them all. */
uint64_t testsrc_now(void)
{
	uint64_t r = real_now();

	return clock_base ? clock_base + (r - clock_real0) : r;
}

static CUptiResult walk(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	uint64_t delay = atomic_load_explicit(&testsrc_walk_delay_ns, memory_order_relaxed);

	if (delay) {
		struct timespec ts = {(time_t)(delay / 1000000000ull),
				      (long)(delay % 1000000000ull)};

		nanosleep(&ts, NULL);
	}
	return cuptiActivityGetNextRecord(buf, valid, rec);
}

static CUptiResult dropped(size_t *n)
{
	*n = (size_t)atomic_exchange_explicit(&testsrc_dropped_pending, 0, memory_order_relaxed);
	return CUPTI_SUCCESS;
}

static const char *api_name(CUpti_ActivityKind kind, uint32_t cbid)
{
	const char *name = NULL;
	CUpti_CallbackDomain dom = kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API
								      : CUPTI_CB_DOMAIN_RUNTIME_API;

	return cuptiGetCallbackName(dom, cbid, &name) == CUPTI_SUCCESS ? name : NULL;
}

const struct tally_source testsrc_source = {
    .next_record = walk,
    .dropped = dropped,
    .now = testsrc_now,
    .api_name = api_name,
};

void testsrc_emitter_init(struct testsrc_emitter *e, uint32_t thread_id, testsrc_observer obs,
			  void *ctx)
{
	memset(e, 0, sizeof(*e));
	e->thread_id = thread_id;
	e->observer = obs;
	e->observer_ctx = ctx;
}

void testsrc_flush(struct testsrc_emitter *e)
{
	if (!e->buf)
		return;
	tally_pipeline_buffer_complete(NULL, 0, e->buf, e->size, e->used);
	e->buffers_completed++;
	e->buf = NULL;
	e->size = e->used = 0;
}

bool testsrc_emit(struct testsrc_emitter *e, const void *rec, size_t size)
{
	if (e->buf && e->size - e->used < size)
		testsrc_flush(e);
	if (!e->buf) {
		size_t max_records;

		tally_pipeline_buffer_request(&e->buf, &e->size, &max_records);
		e->used = 0;
		if (!e->buf || e->size < size) {
			/* No buffer: CUPTI drops the record and counts it. */
			e->buf = NULL;
			e->records_dropped++;
			atomic_fetch_add_explicit(&testsrc_dropped_pending, 1,
						  memory_order_relaxed);
			if (e->observer)
				e->observer(e->observer_ctx, NULL, 0);
			return false;
		}
	}
	memcpy(e->buf + e->used, rec, size);
	e->used += size;
	e->records_placed++;
	if (e->observer)
		e->observer(e->observer_ctx, rec, size);
	return true;
}

/* xorshift32: deterministic durations and sizes per seed */
static uint32_t rnd(uint32_t *s)
{
	uint32_t x = *s ? *s : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

struct gen {
	struct testsrc_emitter *e;
	const struct testsrc_workload *w;
	uint32_t rng, corr;
	uint64_t t;
	uint64_t gpu_count;
	uint64_t paced, pace_start;
};

static void pace(struct gen *g)
{
	uint64_t due;

	if (!g->w->rate)
		return;
	g->paced++;
	due = g->pace_start + g->paced * 1000000000ull / g->w->rate;
	while (testsrc_now() < due)
		;
}

static void emit_api(struct gen *g, CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.cbid = cbid;
	a.start = g->t;
	a.end = g->t + 1500 + rnd(&g->rng) % 3000;
	a.processId = (uint32_t)getpid();
	a.threadId = g->e->thread_id;
	a.correlationId = corr;
	g->t = a.end + 200;
	testsrc_emit(g->e, &a, sizeof(a));
	pace(g);
}

/* GPU timestamps; every bad_time_every-th GPU record loses its timing, as when device
 * buffers run out. */
static void gpu_times(struct gen *g, uint64_t *start, uint64_t *end, uint64_t dur)
{
	g->gpu_count++;
	if (g->w->bad_time_every && g->gpu_count % g->w->bad_time_every == 0) {
		*start = *end = 0;
		return;
	}
	*start = g->t + 3000;
	*end = *start + dur;
}

/* Kernel number i, named by name index ni (a swap gives two launches each other's names). */
static void emit_named_kernel(struct gen *g, uint32_t corr, unsigned i, unsigned ni)
{
	CUpti_ActivityKernel10 k;
	unsigned names = g->w->kernel_names ? g->w->kernel_names : 1;
	unsigned streams = g->w->streams ? g->w->streams : 3;
	uint64_t dur = 2000 + rnd(&g->rng) % 20000;

	if (g->w->scale_name && ni % names == g->w->scale_name - 1)
		dur = (uint64_t)((double)dur * g->w->scale);
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	gpu_times(g, &k.start, &k.end, dur);
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 7 + i % streams;
	k.gridX = 128 << (i % 3);
	k.gridY = 1;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.registersPerThread = 32;
	k.staticSharedMemory = 0;
	k.dynamicSharedMemory = 4096;
	k.correlationId = corr;
	k.name = testsrc_kernel_names[ni % names % testsrc_kernel_names_count];
	k.launchType = 0;
	testsrc_emit(g->e, &k, sizeof(k));
	pace(g);
}

static void emit_kernel(struct gen *g, uint32_t corr, unsigned i)
{
	emit_named_kernel(g, corr, i, i);
}

static void emit_memcpy(struct gen *g, uint32_t corr)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD + rnd(&g->rng) % 3;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m.bytes = 4096ull << (rnd(&g->rng) % 8);
	gpu_times(g, &m.start, &m.end, m.bytes / 20 + 1000);
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	testsrc_emit(g->e, &m, sizeof(m));
	pace(g);
}

static void emit_memset(struct gen *g, uint32_t corr)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.value = 0;
	m.bytes = 1u << (10 + rnd(&g->rng) % 10);
	gpu_times(g, &m.start, &m.end, m.bytes / 100 + 800);
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	testsrc_emit(g->e, &m, sizeof(m));
	pace(g);
}

static void emit_sync(struct gen *g, uint32_t corr)
{
	CUpti_ActivitySynchronization2 s;

	emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
		 CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, corr);
	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	s.start = g->t;
	s.end = g->t + 5000;
	s.correlationId = corr;
	s.contextId = 1;
	s.streamId = 7;
	s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	g->t = s.end;
	testsrc_emit(g->e, &s, sizeof(s));
	pace(g);
}

static void emit_marker(struct gen *g, unsigned flags, uint32_t id, const char *name)
{
	CUpti_ActivityMarker2 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = flags;
	m.timestamp = g->t;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = g->e->thread_id;
	m.name = name;
	m.domain = NULL;
	g->t += 700;
	testsrc_emit(g->e, &m, sizeof(m));
	pace(g);
}

static void emit_unknown(struct gen *g)
{
	CUpti_ActivityCudaEvent2 ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
	testsrc_emit(g->e, &ev, sizeof(ev));
}

static void emit_device(struct gen *g, unsigned id)
{
	CUpti_ActivityDevice5 d;
	const char name[] = "Test GPU (CPU test source)";

	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = id;
	d.computeCapabilityMajor = 9;
	d.computeCapabilityMinor = 0;
	d.globalMemorySize = 141ull << 30;
	d.numMultiprocessors = 132;
	memset(d.uuid.bytes, 0xa0 + (int)id, sizeof(d.uuid.bytes));
	/* CUPTI mallocs the name and the client frees it: do the same. */
	d.name = strdup(name);
	testsrc_emit(g->e, &d, sizeof(d));
}

static void emit_invalid(struct gen *g)
{
	uint8_t junk[64];

	memset(junk, 0, sizeof(junk));
	*(uint32_t *)junk = 0x7fff; /* not a CUPTI_ACTIVITY_KIND */
	testsrc_emit(g->e, junk, sizeof(junk));
}

/* ---- call stacks, through the collector's own interning (stacktab.h) ----------------- */

unsigned testsrc_stack_index(uint32_t correlation_id, unsigned stacks)
{
	return stacks ? correlation_id % stacks : 0;
}

static char frame_files[][64] = {"/work/model.py", "/work/train.py", "/work/main.py"};
static const char lib_file[] = "/usr/lib/python3/dist-packages/torch/nn/functional.py";

unsigned testsrc_stack_frames(unsigned s, struct testsrc_frame out[TESTSRC_STACK_DEPTH])
{
	static char funcs[64][32];
	unsigned n = 0, slot = s % 64;

	snprintf(funcs[slot], sizeof(funcs[slot]), "Layer%u.forward", s);
	if (s % 2)
		out[n++] = (struct testsrc_frame){lib_file, "linear", 2001};
	out[n++] = (struct testsrc_frame){frame_files[0], funcs[slot], 10 + s};
	out[n++] = (struct testsrc_frame){frame_files[1], "step", 42};
	out[n++] = (struct testsrc_frame){frame_files[2], "<module>", 7};
	return n;
}

/* Frame keys: 1 + index into a table of (file, func) the namer reads back. */
static struct testsrc_frame named[256];

static bool name_frame(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
		       size_t func_len)
{
	(void)line; /* the test source records lines as they are */
	if (!key || key > 256)
		return false;
	snprintf(file, file_len, "%s", named[key - 1].file);
	snprintf(func, func_len, "%s", named[key - 1].func);
	return true;
}

static uint64_t frame_key(const struct testsrc_frame *f, unsigned s)
{
	unsigned k = f->line == 2001 ? 0 : f->line == 42 ? 1 : f->line == 7 ? 2 : 3 + s % 250;

	named[k] = *f;
	return k + 1;
}

static void note_stack(struct gen *g, uint32_t corr)
{
	struct testsrc_frame f[TESTSRC_STACK_DEPTH];
	struct raw_frame raw[TESTSRC_STACK_DEPTH];
	unsigned s, n, i;

	if (!g->w->stacks)
		return;
	s = testsrc_stack_index(corr, g->w->stacks);
	n = testsrc_stack_frames(s, f);
	for (i = 0; i < n; i++)
		raw[i] = (struct raw_frame){frame_key(&f[i], s), f[i].line, TALLY_FRAME_PYTHON, 0};
	tally_stacktab_note(corr, tally_stacktab_intern(raw, n, name_frame));
}

static uint32_t next_corr(struct gen *g)
{
	note_stack(g, g->corr);
	return g->corr++;
}

/* ---- host sampling and blocking calls (format 1.3) ---------------------------------------- */

#define HOST_PERIOD_NS 1000000ull

/* A Python stack of the host workload: (file, func, line) innermost first, then <module>. */
static uint32_t host_stack(const char *file, const char *func, unsigned line)
{
	struct testsrc_frame f[2] = {{file, func, line}, {"/work/train.py", "<module>", 99}};
	struct raw_frame raw[2];
	unsigned i;

	for (i = 0; i < 2; i++) {
		/* keys 201..250 by line, 251 the <module>: apart from the launch stacks' */
		unsigned k = i ? 250 : 200 + (line % 50);

		named[k] = f[i];
		raw[i] = (struct raw_frame){k + 1, f[i].line, TALLY_FRAME_PYTHON, 0};
	}
	return tally_stacktab_intern(raw, 2, name_frame);
}

static uint32_t native_stack(unsigned i)
{
	struct raw_frame raw[3] = {
	    {0x1000 + 16 * (i % 4), 0, TALLY_FRAME_NATIVE_PC, 0},
	    {0x2000, 0, TALLY_FRAME_NATIVE, 0},
	    {0x3000, 0, TALLY_FRAME_NATIVE, 0},
	};

	return tally_stacktab_intern(raw, 3, NULL);
}

static struct tally_record host_sample(uint64_t t, uint32_t tid, unsigned source, unsigned state,
				       uint32_t stack)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_CPU_SAMPLE;
	r.start = r.end = t;
	r.thread_id = tid;
	r.process_id = (uint32_t)getpid();
	r.subkind = source;
	r.value = state;
	r.stack_id = stack;
	return r;
}

static struct tally_record host_call(uint64_t t, uint64_t dur, uint32_t tid, unsigned call,
				     uint64_t object)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_OSRT;
	r.start = t;
	r.end = t + dur;
	r.thread_id = tid;
	r.process_id = (uint32_t)getpid();
	r.cbid = call;
	r.address = object;
	return r;
}

static void host_threads(void)
{
	static const struct {
		uint32_t tid;
		unsigned flags;
		const char *name;
	} t[] = {{2001, TALLY_THREADF_MAIN | TALLY_THREADF_PYTHON, "MainThread"},
		 {2002, TALLY_THREADF_PYTHON, "loader"},
		 {2003, 0, "pt_main"}};
	struct tally_buf b = {0};
	unsigned i;

	for (i = 0; i < 3; i++) { /* the low 32 bits: CUPTI's thread id (1000: the launches') */
		tally_buf_put_varint(&b, t[i].tid);
		tally_buf_put_varint(&b, 0x7f0000000000ull + 1000 + i);
		tally_buf_put_varint(&b, t[i].flags);
		tally_buf_put_varint(&b, strlen(t[i].name));
		tally_buf_put(&b, t[i].name, strlen(t[i].name));
	}
	tally_pipeline_threads(&b);
	tally_buf_fini(&b);
	tally_pipeline_count(TALLY_C_THREADS_SEEN, 3);
}

/* The Python samples of one thread: first half in a (state, stack), the second in another;
 * with a third (state, stack), every 20th sample of the first half is in that one instead. */
static size_t python_samples(struct tally_record *r, const struct testsrc_host *h, uint64_t t0,
			     uint32_t tid, const unsigned state[3], const uint32_t stack[3])
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < h->samples; i++) {
		unsigned half = i >= h->samples / 2;
		bool torn = h->torn_every && (i + 1) % h->torn_every == 0;

		if (!half && stack[2] && i % 20 == 0)
			half = 2;
		r[n] = host_sample(t0 + i * HOST_PERIOD_NS, tid, TALLY_SAMPLE_PYTHON, state[half],
				   torn ? 0 : stack[half]);
		r[n].flags = torn ? TALLY_REC_TORN : 0;
		n++;
	}
	return n;
}

void testsrc_host_run(const struct testsrc_host *h, uint64_t t0)
{
	unsigned main_state[3] = {TALLY_THREAD_ON_CPU, TALLY_THREAD_WAITING, 0};
	unsigned loader_state[3] = {TALLY_THREAD_WAITING, TALLY_THREAD_WAITING, 0};
	uint32_t main_stack[3] = {0}, loader_stack[3] = {0};
	size_t n = 0, cap = 3 * (size_t)h->samples + 2 * (size_t)h->calls + 1;
	struct tally_record *r = calloc(cap, sizeof(*r));
	uint64_t torn = 0;
	unsigned i;

	if (!r)
		return;
	host_threads();
	main_stack[0] = host_stack("/work/train.py", "compute", 20);
	main_stack[1] = host_stack("/work/train.py", "sleep_between", 30);
	loader_stack[0] = loader_stack[1] = host_stack("/work/data.py", "Loader.get", 55);
	if (h->starved) { /* the launching thread waits for the loader, then computes */
		main_stack[1] = main_stack[0];
		main_stack[0] = loader_stack[0];
		loader_stack[0] = host_stack("/work/data.py", "Loader.fill", 70);
		main_state[0] = loader_state[1] = TALLY_THREAD_WAITING;
		main_state[1] = loader_state[0] = TALLY_THREAD_ON_CPU;
	}
	if (h->starved == STARVED_RARE) { /* waiting, and on the CPU one sample in 20 */
		loader_stack[2] = loader_stack[0];
		loader_state[2] = TALLY_THREAD_ON_CPU;
		loader_stack[0] = loader_stack[1];
		loader_state[0] = TALLY_THREAD_WAITING;
	}
	n += python_samples(r + n, h, t0, 2001, main_state, main_stack);
	n += python_samples(r + n, h, t0, 2002, loader_state, loader_stack);
	for (i = 0; i < h->samples; i++)
		r[n++] = host_sample(t0 + i * HOST_PERIOD_NS + 500000, 2003, TALLY_SAMPLE_PERF,
				     TALLY_THREAD_ON_CPU, native_stack(i));
	for (i = 0; i < h->calls; i++) {
		r[n++] = host_call(t0 + i * 20 * HOST_PERIOD_NS, 10 * HOST_PERIOD_NS, 2001,
				   TALLY_OSRT_CLOCK_NANOSLEEP, 0);
		r[n++] = host_call(t0 + i * 20 * HOST_PERIOD_NS, 5 * HOST_PERIOD_NS, 2002,
				   TALLY_OSRT_PTHREAD_COND_TIMEDWAIT, 0x5000);
	}
	if (h->torn_every)
		torn = 2 * (uint64_t)(h->samples / h->torn_every);
	tally_pipeline_count(TALLY_C_SAMPLES_TAKEN, 3 * (uint64_t)h->samples + h->dropped_samples);
	tally_pipeline_count(TALLY_C_SAMPLES_TORN, torn);
	tally_pipeline_count(TALLY_C_SAMPLES_DROPPED, h->dropped_samples);
	(void)tally_pipeline_host_records(r, n);
}

void testsrc_host_session(struct tally_buf *b)
{
	tally_kv_uint(b, TALLY_SK_SAMPLE, TALLY_SAMPLE_BIT_PYTHON | TALLY_SAMPLE_BIT_NATIVE);
	tally_kv_uint(b, TALLY_SK_SAMPLE_RATE, 1000);
	tally_kv_str(b, TALLY_SK_SAMPLE_MECHANISM,
		     "perf: made up by the test source (tally-testsrc --host)");
	tally_kv_uint(b, TALLY_SK_OSRT_THRESHOLD, 1000);
}

/* ---- memory ------------------------------------------------------------------------------ */

uint64_t testsrc_alloc_bytes(unsigned i)
{
	return (1ull << 20) * (1 + i % 4);
}

uint64_t testsrc_alloc_address(unsigned i)
{
	return 0x7f0000000000ull + (uint64_t)i * 0x10000000ull;
}

static void emit_memory(struct gen *g, unsigned i, unsigned op)
{
	CUpti_ActivityMemory4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = op;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.address = testsrc_alloc_address(i);
	m.bytes = testsrc_alloc_bytes(i);
	m.timestamp = g->t;
	m.processId = (uint32_t)getpid();
	m.deviceId = 0;
	m.contextId = 1;
	g->t += 1000;
	testsrc_emit(g->e, &m, sizeof(m));
	pace(g);
}

static void gen_memory(struct gen *g)
{
	unsigned i;

	for (i = 0; i < g->w->mem_allocs; i++)
		emit_memory(g, i, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
	for (i = 0; i < g->w->mem_allocs; i++)
		emit_memory(g, i, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
}

static unsigned swapped(const struct testsrc_workload *w, unsigned i)
{
	if (w->swap_at && i == w->swap_at)
		return i + 1;
	if (w->swap_at && i == w->swap_at + 1)
		return i - 1;
	return i;
}

static void sleep_until(uint64_t t)
{
	uint64_t now;

	while ((now = testsrc_now()) < t) {
		struct timespec ts = {0, (long)(t - now < 1000000 ? t - now : 1000000)};

		nanosleep(&ts, NULL);
	}
}

/* An idle stretch: the clock jumps, real time catches up; drops come halfway through. */
static void idle(struct gen *g, const struct testsrc_idle *d)
{
	uint64_t now = testsrc_now(), half = (uint64_t)d->ms * 500000ull;

	if (g->t < now)
		g->t = now;
	sleep_until(g->t + half);
	if (d->drops) {
		testsrc_flush(g->e); /* so that the consumer runs and reads the count now */
		atomic_fetch_add_explicit(&testsrc_dropped_pending, d->drops, memory_order_relaxed);
		g->e->records_dropped += d->drops;
	}
	g->t += 2 * half;
	sleep_until(g->t);
}

/* NVTX range "iter" around every range_every launches; idle stretches; real-time pacing. */
static void before_launch(struct gen *g, unsigned i)
{
	const struct testsrc_workload *w = g->w;
	unsigned k;

	for (k = 0; k < w->nidle; k++)
		if (w->idle[k].at == i)
			idle(g, &w->idle[k]);
	if (w->nidle)
		sleep_until(g->t); /* the clock never runs ahead of real time */
	if (w->range_every && i % w->range_every == 0)
		emit_marker(g, CUPTI_ACTIVITY_FLAG_MARKER_START,
			    500000u + g->e->thread_id * 1000000u + i / w->range_every, "iter");
}

static void after_launch(struct gen *g, unsigned i)
{
	const struct testsrc_workload *w = g->w;

	if (w->range_every && ((i + 1) % w->range_every == 0 || i + 1 == w->kernels))
		emit_marker(g, CUPTI_ACTIVITY_FLAG_MARKER_END,
			    500000u + g->e->thread_id * 1000000u + i / w->range_every, NULL);
}

static void gen_launches(struct gen *g)
{
	const struct testsrc_workload *w = g->w;
	unsigned i;

	for (i = 0; i < w->kernels; i++) {
		uint32_t c = next_corr(g);

		before_launch(g, i);
		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, c);
		emit_named_kernel(g, c, i, swapped(w, i));
		after_launch(g, i);
	}
	for (i = 0; i < w->driver_kernels; i++) {
		uint32_t c = next_corr(g);

		emit_api(g, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, c);
		emit_kernel(g, c, i);
	}
	for (i = 0; i < w->memcpys; i++) {
		uint32_t c = next_corr(g);

		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, c);
		emit_memcpy(g, c);
	}
	for (i = 0; i < w->memsets; i++) {
		uint32_t c = next_corr(g);

		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, c);
		emit_memset(g, c);
	}
}

/* Capture graph_kernels launches into a graph, then replay it graph_replays times: each replay's
 * kernels carry the correlation id of its cudaGraphLaunch, as CUPTI reports them. */
static void gen_graph(struct gen *g)
{
	const struct testsrc_workload *w = g->w;
	unsigned r, i;

	if (!w->graph_kernels)
		return;
	emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
		 CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, next_corr(g));
	for (i = 0; i < w->graph_kernels; i++)
		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, next_corr(g));
	emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
		 CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, next_corr(g));
	for (r = 0; r < w->graph_replays; r++) {
		uint32_t c = next_corr(g);

		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, c);
		for (i = 0; i < w->graph_kernels; i++)
			emit_kernel(g, c, i);
	}
}

static void gen_rest(struct gen *g)
{
	const struct testsrc_workload *w = g->w;
	unsigned i;

	for (i = 0; i < w->syncs; i++)
		emit_sync(g, next_corr(g));
	for (i = 0; i < w->ranges; i++) {
		uint32_t id = 1 + g->e->thread_id * 1000000u + i;

		emit_marker(g, CUPTI_ACTIVITY_FLAG_MARKER_START, id, i % 2 ? "forward" : "step");
		emit_marker(g, CUPTI_ACTIVITY_FLAG_MARKER_END, id, NULL);
	}
	for (i = 0; i < w->marks; i++)
		emit_marker(g, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 0, "checkpoint");
	for (i = 0; i < w->orphan_launches; i++)
		emit_api(g, CUPTI_ACTIVITY_KIND_RUNTIME,
			 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, next_corr(g));
	for (i = 0; i < w->orphan_gpu; i++)
		emit_kernel(g, next_corr(g), i);
	for (i = 0; i < w->unknown_kind; i++)
		emit_unknown(g);
	for (i = 0; i < w->device_records; i++)
		emit_device(g, i);
	if (w->invalid_tail)
		emit_invalid(g);
}

uint32_t testsrc_run(struct testsrc_emitter *e, const struct testsrc_workload *w,
		     uint32_t first_correlation)
{
	struct gen g = {.e = e, .w = w, .rng = w->seed, .corr = first_correlation};

	g.t = w->t0 ? w->t0 : testsrc_now();
	g.pace_start = testsrc_now();
	gen_launches(&g);
	gen_graph(&g);
	gen_memory(&g);
	gen_rest(&g);
	return g.corr;
}

void testsrc_session(struct tally_buf *b, uint64_t kinds_mask)
{
	char host[256] = "testhost";
	const char cmd[] = "testsrc\0--workload";
	uint8_t id[16];
	unsigned i;

	gethostname(host, sizeof(host) - 1);
	/* Unique per run, as the collector's are: readers count a repeated id once. */
	uint64_t x = real_now() ^ (uint64_t)getpid() << 32;

	for (i = 0; i < 16; i++) {
		x += 0x9e3779b97f4a7c15ull; /* splitmix64 */
		uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;

		id[i] = (uint8_t)((z ^ (z >> 27)) >> 56);
	}
	tally_kv_str(b, TALLY_SK_WRITER,
		     "tally "
		     "0.1.0");
	tally_kv_str(b, TALLY_SK_HOST, host);
	tally_kv_uint(b, TALLY_SK_PID, (uint64_t)getpid());
	tally_kv_uint(b, TALLY_SK_PPID, (uint64_t)getppid());
	tally_kv_bytes(b, TALLY_SK_CMDLINE, cmd, sizeof(cmd) - 1);
	/* the pair maps the records' clock (testsrc_now, maybe moved by --t0) to real time */
	tally_kv_uint(b, TALLY_SK_START_REALTIME, real_now() + (uint64_t)testsrc_realtime_shift_ns);
	tally_kv_uint(b, TALLY_SK_START_CUPTI, testsrc_now());
	tally_kv_uint(b, TALLY_SK_CUPTI_VERSION, CUPTI_API_VERSION);
	tally_kv_uint(b, TALLY_SK_KINDS, kinds_mask);
	tally_kv_bytes(b, TALLY_SK_SESSION_ID, id, sizeof(id));
	tally_kv_str(b, TALLY_SK_SOURCE, "testsrc");
	/* RANK, as the collector records it, so tests can make the traces of a multi-rank run */
	if (getenv("RANK")) {
		char rank[64];

		snprintf(rank, sizeof(rank), "RANK=%s", getenv("RANK"));
		tally_kv_str(b, TALLY_SK_RANK, rank);
	}
	tally_job_keys(b); /* SLURM_JOB_ID, TORCHELASTIC_RUN_ID, WORLD_SIZE ... as the collector */
}

int fault_sink_release(void *ctx)
{
	struct fault_sink *s = ctx;

	s->released++;
	s->fail_after = (s->accepted > s->fail_after ? s->accepted : s->fail_after) + s->reserve;
	s->reserve = 0;
	return 0;
}

ssize_t fault_sink_write(void *ctx, const void *buf, size_t len)
{
	struct fault_sink *s = ctx;
	ssize_t n;

	if (s->accepted >= s->fail_after && s->calls_failed < s->fail_count) {
		s->calls_failed++;
		if (s->fail_errno)
			return -s->fail_errno;
		if (len > s->short_max)
			len = s->short_max;
	} else if (s->accepted + len > s->fail_after && s->calls_failed < s->fail_count) {
		len = (size_t)(s->fail_after - s->accepted); /* a write that the disk cuts short */
		if (!len)
			return s->fail_errno ? -s->fail_errno : 0;
	}
	n = s->fd >= 0 ? write(s->fd, buf, len) : (ssize_t)len;
	if (n < 0)
		return -errno;
	s->accepted += (uint64_t)n;
	return n;
}

/* ---- training steps with exact times (testsrc_run_steps) ---------------------------------- */

#define STEP_LATENCY_NS 5000u /* a launch call's start to the earliest start of its work */
#define STEP_CALL_GAP	1000u /* between one call's end and the next call */

struct steps_gen {
	struct testsrc_emitter *e;
	const struct testsrc_steps *st;
	uint32_t corr;
	uint64_t h, gpu; /* the host's time, the compute stream's end */
};

static void exact_api(struct steps_gen *s, uint32_t cbid, uint64_t start, uint64_t end,
		      uint32_t corr)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = cbid;
	a.start = start;
	a.end = end;
	a.processId = (uint32_t)getpid();
	a.threadId = s->e->thread_id;
	a.correlationId = corr;
	testsrc_emit(s->e, &a, sizeof(a));
}

static void exact_kernel(struct steps_gen *s, const char *name, uint32_t stream, uint64_t start,
			 uint64_t end, uint32_t corr)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = start;
	k.end = end;
	k.contextId = 1;
	k.streamId = stream;
	k.gridX = k.gridY = k.gridZ = 1;
	k.blockX = 128;
	k.blockY = k.blockZ = 1;
	k.correlationId = corr;
	k.name = name;
	testsrc_emit(s->e, &k, sizeof(k));
}

static void exact_marker(struct steps_gen *s, unsigned flags, uint32_t id, uint64_t t)
{
	CUpti_ActivityMarker2 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = flags;
	m.timestamp = t;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = s->e->thread_id;
	m.name = flags == CUPTI_ACTIVITY_FLAG_MARKER_START ? "step" : NULL;
	testsrc_emit(s->e, &m, sizeof(m));
}

/* A launch call now; its work starts at the latency after it, or at `after`, if later. */
static uint64_t exact_launch(struct steps_gen *s, uint64_t after, uint32_t *corr)
{
	uint64_t call = s->st->launch_ns ? s->st->launch_ns : 4000, start = s->h + STEP_LATENCY_NS;

	*corr = s->corr++;
	exact_api(s, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s->h, s->h + call, *corr);
	s->h += call + STEP_CALL_GAP;
	return start > after ? start : after;
}

static void exact_copy(struct steps_gen *s)
{
	CUpti_ActivityMemcpy6 m;
	uint64_t call = s->st->launch_ns ? s->st->launch_ns : 4000;
	uint64_t start = s->h + STEP_LATENCY_NS > s->gpu ? s->h + STEP_LATENCY_NS : s->gpu;
	uint32_t corr = s->corr++;

	exact_api(s, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, s->h, s->h + call, corr);
	s->h += call + STEP_CALL_GAP;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m.bytes = 1u << 20;
	m.start = start;
	m.end = start + s->st->copy_ns;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	testsrc_emit(s->e, &m, sizeof(m));
	s->gpu = m.end;
}

static void exact_step(struct steps_gen *s, unsigned k)
{
	const struct testsrc_steps *st = s->st;
	int64_t jitter = ((int64_t)(k * 7) % 5 - 2) * (int64_t)st->jitter_ns;
	uint64_t first = 0, comm_end = 0, t;
	uint32_t corr;
	unsigned i;

	exact_marker(s, CUPTI_ACTIVITY_FLAG_MARKER_START, 1000000u + k, s->h);
	if (st->copy_ns)
		exact_copy(s);
	for (i = 0; i < st->kernels; i++) {
		t = exact_launch(s, s->gpu, &corr);
		first = i ? first : t;
		exact_kernel(s, TESTSRC_STEP_KERNEL, 7, t, t + st->kernel_ns + (uint64_t)jitter,
			     corr);
		s->gpu = t + st->kernel_ns + (uint64_t)jitter;
	}
	if (st->comm_ns) {
		t = exact_launch(s, first + st->comm_at_ns, &corr);
		comm_end = t + st->comm_ns;
		exact_kernel(s, TESTSRC_COMM_KERNEL, 8, t, comm_end, corr);
	}
	/* the host waits for the GPU, then idles, then ends the step */
	t = (s->gpu > comm_end ? s->gpu : comm_end) + STEP_CALL_GAP;
	t = t > s->h ? t : s->h;
	exact_api(s, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, s->h, t, s->corr++);
	s->h = t + st->sleep_ns;
	exact_marker(s, CUPTI_ACTIVITY_FLAG_MARKER_END, 1000000u + k, s->h);
	s->h += st->gap_ns;
}

uint32_t testsrc_run_steps(struct testsrc_emitter *e, const struct testsrc_workload *w,
			   uint32_t first_correlation)
{
	struct steps_gen s = {.e = e, .st = &w->st, .corr = first_correlation};
	unsigned k;

	s.h = w->t0 ? w->t0 : testsrc_now();
	s.gpu = s.h;
	if (w->st.mem_bytes) {
		CUpti_ActivityMemory4 m;

		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
		m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
		m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m.address = testsrc_alloc_address(0);
		m.bytes = w->st.mem_bytes;
		m.timestamp = s.h;
		m.processId = (uint32_t)getpid();
		m.contextId = 1;
		testsrc_emit(e, &m, sizeof(m));
		s.h += 1000;
	}
	for (k = 0; k < w->st.steps; k++)
		exact_step(&s, k);
	return s.corr;
}
