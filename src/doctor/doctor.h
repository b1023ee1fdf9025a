/* SPDX-License-Identifier: MIT */
/*
 * tally doctor: every gate and landmine between a program and a complete trace, checked before a
 * single record is taken (docs/doctor.md).  Each check reads what it needs through a root prefix
 *and an environment that tests can replace, reports OK / WARN / FAIL / SKIP with what it saw, why
 *it matters and the fix, and never changes the system.  A FAIL means recording cannot proceed.
 *
 * For tally record (run the blocking checks, stop with their messages):
 *
 *	struct tally_doctor_opts o = {
 *		.pattern = output_pattern,		// -o, NULL for the current directory
 *		.collector = collector_path,		// cli_find_collector(), NULL if not found
 *		.collector_looked = looked_at,		// where it was looked for when not found
 *		.flags = TALLY_DOCTOR_BLOCKING_ONLY,
 *	};
 *	struct tally_doctor_report rep;
 *	bool blocked;
 *
 *	if (tally_doctor_run(&o, &rep) < 0)
 *		return cli_error(TALLY_EXIT_ERROR, "out of memory");
 *	blocked = tally_doctor_blocking(&rep, stderr);	// prints one line + fix per FAIL
 *	tally_doctor_report_fini(&rep);
 *	if (blocked && !no_checks)		// tally record --no-checks
 *		return TALLY_EXIT_FAIL;
 *
 * The card checks load libcuda.so.1 and call cuInit (about 0.1-1 s on a GPU node), unless
 * TALLY_DOCTOR_NO_GPU_PROBE is set.  Nothing is linked against CUDA.
 */
#ifndef TALLY_DOCTOR_DOCTOR_H
#define TALLY_DOCTOR_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* The --json schema name; bump the number when a field changes meaning or goes away. */
#define TALLY_DOCTOR_SCHEMA "tally-doctor/1"

enum tally_doctor_status {
	TALLY_DOCTOR_OK,
	TALLY_DOCTOR_WARN,
	TALLY_DOCTOR_FAIL, /* blocks recording */
	TALLY_DOCTOR_SKIP, /* not applicable here, or nothing to read */
	TALLY_DOCTOR_STATUS_MAX,
};

/* tally_doctor_opts.flags */
#define TALLY_DOCTOR_BLOCKING_ONLY (1u << 0) /* run only the checks that can FAIL */
#define TALLY_DOCTOR_NO_GPU_PROBE  (1u << 1) /* never dlopen libcuda or libcupti */

/* Zero-initialise, then set what you need. */
struct tally_doctor_opts {
	const char *root;      /* NULL or "/": this system; else a fixture tree (see below) */
	const char *pattern;   /* output pattern to check (-o); NULL: the current directory */
	const char *collector; /* libtally.so as found by the caller, NULL: not found */
	const char *collector_looked; /* when collector is NULL: the last place looked at */
	char *const *environ;	      /* "NAME=value" strings, NULL-terminated; NULL: see below */
	pid_t pid;		      /* %p in the pattern; 0: getpid() */
	unsigned flags;		      /* TALLY_DOCTOR_* */
};

/*
 * Under a root other than "/" (a fixture tree), three files of that tree stand in for what cannot
 * be a file there: ROOT/.env is the whole environment (one NAME=value a line) unless
 * opts.environ is given; ROOT/.statfs gives statvfs()/access() results per directory; ROOT/.gpu
 * gives what libcuda and libcupti would have answered (absent: no driver).  Their format is in
 * docs/doctor.md.  With root "/" the real system is read and these files are never looked at.
 */

struct tally_doctor_finding {
	const char *id;	  /* stable: "perf.paranoid" */
	const char *gate; /* stable: "perf" */
	enum tally_doctor_status status;
	bool needed; /* does cuda/nvtx recording need what this check looks at? */
	bool advise; /* OK, and yet the remedy is worth reading (text output shows it) */
	char value[512];
	char source[512];
	char why[768];
	char remedy[1024];
};

struct tally_doctor_report {
	struct tally_doctor_finding *findings; /* in check-table order */
	size_t count;
	unsigned counts[TALLY_DOCTOR_STATUS_MAX];
	bool can_record; /* no FAIL */
	char root[4096];
	char output[4096]; /* the output name the pattern expanded to here, "" without one */
};

struct tally_doctor_gate {
	const char *id;	   /* "perf" */
	const char *title; /* "CPU sampling" */
	bool needed;	   /* does cuda/nvtx recording need this gate at all? */
};

/*
 * Run the checks.  Returns 0 and fills out (release it with tally_doctor_report_fini), or a
 * negative errno (-ENOMEM; -EINVAL for an unusable root) with out left empty.
 */
int tally_doctor_run(const struct tally_doctor_opts *opts, struct tally_doctor_report *out);

/*
 * True when a FAIL blocks recording.  With explain non-NULL, writes for each FAIL one line
 * "  ID: VALUE" and an indented "fix: REMEDY" line, for tally record to print before stopping.
 */
bool tally_doctor_blocking(const struct tally_doctor_report *r, FILE *explain);

void tally_doctor_report_fini(struct tally_doctor_report *r);

/* The finding with this id, NULL if it did not run. */
const struct tally_doctor_finding *tally_doctor_find(const struct tally_doctor_report *r,
						     const char *id);

/* "OK", "WARN", "FAIL", "SKIP" */
const char *tally_doctor_status_name(enum tally_doctor_status s);

/* The gates in report order; *count is set to their number. */
const struct tally_doctor_gate *tally_doctor_gates(size_t *count);

/* Can the check with this id ever FAIL?  (docs/doctor.md lists them.) */
bool tally_doctor_check_blocks(const char *id);
/* The id of the i-th check that can FAIL, in report order; NULL past the last. */
const char *tally_doctor_blocking_check(size_t i);

#endif
