/* SPDX-License-Identifier: MIT */
/*
 * What every rule of the diagnosis shares (diagnosis-int.h): a finding added to the list, a
 * section and who it is, a time and a share.  Below both diagnosis.c (the table of rules) and
 * diagnosis-steps.c (the step rules it calls), so that the rules call down into it and never back
 * into the table that calls them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "diagnosis-int.h"

struct report_section *diag_sec(const struct diag_input *in, unsigned i)
{
	return i < in->set->nsections ? in->set->sections[i] : NULL;
}

/* "RANK=3 (pid 4242 on node7)", or "pid 4242 on node7" */
const char *diag_who(const struct diag_input *in, unsigned i, char *buf, size_t len)
{
	const struct report_section *rs = diag_sec(in, i);

	if (!rs)
		snprintf(buf, len, "section %u", i);
	else if (rs->s->rank)
		snprintf(buf, len, "%s (pid %" PRIu64 " on %s)", rs->s->rank, rs->s->pid,
			 rs->s->host ? rs->s->host : "?");
	else
		snprintf(buf, len, "pid %" PRIu64 " on %s", rs->s->pid,
			 rs->s->host ? rs->s->host : "?");
	return buf;
}

/* Seconds since the one time origin of every output (stats_time_base), for "where" lines. */
double diag_at_s(const struct diag_input *in, uint64_t t)
{
	return t >= in->base ? (double)(t - in->base) / 1e9 : -(double)(in->base - t) / 1e9;
}

struct diag_finding *diag_add(struct diag_finding *out, size_t *n, size_t cap, const char *rule)
{
	if (*n >= cap)
		return NULL;
	memset(&out[*n], 0, sizeof(out[*n]));
	out[*n].rule = rule;
	out[*n].order = 2;
	out[*n].step_share = -1;
	return &out[(*n)++];
}

double diag_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}
