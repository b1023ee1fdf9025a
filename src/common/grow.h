/* SPDX-License-Identifier: MIT */
/* Growing an array by doubling, the new elements zeroed. */
#ifndef TALLY_COMMON_GROW_H
#define TALLY_COMMON_GROW_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Room for `need` elements of `elem` bytes in p, whose capacity is *cap: p itself when they fit,
 * else p reallocated to the first doubling of *cap (16 from nothing) that holds them, with every
 * element past the old capacity zeroed and *cap updated.  NULL when memory ran out or the size
 * would overflow; p and *cap are then as they were (p is still the caller's to free).
 */
void *tally_grow(void *p, size_t *cap, size_t need, size_t elem);

/* The same, in place: *p replaced when it moved.  false when memory ran out (*p as it was). */
bool tally_grow_in(void **p, size_t *cap, size_t need, size_t elem);

#endif
