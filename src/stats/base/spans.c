/* SPDX-License-Identifier: MIT */
/* Sets of time intervals as their union; see spans.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#include "spans.h"

static int reserve(struct span_set *b)
{
	size_t cap = b->cap ? 2 * b->cap : 16;
	struct span *s;

	if (b->n < b->cap)
		return 0;
	s = tally_resize(b->s, cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	b->s = s;
	b->cap = cap;
	return 0;
}

/* The first segment that does not end merge_gap or more before t0. */
static size_t first_near(const struct span_set *b, uint64_t t0)
{
	uint64_t gap = b->merge_gap ? b->merge_gap : 1;
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->s[mid].t1 + gap <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int span_add(struct span_set *b, uint64_t t0, uint64_t t1, uint64_t w)
{
	return span_add_tagged(b, t0, t1, w, 0);
}

int span_add_tagged(struct span_set *b, uint64_t t0, uint64_t t1, uint64_t w, uint64_t tag)
{
	uint64_t gap = b->merge_gap ? b->merge_gap : 1;
	size_t lo = first_near(b, t0), j;

	/* in time order, the common case, this is an append or a merge with the last segment */
	for (j = lo; j < b->n && b->s[j].t0 < t1 + gap; j++) {
		if (b->s[j].t0 < t0) {
			t0 = b->s[j].t0;
			tag = b->s[j].first;
		}
		t1 = b->s[j].t1 > t1 ? b->s[j].t1 : t1;
		w += b->s[j].weight;
	}
	if (j == lo) { /* nothing to merge with: a new segment at lo */
		if (reserve(b) < 0)
			return -ENOMEM;
		memmove(b->s + lo + 1, b->s + lo, (b->n - lo) * sizeof(*b->s));
		b->n++;
	} else if (j > lo + 1) { /* lo .. j-1 become one */
		memmove(b->s + lo + 1, b->s + j, (b->n - j) * sizeof(*b->s));
		b->n -= j - lo - 1;
	}
	b->s[lo] = (struct span){t0, t1, w, tag};
	return 0;
}

struct span *span_find(struct span_set *b, uint64_t t)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->s[mid].t1 < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->n && b->s[lo].t0 <= t ? &b->s[lo] : NULL;
}

size_t span_settle(struct span_set *b, uint64_t t, void (*fn)(void *ctx, const struct span *s),
		   void *ctx)
{
	size_t k = 0;

	while (k < b->n && b->s[k].t1 < t) {
		if (fn)
			fn(ctx, &b->s[k]);
		k++;
	}
	if (k) {
		memmove(b->s, b->s + k, (b->n - k) * sizeof(*b->s));
		b->n -= k;
	}
	return k;
}

void span_set_fini(struct span_set *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}
