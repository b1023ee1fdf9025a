/* SPDX-License-Identifier: MIT */
/*
 * tally export's driver and its table of formats (after uftrace's dump ops): each format is a
 * struct exporter found by name, and all of them are fed by the same streaming pass.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "outfile.h"

const struct exporter *const export_formats[] = {&export_chrome,
#ifdef TALLY_HAVE_PROTOBUF_C
						 &export_perfetto,
#endif
						 &export_sqlite,   &export_csv,
						 &export_kineto,   NULL};

const struct exporter *export_find(const char *name)
{
	size_t i;

	for (i = 0; export_formats[i]; i++)
		if (strcmp(export_formats[i]->name, name) == 0)
			return export_formats[i];
	return NULL;
}

/* The format an output's name asks for, when --format is not given: files only (a directory
 * could be csv or kineto, and standard output anything). */
static const struct {
	const char *ext, *format;
} by_extension[] = {
    {".json", "chrome"},   {".pftrace", "perfetto"}, {".perfetto-trace", "perfetto"},
    {".sqlite", "sqlite"}, {".sqlite3", "sqlite"},   {".db", "sqlite"},
};

const struct exporter *export_for_output(const char *path)
{
	size_t i, n = strlen(path), e;

	for (i = 0; i < sizeof(by_extension) / sizeof(by_extension[0]); i++) {
		e = strlen(by_extension[i].ext);
		if (n > e && strcmp(path + n - e, by_extension[i].ext) == 0)
			return export_find(by_extension[i].format);
	}
	return NULL;
}

int report_export_check(const struct exporter *e, const struct export_opts *o, char *err,
			size_t errlen)
{
	if (e->check)
		return e->check(o, err, errlen);
	if (strcmp(o->output, "-") == 0)
		return 0; /* standard output: the format says whether it takes it */
	return outfile_check(o->output, o->force ? OUTFILE_FORCE : 0, err, errlen);
}

int report_export(const struct exporter *e, struct report_set *set, const struct export_opts *o,
		  void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		  struct export_stats *st, char *err, size_t errlen)
{
	struct report_scan_ops ops;
	void *state = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if (errlen)
		err[0] = '\0';
	rc = e->open(&state, set, o, err, errlen);
	if (rc)
		return rc;
	ops = *e->scan;
	ops.ctx = state;
	ops.progress = progress;
	ops.pctx = pctx;
	rc = report_scan(set, &ops, err, errlen);
	if (rc == 0)
		rc = e->finish(state, set, st, err, errlen);
	st->records = set->records;
	e->destroy(state, rc != 0);
	if (rc && errlen && !err[0])
		snprintf(err, errlen, "%s: %s", o->output, strerror(rc < 0 ? -rc : EIO));
	return rc;
}
