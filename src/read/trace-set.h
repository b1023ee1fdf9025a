/* SPDX-License-Identifier: MIT */
/*
 * Reading traces for people: the shared layer under tally stats, export and merge.
 *
 * A report set is every section of every input file (FILE... and directories expanded), read in
 * one streaming pass.  Consumers see each section begin and end, its records in batches, every
 * LEDGER snapshot, and every damaged range as the reader finds it; after the pass each section
 * carries its verdict.  Sections are aligned onto one timeline through their clock pairs (the
 * offset is added by the consumer, so records are never copied).
 */
#ifndef TALLY_REPORT_REPORT_H
#define TALLY_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ledger.h"
#include "reader.h"
#include "tally-format.h"
#include "verdict.h"

struct report_input {
	char *path;
	struct tally_file *f;	 /* opened (preamble checked) by report_set_open */
	unsigned first_section;	 /* global index of its first section */
	size_t damage_delivered; /* f->damage entries already handed to consumers */
};

/* Per-section names, resolved once per string id (see names.c). */
struct report_names;
/* Per-section frame and stack labels (see frames.c). */
struct report_frames;

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
};

struct report_set {
	struct report_input *inputs;
	size_t ninputs;
	struct report_section **sections;
	size_t nsections;
	uint64_t total_bytes;
	bool align;    /* align sections through their clock pairs (default true) */
	uint64_t base; /* origin for relative times: earliest aligned session start (0: unknown) */
	bool complete; /* after report_scan(): every section of every file COMPLETE */
	bool read_failed; /* report_scan() failed on an input (not on its consumer) */
	uint64_t records;
	struct report_section **duplicates; /* sections skipped as repeats (duplicate_of set) */
	size_t nduplicates;
};

/*
 * Expand paths (files, and directories: every *.tally inside, sorted by name) and open each file.
 * Nothing is read yet.  On failure returns -errno with err naming the file (and the offset, for a
 * file that is not a trace); set is left empty.
 */
int report_set_open(struct report_set *set, char *const *paths, size_t npaths, char *err,
		    size_t errlen);
void report_set_close(struct report_set *set);

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

/* The string for id in rs's section: "[string N lost]" when its STRINGS chunk was lost. */
const char *report_string(struct report_section *rs, uint32_t id);
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

/* "function (file:line)"; native frames symbolized from the module map (libdw). */
const char *report_frame_label(struct report_section *rs, uint32_t frame_id);
/* Frames of a stack, innermost first, joined by " <- "; "[no stack]" for id 0. */
const char *report_stack_label(struct report_section *rs, uint32_t stack_id);
/* The innermost frame that is the program's own (not a library's); 0 if no stack. */
uint32_t report_user_frame(struct report_section *rs, uint32_t stack_id);
/* Why native frames were labelled "module+0xoffset" instead of symbolized (libdw.so.1 not found,
 * or tally built without libdw); NULL when none was, or all were symbolized. */
const char *report_symbolizer_missing(void);
void report_frames_free(struct report_frames *f);

/* ---- loss, for the top of every report (loss.c) ----------------------------------------- */

/* Lines saying whether the set is COMPLETE and, if not, what was lost where. */
void report_loss_text(FILE *out, const struct report_set *set, const char *prefix);
/* The same as JSON fields of the current object: "verdict", "inputs": [...] */
struct tally_json;
void report_loss_json(struct tally_json *j, const struct report_set *set);
/* One warning line per damaged range of every input: file, kind and byte offset. */
void report_warn_damage(const struct report_set *set, FILE *out, const char *prog);
/* Seconds of t after the section's start (for "when" lines). */
double report_rel_s(const struct report_section *rs, uint64_t t);

/* ---- stats (stats.c, reports.c) --------------------------------------------------------- */

enum report_format {
	REPORT_FMT_TABLE,
	REPORT_FMT_CSV,
	REPORT_FMT_JSON,
};

struct stats;

struct stats_request {
	uint32_t reports;		 /* bit 1 << report index (report_find) */
	enum report_name_mode names[32]; /* per report: :base / :mangled */
	uint64_t gap_min_ns;		 /* gpu_gaps: shortest gap listed (0: 1 ms) */
	uint64_t util_bucket_ns;	 /* gpu_time_util: bucket (0: a twentieth of the span) */
};

/* The reports, in nsys's order; index is stable for the bit mask above. */
struct report_def {
	const char *name;  /* "cuda_gpu_kern_sum" */
	const char *title; /* "CUDA GPU Kernel Summary" */
	bool by_default;   /* part of a plain `tally stats` (nsys's --stats set) */
	bool names;	   /* takes :base / :mangled */
};
extern const struct report_def report_defs[];
extern const unsigned report_defs_count;
int report_find(const char *name); /* index, or -1 */

struct stats *stats_new(const struct stats_request *req);
void stats_free(struct stats *st);
/* Scan callbacks that feed the aggregation (stats is their ctx). */
void stats_scan_ops(struct stats *st, struct report_scan_ops *ops);
/* After the scan: medians, standard deviations, sorting. */
int stats_finish(struct stats *st, const struct report_set *set);
/* Write every requested report. Returns 0 or -errno (output failed). */
int stats_write(struct stats *st, const struct report_set *set, FILE *out, enum report_format fmt);

/* Exact figures of one group, for tests: sum, count, min, max, median, sample stddev. */
struct stats_group_view {
	const char *name;
	int32_t grid[3], block[3]; /* cuda_gpu_kern_gb_sum */
	uint64_t count, total, min, max;
	double avg, median, stddev;
};
/* Groups of report idx after stats_finish, in report order; NULL past the end. */
const struct stats_group_view *stats_group(const struct stats *st, unsigned report, size_t i);
/* Timed records left out of every report because their timestamps were lost (BAD_TIME). */
uint64_t stats_untimed(const struct stats *st);

/* ---- export (export.c, chrome.c, sqlite.c, csv.c) --------------------------------------- */

struct export_opts {
	const char *output; /* file (chrome: "-" is stdout, sqlite) or directory (csv) */
	bool force;	    /* replace an existing output */
};

struct export_stats {
	uint64_t records; /* records read */
	uint64_t events;  /* events / rows written */
	uint64_t bytes;	  /* bytes written, where known */
};

/* One output format; exporters are looked up by name in export_formats[] (an ops table). */
struct exporter {
	const char *name;
	const char *what;
	/* open the output; *state is the exporter's own */
	int (*open)(void **state, struct report_set *set, const struct export_opts *o, char *err,
		    size_t errlen);
	void (*scan_ops)(void *state, struct report_scan_ops *ops);
	/* after the scan (verdicts known): write what is left, close. */
	int (*finish)(void *state, struct report_set *set, struct export_stats *out, char *err,
		      size_t errlen);
	/* frees the state; after a failure (failed), also removes the partial output */
	void (*destroy)(void *state, bool failed);
};

extern const struct exporter export_chrome, export_sqlite, export_csv;
const struct exporter *export_find(const char *name);
extern const struct exporter *const export_formats[];

/*
 * Run the exporter over the set; progress (may be NULL) as in report_scan_ops.  Returns 0 or -errno
 * with err saying why.
 */
int report_export(const struct exporter *e, struct report_set *set, const struct export_opts *o,
		  void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		  struct export_stats *st, char *err, size_t errlen);

/* ---- merge (merge.c) -------------------------------------------------------------------- */

struct merge_result {
	size_t sections;
	uint64_t records;
	uint64_t damaged; /* damaged ranges carried into merge_damaged_chunks */
	uint64_t unknown_chunks;
	int64_t min_offset, max_offset;
};

/* Write every section of set into one file at path (aligned, verdicts kept). */
int report_merge(struct report_set *set, const char *path, bool force,
		 void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		 struct merge_result *res, char *err, size_t errlen);

/* ---- the HTML report (html.c, timeline.c, gaps.c) --------------------------------------- */

struct report_html_opts {
	const char *output;    /* the .html file */
	bool force;	       /* replace an existing output */
	unsigned buckets;      /* level-of-detail buckets per lane */
	uint64_t exact_budget; /* events drawn one by one, at most */
};

struct report_html_result {
	uint64_t records;      /* records read */
	uint64_t bytes;	       /* size of the page */
	uint64_t exact_events; /* events in the page one by one */
	size_t lanes;
	bool complete;	   /* every section COMPLETE */
	bool input_failed; /* the failure was reading an input, not writing the page */
};

/*
 * Read the traces (two passes) and write one self-contained HTML page: verdict, ledger over time,
 * GPU busy and idle, the stats reports, a timeline, ranks.  Returns 0 or -errno with err saying
 * why; a partial page is removed.
 */
int report_html(char *const *paths, size_t npaths, const struct report_html_opts *o,
		void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		struct report_html_result *res, char *err, size_t errlen);

#endif
