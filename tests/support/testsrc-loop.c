/* SPDX-License-Identifier: MIT */
/*
 * Training loops with exact times for the step verdicts (testsrc.h, testsrc_loop_run): the
 * launching process's CUDA records, NVTX ranges, host samples and blocking calls, and its
 * DataLoader workers' samples, each from one schedule so that a worker's busy time falls in the
 * launcher's waits.  A sample every millisecond per thread, its state and stack those of the
 * phase it falls in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacks.h"
#include "stacktab.h"
#include "tally-format.h"
#include "testsrc.h"

#define LOOP_PERIOD_NS 1000000ull /* a sample per thread every millisecond */
#define LOOP_LATENCY   5000u	  /* a launch call's start to the earliest start of its work */
#define LOOP_CALL_GAP  1000u	  /* between one call's end and the next */
#define LOOP_COPY_NS   2000u	  /* the copy of a synchronizing call (.item()) */

/* ---- frames and stacks ----------------------------------------------------------------------- */

struct lframe {
	const char *file, *func;
	unsigned line;
};

#define TORCH  "/usr/lib/python3/site-packages/torch"
#define PYLIB  "/usr/lib/python3.12"
#define SCRIPT "/work/loop.py"

/* Frames by key - 5001; stacks below list keys innermost first. */
static const struct lframe frames[] = {
    /* 1 */ {SCRIPT, "<module>", 40},
    /* 2 */ {SCRIPT, "one_step", 12},		/* x = next(loader) */
    /* 3 */ {SCRIPT, "one_step", 14},		/* loss = model(x) */
    /* 4 */ {SCRIPT, "one_step", 19},		/* v = loss.item() */
    /* 5 */ {SCRIPT, "one_step", 20},		/* burn(host_ms) */
    /* 6 */ {SCRIPT, "burn", 5},		/* the burning line */
    /* 7 */ {SCRIPT, "Samples.__getitem__", 9}, /* burn(cpu_ms) in the worker */
    /* 8 */ {TORCH "/utils/data/dataloader.py", "_MultiProcessingDataLoaderIter._next_data", 1329},
    /* 9 */ {PYLIB "/queue.py", "Queue.get", 180},
    /* 10 */ {PYLIB "/threading.py", "Condition.wait", 359},
    /* 11 */ {TORCH "/nn/modules/linear.py", "Linear.forward", 125},
    /* 12 */ {TORCH "/utils/data/_utils/fetch.py", "_MapDatasetFetcher.fetch", 52},
    /* 13 */ {TORCH "/utils/data/_utils/worker.py", "_worker_loop", 349},
    /* 14 */ {PYLIB "/multiprocessing/connection.py", "Connection._poll", 440},
    /* 15 */ {PYLIB "/multiprocessing/queues.py", "Queue.get", 113},
    /* 16 */ {TORCH "/utils/data/_utils/pin_memory.py", "_pin_memory_loop", 52},
    /* 17 */ {PYLIB "/multiprocessing/queues.py", "Queue._feed", 251},
    /* 18 */ {PYLIB "/threading.py", "Thread.run", 1010},
    /* 19 */ {"<frozen importlib._bootstrap>", "_call_with_frames_removed", 488},
    /* 20 */ {SCRIPT, "<module>", 3}, /* import torch */
    /* 21 */ {TORCH "/nn/modules/module.py", "Module._apply", 900},
    /* 22 */ {TORCH "/nn/modules/module.py", "Module.cuda", 1050},
    /* 23 */ {SCRIPT, "<module>", 30}, /* model.cuda() */
    /* 24 */ {SCRIPT, "save", 60},
    /* 25 */ {SCRIPT, "<module>", 62},
};
#define NFRAMES (sizeof(frames) / sizeof(frames[0]))
#define KEY0	5000u

enum loop_stack {
	ST_DATA_WAIT, /* the launcher waits for the next batch */
	ST_LAUNCH,    /* the launcher runs the model: on the CPU */
	ST_SYNC,      /* the launcher in loss.item() */
	ST_HOST,      /* the launcher's host work after the sync */
	ST_WORKER,    /* a worker in __getitem__ */
	ST_IDLE_WORKER,
	ST_PIN,
	ST_FEEDER,
	ST_IMPORTS,
	ST_MODEL_CUDA,
	ST_TAIL,
	NSTACKS,
};

static const unsigned stack_keys[NSTACKS][6] = {
    [ST_DATA_WAIT] = {10, 9, 8, 2, 1},
    [ST_LAUNCH] = {11, 3, 1},
    [ST_SYNC] = {4, 1},
    [ST_HOST] = {6, 5, 1},
    [ST_WORKER] = {6, 7, 12, 13},
    [ST_IDLE_WORKER] = {14, 15, 13},
    [ST_PIN] = {14, 15, 16, 18},
    [ST_FEEDER] = {10, 17, 18},
    [ST_IMPORTS] = {19, 20},
    [ST_MODEL_CUDA] = {21, 22, 23},
    [ST_TAIL] = {24, 25},
};

static bool name_frame(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
		       size_t func_len)
{
	(void)line;
	if (key <= KEY0 || key > KEY0 + NFRAMES)
		return false;
	snprintf(file, file_len, "%s", frames[key - KEY0 - 1].file);
	snprintf(func, func_len, "%s", frames[key - KEY0 - 1].func);
	return true;
}

static uint32_t stack_id(enum loop_stack s)
{
	struct raw_frame raw[6];
	unsigned n;

	for (n = 0; n < 6 && stack_keys[s][n]; n++) {
		const struct lframe *f = &frames[stack_keys[s][n] - 1];

		raw[n] =
		    (struct raw_frame){KEY0 + stack_keys[s][n], f->line, TALLY_FRAME_PYTHON, 0};
	}
	return tally_stacktab_intern(raw, n, name_frame);
}

/* ---- the schedule ------------------------------------------------------------------------------
 */

/* A stretch of one thread's time in one state and stack. */
struct phase {
	uint64_t t0, t1;
	unsigned state;
	enum loop_stack stack;
};

struct sched {
	const struct testsrc_loop *l;
	struct testsrc_emitter *e; /* NULL: a worker's schedule (no CUDA records) */
	unsigned worker;	   /* the worker whose phases are wanted (e == NULL) */
	uint64_t h, g;		   /* the host's time, the GPU's */
	uint32_t corr;
	struct phase *ph;
	size_t n, cap;
	struct tally_record *osrt; /* the blocking calls, handed in at once (the pipeline frees) */
	size_t nosrt, osrt_cap;
};

static void phase(struct sched *s, uint64_t t0, uint64_t t1, unsigned state, enum loop_stack st)
{
	bool worker_phase = st == ST_WORKER;

	if (t1 <= t0 || worker_phase == (s->e != NULL)) /* each schedule keeps its own thread's */
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct phase *p = realloc(s->ph, cap * sizeof(*p));

		if (!p)
			return;
		s->ph = p;
		s->cap = cap;
	}
	s->ph[s->n++] = (struct phase){t0, t1, state, st};
}

static void api(struct sched *s, uint32_t cbid, uint64_t t0, uint64_t t1, uint32_t corr)
{
	CUpti_ActivityAPI a;

	if (!s->e)
		return;
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = cbid;
	a.start = t0;
	a.end = t1;
	a.processId = (uint32_t)getpid();
	a.threadId = s->e->thread_id;
	a.correlationId = corr;
	testsrc_emit(s->e, &a, sizeof(a));
}

static void kernel(struct sched *s, const char *name, uint32_t stream, uint64_t t0, uint64_t t1,
		   uint32_t corr)
{
	CUpti_ActivityKernel10 k;

	if (!s->e)
		return;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = t0;
	k.end = t1;
	k.contextId = 1;
	k.streamId = stream;
	k.gridX = k.gridY = k.gridZ = 1;
	k.blockX = 128;
	k.blockY = k.blockZ = 1;
	k.correlationId = corr;
	k.name = name;
	testsrc_emit(s->e, &k, sizeof(k));
}

static void copy(struct sched *s, unsigned kind, uint64_t t0, uint64_t t1, uint32_t corr)
{
	CUpti_ActivityMemcpy6 m;

	if (!s->e)
		return;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = (uint8_t)kind;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.bytes = 4096;
	m.start = t0;
	m.end = t1;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = corr;
	testsrc_emit(s->e, &m, sizeof(m));
}

static void marker(struct sched *s, bool start, uint32_t id, uint64_t t, const char *name)
{
	CUpti_ActivityMarker2 m;

	if (!s->e)
		return;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = start ? CUPTI_ACTIVITY_FLAG_MARKER_START : CUPTI_ACTIVITY_FLAG_MARKER_END;
	m.timestamp = t;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = s->e->thread_id;
	m.name = start ? name : NULL;
	testsrc_emit(s->e, &m, sizeof(m));
}

/* A blocking call of the main thread, kept for one hand-in at the end (the pipeline's queue
 * holds a bounded number of hand-ins). */
static void blocking(struct sched *s, uint64_t t0, uint64_t t1, unsigned call)
{
	struct tally_record *r;

	if (!s->e || !s->l->osrt)
		return;
	if (s->nosrt == s->osrt_cap) {
		size_t cap = s->osrt_cap ? 2 * s->osrt_cap : 64;
		struct tally_record *t = realloc(s->osrt, cap * sizeof(*t));

		if (!t)
			return;
		s->osrt = t;
		s->osrt_cap = cap;
	}
	r = &s->osrt[s->nosrt++];
	memset(r, 0, sizeof(*r));
	r->kind = TALLY_KIND_OSRT;
	r->start = t0;
	r->end = t1;
	r->thread_id = (uint32_t)getpid();
	r->process_id = (uint32_t)getpid();
	r->cbid = call;
}

/* The kernel names of a step: the first and the last once each (the pattern marks a step by
 * the first), the others alternating. */
static const char *const step_kernels[] = {"loop_embed_kernel", "loop_gemm_kernel",
					   "loop_norm_kernel", "loop_adam_kernel"};

static const char *kernel_name(unsigned i, unsigned n)
{
	if (i == 0)
		return step_kernels[0];
	if (i + 1 == n)
		return step_kernels[3];
	return step_kernels[1 + i % 2];
}

/* A launch call now; its work runs after the latency and after the GPU's earlier work. */
static void launch(struct sched *s, const char *name, uint32_t stream, uint64_t ns)
{
	uint64_t call = s->l->launch_ns, start = s->h + LOOP_LATENCY;
	uint32_t corr = s->corr++;

	start = start > s->g ? start : s->g;
	api(s, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s->h, s->h + call, corr);
	kernel(s, name, stream, start, start + ns, corr);
	s->g = start + ns;
	s->h += call + LOOP_CALL_GAP;
}

/* loss.item(): a blocking copy of the loss, waiting for every kernel before it. */
static void item(struct sched *s)
{
	uint64_t start = s->h + LOOP_LATENCY, end;
	uint32_t corr = s->corr++;

	start = start > s->g ? start : s->g;
	end = start + LOOP_COPY_NS;
	if (s->e && s->l->call_stacks) /* --python-stacks: the collector's stack of the launch */
		tally_stacktab_note(corr, stack_id(ST_SYNC));
	api(s, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, s->h, end + LOOP_CALL_GAP, corr);
	copy(s, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, start, end, corr);
	phase(s, s->h, end + LOOP_CALL_GAP, TALLY_THREAD_WAITING, ST_SYNC);
	s->g = end;
	s->h = end + LOOP_CALL_GAP;
}

/* Worker k during a wait [t0, t1): worker 0 works all of it, worker 1 its first half. */
static void workers(struct sched *s, uint64_t t0, uint64_t t1)
{
	uint64_t mid = t0 + (t1 - t0) / 2;

	if (s->e)
		return;
	phase(s, t0, s->worker == 0 ? t1 : mid, TALLY_THREAD_ON_CPU, ST_WORKER);
}

static void step(struct sched *s, unsigned k)
{
	static char names[4096][16];
	const struct testsrc_loop *l = s->l;
	uint64_t t;
	unsigned i;

	snprintf(names[k % 4096], sizeof(names[0]), "step %u", k);
	if (!l->no_ranges)
		marker(s, true, 1000000u + k, s->h, names[k % 4096]);
	if (l->data_ns) {
		phase(s, s->h, s->h + l->data_ns, TALLY_THREAD_WAITING, ST_DATA_WAIT);
		blocking(s, s->h, s->h + l->data_ns, TALLY_OSRT_SEM_CLOCKWAIT);
		workers(s, s->h, s->h + l->data_ns);
		s->h += l->data_ns;
	}
	t = s->h;
	for (i = 0; i < l->kernels; i++)
		launch(s, kernel_name(i, l->kernels), 7, l->kernel_ns);
	if (l->comm_ns)
		launch(s, TESTSRC_COMM_KERNEL, 8, l->comm_ns);
	phase(s, t, s->h, TALLY_THREAD_ON_CPU, ST_LAUNCH);
	if (l->sync) {
		item(s);
		phase(s, s->h, s->h + l->host_ns, TALLY_THREAD_ON_CPU, ST_HOST);
		s->h += l->host_ns;
	}
	if (!l->no_ranges)
		marker(s, false, 1000000u + k, s->h, NULL);
}

/* The whole run's phases (and, for the launcher, its records). */
static void schedule(struct sched *s, uint64_t t0)
{
	const struct testsrc_loop *l = s->l;
	unsigned k;

	s->h = s->g = t0;
	s->corr = 1;
	if (l->startup_ns) { /* imports, then the model to the GPU (one copy) */
		uint64_t mid = t0 + l->startup_ns / 2;
		uint32_t corr = s->corr++;

		phase(s, t0, mid, TALLY_THREAD_ON_CPU, ST_IMPORTS);
		phase(s, mid, t0 + l->startup_ns, TALLY_THREAD_ON_CPU, ST_MODEL_CUDA);
		api(s, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, mid, mid + 10000, corr);
		copy(s, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, mid + 20000, mid + 1020000, corr);
		s->g = mid + 1020000;
		s->h = t0 + l->startup_ns;
	}
	for (k = 0; k < l->steps; k++)
		step(s, k);
	if (l->tail_ns) {
		phase(s, s->h, s->h + l->tail_ns, TALLY_THREAD_ON_CPU, ST_TAIL);
		s->h += l->tail_ns;
	}
}

/* ---- samples ------------------------------------------------------------------------------------
 */

static struct tally_record sample(uint64_t t, uint32_t tid, unsigned state, uint32_t stack)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_CPU_SAMPLE;
	r.start = r.end = t;
	r.thread_id = tid;
	r.process_id = (uint32_t)getpid();
	r.subkind = TALLY_SAMPLE_PYTHON;
	r.value = state;
	r.stack_id = stack;
	return r;
}

/* The main thread's (or a worker's) sample at t: the phase holding it, if any (phases come in
 * time order and do not overlap). */
static void sample_at(const struct sched *s, size_t *cur, uint64_t t, unsigned *state,
		      enum loop_stack *st)
{
	while (*cur < s->n && s->ph[*cur].t1 <= t)
		(*cur)++;
	if (*cur < s->n && s->ph[*cur].t0 <= t) {
		*state = s->ph[*cur].state;
		*st = s->ph[*cur].stack;
	}
}

static void threads_chunk(uint32_t pid, bool launcher)
{
	static const char *const names[] = {"MainThread", "pt_pin_memory", "QueueFeederThread"};
	struct tally_buf b = {0};
	unsigned i, n = launcher ? 3 : 1;

	for (i = 0; i < n; i++) {
		tally_buf_put_varint(&b, pid + i);
		tally_buf_put_varint(&b, 0x7f0000000000ull + 1000 + i);
		tally_buf_put_varint(&b, (i == 0 ? TALLY_THREADF_MAIN : 0) | TALLY_THREADF_PYTHON);
		tally_buf_put_varint(&b, strlen(names[i]));
		tally_buf_put(&b, names[i], strlen(names[i]));
	}
	tally_pipeline_threads(&b);
	tally_buf_fini(&b);
}

/* A sample a millisecond per thread over [t0, end): the main thread's from its phases (on the
 * CPU where none holds it), the launcher's pin-memory and feeder threads waiting by design, a
 * worker idle by design outside its phases. */
#define BATCH 16384 /* samples handed to the pipeline at once (it takes the buffer) */

static void samples(struct sched *s, uint64_t t0, uint64_t end, bool launcher)
{
	uint32_t pid = (uint32_t)getpid(), ids[NSTACKS];
	struct tally_record *r = NULL;
	size_t n = 0, cur = 0;
	uint64_t t, taken = 0;
	unsigned k;

	for (k = 0; k < NSTACKS; k++)
		ids[k] = stack_id((enum loop_stack)k);
	threads_chunk(pid, launcher);
	for (t = t0; t < end; t += LOOP_PERIOD_NS) {
		unsigned state = launcher ? TALLY_THREAD_ON_CPU : TALLY_THREAD_WAITING;
		enum loop_stack st = launcher ? ST_LAUNCH : ST_IDLE_WORKER;

		if (!r && !(r = calloc(BATCH, sizeof(*r))))
			return;
		sample_at(s, &cur, t, &state, &st);
		r[n++] = sample(t, pid, state, ids[st]);
		if (launcher) {
			r[n++] = sample(t + 300000, pid + 1, TALLY_THREAD_WAITING, ids[ST_PIN]);
			r[n++] = sample(t + 600000, pid + 2, TALLY_THREAD_WAITING, ids[ST_FEEDER]);
		}
		taken += launcher ? 3 : 1;
		if (n + 3 > BATCH) {
			(void)tally_pipeline_host_records(r, n);
			r = NULL;
			n = 0;
			usleep(1000); /* the consumer drains the bounded queue meanwhile */
		}
	}
	if (r)
		(void)tally_pipeline_host_records(r, n);
	tally_pipeline_count(TALLY_C_SAMPLES_TAKEN, taken);
}

void testsrc_loop_run(struct testsrc_emitter *e, const struct testsrc_loop *l, uint64_t t0)
{
	struct sched s = {.l = l, .e = e};

	schedule(&s, t0);
	if (s.nosrt)
		(void)tally_pipeline_host_records(s.osrt, s.nosrt);
	else
		free(s.osrt);
	samples(&s, t0, s.h + LOOP_PERIOD_NS, true);
	free(s.ph);
}

void testsrc_loop_worker(const struct testsrc_loop *l, uint64_t t0, unsigned k)
{
	struct sched s = {.l = l, .worker = k};

	schedule(&s, t0);
	samples(&s, t0, s.h + LOOP_PERIOD_NS, false);
	free(s.ph);
}
