/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for what reads traces for people: any bytes, as a file, through tally stats (every
 * report, table and JSON), every export format, the HTML report and merge, without a crash, a
 * hang, a leak or undefined behaviour.  The reader's own target (fuzz-reader.c) covers the format
 * underneath.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "export.h"
#include "merge.h"
#include "page.h"
#include "stats.h"
#include "trace-set.h"

static char dir[] = "/tmp/tally-fuzz-report-XXXXXX";

static void stats(char *path, FILE *sink)
{
	struct stats_request req = {.reports = ~0u};
	struct report_scan_ops ops;
	struct report_set set;
	struct stats *st;
	char err[512];

	if (report_set_open(&set, &path, 1, err, sizeof(err)) < 0)
		return;
	report_set_find_base(&set);
	st = stats_new(&req);
	if (st) {
		stats_scan_ops(st, &ops);
		if (report_scan(&set, &ops, err, sizeof(err)) == 0 && stats_finish(st, &set) == 0) {
			stats_write(st, &set, sink, REPORT_FMT_TABLE);
			stats_write(st, &set, sink, REPORT_FMT_JSON);
		}
		stats_free(st);
	}
	report_set_close(&set);
}

static void exports(char *path)
{
	struct export_stats es;
	struct merge_result res;
	struct report_set set;
	char out[256], err[512];
	size_t i;

	for (i = 0; export_formats[i]; i++) {
		struct export_opts o = {.output = out, .force = true};

		snprintf(out, sizeof(out), "%s/out.%s", dir, export_formats[i]->name);
		if (report_set_open(&set, &path, 1, err, sizeof(err)) < 0)
			return;
		report_set_find_base(&set);
		(void)report_export(export_formats[i], &set, &o, NULL, NULL, &es, err, sizeof(err));
		report_set_close(&set);
	}
	{
		/* the HTML report: two passes, buckets, gaps, the page; few buckets keep it quick
		 */
		struct report_html_opts ho = {
		    .output = out, .force = true, .buckets = 256, .exact_budget = 1000};
		struct report_html_result hr;

		snprintf(out, sizeof(out), "%s/out.html", dir);
		(void)report_html(&path, 1, &ho, NULL, NULL, &hr, err, sizeof(err));
	}
	snprintf(out, sizeof(out), "%s/merged.tally", dir);
	if (report_set_open(&set, &path, 1, err, sizeof(err)) == 0) {
		(void)report_merge(&set, out, true, NULL, NULL, &res, err, sizeof(err));
		report_set_close(&set);
	}
}

/* The file against itself, every stretch (a range named as testsrc names them). */
static void compare(char *path, FILE *sink)
{
	static const enum compare_stretch stretches[] = {COMPARE_WHOLE, COMPARE_RANGE,
							 COMPARE_CAPTURE};
	struct compare_result *r;
	struct compare_opts o;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(stretches) / sizeof(stretches[0]); i++) {
		compare_opts_default(&o);
		o.stretch = stretches[i];
		o.range_name = "step";
		o.max_edits = 16;
		if (compare_run(&path, 1, &path, 1, &o, &r, err, sizeof(err)) < 0)
			continue;
		compare_write(r, sink, REPORT_FMT_TABLE);
		compare_write(r, sink, REPORT_FMT_JSON);
		compare_free(r);
	}
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_dir(void)
{
	nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int made;
	char path[300];
	FILE *sink;
	int fd;

	if (!made) {
		if (!mkdtemp(dir))
			return 0;
		atexit(remove_dir);
		made = 1;
	}
	snprintf(path, sizeof(path), "%s/in.tally", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		sink = fopen("/dev/null", "w");
		if (sink) {
			stats(path, sink);
			compare(path, sink);
			fclose(sink);
		}
		exports(path);
	}
	close(fd);
	return 0;
}
