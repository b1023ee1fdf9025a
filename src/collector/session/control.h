/* SPDX-License-Identifier: MIT */
/*
 * The control thread's plumbing: a thread that takes no signals, and requests that signal
 * handlers may post (an atomic slot per kind of request and sem_post, both async-signal-safe).
 * No descriptor: the program may close every descriptor it did not open (close_range, a daemon's
 * loop) and reuse the numbers, and a pipe there would then be the program's file, read as
 * requests and written with them.  What the thread does is the session's business (session.c
 * runs the loop); this only starts it and carries the requests.
 */
#ifndef TALLY_COLLECTOR_CONTROL_H
#define TALLY_COLLECTOR_CONTROL_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum ctl_cmd {
	CTL_FLUSH = 1,	      /* the program handles a stop signal and goes on: make it durable */
	CTL_CLOSE_SIGNAL = 2, /* a signal is ending the process: close, then its default action */
	CTL_CLOSE_CRASH = 3,  /* a fault: close; the faulting thread waits for it (bounded) */
	CTL_KINDS,
};

struct ctl_msg {
	uint8_t cmd; /* enum ctl_cmd */
	uint8_t signo;
};

struct control {
	sem_t wake;			     /* one post per request */
	_Atomic unsigned pending[CTL_KINDS]; /* per kind: 0 none, else 1 + its signal */
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
/* A fork child: the thread is not there, nor are its parent's requests. */
void control_forget(struct control *c);

#endif
