/* SPDX-License-Identifier: MIT */
/*
 * The three-minute diagnosis (docs/diagnosis.md): a table of rules, each reading the analyses of
 * the same pass (the breakdown, launches, steps, memory, the verdict, the jobs) and saying, when
 * its threshold is crossed, what it costs, how sure that figure is, where it comes from and what
 * to try.  Findings come ranked: what makes every other figure unreliable first (traces of
 * several jobs), then by the GPU time they cost, largest first.  A rule is one row of
 * diag_rules[] and one function; the rules and their thresholds are documented one by one.
 */
#ifndef TALLY_STATS_DIAGNOSIS_H
#define TALLY_STATS_DIAGNOSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bound.h"
#include "breakdown.h"
#include "jobs.h"
#include "launch.h"
#include "memusage.h"
#include "metricsum.h"
#include "steps.h"

/* Thresholds (docs/diagnosis.md says why each) */
#define DIAG_IDLE_PCT 10.0 /* gpu-idle: idle share of a device's span */
#define DIAG_LAUNCH_TIME_PCT                                                                       \
	20.0 /* short-kernels: kernel time in kernels shorter than their launch */
#define DIAG_LAUNCH_COUNT_PCT 50.0 /* ... or this share of the kernels, */
#define DIAG_LAUNCH_COUNT_MIN 1000 /* ... and at least this many of them */
#define DIAG_COPY_PCT	      5.0  /* exposed-copies: copy time no kernel overlaps, share of span */
#define DIAG_COMM_PCT	      10.0 /* exposed-comm: communication no compute overlaps */
#define DIAG_MEMORY_PCT	      90.0 /* memory-near-capacity: peak CUDA allocations, share of memory */

struct diag_finding {
	const char *rule; /* "gpu-idle" */
	/* 0: makes the others unreliable; 1: what bounds the steps (the headline); 2: the rest.
	 * Each by cost. */
	unsigned order;
	uint64_t cost;	   /* ns of GPU time it costs, summed over devices: within their spans */
	double share;	   /* cost / the run's GPU time (every device's span, summed), in % */
	double step_share; /* a step verdict: its class's share of the step, %; else < 0 */
	char figure[400];  /* "GPU idle 41.2% of 1.000 s (412.0 ms) on RANK=0 GPU 0" */
	char proof[320];   /* "exact: the ledger proves every gap", or what makes it a bound */
	char where[400];   /* process, device, stream, source line */
	char why[1200];	   /* what the rule saw */
	const char *try_;  /* what to try */
};

/* What the rules read.  NULL members: that analysis did not run. */
struct diag_input {
	struct report_set *set;
	uint64_t base; /* the time origin of "+N s" (stats_time_base) */
	const struct bd_row *bd;
	size_t nbd;
	const struct launch_row *ln;
	size_t nln;
	const struct steps_verdict *steps;
	const struct mem_usage *mem;
	const struct report_jobs *jobs;
	/*
	 * Why a device idled (gpu_idle_breakdown's classes: idlewhy.h's idle_cause): host wait,
	 * kernel wait, other or synchronization, and the host line behind the largest share, into
	 * buf; NULL where it is not known.  The gpu-idle rule says it when set.
	 */
	const char *(*idle_cause)(void *ctx, unsigned section, uint32_t device, char *buf,
				  size_t len);
	void *idle_ctx;
	/* what bounds each step, per process and device with steps (bound.h) */
	const struct bound_row *bound;
	size_t nbound;
	const struct gm *gm; /* GPU metrics (their busy means), NULL without */
};

struct diag_rule {
	const char *id;
	const char *threshold; /* as docs/diagnosis.md states it */
	int (*eval)(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap);
};

extern const struct diag_rule diag_rules[];
extern const unsigned diag_rules_count;

/* Run every rule; findings ranked into *out (caller frees).  0 or -ENOMEM. */
int diagnose(const struct diag_input *in, struct diag_finding **out, size_t *n);

#endif
