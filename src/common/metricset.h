/* SPDX-License-Identifier: MIT */
/*
 * Which GPU metrics to sample, shared by `tally record` (which checks what it is given) and the
 * collector's sampler: the default set (docs/collector.md lists it, after Nsight Systems'
 * sets for Hopper) and the lists a user names with --gpu-metrics-set.  Only names, labels, units
 * and decimal scales live here; whether a chip can sample a metric, and whether a set fits the
 * one pass PM sampling allows, is CUPTI's to say (pmsampler.c asks it, metric by metric).
 */
#ifndef TALLY_COLLECTOR_METRICSET_H
#define TALLY_COLLECTOR_METRICSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_METRICS_MAX	   64  /* metrics asked for in one set */
#define PM_METRIC_NAME_MAX 160 /* longest metric name accepted */
#define PM_DEVICES_MAX	   64  /* CUDA ordinals 0-63 */

struct pm_metric {
	const char *name;  /* CUPTI's: sm__cycles_active.avg.pct_of_peak_sustained_elapsed */
	const char *label; /* for displays: "SM Active" */
	const char *unit;  /* "%", "bytes/s", "Hz", "/s", "" */
	unsigned scale;	   /* records hold the value x 10^scale */
};

/* The default set, most wanted first: when a chip cannot fit them all in one pass, the later
 * ones are left out. */
extern const struct pm_metric pm_default_set[];
extern const size_t pm_default_count;

/* A metric by name: the default set's entry when it is one, else a unit and scale read from the
 * name's suffix (pct_of_peak: "%", 3; bytes per_second: "bytes/s", 0; ...), labelled by name. */
void pm_metric_describe(const char *name, struct pm_metric *out);

/*
 * TALLY_GPU_METRICS_SET: "default", or metric names separated by commas ("default" among them
 * stands for the default set there).  Names are copied into store (names point into it); a name
 * is kept once.  Returns the number of metrics, or -EINVAL with why (an empty list, a name with
 * characters CUPTI's names never have, too many or too long).
 */
int pm_metric_list_parse(const char *list, struct pm_metric *out, size_t max, char *store,
			 size_t store_len, char *why, size_t len);

/* --gpu-metrics' device list: "all" (or empty) -> 0, "0,2" -> bits 0 and 2.  -EINVAL with why. */
int pm_devices_parse(const char *list, uint64_t *mask, char *why, size_t len);

#endif
