/* SPDX-License-Identifier: MIT */
/*
 * The .tally file format: constants and record types shared by the writer (inside the traced
 * process) and every reader (the tally CLI).  docs/format.md is the contract; keep the two in step.
 */
#ifndef TALLY_FORMAT_TALLY_FORMAT_H
#define TALLY_FORMAT_TALLY_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TALLY_MAGIC	       "\x89TALLY\r\n"
#define TALLY_MAGIC_LEN	       8
#define TALLY_PREAMBLE_LEN     16
#define TALLY_FORMAT_MAJOR     1
#define TALLY_FORMAT_MINOR     4
#define TALLY_CHUNK_SYNC       0x4B4E4843u /* "CHNK" read as little-endian u32 */
#define TALLY_CHUNK_HEADER_LEN 32
#define TALLY_CHUNK_MAX	       (64u << 20)
/*
 * What a RECORDS chunk may declare (docs/format.md §7): a reader checks the row count against the
 * payload's size before it allocates anything, so that memory and time stay proportional to the
 * file.  Writers keep to it (the encoder spends a byte per row on START when it would not).
 */
#define TALLY_RECORDS_MAX   65536u
#define TALLY_ROWS_PER_BYTE 8u
#define TALLY_STRING_ID_MAX (1u << 28) /* and never beyond the file's size in bytes */

enum tally_chunk_type {
	TALLY_CHUNK_SESSION = 1,
	TALLY_CHUNK_STRINGS = 2,
	TALLY_CHUNK_RECORDS = 3,
	TALLY_CHUNK_LEDGER = 4,
	TALLY_CHUNK_DEVICE = 5,
	TALLY_CHUNK_CLOCK = 6,
	TALLY_CHUNK_NOTE = 7,
	TALLY_CHUNK_LOSS = 8,
	TALLY_CHUNK_FRAMES = 9,	  /* 1.2: call-stack frames (docs/format.md §12) */
	TALLY_CHUNK_STACKS = 10,  /* 1.2: call stacks, as lists of frame ids */
	TALLY_CHUNK_MODULES = 11, /* 1.2: the process's loaded modules, for native frames */
	TALLY_CHUNK_DROPS = 12,	  /* 1.2: CUPTI's drop counts by queue, contexts tied to devices */
	TALLY_CHUNK_THREADS = 13, /* 1.3: the process's threads: kernel tid, pthread id, name */
	TALLY_CHUNK_GPU_METRICS = 14, /* 1.3: one device's metric sampling (docs/format.md §13) */
	TALLY_CHUNK_SUMMARY =
	    15, /* 1.3: a summary's section facts and aggregates (summary.h, §16) */
	TALLY_CHUNK_SYMBOLS = 16, /* 1.4: native frames named on the recording machine (§12) */
	TALLY_CHUNK_TYPE_MAX,
};

/* DROPS entries (docs/format.md §8): where a count comes from. */
enum tally_drop_source {
	TALLY_DROPS_GLOBAL = 1,	 /* CUPTI's global queue: context, stream and kind not reported */
	TALLY_DROPS_CONTEXT = 2, /* a context's own queue (and stream, where CUPTI keeps one) */
	TALLY_DROPS_SEEN = 3,	 /* not a drop: the context ran on the device; count: GPU records */
};

/* "global queue", "context queue", "context seen"; and what an entry of that source means. */
const char *tally_drop_source_name(unsigned source);
const char *tally_drop_source_meaning(unsigned source);

#define TALLY_CHUNK_FLAG_FINAL 0x1u

enum tally_kind {
	TALLY_KIND_NONE = 0,
	TALLY_KIND_KERNEL = 1,
	TALLY_KIND_MEMCPY = 2,
	TALLY_KIND_MEMSET = 3,
	TALLY_KIND_RUNTIME = 4,
	TALLY_KIND_DRIVER = 5,
	TALLY_KIND_SYNC = 6,
	TALLY_KIND_NVTX_RANGE = 7,
	TALLY_KIND_NVTX_MARK = 8,
	TALLY_KIND_OVERHEAD = 9,
	TALLY_KIND_MEMORY = 10,	    /* 1.2: a device memory allocation or release */
	TALLY_KIND_CPU_SAMPLE = 11, /* 1.3: one thread's stack at one moment (host sampling) */
	TALLY_KIND_OSRT = 12,	    /* 1.3: a blocking call that lasted the threshold or more */
	TALLY_KIND_GPU_METRIC = 13, /* 1.3: one metric of one device over one PM sample */
	TALLY_KIND_MAX,
};

/* Kinds whose records happen on the GPU (the ones a launch API call expects). */
static inline int tally_kind_is_gpu(unsigned kind)
{
	return kind == TALLY_KIND_KERNEL || kind == TALLY_KIND_MEMCPY || kind == TALLY_KIND_MEMSET;
}

static inline int tally_kind_is_api(unsigned kind)
{
	return kind == TALLY_KIND_RUNTIME || kind == TALLY_KIND_DRIVER;
}

const char *tally_kind_name(unsigned kind); /* "kernel", "memcpy", ...; "kind-N" if unknown */
bool tally_kind_known(unsigned kind);	    /* a kind this build has a name for */

enum tally_record_flag {
	TALLY_REC_BAD_TIME = 1u << 0,
	TALLY_REC_LAUNCH = 1u << 1,
	TALLY_REC_ASYNC = 1u << 2,
	TALLY_REC_DEPTH_LOST = 1u << 3,
	TALLY_REC_CAPTURED = 1u << 4,
	TALLY_REC_TEXT_TRUNCATED = 1u << 5, /* NVTX: the message was cut at TALLY_NVTX_TEXT_MAX */
	TALLY_REC_TORN = 1u << 6, /* CPU_SAMPLE: the Python frames changed while read: no stack */
};

/* CPU_SAMPLE records: SUBKIND says how the sample was taken (docs/format.md §14). */
enum tally_sample_source {
	TALLY_SAMPLE_PYTHON = 1, /* wall clock: tally's sampler thread read the Python frames */
	TALLY_SAMPLE_PERF = 2,	 /* CPU time: a perf_event_open software event, user callchain */
	TALLY_SAMPLE_TIMER = 3,	 /* CPU time: a per-thread CPU-time timer's signal, unwound */
};

/* CPU_SAMPLE records: VALUE is the thread's state at the sample (/proc/self/task/TID/stat). */
enum tally_thread_state {
	TALLY_THREAD_UNKNOWN = 0,
	TALLY_THREAD_ON_CPU = 1, /* R: running or runnable */
	TALLY_THREAD_SYSCALL =
	    2, /* D: in a system call that cannot be interrupted (disk, driver) */
	TALLY_THREAD_WAITING = 3, /* S: asleep in the kernel: a futex, a pipe, a timer, poll */
	TALLY_THREAD_STOPPED = 4, /* T, t: stopped or traced */
};

/* OSRT records: CBID says which call (docs/format.md §14); NAME carries the same as a string. */
enum tally_osrt_call {
	TALLY_OSRT_PTHREAD_MUTEX_LOCK = 1,
	TALLY_OSRT_PTHREAD_COND_WAIT = 2,
	TALLY_OSRT_PTHREAD_COND_TIMEDWAIT = 3,
	TALLY_OSRT_PTHREAD_COND_CLOCKWAIT = 4,
	TALLY_OSRT_SEM_WAIT = 5,
	TALLY_OSRT_SEM_TIMEDWAIT = 6,
	TALLY_OSRT_SEM_CLOCKWAIT = 7,
	TALLY_OSRT_POLL = 8,
	TALLY_OSRT_PPOLL = 9,
	TALLY_OSRT_SELECT = 10,
	TALLY_OSRT_PSELECT = 11,
	TALLY_OSRT_EPOLL_WAIT = 12,
	TALLY_OSRT_EPOLL_PWAIT = 13,
	TALLY_OSRT_READ = 14,
	TALLY_OSRT_RECV = 15,
	TALLY_OSRT_RECVFROM = 16,
	TALLY_OSRT_RECVMSG = 17,
	TALLY_OSRT_NANOSLEEP = 18,
	TALLY_OSRT_CLOCK_NANOSLEEP = 19,
	TALLY_OSRT_USLEEP = 20,
	TALLY_OSRT_SLEEP = 21,
	TALLY_OSRT_WAITPID = 22,
	TALLY_OSRT_WAIT = 23,
	TALLY_OSRT_FUTEX = 24,
	TALLY_OSRT_PTHREAD_JOIN = 25,
	TALLY_OSRT_CALL_MAX,
};

/* "pthread_mutex_lock", ...; NULL for an id this build does not know. */
const char *tally_osrt_call_name(unsigned call);

/* The longest NVTX message kept, in bytes; a longer one is cut at a UTF-8 character boundary. */
#define TALLY_NVTX_TEXT_MAX 4000

/* RUNTIME/DRIVER records: what the call is, in SUBKIND (docs/format.md §7). */
enum tally_api_class {
	TALLY_API_OTHER = 0,
	TALLY_API_LAUNCH = 1,	     /* launches GPU work: kernel, copy, memset, graph */
	TALLY_API_CAPTURE_BEGIN = 2, /* begins stream capture into a graph */
	TALLY_API_CAPTURE_END = 3,   /* ends stream capture */
};

/*
 * One record, any kind: the logical row of docs/format.md §7.  Fields a kind does not use are zero.
 * The names follow the columns; see the table there for what each means per kind.
 */
struct tally_record {
	uint64_t start;
	uint64_t end;
	uint64_t bytes;
	uint64_t graph_node_id;
	uint32_t kind;
	uint32_t flags;
	uint32_t correlation_id;
	uint32_t name_id;
	uint32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	uint32_t process_id;
	uint32_t thread_id;
	uint32_t cbid;
	uint32_t subkind;
	uint32_t src_kind;
	uint32_t dst_kind;
	uint32_t src_device;
	uint32_t dst_device;
	int32_t grid[3];
	int32_t block[3];
	uint32_t registers;
	uint32_t static_smem;
	uint32_t dynamic_smem;
	uint32_t graph_id;
	uint32_t value;
	uint32_t domain_id;
	uint32_t color;
	uint32_t category;
	uint32_t stack_id;    /* 1.2: call stack of the launching call (STACKS chunk), 0 none */
	uint64_t address;     /* 1.2: MEMORY: the allocation's device address */
	int64_t metric_value; /* 1.3: GPU_METRIC: the value x 10^subkind */
};

/* MEMORY records: SUBKIND is the operation (CUPTI's CUpti_ActivityMemoryOperationType). */
enum tally_memory_op {
	TALLY_MEM_ALLOC = 1,
	TALLY_MEM_RELEASE = 2,
};

enum tally_column {
	TALLY_COL_START = 1,
	TALLY_COL_DURATION,
	TALLY_COL_CORRELATION,
	TALLY_COL_NAME,
	TALLY_COL_DEVICE,
	TALLY_COL_CONTEXT,
	TALLY_COL_STREAM,
	TALLY_COL_PROCESS,
	TALLY_COL_THREAD,
	TALLY_COL_BYTES,
	TALLY_COL_FLAGS,
	TALLY_COL_CBID,
	TALLY_COL_SUBKIND,
	TALLY_COL_SRC_KIND,
	TALLY_COL_DST_KIND,
	TALLY_COL_SRC_DEVICE,
	TALLY_COL_DST_DEVICE,
	TALLY_COL_GRID_X,
	TALLY_COL_GRID_Y,
	TALLY_COL_GRID_Z,
	TALLY_COL_BLOCK_X,
	TALLY_COL_BLOCK_Y,
	TALLY_COL_BLOCK_Z,
	TALLY_COL_REGISTERS,
	TALLY_COL_STATIC_SMEM,
	TALLY_COL_DYNAMIC_SMEM,
	TALLY_COL_GRAPH_ID,
	TALLY_COL_GRAPH_NODE_ID,
	TALLY_COL_VALUE,
	TALLY_COL_DOMAIN,
	TALLY_COL_COLOR,
	TALLY_COL_CATEGORY,
	TALLY_COL_STACK,   /* 1.2 */
	TALLY_COL_ADDRESS, /* 1.2 */
	/* 35: host samples */
	TALLY_COL_METRIC_VALUE = 36, /* 1.3: GPU_METRIC */
	TALLY_COL_MAX,
};

enum tally_col_encoding {
	TALLY_ENC_CONST = 0,
	TALLY_ENC_DELTA = 1,
	TALLY_ENC_DELTA_RLE = 2,
};

/* Key/value entry types (docs/format.md §5). */
enum tally_kv_type {
	TALLY_KV_UINT = 1,
	TALLY_KV_SINT = 2,
	TALLY_KV_BYTES = 3,
};

enum tally_session_key {
	TALLY_SK_WRITER = 1,
	TALLY_SK_HOST,
	TALLY_SK_PID,
	TALLY_SK_PPID,
	TALLY_SK_CMDLINE,
	TALLY_SK_RANK,
	TALLY_SK_START_REALTIME,
	TALLY_SK_START_MONOTONIC,
	TALLY_SK_START_CUPTI,
	TALLY_SK_DRIVER_VERSION,
	TALLY_SK_RUNTIME_VERSION,
	TALLY_SK_CUPTI_VERSION,
	TALLY_SK_CONFIG,
	TALLY_SK_KINDS,
	TALLY_SK_SESSION_ID,
	TALLY_SK_PARENT_ID,
	TALLY_SK_SOURCE,
	TALLY_SK_EXE,
	TALLY_SK_SLICE_NS,
	TALLY_SK_OUTPUT,
	TALLY_SK_MERGED,
	TALLY_SK_MERGE_OFFSET,
	/* 1.3, host sampling and blocking calls (docs/format.md §14) */
	TALLY_SK_SAMPLE = 30,		/* bits: 1 python, 2 native: what was asked */
	TALLY_SK_SAMPLE_RATE = 31,	/* Hz */
	TALLY_SK_SAMPLE_MECHANISM = 32, /* "perf: why" / "timer: why" / "none: why" */
	TALLY_SK_OSRT_THRESHOLD = 33,	/* ns: blocking calls this long or longer are recorded */
	TALLY_SK_SAMPLE_SIGNAL = 34,	/* the timer fallback's signal number; 0 none */
	/* 1.3: GPU metrics asked for (docs/format.md §13); absent when they were not */
	TALLY_SK_GPU_METRICS = 35,     /* bytes: "all" or device ordinals "0,2" */
	TALLY_SK_GPU_METRICS_HZ = 36,  /* uint: sampling frequency asked for */
	TALLY_SK_GPU_METRICS_SET = 37, /* bytes: "default" or metric names, comma-separated */
	/* 1.3: which job a process belongs to (docs/format.md §5), so readers can tell traces
	 * that belong together from traces that do not */
	TALLY_SK_JOB = 40,	  /* "SLURM_JOB_ID=123": the batch system's job */
	TALLY_SK_JOB_STEP = 41,	  /* "SLURM_STEP_ID=0": the step of that job */
	TALLY_SK_RUN_ID = 42,	  /* "TORCHELASTIC_RUN_ID=abc": the launcher's run */
	TALLY_SK_WORLD_SIZE = 43, /* "WORLD_SIZE=8": how many ranks the job has */
	/* 1.3: the room kept for the closing chunks (docs/format.md §15) */
	TALLY_SK_CLOSE_RESERVE = 45,	   /* bytes reserved at open; 0: none could be */
	TALLY_SK_CLOSE_RESERVE_ERRNO = 46, /* why none could be (EOPNOTSUPP ...); 0 when reserved */
	TALLY_SK_OUTPUT_FS = 47,	   /* the output's filesystem type ("ext4", "tmpfs" ...) */
	TALLY_SK_MAX,
	/* 1.3: the section is a summary (tally stats --partial): no records, a SUMMARY chunk */
	TALLY_SK_SUMMARY = 50,
};

/* THREADS entries: what a thread is. */
enum tally_thread_flag {
	TALLY_THREADF_MAIN = 1u << 0,	/* the process's main thread (tid == pid) */
	TALLY_THREADF_PYTHON = 1u << 1, /* has a Python thread state (its frames are sampled) */
	TALLY_THREADF_TALLY = 1u << 2,	/* one of tally's own threads (sampler, consumer, ...) */
	TALLY_THREADF_EXITED = 1u << 3, /* gone: the thread ended before this entry was written */
};

/* TALLY_SK_SAMPLE bits. */
enum tally_sample_bits {
	TALLY_SAMPLE_BIT_PYTHON = 1u << 0,
	TALLY_SAMPLE_BIT_NATIVE = 1u << 1,
};

enum tally_device_key {
	TALLY_DK_ID = 1,
	TALLY_DK_NAME,
	TALLY_DK_UUID,
	TALLY_DK_CC_MAJOR,
	TALLY_DK_CC_MINOR,
	TALLY_DK_GLOBAL_MEM,
	TALLY_DK_SM_COUNT,
	TALLY_DK_PCI_BUS,
	TALLY_DK_MEM_CLOCK,
};

enum tally_clock_key {
	TALLY_CK_CUPTI = 1,
	TALLY_CK_REALTIME,
	TALLY_CK_MONOTONIC,
};

enum tally_note_key {
	TALLY_NK_TIME = 1,
	TALLY_NK_SEVERITY,
	TALLY_NK_CODE,
	TALLY_NK_TEXT,
};

/* GPU_METRIC records (docs/format.md §13): VALUE holds the sample's flags. */
enum tally_metric_sample_flag {
	TALLY_METRIC_MERGED = 1u << 0,	  /* spans more than 1.5 intervals: an average over it */
	TALLY_METRIC_AFTER_GAP = 1u << 1, /* the device's samples have a gap just before it */
};

/* GPU_METRICS chunk keys (docs/format.md §13). */
enum tally_gpu_metrics_key {
	TALLY_GK_DEVICE = 1,
	TALLY_GK_UUID = 2,
	TALLY_GK_STATE = 3,
	TALLY_GK_CHIP = 4,
	TALLY_GK_INTERVAL = 5,
	TALLY_GK_TRIGGER = 6,
	TALLY_GK_HW_BUFFER = 7,
	TALLY_GK_PASSES = 8,
	TALLY_GK_METRIC = 9, /* list: scale:varint name unit label (len-bytes each) */
	TALLY_GK_RESULT = 10,
	TALLY_GK_WHY = 11,
	TALLY_GK_REMEDY = 12,
	TALLY_GK_LEFT_OUT = 13, /* list: "NAME: why" */
	TALLY_GK_HOLDER_PID = 20,
	TALLY_GK_HOLDER_HOST = 21,
	TALLY_GK_HOLDER_FILE = 22,
	TALLY_GK_HOLDER_SESSION = 23,
};

/* GPU_METRICS key 3: what this section has of the device's metrics. */
enum tally_gpu_metrics_state {
	TALLY_GM_SAMPLED = 1,	  /* this section holds its samples */
	TALLY_GM_ELSEWHERE = 2,	  /* another process of the job samples it (keys 20-23) */
	TALLY_GM_REFUSED = 3,	  /* the driver keeps the counters for administrators */
	TALLY_GM_UNSUPPORTED = 4, /* this GPU or configuration cannot be sampled */
	TALLY_GM_BUSY = 5,	  /* another tool holds the counters */
	TALLY_GM_STOPPED = 6,	  /* sampling stopped early on an error */
	TALLY_GM_STATE_MAX,
};

/* GPU_METRICS key 6 */
enum tally_gpu_metrics_trigger {
	TALLY_GM_TRIGGER_SYSCLK = 0, /* the interval counts GPU SYS clock cycles */
	TALLY_GM_TRIGGER_TIME = 1,   /* the interval is in ns */
};

/* "sampled", "elsewhere", ...; "unknown" for a state this build does not know. */
const char *tally_gpu_metrics_state_name(unsigned state);

enum tally_note_severity {
	TALLY_NOTE_INFO = 0,
	TALLY_NOTE_WARNING = 1,
	TALLY_NOTE_ERROR = 2,
};

#endif
