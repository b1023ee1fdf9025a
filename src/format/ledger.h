/* SPDX-License-Identifier: MIT */
/*
 * The ledger: every counter of the data path (docs/architecture.md, "The data path"), as written
 * in LEDGER chunks.  The ids are part of the file format; docs/ledger.md says what each one counts
 * and how the verdict reads it.
 */
#ifndef TALLY_FORMAT_LEDGER_H
#define TALLY_FORMAT_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "tally-format.h"

enum tally_counter {
	/* buffers between CUPTI and the pool */
	TALLY_C_BUFFERS_REQUESTED = 1,
	TALLY_C_BUFFERS_DELIVERED = 2,
	TALLY_C_BUFFERS_REFUSED = 3,
	TALLY_C_BUFFERS_RETURNED = 4,
	TALLY_C_POOL_HIGH_WATER = 5,
	TALLY_C_POOL_CAPACITY = 6,
	TALLY_C_BUFFER_SIZE = 7,
	TALLY_C_POOL_EMPTY_NS = 8,
	TALLY_C_FOREIGN_BUFFERS = 9,
	/* records */
	TALLY_C_RECORDS_PARSED = 10,
	TALLY_C_DROPPED_CUPTI = 11,
	TALLY_C_BAD_TIME = 12,
	TALLY_C_UNKNOWN_KIND = 13,
	TALLY_C_PARSE_FAILURES = 14,
	TALLY_C_DROPPED_INPROCESS = 15,
	TALLY_C_UNMATCHED_API = 16,
	TALLY_C_UNMATCHED_GPU = 17,
	TALLY_C_LAUNCH_CALLS = 18,
	TALLY_C_GPU_RECORDS = 19,
	/* queue */
	TALLY_C_QUEUE_HIGH_WATER = 20,
	TALLY_C_QUEUE_FULL_NS = 21,
	TALLY_C_QUEUE_CAPACITY = 22,
	TALLY_C_PARSE_BYTES_LOST = 23,
	TALLY_C_OUTSIDE_WINDOW = 24,
	TALLY_C_CUT_AT_EDGES = 25,
	/* writer */
	TALLY_C_WRITE_FAILURES = 30,
	TALLY_C_WRITE_ERRNO = 31,
	TALLY_C_BYTES_WRITTEN = 32,
	TALLY_C_BYTES_LOST = 33,
	TALLY_C_SHORT_WRITES = 34,
	TALLY_C_CHUNKS_WRITTEN = 35,
	TALLY_C_CHUNKS_LOST = 36,
	TALLY_C_RECORDS_LOST_WRITE = 37,
	/* the closing flush */
	TALLY_C_FLUSH_PATH = 40,
	TALLY_C_FLUSH_START = 41,
	TALLY_C_FLUSH_END = 42,
	TALLY_C_FLUSH_COMPLETED = 43,
	TALLY_C_FLUSH_RECORDS = 44,
	TALLY_C_FLUSH_BUFFERS = 45,
	TALLY_C_WATCHDOG_FIRED = 46,
	TALLY_C_SIGNAL = 47,
	TALLY_C_BUFFERS_STRANDED = 48,
	/* tally merge (format 1.1): chunks of an input that were damaged or missing */
	TALLY_C_MERGE_DAMAGED = 50,
	/* signals that were to end the process (format 1.2): in every ledger from their arrival */
	TALLY_C_SIGNAL_RECEIVED = 60,
	TALLY_C_SIGNAL_AT = 61,
	TALLY_C_SIGNALS_RECEIVED = 62,
	TALLY_C_SIGNAL_SENDER = 63,
	TALLY_C_SIGNAL_TO_CLOSE = 64,
	/* a full disk (format 1.3): when writes failed, and whether the close used its room */
	TALLY_C_WRITE_FIRST_FAILED_AT = 65, /* CUPTI ns of the first slice a write failed in */
	TALLY_C_WRITE_LAST_FAILED_AT = 66,  /* ... and of the last */
	TALLY_C_CLOSE_RESERVE_USED = 67,    /* 1: the close gave back its room to get through */
	/* host sampling and blocking calls (format 1.3) */
	TALLY_C_SAMPLES_TAKEN = 70,
	TALLY_C_SAMPLES_DROPPED = 71,
	TALLY_C_SAMPLES_TORN = 72,
	TALLY_C_SAMPLE_STALLS = 73,
	TALLY_C_SAMPLE_TICKS_MISSED = 74,
	TALLY_C_SAMPLE_OVERRUNS = 75,
	TALLY_C_SAMPLES_SKIPPED = 76,
	TALLY_C_OSRT_DROPPED = 77,
	TALLY_C_THREADS_SEEN = 78,
	TALLY_C_SAMPLE_FORK_NS = 79,
	/* GPU metrics (format 1.3): PM samples, all devices (docs/ledger.md) */
	TALLY_C_METRIC_DECODED = 80,
	TALLY_C_METRIC_WRITTEN = 81,
	TALLY_C_METRIC_SKIPPED = 82,
	TALLY_C_METRIC_DROPPED = 83,
	TALLY_C_METRIC_OVERFLOWS = 84,
	TALLY_C_METRIC_GAPS = 85,
	TALLY_C_METRIC_GAP_NS = 86,
	TALLY_C_METRIC_MERGED = 87,
	TALLY_C_METRIC_FAILURES = 88,
	TALLY_C_METRIC_DEVICES = 89,
	/* the program's own doings (format 1.3, issue 35): tally's descriptors it closed or took
	 * over; a CUPTI buffer the queue could not take; records unfinished at the close */
	TALLY_C_FDS_REOPENED = 90,
	TALLY_C_FD_LOST_WRITES = 91,
	TALLY_C_BUFFERS_UNQUEUED = 92,
	TALLY_C_INCOMPLETE_AT_CLOSE = 93,
	/* host sampling, continued (format 1.4) */
	TALLY_C_SAMPLES_NO_PYTHON = 94,
	/* GPU metrics' breaks (85) by cause (format 1.4): the GPU's own, and a late decode's */
	TALLY_C_METRIC_GAPS_HARDWARE = 95,
	TALLY_C_METRIC_GAPS_LATE = 96,
	/* buffers CUPTI held at close with no record in them (format 1.4): not stranded */
	TALLY_C_BUFFERS_EMPTY_AT_CLOSE = 97,
	/* records parsed, by kind: TALLY_C_BY_KIND + kind */
	TALLY_C_BY_KIND = 100,
	TALLY_C_MAX = TALLY_C_BY_KIND + TALLY_KIND_MAX,
};

/* Which exit path ran the closing flush (TALLY_C_FLUSH_PATH). */
enum tally_flush_path {
	TALLY_FLUSH_NONE = 0,
	TALLY_FLUSH_EXIT = 1,	     /* exit() / return from main, through atexit */
	TALLY_FLUSH__EXIT = 2,	     /* _exit / _Exit / os._exit, interposed */
	TALLY_FLUSH_SIGNAL = 3,	     /* a signal whose default action ends the process */
	TALLY_FLUSH_CRASH = 4,	     /* SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTRAP, SIGSYS */
	TALLY_FLUSH_CTX_DESTROY = 5, /* the last CUDA context is being destroyed */
	TALLY_FLUSH_STOP = 6, /* end of the collection window (--duration, cudaProfilerStop) */
	TALLY_FLUSH_EXEC = 7, /* the process is replacing itself (execve) */
	TALLY_FLUSH_API = 8,  /* a direct call (tests, embedding programs) */
	TALLY_FLUSH_QUICK_EXIT = 9, /* quick_exit (format 1.2) */
	TALLY_FLUSH_PATH_MAX,
};

const char *tally_flush_path_name(unsigned path);

#define TALLY_LEDGER_UNKNOWN_KEPT 64

/* A snapshot of the ledger, as read from (or written to) one LEDGER chunk. */
struct tally_ledger {
	uint64_t slice;
	uint64_t t_begin;
	uint64_t t_end;
	bool final;
	uint64_t v[TALLY_C_MAX];
	uint32_t unknown_counters; /* ids this reader does not know */
	/* The first TALLY_LEDGER_UNKNOWN_KEPT of them, kept as they are so that a rewriter (tally
	 * merge) passes a newer writer's counters on (docs/format.md §8). */
	struct {
		uint64_t id, value;
	} unknown[TALLY_LEDGER_UNKNOWN_KEPT];
};

enum tally_counter_class {
	TALLY_CC_INFO = 0, /* context: sizes, high-water marks, times */
	TALLY_CC_LOSS = 1, /* any growth means records were lost */
};

struct tally_counter_info {
	const char *name;
	const char *what;
	enum tally_counter_class cls;
};

/* Name and meaning of a counter id; NULL for ids this build does not know. */
const struct tally_counter_info *tally_counter_info(unsigned id);

/* Loss counters, in the order reports list them. */
extern const unsigned tally_loss_counters[];
extern const unsigned tally_loss_counters_count;

struct tally_buf;
/* Append a LEDGER payload for l (zero counters are left out). */
void tally_ledger_encode(struct tally_buf *b, const struct tally_ledger *l);
/* Parse a LEDGER payload into l; false if damaged. */
bool tally_ledger_decode(const uint8_t *p, size_t len, bool final, struct tally_ledger *l);

#endif
