/* SPDX-License-Identifier: MIT */
/* cpu_sample_sum: samples by function and line, flat and cumulative; see samplesum.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hashmap.h"
#include "samplesum.h"
#include "stacks.h"

#define TORN_LABEL	 "[torn: the frames changed while read]"
#define NO_STACK_LABEL	 "[no stack]"
#define MAX_UNIQUE_DEPTH 256 /* frames compared for "once per sample"; deeper ones each count */

/* Per section and kind: samples (and samples on a CPU) by stack id. */
struct stack_counts {
	uint64_t *n, *on_cpu;
	uint32_t cap;
};

struct sample_sum {
	struct stack_counts sec[SAMPLE_SUM_KINDS];
	uint64_t torn, samples[SAMPLE_SUM_KINDS];
	struct sample_sum_row *rows;
	size_t nrows, rows_cap;
	struct tally_map row_at; /* a row's key's hash -> its index in rows + 1 */
};

struct sample_sum *sample_sum_new(void)
{
	return calloc(1, sizeof(struct sample_sum));
}

void sample_sum_free(struct sample_sum *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < SAMPLE_SUM_KINDS; i++) {
		free(s->sec[i].n);
		free(s->sec[i].on_cpu);
	}
	for (i = 0; i < s->nrows; i++)
		free(s->rows[i].label);
	free(s->rows);
	tally_map_fini(&s->row_at);
	free(s);
}

static bool counts_grow(struct stack_counts *c, uint32_t id)
{
	uint32_t cap = c->cap ? c->cap : 64;
	uint64_t *n, *on;

	if (id < c->cap)
		return true;
	while (cap <= id)
		cap *= 2;
	n = tally_resize(c->n, cap, sizeof(*n));
	if (n)
		c->n = n;
	on = n ? tally_resize(c->on_cpu, cap, sizeof(*on)) : NULL;
	if (!on)
		return false;
	c->on_cpu = on;
	memset(c->n + c->cap, 0, (cap - c->cap) * sizeof(*n));
	memset(c->on_cpu + c->cap, 0, (cap - c->cap) * sizeof(*on));
	c->cap = cap;
	return true;
}

int sample_sum_add(struct sample_sum *s, const struct report_section *rs,
		   const struct tally_record *r, size_t n)
{
	size_t i;

	if (!n || r[0].kind != TALLY_KIND_CPU_SAMPLE)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned k =
		    r[i].subkind == TALLY_SAMPLE_PYTHON ? SAMPLE_SUM_PYTHON : SAMPLE_SUM_NATIVE;
		/* a stack id past the section's table (a damaged file) counts as no stack */
		uint32_t id = r[i].stack_id <= rs->s->stacks.nstacks ? r[i].stack_id : 0;

		if (r[i].kind != TALLY_KIND_CPU_SAMPLE)
			continue;
		s->samples[k]++;
		if (r[i].flags & TALLY_REC_TORN) {
			s->torn++;
			continue;
		}
		if (!counts_grow(&s->sec[k], id))
			return -ENOMEM;
		s->sec[k].n[id]++;
		s->sec[k].on_cpu[id] += r[i].value == TALLY_THREAD_ON_CPU;
	}
	return 0;
}

/* ---- rows by label ------------------------------------------------------------------------- */

/* A row's key: its label, and what kind of row it is. */
static uint64_t label_hash(const char *label, unsigned kind, bool by_line)
{
	return tally_hash_bytes_from(TALLY_FNV_START ^ (kind * 2u + by_line), label, strlen(label));
}

/* The key row_of looks for (tally_map_find's ctx). */
struct row_key {
	const struct sample_sum *s;
	const char *label;
	unsigned kind;
	bool by_line;
};

static bool same_row(void *ctx, uint32_t value)
{
	const struct row_key *k = ctx;
	const struct sample_sum_row *r = &k->s->rows[value - 1];

	return r->kind == k->kind && r->by_line == k->by_line && strcmp(r->label, k->label) == 0;
}

static struct sample_sum_row *row_of(struct sample_sum *s, const char *label, unsigned kind,
				     bool by_line)
{
	struct row_key key = {s, label, kind, by_line};
	uint64_t h = label_hash(label, kind, by_line);
	uint32_t found = tally_map_find(&s->row_at, h, same_row, &key);
	struct sample_sum_row *r;

	if (found)
		return &s->rows[found - 1];
	if (s->nrows >= UINT32_MAX - 1)
		return NULL;
	if (s->nrows == s->rows_cap) {
		size_t cap = s->rows_cap ? 2 * s->rows_cap : 64;
		struct sample_sum_row *t = tally_resize(s->rows, cap, sizeof(*t));

		if (!t)
			return NULL;
		s->rows = t;
		s->rows_cap = cap;
	}
	r = &s->rows[s->nrows];
	*r = (struct sample_sum_row){
	    .label = strdup(label), .kind = (uint8_t)kind, .by_line = by_line};
	if (!r->label)
		return NULL;
	if (tally_map_add(&s->row_at, h, (uint32_t)s->nrows + 1) < 0) {
		free(r->label);
		return NULL;
	}
	s->nrows++;
	return r;
}

/* "func (file)" from a frame: its line label less the line ("sym (file:12)" -> "sym (file)"). */
static void function_label(const struct tally_frame *f, const char *line_label, char *out,
			   size_t len)
{
	size_t n = strlen(line_label), digits = 0;

	if (f && f->type == TALLY_FRAME_PYTHON) {
		snprintf(out, len, "%s (%s)", *f->func ? f->func : "?", f->file);
		return;
	}
	if (n >= 3 && line_label[n - 1] == ')')
		while (digits + 2 < n && isdigit((unsigned char)line_label[n - 2 - digits]))
			digits++;
	if (digits && line_label[n - 2 - digits] == ':')
		snprintf(out, len, "%.*s)", (int)(n - 2 - digits), line_label);
	else
		snprintf(out, len, "%s", line_label);
}

/* Whether frames[0..i) already hold a frame with the same label as frames[i]. */
static bool seen_before(char (*labels)[512], uint32_t i)
{
	uint32_t k;

	for (k = 0; k < i; k++)
		if (strcmp(labels[k], labels[i]) == 0)
			return true;
	return false;
}

/* n samples (on_cpu of them on a CPU) of one stack, into both groupings. */
static int add_stack(struct sample_sum *s, struct report_section *rs, unsigned kind, uint32_t id,
		     uint64_t n, uint64_t on_cpu)
{
	static char labels[2][MAX_UNIQUE_DEPTH][512];
	const struct tally_stack *st = id ? tally_stack_get(&rs->s->stacks, id) : NULL;
	uint32_t depth = st ? st->nframes : 1, i;
	unsigned by_line;

	for (i = 0; i < depth; i++) {
		uint32_t fid = st ? st->frames[i] : 0;
		const char *line =
		    !st ? (id ? "[stack lost]" : NO_STACK_LABEL) : report_frame_label(rs, fid);
		uint32_t slot = i < MAX_UNIQUE_DEPTH ? i : MAX_UNIQUE_DEPTH - 1;

		snprintf(labels[1][slot], sizeof(labels[1][slot]), "%s", line);
		function_label(st ? tally_frame_get(&rs->s->stacks, fid) : NULL, line,
			       labels[0][slot], sizeof(labels[0][slot]));
		for (by_line = 0; by_line < 2; by_line++) {
			struct sample_sum_row *r;

			if (i < MAX_UNIQUE_DEPTH && seen_before(labels[by_line], i))
				continue; /* recursion: a sample counts once per frame */
			if (!(r = row_of(s, labels[by_line][slot], kind, by_line)))
				return -ENOMEM;
			r->total += n;
			if (i == 0) {
				r->self += n;
				r->on_cpu += on_cpu;
			}
		}
	}
	return 0;
}

int sample_sum_section(struct sample_sum *s, struct report_section *rs)
{
	unsigned k;
	uint32_t id;
	int rc = 0;

	for (k = 0; k < SAMPLE_SUM_KINDS; k++) {
		struct stack_counts *c = &s->sec[k];

		for (id = 0; id < c->cap && rc == 0; id++)
			if (c->n[id])
				rc = add_stack(s, rs, k, id, c->n[id], c->on_cpu[id]);
		if (c->cap) {
			memset(c->n, 0, c->cap * sizeof(*c->n));
			memset(c->on_cpu, 0, c->cap * sizeof(*c->on_cpu));
		}
	}
	return rc;
}

static int by_weight(const void *a, const void *b)
{
	const struct sample_sum_row *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->by_line != y->by_line)
		return x->by_line ? 1 : -1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->label, y->label);
}

int sample_sum_finish(struct sample_sum *s)
{
	if (s->torn) { /* torn samples have no frames: a row of their own, so shares add up */
		struct sample_sum_row *r = row_of(s, TORN_LABEL, SAMPLE_SUM_PYTHON, false);

		if (!r)
			return -ENOMEM;
		r->self = r->total = s->torn;
	}
	if (s->nrows > 1)
		qsort(s->rows, s->nrows, sizeof(*s->rows), by_weight);
	tally_map_fini(&s->row_at); /* the order moved: no lookups after this */
	return 0;
}

const struct sample_sum_row *sample_sum_rows(const struct sample_sum *s, size_t *n)
{
	*n = s->nrows;
	return s->rows;
}

uint64_t sample_sum_samples(const struct sample_sum *s, enum sample_sum_kind k)
{
	return k < SAMPLE_SUM_KINDS ? s->samples[k] : 0;
}
