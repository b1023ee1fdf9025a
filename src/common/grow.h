/* SPDX-License-Identifier: MIT */
/*
 * Growable arrays, the one place tally reallocates memory: every array that grows does it
 * through these, so every size is checked for overflow (n * elem past SIZE_MAX is an error, never
 * a short allocation) and every array grows by doubling (linear in what it holds).
 */
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
bool tally_grow_in(void *pp, size_t *cap, size_t need, size_t elem);

/*
 * Grow an array of elem-sized items by one; returns the new (zeroed) item or NULL.  Its capacity
 * is the power of two at or above *n, kept by no field of its own, so every array grown by it must
 * only ever be grown by it (a section's windows: by the reader and by a summary's parser alike).
 */
void *tally_array_push(void *arrayp, size_t *n, size_t elem);

/* p resized to exactly n elements of elem bytes (to shrink what was grown, or to size a buffer
 * once): realloc with the product checked.  NULL when memory ran out or n * elem overflows (p is
 * then the caller's still); n == 0 keeps one element, so NULL always means failure. */
void *tally_resize(void *p, size_t n, size_t elem);

#endif
