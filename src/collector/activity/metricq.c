/* SPDX-License-Identifier: MIT */
/* The sampler-to-consumer hand-off; see metricq.h. */
#include "metricq.h"
#include "libc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NCOUNTS (TALLY_C_METRIC_DEVICES - TALLY_C_METRIC_DECODED + 1)

void metricq_init(struct metricq *q, unsigned limit)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	q->limit = limit;
}

void metricq_fini(struct metricq *q)
{
	struct pm_batch *b = metricq_take(q), *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	pthread_mutex_destroy(&q->lock);
}

int metricq_put(struct metricq *q, struct pm_batch *b)
{
	int rc = 0;

	b->next = NULL;
	libc_pthread_mutex_lock(&q->lock);
	if (q->pending >= q->limit) {
		rc = -ENOSPC;
	} else {
		if (q->tail)
			q->tail->next = b;
		else
			q->head = b;
		q->tail = b;
		q->pending++;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

struct pm_batch *metricq_take(struct metricq *q)
{
	struct pm_batch *b;

	libc_pthread_mutex_lock(&q->lock);
	b = q->head;
	q->head = q->tail = NULL;
	q->pending = 0;
	pthread_mutex_unlock(&q->lock);
	return b;
}

void metricq_gap(struct metricq *q, uint64_t t0, uint64_t t1)
{
	struct metric_gap *g;

	if (t1 <= t0)
		return;
	libc_pthread_mutex_lock(&q->lock);
	if (q->ngaps < METRICQ_GAPS) {
		q->gaps[q->ngaps++] = (struct metric_gap){t0, t1, 1, t1 - t0};
	} else { /* the last entry spans every gap beyond the first METRICQ_GAPS - 1 */
		g = &q->gaps[METRICQ_GAPS - 1];
		g->t0 = t0 < g->t0 ? t0 : g->t0;
		g->t1 = t1 > g->t1 ? t1 : g->t1;
		g->count++;
		g->ns += t1 - t0;
	}
	pthread_mutex_unlock(&q->lock);
}

unsigned metricq_take_gaps(struct metricq *q, struct metric_gap *out)
{
	unsigned n;

	libc_pthread_mutex_lock(&q->lock);
	n = q->ngaps;
	memcpy(out, q->gaps, n * sizeof(*out));
	q->ngaps = 0;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void metricq_count(struct metricq *q, unsigned counter, uint64_t n)
{
	if (counter >= TALLY_C_METRIC_DECODED && counter < TALLY_C_METRIC_DECODED + NCOUNTS)
		atomic_fetch_add_explicit(&q->counts[counter - TALLY_C_METRIC_DECODED], n,
					  memory_order_relaxed);
}

void metricq_snapshot(struct metricq *q, uint64_t *v)
{
	unsigned i;

	for (i = 0; i < NCOUNTS; i++)
		v[TALLY_C_METRIC_DECODED + i] +=
		    atomic_load_explicit(&q->counts[i], memory_order_relaxed);
}
