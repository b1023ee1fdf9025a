/* SPDX-License-Identifier: MIT */
/*
 * GNU build IDs: the NT_GNU_BUILD_ID note that `ld --build-id` puts in the programs and libraries
 * of every distribution, which says that two ELF files are one build.  MODULES entries carry it
 * (docs/format.md §12); the collector reads a module's from its notes in memory, the readers a
 * file's from the file, both through here.
 */
#ifndef TALLY_FORMAT_BUILDID_H
#define TALLY_FORMAT_BUILDID_H

#include <stddef.h>
#include <stdint.h>

/* The longest build ID kept: ld's are 8 (xxhash), 16 (md5, uuid) or 20 (sha1) bytes; a longer
 * one (`--build-id=0xHEX` allows any) is treated as none. */
#define TALLY_BUILD_ID_MAX 64

/*
 * The GNU build ID among the ELF notes of size bytes at notes (a PT_NOTE segment or an SHT_NOTE
 * section, 4-byte aligned as the ELF64 ABI lays notes out), copied into out: its length (2 to
 * TALLY_BUILD_ID_MAX), or 0 when none is there or the notes are malformed.  Reads nothing
 * outside [notes, notes + size) and allocates nothing: the collector calls it on memory.
 */
size_t tally_build_id_parse(const void *notes, uint64_t size, uint8_t out[TALLY_BUILD_ID_MAX]);

/* The build ID as lower-case hex into out (2 * len + 1 bytes). */
void tally_build_id_hex(const uint8_t *id, size_t len, char *out);

#endif
