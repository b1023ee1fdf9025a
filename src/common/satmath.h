/* SPDX-License-Identifier: MIT */
/*
 * Sums and products that stop at UINT64_MAX instead of wrapping: a crafted or broken trace may
 * say anything, and a total that wrapped would be a small number that looks right.  Whoever adds
 * says so where it shows (a NOTE, a flag of the row).
 */
#ifndef TALLY_COMMON_SATMATH_H
#define TALLY_COMMON_SATMATH_H

#include <stdbool.h>
#include <stdint.h>

/* a + b, or UINT64_MAX with *saturated set. */
static inline uint64_t tally_add_sat(uint64_t a, uint64_t b, bool *saturated)
{
	uint64_t s;

	if (__builtin_add_overflow(a, b, &s)) {
		*saturated = true;
		return UINT64_MAX;
	}
	return s;
}

/* a x b, or UINT64_MAX with *saturated set. */
static inline uint64_t tally_mul_sat(uint64_t a, uint64_t b, bool *saturated)
{
	uint64_t p;

	if (__builtin_mul_overflow(a, b, &p)) {
		*saturated = true;
		return UINT64_MAX;
	}
	return p;
}

#endif
