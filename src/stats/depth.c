/* SPDX-License-Identifier: MIT */
/* Queue length per stream over time; see queue.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "depth.h"

#define FIRST_WIDTH_NS 1000u

struct queues {
	unsigned nb;
	struct qseries *q;
	size_t n, cap;
	size_t sec_first; /* the current section's first series */
	unsigned sec;
	uint64_t sec_origin;
	size_t last;
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
	free(q);
}

void queues_section(struct queues *q, const struct report_section *rs)
{
	q->sec = rs->index;
	q->sec_first = q->n;
	q->last = q->n;
	q->sec_origin = rs->s->start_cupti ? report_time(rs, rs->s->start_cupti) : 0;
}

static struct qseries *series(struct queues *q, const struct report_section *rs, uint32_t device,
			      uint32_t stream, uint64_t t0)
{
	struct qseries *s;
	size_t i;

	if (rs->index != q->sec)
		queues_section(q, rs);
	if (q->last < q->n && q->q[q->last].device == device && q->q[q->last].stream == stream)
		return &q->q[q->last];
	for (i = q->sec_first; i < q->n; i++)
		if (q->q[i].device == device && q->q[i].stream == stream)
			return &q->q[q->last = i];
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 16;

		if (!(s = realloc(q->q, cap * sizeof(*s))))
			return NULL;
		q->q = s;
		q->cap = cap;
	}
	s = &q->q[q->n];
	memset(s, 0, sizeof(*s));
	s->section = rs->index;
	s->device = device;
	s->stream = stream;
	s->origin = q->sec_origin && q->sec_origin <= t0 ? q->sec_origin : t0;
	s->width = FIRST_WIDTH_NS;
	s->first = UINT64_MAX;
	s->area = calloc(q->nb, sizeof(*s->area));
	s->cover = calloc(q->nb + 1, sizeof(*s->cover));
	if (!s->area || !s->cover) {
		free(s->area);
		free(s->cover);
		return NULL;
	}
	return &q->q[q->last = q->n++];
}

/* Buckets twice as wide: the pairs added, the coverage made concrete. */
static void widen(struct qseries *s, unsigned nb)
{
	int64_t run = 0;
	unsigned i;

	for (i = 0; i < nb; i++) {
		run += s->cover[i];
		s->area[i] += (double)run * (double)s->width;
		s->cover[i] = 0;
	}
	s->cover[nb] = 0;
	for (i = 0; i < nb / 2; i++)
		s->area[i] = s->area[2 * i] + s->area[2 * i + 1];
	memset(s->area + nb / 2, 0, (nb - nb / 2) * sizeof(*s->area));
	s->width *= 2;
	s->n = (s->n + 1) / 2;
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
	while ((t1 - s->origin) / s->width >= q->nb)
		widen(s, q->nb);
	i = (t0 - s->origin) / s->width;
	j = (t1 - s->origin) / s->width;
	if (j + 1 > s->n)
		s->n = (uint32_t)(j + 1);
	if (i == j) {
		s->area[i] += (double)(t1 - t0);
		return 0;
	}
	s->area[i] += (double)(s->origin + (i + 1) * s->width - t0);
	s->area[j] += (double)(t1 - (s->origin + j * s->width));
	if (j > i + 1) {
		s->cover[i + 1]++;
		s->cover[j]--;
	}
	return 0;
}

static int finish_one(struct qseries *s, unsigned nb)
{
	int64_t run = 0;
	unsigned i;

	s->mean = calloc(nb, sizeof(*s->mean));
	if (!s->mean)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		run += s->cover[i];
		s->mean[i] = (s->area[i] + (double)run * (double)s->width) / (double)s->width;
		if (s->mean[i] > s->peak) {
			s->peak = s->mean[i];
			s->peak_at = s->origin + i * s->width;
		}
	}
	s->avg = s->last > s->first ? (double)(s->total / (long double)(s->last - s->first)) : 0;
	free(s->area);
	free(s->cover);
	s->area = NULL;
	s->cover = NULL;
	return 0;
}

int queues_finish(struct queues *q)
{
	size_t i;

	for (i = 0; i < q->n; i++)
		if (!q->q[i].mean && finish_one(&q->q[i], q->nb) < 0)
			return -ENOMEM;
	return 0;
}

const struct qseries *queues_list(const struct queues *q, size_t *n)
{
	*n = q->n;
	return q->q;
}
