/* SPDX-License-Identifier: MIT */
/* The phases of a run: start-up, steps, tail; see phases.h. */
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "phases.h"
#include "select.h"

size_t phases_top_level(struct phase_span *v, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (v[i].t1 <= v[i].t0)
			continue;
		if (k && v[i].t1 <= v[k - 1].t1) /* inside the one kept before */
			continue;
		v[k++] = v[i];
	}
	return k;
}

/* One kernel name's recurrences: where it was last, the period seen after its first one (the
 * first step may differ), and how many recurrences had that period. */
struct recur {
	uint64_t count, last, period, regular, gaps, first;
};

static bool better(const struct recur *a, const struct recur *b)
{
	if (!b)
		return true;
	if (a->period != b->period)
		return a->period > b->period;
	return a->first < b->first;
}

/* A name recurring at one period in most of its recurrences, and often enough for the steps. */
static bool regular(const struct recur *r)
{
	return r->count >= PHASE_STEPS_MIN + 1 && r->period >= PHASE_PATTERN_MIN_KERNELS &&
	       r->gaps && (double)r->regular >= PHASE_PATTERN_REGULAR * (double)r->gaps;
}

size_t phases_from_pattern(const struct phase_kernel *k, size_t n, struct phase_span *out,
			   size_t cap, uint32_t *name, uint64_t *period)
{
	struct tally_map map = {0};
	struct recur *rec = NULL, *best = NULL;
	size_t nrec = 0, i, steps = 0;
	uint64_t prev = 0;
	bool have = false;

	*name = 0;
	*period = 0;
	if (n < 2 * (PHASE_STEPS_MIN + 1) || !(rec = calloc(n, sizeof(*rec))))
		return 0;
	for (i = 0; i < n; i++) {
		uint32_t v = tally_map_get(&map, k[i].name, 0);
		struct recur *r;

		if (!v) {
			if (tally_map_put(&map, k[i].name, 0, (uint32_t)++nrec) < 0)
				goto out;
			rec[nrec - 1] = (struct recur){.first = i, .last = i, .count = 1};
			continue;
		}
		r = &rec[v - 1];
		if (r->count >= 2) { /* the first recurrence's period may be start-up's */
			uint64_t gap = i - r->last;

			if (!r->period)
				r->period = gap;
			r->gaps++;
			r->regular += gap == r->period;
		}
		r->count++;
		r->last = i;
	}
	for (i = 0; i < nrec; i++)
		if (regular(&rec[i]) && better(&rec[i], best))
			best = &rec[i];
	if (!best)
		goto out;
	*name = k[best->first].name;
	*period = best->period;
	for (i = best->first; i < n && steps < cap; i++) {
		if (k[i].name != *name)
			continue;
		if (have && k[i].launched > prev)
			out[steps++] = (struct phase_span){prev, k[i].launched};
		prev = k[i].launched;
		have = true;
	}
out:
	free(rec);
	tally_map_fini(&map);
	return steps;
}

size_t phases_warmup(const struct phase_span *s, size_t n, uint64_t *median)
{
	uint64_t *d = n ? malloc(n * sizeof(*d)) : NULL, min = UINT64_MAX, max = 0, m;
	size_t i, warm = 0;

	*median = 0;
	if (!d)
		return 0;
	for (i = 0; i < n; i++) {
		d[i] = s[i].t1 - s[i].t0;
		min = d[i] < min ? d[i] : min;
		max = d[i] > max ? d[i] : max;
	}
	m = stats_select(d, n, (n - 1) / 2, min, max, NULL);
	while (warm < n / 2 && s[warm].t1 - s[warm].t0 > PHASE_WARMUP_FACTOR * m)
		warm++;
	if (warm) { /* the median of the steady steps */
		for (i = warm, min = UINT64_MAX, max = 0; i < n; i++) {
			d[i - warm] = s[i].t1 - s[i].t0;
			min = d[i - warm] < min ? d[i - warm] : min;
			max = d[i - warm] > max ? d[i - warm] : max;
		}
		m = stats_select(d, n - warm, (n - warm - 1) / 2, min, max, NULL);
	}
	*median = m;
	free(d);
	return warm;
}
