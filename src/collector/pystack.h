/* SPDX-License-Identifier: MIT */
/* The calling thread's Python stack, when it holds the GIL; see pystack.c. */
#ifndef TALLY_COLLECTOR_PYSTACK_H
#define TALLY_COLLECTOR_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacktab.h"

/* Find CPython in the process (once).  False: no CPython, or one older than 3.9. */
bool tally_pystack_init(void);

/* Up to max frames, innermost first; 0 when the thread does not hold the GIL. */
unsigned tally_pystack_capture(struct raw_frame *out, unsigned max);

/* frame_namer for Python frames (GIL held: called from inside a capture's interning). */
bool tally_pystack_name(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
			size_t func_len);

#endif
