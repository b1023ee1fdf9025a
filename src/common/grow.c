/* SPDX-License-Identifier: MIT */
/* Growing an array by doubling; see grow.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void *tally_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return NULL;
	np = realloc(p, ncap * elem);
	if (np) {
		memset((char *)np + *cap * elem, 0, (ncap - *cap) * elem);
		*cap = ncap;
	}
	return np;
}

bool tally_grow_in(void **p, size_t *cap, size_t need, size_t elem)
{
	void *np;

	if (need <= *cap)
		return true;
	if (!(np = tally_grow(*p, cap, need, elem)))
		return false;
	*p = np;
	return true;
}
