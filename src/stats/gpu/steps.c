/* SPDX-License-Identifier: MIT */
/* Steps across ranks; see steps.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "select.h"
#include "steps.h"
#include "text.h"

#define NAMES_MAX 4096

#define NDEFAULT 2
const char *const steps_default_names[NDEFAULT] = {"step", "ProfilerStep"};
const unsigned steps_default_count = NDEFAULT;

struct iv {
	uint64_t t0, t1;
};

struct srank {
	unsigned section;
	struct report_section *rs; /* while the scan lasts: to name the ranges counted below */
	uint32_t *count;	   /* by string id: ranges of that name that matched nothing */
	uint32_t ncount;
	struct iv *v[NDEFAULT]; /* ranges matching each name (the user's name: [0]) */
	size_t n[NDEFAULT], cap[NDEFAULT];
	uint8_t *match; /* string id -> 1 + name index + 1, or 1: no match; 0 not looked up */
	uint32_t nmatch;
};

/* Every distinct range name, for suggesting one when none matched. */
struct seen {
	char *name;
	uint64_t count, sections;
	unsigned last_sec;
};

struct steps {
	const char *user;
	struct srank *r;
	size_t nr, cap;
	struct seen *seen;
	size_t nseen, seen_cap;
	struct step_row *rows;
	size_t nrows;
	struct steps_verdict v;
	bool failed;
};

struct steps *steps_new(const char *range)
{
	struct steps *s = calloc(1, sizeof(*s));

	if (s)
		s->user = range && *range ? range : NULL;
	return s;
}

void steps_free(struct steps *s)
{
	size_t i, k;

	if (!s)
		return;
	for (i = 0; i < s->nr; i++) {
		for (k = 0; k < NDEFAULT; k++)
			free(s->r[i].v[k]);
		free(s->r[i].match);
		free(s->r[i].count);
	}
	for (i = 0; i < s->nseen; i++)
		free(s->seen[i].name);
	free(s->seen);
	free(s->r);
	free(s->rows);
	free(s);
}

bool steps_name_matches(const char *msg, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(msg, name, n) != 0)
		return false;
	msg += n;
	if (!*msg)
		return true;
	if (strchr(" #_-:.", *msg) && isdigit((unsigned char)msg[1]))
		msg++;
	if (!isdigit((unsigned char)*msg))
		return false;
	while (isdigit((unsigned char)*msg))
		msg++;
	return !*msg;
}

/* Count a range name (kept printable: it goes into a message for a terminal). */
static void note_seen(struct steps *s, const char *raw, unsigned sec, uint64_t count)
{
	char *name = tally_text_printable(raw);
	size_t i;

	if (!name)
		return;
	for (i = 0; i < s->nseen; i++)
		if (strcmp(s->seen[i].name, name) == 0)
			break;
	if (i < s->nseen) {
		free(name);
	} else {
		struct seen *t;

		if (s->nseen == s->seen_cap && s->nseen < NAMES_MAX) {
			size_t cap = s->seen_cap ? 2 * s->seen_cap : 16;

			if ((t = tally_resize(s->seen, cap, sizeof(*t)))) {
				s->seen = t;
				s->seen_cap = cap;
			}
		}
		if (s->nseen ==
		    s->seen_cap) { /* full, or no memory: only the suggestion is poorer */
			free(name);
			return;
		}
		s->seen[i] = (struct seen){.name = name, .last_sec = UINT32_MAX};
		s->nseen++;
	}
	s->seen[i].count += count;
	if (s->seen[i].last_sec != sec) {
		s->seen[i].last_sec = sec;
		s->seen[i].sections++;
	}
}

/* 0: no match; else 1 + which name. Looked up once per string id. */
static unsigned match_of(struct steps *s, struct srank *r, struct report_section *rs, uint32_t id)
{
	const char *msg;
	unsigned k, m = 1;

	if (id < r->nmatch && r->match[id])
		return r->match[id] - 1;
	msg = report_string(rs, id);
	if (s->user)
		m = steps_name_matches(msg, s->user) ? 2 : 1;
	else
		for (k = 0; k < NDEFAULT && m == 1; k++)
			if (steps_name_matches(msg, steps_default_names[k]))
				m = 2 + k;
	if (id < rs->s->nstrings) {
		if (id >= r->nmatch) {
			uint32_t n = rs->s->nstrings;
			uint8_t *t = tally_resize(r->match, n, 1);

			if (!t)
				return m - 1;
			memset(t + r->nmatch, 0, n - r->nmatch);
			r->match = t;
			r->nmatch = n;
		}
		r->match[id] = (uint8_t)m;
	} else {
		/* a name beyond the table is not cached: seen once more for each record */
	}
	return m - 1;
}

/* The names of the ranges of r that matched nothing, with their counts, into s->seen. */
static void name_counts(struct steps *s, struct srank *r)
{
	uint32_t id;

	for (id = 0; id < r->ncount; id++)
		if (r->count[id])
			note_seen(s, report_string(r->rs, id), r->section, r->count[id]);
	free(r->count);
	r->count = NULL;
	r->ncount = 0;
}

static void count_name(struct srank *r, uint32_t id)
{
	if (id >= r->ncount) {
		uint32_t n = id + 64;
		uint32_t *t = tally_resize(r->count, n, sizeof(*t));

		if (!t)
			return; /* only the suggestion is poorer */
		memset(t + r->ncount, 0, (n - r->ncount) * sizeof(*t));
		r->count = t;
		r->ncount = n;
	}
	r->count[id]++;
}

static struct srank *rank_of(struct steps *s, struct report_section *rs)
{
	unsigned sec = rs->index;
	struct srank *t;

	if (s->nr && s->r[s->nr - 1].section == sec)
		return &s->r[s->nr - 1];
	if (s->nr)
		name_counts(s, &s->r[s->nr - 1]);
	if (s->nr == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;

		if (!(t = tally_resize(s->r, cap, sizeof(*t))))
			return NULL;
		s->r = t;
		s->cap = cap;
	}
	memset(&s->r[s->nr], 0, sizeof(s->r[0]));
	s->r[s->nr].section = sec;
	s->r[s->nr].rs = rs;
	return &s->r[s->nr++];
}

static int keep(struct srank *r, unsigned k, uint64_t t0, uint64_t t1)
{
	if (r->n[k] == r->cap[k]) {
		size_t cap = r->cap[k] ? 2 * r->cap[k] : 64;
		struct iv *t = tally_resize(r->v[k], cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		r->v[k] = t;
		r->cap[k] = cap;
	}
	r->v[k][r->n[k]++] = (struct iv){t0, t1 > t0 ? t1 : t0};
	return 0;
}

int steps_add(struct steps *s, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct srank *rk;
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_NVTX_RANGE)
		return 0;
	if (!(rk = rank_of(s, rs)))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		unsigned m;

		if (r[i].kind != TALLY_KIND_NVTX_RANGE ||
		    (r[i].flags & (TALLY_REC_BAD_TIME | TALLY_REC_DEPTH_LOST)))
			continue;
		m = match_of(s, rk, rs, r[i].name_id);
		if (!m && r[i].name_id < rs->s->nstrings)
			count_name(rk, r[i].name_id);
		if (m &&
		    keep(rk, m - 1, report_time(rs, r[i].start), report_time(rs, r[i].end)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- after the scan ------------------------------------------------------------------------ */

static int by_start(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int by_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The name the steps are cut by: the user's, else the first default some process has. */
static int chosen_name(struct steps *s)
{
	size_t i;
	unsigned k;

	for (k = 0; k < (s->user ? 1u : NDEFAULT); k++)
		for (i = 0; i < s->nr; i++)
			if (s->r[i].n[k]) {
				s->v.range = s->user ? s->user : steps_default_names[k];
				return (int)k;
			}
	return -1;
}

/* "iter (40, in 2 processes), forward (20, in 2 processes)": the names repeated most. */
static void suggest(struct steps *s)
{
	char *p = s->v.candidates;
	size_t left = sizeof(s->v.candidates), shown, i;

	for (shown = 0; shown < 3; shown++) {
		size_t best = SIZE_MAX;

		for (i = 0; i < s->nseen; i++) /* a name shown has its count set to 0 below */
			if (s->seen[i].count >= 2 &&
			    (best == SIZE_MAX || s->seen[i].count > s->seen[best].count))
				best = i;
		if (best == SIZE_MAX)
			break;
		int w = snprintf(p, left, "%s%s (%llu, in %llu process%s)", shown ? ", " : "",
				 s->seen[best].name, (unsigned long long)s->seen[best].count,
				 (unsigned long long)s->seen[best].sections,
				 s->seen[best].sections == 1 ? "" : "es");
		if (w < 0 || (size_t)w >= left)
			break;
		p += w;
		left -= (size_t)w;
		s->seen[best].count = 0;
	}
}

/* The middle of a and b, with no sum that could wrap. */
static uint64_t mid_u64(uint64_t a, uint64_t b)
{
	return a / 2 + b / 2 + (a & b & 1);
}

/* a - b as a signed lead, stopped at INT64_MAX either way (durations are unsigned 64 bits: a
 * crafted range may last past 2^63 ns). */
static int64_t lead_of(uint64_t a, uint64_t b)
{
	if (a >= b)
		return a - b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(a - b);
	return b - a > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(b - a);
}

/* Per step: the slowest, and its lead over the median of the others. */
static void step_row(struct steps *s, int k, uint64_t step, struct step_row *row, uint64_t *scratch)
{
	size_t i, nr = s->nr, slow = SIZE_MAX, m = 0;
	uint64_t slow_ns = 0;

	for (i = 0; i < nr; i++) {
		if (!s->r[i].n[k]) /* its v[k] may be NULL: no pointer is formed into it */
			continue;
		const struct iv *v = &s->r[i].v[k][step];

		scratch[m++] = v->t1 - v->t0;
		if (slow == SIZE_MAX || v->t1 - v->t0 > slow_ns) {
			slow = i;
			slow_ns = v->t1 - v->t0;
		}
	}
	qsort(scratch, m, sizeof(*scratch), by_u64);
	*row = (struct step_row){.step = step,
				 .ranks = (unsigned)m,
				 .median = m % 2 ? scratch[m / 2]
						 : mid_u64(scratch[m / 2 - 1], scratch[m / 2]),
				 .slowest = s->r[slow].section,
				 .slowest_ns = slow_ns};
	/* the others: all but one copy of the slowest value, the largest */
	m--;
	if (m)
		row->lead = lead_of(slow_ns, m % 2 ? scratch[m / 2]
						   : mid_u64(scratch[m / 2 - 1], scratch[m / 2]));
}

/* The spread of one process's own steps: p90 - p10 of its first `steps` durations. */
static uint64_t own_spread(const struct srank *r, int k, uint64_t steps, uint64_t *scratch)
{
	static const double pct[] = {10, 90};
	uint64_t q[2], i;

	for (i = 0; i < steps; i++)
		scratch[i] = r->v[k][i].t1 - r->v[k][i].t0;
	if (stats_percentiles(scratch, steps, pct, q, 2) < 0)
		return 0;
	return q[1] - q[0];
}

/* The median of the others' durations in step st (all processes with the range but c) into
 * *median; false when no other has the step. */
static bool others_median(const struct steps *s, int k, size_t c, uint64_t st, uint64_t *u,
			  uint64_t *median)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr; i++)
		if (i != c && s->r[i].n[k])
			u[n++] = s->r[i].v[k][st].t1 - s->r[i].v[k][st].t0;
	if (!n)
		return false;
	qsort(u, n, sizeof(*u), by_u64);
	*median = n % 2 ? u[n / 2] : mid_u64(u[n / 2 - 1], u[n / 2]);
	return true;
}

static int verdict(struct steps *s, int k, uint64_t steps)
{
	struct steps_verdict *v = &s->v;
	size_t n = steps > s->nr ? steps : s->nr, i, c = 0, m = 0;
	uint64_t *u = calloc(n, sizeof(*u)), *scr = calloc(n, sizeof(*scr));
	int64_t *lead = calloc(steps, sizeof(*lead));
	uint64_t *count = calloc(s->nr, sizeof(*count)), st;
	int rc = -ENOMEM;

	if (!u || !scr || !lead || !count)
		goto out;
	for (st = 0; st < steps; st++)
		for (i = 0; i < s->nr; i++)
			if (s->r[i].n[k] && s->r[i].section == s->rows[st + 1].slowest)
				count[i]++;
	for (i = 0; i < s->nr; i++)
		if (count[i] > count[c])
			c = i;
	v->candidate = s->r[c].section;
	v->slowest_count = count[c];
	/* its lead in every step, slowest or not: its duration less the others' median */
	for (st = 0; st < steps; st++) {
		uint64_t others;

		lead[st] = others_median(s, k, c, st, scr, &others)
			       ? lead_of(s->r[c].v[k][st].t1 - s->r[c].v[k][st].t0, others)
			       : 0;
	}
	qsort(lead, steps, sizeof(*lead), by_i64);
	v->lead = steps % 2 ? lead[steps / 2]
			    : (int64_t)(((__int128)lead[steps / 2 - 1] + lead[steps / 2]) / 2);
	for (i = 0; i < s->nr; i++)
		if (s->r[i].n[k])
			u[m++] = own_spread(&s->r[i], k, steps, scr);
	v->spread = (uint64_t)stats_median(u, m);
	for (st = 0; st < steps; st++)
		u[st] = s->r[c].v[k][st].t1 - s->r[c].v[k][st].t0;
	v->candidate_median = (uint64_t)stats_median(u, steps);
	v->named = v->ranks >= 2 && steps >= STEPS_MIN && 2 * v->slowest_count >= steps &&
		   v->lead > 0 && (uint64_t)v->lead > v->spread;
	rc = 0;
out:
	free(u);
	free(scr);
	free(lead);
	free(count);
	return rc;
}

/* The summary row's median: the median over the steps of each step's median. */
static int summary_median(struct steps *s, uint64_t steps)
{
	uint64_t *med = calloc(steps ? steps : 1, sizeof(*med)), st;

	if (!med)
		return -ENOMEM;
	for (st = 0; st < steps; st++)
		med[st] = s->rows[st + 1].median;
	s->rows[0].median = (uint64_t)stats_median(med, steps);
	free(med);
	return 0;
}

int steps_finish(struct steps *s)
{
	uint64_t steps = UINT64_MAX, st, *scratch;
	size_t i;
	int k;

	if (s->nr)
		name_counts(s, &s->r[s->nr - 1]);
	k = chosen_name(s);
	if (k < 0) {
		suggest(s);
		return 0;
	}
	for (i = 0; i < s->nr; i++) {
		if (!s->r[i].n[k]) {
			s->v.missing++;
			continue;
		}
		qsort(s->r[i].v[k], s->r[i].n[k], sizeof(struct iv), by_start);
		s->v.ranks++;
		steps = s->r[i].n[k] < steps ? s->r[i].n[k] : steps;
	}
	s->v.steps = steps;
	s->rows = calloc(steps + 1, sizeof(*s->rows));
	scratch = calloc(s->nr > steps ? s->nr : steps, sizeof(*scratch));
	if (!s->rows || !scratch) {
		free(scratch);
		return -ENOMEM;
	}
	for (st = 0; st < steps; st++)
		step_row(s, k, st, &s->rows[st + 1], scratch);
	s->nrows = steps + 1;
	free(scratch);
	if (verdict(s, k, steps) < 0)
		return -ENOMEM;
	s->rows[0] = (struct step_row){.step = UINT64_MAX,
				       .ranks = s->v.ranks,
				       .slowest = s->v.candidate,
				       .slowest_ns = s->v.candidate_median,
				       .lead = s->v.lead};
	return summary_median(s, steps);
}

const struct step_row *steps_rows(const struct steps *s, size_t *n)
{
	*n = s->nrows;
	return s->rows;
}

const struct steps_verdict *steps_verdict(const struct steps *s)
{
	return &s->v;
}
