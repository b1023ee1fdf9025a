/* SPDX-License-Identifier: MIT */
/*
 * What bounds each step, inside (bound.h): what a section keeps while it is read, and what its
 * end works with, shared by bound.c (the records kept, a section's rows, the other processes
 * after the pass) and bound-step.c (each step's time by class, and its evidence).
 */
#ifndef TALLY_STATS_BOUND_INT_H
#define TALLY_STATS_BOUND_INT_H

#include <stddef.h>

#include "bound.h"
#include "hashmap.h"
#include "waits.h"

struct bgpu {
	uint64_t t0, t1;
	uint32_t device, name, corr;
	uint8_t comm, kernel;
};

struct bapi { /* a launch or a synchronizing call */
	uint64_t t0, t1;
	uint32_t thread, corr; /* CUPTI's thread id */
	uint32_t stack;	       /* the stack captured at the call (--python-stacks), 0 none */
	uint8_t sync;
};

struct bsamp {
	uint64_t t0, t1; /* t1: the end of the time it stands for */
	uint32_t tid, stack;
	uint8_t state, source;
};

struct bosrt {
	uint64_t t0, t1;
	uint32_t tid, call;
};

struct brange {
	uint64_t t0, t1;
	uint32_t thread;
	uint8_t which; /* 1 + the name matched (0: the user's --range) */
};

#define VEC(T)                                                                                     \
	struct {                                                                                   \
		T *v;                                                                              \
		size_t n, cap;                                                                     \
	}

/* A thread's items in one of the sorted arrays, and a cursor that only moves forward. */
struct run {
	size_t begin, end, cur;
};

struct acc { /* evidence: time by (class, thread, key) */
	uint64_t key, ns;
	uint32_t cls, tid;
};

struct bound {
	const char *user; /* --range */
	VEC(struct bgpu) gpu;
	VEC(struct bapi) api;
	VEC(struct bsamp) samp;
	VEC(struct bosrt) osrt;
	VEC(struct brange) ranges;
	uint8_t *comm_name; /* by string id: 0 unknown, 1 compute, 2 communication */
	size_t comm_name_cap;
	uint8_t *range_name; /* by string id: 0 unknown, 1 no match, 2 + which name */
	size_t range_name_cap;
	uint8_t *sync_name; /* by string id: 0 unknown, 1 not synchronizing, 2 synchronizing */
	size_t sync_name_cap;
	VEC(struct bound_row) rows;
	VEC(struct bound_step) steps;
	/* per row, while it is made */
	struct tally_map acc_map; /* (class, key) -> acc index + 1 */
	VEC(struct acc) accs;
	VEC(struct phase_span) spans;
	VEC(struct phase_kernel) kernels;
	VEC(uint64_t) comm_only; /* pairs */
	struct wait_cache waits;
	struct line_cache lines;
	/* per row: its waits (pairs, merged), for the other processes after the pass */
	struct wins {
		uint64_t (*w)[2];
		size_t n, cap;
	} * wins;
	size_t nwins, wins_cap;
};

#define PUSH(vec, item)                                                                            \
	(tally_grow_in((void **)&(vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v))               \
	     ? ((vec).v[(vec).n++] = (item), 0)                                                    \
	     : -ENOMEM)

/* A launch call's correlation id and start: the pattern's marks are launches. */
struct launch_at {
	uint64_t t0;
	uint32_t corr;
};

static inline int launch_by_corr(const void *a, const void *b)
{
	const struct launch_at *x = a, *y = b;

	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* What the section's end works with. */
struct sec {
	struct bound *b;
	struct report_section *rs;
	const struct report_idle_hole *holes;
	size_t nholes;
	uint64_t period;
	uint32_t main_tid; /* the process's main thread (its pid, or THREADS' main) */
	uint32_t launcher; /* CUPTI id of the thread with the most launches */
	/* per thread, the runs of the arrays sorted by thread */
	struct tally_map samp_run, osrt_run, api_run; /* key -> run index + 1 */
	VEC(struct run) runs;
	struct launch_at *by_corr; /* the launch calls by correlation id */
	size_t nby_corr;
	/* the row being made */
	struct bound_row *row;
	size_t row_index;
	struct wins *wins;
	struct {
		uint64_t tid, ns;
	} who[BOUND_CLASSES][4];
};

/* Evidence keys beyond the classes: kernels, the sync line, peers, start-up and tail lines. */
enum {
	EV_KERNEL = BOUND_CLASSES,
	EV_COMM_KERNEL,
	EV_SYNC_LINE,
	EV_PEER,
	EV_STARTUP_LINE,
	EV_TAIL_LINE,
};

/* The launching thread of a hole: its tid (0 when THREADS does not tie its CUPTI id). */
struct who {
	uint32_t cupti, tid;
};

/* One piece [x, end) of a hole: its class and its line, from the launcher's state. */
struct piece {
	uint64_t end;
	enum bound_class cls;
	uint32_t stack;
	bool python; /* the stack is a Python sample's */
};

static inline uint64_t bound_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* bound-step.c: the launching thread's state over each step, the steps and their evidence */
uint32_t bound_top_launcher(struct sec *c);
size_t bound_steps_from_ranges(struct sec *c, const char **name);
size_t bound_steps_from_pattern(struct sec *c, size_t from, size_t to);
int bound_comm_only(struct sec *c, size_t from, size_t to);
void bound_runs_rewind(struct sec *c);
int bound_classify_step(struct sec *c, struct bound_step *st, uint32_t device, uint64_t dev_t0,
			uint64_t dev_t1, size_t *hole, size_t *comm_cur);
int bound_kernels_in_steps(struct sec *c, size_t from, size_t to, const struct bound_step *st,
			   size_t nst);
void bound_launches_in_steps(struct sec *c, const struct bound_step *st, size_t nst);
int bound_sync_lines(struct sec *c, uint32_t device, const struct bound_step *st, size_t nst);
int bound_peers(struct sec *c);
int bound_phase_causes(struct sec *c, uint64_t t0, uint64_t t1, uint64_t warm_t0, uint64_t *cause,
		       unsigned ev);
void bound_top_evidence(struct sec *c);

#endif
