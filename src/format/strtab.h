/* SPDX-License-Identifier: MIT */
/*
 * Writer-side string interning (docs/format.md §6).  A string gets an id the first time it is seen;
 * new strings wait in a pending list until the writer emits them as a STRINGS chunk, which it must
 * do before the RECORDS chunk that uses them.
 *
 * Lookups by pointer come first: CUPTI hands out the same name pointer for every launch of a
 * kernel, so the common case is one hash probe on a pointer, no strlen, no string compare.
 */
#ifndef TALLY_FORMAT_STRTAB_H
#define TALLY_FORMAT_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hashmap.h"

struct strtab_entry {
	char *str; /* owned copy */
	uint32_t len;
};

struct tally_strtab {
	struct strtab_entry *strs; /* by id - 1 */
	size_t count, cap;
	struct tally_map by_text; /* a string's checksum -> its id */
	struct tally_map by_ptr;  /* a pointer -> its string's id: a cache in front of by_text */
	uint32_t next_id;	  /* 1-based */
	uint32_t first_pending;	  /* ids >= this are not yet written */
	struct tally_buf pending; /* len-prefixed bytes of pending strings */
	uint32_t pending_count;
	bool failed; /* an allocation failed: some strings have id 0 */
};

int tally_strtab_init(struct tally_strtab *t);
void tally_strtab_fini(struct tally_strtab *t);

/* Id of s (interning a copy); 0 for NULL or when memory ran out. */
uint32_t tally_strtab_intern(struct tally_strtab *t, const char *s);
uint32_t tally_strtab_intern_len(struct tally_strtab *t, const char *s, size_t len);

/* Same, but first looks the pointer up: only for strings that never change while they live. */
uint32_t tally_strtab_intern_ptr(struct tally_strtab *t, const char *s);

/* Take the payload of a STRINGS chunk for the pending strings (false if none are pending). */
bool tally_strtab_take_pending(struct tally_strtab *t, struct tally_buf *payload);

#endif
