/* SPDX-License-Identifier: MIT */
/* The metric sets; see metricset.h. */
#include "metricset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCT(n, l)                                                                                  \
	{                                                                                          \
		n, l, "%", 3                                                                       \
	}
#define RATE(n, l)                                                                                 \
	{                                                                                          \
		n, l, "bytes/s", 0                                                                 \
	}

/*
 * Seen on an H200 (tests/gpu/pm-probe.cu): all but NVLink's fit one pass together; NVLink's
 * metrics fail to add on a GPU without NVLink peers.  tpc__warps_active_realtime (nsys's
 * "Compute Warps in Flight") does not add on GH100, hence sm__warps_active_realtime.
 */
const struct pm_metric pm_default_set[] = {
    PCT("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SM Active"),
    PCT("sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "SM Issue"),
    PCT("sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
	"Tensor Active"),
    PCT("sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed", "Warp Occupancy"),
    PCT("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput"),
    RATE("dram__bytes_read.sum.per_second", "DRAM Read"),
    RATE("dram__bytes_write.sum.per_second", "DRAM Write"),
    RATE("pcie__read_bytes.sum.per_second", "PCIe Read"),
    RATE("pcie__write_bytes.sum.per_second", "PCIe Write"),
    RATE("nvlrx__bytes.sum.per_second", "NVLink RX"),
    RATE("nvltx__bytes.sum.per_second", "NVLink TX"),
    PCT("gr__cycles_active.avg.pct_of_peak_sustained_elapsed", "GR Active"),
    {"gpc__cycles_elapsed.avg.per_second", "GPC Clock", "Hz", 0},
    PCT("tpc__warps_inactive_sm_active_realtime.avg.pct_of_peak_sustained_elapsed",
	"Unallocated Warps in Active SMs"),
};
const size_t pm_default_count = sizeof(pm_default_set) / sizeof(pm_default_set[0]);

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Unit and scale from the name's rollup and suffix, for metrics outside the default set. */
static const struct {
	const char *has, *tail;
	const char *unit;
	unsigned scale;
} guesses[] = {
    {"pct_of_peak", "", "%", 3},
    {"", ".pct", "%", 3},
    {"", ".ratio", "", 3},
    {"bytes", ".per_second", "bytes/s", 0},
    {"cycles", ".per_second", "Hz", 0},
    {"", ".per_second", "/s", 3},
    {"", "", "", 3},
};

void pm_metric_describe(const char *name, struct pm_metric *out)
{
	size_t i;

	for (i = 0; i < pm_default_count; i++)
		if (strcmp(name, pm_default_set[i].name) == 0) {
			*out = pm_default_set[i];
			return;
		}
	for (i = 0; !(strstr(name, guesses[i].has) && ends_with(name, guesses[i].tail)); i++)
		;
	*out = (struct pm_metric){name, name, guesses[i].unit, guesses[i].scale};
}

/* CUPTI's metric names: letters, digits, '_' and '.'. */
static bool name_ok(const char *p, size_t n)
{
	size_t i;

	if (!n || n > PM_METRIC_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '.'))
			return false;
	return true;
}

static bool listed(const struct pm_metric *out, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(out[i].name, name) == 0)
			return true;
	return false;
}

struct list_state {
	struct pm_metric *out;
	size_t n, max;
	char *store;
	size_t used, cap;
};

/* Append name (already in store, or the default set's own) unless listed; false if full. */
static bool add(struct list_state *st, const char *name)
{
	if (listed(st->out, st->n, name))
		return true;
	if (st->n == st->max)
		return false;
	pm_metric_describe(name, &st->out[st->n]);
	st->n++;
	return true;
}

static const char *keep(struct list_state *st, const char *p, size_t n)
{
	char *s;

	if (st->used + n + 1 > st->cap)
		return NULL;
	s = st->store + st->used;
	memcpy(s, p, n);
	s[n] = '\0';
	st->used += n + 1;
	return s;
}

static int add_token(struct list_state *st, const char *p, size_t n, char *why, size_t len)
{
	const char *name;
	size_t i;

	if (n == 7 && strncmp(p, "default", 7) == 0) {
		for (i = 0; i < pm_default_count; i++)
			if (!add(st, pm_default_set[i].name))
				goto full;
		return 0;
	}
	if (!name_ok(p, n)) {
		snprintf(why, len,
			 "'%.*s' is not a metric name (CUPTI's names, such as "
			 "sm__cycles_active.avg.pct_of_peak_sustained_elapsed, or default)",
			 (int)(n > 64 ? 64 : n), p);
		return -EINVAL;
	}
	if (!(name = keep(st, p, n)) || !add(st, name))
		goto full;
	return 0;
full:
	snprintf(why, len, "more than %zu metrics named", st->max);
	return -EINVAL;
}

int pm_metric_list_parse(const char *list, struct pm_metric *out, size_t max, char *store,
			 size_t store_len, char *why, size_t len)
{
	struct list_state st = {out, 0, max, store, 0, store_len};
	const char *p = list;
	int rc;

	for (; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t n = strcspn(p, ",");

		if (n && (rc = add_token(&st, p, n, why, len)) < 0)
			return rc;
	}
	if (!st.n) {
		snprintf(why, len, "no metric named (use default, or CUPTI metric names)");
		return -EINVAL;
	}
	return (int)st.n;
}

int pm_devices_parse(const char *list, uint64_t *mask, char *why, size_t len)
{
	const char *p = list;
	char *end;

	*mask = 0;
	if (!list || !*list || strcmp(list, "all") == 0)
		return 0;
	for (;; p = end + 1) {
		unsigned long id = strtoul(p, &end, 10);

		if (*p < '0' || *p > '9' || (*end && *end != ',') || id >= PM_DEVICES_MAX) {
			snprintf(why, len, "'%.*s' is not a device: use all, or CUDA ordinals 0-63",
				 (int)strcspn(p, ","), p);
			return -EINVAL;
		}
		*mask |= 1ull << id;
		if (!*end)
			return 0;
	}
}
