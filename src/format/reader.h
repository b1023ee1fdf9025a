/* SPDX-License-Identifier: MIT */
/*
 * The .tally reader.  It streams a file chunk by chunk (memory bounded by the largest chunk plus
 * the string tables), hands records to the caller in batches, and builds a summary of everything
 * else: session facts, devices, ledger snapshots, loss windows, notes and damage.
 *
 * It never trusts the file: every length is bounded, every chunk is checksummed, and a damaged or
 * truncated file is read up to its last intact chunk, then past the damage from the next intact
 * chunk on, with each damaged range reported.
 */
#ifndef TALLY_FORMAT_READER_H
#define TALLY_FORMAT_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpumetrics.h"
#include "ledger.h"
#include "stacks.h"
#include "tally-format.h"

struct tally_device {
	uint32_t id;
	char *name;
	uint8_t uuid[16];
	bool has_uuid;
	uint32_t cc_major, cc_minor;
	uint64_t global_mem;
	uint32_t sm_count;
	char *pci_bus;
};

struct tally_clock {
	uint64_t cupti, realtime, monotonic;
};

struct tally_note {
	uint64_t time;
	unsigned severity;
	char *code;
	char *text;
};

/* A time window in which a loss counter grew. */
struct tally_window {
	uint64_t t_begin, t_end; /* CUPTI ns */
	unsigned counter;	 /* enum tally_counter */
	uint64_t count;
};

/* One DROPS entry (format 1.2): the latest chunk's, counts cumulative. */
struct tally_drops {
	unsigned source; /* enum tally_drop_source */
	uint32_t context, device, stream;
	uint64_t count;
};

/* One THREADS entry (format 1.3): a thread of the process, as the sampler saw it. */
struct tally_thread {
	uint32_t tid;	     /* kernel thread id: THREAD of CPU_SAMPLE and OSRT records */
	uint64_t pthread_id; /* pthread_self(); its low 32 bits are CUPTI's THREAD; 0 unknown */
	unsigned flags;	     /* enum tally_thread_flag */
	char *name;	     /* owned; "" when unknown */
};

enum tally_damage_kind {
	TALLY_DAMAGE_TRUNCATED, /* the file ends inside a chunk */
	TALLY_DAMAGE_CORRUPT,	/* bytes that are not an intact chunk, skipped */
	TALLY_DAMAGE_SEQ_GAP,	/* intact chunks, but sequence numbers missing between them */
	TALLY_DAMAGE_PAYLOAD,	/* an intact chunk whose payload does not decode */
	TALLY_DAMAGE_PARTIAL,	/* a good chunk header, its payload cut short or wrong, and
				   intact chunks after it: a write that failed part way */
};

struct tally_damage {
	enum tally_damage_kind kind;
	uint64_t offset, end; /* byte range in the file */
	uint32_t missing;     /* SEQ_GAP: how many chunk numbers are missing */
	int section;	      /* index of the section it falls in, -1 before any */
};

const char *tally_damage_kind_name(enum tally_damage_kind k);

struct tally_section {
	unsigned index;
	uint64_t offset; /* of the SESSION chunk; 0 for an implicit section (SESSION lost) */
	bool implicit;	 /* records came before any SESSION chunk */

	/* SESSION facts; strings are owned, NULL when absent */
	char *writer, *host, *cmdline, *rank, *config, *source, *exe, *output;
	char *output_fs;			     /* 1.3: NULL when the writer did not say */
	uint64_t close_reserve, close_reserve_errno; /* 1.3: room kept for the close */
	char *job, *job_step, *run_id, *world_size;  /* 1.3: "VAR=value", NULL when absent */
	uint64_t pid, ppid;
	uint64_t start_realtime, start_monotonic, start_cupti;
	uint64_t driver_version, runtime_version, cupti_version;
	uint64_t kinds; /* bit 1 << kind for each kind enabled */
	uint64_t slice_ns;
	uint8_t session_id[16], parent_id[16];
	bool has_session_id, has_parent;
	bool merged;
	int64_t merge_offset;
	/* GPU metrics asked for (1.3): devices ("all", "0,2"), NULL when not asked; Hz; set */
	char *gpu_metrics_asked, *gpu_metrics_set;
	uint64_t gpu_metrics_hz;

	struct tally_device *devices;
	size_t ndevices;
	struct tally_clock *clocks;
	size_t nclocks;
	struct tally_note *notes;
	size_t nnotes;

	struct tally_ledger ledger; /* the latest snapshot */
	uint64_t ledgers;	    /* snapshots read */
	bool has_final;
	struct tally_window *windows;
	size_t nwindows;
	/* bit counter % 64 of word counter / 64: LOSS chunks placed it, so no delta windows */
	uint64_t explicit_windows[(TALLY_C_MAX + 63) / 64];
	struct tally_drops *drops; /* the latest DROPS chunk (1.2); NULL: none written */
	size_t ndrops;
	/* The last GPU_METRICS chunk of each device (1.3), in the order devices first came. */
	struct tally_gpu_metrics *gpu_metrics;
	size_t ngpu_metrics;

	/* host sampling and blocking calls (1.3) */
	uint64_t sample;	      /* TALLY_SK_SAMPLE bits: what was asked */
	uint64_t sample_rate;	      /* Hz */
	char *sample_mechanism;	      /* "perf: why", "timer: why", "none: why"; NULL */
	uint64_t osrt_threshold;      /* ns; 0 when blocking calls were not traced */
	uint64_t sample_signal;	      /* the timer fallback's signal; 0 none */
	struct tally_thread *threads; /* THREADS entries in file order (a later one wins) */
	size_t nthreads;

	/* what the reader found */
	uint64_t records[TALLY_KIND_MAX];
	uint64_t records_total;
	uint64_t chunks, unknown_chunks, unknown_keys, unknown_columns, bad_chunks;
	uint64_t t_min, t_max; /* earliest start and latest end of records with good times */

	char **strings; /* strings[id], id 1..nstrings-1; NULL where a STRINGS chunk was lost */
	uint32_t nstrings;

	struct tally_stack_tables stacks; /* FRAMES, STACKS, MODULES (1.2) */

	/* 1.3: a summary's section (summary.h): no records; facts from its SUMMARY chunk */
	bool summary;
	struct tally_summary_facts *facts;
};

/*
 * The section's time origin, in CUPTI ns: the earliest of the session start and the first
 * record, so that no time shown relative to it is negative (a record may carry a time before the
 * session's start: clocks of another source, or a crafted file).  0 when neither is known.
 */
uint64_t tally_section_origin(const struct tally_section *s);

/* The latest THREADS entry for tid, or NULL.  Linear in the entries: for one lookup. */
const struct tally_thread *tally_section_thread(const struct tally_section *s, uint32_t tid);
/* The latest entry of every thread, sorted by tid (malloc'd; *n of them; NULL when none or out
 * of memory).  O(n log n): for readers that look up many records' threads (bsearch by tid). */
const struct tally_thread **tally_section_threads(const struct tally_section *s, size_t *n);

/* The string for id, or NULL (id 0, or its STRINGS chunk was lost). */
const char *tally_section_string(const struct tally_section *s, uint32_t id);

struct tally_chunk_info {
	uint64_t offset;
	unsigned type, flags;
	uint32_t len, seq;
};

struct tally_file {
	char *path;
	int fd;
	uint64_t size;
	unsigned format_major, format_minor;

	struct tally_section **sections;
	size_t nsections;
	struct tally_damage *damage;
	size_t ndamage;
	uint64_t intact_end; /* just past the last intact chunk */
	uint64_t chunks;
	uint64_t records_total;

	/* read buffer (internal) */
	uint8_t *buf;
	size_t buf_cap, buf_len;
	uint64_t buf_base;
};

/*
 * Callbacks for tally_file_read; any may be NULL.  A non-zero return stops the read and is
 * returned by tally_file_read.  Records (and the section they point into) are valid only during
 * the call.
 */
struct tally_read_ops {
	int (*section)(void *ctx, struct tally_file *f, struct tally_section *s);
	int (*records)(void *ctx, struct tally_section *s, const struct tally_record *recs,
		       size_t n);
	int (*chunk)(void *ctx, const struct tally_chunk_info *c);
	/* called about every 64 MiB read, for progress displays */
	void (*progress)(void *ctx, uint64_t offset, uint64_t size);
	/*
	 * Every intact chunk with its payload, after the reader has taken it in (so a SESSION chunk
	 * comes with its new section, a RECORDS chunk after its records() call).  For tools that
	 * copy or rewrite chunks (tally merge) or need every LEDGER snapshot (exporters).
	 */
	int (*chunk_payload)(void *ctx, struct tally_section *s, const struct tally_chunk_info *c,
			     const uint8_t *payload);
	void *ctx;
};

/*
 * Open path and check its preamble.  On failure returns -errno: -ENOENT and friends from open(2),
 * -EPROTO for a file that is not a tally trace (also an empty one), -ENOTSUP for an unsupported
 * version or incompatible feature; err (if not NULL) then says why in words.
 */
int tally_file_open(struct tally_file **ret, const char *path, char *err, size_t errlen);

/* Read every chunk, filling the summary.  Returns 0, a callback's non-zero value, or -errno. */
int tally_file_read(struct tally_file *f, const struct tally_read_ops *ops);

void tally_file_close(struct tally_file *f); /* NULL is fine */

/* Give back the read window (up to 1 MiB) of a file not being read: a reader of thousands of
 * files keeps the summaries, not their buffers.  The next read makes a new one. */
void tally_file_drop_window(struct tally_file *f);

/*
 * The two stages of a read, for callers that run them on different threads (tally_file_read runs
 * both on the calling one).  The framer reads the file (f->fd must be open) chunk by chunk,
 * checks every chunk, finds the damage and decodes RECORDS payloads: it touches only f's read
 * window, never its summary.  The applier takes the framer's items, in order, builds f's summary
 * and calls ops back, exactly as tally_file_read does.  An item and what it points to are valid
 * only during the emit call: a caller that keeps them copies them (tally_item_size).
 */
enum tally_item_type { TALLY_ITEM_CHUNK, TALLY_ITEM_DAMAGE };

struct tally_item {
	enum tally_item_type type;
	uint64_t at; /* where in the file the framer was (progress) */
	/* TALLY_ITEM_CHUNK */
	bool ahead; /* the SYMBOLS chunk that ends the file, emitted before the others: the
		       applier keeps it for its section (its names label the records) */
	struct tally_chunk_info info;
	const uint8_t *payload;
	long nrecs; /* RECORDS: decoded records, or -EINVAL (damaged) / -ENOMEM */
	unsigned kind;
	uint32_t unknown_columns;
	const struct tally_record *recs;
	size_t recs_cap; /* records recs has room for */
	/* emit may take recs (a malloc'd array, then its to free) and set recs_taken; the framer
	 * then decodes the next chunk into spare (capacity spare_cap records) when emit gives one
	 * back, else into a new array */
	bool recs_taken;
	struct tally_record *spare;
	size_t spare_cap;
	/* TALLY_ITEM_DAMAGE */
	enum tally_damage_kind damage;
	uint64_t off, end;
	uint32_t missing;
};

typedef int (*tally_item_fn)(void *ctx, struct tally_item *it);
struct tally_framer;
struct tally_framer *tally_framer_new(struct tally_file *f);
/* Every item of the file to emit, in order.  0, or emit's non-zero value. */
int tally_framer_run(struct tally_framer *fr, tally_item_fn emit, void *ctx);
void tally_framer_free(struct tally_framer *fr);

struct tally_reading;
struct tally_reading *tally_reading_new(struct tally_file *f, const struct tally_read_ops *ops);
/* One item into f's summary and ops.  0 or a callback's non-zero value (or -ENOMEM). */
int tally_reading_apply(struct tally_reading *r, const struct tally_item *it);
/* The last progress call; frees r. */
void tally_reading_end(struct tally_reading *r);

/* Convenience: open and read with no callbacks (a summary only). */
int tally_file_load(struct tally_file **ret, const char *path, char *err, size_t errlen);

#endif
