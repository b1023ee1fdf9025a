/* SPDX-License-Identifier: MIT */
/* NVTX ranges projected onto the streams their launches ran on; see kineto-annot.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kineto-annot.h"

int kanno_range(struct kanno *a, uint64_t thread, uint64_t t0, uint64_t t1, uint32_t name_id)
{
	if (a->nranges >= UINT32_MAX ||
	    !tally_grow_in(&a->ranges, &a->ranges_cap, a->nranges + 1, sizeof(*a->ranges)))
		return -ENOMEM;
	a->ranges[a->nranges] =
	    (struct kanno_range){thread, t0, t1 > t0 ? t1 : t0, name_id, (uint32_t)a->nranges};
	a->nranges++;
	return 0;
}

int kanno_launch(struct kanno *a, uint64_t thread, uint64_t t, uint32_t corr)
{
	if (!tally_grow_in(&a->launches, &a->launches_cap, a->nlaunches + 1, sizeof(*a->launches)))
		return -ENOMEM;
	a->launches[a->nlaunches++] = (struct kanno_launch){thread, t, corr};
	return 0;
}

int kanno_gpu(struct kanno *a, uint32_t corr, uint32_t device, uint32_t stream, uint64_t start,
	      uint64_t end)
{
	if (!tally_grow_in(&a->gpu, &a->gpu_cap, a->ngpu + 1, sizeof(*a->gpu)))
		return -ENOMEM;
	a->gpu[a->ngpu++] =
	    (struct kanno_gpu){start, end > start ? end : start, corr, device, stream};
	return 0;
}

/* By thread, then start; at one start the longer first, so that the inner one is pushed last. */
static int by_thread_start(const void *x, const void *y)
{
	const struct kanno_range *a = x, *b = y;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->t0 != b->t0)
		return a->t0 < b->t0 ? -1 : 1;
	if (a->t1 != b->t1)
		return a->t1 > b->t1 ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int by_thread_time(const void *x, const void *y)
{
	const struct kanno_launch *a = x, *b = y;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	return a->t < b->t ? -1 : a->t > b->t;
}

/*
 * Each launch's owner: the range of its thread open at its time with the latest start.  One sweep
 * over both lists in (thread, time) order with a stack of the ranges begun so far: a range that
 * ended before the launch is popped when it is on top; one below the top that ended is covered by
 * a later-begun range still open, which is the answer while it lasts.
 */
static int owners(struct kanno *a)
{
	size_t *stack = malloc((a->nranges ? a->nranges : 1) * sizeof(*stack)), depth = 0, r = 0, i;
	uint64_t thread = 0;
	int rc = 0;

	if (!stack)
		return -ENOMEM;
	for (i = 0; rc == 0 && i < a->nlaunches; i++) {
		const struct kanno_launch *l = &a->launches[i];

		if (i == 0 || l->thread != thread) {
			thread = l->thread;
			depth = 0;
			while (r < a->nranges && a->ranges[r].thread < thread)
				r++;
		}
		while (r < a->nranges && a->ranges[r].thread == thread && a->ranges[r].t0 <= l->t)
			stack[depth++] = r++;
		while (depth && a->ranges[stack[depth - 1]].t1 < l->t)
			depth--;
		if (depth && l->corr)
			rc = tally_map_put(&a->owner, l->corr, 0, (uint32_t)stack[depth - 1] + 1);
	}
	free(stack);
	return rc;
}

/* GPU record g into its owner's span on its stream. */
static int extend(struct kanno *a, const struct kanno_gpu *g)
{
	uint32_t owner = tally_map_get(&a->owner, g->corr, 0), at;
	const struct kanno_range *r;
	struct kanno_span *s;

	if (!owner)
		return 0;
	r = &a->ranges[owner - 1];
	at = tally_map_get(&a->at, owner, tally_key32(g->device, g->stream));
	if (at) {
		s = &a->spans[at - 1];
		s->start = g->start < s->start ? g->start : s->start;
		s->end = g->end > s->end ? g->end : s->end;
		return 0;
	}
	if (!tally_grow_in(&a->spans, &a->spans_cap, a->nspans + 1, sizeof(*a->spans)) ||
	    tally_map_put(&a->at, owner, tally_key32(g->device, g->stream),
			  (uint32_t)a->nspans + 1) < 0)
		return -ENOMEM;
	a->spans[a->nspans++] =
	    (struct kanno_span){r->index, r->name_id, g->device, g->stream, g->start, g->end};
	return 0;
}

static int by_range_stream(const void *x, const void *y)
{
	const struct kanno_span *a = x, *b = y;

	if (a->range != b->range)
		return a->range < b->range ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->stream < b->stream ? -1 : a->stream > b->stream;
}

int kanno_spans(struct kanno *a, const struct kanno_span **spans, size_t *n)
{
	size_t i;
	int rc = 0;

	*spans = NULL;
	*n = 0;
	if (!a->nranges || !a->ngpu)
		return 0;
	qsort(a->ranges, a->nranges, sizeof(*a->ranges), by_thread_start);
	if (a->nlaunches)
		qsort(a->launches, a->nlaunches, sizeof(*a->launches), by_thread_time);
	rc = owners(a);
	for (i = 0; rc == 0 && i < a->ngpu; i++)
		rc = extend(a, &a->gpu[i]);
	if (rc < 0)
		return -ENOMEM;
	if (a->nspans > 1)
		qsort(a->spans, a->nspans, sizeof(*a->spans), by_range_stream);
	*spans = a->spans;
	*n = a->nspans;
	return 0;
}

void kanno_reset(struct kanno *a)
{
	a->nranges = a->nlaunches = a->ngpu = a->nspans = 0;
	tally_map_fini(&a->owner);
	tally_map_fini(&a->at);
}

void kanno_free(struct kanno *a)
{
	kanno_reset(a);
	free(a->ranges);
	free(a->launches);
	free(a->gpu);
	free(a->spans);
	memset(a, 0, sizeof(*a));
}
