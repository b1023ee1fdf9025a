/* SPDX-License-Identifier: MIT */
/*
 * Python frames read in place, without the GIL; see pyframes.c.  Two readers share one layout:
 * the calling thread's own frames (a launch's stack: they cannot change under it) and any
 * thread's frames from tally's sampler thread (they can: every read is checked).
 */
#ifndef TALLY_COLLECTOR_PYFRAMES_H
#define TALLY_COLLECTOR_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacktab.h"

/* Find the layout of this CPython (after tally_pystack_init found one).  0 or -ENOTSUP. */
int tally_pyframes_init(void);

/* Up to max frames, innermost first; 0 if the thread has no Python frames or the layout could
 * not be validated.  Frames' line fields hold instruction offsets until named. */
unsigned tally_pyframes_capture(struct raw_frame *out, unsigned max);

/* frame_namer for these frames (no GIL needed: reads only). */
bool tally_pyframes_name(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
			 size_t func_len);

/* ---- other threads, from the sampler (every read through saferead.h) ---------------------- */

struct py_thread {
	const void *tstate;
	pid_t tid;		  /* native_thread_id */
	unsigned long pthread_id; /* thread_id: pthread_self() of that thread */
};

/* Ready to read other threads: the interpreter is up, the layout and the thread state's id
 * fields are found (from the main thread, whose pthread id is main_pthread).  0; -EAGAIN (not
 * yet: no interpreter, no frame to check; try later); -ENOTSUP (never here), with why. */
int tally_pyframes_outside_init(unsigned long main_pthread, char *why, size_t len);

/* Sampled frames have lines only once the main thread's outermost frame has been read as
 * CPython reads it (calibration, at outside_init); where that failed (the frame had not begun),
 * try again.  Cheap once it succeeded; call on the sampler thread between passes. */
void tally_pyframes_lines_retry(unsigned long main_pthread);

/* The main interpreter's threads, up to max.  Returns how many. */
unsigned tally_pyframes_threads(struct py_thread *out, unsigned max);

/* Up to max frames of that thread, innermost first (line fields hold instruction offsets until
 * named by tally_pyframes_name_outside); -1 if the chain changed under the reader or led to
 * memory that did not check out (torn). */
int tally_pyframes_sample(const void *tstate, struct raw_frame *out, unsigned max);

/* frame_namer for sampled frames: every byte through saferead.h (the code object may be gone). */
bool tally_pyframes_name_outside(uint64_t key, uint32_t *line, char *file, size_t file_len,
				 char *func, size_t func_len);

#endif
