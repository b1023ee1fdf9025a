/* SPDX-License-Identifier: MIT */
/*
 * What the model answers once the pass is done (stats.h): the analyses' rows, the jobs, the time
 * origin, a group of a report.  Read-only, over struct stats; below the pass (stats.c), the report
 * table (model.c) and the views, which all read through it and never call the pass back.
 */
#include <stdio.h>

#include "stats-int.h"

const struct gm *stats_gpu_metrics(const struct stats *st)
{
	return st->gm;
}

uint64_t stats_untimed(const struct stats *st)
{
	return st->untimed;
}

const struct bd_row *stats_breakdown(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->bd ? breakdown_rows(st->bd, n) : NULL;
}

const struct spread_row *stats_spread(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->spread ? spread_rows(st->spread, n) : NULL;
}

const struct bound_row *stats_bound(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->bound ? bound_rows(st->bound, n) : NULL;
}

const struct report_gap *stats_gaps(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->gaps ? report_gpu_gaps_list(st->gaps, n) : NULL;
}

const struct qseries *stats_queues(const struct stats *st, size_t *n)
{
	*n = 0;
	return st->queues ? queues_list(st->queues, n) : NULL;
}

const struct mem_usage *stats_mem_usage(const struct stats *st)
{
	return st->mem ? &st->mem_usage : NULL;
}

const struct report_jobs *stats_jobs(const struct stats *st)
{
	return &st->jobs;
}

void stats_jobs_warning(const struct stats *st, FILE *out, const char *prefix)
{
	char buf[80];
	size_t i;

	if (st->jobs.njobs > 1) {
		fprintf(
		    out,
		    "%stally: WARNING: these traces are of %zu different jobs, not the ranks of "
		    "one: reports that compare ranks compare unrelated runs\n",
		    prefix, st->jobs.njobs);
		snprintf(buf, sizeof(buf), "%stally:   ", prefix);
		report_jobs_print(&st->jobs, out, buf);
	}
	for (i = 0; i < st->jobs.njobs; i++)
		if (report_job_missing(&st->jobs.jobs[i], buf, sizeof(buf)))
			fprintf(out, "%stally: job %zu: only %s are here\n", prefix, i + 1, buf);
}

uint64_t stats_time_base(const struct stats *st)
{
	return st->base;
}

const char *stats_time_origin(const struct stats *st)
{
	if (st->set && st->set->base && st->base == st->set->base)
		return "the session started";
	return st->set && st->set->base ? "the first record (it came before any session start)"
					: "the first record (no session start is recorded)";
}

const char *stats_error(const struct stats *st)
{
	return st->err[0] ? st->err : NULL;
}

const struct stats_group_view *stats_group(const struct stats *st, unsigned report, size_t i)
{
	if (report >= R_COUNT || i >= st->t[report].n || !st->t[report].order)
		return NULL;
	return &st->t[report].order[i]->view;
}
