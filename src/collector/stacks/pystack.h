/* SPDX-License-Identifier: MIT */
/* The calling thread's Python stack, when it holds the GIL; see pystack.c. */
#ifndef TALLY_COLLECTOR_PYSTACK_H
#define TALLY_COLLECTOR_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacktab.h"

/* Find CPython in the process (once).  False: no CPython, or one older than 3.9.  gil_only:
 * never read frames in place (only threads holding the GIL get stacks). */
bool tally_pystack_init(bool gil_only);

/* Up to max frames, innermost first, and the namer for them: read in place where this CPython's
 * layout is known (pyframes.c, no GIL needed), else through the public API when the thread holds
 * the GIL; 0 when neither can. */
unsigned tally_pystack_capture(struct raw_frame *out, unsigned max, frame_namer *namer);

#endif
