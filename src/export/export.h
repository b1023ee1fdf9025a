/* SPDX-License-Identifier: MIT */
/*
 * tally export: a table of output formats (export.c), each an exporter over one scan of the trace
 * set: Chrome trace JSON for Perfetto (chrome.c), Perfetto's own protobuf format (perfetto.c,
 * when built with protobuf-c), SQLite with nsys's table names (sqlite.c, its schema in
 * sqlite-schema.c), CSV (csv.c) and Kineto's JSON, a file per rank, for HTA (kineto.c).
 */
#ifndef TALLY_EXPORT_EXPORT_H
#define TALLY_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

struct export_opts {
	const char *output;	 /* file (chrome: "-" is stdout, sqlite) or directory (csv) */
	bool force;		 /* replace an existing output */
	uint64_t metric_step_ns; /* chrome: GPU metrics averaged over steps of this (0: each
				    sample) */
	bool index;		 /* sqlite: tally's indexes too (docs/sqlite.md) */
};

struct export_stats {
	uint64_t records; /* records read */
	uint64_t events;  /* events / rows written */
	uint64_t bytes;	  /* bytes written, where known */
	uint64_t clamped; /* values past 2^63 - 1 stored as 2^63 - 1 (SQLite's integers) */
	/* processes not written, with their events: an export that has no place for them says
	 * which (Kineto: a process with no rank and no GPU work beside ranked ones) */
	uint64_t processes_left_out, events_left_out;
};

/* One output format; exporters are looked up by name in export_formats[] (an ops table). */
struct exporter {
	const char *name;
	const char *what;
	/* may the output be written (outfile_check for what this format writes)?  0 or the
	 * refusal; NULL: one file, outfile_check's rules */
	int (*check)(const struct export_opts *o, char *err, size_t errlen);
	/* open the output; *state is the exporter's own */
	int (*open)(void **state, struct report_set *set, const struct export_opts *o, char *err,
		    size_t errlen);
	/* the scan's callbacks; the run sets ctx to the state and adds the progress */
	const struct report_scan_ops *scan;
	/* after the scan (verdicts known): write what is left, close. */
	int (*finish)(void *state, struct report_set *set, struct export_stats *out, char *err,
		      size_t errlen);
	/* frees the state; after a failure (failed), also removes the partial output */
	void (*destroy)(void *state, bool failed);
};

extern const struct exporter export_chrome, export_perfetto, export_sqlite, export_csv,
    export_kineto;
const struct exporter *export_find(const char *name);
/* The exporter an output's file name asks for (.json chrome, .pftrace perfetto, .sqlite/.db
 * sqlite), NULL when the name says none or that format is not built in. */
const struct exporter *export_for_output(const char *path);
extern const struct exporter *const export_formats[];

/*
 * Will the exporter refuse o->output (outfile_check, for every file it may write)?  0, or the
 * refusal as -errno with err saying why: the command line's error, to be said before anything is
 * read.  The inputs must be open (report_set_open), so that none of them is overwritten.
 */
int report_export_check(const struct exporter *e, const struct export_opts *o, char *err,
			size_t errlen);

/*
 * Run the exporter over the set; progress (may be NULL) as in report_scan_ops.  Returns 0 or -errno
 * with err saying why.
 */
int report_export(const struct exporter *e, struct report_set *set, const struct export_opts *o,
		  void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		  struct export_stats *st, char *err, size_t errlen);

#endif
