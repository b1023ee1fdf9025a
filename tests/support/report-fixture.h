/* SPDX-License-Identifier: MIT */
/*
 * The stats and the exports run the way the commands run them, for unit tests (cmocka: a failure
 * fails the test, with the reader's or exporter's message).
 */
#ifndef TALLY_TESTS_REPORT_FIXTURE_H
#define TALLY_TESTS_REPORT_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "export.h"
#include "stats.h"
#include "trace-set.h"

/*
 * Open paths as one set and run the stats reports (a bit per report_find index) over it, as
 * tally stats does.  The caller frees the result (stats_free) and closes set.
 */
struct stats *fixture_stats(char **paths, size_t n, uint32_t reports, struct report_set *set);
/* Export the trace at path to out (replacing it) as tally export -f does. */
void fixture_export(const struct exporter *e, const char *path, const char *out);
/* The Chrome JSON of the trace at path, written to out and parsed back; json_decref it. */
json_t *fixture_chrome(const char *path, const char *out);

#endif
