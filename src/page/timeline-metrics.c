/* SPDX-License-Identifier: MIT */
/*
 * The page's GPU metric curves (docs/report.md, "GPU busy and metrics"): each metric of each
 * sampled device as the mean of its samples per time step, at the resolution of the busy curves
 * above them (the timeline's buckets, halved until there are at most 1000), fed during the second
 * pass by the same summary as tally stats -r gpu_metrics_sum (metricsum.h), so that the page holds
 * a fixed number of points per metric whatever the number of samples.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "metricsum.h"
#include "timeline.h"

#define CURVE_POINTS 1000 /* as the page's busy curves (report.js, POINTS) */

int timeline_metrics_prepare(struct timeline *tl)
{
	unsigned nb = tl->nbuckets, k = 0;

	while ((nb >> k) > CURVE_POINTS)
		k++;
	nb = (nb + (1u << k) - 1) >> k;
	tl->metric_bucket_ns = tl->bucket_ns * (double)(1u << k);
	tl->metrics = gm_new(tl->t0, tl->metric_bucket_ns, nb);
	return tl->metrics ? 0 : -ENOMEM;
}

int timeline_metrics_finish(struct timeline *tl)
{
	return tl->metrics ? gm_finish(tl->metrics) : 0;
}

/* A value rounded to 4 significant digits: the page draws them, it does not compute with them. */
static void point(struct tally_json *j, double v)
{
	char buf[32];

	if (!isfinite(v)) {
		tally_json_null(j);
		return;
	}
	snprintf(buf, sizeof(buf), "%.4g", v);
	tally_json_double(j, strtod(buf, NULL));
}

static void curve(struct tally_json *j, const struct timeline *tl, const struct gm_series_view *v,
		  const double *mean, size_t nb)
{
	size_t b;

	tally_json_object_begin(j);
	tally_json_field_uint(j, "sec", v->section);
	tally_json_field_uint(j, "device", v->device);
	tally_json_field_int(j, "lane",
			     timeline_find_lane(tl, v->section, TL_LANE_DEVICE, v->device, 0));
	tally_json_field_string(j, "label", v->label);
	tally_json_field_string(j, "unit", v->unit);
	tally_json_field_string(j, "name", v->name);
	tally_json_field_double(j, "mean", v->mean);
	tally_json_field_double(j, "max", v->max);
	tally_json_name(j, "values");
	tally_json_array_begin(j);
	for (b = 0; b < nb; b++)
		point(j, mean[b]);
	tally_json_array_end(j);
	tally_json_object_end(j);
}

/* "metrics": {"bucket_ns": W, "kept": K, "left_out": N, "curves": [{sec, device, lane, label,
 * unit, name, mean, max, values}]} */
void timeline_metrics_json(const struct timeline *tl, struct tally_json *j)
{
	const struct gm_series_view *v;
	const double *mean;
	size_t i, nb;

	tally_json_name(j, "metrics");
	tally_json_object_begin(j);
	tally_json_field_double(j, "bucket_ns", tl->metric_bucket_ns);
	/* the series past the page's budget of curves, with none */
	tally_json_field_uint(j, "kept", GM_CURVES_MAX);
	tally_json_field_uint(j, "left_out", tl->metrics ? gm_curves_left_out(tl->metrics) : 0);
	tally_json_name(j, "curves");
	tally_json_array_begin(j);
	for (i = 0; tl->metrics && (v = gm_curve(tl->metrics, i, &mean, &nb)); i++)
		curve(j, tl, v, mean, nb);
	tally_json_array_end(j);
	tally_json_object_end(j);
}
