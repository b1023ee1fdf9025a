/* SPDX-License-Identifier: MIT */
/* Function names from an ELF file's own symbol table, for native frames without libdw; see
 * elfsyms.c. */
#ifndef TALLY_REPORT_ELFSYMS_H
#define TALLY_REPORT_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "buildid.h"

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

/* The GNU build ID of the ELF file at path (opened as module_file_open does) into id, and the
 * file's size: the ID's length, 0 when the file has none, or -errno (-ENOEXEC: not a 64-bit ELF
 * file). */
int elfsyms_build_id(const char *path, uint8_t id[TALLY_BUILD_ID_MAX], uint64_t *size);

/* Where a separate debug file of build ID id is installed: /usr/lib/debug/.build-id/xx/yyyy.debug,
 * as gdb, libdw and perf find it. */
void elfsyms_debug_path(const uint8_t *id, size_t len, char *out, size_t out_len);

/* elfsyms_find on the file at path, each file opened once per process; NULL when it cannot be
 * read or names nothing there. */
const char *elfsyms_lookup(const char *path, uint64_t vaddr);

#endif
