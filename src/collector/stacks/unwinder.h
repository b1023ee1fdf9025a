/* SPDX-License-Identifier: MIT */
/* Return addresses of the calling thread, cached per thread for repeated chains; see unwinder.c. */
#ifndef TALLY_COLLECTOR_UNWINDER_H
#define TALLY_COLLECTOR_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>

#define TALLY_UNWIND_MAX 160

/* Find the unwinder now, outside any CUDA call. */
void tally_unwind_init(void);

/* Up to max return addresses, innermost first (the first is the return into tally_unwind's
 * caller, as glibc's backtrace() starts); returns how many. */
int tally_unwind(void **pcs, int max);

/*
 * From a signal handler on the thread to unwind: its return addresses, innermost first, starting
 * with the interrupted instruction pc itself (found among the unwound frames: the handler's own
 * frames and the kernel's signal trampoline come before it).  No cache.  Safe in a handler only
 * where libgcc finds unwind tables without a lock (glibc 2.35's _dl_find_object), which
 * tally_unwind_signal_safe says.  Returns how many; 0 if pc was not found.  It keeps nothing on
 * the stack but libgcc's own walk (about 1.5 KiB).
 */
int tally_unwind_from_signal(uint64_t *pcs, int max, uintptr_t pc);
bool tally_unwind_signal_safe(void);
/* Is the calling thread inside tally_unwind now (a handler must not unwind it then)?  Async-
 * signal-safe. */
bool tally_unwind_busy(void);

/* Captures this thread answered from its cache (tests). */
unsigned tally_unwind_cache_hits(void);

#endif
