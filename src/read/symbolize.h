/* SPDX-License-Identifier: MIT */
/*
 * Naming native frames: the one resolver behind every label (frames.c) and behind tally record's
 * naming on the recording machine (symbolize.c), which writes the names into the trace.
 */
#ifndef TALLY_READ_SYMBOLIZE_H
#define TALLY_READ_SYMBOLIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "modfile.h"
#include "stacks.h"

struct report_native_name {
	enum modfile_verdict verdict; /* the file's, whether or not a symbol holds the address */
	bool unverified;	      /* named from a file the trace could not check */
	char sym[4096];		      /* the symbol as the file has it (mangled) */
	char file[1024];	      /* source file, "" unknown (needs libdw and line tables) */
	uint32_t line;
};

/* The function holding addr (an ELF address of m's file) from a file of m's build on this
 * machine (modfile_find); false when there is none, or no symbol holds addr (n->verdict says
 * which). */
bool report_native_name(const struct tally_module *m, uint64_t addr, struct report_native_name *n);

struct report_symbolized {
	uint64_t frames, named;	       /* native frames of the trace; named */
	uint64_t other_build, no_file; /* modules whose file here was another build; had none */
	uint64_t spent_ns;
	unsigned state; /* enum tally_symbols_state */
	bool skipped;	/* nothing written (why: the error text) */
	bool no_frames; /* skipped: the trace has no native frame to name */
};

/*
 * tally record, after the program ended: name the native frames of the trace at path from the
 * files they were recorded with, as far as deadline (CLOCK_MONOTONIC ns) allows and while *stop
 * is 0, and append the names as a SYMBOLS chunk (docs/format.md §12).  A trace still being
 * written, damaged at its end, without native frames or already named is left as it is
 * (res->skipped, err says why).  0, or -errno with err saying why (the trace is then as it was).
 */
int report_symbolize_trace(const char *path, uint64_t deadline_ns, uint64_t bound_ns,
			   const volatile sig_atomic_t *stop, struct report_symbolized *res,
			   char *err, size_t errlen);

#endif
