/* SPDX-License-Identifier: MIT */
/* A sorted sequence larger than memory, in runs; see spill.h. */
#include "spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

#define WINDOW (64u << 10) /* bytes a run is read in at most, while merging */

void spill_init(struct spill *s, size_t elem, size_t budget, int (*cmp)(const void *, const void *))
{
	const char *env = getenv("TALLY_SPILL_BUDGET");

	memset(s, 0, sizeof(*s));
	s->elem = elem;
	s->cmp = cmp;
	s->fd = -1;
	s->budget = budget ? budget : SPILL_BUDGET;
	if (env && *env && strtoull(env, NULL, 10) > 0)
		s->budget = (size_t)strtoull(env, NULL, 10);
}

/* The temporary file, made unlinked: O_TMPFILE, or a name removed at once. */
static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/.tally-spill-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static int write_all(int fd, const char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t k = pwrite(fd, p, len, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -(k < 0 ? errno : EIO);
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* The run in memory, sorted, to the file.  Without a file to write to (a read-only TMPDIR, a
 * full one), the spill stays in memory from there on: it needs the memory it would have saved,
 * and is never wrong. */
static int write_run(struct spill *s)
{
	int rc;

	if (s->fd < 0 && (s->fd = temp_file()) < 0) {
		s->no_file = errno ? errno : EIO;
		s->budget = SIZE_MAX;
		return 0;
	}
	if (!tally_grow_in((void **)&s->runs, &s->rcap, s->nruns + 1, sizeof(*s->runs)))
		return -ENOMEM;
	qsort(s->mem, s->n, s->elem, s->cmp);
	if ((rc = write_all(s->fd, s->mem, s->n * s->elem, s->end)) < 0) {
		s->no_file = -rc;
		s->budget = SIZE_MAX; /* this run stays where it is, and the next ones with it */
		return 0;
	}
	s->runs[s->nruns++] = (struct spill_run){.off = s->end, .n = s->n};
	s->end += (uint64_t)s->n * s->elem;
	s->n = 0;
	return 0;
}

void *spill_push(struct spill *s)
{
	void *p;
	int rc;

	if (s->err)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256, most = s->budget / s->elem;
		char *m;

		if (s->n && s->n >= most) { /* the run is full: to the file, and a new one */
			if ((rc = write_run(s)) < 0) {
				s->err = -rc;
				return NULL;
			}
		}
		if (s->n == s->cap) {
			cap = cap > most && most > s->cap ? most : cap;
			if (!(m = tally_resize(s->mem, cap, s->elem))) {
				s->err = ENOMEM;
				return NULL;
			}
			s->mem = m;
			s->cap = cap;
		}
	}
	p = s->mem + s->n++ * s->elem;
	memset(p, 0, s->elem);
	s->total++;
	return p;
}

int spill_sort(struct spill *s)
{
	size_t i, window;

	if (s->err)
		return -s->err;
	if (s->n > 1)
		qsort(s->mem, s->n, s->elem, s->cmp);
	/* the last run stays in memory and merges with the others */
	window = s->nruns ? s->budget / s->nruns : 0;
	window = window < WINDOW ? window : WINDOW;
	window = window > s->elem ? window / s->elem : 1;
	for (i = 0; i < s->nruns; i++) {
		free(s->runs[i].buf);
		if (!(s->runs[i].buf = malloc(window * s->elem)))
			return -(s->err = ENOMEM);
		s->runs[i].room = window;
	}
	free(s->heap);
	free(s->cur);
	if (s->nruns &&
	    (!(s->heap = malloc((s->nruns + 1) * sizeof(*s->heap))) || !(s->cur = malloc(s->elem))))
		return -(s->err = ENOMEM);
	s->sorted = true;
	return spill_rewind(s);
}

static const void *head(const struct spill *s, size_t k)
{
	return k < s->nruns ? s->runs[k].buf + s->runs[k].at * s->elem
			    : s->mem + s->mem_at * s->elem;
}

/* Heap order: the smaller head first, the earlier run on a tie (a total order: one output). */
static bool before(const struct spill *s, size_t a, size_t b)
{
	int c = s->cmp(head(s, a), head(s, b));

	return c < 0 || (c == 0 && a < b);
}

static void sift_down(struct spill *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, t;

		if (l < s->nheap && before(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->nheap && before(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			return;
		t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/* The next window of run k; 0 when it has none left (or -errno). */
static int fill(struct spill *s, size_t k)
{
	struct spill_run *r = &s->runs[k];
	uint64_t left = r->n - r->next, want = left < r->room ? left : r->room;
	size_t done = 0, len = (size_t)want * s->elem;

	while (done < len) {
		ssize_t got = pread(s->fd, r->buf + done, len - done,
				    (off_t)(r->off + r->next * s->elem + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -(got < 0 ? errno : EIO);
		done += (size_t)got;
	}
	r->next += want;
	r->nbuf = (size_t)want;
	r->at = 0;
	return want ? 1 : 0;
}

int spill_rewind(struct spill *s)
{
	size_t k;
	int rc;

	if (!s->sorted)
		return -EINVAL;
	s->mem_at = 0;
	s->nheap = 0;
	for (k = 0; k < s->nruns; k++) {
		s->runs[k].next = 0;
		if ((rc = fill(s, k)) < 0)
			return -(s->err = -rc);
		if (rc)
			s->heap[s->nheap++] = k;
	}
	if (s->nruns && s->n)
		s->heap[s->nheap++] = s->nruns;
	for (k = s->nheap / 2; k-- > 0;)
		sift_down(s, k);
	return 0;
}

const void *spill_next(struct spill *s)
{
	size_t k;
	int rc;

	if (!s->sorted || s->err)
		return NULL;
	if (!s->nruns)
		return s->mem_at < s->n ? s->mem + s->mem_at++ * s->elem : NULL;
	if (!s->nheap)
		return NULL;
	k = s->heap[0];
	memcpy(s->cur, head(s, k), s->elem);
	if (k == s->nruns) {
		if (++s->mem_at == s->n)
			s->heap[0] = s->heap[--s->nheap];
	} else if (++s->runs[k].at == s->runs[k].nbuf) {
		if ((rc = fill(s, k)) < 0) {
			s->err = -rc;
			return NULL;
		}
		if (!rc)
			s->heap[0] = s->heap[--s->nheap];
	}
	sift_down(s, 0);
	return s->cur;
}

bool spill_spilled(const struct spill *s)
{
	return s->nruns != 0;
}

void *spill_at(const struct spill *s, uint64_t i)
{
	return s->sorted && !s->nruns && i < s->n ? s->mem + i * s->elem : NULL;
}

void spill_fini(struct spill *s)
{
	size_t i;

	for (i = 0; i < s->nruns; i++)
		free(s->runs[i].buf);
	free(s->runs);
	free(s->heap);
	free(s->cur);
	free(s->mem);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}
