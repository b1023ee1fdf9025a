/* SPDX-License-Identifier: MIT */
/* Function names from an ELF file's own symbol table, for native frames without libdw; see
 * elfsyms.c. */
#ifndef TALLY_REPORT_ELFSYMS_H
#define TALLY_REPORT_ELFSYMS_H

#include <stdint.h>

struct elfsyms;

/* Reads path's .symtab, or its .dynsym where the file was stripped.  0, or -errno (-ENOEXEC: not
 * a 64-bit ELF file or a malformed one; -ENOENT: no symbol table at all). */
int elfsyms_open(const char *path, struct elfsyms **out);

/* The function whose [start, start + size) holds vaddr (an address as the file's headers place
 * it), or NULL when none does: an address in a gap between known functions (a local function of
 * a stripped file) is left unnamed rather than given its neighbour's name. */
const char *elfsyms_find(const struct elfsyms *e, uint64_t vaddr);

/* Whether the names came from .symtab (all functions) rather than .dynsym (exported only). */
int elfsyms_full(const struct elfsyms *e);

void elfsyms_close(struct elfsyms *e);

/*
 * A module's file, opened for reading as no trace may make tally open anything else: the path is
 * the trace's word, so only a regular file of at most REPORT_MODULE_MAX_BYTES is opened (stat
 * first, so that a FIFO or a device is never opened at all; then without blocking, checked again
 * on the descriptor).  The descriptor, or -errno (-ENOEXEC: not such a file).  Both readers of
 * module files (this one, and libdw's in frames.c) open them here.
 */
int module_file_open(const char *path);

/* elfsyms_find on the file at path, each file opened once per process; NULL when it cannot be
 * read or names nothing there. */
const char *elfsyms_lookup(const char *path, uint64_t vaddr);

#endif
