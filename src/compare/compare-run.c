/* SPDX-License-Identifier: MIT */
/*
 * tally compare, after both sides are read: the order per stream (records grouped by stream,
 * sorted by start, reduced to name ids) and the distributions per name (one radix sort of
 * name<<32 | duration), then the verdict.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare-int.h"
#include "grow.h"
#include "select.h"

/* ---- order per stream ------------------------------------------------------------------- */

struct side_order {
	uint32_t *seq; /* name ids, grouped by stream, in start order */
	size_t *begin; /* stream i's names: seq[begin[i] .. begin[i + 1]) */
};

static int by_start(const void *a, const void *b, void *ctx)
{
	const struct cmp_event *ev = ctx;
	uint64_t x = ev[*(const uint32_t *)a].start, y = ev[*(const uint32_t *)b].start;

	return x < y ? -1 : x > y;
}

static bool sorted_by_start(const struct cmp_event *ev, const uint32_t *idx, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (ev[idx[i]].start < ev[idx[i - 1]].start)
			return false;
	return true;
}

static int side_order(const struct cmp_side *sd, struct side_order *so)
{
	size_t i, ns = sd->nstreams;

	so->seq = malloc((sd->nev ? sd->nev : 1) * sizeof(*so->seq));
	so->begin = calloc(ns + 2, sizeof(*so->begin));
	if (!so->seq || !so->begin)
		return -ENOMEM;
	for (i = 0; i < sd->nev; i++)
		so->begin[sd->ev[i].stream + 2]++;
	for (i = 2; i < ns + 2; i++)
		so->begin[i] += so->begin[i - 1];
	for (i = 0; i < sd->nev; i++) /* a counting sort by stream, stable */
		so->seq[so->begin[sd->ev[i].stream + 1]++] = (uint32_t)i;
	for (i = 0; i < ns; i++) {
		uint32_t *seg = so->seq + so->begin[i];
		size_t n = so->begin[i + 1] - so->begin[i], j;

		if (!sorted_by_start(sd->ev, seg, n))
			qsort_r(seg, n, sizeof(*seg), by_start, sd->ev);
		for (j = 0; j < n; j++)
			seg[j] = sd->ev[seg[j]].key;
	}
	return 0;
}

static long find_stream(const struct cmp_side *sd, const struct cmp_stream_id *id)
{
	return (long)cmp_stream_find(sd, id) - 1;
}

static void compare_one_stream(struct compare_stream *cs, const struct side_order so[2],
			       const long idx[2], unsigned max_edits)
{
	const uint32_t *s[2] = {NULL, NULL};
	size_t n[2] = {0, 0}, i;
	unsigned k;

	for (k = 0; k < 2; k++) {
		if (idx[k] < 0)
			continue;
		s[k] = so[k].seq + so[k].begin[idx[k]];
		n[k] = so[k].begin[idx[k] + 1] - so[k].begin[idx[k]];
		cs->len[k] = n[k];
	}
	for (i = 0; i < n[0] && i < n[1] && s[0][i] == s[1][i]; i++)
		;
	cs->first_divergence = i == n[0] && i == n[1] ? -1 : (int64_t)i;
	cs->edits = compare_edit_distance(s[0], n[0], s[1], n[1], max_edits, &cs->edits_capped);
}

/* r->streams has room for every stream of both sides (order() made it). */
static void add_stream(struct compare_result *r, const struct cmp_stream_id *id)
{
	r->streams[r->nstreams++] = (struct compare_stream){.process = id->process,
							    .device = id->device,
							    .context = id->context,
							    .stream = id->stream};
}

static int order(struct compare_result *r, const struct cmp_side sd[2],
		 const struct side_order so[2])
{
	size_t i, most = sd[0].nstreams + sd[1].nstreams;
	unsigned k;

	r->streams = malloc((most ? most : 1) * sizeof(*r->streams));
	if (!r->streams)
		return -ENOMEM;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < sd[k].nstreams; i++) {
			const struct cmp_stream_id *id = &sd[k].streams[i];
			long idx[2];

			if (k == 1 && find_stream(&sd[0], id) >= 0)
				continue; /* already done from A */
			add_stream(r, id);
			idx[k] = (long)i;
			idx[!k] = find_stream(&sd[!k], id);
			compare_one_stream(&r->streams[r->nstreams - 1], so, idx,
					   r->opts.max_edits);
			r->streams_differ += r->streams[r->nstreams - 1].first_divergence >= 0;
		}
	}
	return 0;
}

/* ---- distributions per name ------------------------------------------------------------- */

/* LSD radix sort of 64-bit values, 16 bits a pass; passes over all-zero digits are skipped. */
static int radix_sort(uint64_t *v, size_t n)
{
	uint64_t *tmp = malloc((n ? n : 1) * sizeof(*tmp)), *src = v, *dst = tmp, all = 0;
	size_t *count = malloc(65536 * sizeof(*count)), i;
	unsigned shift;

	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		all |= v[i];
	for (shift = 0; shift < 64; shift += 16) {
		size_t sum = 0;

		if (!((all >> shift) & 0xffff))
			continue;
		memset(count, 0, 65536 * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xffff]++;
		for (i = 0; i < 65536; i++) {
			size_t c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xffff]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	free(count);
	return 0;
}

struct side_dist {
	uint32_t *dur; /* durations, grouped by name, ascending */
	size_t *begin; /* name k's: dur[begin[k] .. begin[k + 1]) */
	size_t nkeys;  /* names known when this side was read (B may add more) */
};

static int side_dist(struct cmp_side *sd, size_t nkeys, struct side_dist *d)
{
	uint64_t *comp = malloc((sd->nev ? sd->nev : 1) * sizeof(*comp));
	uint32_t *shrunk;
	size_t i;

	d->nkeys = nkeys;
	d->begin = calloc(nkeys + 1, sizeof(*d->begin));
	if (!comp || !d->begin) {
		free(comp);
		return -ENOMEM;
	}
	for (i = 0; i < sd->nev; i++) {
		comp[i] = (uint64_t)sd->ev[i].key << 32 | sd->ev[i].dur;
		d->begin[sd->ev[i].key + 1]++;
	}
	free(sd->ev); /* the largest array goes before the sort's scratch comes */
	sd->ev = NULL;
	for (i = 1; i <= nkeys; i++)
		d->begin[i] += d->begin[i - 1];
	if (radix_sort(comp, sd->nev) < 0) {
		free(comp);
		return -ENOMEM;
	}
	d->dur = (uint32_t *)comp; /* narrowed in place: element i's 4 bytes never pass i's 8 */
	for (i = 0; i < sd->nev; i++)
		d->dur[i] = (uint32_t)comp[i];
	/* given back the other half; where realloc cannot, the array stays as it is */
	shrunk = tally_resize(d->dur, sd->nev, sizeof(*d->dur));
	if (shrunk)
		d->dur = shrunk;
	return 0;
}

static int distributions(struct compare_result *r, const struct cmp_keys *keys,
			 const struct cmp_side sd[2], const struct side_dist d[2])
{
	size_t k;
	unsigned s;

	r->keys = calloc(keys->n ? keys->n : 1, sizeof(*r->keys));
	if (!r->keys)
		return -ENOMEM;
	for (k = 0; k < keys->n; k++) {
		struct compare_key *ck = &r->keys[r->nkeys];
		const uint32_t *v[2];
		size_t n[2];

		for (s = 0; s < 2; s++) {
			bool known = k < d[s].nkeys;

			v[s] = d[s].dur + (known ? d[s].begin[k] : 0);
			n[s] = known ? d[s].begin[k + 1] - d[s].begin[k] : 0;
		}
		if (!n[0] && !n[1])
			continue; /* a name only outside the stretch */
		if (!(ck->name = strdup(keys->name[k])))
			return -ENOMEM;
		ck->kind = keys->kind[k];
		cmp_key_fill(ck, v, n, &r->opts);
		cmp_key_model(ck, k, sd, &r->opts);
		r->keys_differ += ck->differs;
		r->nkeys++;
	}
	return 0;
}

/* ---- distributions from sketches (a side of summaries) ------------------------------------- */

/* Side s's sketch of key k: what its summaries carried, plus its traces' durations. */
static int key_sketch(const struct cmp_side *sd, const struct side_dist *d, size_t k,
		      struct tally_sketch *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	if (k < sd->nsk && tally_sketch_merge(out, &sd->sk[k]) < 0)
		return -ENOMEM;
	if (k < d->nkeys)
		for (i = d->begin[k]; i < d->begin[k + 1]; i++)
			if (tally_sketch_add(out, d->dur[i], 1) < 0)
				return -ENOMEM;
	return 0;
}

/* The p-th percentile (nearest rank, as stats_rank_index) of the sketch's values. */
static uint64_t sketch_percentile(const struct tally_sketch *s, double p)
{
	if (!s->values)
		return 0;
	return (uint64_t)(tally_sketch_rank(s, stats_rank_index(s->values, p), 0, UINT64_MAX) +
			  0.5);
}

/* The largest gap between the two distribution functions at the buckets' edges. */
static double sketch_ks(const struct tally_sketch *a, const struct tally_sketch *b)
{
	uint32_t i = 0, j = 0, na = tally_sketch_cells(a), nb = tally_sketch_cells(b);
	uint64_t ca = 0, cb = 0;
	double d = 0;

	if (!a->values || !b->values)
		return 1;
	while (i < na || j < nb) {
		uint32_t ba = UINT32_MAX, bb = UINT32_MAX;
		uint64_t xa = i < na ? tally_sketch_cell(a, i, &ba) : 0;
		uint64_t xb = j < nb ? tally_sketch_cell(b, j, &bb) : 0;
		double gap;

		if (ba <= bb) {
			ca += xa;
			i++;
		}
		if (bb <= ba) {
			cb += xb;
			j++;
		}
		gap = fabs((double)ca / (double)a->values - (double)cb / (double)b->values);
		d = gap > d ? gap : d;
	}
	return d;
}

static int sketched_key(struct compare_result *r, const struct cmp_side sd[2],
			const struct side_dist d[2], size_t k, struct compare_key *ck)
{
	struct tally_sketch s[2];
	unsigned i;
	int rc = 0;

	for (i = 0; i < 2 && rc == 0; i++)
		rc = key_sketch(&sd[i], &d[i], k, &s[i]);
	for (i = 0; rc == 0 && i < 2; i++) {
		ck->n[i] = s[i].values;
		ck->p50[i] = (double)sketch_percentile(&s[i], 50);
		ck->p90[i] = sketch_percentile(&s[i], 90);
		ck->p99[i] = sketch_percentile(&s[i], 99);
	}
	if (rc == 0) {
		ck->ks_d = sketch_ks(&s[0], &s[1]);
		cmp_key_model(ck, k, sd, &r->opts);
	}
	tally_sketch_fini(&s[0]);
	tally_sketch_fini(&s[1]);
	return rc;
}

static int distributions_sketched(struct compare_result *r, const struct cmp_keys *keys,
				  const struct cmp_side sd[2], const struct side_dist d[2])
{
	size_t k;

	r->keys = calloc(keys->n ? keys->n : 1, sizeof(*r->keys));
	if (!r->keys)
		return -ENOMEM;
	for (k = 0; k < keys->n; k++) {
		struct compare_key *ck = &r->keys[r->nkeys];

		if (sketched_key(r, sd, d, k, ck) < 0)
			return -ENOMEM;
		if (!ck->n[0] && !ck->n[1])
			continue; /* a name only outside the stretch */
		if (!(ck->name = strdup(keys->name[k])))
			return -ENOMEM;
		ck->kind = keys->kind[k];
		r->keys_differ += ck->differs;
		r->nkeys++;
	}
	return 0;
}

/* ---- the whole -------------------------------------------------------------------------- */

/* Read a side and reduce it at once to its order and distributions (8 bytes a record), so
 * that only one side's full records are ever in memory. */
static int read_side(struct compare_result *r, struct cmp_side *sd, unsigned s, char *const *p,
		     size_t np, struct side_order *so, struct side_dist *d, char *err,
		     size_t errlen)
{
	char e[512];
	int rc = cmp_side_read(sd, p, np, e, sizeof(e), &r->bottleneck[s]);

	if (rc == 0)
		rc = cmp_side_stretch(sd, &r->side[s], e, sizeof(e));
	if (rc == 0 && (side_order(sd, so) < 0 || side_dist(sd, sd->keys->n, d) < 0)) {
		snprintf(e, sizeof(e), "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0)
		snprintf(err, errlen, "%c: %s", 'A' + s, e);
	return rc;
}

static char *join_label(char *const *p, size_t n)
{
	size_t len = 1, i;
	char *s;

	for (i = 0; i < n; i++)
		len += strlen(p[i]) + 1;
	s = calloc(1, len);
	for (i = 0; s && i < n; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, p[i]);
	}
	return s;
}

static int analyse(struct compare_result *r, struct cmp_side sd[2], struct cmp_keys *keys,
		   const struct side_order so[2], const struct side_dist d[2])
{
	int rc;

	r->sketched = sd[0].summaries || sd[1].summaries;
	if (r->sketched) /* no order to compare: a summary keeps no sequence */
		rc = distributions_sketched(r, keys, sd, d);
	else if ((rc = order(r, sd, so)) == 0)
		rc = distributions(r, keys, sd, d);
	if (rc < 0)
		return rc;
	if (!r->side[0].timing_usable || !r->side[1].timing_usable)
		r->verdict = COMPARE_UNUSABLE;
	else if (r->keys_differ || r->streams_differ)
		r->verdict = COMPARE_DIFFERS;
	else
		r->verdict = COMPARE_SAME;
	return 0;
}

int compare_run(char *const *a, size_t na, char *const *b, size_t nb, const struct compare_opts *o,
		struct compare_result **out, char *err, size_t errlen)
{
	char *const *p[2] = {a, b};
	const size_t np[2] = {na, nb};
	struct compare_result *r = calloc(1, sizeof(*r));
	struct cmp_side sd[2];
	struct side_order so[2] = {{0}};
	struct side_dist d[2] = {{0}};
	struct cmp_keys keys = {0};
	unsigned s;
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	memset(sd, 0, sizeof(sd));
	r->opts = *o;
	for (s = 0; s < 2; s++) {
		sd[s].keys = &keys;
		sd[s].o = &r->opts;
		r->label[s] = join_label(p[s], np[s]);
	}
	for (s = 0, rc = 0; s < 2 && rc == 0; s++)
		rc = read_side(r, &sd[s], s, p[s], np[s], &so[s], &d[s], err, errlen);
	if (rc == 0 && (rc = analyse(r, sd, &keys, so, d)) < 0)
		snprintf(err, errlen, "out of memory");
	for (s = 0; s < 2; s++) {
		cmp_side_free(&sd[s]);
		free(so[s].seq);
		free(so[s].begin);
		free(d[s].dur);
		free(d[s].begin);
	}
	cmp_keys_free(&keys);
	if (rc < 0) {
		compare_free(r);
		return rc;
	}
	*out = r;
	return 0;
}
