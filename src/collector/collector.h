/* SPDX-License-Identifier: MIT */
/*
 * The collector's session: one per process (a fork child that uses CUDA gets its own), started by
 * CUDA's injection (InitializeInjection) or by the first NVTX call, ended by exactly one exit
 * path (exitpath.c) through session_finish().
 */
#ifndef TALLY_COLLECTOR_COLLECTOR_H
#define TALLY_COLLECTOR_COLLECTOR_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "ledger.h"

#define TALLY_EXPORT __attribute__((visibility("default")))

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
	int fd;
	char path[PATH_MAX];
	char rank[64];
	uint8_t id[16];
	/* CUPTI is set up: written at start and at teardown, read by flushes on other threads. */
	_Atomic bool cupti_on;
	bool window_open; /* inside the collection window (delay/duration/profiler range) */
	uint64_t started_mono;
	_Atomic uint64_t done_gen; /* bumped after each request the control thread completes */
};

extern struct session g_session;

/* Start the session in this process if not yet started; safe to call again.  why: "cuda" or
 * "nvtx", for the log. */
void session_start(const char *why);

/* The closing flush: CUPTI's forced flush (watchdog-bounded), NVTX buffers, the pipeline's stop,
 * the final ledger, close, manifest.  Only the first caller does it; others wait for it (bounded).
 */
void session_finish(enum tally_flush_path path, int signo);

/* Make what is recorded so far durable without ending the session (periodic, SIGINT caught). */
void session_durable_flush(void);

bool session_running(void);
void session_after_fork(void); /* the child's copy of the session lock may be held: renew it */

/* cupti.c: CUPTI setup and the collection window */
int cupti_setup(const struct tally_config *cfg, char *why, size_t len);
void cupti_window(bool open);  /* enable/disable the activity kinds */
void cupti_flush(bool forced); /* cuptiActivityFlushAll */
void cupti_teardown(void);     /* disable kinds, unsubscribe, cuptiFinalize */
uint64_t cupti_now(void);

/* Run fn in a helper thread and wait at most timeout_ns; false if it did not return in time. */
bool run_bounded(void (*fn)(void *), void *arg, uint64_t timeout_ns);

/* control.c: the control thread (periodic flush, window timers, signal requests) */
int control_start(void);
void control_forget(void); /* in a fork child: the thread does not exist there */
/*
 * From a signal handler (async-signal-safe):
 *   FLUSH   the program handles the signal and goes on: make the records durable; no wait.
 *   FINISH  the signal would terminate the program: the control thread closes the session and
 *           then delivers the signal again with its default action.  The handler returns at
 *           once, so the interrupted thread (which may hold CUDA's locks) keeps running and the
 *           flush cannot deadlock on it.  Returns false if there is no control thread.
 *   CRASH   a fault: the handler cannot return to the program, so it waits (bounded).
 */
enum ctl_request {
	CTL_REQ_FLUSH,
	CTL_REQ_FINISH,
	CTL_REQ_CRASH,
};
bool control_signal(int signo, enum ctl_request req, uint64_t wait_ns);

/* exitpath.c */
void exitpath_install(void);
void exitpath_after_fork_child(void);

/* nvtx.c */
void nvtx_flush_all(void);
void nvtx_forget(void); /* fork child */

uint64_t mono_now_ns(void);

#endif
