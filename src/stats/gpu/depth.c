/* SPDX-License-Identifier: MIT */
/* Queue length per stream over time; see depth.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "depth.h"
#include "grow.h"
#include "hashmap.h"

#define FIRST_WIDTH_NS 1000u
/*
 * Buckets of all series together, about: a stream's curve gets nbuckets while there are few
 * streams, and less as they multiply (never fewer than MIN_BUCKETS), so that a trace of 100,000
 * streams costs what its launches do, not 100,000 full curves.  The k-th series gets
 * BUCKET_BUDGET / k: all of them together hold about BUCKET_BUDGET x ln(streams).
 */
#define BUCKET_BUDGET (1u << 20)
#define MIN_BUCKETS   64u

struct queues {
	unsigned nb;
	struct qseries *q;
	size_t n, cap;
	unsigned sec;
	uint64_t sec_origin;
	size_t last;
	struct tally_map index; /* (section, device, stream) -> series + 1 */
};

struct queues *queues_new(unsigned nbuckets)
{
	struct queues *q = calloc(1, sizeof(*q));

	if (q)
		q->nb = nbuckets < 16 ? 16 : nbuckets;
	return q;
}

void queues_free(struct queues *q)
{
	size_t i;

	if (!q)
		return;
	for (i = 0; i < q->n; i++) {
		free(q->q[i].mean);
		free(q->q[i].area);
		free(q->q[i].cover);
	}
	free(q->q);
	tally_map_fini(&q->index);
	free(q);
}

void queues_section(struct queues *q, const struct report_section *rs)
{
	q->sec = rs->index;
	q->last = q->n;
	q->sec_origin = rs->s->start_cupti ? report_time(rs, rs->s->start_cupti) : 0;
}

static struct qseries *series(struct queues *q, const struct report_section *rs, uint32_t device,
			      uint32_t stream, uint64_t t0)
{
	struct qseries *s;
	uint32_t found;

	if (rs->index != q->sec)
		queues_section(q, rs);
	if (q->last < q->n && q->q[q->last].section == rs->index &&
	    q->q[q->last].device == device && q->q[q->last].stream == stream)
		return &q->q[q->last];
	found = tally_map_get(&q->index, tally_key32(rs->index, device), stream);
	if (found)
		return &q->q[q->last = found - 1];
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 16;

		if (!(s = tally_resize(q->q, cap, sizeof(*s))))
			return NULL;
		q->q = s;
		q->cap = cap;
	}
	if (tally_map_put(&q->index, tally_key32(rs->index, device), stream, (uint32_t)q->n + 1) <
	    0)
		return NULL;
	s = &q->q[q->n];
	memset(s, 0, sizeof(*s));
	s->section = rs->index;
	s->device = device;
	s->stream = stream;
	/* the section's streams share one origin, its session start; where records come before
	 * it (a clock that is not the session's), the section's first launch seen */
	if (!q->sec_origin || q->sec_origin > t0)
		q->sec_origin = t0;
	s->origin = q->sec_origin;
	s->width = FIRST_WIDTH_NS;
	s->nb = BUCKET_BUDGET / (q->n + 1);
	s->nb = s->nb > q->nb ? q->nb : s->nb < MIN_BUCKETS ? MIN_BUCKETS : s->nb;
	s->first = UINT64_MAX;
	return &q->q[q->last = q->n++];
}

/* Room for buckets i .. j (absolute, j < nb) in s's arrays: they grow, doubling, toward the side
 * that grew, within 0 .. nb - 1. */
static int cover_range(struct qseries *s, uint32_t i, uint32_t j, unsigned nb)
{
	uint32_t old_hi = s->cap ? s->lo + s->cap - 1 : 0;
	uint32_t need_lo = s->cap && s->lo < i ? s->lo : i,
		 need_hi = s->cap && old_hi > j ? old_hi : j;
	uint32_t size = need_hi - need_lo + 1, cap, lo;
	double *area;
	int32_t *cover;

	if (s->cap && i >= s->lo && j <= old_hi)
		return 0;
	cap = s->cap && 2 * s->cap > size ? 2 * s->cap : size;
	if (cap > nb)
		cap = nb;
	lo = need_lo;
	if (s->cap && i < s->lo && j <= old_hi) /* grew to the left: the room goes there */
		lo = need_hi + 1 >= cap ? need_hi + 1 - cap : 0;
	if (lo + cap > nb)
		lo = nb - cap;
	area = calloc(cap, sizeof(*area));
	cover = calloc((size_t)cap + 1, sizeof(*cover));
	if (!area || !cover) {
		free(area);
		free(cover);
		return -ENOMEM;
	}
	if (s->cap) {
		memcpy(area + (s->lo - lo), s->area, s->cap * sizeof(*area));
		memcpy(cover + (s->lo - lo), s->cover, ((size_t)s->cap + 1) * sizeof(*cover));
	}
	free(s->area);
	free(s->cover);
	s->area = area;
	s->cover = cover;
	s->lo = lo;
	s->cap = cap;
	return 0;
}

/* Buckets twice as wide: the pairs added (bucket b into b / 2), the coverage made concrete. */
static int widen(struct qseries *s)
{
	uint32_t lo = s->lo / 2, hi = (s->lo + s->cap - 1) / 2, b;
	double *area;
	int64_t run = 0;

	if (s->cap) {
		if (!(area = calloc(hi - lo + 1, sizeof(*area))))
			return -ENOMEM;
		for (b = 0; b < s->cap; b++) {
			run += s->cover[b];
			area[(s->lo + b) / 2 - lo] += s->area[b] + (double)run * (double)s->width;
		}
		free(s->area);
		s->area = area;
		memset(s->cover, 0, ((size_t)s->cap + 1) * sizeof(*s->cover)); /* keeps cap + 1 */
		s->cap = hi - lo + 1;
		s->lo = lo;
	}
	s->width *= 2;
	s->n = (s->n + 1) / 2;
	return 0;
}

int queues_add(struct queues *q, const struct report_section *rs, uint32_t device, uint32_t stream,
	       uint64_t t0, uint64_t t1)
{
	struct qseries *s = series(q, rs, device, stream, t0);
	uint64_t i, j;

	if (!s)
		return -ENOMEM;
	s->launches++;
	if (t0 < s->origin)
		t0 = s->origin; /* before the section began: a clock that disagrees */
	if (t1 <= t0)
		return 0;
	s->first = t0 < s->first ? t0 : s->first;
	s->last = t1 > s->last ? t1 : s->last;
	s->total += (long double)(t1 - t0);
	while ((t1 - s->origin) / s->width >= s->nb)
		if (widen(s) < 0)
			return -ENOMEM;
	i = (t0 - s->origin) / s->width;
	j = (t1 - s->origin) / s->width;
	if (cover_range(s, (uint32_t)i, (uint32_t)j, s->nb) < 0)
		return -ENOMEM;
	if (j + 1 > s->n)
		s->n = (uint32_t)(j + 1);
	if (i == j) {
		s->area[i - s->lo] += (double)(t1 - t0);
		return 0;
	}
	s->area[i - s->lo] += (double)(s->origin + (i + 1) * s->width - t0);
	s->area[j - s->lo] += (double)(t1 - (s->origin + j * s->width));
	if (j > i + 1) {
		s->cover[i + 1 - s->lo]++;
		s->cover[j - s->lo]--;
	}
	return 0;
}

static int finish_one(struct qseries *s)
{
	int64_t run = 0;
	uint32_t b, lo = s->cap ? s->lo : s->n;

	s->mean = calloc(s->n > lo ? s->n - lo : 1, sizeof(*s->mean));
	if (!s->mean)
		return -ENOMEM;
	for (b = lo; b < s->n; b++) {
		double *m = &s->mean[b - lo];

		run += s->cover[b - s->lo];
		*m = (s->area[b - s->lo] + (double)run * (double)s->width) / (double)s->width;
		if (*m > s->peak) {
			s->peak = *m;
			s->peak_at = s->origin + (uint64_t)b * s->width;
		}
	}
	s->lo = lo;
	s->avg = s->last > s->first ? (double)(s->total / (long double)(s->last - s->first)) : 0;
	free(s->area);
	free(s->cover);
	s->area = NULL;
	s->cover = NULL;
	return 0;
}

/*
 * One bucket width for every stream of a device: the widest any of them came to, so that a
 * device's curves are on one grid (gpu_queue_depth's Bucket (ns), the page's chart).  The widest
 * series of each (section, device) is found through a map, then the others widened to it.
 */
static int one_width_per_device(struct queues *q)
{
	struct tally_map widest = {0};
	size_t i;
	int rc = 0;

	for (i = 0; i < q->n && rc == 0; i++) {
		const struct qseries *s = &q->q[i];
		uint32_t w = tally_map_get(&widest, s->section, s->device);

		if (!w || q->q[w - 1].width < s->width)
			rc = tally_map_put(&widest, s->section, s->device, (uint32_t)i + 1);
	}
	for (i = 0; i < q->n && rc == 0; i++) {
		struct qseries *s = &q->q[i];
		uint64_t width = q->q[tally_map_get(&widest, s->section, s->device) - 1].width;

		while (rc == 0 && s->width < width)
			rc = widen(s);
	}
	tally_map_fini(&widest);
	return rc < 0 ? -ENOMEM : 0;
}

int queues_finish(struct queues *q)
{
	size_t i;

	if (one_width_per_device(q) < 0)
		return -ENOMEM;
	for (i = 0; i < q->n; i++)
		if (!q->q[i].mean && finish_one(&q->q[i]) < 0)
			return -ENOMEM;
	return 0;
}

const struct qseries *queues_list(const struct queues *q, size_t *n)
{
	*n = q->n;
	return q->q;
}
