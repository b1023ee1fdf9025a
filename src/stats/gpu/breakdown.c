/* SPDX-License-Identifier: MIT */
/* Where each device's time went; see breakdown.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "breakdown.h"
#include "gaps.h"
#include "grow.h"
#include "spans.h"

#define DEFAULT_GAP_MIN_NS 1000000ull

/*
 * Communication kernels, by name: a kernel whose name holds one of these (case ignored) moves
 * data between GPUs.  NCCL's are ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_...;
 * RCCL keeps NCCL's names; MSCCL's are mscclKernel_...; NVSHMEM's nvshmemi_...; the collective
 * words catch libraries that name kernels after what they do (vLLM's cross_device_reduce,
 * PyTorch's symmetric-memory one_shot_all_reduce).  "broadcast" is not one: elementwise kernels
 * broadcast.
 */
static const char *const comm_patterns[] = {
    "nccl",	     "rccl",
    "msccl",	     "nvshmem",
    "allreduce",     "all_reduce",
    "allgather",     "all_gather",
    "reducescatter", "reduce_scatter",
    "alltoall",	     "all_to_all",
    "sendrecv",	     "cross_device_reduce",
};

static bool holds_nocase(const char *s, const char *pat)
{
	size_t n = strlen(pat);

	for (; *s; s++)
		if (strncasecmp(s, pat, n) == 0)
			return true;
	return false;
}

bool breakdown_kernel_is_comm(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(comm_patterns) / sizeof(comm_patterns[0]); i++)
		if (holds_nocase(name, comm_patterns[i]))
			return true;
	return false;
}

/* The four unions, each exact: compute, communication, either, any GPU work. */
enum { SET_C, SET_M, SET_CM, SET_ALL, NSETS };

struct bd_dev {
	uint32_t device;
	struct span_set fine[NSETS];
	uint64_t measure[NSETS]; /* folded so far */
	struct span_set coarse;	 /* SET_ALL merged over gap_min; weight: busy ns folded into it */
	uint64_t first, last, floor;
	struct bd_row row; /* the counts that need no fold */
};

struct bd_sec {
	struct bd_dev *dev;
	size_t ndev, cap, last;
	uint8_t *kclass; /* string id -> 1 compute, 2 communication (0: not looked up yet) */
	uint32_t nkclass;
};

struct breakdown {
	uint64_t gap_min;
	struct bd_sec cur; /* the section being read (sections come one after another) */
	unsigned cur_index;
	bool cur_used;
	struct bd_row *rows;
	size_t nrows, cap;
};

struct breakdown *breakdown_new(uint64_t gap_min_ns)
{
	struct breakdown *b = calloc(1, sizeof(*b));

	if (b)
		b->gap_min = gap_min_ns ? gap_min_ns : DEFAULT_GAP_MIN_NS;
	return b;
}

static void dev_fini(struct bd_dev *d)
{
	unsigned k;

	for (k = 0; k < NSETS; k++)
		span_set_fini(&d->fine[k]);
	span_set_fini(&d->coarse);
}

static void sec_fini(struct bd_sec *s)
{
	size_t i;

	for (i = 0; i < s->ndev; i++)
		dev_fini(&s->dev[i]);
	free(s->dev);
	free(s->kclass);
	memset(s, 0, sizeof(*s));
}

void breakdown_free(struct breakdown *b)
{
	if (!b)
		return;
	sec_fini(&b->cur);
	free(b->rows);
	free(b);
}

const struct bd_row *breakdown_rows(const struct breakdown *b, size_t *n)
{
	*n = b->nrows;
	return b->rows;
}

struct bd_row *breakdown_rows_edit(struct breakdown *b, size_t *n)
{
	*n = b->nrows;
	return b->rows;
}

static struct bd_dev *dev_of(struct breakdown *b, uint32_t device)
{
	struct bd_sec *s = &b->cur;
	struct bd_dev *d;
	size_t i;
	unsigned k;

	if (s->last < s->ndev && s->dev[s->last].device == device)
		return &s->dev[s->last];
	for (i = 0; i < s->ndev; i++)
		if (s->dev[i].device == device)
			return &s->dev[s->last = i];
	if (s->ndev == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;

		if (!(d = tally_resize(s->dev, cap, sizeof(*d))))
			return NULL;
		s->dev = d;
		s->cap = cap;
	}
	d = &s->dev[s->ndev];
	memset(d, 0, sizeof(*d));
	d->device = device;
	d->first = UINT64_MAX;
	for (k = 0; k < NSETS; k++)
		d->fine[k].merge_gap = 1; /* exact: only overlapping or touching work merges */
	d->coarse.merge_gap = b->gap_min;
	d->row.device = device;
	return &s->dev[s->last = s->ndev++];
}

/* 2 for a communication kernel, 1 for compute; looked up once per string id. */
static unsigned kernel_class(struct bd_sec *s, struct report_section *rs, uint32_t id)
{
	if (id >= rs->s->nstrings)
		return breakdown_kernel_is_comm(report_string(rs, id)) ? 2 : 1;
	if (id >= s->nkclass) {
		uint32_t n = rs->s->nstrings;
		uint8_t *t = tally_resize(s->kclass, n, 1);

		if (!t)
			return breakdown_kernel_is_comm(report_string(rs, id)) ? 2 : 1;
		memset(t + s->nkclass, 0, n - s->nkclass);
		s->kclass = t;
		s->nkclass = n;
	}
	if (!s->kclass[id])
		s->kclass[id] = breakdown_kernel_is_comm(report_string(rs, id)) ? 2 : 1;
	return s->kclass[id];
}

/* ---- folding ---------------------------------------------------------------------------- */

struct fold_ctx {
	struct bd_dev *d;
	unsigned set;
};

static void fold_one(void *ctx, const struct span *sp)
{
	struct fold_ctx *f = ctx;
	struct span *c;

	f->d->measure[f->set] += sp->t1 - sp->t0;
	if (f->set == SET_ALL && (c = span_find(&f->d->coarse, sp->t0)))
		c->weight += sp->t1 - sp->t0;
}

/* Fold every segment that ends before t. */
static void fold(struct bd_dev *d, uint64_t t)
{
	unsigned k;

	for (k = 0; k < NSETS; k++) {
		struct fold_ctx f = {d, k};

		span_settle(&d->fine[k], t, fold_one, &f);
	}
	if (t > d->floor)
		d->floor = t;
}

/* After a batch: fold what is BD_HORIZON_NS behind the latest end, or half of a full set. */
static void fold_old(struct bd_dev *d)
{
	const struct span_set *all = &d->fine[SET_ALL];
	uint64_t t = d->last > BD_HORIZON_NS ? d->last - BD_HORIZON_NS : 0;
	unsigned k;

	for (k = 0; k < NSETS; k++)
		if (d->fine[k].n > BD_OPEN_MAX) {
			const struct span_set *full = &d->fine[k];
			uint64_t mid = full->s[full->n / 2].t0;

			t = mid > t ? mid : t;
		}
	if (all->n && all->s[0].t1 < t)
		fold(d, t);
}

static int add_to(struct bd_dev *d, unsigned set, uint64_t t0, uint64_t t1)
{
	return span_add(&d->fine[set], t0, t1, 0);
}

static int add_interval(struct bd_dev *d, unsigned cls, uint64_t t0, uint64_t t1)
{
	int rc = 0;

	if (t0 < d->floor) { /* folded already: what came before the fold cannot be placed */
		d->row.late++;
		d->row.late_ns += (t1 < d->floor ? t1 : d->floor) - t0;
		if (t1 <= d->floor)
			return 0;
		t0 = d->floor;
	}
	if (cls == 1)
		rc |= add_to(d, SET_C, t0, t1);
	if (cls == 2)
		rc |= add_to(d, SET_M, t0, t1);
	if (cls)
		rc |= add_to(d, SET_CM, t0, t1);
	rc |= add_to(d, SET_ALL, t0, t1);
	rc |= span_add(&d->coarse, t0, t1, 0);
	return rc ? -ENOMEM : 0;
}

static unsigned copy_slot(const struct tally_record *r)
{
	return r->kind == TALLY_KIND_MEMSET ? 15 : (r->subkind < 15 ? r->subkind : 0);
}

int breakdown_add(struct breakdown *b, struct report_section *rs, const struct tally_record *r,
		  size_t n)
{
	struct bd_dev *d = NULL;
	size_t i;

	if (!n || !tally_kind_is_gpu(r[0].kind))
		return 0;
	if (b->cur_used && b->cur_index != rs->index)
		sec_fini(&b->cur); /* a section that never ended (damaged input): drop it */
	b->cur_index = rs->index;
	b->cur_used = true;
	for (i = 0; i < n; i++) {
		uint64_t t0 = report_time(rs, r[i].start), t1 = report_time(rs, r[i].end);
		unsigned cls = 0;

		if ((r[i].flags & TALLY_REC_BAD_TIME) || !tally_kind_is_gpu(r[i].kind))
			continue;
		if (t1 < t0) /* a damaged record: an instant, not a span running backwards */
			t1 = t0;
		if (!d || d->device != r[i].device_id)
			if (!(d = dev_of(b, r[i].device_id)))
				return -ENOMEM;
		if (r[i].kind == TALLY_KIND_KERNEL) {
			cls = kernel_class(&b->cur, rs, r[i].name_id);
			d->row.kernels++;
		} else {
			d->row.copy_ns[copy_slot(&r[i])] += t1 - t0;
			d->row.copies++;
		}
		d->first = t0 < d->first ? t0 : d->first;
		d->last = t1 > d->last ? t1 : d->last;
		if (add_interval(d, cls, t0, t1) < 0)
			return -ENOMEM;
	}
	for (i = 0; i < b->cur.ndev; i++)
		fold_old(&b->cur.dev[i]);
	return 0;
}

/* ---- a section's rows --------------------------------------------------------------------- */

static void class_idle(struct bd_row *row, const struct report_section *rs, uint64_t t0,
		       uint64_t t1, uint64_t idle, bool gap)
{
	char why[120];
	bool unproven;

	if (!idle)
		return;
	unproven = report_gap_unproven(rs, t0, t1, why, sizeof(why));
	row->idle_unproven += unproven ? idle : 0;
	if (!gap)
		return;
	row->gap_idle += idle;
	row->gap_unproven += unproven ? idle : 0;
	if (idle > row->longest_gap) {
		row->longest_gap = idle;
		row->longest_gap_at = t0;
		row->longest_unproven = unproven;
	}
}

static void device_row(struct bd_dev *d, const struct report_section *rs, struct bd_row *row)
{
	const struct span_set *c = &d->coarse;
	size_t i;

	fold(d, UINT64_MAX);
	*row = d->row;
	row->section = rs->index;
	row->t0 = d->first;
	row->t1 = d->last;
	row->compute = d->measure[SET_C];
	row->comm = d->measure[SET_M];
	row->comm_exposed = d->measure[SET_CM] - d->measure[SET_C];
	row->busy = d->measure[SET_ALL];
	row->copy_exposed = row->busy - d->measure[SET_CM];
	row->idle = d->last - d->first > row->busy ? d->last - d->first - row->busy : 0;
	for (i = 0; i < c->n; i++) {
		uint64_t extent = c->s[i].t1 - c->s[i].t0;

		if (i)
			class_idle(row, rs, c->s[i - 1].t1, c->s[i].t0, c->s[i].t0 - c->s[i - 1].t1,
				   true);
		class_idle(row, rs, c->s[i].t0, c->s[i].t1,
			   extent > c->s[i].weight ? extent - c->s[i].weight : 0, false);
	}
}

static int by_device(const void *a, const void *b)
{
	const struct bd_dev *x = a, *y = b;

	return x->device < y->device ? -1 : x->device > y->device;
}

int breakdown_section_end(struct breakdown *b, struct report_section *rs)
{
	struct bd_sec *s = &b->cur;
	size_t i;

	if (!b->cur_used || b->cur_index != rs->index)
		return 0;
	if (s->ndev > 1)
		qsort(s->dev, s->ndev, sizeof(*s->dev), by_device);
	for (i = 0; i < s->ndev; i++) {
		if (b->nrows == b->cap) {
			size_t cap = b->cap ? 2 * b->cap : 16;
			struct bd_row *t = tally_resize(b->rows, cap, sizeof(*t));

			if (!t)
				return -ENOMEM;
			b->rows = t;
			b->cap = cap;
		}
		device_row(&s->dev[i], rs, &b->rows[b->nrows++]);
	}
	sec_fini(s);
	b->cur_used = false;
	return 0;
}
