/* SPDX-License-Identifier: MIT */
/* Kernel durations across processes; see spread.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "select.h"
#include "sketch.h"
#include "spread.h"

#define DEFAULT_TOP 10
/* Values kept for exact medians and percentiles (8 bytes each, all kernels of all processes):
 * past them, every (kernel, process) keeps a quantile sketch (sketch.h) instead, and the
 * report says its medians are within the sketch's bound. */
#define SPREAD_VALUES (4u << 20)

struct kname {
	char *name;
	uint64_t total;
	size_t first_pair; /* pairs of one name are chained: first, then next */
};

struct pair {
	size_t name;
	unsigned section;
	uint64_t *v;
	size_t n, cap;
	uint64_t total, min, max;
	struct tally_sketch sk; /* past SPREAD_VALUES, in place of v */
	size_t next;		/* the next pair of the same name, SIZE_MAX at the end */
};

struct spread {
	unsigned top;
	enum report_name_mode mode;
	struct kname *names;
	size_t nnames, ncap;
	struct tally_map name_at; /* a name's hash -> its index in names + 1 */
	struct pair *pairs;
	size_t npairs, pcap;
	uint32_t *cache; /* the current section's string id -> pair index + 1 */
	uint32_t ncache;
	unsigned cache_sec;
	struct spread_row *rows;
	size_t nrows;
	uint64_t kept; /* values in the pairs' v */
	bool sketched; /* past SPREAD_VALUES: sketches */
};

struct spread *spread_new(unsigned top, enum report_name_mode names)
{
	struct spread *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->top = top ? top : DEFAULT_TOP;
	s->mode = names;
	s->cache_sec = UINT32_MAX;
	return s;
}

void spread_free(struct spread *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nnames; i++)
		free(s->names[i].name);
	for (i = 0; i < s->npairs; i++) {
		free(s->pairs[i].v);
		tally_sketch_fini(&s->pairs[i].sk);
	}
	free(s->names);
	tally_map_fini(&s->name_at);
	free(s->pairs);
	free(s->cache);
	free(s->rows);
	free(s);
}

/* Whether name value (index + 1) is the one looked for (tally_map_find's same). */
struct name_lookup {
	const struct spread *s;
	const char *name;
};

static bool same_name(void *ctx, uint32_t value)
{
	const struct name_lookup *l = ctx;

	return strcmp(l->s->names[value - 1].name, l->name) == 0;
}

static long name_index(struct spread *s, const char *name)
{
	struct name_lookup l = {s, name};
	uint64_t h = tally_hash_str(name);
	uint32_t found = tally_map_find(&s->name_at, h, same_name, &l);

	if (found)
		return (long)found - 1;
	if (s->nnames >= UINT32_MAX - 1)
		return -1;
	if (s->nnames == s->ncap) {
		size_t cap = s->ncap ? 2 * s->ncap : 64;
		struct kname *t = tally_resize(s->names, cap, sizeof(*t));

		if (!t)
			return -1;
		s->names = t;
		s->ncap = cap;
	}
	s->names[s->nnames] = (struct kname){strdup(name), 0, SIZE_MAX};
	if (!s->names[s->nnames].name)
		return -1;
	if (tally_map_add(&s->name_at, h, (uint32_t)s->nnames + 1) < 0) {
		free(s->names[s->nnames].name);
		return -1;
	}
	return (long)s->nnames++;
}

static long new_pair(struct spread *s, size_t name, unsigned sec)
{
	struct pair *p;

	if (s->npairs == s->pcap) {
		size_t cap = s->pcap ? 2 * s->pcap : 64;

		if (!(p = tally_resize(s->pairs, cap, sizeof(*p))))
			return -1;
		s->pairs = p;
		s->pcap = cap;
	}
	p = &s->pairs[s->npairs];
	*p = (struct pair){.name = name, .section = sec, .next = s->names[name].first_pair};
	s->names[name].first_pair = s->npairs;
	return (long)s->npairs++;
}

/* The pair (this section, the kernel named by id): cached per string id of the section. */
static struct pair *pair_of(struct spread *s, struct report_section *rs, uint32_t id)
{
	uint32_t *slot = NULL;
	long name, p;

	if (s->cache_sec != rs->index) {
		free(s->cache);
		s->cache = NULL;
		s->ncache = 0;
		s->cache_sec = rs->index;
	}
	if (id < rs->s->nstrings) {
		if (id >= s->ncache) {
			uint32_t n = rs->s->nstrings;
			uint32_t *t = tally_resize(s->cache, n, sizeof(*t));

			if (!t)
				return NULL;
			memset(t + s->ncache, 0, (n - s->ncache) * sizeof(*t));
			s->cache = t;
			s->ncache = n;
		}
		slot = &s->cache[id];
		if (*slot)
			return &s->pairs[*slot - 1];
	}
	name = name_index(s, report_kernel_name(rs, id, s->mode));
	if (name < 0)
		return NULL;
	/* a name beyond the string table, or two ids of one name: look for the pair */
	for (p = (long)s->names[name].first_pair; p != (long)SIZE_MAX; p = (long)s->pairs[p].next)
		if (s->pairs[p].section == rs->index)
			break;
	if (p == (long)SIZE_MAX && (p = new_pair(s, (size_t)name, rs->index)) < 0)
		return NULL;
	if (slot)
		*slot = (uint32_t)p + 1;
	return &s->pairs[p];
}

/* Every pair's values into its sketch: memory stops growing with the kernels. */
static bool to_sketches(struct spread *s)
{
	size_t i, k;

	s->sketched = true;
	for (i = 0; i < s->npairs; i++) {
		struct pair *p = &s->pairs[i];

		for (k = 0; k < p->n; k++)
			if (tally_sketch_add(&p->sk, p->v[k], 1) < 0)
				return false;
		free(p->v);
		p->v = NULL;
		p->cap = 0;
	}
	return true;
}

static bool push(struct spread *s, struct pair *p, uint64_t x)
{
	p->min = !p->n || x < p->min ? x : p->min;
	p->max = x > p->max ? x : p->max;
	if (!s->sketched && s->kept >= SPREAD_VALUES && !to_sketches(s))
		return false;
	if (s->sketched) {
		if (tally_sketch_add(&p->sk, x, 1) < 0)
			return false;
		p->n++;
		p->total += x;
		return true;
	}
	s->kept++;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		uint64_t *t = tally_resize(p->v, cap, sizeof(*t));

		if (!t)
			return false;
		p->v = t;
		p->cap = cap;
	}
	p->v[p->n++] = x;
	p->total += x;
	return true;
}

int spread_add(struct spread *s, struct report_section *rs, const struct tally_record *r, size_t n)
{
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_KERNEL)
		return 0;
	for (i = 0; i < n; i++) {
		struct pair *p;
		uint64_t d;

		if (r[i].kind != TALLY_KIND_KERNEL || (r[i].flags & TALLY_REC_BAD_TIME))
			continue;
		d = r[i].end > r[i].start ? r[i].end - r[i].start : 0;
		if (!(p = pair_of(s, rs, r[i].name_id)) || !push(s, p, d))
			return -ENOMEM;
		s->names[p->name].total += d;
	}
	return 0;
}

/* ---- after the scan ------------------------------------------------------------------------ */

static const struct spread *sort_s; /* qsort has no context */

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_d(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), by_double); /* one value per process: few */
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int by_total(const void *a, const void *b)
{
	const struct kname *x = &sort_s->names[*(const size_t *)a],
			   *y = &sort_s->names[*(const size_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_section(const void *a, const void *b)
{
	const struct spread_row *x = a, *y = b;

	return x->section < y->section ? -1 : x->section > y->section;
}

/* The rows of one kernel: figures per process, then who stands out. */
static int kernel_rows(struct spread *s, size_t name, unsigned rank_of, size_t *out)
{
	static const double pct[] = {90, 100};
	size_t first = *out, n, i;
	uint64_t q[2], *scratch;
	double *med, m, mad;
	long p;

	for (p = (long)s->names[name].first_pair; p != (long)SIZE_MAX; p = (long)s->pairs[p].next) {
		struct pair *pr = &s->pairs[p];
		struct spread_row *row = &s->rows[(*out)++];

		if (s->sketched) { /* nearest rank, as stats_percentile: ceil(0.9 n) - 1 */
			uint64_t k90 = (uint64_t)ceil(0.9 * (double)pr->n);

			*row = (struct spread_row){
			    .name = s->names[name].name,
			    .rank_of = rank_of,
			    .section = pr->section,
			    .count = pr->n,
			    .total = pr->total,
			    .median = tally_sketch_median(&pr->sk, pr->min, pr->max),
			    .p90 = (uint64_t)tally_sketch_rank(&pr->sk, k90 ? k90 - 1 : 0, pr->min,
							       pr->max),
			    .max = pr->max};
			continue;
		}
		if (!(scratch = malloc((pr->n ? pr->n : 1) * sizeof(*scratch))) ||
		    stats_percentiles(pr->v, pr->n, pct, q, 2) < 0) {
			free(scratch);
			return -ENOMEM;
		}
		memcpy(scratch, pr->v, pr->n * sizeof(*scratch));
		*row = (struct spread_row){.name = s->names[name].name,
					   .rank_of = rank_of,
					   .section = pr->section,
					   .count = pr->n,
					   .total = pr->total,
					   .median = stats_median(scratch, pr->n),
					   .p90 = q[0],
					   .max = q[1]};
		free(scratch);
	}
	n = *out - first;
	qsort(s->rows + first, n, sizeof(*s->rows), by_section);
	if (!(med = malloc(n * sizeof(*med))))
		return -ENOMEM;
	/* the median of the medians, and the median absolute deviation from it */
	for (i = 0; i < n; i++)
		med[i] = s->rows[first + i].median;
	m = median_d(med, n);
	for (i = 0; i < n; i++)
		med[i] = fabs(s->rows[first + i].median - m);
	mad = median_d(med, n);
	free(med);
	for (i = 0; i < n; i++) {
		struct spread_row *row = &s->rows[first + i];
		double dev = row->median - m;

		row->vs_median = m > 0 ? 100.0 * (row->median / m - 1.0) : 0;
		if (n >= SPREAD_MIN_RANKS && fabs(dev) > 3 * 1.4826 * mad && fabs(dev) > 0.1 * m)
			row->stands_out = dev > 0 ? 1 : -1;
	}
	return 0;
}

int spread_finish(struct spread *s)
{
	size_t *order = malloc((s->nnames ? s->nnames : 1) * sizeof(*order)), i, k, out = 0;
	unsigned top;
	int rc = 0;

	if (!order)
		return -ENOMEM;
	for (i = 0; i < s->nnames; i++)
		order[i] = i;
	sort_s = s;
	qsort(order, s->nnames, sizeof(*order), by_total);
	top = s->nnames < s->top ? (unsigned)s->nnames : s->top;
	for (i = k = 0; i < top; i++)
		for (long p = (long)s->names[order[i]].first_pair; p != (long)SIZE_MAX;
		     p = (long)s->pairs[p].next)
			k++;
	s->rows = calloc(k ? k : 1, sizeof(*s->rows));
	if (!s->rows) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < top && rc == 0; i++)
		rc = kernel_rows(s, order[i], (unsigned)i + 1, &out);
	s->nrows = out;
	free(order);
	return rc;
}

bool spread_sketched(const struct spread *s)
{
	return s->sketched;
}

const struct spread_row *spread_rows(const struct spread *s, size_t *n)
{
	*n = s->nrows;
	return s->rows;
}
