/* SPDX-License-Identifier: MIT */
/* Reading many traces on all cores; see prefetch.h. */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An item taken from the framer: its payload copied behind it, its records taken as they are. */
struct qitem {
	struct qitem *next;
	size_t bytes;
	struct tally_item it;
	struct tally_record *recs; /* owned */
	size_t recs_cap;
};

/* Record arrays applied and given back, for the framers to decode into again: fresh arrays would
 * cost page faults chunk after chunk. */
#define SPARES 16

struct slot {
	struct qitem *head, *tail;
	size_t bytes;
	bool done; /* the framer has emitted everything (or failed to open) */
	int open_errno;
};

struct prefetch {
	struct report_set *set;
	struct slot *slots;
	size_t next;	/* the next input a worker takes */
	size_t reading; /* the input being applied */
	size_t bytes;	/* waiting in all queues */
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t changed; /* an item queued, taken, or an input done */
	pthread_t *threads;
	unsigned nthreads;
	struct {
		struct tally_record *v;
		size_t cap;
	} spare[SPARES];
	unsigned nspare;
};

struct emit_ctx {
	struct prefetch *p;
	struct slot *slot;
	size_t k;
};

/* Must q wait?  The input being applied always gets room once its queue is empty, so it never
 * waits on the others' items: no deadlock, and memory stays bounded. */
static bool must_wait(const struct prefetch *p, const struct emit_ctx *e, const struct qitem *q)
{
	if (p->stop || !e->slot->head)
		return false;
	if (e->slot->bytes + q->bytes > PREFETCH_QUEUE_BYTES)
		return true;
	return e->k != p->reading && p->bytes + q->bytes > PREFETCH_BYTES;
}

static struct qitem *take_item(struct tally_item *it)
{
	size_t payload = it->type == TALLY_ITEM_CHUNK ? it->info.len : 0;
	size_t recs = it->nrecs > 0 ? (size_t)it->nrecs * sizeof(*it->recs) : 0;
	struct qitem *q = malloc(sizeof(*q) + payload);

	if (!q)
		return NULL;
	q->next = NULL;
	q->bytes = sizeof(*q) + recs + payload;
	q->it = *it;
	q->recs = NULL;
	if (recs) { /* decoding was most of the work: the array changes hands, uncopied */
		q->recs = (struct tally_record *)it->recs;
		it->recs_taken = true;
	}
	q->recs_cap = it->recs_cap;
	if (payload) {
		memcpy(q + 1, it->payload, payload);
		q->it.payload = (const uint8_t *)(q + 1);
	}
	return q;
}

/* Free q, its records array kept as a spare when there is room (p's lock not held). */
static void free_item(struct prefetch *p, struct qitem *q)
{
	if (q->recs && p) {
		pthread_mutex_lock(&p->lock);
		if (p->nspare < SPARES) {
			p->spare[p->nspare].v = q->recs;
			p->spare[p->nspare++].cap = q->recs_cap;
			q->recs = NULL;
		}
		pthread_mutex_unlock(&p->lock);
	}
	free(q->recs);
	free(q);
}

/* The framer's emit: queue the item, waiting while the queues are full. */
static int enqueue(void *ctx, struct tally_item *it)
{
	struct emit_ctx *e = ctx;
	struct prefetch *p = e->p;
	struct qitem *q = take_item(it);
	bool stopped;

	if (!q)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	while (must_wait(p, e, q))
		pthread_cond_wait(&p->changed, &p->lock);
	if (it->recs_taken && p->nspare) { /* the framer decodes into a spare next */
		it->spare = p->spare[--p->nspare].v;
		it->spare_cap = p->spare[p->nspare].cap;
	}
	stopped = p->stop;
	if (!stopped) {
		if (e->slot->tail)
			e->slot->tail->next = q;
		else
			e->slot->head = q;
		e->slot->tail = q;
		e->slot->bytes += q->bytes;
		p->bytes += q->bytes;
		pthread_cond_broadcast(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	if (stopped)
		free_item(NULL, q);
	return stopped ? -ECANCELED : 0;
}

/* Frame input k into its slot; a failure to read shows as damage, as in a serial read. */
static void frame_input(struct prefetch *p, size_t k)
{
	struct report_input *in = &p->set->inputs[k];
	struct emit_ctx e = {p, &p->slots[k], k};
	struct tally_framer *fr = NULL;
	int err = 0, rc = 0;

	/* O_NONBLOCK: a regular file when opened first; should it be a FIFO now, fail, not wait */
	in->f->fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in->f->fd < 0)
		err = errno;
	else if (!(fr = tally_framer_new(in->f)))
		err = ENOMEM;
	else
		rc = tally_framer_run(fr, enqueue, &e);
	if (rc == -ENOMEM)
		err = ENOMEM;
	tally_framer_free(fr);
	if (in->f->fd >= 0)
		close(in->f->fd);
	in->f->fd = -1;
	tally_file_drop_window(in->f);
	pthread_mutex_lock(&p->lock);
	p->slots[k].done = true;
	p->slots[k].open_errno = err;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
	struct prefetch *p = arg;

	for (;;) {
		size_t k;

		pthread_mutex_lock(&p->lock);
		k = p->stop ? p->set->ninputs : p->next++;
		pthread_mutex_unlock(&p->lock);
		if (k >= p->set->ninputs)
			return NULL;
		frame_input(p, k);
	}
}

struct prefetch *prefetch_start(struct report_set *set, unsigned workers)
{
	struct prefetch *p;

	if (workers < 1 || !set->ninputs)
		return NULL;
	if (workers > set->ninputs)
		workers = (unsigned)set->ninputs;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->set = set;
	p->slots = calloc(set->ninputs, sizeof(*p->slots));
	p->threads = calloc(workers, sizeof(*p->threads));
	if (!p->slots || !p->threads) {
		free(p->slots);
		free(p->threads);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->changed, NULL);
	for (p->nthreads = 0; p->nthreads < workers; p->nthreads++)
		if (pthread_create(&p->threads[p->nthreads], NULL, worker, p) != 0)
			break;
	if (!p->nthreads) {
		prefetch_stop(p);
		return NULL;
	}
	return p;
}

int prefetch_input(struct prefetch *p, size_t i, struct tally_reading *r, char *err, size_t errlen)
{
	struct slot *slot = &p->slots[i];
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	p->reading = i;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	for (;;) {
		struct qitem *q;

		pthread_mutex_lock(&p->lock);
		while (!slot->head && !slot->done)
			pthread_cond_wait(&p->changed, &p->lock);
		q = slot->head;
		if (q) {
			slot->head = q->next;
			if (!slot->head)
				slot->tail = NULL;
			slot->bytes -= q->bytes;
			p->bytes -= q->bytes;
			pthread_cond_broadcast(&p->changed);
		}
		pthread_mutex_unlock(&p->lock);
		if (!q)
			break;
		rc = tally_reading_apply(r, &q->it);
		free_item(p, q);
		if (rc)
			return rc;
	}
	if (slot->open_errno) {
		snprintf(err, errlen, "%s: %s", p->set->inputs[i].path, strerror(slot->open_errno));
		return -slot->open_errno;
	}
	return 0;
}

void prefetch_stop(struct prefetch *p)
{
	unsigned t;
	size_t i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	for (t = 0; t < p->nthreads; t++)
		pthread_join(p->threads[t], NULL);
	for (i = 0; i < p->set->ninputs; i++)
		while (p->slots[i].head) {
			struct qitem *q = p->slots[i].head;

			p->slots[i].head = q->next;
			free_item(NULL, q);
		}
	while (p->nspare)
		free(p->spare[--p->nspare].v);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->changed);
	free(p->slots);
	free(p->threads);
	free(p);
}
