/* SPDX-License-Identifier: MIT */
/*
 * tally compare's engine (see compare.h): one streaming pass per side keeps 24 bytes per GPU
 * record; then the stretch is cut, the records are sorted by stream and start for the order, and
 * by name and duration for the distributions.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare-int.h"
#include "grow.h"
#include "hash.h"
#include "hashmap.h"
#include "select.h"

void compare_opts_default(struct compare_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->alpha = 0.01;
	o->min_effect = 0.05;
	o->max_edits = 1000;
}

const char *compare_verdict_name(enum compare_verdict v)
{
	static const char *const names[] = {"same", "differs", "unusable"};

	return (unsigned)v < 3 ? names[v] : "?";
}

/* ---- names shared by both sides ---------------------------------------------------------- */

struct key_lookup {
	const struct cmp_keys *k;
	const char *name;
};

static bool same_name(void *ctx, uint32_t value)
{
	const struct key_lookup *l = ctx;

	return strcmp(l->k->name[value - 1], l->name) == 0;
}

/* The key id of name (interned), or -ENOMEM. */
long cmp_key_intern(struct cmp_keys *k, const char *name, unsigned kind)
{
	struct key_lookup l = {k, name};
	uint64_t h = tally_hash_str(name);
	uint32_t found = tally_map_find(&k->index, h, same_name, &l);

	if (found)
		return (long)found - 1;
	if (k->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if (k->n == k->cap) { /* two arrays of one capacity: the smaller of what each got */
		size_t names = k->cap, kinds = k->cap;

		if (!tally_grow_in(&k->name, &names, k->n + 1, sizeof(*k->name)) ||
		    !tally_grow_in(&k->kind, &kinds, k->n + 1, sizeof(*k->kind)))
			return -ENOMEM;
		k->cap = names < kinds ? names : kinds;
	}
	k->name[k->n] = strdup(name);
	if (!k->name[k->n] || tally_map_add(&k->index, h, (uint32_t)k->n + 1) < 0) {
		free(k->name[k->n]);
		return -ENOMEM;
	}
	k->kind[k->n] = kind;
	return (long)k->n++;
}

void cmp_keys_free(struct cmp_keys *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		free(k->name[i]);
	free(k->name);
	free(k->kind);
	tally_map_fini(&k->index);
}

/* ---- the statistics ---------------------------------------------------------------------- */

double compare_ks_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m)
{
	size_t i = 0, j = 0;
	double d = 0;

	if (!n || !m)
		return n == m ? 0 : 1;
	while (i < n && j < m) {
		uint32_t v = a[i] < b[j] ? a[i] : b[j];
		double diff;

		while (i < n && a[i] == v)
			i++;
		while (j < m && b[j] == v)
			j++;
		diff = fabs((double)i / (double)n - (double)j / (double)m);
		if (diff > d)
			d = diff;
	}
	return d;
}

/* c(alpha) * sqrt((n + m) / (n m)), the large-sample critical value of the two-sample test. */
double compare_ks_critical(size_t n, size_t m, double alpha)
{
	double c = sqrt(-0.5 * log(alpha / 2));

	if (!n || !m)
		return 0;
	return c * sqrt(((double)n + (double)m) / ((double)n * (double)m));
}

/*
 * Myers' greedy difference, forward only: no path is kept, so memory is one array of 2 max + 3
 * diagonals and time O((n + m) * min(d, max)).  Counts insertions plus deletions (a kernel
 * replaced by another counts 2, as does a swap of two neighbours).
 */
uint64_t compare_edit_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m,
			       unsigned max, bool *capped)
{
	int64_t *v, off = (int64_t)max + 1;
	int64_t d, k;

	*capped = false;
	while (n && m && a[0] == b[0])
		a++, b++, n--, m--;
	while (n && m && a[n - 1] == b[m - 1])
		n--, m--;
	if (!n || !m)
		return n + m;
	v = calloc((size_t)(2 * max + 3), sizeof(*v));
	if (!v) {
		*capped = true;
		return 0;
	}
	for (d = 0; d <= (int64_t)max; d++) {
		for (k = -d; k <= d; k += 2) {
			int64_t x, y;

			if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			y = x - k;
			while (x < (int64_t)n && y >= 0 && y < (int64_t)m && a[x] == b[y])
				x++, y++;
			v[off + k] = x;
			if (x >= (int64_t)n && y >= (int64_t)m) {
				free(v);
				return (uint64_t)d;
			}
		}
	}
	free(v);
	*capped = true;
	return (uint64_t)max + 1;
}

/* ---- per-name results ------------------------------------------------------------------------ */

/* The p-th percentile of sorted values, by stats' one rank definition. */
static uint64_t percentile(const uint32_t *v, size_t n, double p)
{
	return n ? v[stats_rank_index(n, p)] : 0;
}

/* stats' Med of sorted values: the middle one, or the mean of the two middle ones. */
static double median(const uint32_t *v, size_t n)
{
	return n ? ((double)v[(n - 1) / 2] + (double)v[n / 2]) / 2 : 0;
}

static double rel_shift(double a, double b)
{
	return a != 0 ? (b - a) / a : (b != 0 ? INFINITY : 0);
}

static void judge_key(struct compare_key *k, const struct compare_opts *o)
{
	double effect = fmax(fabs(k->shift), fabs(rel_shift((double)k->p90[0], (double)k->p90[1])));

	k->differs = true;
	if (!k->n[0] || !k->n[1])
		k->why = k->n[0] ? "only in A" : "only in B";
	else if (k->n[0] != k->n[1])
		k->why = "count";
	else if (k->ks_d > k->ks_crit && effect > o->min_effect)
		k->why = "duration";
	else
		k->differs = false;
}

/* The shift, the critical value and the call, once n, the quantiles and D are known. */
static void cmp_key_judge(struct compare_key *k, double ks_d, const struct compare_opts *o)
{
	k->shift = rel_shift(k->p50[0], k->p50[1]);
	k->ks_d = ks_d;
	k->ks_crit = compare_ks_critical(k->n[0], k->n[1], o->alpha);
	judge_key(k, o);
}

/* Fill one key from its sorted durations on each side. */
void cmp_key_fill(struct compare_key *k, const uint32_t *const d[2], const size_t n[2],
		  const struct compare_opts *o)
{
	unsigned s;

	for (s = 0; s < 2; s++) {
		k->n[s] = n[s];
		k->p50[s] = median(d[s], n[s]);
		k->p90[s] = percentile(d[s], n[s], 90);
		k->p99[s] = percentile(d[s], n[s], 99);
	}
	cmp_key_judge(k, compare_ks_distance(d[0], n[0], d[1], n[1]), o);
}

void cmp_key_model(struct compare_key *k, size_t key, const struct cmp_side sd[2],
		   const struct compare_opts *o)
{
	unsigned s;

	for (s = 0; s < 2; s++) {
		if (key >= sd[s].nfig || !sd[s].fig[key].n)
			continue;
		k->n[s] = sd[s].fig[key].n;
		k->p50[s] = sd[s].fig[key].median;
	}
	cmp_key_judge(k, k->ks_d, o);
}

void compare_free(struct compare_result *r)
{
	size_t i;
	unsigned s;

	if (!r)
		return;
	for (i = 0; i < r->nkeys; i++)
		free(r->keys[i].name);
	free(r->keys);
	free(r->streams);
	for (s = 0; s < 2; s++) {
		for (i = 0; i < r->side[s].nreasons; i++)
			free(r->side[s].reasons[i]);
		free(r->side[s].reasons);
		free(r->side[s].ctx_drops);
		free(r->label[s]);
	}
	free(r);
}
