/* SPDX-License-Identifier: MIT */
/*
 * What bounds each step (docs/diagnosis.md, "The verdict of the steps"): per process and device
 * with steps (phases.h), every moment of every step is put in one class, so the classes add up
 * to the step:
 *
 *   gpu     the device ran compute, copies or memsets; or it idled between work already
 *           submitted, shorter than a launch (idle.h's kernel wait: its own latency)
 *   comm    it ran communication kernels and nothing else
 *   data    it idled, nothing submitted (idle.h's host wait), and the thread that launched the
 *           work ending that idle waited on a queue, pipe or socket (waits.h): the next batch
 *   wait    ... that thread waited on something else: a lock, a sleep, an event
 *   sync    ... the idle began inside a synchronizing call (.item(), .cpu(), a blocking copy,
 *           synchronize) and the thread was not waiting: host work after the sync
 *   launch  ... the thread was on the CPU, or in its launch calls: Python, ATen, the launch path
 *   other   it idled with the work submitted before: an event, another stream
 *
 * What the launching thread did is read, in this order, from its blocking calls (--trace osrt),
 * its CUDA calls, its samples (each standing for its time to its next sample, a period at most);
 * time none of them covers counts as on the CPU.  The evidence is kept with the classes: the top
 * kernels, the launching thread's lines per class (its innermost frame of the program's own and
 * that frame's caller), the line of the synchronizing calls, the other threads on the CPU during
 * the waits and, after the pass, the other processes of the job (jobprocs.h): what each did in
 * the waits, and its share of them.
 *
 * Streaming: a section's GPU records, launch and synchronizing calls, samples, blocking calls
 * and step ranges are kept until it ends (about 32 bytes each), then only its rows and steps.
 */
#ifndef TALLY_STATS_BOUND_H
#define TALLY_STATS_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idle.h"
#include "jobprocs.h"
#include "phases.h"
#include "trace-set.h"

enum bound_class {
	BOUND_GPU,
	BOUND_COMM,
	BOUND_DATA,
	BOUND_LAUNCH,
	BOUND_SYNC,
	BOUND_WAIT,
	BOUND_OTHER,
	BOUND_CLASSES,
};

/* "gpu", "comm", "data", "launch", "sync", "wait", "other" */
const char *bound_class_name(enum bound_class c);

/* What start-up (and the tail) spent its time on, from the launching process's main thread. */
enum bound_cause {
	CAUSE_IMPORTS,
	CAUSE_CUDA_INIT,
	CAUSE_MODEL_TO_GPU,
	CAUSE_WORKERS,
	CAUSE_COMPILE,
	CAUSE_WARMUP, /* the warm-up steps: their whole time */
	CAUSE_OTHER,  /* samples no pattern names: their top line */
	BOUND_CAUSES,
};
/* "imports", "CUDA initialization", "the model to the GPU" ... */
const char *bound_cause_name(enum bound_cause c);

#define BOUND_TOP 3

/* A line: the innermost frame of the program's own and its caller's (host_line_of), in the
 * row's section, and the time its samples stand for. */
struct bound_line {
	uint64_t line;
	uint64_t ns;
};

struct bound_kernel {
	uint32_t name; /* string id of the row's section */
	uint64_t ns;
};

/* Another process of the job during the waits: its busiest thread's top line. */
struct bound_proc {
	unsigned section;
	uint64_t busy_ns; /* its samples on a CPU, or waiting in its own code (not by design) */
	uint64_t line;	  /* in its section */
	uint64_t line_ns;
	bool on_cpu; /* the line's samples were on a CPU (else: waiting in it, e.g. a sleep) */
};

/* Another thread of the launching process on a CPU during the waits. */
struct bound_peer {
	uint32_t tid;
	uint64_t line, ns;
};

struct bound_row {
	unsigned section;
	uint32_t device;
	/* the steps */
	const char *range;     /* the range name matched, or NULL: from the launch pattern */
	uint32_t pattern_name; /* from the launch pattern: the kernel marking each step */
	uint64_t period;       /* ... and the kernels of a step */
	uint64_t nsteps;       /* steady steps */
	uint64_t warmup;       /* leading steps counted into start-up */
	uint64_t first_step;   /* index of its first step in bound_steps() */
	uint64_t step_ns;      /* the steady steps' time */
	uint64_t median_step;
	uint64_t ns[BOUND_CLASSES];
	uint64_t thread[BOUND_CLASSES]; /* the thread (tid) behind most of each class's time */
	uint64_t launches;		/* launch calls in the steady steps */
	/* the phases (aligned ns) */
	uint64_t run_t0, run_t1;
	uint64_t startup_t0, startup_t1; /* start-up, the warm-up steps in it */
	uint64_t warmup_ns;
	uint64_t tail_t0, tail_t1;
	uint64_t startup_cause[BOUND_CAUSES], tail_cause[BOUND_CAUSES];
	/* the device's idle time (gpu_time_breakdown's: its holes) in each phase */
	uint64_t idle_startup, idle_steps, idle_tail;
	struct bound_line startup_line, tail_line; /* the top line of CAUSE_OTHER */
	/* the evidence */
	struct bound_kernel kernels[BOUND_TOP], comm[BOUND_TOP];
	uint64_t kernel_ns; /* kernel time in the steady steps (the kernels' shares are of it) */
	struct bound_line lines[BOUND_CLASSES][BOUND_TOP];
	uint64_t lines_ns[BOUND_CLASSES]; /* the time the class's samples stand for */
	struct bound_line sync_line;	  /* where the synchronizing calls were made */
	struct bound_peer peers[BOUND_TOP];
	uint64_t wait_ns; /* data + wait */
	/* after bound_finish: the other processes of the job during the waits */
	struct bound_proc procs[BOUND_TOP];
	size_t children; /* descendants of this process with samples in the set */
	bool host_samples;
};

/* A step of a row: its time by class. */
struct bound_step {
	unsigned row;
	uint64_t index; /* 0-based, warm-up steps first */
	uint64_t t0, t1;
	uint64_t ns[BOUND_CLASSES];
	bool warmup;
};

struct bound;

/* range: the step range's name (--range), NULL for steps.h's defaults. */
struct bound *bound_new(const char *range);
void bound_free(struct bound *b);
/* GPU records, launch and synchronizing calls, NVTX ranges, samples and blocking calls are kept
 * for the section being read.  0 or -ENOMEM. */
int bound_add(struct bound *b, struct report_section *rs, const struct tally_record *r, size_t n);
/* After report_idle_section(idle, rs): the section's rows and steps.  0 or -ENOMEM. */
int bound_section_end(struct bound *b, struct report_section *rs, const struct report_idle *idle);
/* After the pass: the other processes during each row's waits.  0 or -ENOMEM. */
int bound_finish(struct bound *b, const struct report_set *set, const struct jobprocs *jp);

const struct bound_row *bound_rows(const struct bound *b, size_t *n);
const struct bound_step *bound_steps(const struct bound *b, size_t *n);
/* The class with the most time of a row (its verdict). */
enum bound_class bound_verdict(const struct bound_row *r);

#endif
