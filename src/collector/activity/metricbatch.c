/* SPDX-License-Identifier: MIT */
/* Batches of metric samples; see metricbatch.h. */
#include "metricbatch.h"

#include <stdlib.h>
#include <string.h>

/* 2^63, as a double: the first value that does not fit. */
#define INT64_LIMIT 9223372036854775808.0

struct pm_batch *pm_batch_new(uint32_t device, const struct pm_metric *set, size_t nmetrics,
			      uint32_t capacity)
{
	size_t names = 0, i, head, bytes;
	struct pm_batch *b;
	char *p;

	if (!nmetrics || nmetrics > PM_METRICS_MAX || !capacity)
		return NULL;
	for (i = 0; i < nmetrics; i++)
		names += strlen(set[i].name) + 1;
	head = (sizeof(*b) + 7) & ~(size_t)7;
	bytes = head + (size_t)capacity * sizeof(struct pm_batch_sample) +
		(size_t)capacity * nmetrics * sizeof(int64_t) + names;
	if (!(b = malloc(bytes)))
		return NULL;
	memset(b, 0, sizeof(*b));
	b->device = device;
	b->nmetrics = (uint32_t)nmetrics;
	b->capacity = capacity;
	b->samples = (struct pm_batch_sample *)((char *)b + head);
	b->values = (int64_t *)(b->samples + capacity);
	p = (char *)(b->values + (size_t)capacity * nmetrics);
	for (i = 0; i < nmetrics; i++) {
		size_t n = strlen(set[i].name) + 1;

		memcpy(p, set[i].name, n);
		b->names[i] = p;
		b->scales[i] = (uint8_t)set[i].scale;
		p += n;
	}
	return b;
}

int64_t pm_scaled(double v, unsigned scale)
{
	static const double powers[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

	if (v != v)
		return 0; /* NaN: CUPTI had no value */
	v *= powers[scale < 10 ? scale : 9];
	if (v >= INT64_LIMIT)
		return INT64_MAX;
	if (v <= -INT64_LIMIT)
		return INT64_MIN;
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

bool pm_batch_add(struct pm_batch *b, const struct pm_batch_sample *s, const double *values)
{
	int64_t *row;
	uint32_t m;

	if (b->nsamples == b->capacity)
		return false;
	row = b->values + (size_t)b->nsamples * b->nmetrics;
	for (m = 0; m < b->nmetrics; m++)
		row[m] = pm_scaled(values[m], b->scales[m]);
	b->samples[b->nsamples++] = *s;
	return true;
}

void pm_batch_record(const struct pm_batch *b, uint32_t m, uint32_t i, uint32_t name_id,
		     struct tally_record *r)
{
	const struct pm_batch_sample *s = &b->samples[i];

	memset(r, 0, sizeof(*r));
	r->kind = TALLY_KIND_GPU_METRIC;
	r->start = s->start;
	r->end = s->end;
	r->device_id = b->device;
	r->name_id = name_id;
	r->correlation_id = s->number;
	r->value = s->flags;
	r->subkind = b->scales[m];
	r->metric_value = b->values[(size_t)i * b->nmetrics + m];
}
