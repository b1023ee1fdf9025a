/* SPDX-License-Identifier: MIT */
/* Return addresses at a launch, and the modules they fall in; see nativestack.c. */
#ifndef TALLY_COLLECTOR_NATIVESTACK_H
#define TALLY_COLLECTOR_NATIVESTACK_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "stacktab.h"

/* Load the unwinder now, outside any CUDA call (glibc loads libgcc_s on first use).  The
 * modules holding the n addresses of foreign (CUPTI's, the driver's) are left out of the top of
 * every stack, as tally's own frames are: where the launch went, not where it came from. */
void tally_nativestack_init(const void *const *foreign, unsigned n);

/* Up to max return addresses of the caller, innermost first, tally's own frames and the foreign
 * modules' frames above the caller left out. */
unsigned tally_nativestack_capture(struct raw_frame *out, unsigned max);

/* Consumer: describe the module that pc lies in, once per module (MODULES payload entries);
 * rescans the loaded objects when pc is in none known (a dlopen since the last scan). */
void tally_nativestack_modules_for(uint64_t pc, struct tally_buf *out);
void tally_nativestack_forget_modules(void); /* a new file: describe every module again */

#endif
