/* SPDX-License-Identifier: MIT */
/*
 * The control thread's plumbing: a thread that takes no signals, and a self-pipe that signal
 * handlers may write to (write(2) is async-signal-safe).  What the thread does is the session's
 * business (session.c runs the loop); this only starts it and carries the requests.
 */
#ifndef TALLY_COLLECTOR_CONTROL_H
#define TALLY_COLLECTOR_CONTROL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum ctl_cmd {
	CTL_FLUSH = 1,	      /* the program handles a stop signal and goes on: make it durable */
	CTL_CLOSE_SIGNAL = 2, /* a signal is ending the process: close, then its default action */
	CTL_CLOSE_CRASH = 3,  /* a fault: close; the faulting thread waits for it (bounded) */
};

struct ctl_msg {
	uint8_t cmd; /* enum ctl_cmd */
	uint8_t signo;
};

struct control {
	int pipe[2]; /* written once by control_start before the thread runs */
	_Atomic bool running;
	pthread_t thread;
};

void control_init(struct control *c);
/* Start main(arg) on a new thread with every signal blocked.  0 or -errno. */
int control_start(struct control *c, void *(*main)(void *), void *arg, const char *name);
/* On the control thread: wait up to timeout_ms (-1: forever) for a request. */
bool control_wait(struct control *c, int timeout_ms, struct ctl_msg *m);
/* From anywhere, signal handlers included: false if there is no thread to ask. */
bool control_post(struct control *c, enum ctl_cmd cmd, int signo);
bool control_alive(const struct control *c);
/* A fork child: the thread is not there; its pipe ends are, and are closed. */
void control_forget(struct control *c);

#endif
