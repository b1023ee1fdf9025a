/* SPDX-License-Identifier: MIT */
/*
 * What the host was doing while a GPU sat idle (docs/stats.md, gpu_idle_why and
 * gpu_idle_breakdown): for every listed hole of idle.h, per thread of that process, the CUDA API
 * calls and the blocking calls (OSRT) that overlap it and the sampled stacks (CPU_SAMPLE) that fall
 * in it; and per device, the stacks sampled in the holes of its largest idle class.
 *
 * Streaming like idle.h, on top of it: feed the batches to both, then when a section ends call
 * report_idle_section() and then idle_why_section().  A section's API calls, blocking calls and
 * samples are kept until it ends (32 bytes each, in a spill: spill.h), then only the rows; its
 * holes are explained in order of start in one sweep over its events by start, 16 threads a
 * hole and at most 64 overlaps per event in all (the rest said unexamined).
 */
#ifndef TALLY_STATS_IDLEWHY_H
#define TALLY_STATS_IDLEWHY_H

#include <stdbool.h>
#include <stdint.h>

#include "idle.h"
#include "jobprocs.h"

enum why_what {
	WHY_GAP,	  /* the hole itself: class and reasoning */
	WHY_CUDA,	  /* CUDA API calls of one name overlapping it */
	WHY_OSRT,	  /* blocking calls of one name overlapping it */
	WHY_PYTHON,	  /* Python samples of one stack (and thread state) inside it */
	WHY_NATIVE,	  /* native samples of one stack inside it */
	WHY_MORE_STACKS,  /* the samples of the stacks past the top ones */
	WHY_MORE_THREADS, /* the calls and samples of the threads past the first 16 */
};

/* A thread: its kernel tid, or WHY_CUPTI_THREAD | CUPTI's id where THREADS does not name it. */
#define WHY_CUPTI_THREAD (1ull << 32)

struct why_row {
	uint32_t gap;	  /* index into report_idle_gaps() */
	unsigned process; /* samples of another process of the job: its section + 1; else 0 */
	uint8_t what;	  /* enum why_what */
	uint8_t state;	  /* WHY_PYTHON: the thread's state (enum tally_thread_state) */
	uint8_t source;	  /* WHY_MORE_STACKS: WHY_PYTHON or WHY_NATIVE */
	bool sync; /* WHY_CUDA: a call that waits for the GPU (a synchronize, a blocking copy) */
	bool unexamined; /* WHY_GAP: the section's budget of overlaps was spent before it */
	uint64_t thread; /* see WHY_CUPTI_THREAD; WHY_MORE_THREADS: how many threads */
	uint32_t id;	 /* CUDA: name string id; OSRT: call (CBID); samples: stack id, 0 torn */
	uint64_t count;	 /* calls, or samples */
	uint64_t ns;	 /* overlap with the hole; for samples, count x period */
};

/* gpu_idle_breakdown's stacks: the top ones of each thread sampled in a device's largest-class
 * holes. */
struct why_stack {
	unsigned section;
	uint32_t device;
	unsigned process; /* sampled in another process of the job: its section + 1; else 0 */
	uint64_t thread;  /* the kernel tid of the thread sampled */
	uint8_t source;	  /* WHY_PYTHON or WHY_NATIVE */
	uint8_t state;	  /* the thread's state (enum tally_thread_state; native: on CPU) */
	bool by_design;	  /* a thread that waits by design, waiting (waits.h) */
	uint32_t stack;	  /* 0: torn */
	uint64_t count;	  /* samples */
	uint64_t of;	  /* samples of that thread and source in those holes */
	uint64_t ns;	  /* the time they stand for: each to its thread's next sample, a period at
			     most, within the hole */
};

/* Per device, the thread that launched the work ending its largest class's holes (the most of
 * their time), and per thread the samples in those holes: what the diagnosis names. */
struct why_thread {
	unsigned section;
	uint32_t device;
	uint64_t thread;	  /* kernel tid, or WHY_CUPTI_THREAD | CUPTI's id */
	uint64_t samples, on_cpu; /* its samples in those holes, and those on a CPU */
	uint64_t launched_ns;	  /* of those holes' time, what ended in work it launched */
};

struct idle_why;

/* rows false: only the breakdown's stacks are wanted, and API and blocking calls are not kept. */
struct idle_why *idle_why_new(const struct report_idle *idle, bool rows);
void idle_why_free(struct idle_why *w);
/* API calls, blocking calls and samples are kept; other kinds are ignored.  0 or -ENOMEM. */
int idle_why_add(struct idle_why *w, const struct report_section *rs, const struct tally_record *r,
		 size_t n);
/* After report_idle_section(rs): rows for rs's listed holes, stacks for its devices. */
int idle_why_section(struct idle_why *w, struct report_section *rs);

const struct why_row *idle_why_rows(const struct idle_why *w, size_t *n);
const struct why_stack *idle_why_stacks(const struct idle_why *w, size_t *n);
/*
 * After the pass (jobprocs_finish done): the cause across processes.  For every listed hole in
 * which the thread that launched the work after it waited on a queue, pipe or socket (waits.h:
 * most of its samples there, or a blocking read), rows of what the job's other processes
 * (jobprocs.h: its descendants) were doing in it, their top stacks per thread; and for every
 * device whose launching thread waited so in its largest class's holes, their top stacks in
 * those holes, for gpu_idle_breakdown and idle_cause.  0 or -ENOMEM.
 */
int idle_why_follow(struct idle_why *w, const struct jobprocs *jp, const struct report_set *set);

/*
 * After the GPU metrics classed the gaps (stats' gapclass.c), before idle_why_follow: the samples
 * and launches of the holes they show busy outside the trace leave the breakdown's stacks and the
 * launching threads' figures, as the holes leave the idle classes.  Linear in the shares kept
 * (one per hole and stack of a section with GPU metrics).  0 or -ENOMEM.
 */
int idle_why_drop_outside(struct idle_why *w);

/* Whether any section had host samples, blocking calls (false: the reports say how to record). */
bool idle_why_has_host(const struct idle_why *w);

/*
 * For the diagnosis (its diag_input.idle_cause): the class that holds most of a device's idle
 * time, its share, how much of it began right after a synchronizing call (when any did), the
 * thread that launched the work late (the one whose launches ended most of that time) and, where
 * host samples exist, the program's own frame it was in: on the CPU, or waiting, and then the
 * thread on the CPU meanwhile, which it may have waited for ("host wait, 100% of the idle time;
 * MainThread (tid 2001) launched the work late: it was on the CPU in compute (/work/train.py:20),
 * 65% of its samples in these gaps").  ctx is a struct idle_cause_ctx; NULL when the device had
 * no idle time.
 */
struct idle_cause_ctx {
	const struct report_idle *idle;
	const struct idle_why *why;
	const struct report_set *set;
};
const char *idle_cause(void *ctx, unsigned section, uint32_t device, char *buf, size_t len);

/* "MainThread (tid 2001)", "tid 2002", "CUPTI thread 1000" (trace-set.h's one label of a
 * thread), into a static buffer. */
const char *idle_why_thread_label(const struct report_section *rs, uint64_t thread);
/* idle_why_period(): jobprocs.h, below this file, whose samples follow the same rule. */

#endif
