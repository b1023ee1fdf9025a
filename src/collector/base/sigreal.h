/* SPDX-License-Identifier: MIT */
/*
 * libc's own signal calls, past tally's interposed ones (signals.c), and the one way the
 * collector ends a process: the signal's default action, as if tally were not there.
 */
#ifndef TALLY_COLLECTOR_SIGREAL_H
#define TALLY_COLLECTOR_SIGREAL_H

#include <signal.h>

/* The next sigaction after libtally.so's (a sanitizer's, or libc's).  Async-signal-safe once
 * resolved; sigreal_init resolves it (call it from the constructor). */
int libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
void sigreal_init(void);

/* Deliver sig to this thread with SIG_DFL and unblocked: the process ends as the signal's
 * default action says (core dump included).  Async-signal-safe.  Returns only if that action
 * does not end the process. */
void die_by_signal(int sig);

#endif
