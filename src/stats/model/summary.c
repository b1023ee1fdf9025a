/* SPDX-License-Identifier: MIT */
/*
 * Summaries that combine (docs/stats.md, "Summaries"): tally stats --partial writes, for traces
 * where they lie, a small .tsum (format 1.3, src/format/summary.h) with each section's facts and
 * the aggregates of every summary report: per group the exact count, sum, extremes and sum of
 * squares, and the quantile sketch (sketch.h).  stats, compare and report read .tsum files as they
 * read traces; here the aggregates are merged into the groups (counts and sums add exactly,
 * sketches add bucket by bucket), so N summaries of N traces give the figures of the N traces, the
 * medians within the sketch's bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "outfile.h"
#include "stats-int.h"
#include "summary.h"
#include "writer.h"

/* The reports a summary carries (the others need the records themselves). */
static const enum report_id summarized[] = {
    R_NVTX_SUM,	    R_API_SUM,	    R_KERN_SUM,	      R_KERN_GB_SUM,
    R_MEM_TIME_SUM, R_MEM_SIZE_SUM, R_KERN_STACK_SUM,
};
#define NSUMMARIZED (sizeof(summarized) / sizeof(summarized[0]))

bool stats_summarized(unsigned report)
{
	size_t i;

	for (i = 0; i < NSUMMARIZED; i++)
		if (summarized[i] == report)
			return true;
	return false;
}

/* What a section of the traces leaves for its summary: its chunks, and its rank figures. */
struct psec {
	struct tally_buf session, drops;
	struct tally_buf *devices, *notes;
	size_t ndevices, nnotes, devices_cap, notes_cap;
	bool has_session;
	uint64_t *kern_ns; /* kernel ns by name id */
	uint32_t nkern;
	uint64_t gpu_busy_ns;
};

struct stats_partial {
	struct psec *secs;
	size_t nsecs, secs_cap;	      /* sections seen (index + 1 of the last), room for */
	struct report_gpu_gaps *busy; /* each section's busy time, gaps under 1 us counted in */
};

#define BUSY_GAP_MIN_NS 1000

static void psec_fini(struct psec *p)
{
	size_t i;

	tally_buf_fini(&p->session);
	tally_buf_fini(&p->drops);
	for (i = 0; i < p->ndevices; i++)
		tally_buf_fini(&p->devices[i]);
	for (i = 0; i < p->nnotes; i++)
		tally_buf_fini(&p->notes[i]);
	free(p->devices);
	free(p->notes);
	free(p->kern_ns);
}

void stats_partial_free(struct stats_partial *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nsecs; i++)
		psec_fini(&p->secs[i]);
	free(p->secs);
	report_gpu_gaps_free(p->busy);
	free(p);
}

int stats_partial_begin(struct stats *st)
{
	struct report_gaps_opts o = {.gap_min_ns = BUSY_GAP_MIN_NS};
	size_t i;

	st->partial = calloc(1, sizeof(*st->partial));
	if (!st->partial || !(st->partial->busy = report_gpu_gaps_new(&o)))
		return -ENOMEM;
	/* names as recorded: whoever reads the summary shows them in the form it is asked for */
	for (i = 0; i < NSUMMARIZED; i++) {
		st->req.reports |= 1u << summarized[i];
		st->req.names[summarized[i]] = REPORT_NAME_MANGLED;
	}
	return stats_to_sketches(st);
}

static struct psec *psec_of(struct stats_partial *p, unsigned index)
{
	if (index >= p->nsecs) {
		if (!tally_grow_in((void **)&p->secs, &p->secs_cap, (size_t)index + 1,
				   sizeof(*p->secs)))
			return NULL;
		p->nsecs = (size_t)index + 1;
	}
	return &p->secs[index];
}

static bool keep_copy(struct tally_buf **v, size_t *n, size_t *cap, const uint8_t *payload,
		      size_t len)
{
	if (!tally_grow_in((void **)v, cap, *n + 1, sizeof(**v)))
		return false;
	tally_buf_put(&(*v)[*n], payload, len);
	return !(*v)[(*n)++].failed;
}

/* The chunks a section's summary repeats: SESSION, DEVICE, NOTE, and the latest DROPS. */
int stats_partial_chunk(struct stats *st, struct report_section *rs,
			const struct tally_chunk_info *c, const uint8_t *payload)
{
	struct psec *p = psec_of(st->partial, rs->index);
	bool ok = true;

	if (!p)
		return -ENOMEM;
	switch (c->type) {
	case TALLY_CHUNK_SESSION:
		tally_buf_reset(&p->session);
		tally_buf_put(&p->session, payload, c->len);
		p->has_session = true;
		ok = !p->session.failed;
		break;
	case TALLY_CHUNK_DEVICE:
		ok = keep_copy(&p->devices, &p->ndevices, &p->devices_cap, payload, c->len);
		break;
	case TALLY_CHUNK_NOTE:
		ok = keep_copy(&p->notes, &p->nnotes, &p->notes_cap, payload, c->len);
		break;
	case TALLY_CHUNK_DROPS:
		tally_buf_reset(&p->drops);
		tally_buf_put(&p->drops, payload, c->len);
		ok = !p->drops.failed;
		break;
	default:
		break;
	}
	return ok ? 0 : -ENOMEM;
}

/* A batch of a section's records: its kernel time per name, its busy time. */
int stats_partial_records(struct stats *st, struct report_section *rs, const struct tally_record *r,
			  size_t n)
{
	struct psec *p = psec_of(st->partial, rs->index);
	size_t i;

	if (!p || report_gpu_gaps_add(st->partial->busy, rs, r, n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint32_t id = r[i].name_id < rs->s->nstrings ? r[i].name_id : 0;

		if (r[i].kind != TALLY_KIND_KERNEL || (r[i].flags & TALLY_REC_BAD_TIME))
			continue;
		if (id >= p->nkern) {
			uint32_t cap = p->nkern ? p->nkern : 64;
			uint64_t *t;

			while (cap <= id)
				cap *= 2;
			if (!(t = tally_resize(p->kern_ns, cap, sizeof(*t))))
				return -ENOMEM;
			memset(t + p->nkern, 0, (cap - p->nkern) * sizeof(*t));
			p->kern_ns = t;
			p->nkern = cap;
		}
		p->kern_ns[id] += r[i].end - r[i].start;
	}
	return 0;
}

int stats_partial_section_end(struct stats *st, struct report_section *rs)
{
	struct psec *p = psec_of(st->partial, rs->index);

	if (!p)
		return -ENOMEM;
	p->gpu_busy_ns = report_gpu_gaps_take_busy(st->partial->busy, rs);
	return 0;
}

/* ---- writing ------------------------------------------------------------------------------ */

struct tsum {
	struct tally_writer w;
	struct tally_buf b;
	int fd;
};

static int put_chunk(struct tsum *t, unsigned type, const struct tally_buf *b)
{
	if (b->failed)
		return -ENOMEM;
	return tally_writer_chunk(&t->w, type, 0, b->data, b->len, 0);
}

/* Its SESSION as recorded, its times aligned (a merged file's way), marked a summary. */
static int write_session(struct tsum *t, const struct report_section *rs, const struct psec *p)
{
	struct tally_buf *b = &t->b;

	tally_buf_reset(b);
	if (p && p->has_session) {
		struct tally_cursor c = {p->session.data, p->session.data + p->session.len, false};
		struct tally_kv kv;

		while (tally_kv_next(&c, &kv)) {
			if (kv.key == TALLY_SK_MERGED || kv.key == TALLY_SK_MERGE_OFFSET ||
			    kv.key == TALLY_SK_SUMMARY)
				continue;
			if (kv.key == TALLY_SK_START_CUPTI && kv.type == TALLY_KV_UINT && kv.u)
				kv.u = report_time(rs, kv.u);
			tally_kv_copy(b, &kv);
		}
	} else {
		tally_kv_str(b, TALLY_SK_WRITER, "tally stats --partial");
		tally_kv_str(b, TALLY_SK_SOURCE, rs->s->source ? rs->s->source : "unknown");
	}
	tally_kv_uint(b, TALLY_SK_MERGED, 1);
	tally_kv_sint(b, TALLY_SK_MERGE_OFFSET, rs->s->merge_offset + rs->offset);
	tally_kv_uint(b, TALLY_SK_SUMMARY, 1);
	return put_chunk(t, TALLY_CHUNK_SESSION, b);
}

/* A NOTE with its time aligned. */
static int write_note(struct tsum *t, const struct report_section *rs, const struct tally_buf *n)
{
	struct tally_cursor c = {n->data, n->data + n->len, false};
	struct tally_kv kv;

	tally_buf_reset(&t->b);
	while (tally_kv_next(&c, &kv)) {
		if (kv.key == TALLY_NK_TIME && kv.type == TALLY_KV_UINT && kv.u)
			kv.u = report_time(rs, kv.u);
		tally_kv_copy(&t->b, &kv);
	}
	return put_chunk(t, TALLY_CHUNK_NOTE, &t->b);
}

static bool is_nccl(const char *name)
{
	return strstr(name, "nccl") || strstr(name, "NCCL");
}

/* The figures the ranks table compares, and the verdict as it was judged on the trace. */
static int facts_of(struct stats *st, struct report_section *rs, const struct psec *p,
		    struct tally_summary_facts *f)
{
	size_t i;
	uint32_t id;

	memset(f, 0, sizeof(*f));
	if (rs->s->summary && rs->s->facts) { /* a summary of summaries: as it came */
		*f = *rs->s->facts;
		f->reasons = NULL;
		f->nreasons = 0;
	}
	f->complete = rs->verdict.complete;
	f->reasons = calloc(rs->verdict.nreasons + 1, sizeof(*f->reasons));
	if (!f->reasons)
		return -ENOMEM;
	for (i = 0; i < rs->verdict.nreasons; i++) {
		const struct tally_reason *r = &rs->verdict.reasons[i];

		f->reasons[i] =
		    (struct tally_summary_reason){r->code, r->counter, r->count, "", ""};
		snprintf(f->reasons[i].text, sizeof(f->reasons[i].text), "%s", r->text);
		snprintf(f->reasons[i].hint, sizeof(f->reasons[i].hint), "%s", r->hint);
	}
	f->nreasons = rs->verdict.nreasons;
	if (rs->s->summary)
		return 0;
	f->trace = rs->in->path;
	f->gpu_busy_ns = p ? p->gpu_busy_ns : 0;
	for (id = 0; p && id < p->nkern; id++) {
		const char *name;

		if (!p->kern_ns[id])
			continue;
		name = report_kernel_name(rs, id, REPORT_NAME_MANGLED);
		f->kernel_ns += p->kern_ns[id];
		if (id && is_nccl(name))
			f->nccl_ns += p->kern_ns[id];
		if (p->kern_ns[id] > f->top_kernel_ns) {
			f->top_kernel_ns = p->kern_ns[id];
			f->top_kernel = (char *)name;
		}
	}
	(void)st;
	return 0;
}

static int write_section(struct tsum *t, struct stats *st, struct report_section *rs)
{
	const struct psec *p =
	    rs->index < st->partial->nsecs ? &st->partial->secs[rs->index] : NULL;
	struct tally_summary_facts f;
	size_t i;
	int rc = write_session(t, rs, p);

	for (i = 0; rc == 0 && p && i < p->ndevices; i++)
		rc = put_chunk(t, TALLY_CHUNK_DEVICE, &p->devices[i]);
	for (i = 0; rc == 0 && p && i < p->nnotes; i++)
		rc = write_note(t, rs, &p->notes[i]);
	if (rc == 0 && p && p->drops.len)
		rc = put_chunk(t, TALLY_CHUNK_DROPS, &p->drops);
	if (rc == 0 && (rc = facts_of(st, rs, p, &f)) == 0) {
		tally_buf_reset(&t->b);
		tally_summary_section_encode(&t->b, rs->s, rs->offset, &f);
		free(f.reasons);
		rc = put_chunk(t, TALLY_CHUNK_SUMMARY, &t->b);
	}
	return rc;
}

static void put_group(struct tally_buf *b, const struct group *g)
{
	double lsq = (double)g->m.lsq;
	uint64_t bits;
	int k;

	memcpy(&bits, &lsq, sizeof(bits));
	tally_buf_put_str(b, g->name);
	tally_buf_put_varint(b, g->style);
	for (k = 0; k < 3; k++)
		tally_buf_put_varint(b, tally_zigzag(g->grid[k]));
	for (k = 0; k < 3; k++)
		tally_buf_put_varint(b, tally_zigzag(g->block[k]));
	tally_buf_put_varint(b, g->m.n);
	tally_buf_put_varint(b, g->m.total);
	tally_buf_put_varint(b, g->m.min);
	tally_buf_put_varint(b, g->m.max);
	tally_buf_put_varint(b, (uint64_t)g->m.sq);
	tally_buf_put_varint(b, (uint64_t)(g->m.sq >> 64));
	tally_buf_put_varint(b, bits);
	tally_sketch_encode(&g->sk, b);
}

#define STATS_CHUNK_BYTES (8u << 20) /* a table's groups go in chunks of about this size */

/*
 * SUMMARY parts STATS: one with 0, the untimed records and the kernels with a stack; then, per
 * report, chunks of report + 1 and its groups.
 */
static int write_stats(struct tsum *t, struct stats *st)
{
	size_t r, i;
	int rc;

	tally_buf_reset(&t->b);
	tally_buf_put_varint(&t->b, TALLY_SUMMARY_STATS);
	tally_buf_put_varint(&t->b, 0);
	tally_buf_put_varint(&t->b, st->untimed);
	tally_buf_put_varint(&t->b, st->stacked_kernels);
	rc = put_chunk(t, TALLY_CHUNK_SUMMARY, &t->b);
	for (r = 0; r < NSUMMARIZED && rc == 0; r++) {
		const struct gtable *tab = &st->t[summarized[r]];

		for (i = 0; i < tab->n && rc == 0;) {
			tally_buf_reset(&t->b);
			tally_buf_put_varint(&t->b, TALLY_SUMMARY_STATS);
			tally_buf_put_varint(&t->b, (uint64_t)summarized[r] + 1);
			for (; i < tab->n && t->b.len < STATS_CHUNK_BYTES; i++)
				put_group(&t->b, &tab->g[i]);
			rc = put_chunk(t, TALLY_CHUNK_SUMMARY, &t->b);
		}
	}
	return rc;
}

static int write_all(struct tsum *t, struct stats *st, const struct report_set *set)
{
	size_t i;
	int rc = tally_writer_preamble(&t->w);

	for (i = 0; rc == 0 && i < set->nsections; i++)
		rc = write_section(t, st, set->sections[i]);
	/* the aggregates belong to the last section: a file with none has nowhere to put them */
	if (rc == 0 && set->nsections)
		rc = write_stats(t, st);
	if (rc == 0)
		rc = tally_writer_flush(&t->w);
	if (rc == 0 && t->b.failed)
		rc = -ENOMEM;
	return rc;
}

int stats_partial_write(struct stats *st, const struct report_set *set, const char *path,
			bool force, char *err, size_t errlen)
{
	struct outfile of = {.fd = -1};
	struct tsum t = {.fd = -1};
	struct tally_sink sink;
	unsigned flags = force ? OUTFILE_FORCE : 0;
	int rc = outfile_open(&of, path, flags, err, errlen);

	if (rc < 0)
		return rc;
	sink.write = tally_fd_write;
	sink.ctx = (void *)(intptr_t)of.fd;
	rc = tally_writer_init(&t.w, &sink, 0);
	if (rc == 0)
		rc = write_all(&t, st, set);
	if (rc == 0 && t.w.stats.write_failures)
		rc = t.w.stats.last_errno ? -t.w.stats.last_errno : -EIO;
	tally_writer_fini(&t.w);
	tally_buf_fini(&t.b);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		outfile_abort(&of);
		return rc;
	}
	return outfile_commit(&of, flags, err, errlen);
}

/* ---- reading ------------------------------------------------------------------------------ */

static bool get_text(struct tally_cursor *c, char **out)
{
	uint64_t n = tally_cur_varint(c);
	const uint8_t *p = tally_cur_bytes(c, n);

	if (!p)
		return false;
	*out = malloc((size_t)n + 1);
	if (!*out)
		return false;
	memcpy(*out, p, (size_t)n);
	(*out)[n] = '\0';
	return true;
}

/* A recorded kernel name in the form the report is asked for. */
static char *kernel_form(char *recorded, enum report_name_mode m)
{
	char *d, *b;

	if (m == REPORT_NAME_MANGLED)
		return recorded;
	d = report_demangle(recorded);
	if (!d)
		return recorded;
	free(recorded);
	if (m == REPORT_NAME_DEMANGLED)
		return d;
	b = report_base_name(d);
	if (!b)
		return d;
	free(d);
	return b;
}

/* One group of a summary's STATS part; false on a bad encoding.  g->name and g->sk are the
 * caller's to free. */
static bool read_group(struct tally_cursor *c, struct stats_summary_group *g, char **name,
		       struct tally_sketch *sk, int32_t *gb)
{
	uint64_t lo, hi, bits;
	double lsq;
	int i;

	*name = NULL;
	memset(sk, 0, sizeof(*sk));
	if (!get_text(c, name))
		return false;
	g->name = *name;
	g->style = (unsigned)tally_cur_varint(c);
	for (i = 0; i < 6; i++)
		gb[i] = (int32_t)tally_unzigzag(tally_cur_varint(c));
	g->gb = gb;
	g->n = tally_cur_varint(c);
	g->total = tally_cur_varint(c);
	g->min = tally_cur_varint(c);
	g->max = tally_cur_varint(c);
	lo = tally_cur_varint(c);
	hi = tally_cur_varint(c);
	bits = tally_cur_varint(c);
	memcpy(&lsq, &bits, sizeof(lsq));
	g->sq = (unsigned __int128)hi << 64 | lo;
	g->lsq = lsq;
	g->sk = sk;
	return !c->bad && tally_sketch_decode(sk, c);
}

int stats_summary_each(const uint8_t *payload, size_t len, stats_summary_fn fn, void *ctx)
{
	struct tally_cursor c = {payload, payload + len, false};
	uint64_t part = tally_cur_varint(&c), what = tally_cur_varint(&c);
	int rc = 0;

	/* damage stops the reading where it is: the verdict of its section says the rest */
	if (c.bad || part != TALLY_SUMMARY_STATS || what == 0 || what > R_COUNT ||
	    !stats_summarized((unsigned)what - 1))
		return 0;
	while (rc == 0 && c.p < c.end) {
		struct stats_summary_group g = {.report = (unsigned)what - 1};
		struct tally_sketch sk;
		int32_t gb[6];
		char *name;

		if (read_group(&c, &g, &name, &sk, gb))
			rc = fn(ctx, &g);
		else
			c.p = c.end;
		free(name);
		tally_sketch_fini(&sk);
	}
	return rc;
}

/* One group of a summary into the report's table: moments add, sketches add. */
static int merge_group(void *ctx, const struct stats_summary_group *in)
{
	struct stats *st = ctx;
	enum report_id r = (enum report_id)in->report;
	struct moments m = {in->n, in->total, in->min, in->max, in->sq, in->lsq, false};
	char *name = strdup(in->name);
	long k;

	if (!name)
		return -ENOMEM;
	if (r == R_KERN_SUM || r == R_KERN_GB_SUM)
		name = kernel_form(name, st->req.names[r]);
	k = gtable_get(&st->t[r], name, r == R_KERN_GB_SUM ? in->gb : NULL, in->style);
	free(name);
	if (k < 0 || tally_sketch_merge(&st->t[r].g[k].sk, in->sk) < 0)
		return -ENOMEM;
	moments_merge(&st->t[r].g[k].m, &m);
	return 0;
}

int stats_summary_chunk(struct stats *st, const uint8_t *payload, size_t len)
{
	struct tally_cursor c = {payload, payload + len, false};
	uint64_t part = tally_cur_varint(&c), what = tally_cur_varint(&c);

	if (c.bad || part != TALLY_SUMMARY_STATS)
		return 0;
	if (!st->sketching) {
		if (stats_to_sketches(st) < 0)
			return -ENOMEM;
		snprintf(st->why_sketch, sizeof(st->why_sketch), "%s",
			 "summaries carry sketches, not values");
	}
	if (what == 0) {
		st->untimed += tally_cur_varint(&c);
		st->stacked_kernels += tally_cur_varint(&c);
		return 0;
	}
	return stats_summary_each(payload, len, merge_group, st);
}
