/* SPDX-License-Identifier: MIT */
/*
 * The collector's session: one per process (a fork child that uses CUDA gets its own), started by
 * CUDA's injection (InitializeInjection) or by the first NVTX call, closed by exactly one exit
 * path.  session.c owns it and is the only module that changes its state; the entry points
 * (inject.c, exitpath.c, signals.c, guard.c) call the functions below with the process's session,
 * and the session drives the modules below it (cupti-tracer.h, control.h, nvtx.h, pipeline.h):
 *
 *   entry points --> session --> tracer, control thread, NVTX capture, pipeline
 */
/*
 * The room session/ (session.c, this header, control.c, bounded.c, jobkeys.c): the one session:
 * its start, the control thread, the closing flush, fork.  entry/ calls it; it drives host/,
 * metrics/ and activity/ and uses base/.  host/hostthreads.c and osrt/osrt.c include this header
 * for TALLY_EXPORT alone: two of the upward includes scripts/include-graph.py knows of.
 */
#ifndef TALLY_COLLECTOR_COLLECTOR_H
#define TALLY_COLLECTOR_COLLECTOR_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "control.h"
#include "cupti-tracer.h"
#include "ledger.h"
#include "libc.h"
#include "pmsampler.h"
#include "tracefile.h"
#include "writer.h"

enum session_state {
	SESSION_NONE,	   /* not started in this process */
	SESSION_STARTING,  /* being set up */
	SESSION_RUNNING,   /* recording */
	SESSION_FINISHING, /* an exit path is running the closing flush */
	SESSION_DONE,	   /* closed; nothing more is recorded in this process */
	SESSION_OFF,	   /* not recorded on purpose (rank filter) or could not start */
};

struct session {
	_Atomic int state;
	pid_t pid; /* the process this session belongs to (a fork child is another) */
	struct tally_config cfg;
	struct trace_file file; /* the trace, kept as tally's (tracefile.h) */
	char path[PATH_MAX];
	char rank[64];
	uint8_t id[16];
	/* Files written by earlier images of this pid (exec without fork), from TALLY_EXEC_FROM:
	 * this image's file gets "-execN" so it never meets theirs. */
	unsigned exec_files;
	bool wrote_file;  /* this image opened a trace */
	bool cupti_on;	  /* CUPTI is loaded for this session (under lock) */
	bool cupti_tried; /* no more tries: it was loaded, or failed, or the session is CUDA's */
	_Atomic bool cuda_called; /* CUDA called our injection in this process */
	unsigned unjoined_looks;  /* control thread: looks in a row that found CUDA up without us */
	bool unjoined_said;	  /* control thread: the cuda-not-joined note is written */
	struct tally_room room;	  /* room for the closing chunks (tally_room_keep); fd -1: none */
	int reserve_errno;	  /* why there is none */
	uint64_t started_mono;
	pthread_mutex_t lock; /* start, close and fork; never taken in a signal handler */
	struct cupti_tracer tracer;
	struct control control;
	struct pm_sampler *metrics;    /* GPU metrics (pmsampler.h); NULL when not sampled */
	pthread_mutex_t metrics_lock;  /* metrics: the close vs CUPTI's context-destroy callback */
	_Atomic uint64_t done_gen;     /* bumped after each request the control thread completes */
	_Atomic uint64_t close_steps;  /* bumped as the close gets through each of its parts */
	_Atomic bool close_in_metrics; /* the close is stopping the GPU-metrics sampler */
	_Atomic int ending_signal;     /* the signal that is ending the process, 0 if none */
	/* an exec in progress (under lock): what it paused, and when */
	bool exec_sampling, exec_metrics;
	uint64_t exec_at;
};

/* The injection entry points (inject.c) CUDA's driver and the NVTX loader call. */
int InitializeInjection(void);
#include <nvtx3/nvToolsExt.h>
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

/* The process's session (there is one). */
struct session *session_get(void);
/* At load: the parts that must be right before anything else runs. */
void session_init(struct session *s);

/* Start the session in this process if not yet started; safe to call again.  why: "cuda",
 * "nvtx", or "host" (at load, for host sampling and blocking calls: CUPTI joins at cuInit). */
void session_start(struct session *s, const char *why);
/* Host sampling and blocking calls, if asked for: after the signal handlers are in place. */
void session_sampling_start(struct session *s);
bool session_running(const struct session *s);
bool session_traces_nvtx(const struct session *s);

/* The closing flush: CUPTI's forced flush (watchdog-bounded), NVTX buffers, the pipeline's stop,
 * the final ledger, close, manifest.  Only the first caller does it; others wait for it (bounded).
 * A call from a process that is not the session's (a fork or vfork child) does nothing. */
void session_close(struct session *s, enum tally_flush_path path, int signo);

/*
 * Signals (async-signal-safe; signals.c decides which to call from what the program asked):
 *   session_signal_end    the signal would end the process: the control thread closes the trace
 *                         and then performs the signal's default action.  The interrupted thread
 *                         waits for that, so that it does not run on past the signal as it would
 *                         not have untraced: while the close gets on (its parts end, records
 *                         reach the pipeline, the GPU-metrics sampler stops) up to most_ns, but
 *                         no longer than still_ns with no sign of it, since that thread may hold
 *                         a lock of CUDA's that the close needs.  Further signals while that runs
 *                         are counted and otherwise swallowed (and wait the same way).
 *                         false: no session here (or no control thread): the caller does what
 *                         the program asked.
 *   session_signal_flush  the program handles a stop signal and may go on: make it durable.
 *   session_signal_crash  a fault: close, waiting at most wait_ns (the thread cannot go on).
 */
bool session_signal_end(struct session *s, int sig, const siginfo_t *info, uint64_t still_ns,
			uint64_t most_ns);
void session_signal_flush(struct session *s, int sig);
void session_signal_crash(struct session *s, int sig, const siginfo_t *info, uint64_t wait_ns);
/* The signal ending the process (0 if none): an exit path that comes after it ends the same way. */
int session_ending_signal(const struct session *s);

/* exit() was called (LD_PRELOAD's wrapper), before any exit handler runs: GPU metrics end now. */
void session_exit_called(struct session *s);

/*
 * exec (exitpath.c's wrappers): session_exec_begin before the real call makes the file whole (a
 * final ledger) and leaves recording on; true when it holds the session (its lock) for the
 * exec.  When the call comes back (the exec failed with err: it never comes back otherwise),
 * session_exec_after says so in the trace and lets go.  path: what was to be executed (NULL for
 * fexecve).
 */
bool session_exec_begin(struct session *s);
void session_exec_after(struct session *s, const char *path, int err);

/* Files this pid's images wrote before the next exec (for TALLY_EXEC_FROM). */
unsigned session_exec_files(const struct session *s);

/* fork, as LTTng-UST does it: take the session's locks before, renew them in both after. */
void session_before_fork(struct session *s);
void session_after_fork_parent(struct session *s);
void session_after_fork_child(struct session *s);

#endif
