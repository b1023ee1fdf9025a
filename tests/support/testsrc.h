/* SPDX-License-Identifier: MIT */
/*
 * The CPU test source: it plays CUPTI's part for the pipeline.  It asks for buffers through
 * tally_pipeline_buffer_request, fills them with real CUPTI activity structs from cupti_activity.h
 * (kernel, memcpy, memset, runtime and driver API, synchronization, markers, device), and hands
 * them back through tally_pipeline_buffer_complete, exactly as CUPTI does, from as many threads as
 * asked.  When the pool refuses a buffer it counts the records it could not place, the way CUPTI
 * counts drops, and reports them through the dropped() source call.
 *
 * Every record it makes is also shown to an observer callback, so a test computes its expected
 * values from what was generated, never from tally's output.
 */
#ifndef TALLY_TESTS_TESTSRC_H
#define TALLY_TESTS_TESTSRC_H

#include <cupti.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"

/* What to generate.  Counts are per emitter (thread). */
struct testsrc_workload {
	unsigned kernels;	 /* cudaLaunchKernel + kernel record */
	unsigned driver_kernels; /* cuLaunchKernel + kernel record */
	unsigned memcpys;	 /* cudaMemcpyAsync + memcpy record */
	unsigned memsets;	 /* cudaMemsetAsync + memset record */
	unsigned syncs;		 /* cudaStreamSynchronize + synchronization record */
	unsigned ranges;	 /* NVTX range: marker start + end */
	unsigned marks;		 /* NVTX instantaneous marker */
	unsigned kernel_names;	 /* distinct kernel names to cycle through (>= 1) */
	unsigned graph_kernels;	 /* a graph of this many kernels, captured (launch records with
				    no GPU record, between Begin/EndCapture), then replayed: */
	unsigned graph_replays;	 /* cudaGraphLaunch + graph_kernels kernel records each */
	uint32_t seed;
	uint64_t t0;   /* first timestamp; 0: now */
	uint64_t rate; /* records per second to pace at; 0: as fast as possible */
	/* faults */
	unsigned bad_time_every;  /* every Nth GPU record gets start = end = 0 */
	unsigned orphan_launches; /* launch API records with no GPU record */
	unsigned orphan_gpu;	  /* GPU records with no API record */
	unsigned unknown_kind;	  /* records of a CUPTI kind tally does not decode */
	bool invalid_tail;	  /* end a buffer with a record of an invalid kind */
	unsigned device_records;  /* DEVICE records (facts, not timeline) */
	/* shapes, for tally compare and gpu_gaps */
	unsigned streams;     /* kernels go round-robin to streams 7, 8 ...; 0: 3 streams */
	unsigned range_every; /* an NVTX range "iter" around every this many launches */
	unsigned scale_name;  /* kernels of name index scale_name - 1 (0: none) ... */
	double scale;	      /* ... last this many times longer */
	unsigned swap_at;     /* launches swap_at and swap_at + 1 swap names (0: none) */
	struct testsrc_idle {
		unsigned at;	/* before kernel launch number at (0-based) ... */
		unsigned ms;	/* ... the GPU idles this long (the clock is paced to real time) */
		unsigned drops; /* CUPTI drops this many records halfway through it */
	} idle[8];
	unsigned nidle;
	/* call stacks and memory (format 1.2) */
	unsigned stacks; /* launches carry Python stack testsrc_stack_index(corr) of this many */
	unsigned mem_allocs; /* MEMORY2: this many allocations, then their releases */
	/* training steps with exact times, for the analyses (testsrc_run_steps) */
	struct testsrc_steps {
		unsigned steps;	     /* each inside an NVTX range "step" */
		unsigned kernels;    /* compute kernels per step, stream 7, launched back to back */
		uint64_t kernel_ns;  /* each lasts this long */
		uint64_t launch_ns;  /* each launch call lasts this long (0: 4 us) */
		uint64_t copy_ns;    /* first in each step, a host-to-device copy this long */
		uint64_t comm_ns;    /* an NCCL all-reduce kernel this long, stream 8, ... */
		uint64_t comm_at_ns; /* ... starting this long after the step's first kernel */
		uint64_t sleep_ns;   /* then the host idles this long, inside the step's range */
		uint64_t gap_ns;     /* and this long between steps, outside it */
		uint64_t jitter_ns;  /* step k's kernels last ((k * 7) % 5 - 2) * jitter_ns more */
		uint64_t mem_bytes;  /* one device allocation of this size, held to the end */
	} st;
};

/* The stacks the test source attributes launches to: launch with correlation id c comes from
 * stack (c % stacks); each is a few Python frames, innermost first, named by this table. */
struct testsrc_frame {
	const char *file, *func;
	unsigned line;
};
#define TESTSRC_STACK_DEPTH 4
unsigned testsrc_stack_index(uint32_t correlation_id, unsigned stacks);
/* Frames of stack s, innermost first; returns how many.  The innermost frame of an odd s is a
 * library frame (site-packages), so the innermost *user* frame is the second. */
unsigned testsrc_stack_frames(unsigned s, struct testsrc_frame out[TESTSRC_STACK_DEPTH]);
/* Memory allocation i: its size and address. */
uint64_t testsrc_alloc_bytes(unsigned i);
uint64_t testsrc_alloc_address(unsigned i);

/*
 * Host sampling and blocking calls (format 1.3), made up the way the collector's sampler hands
 * them to the pipeline (tally_pipeline_host_records), so that readers have a trace with known
 * contents.  Three threads, named in a THREADS chunk, whose pthread ids' low 32 bits are the
 * CUPTI thread ids 1000, 1001, 1002: MainThread is the thread that launches the CUDA work (the
 * first emitter's, thread 1000), as in a training loop:
 *   tid 2001 "MainThread" (main, Python): `samples` Python samples, the first half on CPU in
 *     compute (/work/train.py:20), the second half waiting in sleep (/work/train.py:30); and
 *     `calls` clock_nanosleep calls of 10 ms
 *   tid 2002 "loader" (Python): `samples` Python samples waiting in get (/work/data.py:55);
 *     `calls` pthread_cond_timedwait calls of 5 ms on the object 0x5000
 *   tid 2003 "pt_main" (native): `samples` perf samples of native frames 0x1000.. (in no module)
 * With starved (--host-starved), a loop starved of data instead: MainThread's first half waits in
 * Loader.get (/work/data.py:55), its second half is on the CPU in compute (/work/train.py:20),
 * and the loader is on the CPU in Loader.fill (/work/data.py:70) in the first half, waiting in
 * Loader.get after.  With STARVED_RARE the loader is not worth naming: only every 20th sample of
 * its first half is on the CPU in Loader.fill (5%), the others wait in Loader.get.
 * Samples are 1 ms apart from t0 (the CUPTI part's start, so they cover its GPU gaps); every
 * torn_every-th Python sample (0: none) is torn (flag TORN, no stack).  Ledger counters:
 * samples_taken = written + dropped_samples, and dropped_samples samples counted as dropped (none
 * written for them).
 */
enum testsrc_starved { STARVED_NONE, STARVED_FILL, STARVED_RARE };
struct testsrc_host {
	unsigned samples, calls, torn_every, dropped_samples;
	enum testsrc_starved starved;
};
void testsrc_host_run(const struct testsrc_host *h, uint64_t t0);
/* The SESSION keys of sampling for a --host trace (sample python,native at 1 kHz, osrt 1 us). */
void testsrc_host_session(struct tally_buf *b);

/* A generated record, as the observer sees it (a copy of the CUPTI struct). */
typedef void (*testsrc_observer)(void *ctx, const CUpti_Activity *rec, size_t size);

/* One producer: a thread's view of CUPTI (per-thread buffers, as CUPTI 13's default). */
struct testsrc_emitter {
	uint8_t *buf;
	size_t size, used;
	uint32_t thread_id;
	uint64_t buffers_completed;
	uint64_t records_placed, records_dropped;
	testsrc_observer observer;
	void *observer_ctx;
};

/* The source calls for the pipeline: real CUPTI walking and naming, test-counted drops. */
extern const struct tally_source testsrc_source;
/* Records the emitters could not place since the last dropped() call (all emitters). */
extern _Atomic uint64_t testsrc_dropped_pending;
/* Nanoseconds next_record sleeps per record: the slow-consumer fault.  0: none. */
extern _Atomic uint64_t testsrc_walk_delay_ns;

void testsrc_emitter_init(struct testsrc_emitter *e, uint32_t thread_id, testsrc_observer obs,
			  void *ctx);
/* Place one record; asks for a buffer when needed.  Returns false if it was dropped. */
bool testsrc_emit(struct testsrc_emitter *e, const void *rec, size_t size);
/* Hand the current buffer back (CUPTI's flush).  keep: leave it in flight instead. */
void testsrc_flush(struct testsrc_emitter *e);

/*
 * The steps of w->st, with exact timestamps from w->t0 (or now), on one host thread and device 0:
 * per step, a range start; a copy launch and its copy; w->st.kernels kernel launches, each
 * 1 us after the previous call ends, each kernel starting 5 us after its launch call or when the
 * one before ends; the NCCL kernel; a cudaStreamSynchronize until the GPU is done (+1 us); the
 * sleep; the range end; the gap.  Returns the correlation id after the last one used.
 */
uint32_t testsrc_run_steps(struct testsrc_emitter *e, const struct testsrc_workload *w,
			   uint32_t first_correlation);
#define TESTSRC_COMM_KERNEL "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
#define TESTSRC_STEP_KERNEL "ampere_sgemm_128x64_nn"

/*
 * A training loop with exact times for the step verdicts (testsrc-loop.c), on device 0: after
 * startup_ns of start-up (the main thread importing, then moving the model to the GPU: one copy),
 * `steps` steps, each inside an NVTX range "step K" (unless no_ranges): the main thread waits
 * data_ns for the next batch (in Queue.get <- _next_data, a blocking call when osrt) while the
 * workers work; it launches `kernels` kernels of kernel_ns (calls of launch_ns, the first and the
 * last of a step named once each) and a communication kernel of comm_ns; with sync, it calls
 * loss.item() (a blocking cudaMemcpy waiting for the GPU) and then works host_ns on the CPU in
 * burn <- one_step (/work/loop.py:20).  Then tail_ns in save.  Samples every millisecond: the
 * main thread's by its phase, a pin-memory thread and a queue feeder waiting by design.
 * testsrc_loop_worker writes worker k's samples of the same schedule: worker 0 on the CPU in
 * burn <- Samples.__getitem__ through every wait, worker 1 through each wait's first half, idle
 * by design otherwise.  With call_stacks, loss.item()'s call carries the main thread's stack (as
 * the collector captures a launch's with --python-stacks).
 */
struct testsrc_loop {
	unsigned steps, kernels, workers;
	uint64_t kernel_ns, launch_ns, data_ns, host_ns, comm_ns, startup_ns, tail_ns;
	bool sync, no_ranges, osrt;
	bool call_stacks; /* loss.item()'s call carries its stack, as --python-stacks records it */
};
void testsrc_loop_run(struct testsrc_emitter *e, const struct testsrc_loop *l, uint64_t t0);
void testsrc_loop_worker(const struct testsrc_loop *l, uint64_t t0, unsigned k);

/* Generate a whole workload through e; returns the correlation id after the last one used. */
uint32_t testsrc_run(struct testsrc_emitter *e, const struct testsrc_workload *w,
		     uint32_t first_correlation);

/* The kernel names testsrc_run cycles through (pointers stay valid: CUPTI's are, too). */
extern const char *const testsrc_kernel_names[];
extern const unsigned testsrc_kernel_names_count;

uint64_t testsrc_now(void);
/* From now on testsrc_now() reads t0 plus the time elapsed since this call (t0 0: real time). */
void testsrc_clock_start(uint64_t t0);

/* Added to the session's CLOCK_REALTIME start: a recording made "hours ago", for job grouping. */
extern int64_t testsrc_realtime_shift_ns;

/* Build the SESSION payload the way the collector does, with source "testsrc". */
void testsrc_session(struct tally_buf *b, uint64_t kinds_mask);

/* A sink with faults, for the writer. */
struct fault_sink {
	int fd;
	uint64_t fail_after; /* bytes accepted before faults start; UINT64_MAX: never */
	int fail_errno;	     /* errno of failures (EIO, ENOSPC); 0: short writes instead */
	uint64_t fail_count; /* how many failing calls; then recover.  UINT64_MAX: forever */
	size_t short_max;    /* short-write mode: at most this many bytes per call */
	uint64_t accepted;
	uint64_t calls_failed;
	uint64_t reserve;  /* a disk that kept this much room for the close (fault_sink_release) */
	unsigned released; /* calls of fault_sink_release */
};
ssize_t fault_sink_write(void *ctx, const void *buf, size_t len);
/* The sink's release: the room kept for the close becomes free space (fail_after grows by
 * reserve), as tally_room_release frees the blocks it kept. */
int fault_sink_release(void *ctx);

#endif
