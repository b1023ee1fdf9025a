/* SPDX-License-Identifier: MIT */
/* Ledger counter names, classes and the LEDGER chunk codec; see ledger.h, docs/ledger.md. */
#include "ledger.h"

#include <string.h>

#include "buf.h"

static const struct tally_counter_info counters[TALLY_C_BY_KIND] = {
    [TALLY_C_BUFFERS_REQUESTED] = {"buffers_requested", "buffers CUPTI asked for", TALLY_CC_INFO},
    [TALLY_C_BUFFERS_DELIVERED] = {"buffers_delivered", "buffers CUPTI handed back full",
				   TALLY_CC_INFO},
    [TALLY_C_BUFFERS_REFUSED] = {"buffers_refused", "requests refused: the pool was empty",
				 TALLY_CC_INFO},
    [TALLY_C_BUFFERS_RETURNED] = {"buffers_returned", "buffers consumed and put back in the pool",
				  TALLY_CC_INFO},
    [TALLY_C_POOL_HIGH_WATER] = {"pool_high_water", "most buffers out of the pool at once",
				 TALLY_CC_INFO},
    [TALLY_C_POOL_CAPACITY] = {"pool_capacity", "buffers the pool may hold", TALLY_CC_INFO},
    [TALLY_C_BUFFER_SIZE] = {"buffer_size", "bytes per buffer", TALLY_CC_INFO},
    [TALLY_C_POOL_EMPTY_NS] = {"pool_empty_ns", "time the pool spent empty", TALLY_CC_INFO},
    [TALLY_C_FOREIGN_BUFFERS] = {"foreign_buffers",
				 "completed buffers that were not the pool's, or of a bad size",
				 TALLY_CC_LOSS},
    [TALLY_C_RECORDS_PARSED] = {"records_parsed", "records taken out of CUPTI's buffers",
				TALLY_CC_INFO},
    [TALLY_C_DROPPED_CUPTI] = {"dropped_cupti",
			       "records CUPTI dropped for want of a buffer "
			       "(cuptiActivityGetNumDroppedRecords)",
			       TALLY_CC_LOSS},
    [TALLY_C_BAD_TIME] = {"bad_timestamps",
			  "records with a zero or backwards timestamp (device buffers ran out)",
			  TALLY_CC_LOSS},
    [TALLY_C_UNKNOWN_KIND] = {"unknown_kind", "records of a kind tally does not decode, skipped",
			      TALLY_CC_LOSS},
    [TALLY_C_PARSE_FAILURES] = {"parse_failures",
				"buffers whose walk stopped early on an invalid record",
				TALLY_CC_LOSS},
    [TALLY_C_DROPPED_INPROCESS] = {"dropped_inprocess", "records tally itself dropped",
				   TALLY_CC_LOSS},
    [TALLY_C_UNMATCHED_API] = {"unmatched_launches",
			       "launch, copy and memset calls whose GPU record never came",
			       TALLY_CC_LOSS},
    [TALLY_C_UNMATCHED_GPU] = {"unmatched_gpu_records",
			       "GPU records whose launching call was not recorded", TALLY_CC_LOSS},
    [TALLY_C_LAUNCH_CALLS] = {"launch_calls", "API calls that launch GPU work", TALLY_CC_INFO},
    [TALLY_C_GPU_RECORDS] = {"gpu_records", "kernel, copy and memset records", TALLY_CC_INFO},
    [TALLY_C_QUEUE_HIGH_WATER] = {"queue_high_water", "most buffers waiting for the consumer",
				  TALLY_CC_INFO},
    [TALLY_C_QUEUE_FULL_NS] = {"queue_full_ns", "time the queue spent full", TALLY_CC_INFO},
    [TALLY_C_QUEUE_CAPACITY] = {"queue_capacity", "buffers the queue may hold", TALLY_CC_INFO},
    [TALLY_C_PARSE_BYTES_LOST] = {"parse_bytes_lost",
				  "bytes of buffers left unread after a "
				  "parse failure",
				  TALLY_CC_INFO},
    [TALLY_C_OUTSIDE_WINDOW] = {"outside_window",
				"records outside the collection window, left out on purpose",
				TALLY_CC_INFO},
    [TALLY_C_CUT_AT_EDGES] = {"cut_at_edges",
			      "calls or GPU records whose other half fell outside the collection "
			      "window (in flight as it opened or closed), not loss",
			      TALLY_CC_INFO},
    [TALLY_C_WRITE_FAILURES] = {"write_failures", "writes that failed", TALLY_CC_LOSS},
    [TALLY_C_WRITE_ERRNO] = {"write_errno", "errno of the last failed write", TALLY_CC_INFO},
    [TALLY_C_BYTES_WRITTEN] = {"bytes_written", "bytes that reached the file", TALLY_CC_INFO},
    [TALLY_C_BYTES_LOST] = {"bytes_lost", "bytes that did not reach the file", TALLY_CC_LOSS},
    [TALLY_C_SHORT_WRITES] = {"short_writes",
			      "writes that took fewer bytes than given "
			      "(retried)",
			      TALLY_CC_INFO},
    [TALLY_C_CHUNKS_WRITTEN] = {"chunks_written", "chunks that reached the file", TALLY_CC_INFO},
    [TALLY_C_CHUNKS_LOST] = {"chunks_lost", "chunks that did not reach the file", TALLY_CC_LOSS},
    [TALLY_C_RECORDS_LOST_WRITE] = {"records_lost_write",
				    "records in chunks that did not "
				    "reach the file",
				    TALLY_CC_LOSS},
    [TALLY_C_FLUSH_PATH] = {"flush_path", "exit path that ran the closing flush", TALLY_CC_INFO},
    [TALLY_C_FLUSH_START] = {"flush_start", "closing flush began (CUPTI ns)", TALLY_CC_INFO},
    [TALLY_C_FLUSH_END] = {"flush_end", "closing flush ended (CUPTI ns)", TALLY_CC_INFO},
    [TALLY_C_FLUSH_COMPLETED] = {"flush_completed", "1 if the closing flush finished",
				 TALLY_CC_INFO},
    [TALLY_C_FLUSH_RECORDS] = {"flush_records", "records the closing flush delivered",
			       TALLY_CC_INFO},
    [TALLY_C_FLUSH_BUFFERS] = {"flush_buffers", "buffers the closing flush delivered",
			       TALLY_CC_INFO},
    [TALLY_C_WATCHDOG_FIRED] = {"watchdog_fired", "the flush watchdog gave up on a hanging flush",
				TALLY_CC_LOSS},
    [TALLY_C_SIGNAL] = {"signal", "signal that started the closing flush", TALLY_CC_INFO},
    [TALLY_C_BUFFERS_STRANDED] = {"buffers_stranded",
				  "buffers CUPTI still held at close (never delivered)",
				  TALLY_CC_LOSS},
    [TALLY_C_MERGE_DAMAGED] = {"merge_damaged_chunks",
			       "damaged or missing chunks in an input of tally merge",
			       TALLY_CC_LOSS},
    [TALLY_C_SIGNAL_RECEIVED] = {"signal_received",
				 "first signal that was to end the process (its number)",
				 TALLY_CC_INFO},
    [TALLY_C_SIGNAL_AT] = {"signal_at_ns", "when it arrived: ns after the session started",
			   TALLY_CC_INFO},
    [TALLY_C_SIGNALS_RECEIVED] = {"signals_received",
				  "signals that were to end the process, repeats included",
				  TALLY_CC_INFO},
    [TALLY_C_SIGNAL_SENDER] = {"signal_sender",
			       "pid that sent the first one (0: the kernel: a terminal, a fault)",
			       TALLY_CC_INFO},
    [TALLY_C_SIGNAL_TO_CLOSE] = {"signal_to_close_ns",
				 "from the signal's arrival to the final ledger written",
				 TALLY_CC_INFO},
    [TALLY_C_WRITE_FIRST_FAILED_AT] = {"write_first_failed_at",
				       "when a write first failed (CUPTI ns, at slice grain)",
				       TALLY_CC_INFO},
    [TALLY_C_WRITE_LAST_FAILED_AT] = {"write_last_failed_at",
				      "when a write last failed (CUPTI ns, at slice grain)",
				      TALLY_CC_INFO},
    [TALLY_C_CLOSE_RESERVE_USED] = {"close_reserve_used",
				    "1: writes had failed, and the close gave back the room kept "
				    "for it so that its last chunks got through",
				    TALLY_CC_INFO},
    [TALLY_C_SAMPLES_TAKEN] = {"samples_taken",
			       "host samples taken (Python and native; written + dropped)",
			       TALLY_CC_INFO},
    [TALLY_C_SAMPLES_DROPPED] =
	{"samples_dropped",
	 "host samples lost for want of room (a ring or the queue was full, "
	 "the kernel's perf buffer overflowed)",
	 TALLY_CC_LOSS},
    [TALLY_C_SAMPLES_TORN] = {"samples_torn",
			      "Python samples whose frames changed while read: written with no "
			      "stack",
			      TALLY_CC_INFO},
    [TALLY_C_SAMPLE_STALLS] =
	{"sample_stalls",
	 "times sampling stopped for longer than the stall limit (the sampler "
	 "did not run, or the kernel throttled sampling)",
	 TALLY_CC_LOSS},
    [TALLY_C_SAMPLE_TICKS_MISSED] =
	{"sample_ticks_missed", "Python sampling periods skipped because the sampler woke late",
	 TALLY_CC_INFO},
    [TALLY_C_SAMPLE_OVERRUNS] = {"sample_overruns",
				 "native sampling periods the kernel folded into the next sample "
				 "(its timer fired late, or the signal was blocked): that sample "
				 "stands for them",
				 TALLY_CC_INFO},
    [TALLY_C_SAMPLES_SKIPPED] = {"samples_skipped",
				 "native samples skipped on purpose: the thread was inside tally's "
				 "own unwinder",
				 TALLY_CC_INFO},
    [TALLY_C_OSRT_DROPPED] = {"osrt_dropped",
			      "blocking calls not recorded for want of room (a ring or the queue "
			      "was full)",
			      TALLY_CC_LOSS},
    [TALLY_C_THREADS_SEEN] = {"threads_seen", "threads the sampler saw in the process",
			      TALLY_CC_INFO},
    [TALLY_C_SAMPLES_NO_PYTHON] = {"samples_no_python",
				   "Python samples not written: the thread had a Python thread "
				   "state but no Python frame (a C++ thread of PyTorch's, say)",
				   TALLY_CC_INFO},
    [TALLY_C_SAMPLE_FORK_NS] = {"sample_fork_ns",
				"ns the program spent in fork(), which held the Python sampler "
				"with the program's threads (the next samples stand for it)",
				TALLY_CC_INFO},
    [TALLY_C_METRIC_DECODED] = {"metric_samples_decoded",
				"GPU metric samples taken out of the hardware buffers",
				TALLY_CC_INFO},
    [TALLY_C_METRIC_WRITTEN] = {"metric_samples_written",
				"GPU metric samples written (one record per metric)",
				TALLY_CC_INFO},
    [TALLY_C_METRIC_SKIPPED] = {"metric_samples_skipped",
				"first samples after each start, left out on purpose",
				TALLY_CC_INFO},
    [TALLY_C_METRIC_DROPPED] = {"metric_samples_dropped",
				"GPU metric samples decoded but not written", TALLY_CC_LOSS},
    [TALLY_C_METRIC_OVERFLOWS] = {"metric_overflows",
				  "times the GPU's metric sample buffer overflowed (samples lost)",
				  TALLY_CC_LOSS},
    [TALLY_C_METRIC_GAPS] = {"metric_gaps",
			     "breaks in a device's metric samples: stretches no sample covers",
			     TALLY_CC_LOSS},
    [TALLY_C_METRIC_GAP_NS] = {"metric_gap_ns", "time in those breaks", TALLY_CC_INFO},
    [TALLY_C_METRIC_MERGED] = {"metric_samples_merged",
			       "samples spanning more than 1.5 intervals (averages, no time lost)",
			       TALLY_CC_INFO},
    [TALLY_C_METRIC_FAILURES] = {"metric_sampler_failures",
				 "devices whose metric sampling stopped early on an error",
				 TALLY_CC_LOSS},
    [TALLY_C_METRIC_DEVICES] = {"metric_devices", "devices whose metrics this process sampled",
				TALLY_CC_INFO},
    [TALLY_C_FDS_REOPENED] = {"fds_reopened",
			      "times the program closed or took over a descriptor of tally's and "
			      "tally opened its file again (nothing lost; the notes say which)",
			      TALLY_CC_INFO},
    [TALLY_C_FD_LOST_WRITES] = {"fd_lost_writes",
				"writes that failed because the program closed or took over the "
				"trace's descriptor and the trace could not be opened again",
				TALLY_CC_INFO},
    [TALLY_C_BUFFERS_UNQUEUED] = {"buffers_unqueued",
				  "CUPTI buffers the queue could not take (never parsed)",
				  TALLY_CC_LOSS},
    [TALLY_C_METRIC_GAPS_HARDWARE] = {"metric_gaps_hardware",
				      "of the metric breaks, those the GPU left: no sample taken, "
				      "and tally left nothing out",
				      TALLY_CC_INFO},
    [TALLY_C_METRIC_GAPS_LATE] = {"metric_gaps_late",
				  "of the metric breaks, those a late decode left: its image was "
				  "full, and the hardware's rest was lost",
				  TALLY_CC_INFO},
    [TALLY_C_BUFFERS_EMPTY_AT_CLOSE] =
	{"buffers_empty_at_close",
	 "buffers CUPTI still held at close with no record written in "
	 "them (not stranded: nothing in them was lost)",
	 TALLY_CC_INFO},
    [TALLY_C_INCOMPLETE_AT_CLOSE] = {"incomplete_at_close",
				     "buffers the close's forced flush handed over with a record "
				     "CUPTI had not finished (in flight as the trace closed)",
				     TALLY_CC_INFO},
};

#define BY_KIND(n)                                                                                 \
	{                                                                                          \
		"records_" n, "records parsed of this kind", TALLY_CC_INFO                         \
	}
static const struct tally_counter_info by_kind[TALLY_KIND_MAX] = {
    [TALLY_KIND_KERNEL] = BY_KIND("kernel"),	     [TALLY_KIND_MEMCPY] = BY_KIND("memcpy"),
    [TALLY_KIND_MEMSET] = BY_KIND("memset"),	     [TALLY_KIND_RUNTIME] = BY_KIND("runtime"),
    [TALLY_KIND_DRIVER] = BY_KIND("driver"),	     [TALLY_KIND_SYNC] = BY_KIND("sync"),
    [TALLY_KIND_NVTX_RANGE] = BY_KIND("nvtx_range"), [TALLY_KIND_NVTX_MARK] = BY_KIND("nvtx_mark"),
    [TALLY_KIND_OVERHEAD] = BY_KIND("overhead"),     [TALLY_KIND_MEMORY] = BY_KIND("memory"),
    [TALLY_KIND_CPU_SAMPLE] = BY_KIND("cpu_sample"), [TALLY_KIND_OSRT] = BY_KIND("osrt"),
    [TALLY_KIND_GPU_METRIC] = BY_KIND("gpu_metric"),
};

const struct tally_counter_info *tally_counter_info(unsigned id)
{
	const struct tally_counter_info *i = NULL;

	if (id < TALLY_C_BY_KIND)
		i = &counters[id];
	else if (id < TALLY_C_MAX)
		i = &by_kind[id - TALLY_C_BY_KIND];
	return i && i->name ? i : NULL;
}

const unsigned tally_loss_counters[] = {
    TALLY_C_DROPPED_CUPTI,   TALLY_C_BAD_TIME,		TALLY_C_UNKNOWN_KIND,
    TALLY_C_PARSE_FAILURES,  TALLY_C_DROPPED_INPROCESS, TALLY_C_UNMATCHED_API,
    TALLY_C_UNMATCHED_GPU,   TALLY_C_FOREIGN_BUFFERS,	TALLY_C_BUFFERS_STRANDED,
    TALLY_C_WRITE_FAILURES,  TALLY_C_CHUNKS_LOST,	TALLY_C_RECORDS_LOST_WRITE,
    TALLY_C_BYTES_LOST,	     TALLY_C_WATCHDOG_FIRED,	TALLY_C_MERGE_DAMAGED,
    TALLY_C_SAMPLES_DROPPED, TALLY_C_SAMPLE_STALLS,	TALLY_C_OSRT_DROPPED,
    TALLY_C_METRIC_DROPPED,  TALLY_C_METRIC_OVERFLOWS,	TALLY_C_METRIC_GAPS,
    TALLY_C_METRIC_FAILURES, TALLY_C_BUFFERS_UNQUEUED,
};
const unsigned tally_loss_counters_count = sizeof(tally_loss_counters) / sizeof(unsigned);

const char *tally_flush_path_name(unsigned path)
{
	static const char *const names[TALLY_FLUSH_PATH_MAX] = {
	    "none", "exit", "_exit", "signal",	   "crash", "context-destroy",
	    "stop", "exec", "api",   "quick_exit",
	};

	return path < TALLY_FLUSH_PATH_MAX ? names[path] : "unknown";
}

void tally_ledger_encode(struct tally_buf *b, const struct tally_ledger *l)
{
	unsigned id;

	tally_buf_put_varint(b, l->slice);
	tally_buf_put_varint(b, l->t_begin);
	tally_buf_put_varint(b, l->t_end);
	for (id = 1; id < TALLY_C_MAX; id++) {
		if (!l->v[id])
			continue;
		tally_buf_put_varint(b, id);
		tally_buf_put_varint(b, l->v[id]);
	}
	/* Counters of a newer writer, as they came. */
	for (id = 0; id < l->unknown_counters && id < TALLY_LEDGER_UNKNOWN_KEPT; id++) {
		tally_buf_put_varint(b, l->unknown[id].id);
		tally_buf_put_varint(b, l->unknown[id].value);
	}
}

bool tally_ledger_decode(const uint8_t *p, size_t len, bool final, struct tally_ledger *l)
{
	struct tally_cursor c = {p, p + len, false};

	memset(l, 0, sizeof(*l));
	l->final = final;
	l->slice = tally_cur_varint(&c);
	l->t_begin = tally_cur_varint(&c);
	l->t_end = tally_cur_varint(&c);
	while (!c.bad && c.p < c.end) {
		uint64_t id = tally_cur_varint(&c);
		uint64_t v = tally_cur_varint(&c);

		if (id > 0 && id < TALLY_C_MAX && tally_counter_info((unsigned)id)) {
			l->v[id] = v;
		} else {
			if (l->unknown_counters < TALLY_LEDGER_UNKNOWN_KEPT) {
				l->unknown[l->unknown_counters].id = id;
				l->unknown[l->unknown_counters].value = v;
			}
			l->unknown_counters++;
		}
	}
	return !c.bad;
}
