/* SPDX-License-Identifier: MIT */
/*
 * Reading traces for people: the API under every room that reads traces (stats, export, compare,
 * merge, the page).  src/read/ implements it: opening inputs (inputs.c), names (names.c), call
 * stacks (frames.c) and what was lost (loss.c).
 *
 * A report set is every section of every input file (FILE... and directories expanded), read in
 * one streaming pass.  Consumers see each section begin and end, its records in batches, every
 * LEDGER snapshot, and every damaged range as the reader finds it; after the pass each section
 * carries its verdict.  Sections are aligned onto one timeline through their clock pairs (the
 * offset is added by the consumer, so records are never copied).
 */
#ifndef TALLY_READ_TRACE_SET_H
#define TALLY_READ_TRACE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hashmap.h"
#include "ledger.h"
#include "reader.h"
#include "tally-format.h"
#include "verdict.h"

struct report_input {
	char *path;
	struct tally_file *f;	     /* opened (preamble checked) by report_set_open */
	unsigned long long dev, ino; /* what it is, whatever its name: no output may replace it */
	unsigned first_section;	     /* global index of its first section */
	size_t damage_delivered;     /* f->damage entries already handed to consumers */
};

/* Per-section names, resolved once per string id (see names.c). */
struct report_names;
/* Per-section frame and stack labels (see frames.c). */
struct report_frames;
/* Per-section GPU metric names, labels and units (see metrics.c). */
struct report_metrics;

struct report_section {
	unsigned index;		      /* across all inputs, in reading order */
	struct report_input *in;      /* the file it is in */
	struct tally_section *s;      /* the reader's summary (complete after the pass) */
	int64_t offset;		      /* ns to add to this section's timestamps to align it */
	bool aligned_by_clock;	      /* offset from a CLOCK pair (else SESSION pair, else none) */
	bool offset_frozen;	      /* records were handed out (or merge wrote the offset down) */
	bool ended;		      /* section_end was called */
	uint64_t last_time;	      /* latest aligned end of a timed record so far */
	struct tally_verdict verdict; /* after report_scan() */
	struct report_names *names;
	/* A section whose session id was read before (the same file twice, a part given with the
	 * merged file it went into): kept out of set->sections and of every consumer, and named
	 * by report_warn_damage. */
	const struct report_section *duplicate_of;
	struct report_frames *frames;
	struct report_metrics *metrics;
};

struct report_set {
	struct report_input *inputs;
	size_t ninputs, inputs_cap;
	struct report_section **sections;
	size_t nsections, sections_cap;
	uint64_t total_bytes;
	bool align;    /* align sections through their clock pairs (default true) */
	uint64_t base; /* origin for relative times: earliest aligned session start (0: unknown) */
	bool complete; /* after report_scan(): every section of every file COMPLETE */
	bool read_failed; /* report_scan() failed on an input (not on its consumer) */
	uint64_t records;
	struct report_section **duplicates; /* sections skipped as repeats (duplicate_of set) */
	size_t nduplicates, duplicates_cap;
	struct tally_map sessions; /* session id -> index + 1 of the section that carries it */
};

/*
 * Expand paths (files, and directories: every *.tally inside, sorted by name) and open each file.
 * Nothing is read yet.  Until report_set_close, every output tally writes refuses to replace any
 * of these files (outfile_protect).  On failure returns -errno with err naming the file (and the
 * offset, for a file that is not a trace); set is left empty.
 */
int report_set_open(struct report_set *set, char *const *paths, size_t npaths, char *err,
		    size_t errlen);
void report_set_close(struct report_set *set);

/*
 * The files paths name, as report_set_open reads them: a file as given, a directory as every
 * *.tally in it, sorted by name.  0, or -errno with err naming the path (a directory with no
 * *.tally in it is -ENOENT).  *files is freed with report_paths_free.
 */
int report_paths_expand(char *const *paths, size_t npaths, char ***files, size_t *nfiles, char *err,
			size_t errlen);
void report_paths_free(char **files, size_t n);

/*
 * paths opened and read whole with no consumer, for the commands that need only each section's
 * summary and verdict (record's closing lines, control's rounds, merge's read-back):
 * report_set_open, then report_scan.  0, or -errno with err naming the file (set is then left
 * empty, as report_set_open leaves it); report_set_close after a success.
 */
int report_set_read(struct report_set *set, char *const *paths, size_t npaths, char *err,
		    size_t errlen);

/* Reads each input's first SESSION (cheap) to find set->base before the main pass. */
void report_set_find_base(struct report_set *set);
/*
 * The earliest aligned moment of any section (session start or first record, whichever is
 * earlier): a summary pass over every input.  For outputs whose times must not be negative.
 */
uint64_t report_set_earliest(const struct report_set *set);

struct report_scan_ops {
	int (*section)(void *ctx, struct report_section *rs);
	int (*records)(void *ctx, struct report_section *rs, const struct tally_record *r,
		       size_t n);
	int (*ledger)(void *ctx, struct report_section *rs, const struct tally_ledger *l);
	/* every intact chunk (merge rewrites them); RECORDS payloads come after records() */
	int (*chunk)(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		     const uint8_t *payload);
	/* a damaged range; rs is NULL when the file has no section at all */
	int (*damage)(void *ctx, struct report_input *in, struct report_section *rs,
		      const struct tally_damage *d);
	int (*section_end)(void *ctx, struct report_section *rs);
	void (*progress)(void *pctx, uint64_t done, uint64_t total);
	void *ctx;
	void *pctx; /* progress's own context (a display, not the consumer) */
};

/*
 * One pass over every input, then the verdict of every section (set->complete).  Returns 0, a
 * callback's non-zero value, or -errno (err says which file).
 */
int report_scan(struct report_set *set, const struct report_scan_ops *ops, char *err,
		size_t errlen);

/* Time of t (a timestamp of rs) on the aligned timeline. */
static inline uint64_t report_time(const struct report_section *rs, uint64_t t)
{
	return t + (uint64_t)rs->offset;
}

/* "pid 4242 on host (RANK=3)" */
const char *report_section_label(const struct report_section *rs, char *buf, size_t len);

/* ---- names (names.c) ------------------------------------------------------------------- */

enum report_name_mode {
	REPORT_NAME_DEMANGLED, /* nsys's default: "void foo<int>(float *, int)" */
	REPORT_NAME_BASE,      /* nsys's :base and shortName: "foo" */
	REPORT_NAME_MANGLED,   /* as recorded: "_Z3fooIiEvPfi" */
};

/*
 * The string for id in rs's section: "[string N lost]" when its STRINGS chunk was lost.  A string
 * (or a demangled name) longer than REPORT_TEXT_MAX bytes is cut there, ending in "...[N bytes
 * cut]", and counted in report_texts_cut(): a name repeated on every row of a trace report or an
 * export must not make the output thousands of times its input.  NVTX messages are shorter
 * (TALLY_NVTX_TEXT_MAX), and so is every real kernel and API name seen so far.
 */
#define REPORT_TEXT_MAX 4096u
const char *report_string(struct report_section *rs, uint32_t id);
uint64_t report_texts_cut(void);
/* s itself (a copy) when it is max bytes or less, else cut at a character boundary 64 bytes
 * before max, ending in "...[N bytes cut]" (within max).  Caller frees; NULL without memory. */
char *report_text_cut(const char *s, size_t max);
/* A kernel name in the given form; "[unnamed kernel]" for id 0. */
const char *report_kernel_name(struct report_section *rs, uint32_t id, enum report_name_mode m);
void report_names_free(struct report_names *n);

/*
 * Demangle an Itanium C++ name, as __cxa_demangle would; NULL if the name is not mangled, or is
 * longer than REPORT_DEMANGLE_MAX_IN, or demangles to REPORT_DEMANGLE_MAX_OUT bytes or more (then
 * it is counted in report_demangle_refused() so that reports can say so).  Caller frees.
 */
#define REPORT_DEMANGLE_MAX_IN	(16u << 10)
#define REPORT_DEMANGLE_MAX_OUT (64u << 10)
char *report_demangle(const char *mangled);
uint64_t report_demangle_refused(void);
/* The base name of a demangled signature: "void ns::foo<int>(float *)" -> "foo". Caller frees. */
char *report_base_name(const char *demangled);

/* Labels shared by the reports and exporters. */
const char *report_memcpy_kind_label(unsigned copy_kind); /* "Host-to-Device" */
const char *report_mem_kind_label(unsigned cupti_kind);	  /* "Pageable", "Device" ... */
const char *report_sync_type_label(unsigned t);

/* ---- call stacks (frames.c) ------------------------------------------------------------ */

/*
 * The largest module file a native frame is symbolized from: the trace names the path, so only a
 * regular file up to this size is opened (a FIFO, a device or a huge file there is never read),
 * and its frames read "module+0xoffset".  The largest real ones (libtorch_cuda.so) are ~1.5 GiB.
 */
#define REPORT_MODULE_MAX_BYTES (4ll << 30)

/*
 * "function (file:line)"; native frames as tally record named them on the recording machine, or
 * else from a local file of the module's build only (frames.c): "func [unverified] (module)"
 * where the trace has no build ID to check the file against, "module+0xoffset (build differs)"
 * where the files here are other builds, "module+0xoffset" where there are none.
 */
const char *report_frame_label(struct report_section *rs, uint32_t frame_id);
/* Frames of a stack, innermost first, joined by " <- "; "[no stack]" for id 0. */
const char *report_stack_label(struct report_section *rs, uint32_t stack_id);
/* The innermost frame that is the program's own (not a library's); 0 if no stack. */
uint32_t report_user_frame(struct report_section *rs, uint32_t stack_id);
/* Whether a frame is a library's (site-packages, the standard library, libc, CUDA ...), not the
 * program's own; true for a frame the stack table does not hold. */
bool report_frame_is_library(struct report_section *rs, uint32_t frame_id);
/* Why native frames were labelled "module+0xoffset" instead of symbolized (libdw.so.1 not found,
 * or tally built without libdw); NULL when none was, or all were symbolized. */
const char *report_symbolizer_missing(void);
/* --symfs DIR (perf's meaning): the recorded modules' files looked for under DIR too, each used
 * only when its build ID is the module's.  dir is kept, not copied; NULL: none. */
void report_symfs_set(const char *dir);
/* How the native frames labelled so far (by this process) were named, for the readers' warning. */
struct report_symbols_said {
	uint64_t frames_unverified;  /* from files the trace could not check (no build ID) */
	uint64_t frames_other_build; /* left module+0xoffset: the files here are other builds */
	uint64_t sections_cut;	     /* traces whose naming at record time was cut short */
};
void report_symbols_say(struct report_symbols_said *out);
void report_frames_free(struct report_frames *f);

/* ---- GPU metrics (metrics.c) --------------------------------------------------------------- */

/* What a GPU_METRIC record measures. */
struct report_metric {
	char *name;  /* CUPTI's: sm__cycles_active.avg.pct_of_peak_sustained_elapsed */
	char *label; /* "SM Active", from the device's metric set (or the name) */
	char *unit;  /* "%", "bytes/s", "Hz", "" */
	bool percent;
	uint32_t device;
	uint32_t index; /* 0, 1, ... in the order the section's (device, metric) pairs came */
};

/*
 * The label, unit and place in its device's metric set (UINT32_MAX: not in one) of a metric
 * named name of a device of s: from the section's GPU_METRICS chunk of the device, else from the
 * name (metricset.h: the default set's entry, or its suffix).  Pointers into s, or static, or name.
 */
void report_metric_describe(const struct tally_section *s, uint32_t device, const char *name,
			    const char **label, const char **unit, unsigned *order);
/* The metric of a GPU_METRIC record of rs (cached per section); NULL when memory ran out. */
const struct report_metric *report_metric(struct report_section *rs, const struct tally_record *r);
/* A GPU_METRIC record's value in its unit: METRIC_VALUE / 10^SUBKIND. */
double report_metric_value(const struct tally_record *r);
/* The same, exactly, as decimal text: 12345 at scale 3 is "12.345". */
#define REPORT_METRIC_TEXT 48
const char *report_metric_text(const struct tally_record *r, char buf[REPORT_METRIC_TEXT]);
void report_metrics_free(struct report_metrics *m);

/* ---- loss, for the top of every report (loss.c) ----------------------------------------- */

/* Lines saying whether the set is COMPLETE and, if not, what was lost where. */
void report_loss_text(FILE *out, const struct report_set *set, const char *prefix);
/* The same as JSON fields of the current object: "verdict", "inputs": [...] */
struct tally_json;
void report_loss_json(struct tally_json *j, const struct report_set *set);
/* One section's verdict as fields of the current object, the one schema of every command that
 * says it (check, stats, compare, export): "clock_offset_ns", "verdict", "reasons" (each with
 * its loss windows: begin_ns and end_ns on the aligned timeline, begin_s and end_s after the
 * section's start, count). */
void report_verdict_json(struct tally_json *j, const struct report_section *rs);
/* One section's object of report_loss_json's "sections": its verdict, reasons and loss windows. */
void report_loss_section_json(struct tally_json *j, const struct report_section *rs);
/* One warning line per damaged range of every input: file, kind and byte offset. */
void report_warn_damage(const struct report_set *set, FILE *out, const char *prog);
/*
 * CUPTI's drops by queue and the contexts tied to devices (DROPS chunks, format 1.2) as JSON, the
 * one writer of them: one entry's fields into the current object (source, context, device, stream,
 * then dropped, or gpu_records for a context tied to its device), or a section's entries as an
 * array of such objects.
 */
struct tally_drops;
void report_drops_fields(struct tally_json *j, const struct tally_drops *d);
void report_drops_array(struct tally_json *j, const struct tally_section *s);

/*
 * One identity of a thread everywhere (threads.c): the thread whose CUPTI id (the THREAD of API and
 * NVTX records, pthread_self() cut to 32 bits) THREADS ties to a kernel tid, or NULL; and a
 * thread's label, "MainThread (tid 2001)", "tid 2002" (no name recorded), or "CUPTI thread 1000"
 * for a CUPTI id (cupti) that no THREADS entry ties to a tid.  The label goes into buf.
 */
const struct tally_thread *report_thread_of_cupti(const struct report_section *rs, uint32_t cupti);
const char *report_thread_label(const struct report_section *rs, uint32_t id, bool cupti, char *buf,
				size_t len);

#endif
