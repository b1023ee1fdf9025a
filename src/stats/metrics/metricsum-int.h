/* SPDX-License-Identifier: MIT */
/* Internals shared by the GPU metrics' summary (metricsum.c) and their second pass
 * (metricwin.c). */
#ifndef TALLY_STATS_METRICSUM_INT_H
#define TALLY_STATS_METRICSUM_INT_H

#include "hashmap.h"
#include "metricsum.h"
#include "wsketch.h"

/*
 * Value x time and time, summed: exact (128 and 64 bits) while they fit, in long double always.
 * A crafted trace may make samples overlap for more than 2^64 ns or value x time pass 2^127; the
 * mean is then the long double one, never a sum that wrapped.
 */
struct gm_wsum {
	__int128 sum; /* value x ns, scaled units */
	uint64_t w;   /* ns; stops at UINT64_MAX */
	long double lsum, lw;
	bool inexact; /* sum or w did not fit: the long doubles hold */
};

void gm_wsum_add(struct gm_wsum *x, int64_t v, uint64_t d);
void gm_wsum_merge(struct gm_wsum *x, const struct gm_wsum *o);
/* The weighted mean (scaled units); 0 with no weight. */
long double gm_wsum_mean(const struct gm_wsum *x);

/* One metric of one device of one section. */
struct gm_series {
	unsigned section;
	uint32_t device, name_id;
	uint32_t dev;		   /* its device's index in gm.devs */
	char *name, *label, *unit; /* owned */
	unsigned scale;		   /* of the values below: value = x / 10^scale */
	unsigned order;		   /* place in the device's metric set; UINT32_MAX unknown */
	bool percent, above_exact; /* above_ns counted as samples came (the unit known then) */
	bool sm_active;		   /* GM_SM_ACTIVE: a metric a gap keeps */
	bool gr_active;		   /* GM_GR_ACTIVE: the other one */
	uint64_t samples, merged, after_gap, above_ns;
	uint64_t first_ns, last_ns;
	struct gm_wsum sum; /* value x duration, and the time the samples cover */
	struct wsketch sk;
	double *csum, *cw; /* curve: value x ns and ns per bucket */
	/* second pass */
	struct gm_wsum busy;
};

/* What a section says of one of its devices (GPU_METRICS chunk, DEVICE chunk). */
struct gm_device {
	unsigned section;
	uint32_t device;
	unsigned state; /* enum tally_gpu_metrics_state; 0: no chunk */
	uint8_t uuid[16];
	bool has_uuid;
	uint64_t interval_ns; /* the sampling interval, when the trigger is a time */
	char *why;	      /* a device row's text (owned), NULL for a sampled device */
	uint32_t *series;     /* its series (indexes into gm.s) */
	size_t nseries, scap;
	/* after gm_finish */
	bool sampled;	     /* a series of it has samples */
	uint64_t mean_len;   /* the longest of its series' mean sample lengths (ns) */
	uint32_t next_same;  /* the next device of the same GPU (UUID): index + 1, 0 none */
	uint32_t first_same; /* the first of them: index + 1, 0 none (no UUID) */
};

/* Per section: (device, name id) -> series index + 1, and the last one found; its devices. */
struct gm_sec {
	struct tally_map series;
	uint64_t last_key;
	uint32_t last_val;
	bool ended;
	uint32_t *devs; /* indexes into gm.devs */
	size_t ndevs, dcap;
};

/* An NVTX range kept for gpu_metrics_nvtx_sum (pass 1). */
struct gm_range {
	uint64_t t0, t1;	/* aligned */
	uint32_t section, name; /* name: index into gm.range_names */
};

struct gm_name {
	char *s;
	uint64_t instances, ns;
	unsigned rank; /* place by total time, among the GM_NVTX_GROUPS chosen */
};

struct gm {
	struct gm_series *s;
	size_t n, cap;
	struct gm_sec *secs;
	size_t nsecs;
	struct gm_device *devs;
	size_t ndevs, dcap;
	struct tally_map devmap; /* (section, device) -> devs index + 1 */
	uint64_t records;
	/* curves */
	uint64_t t0;
	double bucket_ns;
	unsigned nb;
	size_t ncurves, curves_left_out; /* series with a curve, and those past GM_CURVES_MAX */
	size_t curve_i, curve_k;	 /* gm_curve's last answer: the i-th curve, row k */
	/* after gm_finish */
	struct gm_series_view *rows;
	size_t nrows;
	struct gm_series **curve_of; /* row index -> series, NULL for a device row */
	/* NVTX ranges (pass 1), their names, the rows (pass 2) */
	struct gm_range *ranges;
	size_t nranges, rcap;
	struct gm_name *names;
	size_t nnames, ncap;
	struct tally_map name_at; /* a name's hash -> its index in names + 1 */
	struct gm_nvtx_view *nvtx;
	size_t nnvtx, nvcap;
	bool failed;
};

/* Look a series up without making it; NULL if none. */
struct gm_series *gm_series_find(struct gm *g, unsigned section, uint32_t device, uint32_t name_id);
/* 10^scale: a series' values are its unit's times this. */
double gm_unit(const struct gm_series *s);
/* A record's value in its series' scale. */
int64_t gm_scaled(const struct gm_series *s, const struct tally_record *r);
/* A series of (section, device) by CUPTI name, or NULL. */
struct gm_series *gm_series_by_name(struct gm *g, unsigned section, uint32_t device,
				    const char *name);
/* A view of s: what it is (section, device, names, unit), every figure 0. */
void gm_view_init(struct gm_series_view *v, const struct gm_series *s);
/* Fill a view's statistics from sums and a sketch. */
void gm_fill_stats(struct gm_series_view *v, const struct gm_series *s, const struct gm_wsum *sum,
		   uint64_t samples, const struct wsketch *sk);
/* The device entry of (section, device), or NULL. */
struct gm_device *gm_device_of(const struct gm *g, unsigned section, uint32_t device);
/* The first device entry of the same GPU as d (by UUID; d itself among them), or NULL; the next
 * is gm_same_gpu_next(). */
const struct gm_device *gm_same_gpu(const struct gm *g, const struct gm_device *d);
static inline const struct gm_device *gm_same_gpu_next(const struct gm *g,
						       const struct gm_device *d)
{
	return d->next_same ? &g->devs[d->next_same - 1] : NULL;
}

#endif
