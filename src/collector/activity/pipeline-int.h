/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's insides, shared by its three files and nothing else, each calling only the
 * ones below it:
 *
 *   pipeline.c            start, drain and tick, and the close (flush_begin, signal, stop)
 *   pipeline-consumer.c   the consumer: walk, check, correlate, encode, write; the final ledger
 *   pipeline-producers.c  the one pipeline (g_pipeline); CUPTI's buffer callbacks, and what
 *                         other threads hand in (NVTX buffers, host records, notes, counters,
 *                         GPU metrics)
 *
 * See pipeline.c for who may touch what, and pipeline.h for the picture.
 */
#ifndef TALLY_COLLECTOR_PIPELINE_INT_H
#define TALLY_COLLECTOR_PIPELINE_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "convert.h"
#include "corr.h"
#include "metricq.h"
#include "pipeline.h"
#include "pool.h"
#include "queue.h"
#include "strtab.h"

enum pstate { P_RUNNING, P_STOPPING, P_STOPPED };

#define HOST_FIRST    TALLY_C_SAMPLES_TAKEN
#define HOST_COUNTERS (TALLY_C_THREADS_SEEN - TALLY_C_SAMPLES_TAKEN + 1)

struct batch {
	struct tally_record *recs;
	unsigned n;
};

struct pipeline {
	struct tally_pipeline_config cfg;
	struct tally_source src;
	struct tally_pool pool;
	struct tally_queue queue;
	sem_t wake;
	pthread_t thread;
	bool has_thread;
	_Atomic int state;

	/* Producer counters.  Relaxed everywhere: they are statistics, each a single total that
	 * no other memory depends on; snapshots read them under consume_lock. */
	_Atomic uint64_t requested, delivered, refused, foreign, late, dropped_nvtx, unqueued;
	/* tally's descriptors the program closed or took over: opened again, or a write lost */
	_Atomic uint64_t fds_reopened, fd_lost_writes;
	/* NVTX's and the host's items in the queue, never more than others_max: the rest of the
	 * queue is kept for every buffer the pool may have out (a CUPTI buffer always fits) */
	_Atomic size_t others_queued;
	size_t others_max;
	/* Host sampling and blocking calls: ledger counters HOST_FIRST.., the same way. */
	_Atomic uint64_t host[HOST_COUNTERS];

	/* Controller -> consumer: when the closing flush began, by which path.  flush_start is
	 * stored last with release; the consumer loads it with acquire before path/signal. */
	_Atomic unsigned flush_path;
	_Atomic int flush_signal;
	_Atomic uint64_t flush_start;
	_Atomic bool watchdog_fired;

	/* A signal that is to end the process (tally_pipeline_signal, from a signal handler).
	 * The first one claims sig_claimed, writes at/sender, then publishes sig_first with
	 * release; snapshots load sig_first with acquire before the rest. */
	_Atomic int sig_claimed, sig_first, sig_sender;
	_Atomic uint64_t sig_at_mono, sig_count;
	_Atomic bool sig_unwritten; /* the consumer owes the file a ledger that shows it */
	uint64_t start_mono;

	/* Notes and device payloads from any thread, waiting for the consumer. */
	pthread_mutex_t side_lock;
	struct tally_buf side; /* (type:u8 len:varint bytes)* */
	struct window_edge {
		uint64_t t;
		bool open;
	} edges[64]; /* under side_lock; the last slot is reused when full */
	unsigned nedges;

	/* GPU metrics from the sampler thread (metricq.h) */
	struct metricq metrics;

	/* consumer state, under consume_lock */
	pthread_mutex_t consume_lock;
	struct tally_writer writer;
	struct tally_strtab strings;
	struct tally_convert convert;
	struct tally_codec codec;
	struct tally_corr corr;
	struct tally_buf payload, device;
	struct batch batches[TALLY_KIND_MAX];
	uint64_t c[TALLY_C_MAX];		  /* the consumer's ledger counters */
	uint32_t osrt_names[TALLY_OSRT_CALL_MAX]; /* string ids of the calls' names, 0 not yet */
	struct capture {
		uint32_t thread;
		int depth;
	} captures[64]; /* threads capturing a graph */
	unsigned ncaptures;
	/* Contexts seen in GPU records, tied to their device, for the DROPS chunk.  CUPTI reports
	 * drops per context only for per-context queues; tally's kinds use the global queue. */
	struct drop_context {
		uint32_t context, device;
		uint64_t gpu_records;
	} contexts[32];
	unsigned ncontexts;
	bool drops_dirty; /* a DROPS chunk would say something new */
	uint64_t slice, slice_begin;
	/* CLOCK_MONOTONIC deadline of the current slice: set by whoever ends a slice (under
	 * consume_lock), read unlocked by the consumer thread to know how long to sleep; a stale
	 * value only makes it wake early.  Relaxed. */
	_Atomic uint64_t next_slice_mono;
	uint64_t start_time;
	uint64_t failures_seen; /* write failures already timed (TALLY_C_WRITE_*_FAILED_AT) */
	bool room_released;	/* the room kept for the close was given back (sink.release) */
};

/* The one pipeline.  Published with release once built; callbacks load it with acquire. */
extern _Atomic(struct pipeline *) g_pipeline;
/* Bumped by what a close does (CUPTI's buffers handed over, metric samples decoded and their
 * batches), not by the program's threads: outside the pipeline, so a signal handler may read it
 * while the pipeline is being freed. */
extern _Atomic uint64_t g_progress;

/* The consumer's (pipeline-consumer.c), for the start and the close: all but consumer_main
 * under consume_lock. */
void emit_chunk(struct pipeline *p, unsigned type, unsigned flags, const struct tally_buf *b,
		uint64_t records);
void emit_clock(struct pipeline *p);
unsigned consume_all(struct pipeline *p, bool slices);
void end_slice(struct pipeline *p);
void snapshot_locked(struct pipeline *p, struct tally_ledger *l);
void finish_locked(struct pipeline *p);
void checkpoint_locked(struct pipeline *p);
void resume_locked(struct pipeline *p);
void *consumer_main(void *arg);

#endif
