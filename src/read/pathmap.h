/* SPDX-License-Identifier: MIT */
/*
 * An index of strings (module paths) into a table the caller keeps: entry i of the table has the
 * string key(ctx, i), found through the one hash map (common/hashmap.h) on the string's hash, so
 * that a trace naming thousands of modules costs each lookup the same as one (frames.c's libdw
 * modules, elfsyms.c's symbol tables, modfile.c's chosen files).
 */
#ifndef TALLY_READ_PATHMAP_H
#define TALLY_READ_PATHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct pathmap {
	struct tally_map map; /* the key's hash -> entry + 1 */
	const char *(*key)(const void *ctx, size_t i);
	const void *ctx;
};

/* The entry whose key is s, or SIZE_MAX. */
size_t pathmap_find(const struct pathmap *m, const char *s);
/* Entry i (the table's newest, with its key set) is indexed; false when memory ran out (then
 * lookups of it find nothing, and the caller may add it again). */
bool pathmap_add(struct pathmap *m, size_t i);
void pathmap_fini(struct pathmap *m);

#endif
