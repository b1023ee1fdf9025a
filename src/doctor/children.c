/* SPDX-License-Identifier: MIT */
/*
 * Forked children: how they are followed, what cannot be, and whether the output pattern gives
 * each process a name of its own.  nsys follows a child only when it execs (unless
 * --trace-fork-before-exec); tally's collector is inherited by exec'd children through
 * CUDA_INJECTION64_PATH, and a fork child that starts CUDA gets its own collector state and file
 * (design section 3).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void check_children_follow(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	(void)ctx;
	finding_source(f, "how tally record starts the program (design section 3)");
	finding_set(f, TALLY_DOCTOR_OK,
		    "exec'd children inherit CUDA_INJECTION64_PATH and are recorded; a fork child "
		    "that starts CUDA itself gets its own file");
	finding_why(f,
		    "what cannot be followed: a child forked after its parent started CUDA "
		    "cannot use CUDA at all (CUDA is not fork-safe), so it has nothing to record");
	finding_fix(f, "for such workers use spawn, not fork: "
		       "multiprocessing.set_start_method(\"spawn\"), or DataLoader(..., "
		       "multiprocessing_context=\"spawn\")");
}

/* The pattern with "-%p" put before its ".tally" suffix (or at its end), for the remedy. */
static void suggest(const char *pattern, char *out, size_t len)
{
	size_t n = strlen(pattern);

	if (n > 6 && strcmp(pattern + n - 6, ".tally") == 0)
		snprintf(out, len, "%.*s-%%p.tally", (int)(n - 6), pattern);
	else
		snprintf(out, len, "%s-%%p", pattern);
}

void check_children_names(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_out *o = doctor_out(ctx);
	const char *pattern = ctx->opts->pattern;
	char better[1024];

	finding_source(f, "-o pattern");
	finding_why(f, "a child process that records expands the pattern too: without %%p or %%n "
		       "it gets its parent's name");
	if (!o->has_pattern) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no -o given");
		return;
	}
	if (o->rc < 0) {
		finding_set(f, TALLY_DOCTOR_SKIP, "the pattern does not expand (see output.name)");
		return;
	}
	if (strstr(pattern, "%p") || strstr(pattern, "%n")) {
		finding_set(f, TALLY_DOCTOR_OK, "the name has %s: each process gets its own file",
			    strstr(pattern, "%p") ? "%p" : "%n");
		return;
	}
	suggest(pattern, better, sizeof(better));
	/* Only a child that runs CUDA itself records; most children do not, so this is advice. */
	finding_set(f, TALLY_DOCTOR_OK,
		    "\"%s\" has neither %%p nor %%n: fine unless a child process runs CUDA too",
		    pattern);
	finding_fix(f, "if children run CUDA, add %%p: -o '%s'", better);
	f->advise = true;
}
