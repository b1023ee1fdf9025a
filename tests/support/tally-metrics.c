/* SPDX-License-Identifier: MIT */
/*
 * tally-metrics FILE: the GPU_METRIC records of a trace summed up as JSON, for the tests (until
 * `tally stats -r gpu_metrics_sum` exists): per device and metric the sample count, mean, min,
 * max and the time the samples cover; and the mean of each metric inside every NVTX range (a
 * sample counts for a range when its midpoint lies in it).  Two passes: ranges, then samples.
 *
 *   {"devices": {"0": {"metrics": {NAME: {"n", "mean", "min", "max", "scale",
 *                                         "first_start", "last_end", "covered_ns",
 *                                         "after_gap", "merged", "first_number", "last_number"}}}},
 *    "ranges": [{"name", "start", "end", "devices": {"0": {NAME: {"n", "mean"}}}}]}
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

#define MAX_STATS  (64 * 64)
#define MAX_RANGES 256

struct stat {
	uint32_t device;
	char name[192];
	unsigned scale;
	uint64_t n, after_gap, merged, covered, first_start, last_end;
	uint32_t first_number, last_number;
	double sum, min, max;
};

struct range {
	char name[64];
	uint64_t start, end;
	struct stat *stats; /* [MAX_STATS], n and sum only */
	size_t nstats;
};

static struct stat stats[MAX_STATS];
static size_t nstats;
static struct range ranges[MAX_RANGES];
static size_t nranges;

static double scaled(const struct tally_record *r)
{
	double v = (double)r->metric_value;
	unsigned i;

	for (i = 0; i < r->subkind && i < 18; i++)
		v /= 10.0;
	return v;
}

static struct stat *find(struct stat *arr, size_t *n, uint32_t device, const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (arr[i].device == device && strcmp(arr[i].name, name) == 0)
			return &arr[i];
	if (*n == MAX_STATS)
		return NULL;
	memset(&arr[*n], 0, sizeof(arr[*n]));
	arr[*n].device = device;
	snprintf(arr[*n].name, sizeof(arr[*n].name), "%s", name);
	return &arr[(*n)++];
}

static int take_ranges(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n && nranges < MAX_RANGES; i++) {
		const char *name = tally_section_string(s, r[i].name_id);

		if (r[i].kind != TALLY_KIND_NVTX_RANGE || !name)
			continue;
		snprintf(ranges[nranges].name, sizeof(ranges[0].name), "%s", name);
		for (char *c = ranges[nranges].name; *c; c++) /* JSON-safe, as tests name them */
			if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
				*c = '_';
		ranges[nranges].start = r[i].start;
		ranges[nranges].end = r[i].end;
		ranges[nranges].stats = calloc(MAX_STATS, sizeof(struct stat));
		if (!ranges[nranges].stats)
			return 1;
		nranges++;
	}
	return 0;
}

static void add(struct stat *st, const struct tally_record *r, double v)
{
	if (!st->n || v < st->min)
		st->min = v;
	if (!st->n || v > st->max)
		st->max = v;
	if (!st->n || r->start < st->first_start)
		st->first_start = r->start;
	if (r->end > st->last_end)
		st->last_end = r->end;
	if (!st->n || r->correlation_id < st->first_number)
		st->first_number = r->correlation_id;
	if (r->correlation_id > st->last_number)
		st->last_number = r->correlation_id;
	st->n++;
	st->sum += v;
	st->scale = r->subkind;
	st->covered += r->end - r->start;
	st->after_gap += (r->value & TALLY_METRIC_AFTER_GAP) != 0;
	st->merged += (r->value & TALLY_METRIC_MERGED) != 0;
}

static int take_samples(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	size_t i, k;

	(void)ctx;
	for (i = 0; i < n; i++) {
		const char *name = tally_section_string(s, r[i].name_id);
		uint64_t mid = r[i].start / 2 + r[i].end / 2;
		double v;
		struct stat *st;

		if (r[i].kind != TALLY_KIND_GPU_METRIC || !name)
			continue;
		v = scaled(&r[i]);
		if ((st = find(stats, &nstats, r[i].device_id, name)))
			add(st, &r[i], v);
		for (k = 0; k < nranges; k++)
			if (mid >= ranges[k].start && mid <= ranges[k].end &&
			    (st = find(ranges[k].stats, &ranges[k].nstats, r[i].device_id, name))) {
				st->n++;
				st->sum += v;
			}
	}
	return 0;
}

static int read_pass(const char *path,
		     int (*fn)(void *, struct tally_section *, const struct tally_record *, size_t))
{
	struct tally_read_ops ops = {.records = fn};
	struct tally_file *f;
	char err[512];
	int rc;

	if (tally_file_open(&f, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "tally-metrics: %s\n", err);
		return 3;
	}
	rc = tally_file_read(f, &ops);
	tally_file_close(f);
	return rc < 0 ? 3 : rc;
}

/* Devices in order of first appearance, each with its metrics. */
static void print_stats(const struct stat *arr, size_t n, bool full)
{
	size_t i, j;
	bool first_dev = true;

	for (i = 0; i < n; i++) {
		bool seen = false, first = true;

		for (j = 0; j < i && !seen; j++)
			seen = arr[j].device == arr[i].device;
		if (seen)
			continue;
		printf("%s\"%u\": {", first_dev ? "" : ", ", arr[i].device);
		first_dev = false;
		for (j = i; j < n; j++) {
			const struct stat *st = &arr[j];

			if (st->device != arr[i].device)
				continue;
			printf("%s\"%s\": {\"n\": %" PRIu64 ", \"mean\": %.6g", first ? "" : ", ",
			       st->name, st->n, st->n ? st->sum / (double)st->n : 0.0);
			first = false;
			if (full)
				printf(", \"min\": %.6g, \"max\": %.6g, \"scale\": %u, "
				       "\"first_start\": "
				       "%" PRIu64 ", \"last_end\": %" PRIu64
				       ", \"covered_ns\": %" PRIu64 ", \"after_gap\": %" PRIu64
				       ", \"merged\": %" PRIu64
				       ", \"first_number\": %u, \"last_number\": %u",
				       st->min, st->max, st->scale, st->first_start, st->last_end,
				       st->covered, st->after_gap, st->merged, st->first_number,
				       st->last_number);
			printf("}");
		}
		printf("}");
	}
}

int main(int argc, char **argv)
{
	size_t k;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: tally-metrics FILE\n");
		return 2;
	}
	if ((rc = read_pass(argv[1], take_ranges)) || (rc = read_pass(argv[1], take_samples)))
		return rc;
	printf("{\"devices\": {");
	print_stats(stats, nstats, true);
	printf("}, \"ranges\": [");
	for (k = 0; k < nranges; k++) {
		printf("%s{\"name\": \"%s\", \"start\": %" PRIu64 ", \"end\": %" PRIu64
		       ", \"devices\": {",
		       k ? ", " : "", ranges[k].name, ranges[k].start, ranges[k].end);
		print_stats(ranges[k].stats, ranges[k].nstats, false);
		printf("}}");
	}
	printf("]}\n");
	return 0;
}
