/* SPDX-License-Identifier: MIT */
/* Reads of this process's memory that report a bad address instead of faulting; see saferead.c. */
#ifndef TALLY_COLLECTOR_SAFEREAD_H
#define TALLY_COLLECTOR_SAFEREAD_H

#include <stdbool.h>
#include <stddef.h>

/* Copy n bytes at addr into out; false (out undefined) if any of them is not readable.  Safe on
 * any address, from any thread (not from a signal handler). */
bool tally_safe_read(const void *addr, void *out, size_t n);

/* Two reads in one go (one system call where it can): false unless every byte of both was read. */
bool tally_safe_read2(const void *a, void *out_a, size_t na, const void *b, void *out_b, size_t nb);

/* A pointer-sized word at base + off; false if unreadable or base is NULL. */
bool tally_safe_ptr(const void *base, long off, const void **out);

/* How reads are made: "process_vm_readv" or "pipe" (process_vm_readv refused here). */
const char *tally_safe_read_how(void);

#endif
