/* SPDX-License-Identifier: MIT */
/* The other processes of a job and what they did while the launcher waited; see jobprocs.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "hashmap.h"
#include "jobprocs.h"

struct psample {
	uint64_t t0, t1; /* aligned; t1: the end of the time it stands for */
	uint32_t tid, stack;
	uint8_t state, source;
};

struct pvec {
	struct psample *v;
	size_t n, cap;
};

struct kept {
	unsigned section;
	struct pvec s; /* sorted by t0 */
};

struct jobprocs {
	struct pvec pending; /* the section being read */
	struct kept *kept;
	size_t nkept, kept_cap;
	struct tally_map procs; /* (host's hash, pid) -> section + 1: after jobprocs_finish */
};

uint64_t idle_why_period(const struct report_section *rs)
{
	return rs->s->sample_rate ? 1000000000ull / rs->s->sample_rate : 1000000ull;
}

struct jobprocs *jobprocs_new(void)
{
	return calloc(1, sizeof(struct jobprocs));
}

void jobprocs_free(struct jobprocs *jp)
{
	size_t i;

	if (!jp)
		return;
	for (i = 0; i < jp->nkept; i++)
		free(jp->kept[i].s.v);
	free(jp->kept);
	free(jp->pending.v);
	tally_map_fini(&jp->procs);
	free(jp);
}

int jobprocs_add(struct jobprocs *jp, const struct report_section *rs, const struct tally_record *r,
		 size_t n)
{
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_CPU_SAMPLE)
		return 0;
	for (i = 0; i < n; i++) {
		bool python = r[i].subkind == TALLY_SAMPLE_PYTHON;

		if ((r[i].flags & TALLY_REC_BAD_TIME) || r[i].kind != TALLY_KIND_CPU_SAMPLE)
			continue;
		if (!tally_grow_in((void **)&jp->pending.v, &jp->pending.cap, jp->pending.n + 1,
				   sizeof(*jp->pending.v)))
			return -ENOMEM;
		jp->pending.v[jp->pending.n++] = (struct psample){
		    .t0 = report_time(rs, r[i].start),
		    .tid = r[i].thread_id,
		    .stack = (r[i].flags & TALLY_REC_TORN) ? 0 : r[i].stack_id,
		    .state = (uint8_t)(python ? r[i].value : TALLY_THREAD_ON_CPU),
		    .source = (uint8_t)r[i].subkind,
		};
	}
	return 0;
}

static int by_thread_time(const void *a, const void *b)
{
	const struct psample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->source != y->source)
		return x->source < y->source ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int by_time(const void *a, const void *b)
{
	const struct psample *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static bool ran_gpu_work(const struct report_section *rs)
{
	return rs->s->records[TALLY_KIND_KERNEL] || rs->s->records[TALLY_KIND_MEMCPY] ||
	       rs->s->records[TALLY_KIND_MEMSET];
}

/* Each sample stands for its thread's time to its next sample (of the same source), a period
 * at most. */
static void cover(struct pvec *p, uint64_t period)
{
	size_t i;

	if (p->n > 1)
		qsort(p->v, p->n, sizeof(*p->v), by_thread_time);
	for (i = 0; i < p->n; i++) {
		uint64_t end = p->v[i].t0 + period;

		if (i + 1 < p->n && p->v[i + 1].tid == p->v[i].tid &&
		    p->v[i + 1].source == p->v[i].source && p->v[i + 1].t0 < end)
			end = p->v[i + 1].t0;
		p->v[i].t1 = end;
	}
	if (p->n > 1)
		qsort(p->v, p->n, sizeof(*p->v), by_time);
}

int jobprocs_section_end(struct jobprocs *jp, const struct report_section *rs)
{
	struct kept *k;

	if (!jp->pending.n || ran_gpu_work(rs)) {
		jp->pending.n = 0;
		return 0;
	}
	if (!tally_grow_in((void **)&jp->kept, &jp->kept_cap, jp->nkept + 1, sizeof(*jp->kept)))
		return -ENOMEM;
	cover(&jp->pending, idle_why_period(rs));
	k = &jp->kept[jp->nkept++];
	k->section = rs->index;
	k->s = jp->pending; /* handed over: the next section starts a vector of its own */
	memset(&jp->pending, 0, sizeof(jp->pending));
	return 0;
}

bool jobprocs_any(const struct jobprocs *jp)
{
	return jp && jp->nkept > 0;
}

static bool same_host(const struct tally_section *a, const struct tally_section *b)
{
	return (!a->host && !b->host) || (a->host && b->host && strcmp(a->host, b->host) == 0);
}

static uint64_t host_hash(const struct tally_section *s)
{
	return tally_hash_str(s->host ? s->host : "");
}

int jobprocs_finish(struct jobprocs *jp, const struct report_set *set)
{
	size_t i;

	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;

		if (!tally_map_get(&jp->procs, host_hash(s), s->pid) &&
		    tally_map_put(&jp->procs, host_hash(s), s->pid, (uint32_t)i + 1) < 0)
			return -ENOMEM;
	}
	return 0;
}

#define ANCESTRY_MAX 8 /* a worker of a pool of a launcher is three deep; more is not a job */

/* Whether c's process descends from a's: a's pid among c's ppid, its parent's, ... (the set's
 * processes on c's host, by pid). */
static bool descends(const struct jobprocs *jp, const struct report_set *set,
		     const struct report_section *c, const struct report_section *a)
{
	uint64_t p = c->s->ppid, h = host_hash(c->s);
	unsigned depth;

	if (c == a || !same_host(c->s, a->s))
		return false;
	if (c->s->has_parent &&
	    a->s->has_session_id && /* a fork child names its parent's session */
	    memcmp(c->s->parent_id, a->s->session_id, sizeof(c->s->parent_id)) == 0)
		return true;
	for (depth = 0; depth < ANCESTRY_MAX && p; depth++) {
		uint32_t up = tally_map_get(&jp->procs, h, p);

		if (p == a->s->pid)
			return true;
		if (!up || up - 1 >= set->nsections || set->sections[up - 1] == c)
			return false;
		p = set->sections[up - 1]->s->ppid;
	}
	return false;
}

size_t jobprocs_children(const struct jobprocs *jp, const struct report_set *set, unsigned launcher)
{
	size_t i, n = 0;

	for (i = 0; jp && launcher < set->nsections && i < jp->nkept; i++)
		n += jp->kept[i].section < set->nsections &&
		     descends(jp, set, set->sections[jp->kept[i].section], set->sections[launcher]);
	return n;
}

static int by_use(const void *a, const void *b)
{
	const struct proc_use *x = a, *y = b;

	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
	return x->source < y->source ? -1 : x->source > y->source;
}

/* Kept section k's samples inside the windows, one use each (per window when by_window;
 * merged after). */
static int take(const struct kept *k, const uint64_t (*w)[2], size_t nw, bool by_window,
		struct proc_use **v, size_t *n, size_t *cap)
{
	size_t i, j = 0;

	for (i = 0; i < k->s.n; i++) {
		const struct psample *s = &k->s.v[i];
		uint64_t ns = 0;
		size_t q;

		while (j < nw && w[j][1] <= s->t0)
			j++;
		for (q = j; q < nw && w[q][0] < s->t1; q++) {
			uint64_t a = s->t0 > w[q][0] ? s->t0 : w[q][0];
			uint64_t b = s->t1 < w[q][1] ? s->t1 : w[q][1];

			if (b <= a)
				continue;
			ns += b - a;
			if (!by_window)
				continue;
			if (!tally_grow_in((void **)v, cap, *n + 1, sizeof(**v)))
				return -ENOMEM;
			(*v)[(*n)++] = (struct proc_use){(uint32_t)q, k->section, s->tid, s->stack,
							 s->state,    s->source,  1,	  b - a};
		}
		if (!ns || by_window)
			continue;
		if (!tally_grow_in((void **)v, cap, *n + 1, sizeof(**v)))
			return -ENOMEM;
		(*v)[(*n)++] =
		    (struct proc_use){0, k->section, s->tid, s->stack, s->state, s->source, 1, ns};
	}
	return 0;
}

int jobprocs_during(const struct jobprocs *jp, const struct report_set *set, unsigned launcher,
		    const uint64_t (*w)[2], size_t nw, bool by_window, struct proc_use **out,
		    size_t *n)
{
	struct proc_use *v = NULL;
	size_t nv = 0, cap = 0, i, k = 0;

	*out = NULL;
	*n = 0;
	for (i = 0; jp && nw && launcher < set->nsections && i < jp->nkept; i++) {
		const struct kept *kp = &jp->kept[i];

		if (kp->section >= set->nsections ||
		    !descends(jp, set, set->sections[kp->section], set->sections[launcher]))
			continue;
		if (take(kp, w, nw, by_window, &v, &nv, &cap) < 0) {
			free(v);
			return -ENOMEM;
		}
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), by_use);
	for (i = 0; i < nv; i++) { /* merge equal keys */
		if (k && by_use(&v[k - 1], &v[i]) == 0) {
			v[k - 1].samples += v[i].samples;
			v[k - 1].ns += v[i].ns;
		} else {
			v[k++] = v[i];
		}
	}
	*out = v;
	*n = k;
	return 0;
}
