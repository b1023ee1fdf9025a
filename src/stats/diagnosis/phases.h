/* SPDX-License-Identifier: MIT */
/*
 * The phases of a process's run (docs/diagnosis.md, "Phases"): start-up before its first step,
 * the steps, and the tail after the last.  Steps come from NVTX ranges ("step N",
 * "ProfilerStep#N": steps.h's names, or --range), or, where there are none, from the repeating
 * pattern of the launches: the kernel name that recurs at the longest regular period (one
 * occurrence per step) marks where each step begins.  The leading steps far longer than the
 * others (more than PHASE_WARMUP_FACTOR times their median: the first step's kernel selection,
 * autotuning, compilation, the allocator's first growth) are warm-up, counted into start-up.
 *
 * Pure functions over arrays the caller sorted: linear after that sort.
 */
#ifndef TALLY_STATS_PHASES_H
#define TALLY_STATS_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PHASE_WARMUP_FACTOR 3 /* a leading step this many times the median is warm-up */
#define PHASE_STEPS_MIN	    3 /* steady steps a verdict needs */
#define PHASE_PATTERN_REGULAR                                                                      \
	0.8 /* share of a kernel's recurrences at one period to call it regular */
#define PHASE_PATTERN_MIN_KERNELS 2	    /* a step of the launch pattern holds this many */
#define PHASE_PATTERN_MIN_STEP_NS 100000ull /* ... and its median lasts this long (100 us) */

struct phase_span {
	uint64_t t0, t1;
};

/* A kernel of a device, in start order: its name and when its launch began (its own start when
 * the launch was not recorded). */
struct phase_kernel {
	uint64_t launched;
	uint32_t name;
};

/*
 * The top-level ranges of v[0..n) (sorted by start): a range inside the one kept before it is
 * dropped.  Compacts v in place; returns how many are kept.
 */
size_t phases_top_level(struct phase_span *v, size_t n);

/*
 * Steps from the repeating pattern of kernels k[0..n) (sorted by start): the name recurring at
 * the longest regular period marks each step's start (its launch); step i runs from one mark to
 * the next.  Writes at most cap steps into out and returns how many (0: no regular pattern, or
 * memory ran out); *name and *period say which kernel and how many kernels a step holds.
 */
size_t phases_from_pattern(const struct phase_kernel *k, size_t n, struct phase_span *out,
			   size_t cap, uint32_t *name, uint64_t *period);

/* How many leading steps of s[0..n) are warm-up (each more than PHASE_WARMUP_FACTOR times the
 * median step, at most half of them); *median gets the median of the others. */
size_t phases_warmup(const struct phase_span *s, size_t n, uint64_t *median);

#endif
