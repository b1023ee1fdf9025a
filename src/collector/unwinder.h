/* SPDX-License-Identifier: MIT */
/* Return addresses of the calling thread, cached per thread for repeated chains; see unwinder.c. */
#ifndef TALLY_COLLECTOR_UNWINDER_H
#define TALLY_COLLECTOR_UNWINDER_H

#define TALLY_UNWIND_MAX 160

/* Find the unwinder now, outside any CUDA call. */
void tally_unwind_init(void);

/* Up to max return addresses, innermost first (the first is the return into tally_unwind's
 * caller, as glibc's backtrace() starts); returns how many. */
int tally_unwind(void **pcs, int max);

/* Captures this thread answered from its cache (tests). */
unsigned tally_unwind_cache_hits(void);

#endif
