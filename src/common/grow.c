/* SPDX-License-Identifier: MIT */
/* Growable arrays, the one place tally reallocates memory; see grow.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void *tally_resize(void *p, size_t n, size_t elem)
{
	if (!n)
		n = 1;
	if (elem && n > SIZE_MAX / elem)
		return NULL;
	return realloc(p, n * elem);
}

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
	np = tally_resize(p, ncap, elem);
	if (np) {
		memset((char *)np + *cap * elem, 0, (ncap - *cap) * elem);
		*cap = ncap;
	}
	return np;
}

bool tally_grow_in(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	void *np;

	if (need <= *cap)
		return true;
	if (!(np = tally_grow(*p, cap, need, elem)))
		return false;
	*p = np;
	return true;
}

void *tally_array_push(void *arrayp, size_t *n, size_t elem)
{
	void **array = arrayp;
	char *a;

	if ((*n & (*n - 1)) == 0) { /* a power of two (or 0): full */
		if (*n > SIZE_MAX / 2 || !(a = tally_resize(*array, *n ? 2 * *n : 1, elem)))
			return NULL;
		*array = a;
	}
	a = (char *)*array + *n * elem;
	memset(a, 0, elem);
	(*n)++;
	return a;
}
