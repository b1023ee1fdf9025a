/* SPDX-License-Identifier: MIT */
/*
 * Processes that ended with nothing recorded (docs/collector.md, "Every process that matters"):
 * with host sampling, every process of the recorded tree runs a session, and one that never
 * recorded anything (a shell that only execs, a `readlink` a wrapper script runs) writes no file.
 * So that nothing is hidden, it says so to the nearest process that may still write one: an
 * exec'd image hands its count to the next image of the same pid (TALLY_QUIET_FROM), a process
 * that exits sends it to its parent (a datagram to the parent's socket, named by its pid), and
 * a process whose trace is written puts what reached it into a PROCESSES chunk (format §14).
 * What was sent where nobody listened is in tally record's manifest ("quiet" lines).
 */
#ifndef TALLY_COLLECTOR_QUIET_H
#define TALLY_COLLECTOR_QUIET_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

/* Listen for this process's children (a session that may stay quiet), and take in what earlier
 * images of this pid left in TALLY_QUIET_FROM.  Safe to call again. */
void quiet_listen(void);
/* The socket to wait on (-1: none), and what arrived on it, taken in.  Control thread. */
int quiet_fd(void);
void quiet_drain(void);
/* The PROCESSES chunk's payload (format §14) of what reached this process: false if nothing.
 * reset: it is in the trace now, and counted from zero again (a second chunk adds to it). */
bool quiet_payload(struct tally_buf *b, bool reset);
/*
 * This process (or image) recorded nothing: add itself (self), then pass it all on.  exec: kept for
 * quiet_exec_var (the next image); otherwise sent to the parent.  Returns whether a process that
 * writes a trace may take it (false: the parent does not listen; the caller notes it elsewhere).
 */
bool quiet_pass_on(bool exec, bool self);
/* What the next image inherits ("TALLY_QUIET_FROM=PID:COUNT NAME,..."), or NULL: after
 * quiet_pass_on(true).  A static buffer. */
const char *quiet_exec_var(void);
/* The exec failed: this image goes on; it takes itself back out of the count. */
void quiet_exec_undo(void);
/* This image's name and the processes it stands for (itself included), for a manifest line. */
const char *quiet_self_name(void);
uint64_t quiet_total(void);
/* A fork child: the parent's socket and counts are not its own. */
void quiet_after_fork_child(void);

#endif
