/* SPDX-License-Identifier: MIT */
/* LOSS, DROPS and THREADS payloads, each encoder beside its decoder; see payloads.h. */
#include "payloads.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* ---- LOSS ----------------------------------------------------------------------------------- */

void tally_loss_put(struct tally_buf *b, uint64_t t0, uint64_t t1, unsigned counter, uint64_t count)
{
	tally_buf_put_varint(b, t0);
	tally_buf_put_varint(b, t1);
	tally_buf_put_varint(b, counter);
	tally_buf_put_varint(b, count);
}

bool tally_loss_decode(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};

	while (!c.bad && c.p < c.end) {
		uint64_t t0 = tally_cur_varint(&c), t1 = tally_cur_varint(&c);
		uint64_t cls = tally_cur_varint(&c), count = tally_cur_varint(&c);
		struct tally_window *w;

		if (c.bad)
			break;
		w = tally_array_push(&s->windows, &s->nwindows, sizeof(*w));
		if (w)
			*w = (struct tally_window){t0, t1, (unsigned)cls, count};
		if (cls < TALLY_C_MAX)
			s->explicit_windows[cls / 64] |= 1ull << cls % 64;
	}
	return !c.bad;
}

/* ---- DROPS ---------------------------------------------------------------------------------- */

void tally_drops_put(struct tally_buf *b, const struct tally_drops *d)
{
	tally_buf_put_varint(b, d->source);
	tally_buf_put_varint(b, d->context);
	tally_buf_put_varint(b, d->device);
	tally_buf_put_varint(b, d->stream);
	tally_buf_put_varint(b, d->count);
}

/* DROPS: cumulative, so each chunk replaces the one before.  A process has a handful of
 * contexts: entries past TALLY_DROPS_MAX are not kept, so a hostile chunk costs no memory. */
#define TALLY_DROPS_MAX 4096
bool tally_drops_decode(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_drops *d = NULL;
	size_t n = 0;

	while (!c.bad && c.p < c.end) {
		struct tally_drops e;

		e.source = (unsigned)tally_cur_varint(&c);
		e.context = (uint32_t)tally_cur_varint(&c);
		e.device = (uint32_t)tally_cur_varint(&c);
		e.stream = (uint32_t)tally_cur_varint(&c);
		e.count = tally_cur_varint(&c);
		if (c.bad || n == TALLY_DROPS_MAX || !tally_array_push(&d, &n, sizeof(e)))
			break;
		d[n - 1] = e;
	}
	if (c.bad) {
		free(d);
		return false;
	}
	free(s->drops);
	s->drops = d;
	s->ndrops = n;
	return true;
}

/* ---- THREADS -------------------------------------------------------------------------------- */

void tally_thread_put(struct tally_buf *b, uint64_t tid, uint64_t pthread_id, unsigned flags,
		      const char *name, size_t name_len)
{
	tally_buf_put_varint(b, tid);
	tally_buf_put_varint(b, pthread_id);
	tally_buf_put_varint(b, flags);
	tally_buf_put_varint(b, name_len);
	tally_buf_put(b, name, name_len);
}

/* THREADS: entries appended in file order (a later entry for a tid wins); a section keeps at
 * most TALLY_THREADS_MAX, so a hostile file costs bounded memory and linear time. */
#define TALLY_THREADS_MAX 65536
bool tally_threads_decode(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};

	while (!c.bad && c.p < c.end) {
		uint64_t tid = tally_cur_varint(&c), pthread_id = tally_cur_varint(&c);
		uint64_t flags = tally_cur_varint(&c), nlen = tally_cur_varint(&c);
		const uint8_t *name = tally_cur_bytes(&c, nlen);
		struct tally_thread *t;

		/* a kernel tid is 32 bits: a wider one would be cut and taken for another thread */
		if (c.bad || !name || tid > UINT32_MAX)
			return false;
		if (s->nthreads == TALLY_THREADS_MAX)
			continue;
		t = tally_array_push(&s->threads, &s->nthreads, sizeof(*t));
		if (!t)
			return true;
		t->tid = (uint32_t)tid;
		t->pthread_id = pthread_id;
		t->flags = (unsigned)flags;
		t->name = malloc(nlen + 1);
		if (t->name) {
			memcpy(t->name, name, nlen);
			t->name[nlen] = 0;
		}
	}
	return !c.bad;
}
