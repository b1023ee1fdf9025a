/* SPDX-License-Identifier: MIT */
/* Which traces belong together; see jobs.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "jobs.h"
#include "text.h"

struct node {
	unsigned parent;
	const char *job, *step, *run; /* the group's ids, where any member has one */
};

static unsigned root(struct node *n, unsigned i)
{
	while (n[i].parent != i)
		i = n[i].parent = n[n[i].parent].parent;
	return i;
}

/* Two values of one id disagree: both said, and not the same. */
static bool differ(const char *a, const char *b)
{
	return a && b && strcmp(a, b) != 0;
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool conflict(const struct node *a, const struct node *b)
{
	return differ(a->job, b->job) || (same(a->job, b->job) && differ(a->step, b->step)) ||
	       differ(a->run, b->run);
}

/* Join the groups of i and j unless their ids disagree. */
static void join(struct node *n, unsigned i, unsigned j)
{
	unsigned a = root(n, i), b = root(n, j);

	if (a == b || conflict(&n[a], &n[b]))
		return;
	n[b].parent = a;
	n[a].job = n[a].job ? n[a].job : n[b].job;
	n[a].step = n[a].step ? n[a].step : n[b].step;
	n[a].run = n[a].run ? n[a].run : n[b].run;
}

/* CLOCK_REALTIME of the start and end of a section's recording. */
static void span_of(const struct tally_section *s, uint64_t *start, uint64_t *end)
{
	uint64_t last = s->ledger.t_end > s->t_max ? s->ledger.t_end : s->t_max;

	*start = s->start_realtime;
	*end = s->start_realtime + (last > s->start_cupti ? last - s->start_cupti : 0);
}

static bool overlap(const struct tally_section *a, const struct tally_section *b)
{
	uint64_t a0, a1, b0, b1;

	span_of(a, &a0, &a1);
	span_of(b, &b0, &b1);
	if (!a0 || !b0) /* no real time: cannot tell apart */
		return true;
	return a0 <= b1 + JOBS_SLACK_NS && b0 <= a1 + JOBS_SLACK_NS;
}

static bool child_of(const struct tally_section *c, const struct tally_section *p)
{
	return c->has_parent && p->has_session_id &&
	       memcmp(c->parent_id, p->session_id, sizeof(c->parent_id)) == 0;
}

static void link_all(const struct report_set *set, struct node *n)
{
	size_t i, j, ns = set->nsections;

	/* first what the ids and fork links say, then time, so that time never joins groups the
	 * ids keep apart */
	for (i = 0; i < ns; i++)
		for (j = i + 1; j < ns; j++) {
			const struct tally_section *a = set->sections[i]->s,
						   *b = set->sections[j]->s;

			if ((same(a->job, b->job) && !differ(a->job_step, b->job_step)) ||
			    same(a->run_id, b->run_id) || child_of(a, b) || child_of(b, a))
				join(n, (unsigned)i, (unsigned)j);
		}
	for (i = 0; i < ns; i++)
		for (j = i + 1; j < ns; j++)
			if (overlap(set->sections[i]->s, set->sections[j]->s))
				join(n, (unsigned)i, (unsigned)j);
}

static char *keep(struct report_jobs *j, char *s)
{
	char **t;

	if (!s)
		return NULL;
	if (!(t = tally_array_push(&j->owned, &j->nowned, sizeof(*t)))) {
		free(s);
		return NULL;
	}
	return *t = s;
}

static void describe(struct report_jobs *j, struct report_job *job, const struct node *n)
{
	char buf[300];

	if (n->job || n->run) {
		snprintf(buf, sizeof(buf), "%s%s%s%s%s", n->job ? n->job : "",
			 n->job && n->step ? " " : "", n->job && n->step ? n->step : "",
			 n->job && n->run ? " " : "", n->run ? n->run : "");
		job->key = keep(j, tally_text_printable(buf));
	}
}

static void count_ranks(const struct report_set *set, const struct report_jobs *j, size_t g,
			struct report_job *job)
{
	size_t i, k;

	job->world_size = -1;
	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;
		bool seen = false;

		if (j->job_of[i] != g)
			continue;
		if (s->world_size && strchr(s->world_size, '='))
			job->world_size = strtol(strchr(s->world_size, '=') + 1, NULL, 10);
		for (k = 0; k < i && s->rank && !seen; k++)
			seen = j->job_of[k] == g && set->sections[k]->s->rank &&
			       strcmp(set->sections[k]->s->rank, s->rank) == 0;
		job->ranks += s->rank && !seen;
	}
}

static void fill(const struct report_set *set, struct report_jobs *j, struct node *n)
{
	size_t i;

	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;
		unsigned r = root(n, (unsigned)i), g;
		struct report_job *job;
		uint64_t t0, t1;

		for (g = 0; g < j->njobs && root(n, j->jobs[g].first) != r; g++)
			;
		job = &j->jobs[g];
		if (g == j->njobs) {
			j->njobs++;
			*job = (struct report_job){.first = (unsigned)i, .start = UINT64_MAX};
			describe(j, job, &n[r]);
			job->hosts = keep(j, tally_text_printable(s->host ? s->host : "?"));
			job->hosts = job->hosts ? job->hosts : "?";
		} else if (!job->many_hosts && s->host && set->sections[job->first]->s->host &&
			   strcmp(s->host, set->sections[job->first]->s->host) != 0) {
			char buf[300];

			job->many_hosts = true;
			snprintf(buf, sizeof(buf), "%s and others", job->hosts);
			job->hosts = keep(j, strdup(buf)) ? j->owned[j->nowned - 1] : job->hosts;
		}
		j->job_of[i] = g;
		job->nsections++;
		span_of(s, &t0, &t1);
		job->start = t0 && t0 < job->start ? t0 : job->start;
		job->end = t1 > job->end ? t1 : job->end;
	}
	for (i = 0; i < j->njobs; i++) {
		count_ranks(set, j, i, &j->jobs[i]);
		if (j->jobs[i].start == UINT64_MAX) /* no section said when it started */
			j->jobs[i].start = 0;
	}
}

int report_jobs_group(const struct report_set *set, struct report_jobs *out)
{
	size_t ns = set->nsections, i;
	struct node *n = calloc(ns ? ns : 1, sizeof(*n));

	memset(out, 0, sizeof(*out));
	out->jobs = calloc(ns ? ns : 1, sizeof(*out->jobs));
	out->job_of = calloc(ns ? ns : 1, sizeof(*out->job_of));
	if (!n || !out->jobs || !out->job_of) {
		free(n);
		report_jobs_free(out);
		return -ENOMEM;
	}
	out->nsections = ns;
	for (i = 0; i < ns; i++) {
		const struct tally_section *s = set->sections[i]->s;

		n[i] = (struct node){(unsigned)i, s->job, s->job_step, s->run_id};
	}
	link_all(set, n);
	fill(set, out, n);
	free(n);
	return 0;
}

void report_jobs_free(struct report_jobs *j)
{
	size_t i;

	for (i = 0; i < j->nowned; i++)
		free(j->owned[i]);
	free(j->owned);
	free(j->jobs);
	free(j->job_of);
	memset(j, 0, sizeof(*j));
}

static const char *utc(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
	return buf;
}

void report_jobs_print(const struct report_jobs *j, FILE *out, const char *prefix)
{
	char a[40], b[40];
	size_t i;

	for (i = 0; i < j->njobs; i++) {
		const struct report_job *job = &j->jobs[i];

		fprintf(out, "%sjob %zu: %s%s%s to %s, %zu process(es), %u rank(s), host %s\n",
			prefix, i + 1, job->key ? job->key : "", job->key ? ", " : "",
			utc(job->start, a, sizeof(a)), utc(job->end, b, sizeof(b)), job->nsections,
			job->ranks, job->hosts);
	}
}

const char *report_job_missing(const struct report_job *job, char *buf, size_t len)
{
	if (job->world_size <= 0 || job->ranks >= (unsigned long)job->world_size)
		return NULL;
	snprintf(buf, len, "%u of %ld ranks", job->ranks, job->world_size);
	return buf;
}
