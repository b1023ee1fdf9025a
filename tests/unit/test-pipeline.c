/* SPDX-License-Identifier: MIT */
/*
 * The pipeline, end to end on the CPU: the test source fills buffers with real CUPTI records and
 * hands them through tally_pipeline_buffer_request/complete, the pipeline writes a file, and the
 * reader reads it back.  Expected values come from what the test source generated (its observer),
 * never from tally's own output.  Each fault of the foundation issue gets its own test.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reader.h"
#include "testsrc.h"
#include "verdict.h"

/* ---- what the test source generated ---------------------------------------------------- */

struct expected {
	pthread_mutex_t lock;
	uint64_t by_kind[TALLY_KIND_MAX]; /* records placed, as tally kinds */
	uint64_t dropped;		  /* records the pool could not take */
	uint64_t bad_time;
	uint64_t kernel_ns; /* sum of kernel durations with good times */
	uint64_t memcpy_bytes;
	uint64_t max_corr;
	struct tally_record *kernels; /* by correlation id, for field checks */
	size_t kernels_cap;
};

static unsigned cupti_to_tally(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return TALLY_KIND_KERNEL;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return TALLY_KIND_MEMCPY;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return TALLY_KIND_MEMSET;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		return TALLY_KIND_RUNTIME;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return TALLY_KIND_DRIVER;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return TALLY_KIND_SYNC;
	case CUPTI_ACTIVITY_KIND_MARKER: {
		const CUpti_ActivityMarker2 *m = (const void *)r;

		if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
			return TALLY_KIND_NVTX_MARK;
		return m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END ? TALLY_KIND_NVTX_RANGE : 0;
	}
	default:
		return 0;
	}
}

static void observe(void *ctx, const CUpti_Activity *rec, size_t size)
{
	struct expected *x = ctx;
	unsigned kind;

	(void)size;
	pthread_mutex_lock(&x->lock);
	if (!rec) {
		x->dropped++;
		goto out;
	}
	kind = cupti_to_tally(rec);
	x->by_kind[kind]++;
	if (kind == TALLY_KIND_KERNEL) {
		const CUpti_ActivityKernel10 *k = (const void *)rec;

		if (!k->start) {
			x->bad_time++;
		} else {
			x->kernel_ns += k->end - k->start;
		}
		if (k->correlationId >= x->kernels_cap) {
			size_t cap = (k->correlationId + 1) * 2;

			x->kernels = realloc(x->kernels, cap * sizeof(*x->kernels));
			memset(x->kernels + x->kernels_cap, 0,
			       (cap - x->kernels_cap) * sizeof(*x->kernels));
			x->kernels_cap = cap;
		}
		x->kernels[k->correlationId] = (struct tally_record){
		    .start = k->start,
		    .end = k->end,
		    .stream_id = k->streamId,
		    .grid = {k->gridX, k->gridY, k->gridZ},
		    .block = {k->blockX, k->blockY, k->blockZ},
		    .dynamic_smem = (uint32_t)k->dynamicSharedMemory,
		    .correlation_id = k->correlationId,
		    .kind = TALLY_KIND_KERNEL,
		};
		/* stash the name pointer's text in graph_node_id's slot: compared by text below */
		x->kernels[k->correlationId].graph_node_id = (uint64_t)(uintptr_t)k->name;
	} else if (kind == TALLY_KIND_MEMCPY) {
		x->memcpy_bytes += ((const CUpti_ActivityMemcpy6 *)rec)->bytes;
		if (!((const CUpti_ActivityMemcpy6 *)rec)->start)
			x->bad_time++;
	} else if (kind == TALLY_KIND_MEMSET && !((const CUpti_ActivityMemset4 *)rec)->start) {
		x->bad_time++;
	}
out:
	pthread_mutex_unlock(&x->lock);
}

/* ---- running a scenario ---------------------------------------------------------------- */

struct scenario {
	struct tally_pipeline_config cfg;
	struct testsrc_workload w;
	unsigned threads;
	bool in_flight;	  /* thread 0 keeps its last buffer at stop */
	bool drain_often; /* no consumer thread: drain after each thread's run */
	struct fault_sink *fault;
	char path[64];
	struct expected x;
	struct tally_stop_report rep;
};

struct worker {
	pthread_t thread;
	struct scenario *sc;
	unsigned index;
	struct testsrc_emitter e;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct testsrc_workload w = wk->sc->w;

	w.seed += wk->index;
	testsrc_emitter_init(&wk->e, 100 + wk->index, observe, &wk->sc->x);
	testsrc_run(&wk->e, &w, 1 + wk->index * 1000000u);
	if (!(wk->sc->in_flight && wk->index == 0))
		testsrc_flush(&wk->e);
	return NULL;
}

static void scenario_init(struct scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	tally_pipeline_config_default(&sc->cfg);
	sc->cfg.consumer_thread = false;
	sc->threads = 1;
	sc->w.kernel_names = 4;
	sc->w.seed = 7;
	pthread_mutex_init(&sc->x.lock, NULL);
	atomic_store(&testsrc_dropped_pending, 0);
	atomic_store(&testsrc_walk_delay_ns, 0);
}

static void scenario_run(struct scenario *sc)
{
	struct tally_buf session = {0};
	struct tally_sink sink;
	struct worker *wk = calloc(sc->threads, sizeof(*wk));
	unsigned i;
	int fd;

	strcpy(sc->path, "/tmp/tally-pipe-XXXXXX");
	fd = mkstemp(sc->path);
	assert_true(fd >= 0);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	if (sc->fault) {
		sc->fault->fd = fd;
		sink =
		    (struct tally_sink){fault_sink_write, sc->fault,
					sc->fault->reserve ? fault_sink_release : NULL, sc->fault};
	}
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&sc->cfg, &testsrc_source, &sink, &session), 0);
	tally_buf_fini(&session);
	for (i = 0; i < sc->threads; i++) {
		wk[i].sc = sc;
		wk[i].index = i;
		assert_int_equal(pthread_create(&wk[i].thread, NULL, worker_main, &wk[i]), 0);
	}
	for (i = 0; i < sc->threads; i++) {
		pthread_join(wk[i].thread, NULL);
		if (sc->drain_often)
			tally_pipeline_drain();
	}
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	assert_int_equal(tally_pipeline_stop(&sc->rep), 0);
	assert_int_equal(tally_pipeline_stop(NULL), -EALREADY); /* idempotent */
	tally_pipeline_reset();
	free(wk); /* an in-flight buffer belongs to the pool, like any other */
	close(fd);
}

struct readback {
	struct tally_file *f;
	uint64_t by_kind[TALLY_KIND_MAX];
	uint64_t kernel_ns;
	uint64_t memcpy_bytes;
	uint64_t field_mismatch;
	uint64_t launch_flagged;
	struct expected *x;
};

static int on_records(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	struct readback *rb = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		rb->by_kind[r[i].kind]++;
		rb->launch_flagged += (r[i].flags & TALLY_REC_LAUNCH) != 0;
		if (r[i].kind == TALLY_KIND_MEMCPY)
			rb->memcpy_bytes += r[i].bytes;
		if (r[i].kind != TALLY_KIND_KERNEL)
			continue;
		if (!(r[i].flags & TALLY_REC_BAD_TIME))
			rb->kernel_ns += r[i].end - r[i].start;
		if (r[i].correlation_id < rb->x->kernels_cap) {
			const struct tally_record *e = &rb->x->kernels[r[i].correlation_id];
			const char *name = tally_section_string(s, r[i].name_id);

			if (e->start != r[i].start || e->end != r[i].end ||
			    e->stream_id != r[i].stream_id || e->grid[0] != r[i].grid[0] ||
			    e->block[0] != r[i].block[0] || e->dynamic_smem != r[i].dynamic_smem ||
			    !name || strcmp(name, (const char *)(uintptr_t)e->graph_node_id) != 0)
				rb->field_mismatch++;
		}
	}
	return 0;
}

static void read_back(struct scenario *sc, struct readback *rb)
{
	struct tally_read_ops ops = {.records = on_records, .ctx = rb};
	char err[256];

	memset(rb, 0, sizeof(*rb));
	rb->x = &sc->x;
	assert_int_equal(tally_file_open(&rb->f, sc->path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(rb->f, &ops), 0);
}

static void readback_done(struct scenario *sc, struct readback *rb)
{
	tally_file_close(rb->f);
	unlink(sc->path);
	free(sc->x.kernels);
}

static bool verdict_complete(struct readback *rb, unsigned *reason_counter_mask)
{
	struct tally_verdict v;
	bool complete;
	size_t i;

	assert_int_equal(rb->f->nsections, 1);
	tally_verdict_compute(rb->f, rb->f->sections[0], &v);
	complete = v.complete;
	*reason_counter_mask = 0;
	for (i = 0; i < v.nreasons; i++)
		if (v.reasons[i].code == TALLY_R_LOSS && v.reasons[i].counter < 32)
			*reason_counter_mask |= 1u << v.reasons[i].counter;
	tally_verdict_fini(&v);
	return complete;
}

static const uint64_t *ledger(struct readback *rb)
{
	return rb->f->sections[0]->ledger.v;
}

/* Does the section have a loss window for counter that holds count? */
static uint64_t window_count(struct readback *rb, unsigned counter)
{
	const struct tally_section *s = rb->f->sections[0];
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->nwindows; i++)
		if (s->windows[i].counter == counter) {
			assert_true(s->windows[i].t_end >= s->windows[i].t_begin);
			n += s->windows[i].count;
		}
	return n;
}

/* ---- tests ----------------------------------------------------------------------------- */

/* N records of each kind in, the same N out, fields intact; COMPLETE. */
static void test_roundtrip(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask, k;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 20000;
	sc.w.driver_kernels = 300;
	sc.w.memcpys = 500;
	sc.w.memsets = 400;
	sc.w.syncs = 250;
	sc.w.ranges = 120;
	sc.w.marks = 30;
	sc.w.device_records = 2;
	sc.cfg.buffer_size = 64 << 10; /* many buffers, many chunks */
	sc.cfg.pool_buffers = 1024;    /* room for all of it: no drops, whatever the timing */
	sc.cfg.consumer_thread = true;
	sc.cfg.batch_records = 1000;
	scenario_run(&sc);
	read_back(&sc, &rb);
	for (k = 1; k < TALLY_KIND_MAX; k++)
		assert_int_equal(rb.by_kind[k], sc.x.by_kind[k]);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 20300);
	assert_int_equal(rb.by_kind[TALLY_KIND_RUNTIME], 20000 + 500 + 400 + 250);
	assert_int_equal(rb.by_kind[TALLY_KIND_NVTX_RANGE], 120);
	assert_int_equal(rb.field_mismatch, 0);
	assert_int_equal(rb.kernel_ns, sc.x.kernel_ns);
	assert_int_equal(rb.memcpy_bytes, sc.x.memcpy_bytes);
	/* launches: kernels (runtime + driver), memcpys, memsets; not the syncs */
	assert_int_equal(rb.launch_flagged, 20000 + 300 + 500 + 400);
	assert_int_equal(rb.f->sections[0]->ndevices, 2);
	assert_int_equal(ledger(&rb)[TALLY_C_UNMATCHED_API], 0);
	assert_int_equal(ledger(&rb)[TALLY_C_BUFFERS_STRANDED], 0);
	assert_int_equal(ledger(&rb)[TALLY_C_FLUSH_PATH], TALLY_FLUSH_API);
	assert_true(verdict_complete(&rb, &mask));
	assert_true(sc.rep.complete);
	readback_done(&sc, &rb);
}

/* Pool exhaustion: CUPTI's drops are counted exactly, with a window; INCOMPLETE. */
static void test_pool_exhaustion(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 3000;
	sc.cfg.pool_buffers = 2;
	sc.cfg.buffer_size = 16 << 10; /* ~50 records each: the pool runs dry at once */
	scenario_run(&sc);	       /* no consumer until stop: nothing comes back */
	read_back(&sc, &rb);
	assert_true(sc.x.dropped > 0);
	assert_int_equal(ledger(&rb)[TALLY_C_DROPPED_CUPTI], sc.x.dropped);
	assert_true(ledger(&rb)[TALLY_C_BUFFERS_REFUSED] > 0);
	assert_int_equal(ledger(&rb)[TALLY_C_POOL_HIGH_WATER], 2);
	assert_int_equal(window_count(&rb, TALLY_C_DROPPED_CUPTI), sc.x.dropped);
	assert_false(verdict_complete(&rb, &mask));
	assert_true(mask & 1u << TALLY_C_DROPPED_CUPTI);
	/* what did arrive is intact */
	assert_int_equal(
	    rb.by_kind[TALLY_KIND_KERNEL] + rb.by_kind[TALLY_KIND_RUNTIME] + sc.x.dropped, 6000);
	assert_int_equal(rb.field_mismatch, 0);
	readback_done(&sc, &rb);
}

/* A slow consumer behind a small pool: CUPTI drops, and the ledger has exactly that number. */
static void test_slow_consumer(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 20000;
	/* 40000 records over ~200 ms (ten 20 ms slices: a control thread a loaded machine holds
	 * back for 60 ms still writes more than two snapshots); the consumer walks 50000/s */
	sc.w.rate = 200000;
	sc.cfg.consumer_thread = true;
	sc.cfg.pool_buffers = 3;
	sc.cfg.buffer_size = 8 << 10;
	sc.cfg.slice_ns = 20000000; /* 20 ms slices: the windows can be checked */
	atomic_store(&testsrc_walk_delay_ns, 20000);
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_true(sc.x.dropped > 0);
	assert_int_equal(ledger(&rb)[TALLY_C_DROPPED_CUPTI], sc.x.dropped);
	assert_int_equal(window_count(&rb, TALLY_C_DROPPED_CUPTI), sc.x.dropped);
	assert_true(rb.f->sections[0]->ledgers > 2);
	assert_false(verdict_complete(&rb, &mask));
	readback_done(&sc, &rb);
}

static void test_bad_timestamps(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 1000;
	sc.w.memcpys = 100;
	sc.w.bad_time_every = 10;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(sc.x.bad_time, 110);
	assert_int_equal(ledger(&rb)[TALLY_C_BAD_TIME], 110);
	assert_int_equal(window_count(&rb, TALLY_C_BAD_TIME), 110);
	/* the records are kept, flagged, and still matched by correlation id */
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 1000);
	assert_int_equal(ledger(&rb)[TALLY_C_UNMATCHED_API], 0);
	assert_false(verdict_complete(&rb, &mask));
	assert_int_equal(mask, 1u << TALLY_C_BAD_TIME);
	readback_done(&sc, &rb);
}

static void test_unmatched(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 5000;
	sc.w.orphan_launches = 5;
	sc.w.orphan_gpu = 7;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(ledger(&rb)[TALLY_C_UNMATCHED_API], 5);
	assert_int_equal(ledger(&rb)[TALLY_C_UNMATCHED_GPU], 7);
	assert_int_equal(window_count(&rb, TALLY_C_UNMATCHED_API), 5);
	assert_int_equal(window_count(&rb, TALLY_C_UNMATCHED_GPU), 7);
	assert_false(verdict_complete(&rb, &mask));
	assert_int_equal(mask, 1u << TALLY_C_UNMATCHED_API | 1u << TALLY_C_UNMATCHED_GPU);
	readback_done(&sc, &rb);
}

/* Launches captured into a graph launch nothing; the replays' kernels answer cudaGraphLaunch. */
static void test_graph_capture(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 10;
	sc.w.graph_kernels = 50;
	sc.w.graph_replays = 20;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 10 + 50 * 20);
	/* the 10 plain launches and the 20 graph launches; the 50 captured ones are not launches */
	assert_int_equal(rb.launch_flagged, 10 + 20);
	assert_int_equal(ledger(&rb)[TALLY_C_UNMATCHED_API], 0);
	assert_true(verdict_complete(&rb, &mask));
	readback_done(&sc, &rb);
}

/* A launch in flight as the window closes is cut by the edge, not lost; an orphan well before the
 * edge is still loss. */
static void test_window_edge(void **state)
{
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct testsrc_emitter e;
	struct testsrc_workload early = {.orphan_launches = 1, .kernels = 100, .kernel_names = 1};
	struct testsrc_workload late = {.orphan_gpu = 3, .kernel_names = 1};
	struct tally_stop_report rep;
	struct tally_sink sink;
	int fd = open("/dev/null", O_WRONLY);

	(void)state;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	testsrc_emitter_init(&e, 1, NULL, NULL);
	early.t0 = testsrc_now() - 2000000000ull; /* two seconds before the edge */
	testsrc_run(&e, &early, 1);
	tally_pipeline_window_edge(false);
	late.t0 = testsrc_now(); /* kernels of calls the closed window did not record */
	testsrc_run(&e, &late, 500);
	testsrc_flush(&e);
	tally_pipeline_stop(&rep);
	assert_int_equal(rep.final.v[TALLY_C_UNMATCHED_API], 1);
	assert_int_equal(rep.final.v[TALLY_C_UNMATCHED_GPU], 0);
	assert_int_equal(rep.final.v[TALLY_C_CUT_AT_EDGES], 3);
	assert_false(rep.complete);
	tally_pipeline_reset();
	tally_buf_fini(&session);
	close(fd);
}

/* Kinds tally does not decode, and a record CUPTI cannot walk past. */
static void test_unknown_and_invalid(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 100;
	sc.w.unknown_kind = 3;
	sc.w.invalid_tail = true;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(ledger(&rb)[TALLY_C_UNKNOWN_KIND], 3);
	assert_int_equal(ledger(&rb)[TALLY_C_PARSE_FAILURES], 1);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 100); /* nothing before them lost */
	assert_false(verdict_complete(&rb, &mask));
	assert_int_equal(mask, 1u << TALLY_C_UNKNOWN_KIND | 1u << TALLY_C_PARSE_FAILURES);
	readback_done(&sc, &rb);
}

/*
 * The close's forced flush hands over a buffer whose last record CUPTI had not finished (CUPTI
 * walks to it and answers INVALID_KIND): an activity in flight as the trace closed, counted as
 * such (incomplete_at_close), not as a parse failure; the records before it are all there.  The
 * same buffer before the close is a parse failure (test_unknown_and_invalid).
 */
static void test_incomplete_at_close(void **state)
{
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct testsrc_emitter e;
	struct testsrc_workload w = {.kernels = 100, .kernel_names = 1, .invalid_tail = true};
	struct tally_stop_report rep;
	struct tally_sink sink;
	int fd = open("/dev/null", O_WRONLY);

	(void)state;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	testsrc_emitter_init(&e, 1, NULL, NULL);
	testsrc_run(&e, &w, 1);
	tally_pipeline_flush_begin(TALLY_FLUSH_SIGNAL, 15);
	testsrc_flush(&e); /* the forced flush: the buffer with its unfinished record */
	tally_pipeline_stop(&rep);
	assert_int_equal(rep.final.v[TALLY_C_PARSE_FAILURES], 0);
	assert_int_equal(rep.final.v[TALLY_C_INCOMPLETE_AT_CLOSE], 1);
	assert_int_equal(rep.final.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL], 100);
	assert_true(rep.complete);
	tally_pipeline_reset();
	tally_buf_fini(&session);
	close(fd);
}

/*
 * Host records (samples) fill the queue while the consumer is behind: they are turned away once
 * only the room kept for the pool's buffers is left, counted as dropped samples, and CUPTI's
 * buffers still go in and are parsed, never refused (or miscounted as foreign_buffers).
 */
static void test_queue_keeps_room(void **state)
{
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct testsrc_emitter e;
	struct testsrc_workload w = {.kernels = 2000, .kernel_names = 1};
	struct tally_stop_report rep;
	struct tally_sink sink;
	struct expected x = {.lock = PTHREAD_MUTEX_INITIALIZER};
	uint64_t taken = 0, turned_away = 0;
	int fd = open("/dev/null", O_WRONLY);

	(void)state;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false; /* nothing is consumed until the stop */
	cfg.pool_buffers = 4;
	cfg.buffer_size = 16 << 10;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	atomic_store(&testsrc_dropped_pending, 0);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	while (turned_away < 10) {
		struct tally_record *r = calloc(1, sizeof(*r));

		assert_non_null(r);
		r->kind = TALLY_KIND_CPU_SAMPLE;
		r->start = r->end = testsrc_now();
		if (tally_pipeline_host_records(r, 1) == 0)
			taken++;
		else
			turned_away++;
	}
	assert_true(taken > 0);
	testsrc_emitter_init(&e, 1, observe, &x); /* CUPTI's buffers, the pool's four at most */
	testsrc_run(&e, &w, 1);
	testsrc_flush(&e);
	tally_pipeline_stop(&rep);
	assert_int_equal(rep.final.v[TALLY_C_FOREIGN_BUFFERS], 0);
	assert_int_equal(rep.final.v[TALLY_C_BUFFERS_UNQUEUED], 0);
	assert_int_equal(rep.final.v[TALLY_C_SAMPLES_DROPPED], turned_away);
	assert_int_equal(rep.final.v[TALLY_C_BY_KIND + TALLY_KIND_CPU_SAMPLE], taken);
	/* every record CUPTI placed was parsed; the rest CUPTI dropped for want of a buffer */
	assert_int_equal(rep.final.v[TALLY_C_BY_KIND + TALLY_KIND_KERNEL],
			 x.by_kind[TALLY_KIND_KERNEL]);
	assert_true(x.by_kind[TALLY_KIND_KERNEL] > 0);
	assert_int_equal(rep.final.v[TALLY_C_DROPPED_CUPTI], x.dropped);
	tally_pipeline_reset();
	tally_buf_fini(&session);
	free(x.kernels);
	close(fd);
}

/* EIO for a while, then the disk recovers: loss counted by chunk, the rest readable. */
static void test_write_eio(void **state)
{
	struct fault_sink fault = {.fail_after = 40000, .fail_errno = EIO, .fail_count = 2};
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.fault = &fault;
	sc.w.kernels = 25000;
	sc.w.rate = 250000; /* 50000 records over ~200 ms, written every 2 ms slice */
	sc.cfg.consumer_thread = true;
	sc.cfg.slice_ns = 2000000;
	sc.cfg.batch_records = 500;
	sc.cfg.pool_buffers = 1024;
	sc.cfg.buffer_size = 64 << 10;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(fault.calls_failed, 2);
	assert_int_equal(ledger(&rb)[TALLY_C_WRITE_FAILURES], 2);
	assert_int_equal(ledger(&rb)[TALLY_C_WRITE_ERRNO], EIO);
	assert_true(ledger(&rb)[TALLY_C_CHUNKS_LOST] > 0);
	/* every record the ledger says was written is in the file, or counted as lost */
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL] + rb.by_kind[TALLY_KIND_RUNTIME] +
			     ledger(&rb)[TALLY_C_RECORDS_LOST_WRITE],
			 50000);
	assert_true(rb.f->sections[0]->has_final);
	assert_false(verdict_complete(&rb, &mask));
	assert_true(mask & 1u << TALLY_C_WRITE_FAILURES);
	readback_done(&sc, &rb);
}

/* ENOSPC from some point on: what was written before stays readable; no final ledger. */
static void test_write_enospc(void **state)
{
	struct fault_sink fault = {
	    .fail_after = 30000, .fail_errno = ENOSPC, .fail_count = UINT64_MAX};
	struct scenario sc;
	struct readback rb;
	struct tally_verdict v;

	(void)state;
	scenario_init(&sc);
	sc.fault = &fault;
	sc.w.kernels = 20000;
	sc.cfg.batch_records = 1000;
	sc.drain_often = true;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(rb.f->size, 30000); /* the disk took exactly what it had room for */
	assert_true(rb.by_kind[TALLY_KIND_KERNEL] > 0);
	assert_false(rb.f->sections[0]->has_final);
	assert_true(rb.f->ndamage >= 1); /* a chunk cut at the end of the space */
	tally_verdict_compute(rb.f, rb.f->sections[0], &v);
	assert_false(v.complete);
	assert_int_equal(v.reasons[0].code, TALLY_R_NOT_CLOSED);
	tally_verdict_fini(&v);
	assert_true(sc.rep.final.v[TALLY_C_WRITE_FAILURES] > 0);
	assert_int_equal(sc.rep.final.v[TALLY_C_WRITE_ERRNO], ENOSPC);
	readback_done(&sc, &rb);
}

/* ENOSPC from some point on, on a disk that kept room for the close: the final ledger gets
 * through and says what failed and when (docs/format.md §15). */
static void test_write_enospc_reserved(void **state)
{
	struct fault_sink fault = {.fail_after = 30000,
				   .fail_errno = ENOSPC,
				   .fail_count = UINT64_MAX,
				   .reserve = TALLY_CLOSE_RESERVE};
	struct scenario sc;
	struct readback rb;
	struct tally_verdict v;
	const uint64_t *c;

	(void)state;
	scenario_init(&sc);
	sc.fault = &fault;
	sc.w.kernels = 20000;
	sc.cfg.batch_records = 1000;
	sc.drain_often = true;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(fault.released, 1); /* once: at the close, and before its chunks */
	assert_true(rb.f->size > 30000 && rb.f->size <= 30000 + TALLY_CLOSE_RESERVE);
	assert_true(rb.f->sections[0]->has_final);
	c = ledger(&rb);
	assert_true(c[TALLY_C_WRITE_FAILURES] > 0);
	assert_int_equal(c[TALLY_C_WRITE_ERRNO], ENOSPC);
	assert_int_equal(c[TALLY_C_CLOSE_RESERVE_USED], 1);
	assert_true(c[TALLY_C_BYTES_LOST] > 0);
	assert_true(c[TALLY_C_WRITE_FIRST_FAILED_AT] > 0);
	assert_true(c[TALLY_C_WRITE_LAST_FAILED_AT] >= c[TALLY_C_WRITE_FIRST_FAILED_AT]);
	/* every record is in the file or counted lost: the final ledger accounts for all */
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL] + rb.by_kind[TALLY_KIND_RUNTIME] +
			     c[TALLY_C_RECORDS_LOST_WRITE],
			 40000);
	tally_verdict_compute(rb.f, rb.f->sections[0], &v);
	assert_false(v.complete);
	for (size_t i = 0; i < v.nreasons; i++)
		assert_int_not_equal(v.reasons[i].code, TALLY_R_NOT_CLOSED);
	tally_verdict_fini(&v);
	readback_done(&sc, &rb);
}

/* Short writes are retried: nothing is lost, the trace is COMPLETE. */
static void test_short_writes(void **state)
{
	struct fault_sink fault = {
	    .fail_after = 0, .fail_errno = 0, .fail_count = UINT64_MAX, .short_max = 777};
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.fault = &fault;
	sc.w.kernels = 3000;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_true(ledger(&rb)[TALLY_C_SHORT_WRITES] > 0);
	assert_int_equal(ledger(&rb)[TALLY_C_WRITE_FAILURES], 0);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 3000);
	assert_true(verdict_complete(&rb, &mask));
	readback_done(&sc, &rb);
}

/* Stop while a buffer is still with CUPTI: it is counted as stranded; INCOMPLETE. */
static void test_stop_in_flight(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.w.kernels = 100;
	sc.in_flight = true;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(ledger(&rb)[TALLY_C_BUFFERS_STRANDED], 1);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 0); /* all of it was in that buffer */
	assert_false(verdict_complete(&rb, &mask));
	assert_int_equal(ledger(&rb)[TALLY_C_BUFFERS_STRANDED], 1);
	readback_done(&sc, &rb);
}

/* Several producer threads completing buffers at once, with the consumer thread (TSan). */
static void test_many_producers(void **state)
{
	struct scenario sc;
	struct readback rb;
	unsigned mask;

	(void)state;
	scenario_init(&sc);
	sc.threads = 8;
	sc.cfg.consumer_thread = true;
	sc.cfg.buffer_size = 32 << 10;
	sc.cfg.pool_buffers = 1024; /* 32 MiB: more than all 8 threads make, whatever the timing */
	sc.cfg.slice_ns = 5000000;
	sc.w.kernels = 5000;
	sc.w.memcpys = 200;
	sc.w.ranges = 50;
	scenario_run(&sc);
	read_back(&sc, &rb);
	assert_int_equal(sc.x.dropped, 0);
	assert_int_equal(rb.by_kind[TALLY_KIND_KERNEL], 8 * 5000);
	assert_int_equal(rb.by_kind[TALLY_KIND_MEMCPY], 8 * 200);
	assert_int_equal(rb.by_kind[TALLY_KIND_NVTX_RANGE], 8 * 50);
	assert_int_equal(rb.field_mismatch, 0);
	assert_true(verdict_complete(&rb, &mask));
	readback_done(&sc, &rb);
}

/* The periodic flush: a process killed after a slice leaves a readable, INCOMPLETE file. */
static void test_killed_after_slice(void **state)
{
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct testsrc_emitter e;
	struct testsrc_workload w = {.kernels = 500, .kernel_names = 2, .seed = 3};
	struct tally_sink sink;
	struct tally_file *f;
	struct tally_verdict v;
	char path[] = "/tmp/tally-kill-XXXXXX", err[256];
	int fd = mkstemp(path);

	(void)state;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	testsrc_emitter_init(&e, 1, NULL, NULL);
	testsrc_run(&e, &w, 1);
	testsrc_flush(&e);
	tally_pipeline_tick(); /* the slice ends: everything so far goes to the file */
	w.kernels = 300;
	testsrc_run(&e, &w, 10000);
	testsrc_flush(&e); /* ...and then the process is "killed": no stop */
	assert_int_equal(tally_file_open(&f, path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, NULL), 0);
	assert_int_equal(f->sections[0]->records[TALLY_KIND_KERNEL], 500);
	assert_false(f->sections[0]->has_final);
	tally_verdict_compute(f, f->sections[0], &v);
	assert_false(v.complete);
	assert_int_equal(v.reasons[0].code, TALLY_R_NOT_CLOSED);
	assert_non_null(strstr(v.reasons[0].text, "records after"));
	tally_verdict_fini(&v);
	tally_file_close(f);
	/* clean up the pipeline so the next test can run */
	tally_pipeline_stop(NULL);
	tally_pipeline_reset();
	tally_buf_fini(&session);
	close(fd);
	unlink(path);
}

/* Buffers that are not the pool's are refused and counted, never parsed or freed. */
static void test_foreign_buffer(void **state)
{
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)-1, NULL, NULL};
	static uint8_t stray[4096] __attribute__((aligned(8)));
	struct tally_stop_report rep;

	(void)state;
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	testsrc_session(&session, 0);
	sink.ctx = (void *)(intptr_t)open("/dev/null", O_WRONLY);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	tally_pipeline_buffer_complete(NULL, 0, stray, sizeof(stray), sizeof(stray));
	tally_pipeline_stop(&rep);
	assert_int_equal(rep.final.v[TALLY_C_FOREIGN_BUFFERS], 1);
	assert_false(rep.complete);
	tally_pipeline_reset();
	close((int)(intptr_t)sink.ctx);
	tally_buf_fini(&session);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_pool_exhaustion),
	    cmocka_unit_test(test_slow_consumer),
	    cmocka_unit_test(test_bad_timestamps),
	    cmocka_unit_test(test_unmatched),
	    cmocka_unit_test(test_unknown_and_invalid),
	    cmocka_unit_test(test_write_eio),
	    cmocka_unit_test(test_write_enospc),
	    cmocka_unit_test(test_write_enospc_reserved),
	    cmocka_unit_test(test_short_writes),
	    cmocka_unit_test(test_stop_in_flight),
	    cmocka_unit_test(test_many_producers),
	    cmocka_unit_test(test_killed_after_slice),
	    cmocka_unit_test(test_foreign_buffer),
	    cmocka_unit_test(test_graph_capture),
	    cmocka_unit_test(test_window_edge),
	    cmocka_unit_test(test_incomplete_at_close),
	    cmocka_unit_test(test_queue_keeps_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
