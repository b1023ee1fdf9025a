/* SPDX-License-Identifier: MIT */
/*
 * What a GPU_METRIC record measures (docs/format.md §13), for every reader: the metric's CUPTI
 * name, its label and unit from the GPU_METRICS chunk of its device when the section has one,
 * else from the name (metricset.h), cached per section by (device, name id).  The label and unit
 * are copied: a later GPU_METRICS chunk of the device replaces the reader's copy.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "metricset.h"
#include "trace-set.h"

struct metric_entry {
	uint64_t key; /* device << 32 | name id */
	struct report_metric m;
};

struct report_metrics {
	struct metric_entry *v; /* in the order they came (m.index) */
	size_t cap, n;
	struct tally_map at; /* key -> index in v + 1 */
	size_t last;	     /* index + 1 of the last one asked for; 0 none */
};

static const double tens[] = {1,    1e1,  1e2,	1e3,  1e4,  1e5,  1e6,	1e7,  1e8, 1e9,
			      1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

double report_metric_value(const struct tally_record *r)
{
	return (double)r->metric_value / tens[r->subkind < 18 ? r->subkind : 18];
}

const char *report_metric_text(const struct tally_record *r, char buf[REPORT_METRIC_TEXT])
{
	unsigned i, scale = r->subkind > 18 ? 18 : r->subkind;
	int64_t v = r->metric_value;
	uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v, div = 1;

	for (i = 0; i < scale; i++)
		div *= 10;
	if (scale)
		snprintf(buf, REPORT_METRIC_TEXT, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "",
			 a / div, (int)scale, a % div);
	else
		snprintf(buf, REPORT_METRIC_TEXT, "%" PRId64, v);
	return buf;
}

void report_metric_describe(const struct tally_section *s, uint32_t device, const char *name,
			    const char **label, const char **unit, unsigned *order)
{
	struct pm_metric pm;
	size_t i, k;

	*label = *unit = NULL;
	*order = UINT32_MAX;
	for (i = 0; i < s->ngpu_metrics && !*label; i++)
		for (k = 0; s->gpu_metrics[i].device == device && k < s->gpu_metrics[i].nmetrics;
		     k++)
			if (s->gpu_metrics[i].metrics[k].name &&
			    strcmp(s->gpu_metrics[i].metrics[k].name, name) == 0) {
				*label = s->gpu_metrics[i].metrics[k].label;
				*unit = s->gpu_metrics[i].metrics[k].unit;
				*order = (unsigned)k;
				break;
			}
	pm_metric_describe(name, &pm);
	*label = *label && **label ? *label : pm.label;
	*unit = *unit ? *unit : pm.unit;
}

static bool describe(const struct tally_section *s, uint32_t device, struct report_metric *m)
{
	const char *label, *unit;
	unsigned order;

	report_metric_describe(s, device, m->name, &label, &unit, &order);
	m->label = strdup(label);
	m->unit = strdup(unit);
	m->percent = m->unit && strcmp(m->unit, "%") == 0;
	return m->label && m->unit;
}

const struct report_metric *report_metric(struct report_section *rs, const struct tally_record *r)
{
	struct report_metrics *c = rs->metrics;
	uint64_t key = (uint64_t)r->device_id << 32 | r->name_id;
	struct metric_entry *e;
	uint32_t found;

	if (c && c->last && c->v[c->last - 1].key == key)
		return &c->v[c->last - 1].m;
	if (!c && !(c = rs->metrics = calloc(1, sizeof(*c))))
		return NULL;
	if ((found = tally_map_get(&c->at, key, 0)))
		return &c->v[(c->last = found) - 1].m;
	if (c->n >= UINT32_MAX - 1 || !tally_grow_in(&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
		return NULL;
	e = &c->v[c->n];
	e->m.name = strdup(report_string(rs, r->name_id));
	e->m.device = r->device_id;
	if (!e->m.name || !describe(rs->s, r->device_id, &e->m) ||
	    tally_map_put(&c->at, key, 0, (uint32_t)c->n + 1) < 0) {
		free(e->m.name);
		free(e->m.label);
		free(e->m.unit);
		memset(e, 0, sizeof(*e));
		return NULL;
	}
	e->key = key;
	e->m.index = (uint32_t)c->n++;
	c->last = c->n;
	return &e->m;
}

void report_metrics_free(struct report_metrics *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++) {
		free(c->v[i].m.name);
		free(c->v[i].m.label);
		free(c->v[i].m.unit);
	}
	free(c->v);
	tally_map_fini(&c->at);
	free(c);
}
