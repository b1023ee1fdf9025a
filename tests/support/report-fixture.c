/* SPDX-License-Identifier: MIT */
/* The report layer run the way the commands run it, for unit tests (report-fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report-fixture.h"

struct stats *fixture_stats(char **paths, size_t n, uint32_t reports, struct report_set *set)
{
	struct stats_request req = {.reports = reports};
	struct report_scan_ops ops;
	struct stats *st;
	char err[512];

	if (report_set_open(set, paths, n, err, sizeof(err)) != 0)
		fail_msg("open: %s", err);
	report_set_find_base(set);
	st = stats_new(&req);
	assert_non_null(st);
	stats_scan_ops(st, &ops);
	if (report_scan(set, &ops, err, sizeof(err)) != 0)
		fail_msg("scan: %s", err);
	assert_int_equal(stats_finish(st, set), 0);
	return st;
}

void fixture_export(const struct exporter *e, const char *path, const char *out)
{
	struct export_opts o = {.output = out, .force = true};
	char *paths[1] = {(char *)path}, err[512];
	struct report_set set = {0};
	struct export_stats es;

	if (report_set_open(&set, paths, 1, err, sizeof(err)) != 0)
		fail_msg("open: %s", err);
	report_set_find_base(&set);
	if (report_export(e, &set, &o, NULL, NULL, &es, err, sizeof(err)) != 0)
		fail_msg("export -f %s: %s", e->name, err);
	report_set_close(&set);
}

json_t *fixture_chrome(const char *path, const char *out)
{
	json_error_t jerr;
	json_t *root;

	fixture_export(&export_chrome, path, out);
	root = json_load_file(out, 0, &jerr);
	if (!root)
		fail_msg("Chrome JSON does not parse: %s (line %d col %d)", jerr.text, jerr.line,
			 jerr.column);
	return root;
}
