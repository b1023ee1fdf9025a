/* SPDX-License-Identifier: MIT */
/*
 * The other processes of a job (docs/diagnosis.md, "The critical path"): what a DataLoader's
 * workers, a preprocessing pool or any child of the launching process were doing while the
 * launching thread waited for them.  The processes that ran no GPU work keep their host samples
 * to the end of the pass (32 bytes each); a process that ran GPU work keeps none here (its own
 * analyses read its samples while its section is read).  After the pass, jobprocs_during() takes
 * the samples of a launching process's descendants (by pid and ppid, on its host) that fall in
 * given windows of time.
 *
 * A sample stands for its thread's time to its next sample, a sampling period at most (the one
 * rule of idlewhy.h), clipped to the window.  That period is defined here, below idlewhy.c, which
 * calls this file and not the other way round.
 */
#ifndef TALLY_STATS_JOBPROCS_H
#define TALLY_STATS_JOBPROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace-set.h"

/* The sampling period of rs, ns (1 / its rate; 1 ms when the rate is not recorded): how long a
 * sample stands for at most (idlewhy.h and the diagnosis use it too). */
uint64_t idle_why_period(const struct report_section *rs);

struct jobprocs;

struct jobprocs *jobprocs_new(void);
void jobprocs_free(struct jobprocs *jp);
/* CPU_SAMPLE records of the section being read are taken; others ignored.  0 or -ENOMEM. */
int jobprocs_add(struct jobprocs *jp, const struct report_section *rs, const struct tally_record *r,
		 size_t n);
/* rs has ended: its samples are kept when it ran no GPU work, else dropped.  0 or -ENOMEM. */
int jobprocs_section_end(struct jobprocs *jp, const struct report_section *rs);

/* After the pass: the set's processes by host and pid, for the queries below.  0 or -ENOMEM. */
int jobprocs_finish(struct jobprocs *jp, const struct report_set *set);

/* What one thread of another process did in the windows: a stack in a state, and its time. */
struct proc_use {
	uint32_t window;  /* the window it fell in (by_window), else 0 */
	unsigned section; /* the process */
	uint32_t tid;
	uint32_t stack; /* 0: no stack (torn) */
	uint8_t state;	/* enum tally_thread_state; native samples: on CPU */
	uint8_t source; /* TALLY_SAMPLE_* */
	uint64_t samples, ns;
};

/*
 * The samples of the processes descended from section `launcher`'s process (same host, its pid
 * an ancestor through the set's ppids) inside w[0..nw) (sorted, disjoint), aggregated per
 * (process, thread, stack, state) -- and per window first when by_window -- in (window,)
 * section then thread order.  *out is the caller's to free.  0 (with *n 0 when there are none)
 * or -ENOMEM.
 */
int jobprocs_during(const struct jobprocs *jp, const struct report_set *set, unsigned launcher,
		    const uint64_t (*w)[2], size_t nw, bool by_window, struct proc_use **out,
		    size_t *n);
/* Whether any process of the set kept samples here (false: the workers were not recorded). */
bool jobprocs_any(const struct jobprocs *jp);
/* How many of set's processes descend from section launcher's and kept samples here. */
size_t jobprocs_children(const struct jobprocs *jp, const struct report_set *set,
			 unsigned launcher);

#endif
