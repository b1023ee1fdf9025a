/* SPDX-License-Identifier: MIT */
/* Which traces belong together; see jobs.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "hashmap.h"
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

static bool child_of(const struct tally_section *c, const struct tally_section *p)
{
	return c->has_parent && p->has_session_id &&
	       memcmp(c->parent_id, p->session_id, sizeof(c->parent_id)) == 0;
}

static uint64_t hash_text(uint64_t h, const char *t)
{
	while (t && *t)
		h = (h ^ (unsigned char)*t++) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull; /* "a" then "" differs from "" then "a" */
}

/* The first section with key (k0, k1), made the first when none is: the section to join. */
static int first_with(struct tally_map *m, uint64_t k0, uint64_t k1, unsigned i, unsigned *first)
{
	uint32_t v = tally_map_get(m, k0, k1);

	*first = v ? v - 1 : i;
	return v ? 0 : tally_map_put(m, k0, k1, i + 1);
}

/*
 * What the ids and fork links say, in one pass: the sections of one job and step, of one job
 * without a step (with the job's first section), of one launcher run, and a fork child with its
 * parent.  A key is the hash of the text: two texts of one hash are compared before they join.
 */
static int link_ids(const struct report_set *set, struct node *n)
{
	struct tally_map job = {0}, step = {0}, run = {0}, sid = {0};
	size_t i, ns = set->nsections;
	unsigned f;
	int rc = 0;

	for (i = 0; i < ns && rc == 0; i++) {
		const struct tally_section *a = set->sections[i]->s, *b;

		if (a->has_session_id) {
			uint64_t k0, k1;

			memcpy(&k0, a->session_id, 8);
			memcpy(&k1, a->session_id + 8, 8);
			if (!tally_map_get(&sid, k0, k1))
				rc = tally_map_put(&sid, k0, k1, (uint32_t)i + 1);
		}
		if (rc == 0 && a->job) {
			rc = first_with(&job, hash_text(1, a->job), 0, (unsigned)i, &f);
			b = set->sections[f]->s;
			if (rc == 0 && !a->job_step && same(a->job, b->job))
				join(n, f, (unsigned)i);
			if (rc == 0 && a->job_step &&
			    (rc = first_with(&step, hash_text(1, a->job), hash_text(2, a->job_step),
					     (unsigned)i, &f)) == 0 &&
			    same(a->job, set->sections[f]->s->job) &&
			    same(a->job_step, set->sections[f]->s->job_step))
				join(n, f, (unsigned)i);
		}
		if (rc == 0 && a->run_id &&
		    (rc = first_with(&run, hash_text(3, a->run_id), 0, (unsigned)i, &f)) == 0 &&
		    same(a->run_id, set->sections[f]->s->run_id))
			join(n, f, (unsigned)i);
	}
	for (i = 0; i < ns && rc == 0; i++) { /* fork children, once every parent is known */
		const struct tally_section *a = set->sections[i]->s;
		uint64_t k0, k1;
		uint32_t v;

		if (!a->has_parent)
			continue;
		memcpy(&k0, a->parent_id, 8);
		memcpy(&k1, a->parent_id + 8, 8);
		if ((v = tally_map_get(&sid, k0, k1)) && child_of(a, set->sections[v - 1]->s))
			join(n, v - 1, (unsigned)i);
	}
	tally_map_fini(&job);
	tally_map_fini(&step);
	tally_map_fini(&run);
	tally_map_fini(&sid);
	return rc < 0 ? -ENOMEM : 0;
}

struct timed {
	uint64_t t0, t1;
	unsigned index;
};

static int by_start(const void *pa, const void *pb)
{
	const struct timed *a = pa, *b = pb;

	if (a->t0 != b->t0)
		return a->t0 < b->t0 ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* A group still open in the sweep: its root and the latest end of its sections so far. */
struct open_group {
	unsigned root;
	uint64_t end;
};

/*
 * What time says, where the ids do not forbid it: sections whose recordings overlap (each widened
 * by JOBS_SLACK_NS) join.  Swept in order of start, each section meets the groups still open (one
 * of their sections ends within the slack of its start): normally a job or two, whatever the
 * number of sections.  A section with no real time overlaps everything: those join every group
 * their ids allow, once, at the end.
 */
static int link_times(const struct report_set *set, struct node *n)
{
	size_t ns = set->nsections, i, k, nt = 0, nopen = 0, ocap = 0;
	struct timed *t = calloc(ns ? ns : 1, sizeof(*t));
	struct open_group *open = NULL;
	long untimed = -1;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < ns; i++) {
		uint64_t a0, a1;

		span_of(set->sections[i]->s, &a0, &a1);
		if (!a0) { /* no real time: cannot tell apart */
			if (untimed >= 0)
				join(n, (unsigned)untimed, (unsigned)i);
			else
				untimed = (long)i;
			continue;
		}
		t[nt++] = (struct timed){a0, a1, (unsigned)i};
	}
	if (nt > 1)
		qsort(t, nt, sizeof(*t), by_start);
	for (i = 0; i < nt; i++) {
		size_t keep = 0;
		bool placed = false;

		for (k = 0; k < nopen; k++) { /* close the groups that end before it */
			open[k].root = root(n, open[k].root);
			if (open[k].end + JOBS_SLACK_NS >= t[i].t0)
				open[keep++] = open[k];
		}
		nopen = keep;
		for (k = 0; k < nopen; k++) {
			join(n, open[k].root, t[i].index);
			if (root(n, t[i].index) == root(n, open[k].root)) {
				open[k].end = open[k].end > t[i].t1 ? open[k].end : t[i].t1;
				placed = true;
			}
		}
		if (!placed) {
			if (!tally_grow_in((void **)&open, &ocap, nopen + 1, sizeof(*open))) {
				free(t);
				free(open);
				return -ENOMEM;
			}
			open[nopen++] = (struct open_group){t[i].index, t[i].t1};
		}
	}
	/* the sections with no real time, now one group, join every group their ids allow */
	for (i = 0; untimed >= 0 && i < ns; i++)
		join(n, (unsigned)untimed, (unsigned)i);
	free(t);
	free(open);
	return 0;
}

static int link_all(const struct report_set *set, struct node *n)
{
	/* first what the ids and fork links say, then time, so that time never joins groups the
	 * ids keep apart */
	int rc = link_ids(set, n);

	return rc < 0 ? rc : link_times(set, n);
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

struct rank_of {
	unsigned job;
	const char *rank;
};

static int by_job_rank(const void *pa, const void *pb)
{
	const struct rank_of *a = pa, *b = pb;

	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	return strcmp(a->rank, b->rank);
}

/* Each job's distinct ranks (sorted, counted once each) and what its sections say of its size. */
static int count_ranks(const struct report_set *set, struct report_jobs *j)
{
	struct rank_of *v = calloc(set->nsections ? set->nsections : 1, sizeof(*v));
	size_t i, n = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < j->njobs; i++)
		j->jobs[i].world_size = -1;
	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;
		struct report_job *job = &j->jobs[j->job_of[i]];

		if (s->world_size && strchr(s->world_size, '='))
			job->world_size = strtol(strchr(s->world_size, '=') + 1, NULL, 10);
		if (s->rank)
			v[n++] = (struct rank_of){j->job_of[i], s->rank};
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_job_rank);
	for (i = 0; i < n; i++)
		j->jobs[v[i].job].ranks += !i || by_job_rank(&v[i - 1], &v[i]) != 0;
	free(v);
	return 0;
}

static int fill(const struct report_set *set, struct report_jobs *j, struct node *n)
{
	unsigned *job_of_root = malloc((set->nsections ? set->nsections : 1) * sizeof(unsigned));
	size_t i;

	if (!job_of_root)
		return -ENOMEM;
	for (i = 0; i < set->nsections; i++)
		job_of_root[i] = UINT_MAX;
	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;
		unsigned r = root(n, (unsigned)i), g = job_of_root[r];
		struct report_job *job;
		uint64_t t0, t1;

		if (g == UINT_MAX) {
			g = job_of_root[r] = (unsigned)j->njobs++;
			job = &j->jobs[g];
			*job = (struct report_job){.first = (unsigned)i, .start = UINT64_MAX};
			describe(j, job, &n[r]);
			job->hosts = keep(j, tally_text_printable(s->host ? s->host : "?"));
			job->hosts = job->hosts ? job->hosts : "?";
		} else if (job = &j->jobs[g],
			   !job->many_hosts && s->host && set->sections[job->first]->s->host &&
			       strcmp(s->host, set->sections[job->first]->s->host) != 0) {
			char buf[300];

			job->many_hosts = true;
			snprintf(buf, sizeof(buf), "%s and others", job->hosts);
			job->hosts = keep(j, strdup(buf)) ? j->owned[j->nowned - 1] : job->hosts;
		}
		job = &j->jobs[g];
		j->job_of[i] = g;
		job->nsections++;
		span_of(s, &t0, &t1);
		job->start = t0 && t0 < job->start ? t0 : job->start;
		job->end = t1 > job->end ? t1 : job->end;
	}
	free(job_of_root);
	for (i = 0; i < j->njobs; i++)
		if (j->jobs[i].start == UINT64_MAX) /* no section said when it started */
			j->jobs[i].start = 0;
	return count_ranks(set, j);
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
	if (link_all(set, n) < 0 || fill(set, out, n) < 0) {
		free(n);
		report_jobs_free(out);
		return -ENOMEM;
	}
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
