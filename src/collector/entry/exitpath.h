/* SPDX-License-Identifier: MIT */
/*
 * The exit paths, as entry points into the session: the interposed exits and execs and the fork
 * hooks (exitpath.c), and the signals (signals.c).  Both call the session; nothing calls them
 * but the loader (constructor, interposition) and inject.c, once a session runs.
 */
#ifndef TALLY_COLLECTOR_EXITPATH_H
#define TALLY_COLLECTOR_EXITPATH_H

#include <signal.h>
#include <stdbool.h>

void exitpath_init(void); /* at load: the fork hooks */
/* A session runs: the atexit close; cuda: CUDA is in it now (registered at the first arm, and
 * again when CUDA joins a session armed before it, so that the close runs before CUDA's and
 * CUPTI's own exit handlers: exitpath.c). */
void exitpath_arm(bool cuda);

/* signals.c: put tally's handler in front of every signal that can end the process, keeping
 * what the program asked for (and answering its sigaction calls with it). */
void signals_arm(void);
void signals_before_fork(void);
void signals_after_fork_parent(void);
/* The child is not recorded (yet): every signal goes back to what the program asked for. */
void signals_after_fork_child(void);

/* The host sampler's timer signal (handed to timersample.c at load, struct timer_signals):
 * tally's handler stays in front of sig whatever the program asks later, with SA_RESTART, and a
 * delivery that is a POSIX timer's carrying si_value tag goes to fn (async-signal-safe); every
 * other delivery of sig is the program's, as for any signal.  It stays so until the process ends
 * or execs: a timer's signal already queued when its timer was deleted may still land, and must
 * find tally's handler. */
void signals_claim(int sig, int tag, void (*fn)(int, siginfo_t *, void *));
/* What the program has asked for sig: its view where tally's handler is in front. */
void signals_program_action(int sig, struct sigaction *out);

#endif
