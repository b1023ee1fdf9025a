/* SPDX-License-Identifier: MIT */
/*
 * The collection pipeline (docs/architecture.md, "The data path"), inside the traced process:
 *
 *   CUPTI --request--> pool (bounded; refused when empty)
 *   CUPTI --complete--> bounds check, count, enqueue (no parsing, no I/O, no waiting)
 *   queue (bounded, lock-free) --> consumer thread: walk, validate, correlate, encode
 *   consumer --> writer: checksummed chunks, batched appends, ledger every slice, final at close
 *
 * It does not care where buffers come from: the collector registers tally_pipeline_buffer_request
 * and tally_pipeline_buffer_complete with CUPTI, and the CPU tests call the very same functions
 * with buffers of real CUPTI record structs.  The few CUPTI calls it makes go through
 * struct tally_source so tests can inject faults (dropped counts, a slow walk).
 *
 * There is one pipeline per process (CUPTI's callbacks carry no context pointer).
 */
/*
 * The room activity/, the hot path from CUPTI's callbacks to the file:
 *
 *   cupti.c, cupti-api.c, stackcap.c  CUPTI as the session drives it, its functions bound at
 *                                     run time, the stacks taken at launching calls
 *   pipeline-producers.c              CUPTI's buffer callbacks, and what other threads hand in
 *   pipeline-consumer.c               the consumer: walk, check, correlate, encode, write
 *   pipeline.c                        the start, and the close (pipeline-int.h: their insides)
 *   pool.c, queue.c, ring.c           the bounded pool and the lock-free queue
 *   convert.c, corr.c                 CUPTI records to tally records; the correlation check
 *   nvtx.c, metricq.c, metricbatch.c  the other producers' hand-offs: NVTX, GPU metrics
 *   clock-source.c                    the source of a session with no CUPTI
 *
 * session/, entry/ (guard.c), host/, osrt/ and metrics/ call it; it calls stacks/ and base/ (and
 * format/'s writer), nothing above.
 */
#ifndef TALLY_COLLECTOR_PIPELINE_H
#define TALLY_COLLECTOR_PIPELINE_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ledger.h"
#include "writer.h"

struct tally_pipeline_config {
	size_t buffer_size;	   /* bytes per CUPTI buffer; default 4 MiB */
	unsigned pool_buffers;	   /* buffers the pool may hold; default 64 */
	uint64_t slice_ns;	   /* ledger slice and periodic write; default 1 s */
	unsigned batch_records;	   /* records per RECORDS chunk; default 8192 */
	bool trace_api;		   /* runtime or driver API traced: GPU records expect a launch */
	bool consumer_thread;	   /* false: the caller drains (tests, single-threaded runs) */
	uint64_t device_mask;	   /* keep GPU records of these device ids only; 0: all */
	uint64_t slow_consumer_ns; /* fault injection for tests: sleep per record */
	bool stacks;		   /* call stacks are captured (stacktab.h): write their tables */
};

/*
 * An NVTX event as the collector's NVTX capture lays it out in its buffers (in memory only; on
 * disk it becomes a NVTX_RANGE or NVTX_MARK record).  name and domain bytes follow the struct;
 * size covers all of it, rounded up to 8.
 */
struct tally_nvtx_event {
	uint16_t size;
	uint8_t kind;  /* TALLY_KIND_NVTX_RANGE or TALLY_KIND_NVTX_MARK */
	uint8_t flags; /* 1: a pop without a push; 2: the name was cut (too long) */
	uint32_t tid;
	uint64_t start, end;
	uint64_t payload;
	uint32_t color, category;
	uint16_t name_len, domain_len;
	uint32_t pad;
};

void tally_pipeline_config_default(struct tally_pipeline_config *cfg);

/* The CUPTI calls the pipeline makes; all required. */
struct tally_source {
	CUptiResult (*next_record)(uint8_t *buf, size_t valid, CUpti_Activity **rec);
	/* records dropped since the last call (read-and-reset, as CUPTI's) */
	CUptiResult (*dropped)(size_t *dropped);
	uint64_t (*now)(void); /* the clock of the records, ns */
	/* function name for an API record; NULL if unknown */
	const char *(*api_name)(CUpti_ActivityKind kind, uint32_t cbid);
};

/* No CUPTI at all (an NVTX-only session): nothing to walk, the CLOCK_REALTIME clock. */
extern const struct tally_source tally_clock_source;

/* What tally_pipeline_stop reports. */
struct tally_stop_report {
	uint64_t flush_ns;	/* from flush_begin to the final ledger written */
	uint64_t drain_ns;	/* of which: draining the queue and writing */
	uint64_t records;	/* records parsed in the whole session */
	uint64_t flush_records; /* records delivered after flush_begin */
	uint64_t bytes_written;
	bool complete; /* the ledger shows no loss (the verdict's ledger part) */
	struct tally_ledger final;
};

/*
 * Start the pipeline, writing to sink.  session is the payload of the SESSION chunk (built by the
 * caller: the collector or the test source); it is copied.  Returns 0 or -errno.
 */
int tally_pipeline_start(const struct tally_pipeline_config *cfg, const struct tally_source *src,
			 const struct tally_sink *sink, const struct tally_buf *session);

/* CUPTI's buffer callbacks, with the exact signatures CUPTI calls. */
void CUPTIAPI tally_pipeline_buffer_request(uint8_t **buffer, size_t *size,
					    size_t *max_num_records);
void CUPTIAPI tally_pipeline_buffer_complete(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
					     size_t size, size_t valid_size);

/*
 * Hand a buffer of NVTX events (malloc'd, `used` bytes of struct tally_nvtx_event entries) to the
 * consumer, which frees it.  Returns -ENOSPC if the queue is full (the caller frees it; its
 * events are counted as dropped in-process) or -ENOENT with no running pipeline.
 */
int tally_pipeline_nvtx_buffer(uint8_t *buf, size_t used);
void tally_pipeline_nvtx_dropped(uint64_t events);

/*
 * Host records (CPU_SAMPLE and OSRT, format 1.3), ready to write: recs is a malloc'd array of n
 * records that the pipeline takes in every case.  Stack ids come from the stack tables
 * (stacktab.h); an OSRT record's NAME is filled in by the consumer from its CBID.  Returns 0, or
 * -ENOSPC (queue full) / -ENOENT (no running pipeline): the records are then counted as dropped
 * (samples_dropped, osrt_dropped) and freed.
 */
int tally_pipeline_host_records(struct tally_record *recs, size_t n);

/* Add n to a host counter (TALLY_C_SAMPLES_TAKEN .. TALLY_C_THREADS_SEEN).  Relaxed atomics:
 * async-signal-safe, from any thread. */
void tally_pipeline_count(unsigned counter, uint64_t n);
/* Raise a host counter to at least v (a high-water mark or a total kept elsewhere). */
void tally_pipeline_count_max(unsigned counter, uint64_t v);

/* One of tally's descriptors was closed or taken over by the program (keptfd.h): its file was
 * opened again (reopened: fds_reopened, nothing lost), or, for the trace, a write failed for it
 * (fd_lost_writes; the writer counts what was lost).  Relaxed atomics, any thread. */
void tally_pipeline_fd_event(bool reopened);

/* A THREADS chunk payload (format 1.3) to write; safe from any thread (not a signal handler). */
void tally_pipeline_threads(const struct tally_buf *payload);

/* A count that moves with the work of a close: CUPTI's buffers handed over, metric samples
 * counted (each one decoded) and their batches; not NVTX's buffers or host records, which the
 * program's other threads make while a close may be standing still.  Async-signal-safe. */
uint64_t tally_pipeline_progress(void);

/* The pipeline's record clock now, in ns (what its records' times are on); 0 with no pipeline. */
uint64_t tally_pipeline_now(void);

/* Drain whatever is queued, in the caller's thread (config.consumer_thread false). */
void tally_pipeline_drain(void);

/* A note for the trace (another CUPTI client, NVTX off, a signal).  Safe from any thread. */
void tally_pipeline_note(unsigned severity, const char *code, const char *text);

/*
 * The closing flush, in two steps around the source's own flush (cuptiActivityFlushAll):
 * flush_begin records which exit path runs it and when; stop then stops intake, drains the
 * queue, writes the LOSS chunk and the final ledger, and closes.  stop is idempotent; after it,
 * requests are declined and completions are counted but not parsed.
 */
void tally_pipeline_flush_begin(enum tally_flush_path path, int signo);
int tally_pipeline_stop(struct tally_stop_report *report);

/*
 * An exec (pipeline.c): checkpoint writes everything so far and a final ledger (flush path
 * `path`, the in-flight launches counted as a close would count them), as a close would leave
 * the file, since an exec that succeeds runs nothing of this process again; the pipeline goes
 * on.  If the exec fails, resume takes the flush back: the ledgers that follow supersede the
 * final one (a reader judges a trace by its last ledger).  checkpoint returns 0, or the -errno
 * of a write that failed.
 */
int tally_pipeline_checkpoint(enum tally_flush_path path);
void tally_pipeline_resume(void);

/*
 * The collection window opened or closed now (kinds enabled or disabled).  A launch in flight at
 * that moment may be recorded on one side only (its call, or its kernel): at close, such
 * unmatched entries near an edge count as cut_at_edges, not as loss.
 */
void tally_pipeline_window_edge(bool open);

/* Write what is batched (the periodic flush) without ending the session.  Consumer-side. */
void tally_pipeline_tick(void);

/*
 * A signal that is to end the process arrived (sender: its si_pid, 0 from the kernel).  The
 * first one is written to the file in a ledger at once; all are counted.  Async-signal-safe
 * (atomics, clock_gettime, sem_post): signal handlers call it.
 */
void tally_pipeline_signal(int sig, int sender);

/* The watchdog gave up on a hanging source flush: say so in the ledger. */
void tally_pipeline_watchdog_fired(void);

/*
 * GPU metrics (pmsampler.h), from the sampler thread:
 *   metric_batch   hand over a batch of samples (the consumer writes and frees it).  0, or
 *                  -ENOSPC when PIPELINE_METRIC_BATCHES batches already wait (the caller frees
 *                  it and counts its samples dropped), -ENOENT with no running pipeline.
 *   metric_count   add n to a sampler-side counter (80, 82-84, 87-89 of docs/ledger.md)
 *   metric_gap     a device's samples did not cover [t0, t1]: counted (85, 86) and placed by a
 *                  LOSS entry of class 85 in the ledger slice that ends next
 *   gpu_metrics    a GPU_METRICS chunk payload to write (format §13)
 */
#define PIPELINE_METRIC_BATCHES 8
struct pm_batch;
int tally_pipeline_metric_batch(struct pm_batch *b);
void tally_pipeline_metric_count(unsigned counter, uint64_t n);
void tally_pipeline_metric_gap(uint64_t t0, uint64_t t1);
void tally_pipeline_gpu_metrics(const struct tally_buf *kv);

/* Is a pipeline running in this process? */
bool tally_pipeline_running(void);

/* Forget the pipeline without touching its threads (a fork child: they do not exist there). */
void tally_pipeline_abandon(void);

/* Tests: free a stopped pipeline so that the next test can start one. */
void tally_pipeline_reset(void);

#endif
