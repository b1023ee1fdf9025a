/* SPDX-License-Identifier: MIT */
/* The calling thread's Python frames read in place, without the GIL; see pyframes.c. */
#ifndef TALLY_COLLECTOR_PYFRAMES_H
#define TALLY_COLLECTOR_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacktab.h"

/* Find the layout of this CPython (after tally_pystack_init found one).  0 or -ENOTSUP. */
int tally_pyframes_init(void);

/* Up to max frames, innermost first; 0 if the thread has no Python frames or the layout could
 * not be validated.  Frames' line fields hold instruction offsets until named. */
unsigned tally_pyframes_capture(struct raw_frame *out, unsigned max);

/* frame_namer for these frames (no GIL needed: reads only). */
bool tally_pyframes_name(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
			 size_t func_len);

#endif
