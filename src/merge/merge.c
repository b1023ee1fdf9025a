/* SPDX-License-Identifier: MIT */
/*
 * tally merge (docs/merge.md): every section of every input into one file, each section's
 * timestamps shifted onto one timeline by its clock pair (CLOCK_REALTIME - CUPTI time), chunk by
 * chunk in input order: what a section says about itself (session, devices, strings, notes,
 * ledger snapshots, loss windows) is kept, with its times shifted, and the section is marked
 * merged (SESSION keys 21 and 22).
 *
 * The verdict of the merged file is the worst of its parts.  Loss counters travel in the ledger
 * snapshots as they are; damage in an input (which the merged file would otherwise hide, since
 * its chunks are all intact) is counted in the merge_damaged_chunks ledger counter from the
 * snapshot after the damage on, and described in a NOTE.  An input with no readable section
 * becomes a section that never closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "codec.h"
#include "grow.h"
#include "jobs.h"
#include "merge.h"
#include "outfile.h"
#include "writer.h"

struct pending_note {
	unsigned section;
	char *text;
};

struct merge {
	struct tally_writer w;
	int fd;
	const char *path;
	struct tally_codec codec;
	struct tally_buf buf;
	struct tally_buf recbuf; /* a RECORDS payload encoded by on_records, until its chunk */
	size_t pending_records;	 /* rows in recbuf (0: none waiting) */
	struct tally_record *recs;
	size_t cap;
	struct report_section *cur;
	bool begun;		  /* cur's SESSION is written */
	bool symbols_written;	  /* cur's SYMBOLS too, ahead of its records */
	struct tally_buf session; /* cur's SESSION payload, until the chunk after it */
	bool has_session;
	struct tally_ledger *final; /* cur's final ledger, written when the section ends */
	uint64_t *damaged;	    /* by section: damaged ranges (and missing chunks) so far */
	size_t ndamaged;
	struct pending_note *notes; /* damage notes waiting for their section's SESSION */
	size_t nnotes;
	struct merge_result *res;
};

static int emit(struct merge *m, unsigned type, unsigned flags, const struct tally_buf *b,
		uint64_t records)
{
	if (b->failed)
		return -ENOMEM;
	return tally_writer_chunk(&m->w, type, flags, b->data, b->len, records);
}

static int emit_raw(struct merge *m, const struct tally_chunk_info *c, const uint8_t *payload)
{
	return tally_writer_chunk(&m->w, c->type, c->flags, payload, c->len, 0);
}

/* ---- notes ---------------------------------------------------------------------------------- */

static int note(struct merge *m, unsigned severity, const char *code, const char *text)
{
	tally_buf_reset(&m->buf);
	tally_kv_uint(&m->buf, TALLY_NK_SEVERITY, severity);
	tally_kv_str(&m->buf, TALLY_NK_CODE, code);
	tally_kv_str(&m->buf, TALLY_NK_TEXT, text);
	return emit(m, TALLY_CHUNK_NOTE, 0, &m->buf, 0);
}

/* Write the notes of the current section (its SESSION is out); keep the others. */
static int flush_notes(struct merge *m)
{
	size_t i, kept = 0;
	int rc = 0;

	for (i = 0; i < m->nnotes; i++) {
		if (!m->cur || m->notes[i].section != m->cur->index) {
			m->notes[kept++] = m->notes[i];
			continue;
		}
		if (rc == 0)
			rc = note(m, TALLY_NOTE_ERROR, "merge-input-damaged", m->notes[i].text);
		free(m->notes[i].text);
	}
	m->nnotes = kept;
	return rc;
}

static uint64_t damaged(const struct merge *m, const struct report_section *rs)
{
	return rs->index < m->ndamaged ? m->damaged[rs->index] : 0;
}

/* ---- SESSION ------------------------------------------------------------------------------ */

static void session_payload(struct merge *m, struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	struct tally_buf *b = &m->buf;

	tally_buf_reset(b);
	if (m->has_session) {
		struct tally_cursor c = {m->session.data, m->session.data + m->session.len, false};
		struct tally_kv kv;

		while (tally_kv_next(&c, &kv)) {
			if (kv.key == TALLY_SK_MERGED || kv.key == TALLY_SK_MERGE_OFFSET)
				continue;
			if (kv.key == TALLY_SK_START_CUPTI && kv.type == TALLY_KV_UINT)
				kv.u = report_time(rs, kv.u);
			tally_kv_copy(b, &kv);
		}
	} else { /* its SESSION chunk was lost: what the reader knows, nothing more */
		tally_kv_str(b, TALLY_SK_WRITER, "tally merge");
		tally_kv_str(b, TALLY_SK_SOURCE, s->source ? s->source : "unknown");
		tally_kv_str(b, TALLY_SK_OUTPUT, rs->in->path);
	}
	tally_kv_uint(b, TALLY_SK_MERGED, 1);
	tally_kv_sint(b, TALLY_SK_MERGE_OFFSET, s->merge_offset + rs->offset);
}

/* The names tally record gave the section's native frames, which its input has at its end (the
 * reader took them first): written right after the SESSION, so that every reader of the merged
 * file has them before the records it labels.  Their copy in its place is then left out. */
static int symbols_ahead(struct merge *m, struct report_section *rs)
{
	m->symbols_written = false;
	if (!rs->s->stacks.symbols_info.present)
		return 0;
	tally_buf_reset(&m->buf);
	tally_symbols_encode(&m->buf, &rs->s->stacks);
	m->symbols_written = true;
	return emit(m, TALLY_CHUNK_SYMBOLS, 0, &m->buf, 0);
}

/* Write cur's SESSION (once), which fixes its offset: everything after is shifted by it. */
static int begin_section(struct merge *m, struct report_section *rs)
{
	int rc;

	if (m->cur != rs) {
		m->cur = rs;
		m->begun = false;
		m->has_session = false;
	}
	if (m->begun)
		return 0;
	rs->offset_frozen = true;
	session_payload(m, rs);
	rc = emit(m, TALLY_CHUNK_SESSION, 0, &m->buf, 0);
	m->begun = true;
	m->has_session = false;
	if (rc == 0 && rs->s->implicit)
		rc = note(m, TALLY_NOTE_ERROR, "merge-session-lost",
			  "the SESSION chunk of this section was lost in the input: pid, host and "
			  "command are unknown");
	if (rc == 0)
		rc = flush_notes(m);
	if (rc == 0)
		rc = symbols_ahead(m, rs);
	if (rc == 0)
		m->res->sections++;
	return rc;
}

/* ---- chunks, rewritten with their times shifted ---------------------------------------------- */

static int shift_kv(struct merge *m, struct report_section *rs, const struct tally_chunk_info *c,
		    const uint8_t *p, unsigned time_key)
{
	struct tally_cursor cur = {p, p + c->len, false};
	struct tally_kv kv;

	tally_buf_reset(&m->buf);
	while (tally_kv_next(&cur, &kv)) {
		if (kv.key == time_key && kv.type == TALLY_KV_UINT && kv.u)
			kv.u = report_time(rs, kv.u);
		tally_kv_copy(&m->buf, &kv);
	}
	return emit(m, c->type, c->flags, &m->buf, 0);
}

static int shift_loss(struct merge *m, struct report_section *rs, const struct tally_chunk_info *c,
		      const uint8_t *p)
{
	struct tally_cursor cur = {p, p + c->len, false};

	tally_buf_reset(&m->buf);
	while (!cur.bad && cur.p < cur.end) {
		uint64_t t0 = tally_cur_varint(&cur), t1 = tally_cur_varint(&cur);
		uint64_t cls = tally_cur_varint(&cur), count = tally_cur_varint(&cur);

		if (cur.bad)
			break;
		tally_buf_put_varint(&m->buf, report_time(rs, t0));
		tally_buf_put_varint(&m->buf, report_time(rs, t1));
		tally_buf_put_varint(&m->buf, cls);
		tally_buf_put_varint(&m->buf, count);
	}
	return emit(m, c->type, c->flags, &m->buf, 0);
}

/* The rows on_records encoded, with the columns of a newer writer copied from the payload. */
static int records_chunk(struct merge *m, const struct tally_chunk_info *c, const uint8_t *payload)
{
	size_t n = m->pending_records;
	int rc;

	if (!n)
		return 0; /* the payload did not decode: the reader counted it as damage */
	m->pending_records = 0;
	rc = tally_records_append_unknown(&m->recbuf, 0, payload, c->len);
	if (rc < 0)
		return rc;
	return emit(m, TALLY_CHUNK_RECORDS, 0, &m->recbuf, n);
}

static void shift_ledger(struct report_section *rs, struct tally_ledger *l, uint64_t damaged)
{
	l->t_begin = report_time(rs, l->t_begin);
	l->t_end = report_time(rs, l->t_end);
	if (l->v[TALLY_C_FLUSH_START])
		l->v[TALLY_C_FLUSH_START] = report_time(rs, l->v[TALLY_C_FLUSH_START]);
	if (l->v[TALLY_C_FLUSH_END])
		l->v[TALLY_C_FLUSH_END] = report_time(rs, l->v[TALLY_C_FLUSH_END]);
	/* cumulative, as every counter: an earlier merge's count plus this one's so far */
	l->v[TALLY_C_MERGE_DAMAGED] += damaged;
}

static int write_ledger(struct merge *m, const struct tally_ledger *l)
{
	tally_buf_reset(&m->buf);
	tally_ledger_encode(&m->buf, l);
	return emit(m, TALLY_CHUNK_LEDGER, l->final ? TALLY_CHUNK_FLAG_FINAL : 0, &m->buf, 0);
}

/* The final ledger waits for the end of the section, to count damage found after it. */
static int ledger_chunk(struct merge *m, struct report_section *rs,
			const struct tally_chunk_info *c, const uint8_t *p)
{
	bool final = c->flags & TALLY_CHUNK_FLAG_FINAL;
	struct tally_ledger *l = malloc(sizeof(*l));
	int rc = 0;

	if (!l)
		return -ENOMEM;
	if (!tally_ledger_decode(p, c->len, final, l)) { /* damage, counted by the reader */
		free(l);
		return 0;
	}
	if (m->final) { /* a snapshot after a final one: keep order, write the held one now */
		rc = write_ledger(m, m->final);
		free(m->final);
		m->final = NULL;
	}
	if (final) {
		l->t_begin = report_time(rs, l->t_begin); /* shifted now; damage added at the end */
		l->t_end = report_time(rs, l->t_end);
		if (l->v[TALLY_C_FLUSH_START])
			l->v[TALLY_C_FLUSH_START] = report_time(rs, l->v[TALLY_C_FLUSH_START]);
		if (l->v[TALLY_C_FLUSH_END])
			l->v[TALLY_C_FLUSH_END] = report_time(rs, l->v[TALLY_C_FLUSH_END]);
		m->final = l;
		return rc;
	}
	shift_ledger(rs, l, damaged(m, rs));
	if (rc == 0)
		rc = write_ledger(m, l);
	free(l);
	return rc;
}

static int on_chunk(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		    const uint8_t *payload)
{
	struct merge *m = ctx;
	int rc;

	if (c->type ==
	    TALLY_CHUNK_SESSION) { /* held: the CLOCK chunk after it may set the offset */
		m->cur = rs;
		m->begun = false;
		tally_buf_reset(&m->session);
		tally_buf_put(&m->session, payload, c->len);
		m->has_session = !m->session.failed;
		return m->session.failed ? -ENOMEM : 0;
	}
	rc = begin_section(m, rs);
	if (rc)
		return rc;
	switch (c->type) {
	case TALLY_CHUNK_RECORDS: /* encoded by on_records, decoded once */
		return records_chunk(m, c, payload);
	case TALLY_CHUNK_SYMBOLS: /* names by frame id, no times */
		return m->symbols_written ? 0 : emit_raw(m, c, payload);
	case TALLY_CHUNK_LEDGER:
		return ledger_chunk(m, rs, c, payload);
	case TALLY_CHUNK_CLOCK:
		return shift_kv(m, rs, c, payload, TALLY_CK_CUPTI);
	case TALLY_CHUNK_NOTE:
		return shift_kv(m, rs, c, payload, TALLY_NK_TIME);
	case TALLY_CHUNK_LOSS:
		return shift_loss(m, rs, c, payload);
	case TALLY_CHUNK_STRINGS: /* ids are per section, and so is the copy */
	case TALLY_CHUNK_FRAMES:
	case TALLY_CHUNK_STACKS:
	case TALLY_CHUNK_MODULES:   /* addresses, not times */
	case TALLY_CHUNK_DROPS:	    /* cumulative counts, not times */
	case TALLY_CHUNK_THREADS:   /* thread ids and names */
	case TALLY_CHUNK_PROCESSES: /* counts and names */
	case TALLY_CHUNK_DEVICE:
		return emit_raw(m, c, payload);
	default: /* a newer writer's: copied as it is, its times (if any) unshifted */
		m->res->unknown_chunks++;
		return emit_raw(m, c, payload);
	}
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct merge *m = ctx;
	size_t i;
	int rc = begin_section(m, rs);

	if (rc)
		return rc;
	if (!tally_grow_in(&m->recs, &m->cap, n, sizeof(*m->recs)))
		return -ENOMEM;
	memcpy(m->recs, r, n * sizeof(*r));
	for (i = 0; i < n; i++) {
		if (m->recs[i].flags & TALLY_REC_BAD_TIME) /* no time to shift: kept as recorded */
			continue;
		m->recs[i].start = report_time(rs, m->recs[i].start);
		m->recs[i].end = report_time(rs, m->recs[i].end);
	}
	/* Written when the chunk's payload comes (records_chunk), to add its unknown columns. */
	tally_buf_reset(&m->recbuf);
	rc = tally_records_encode(&m->codec, &m->recbuf, r[0].kind, m->recs, n, TALLY_COLUMNS_ALL);
	m->pending_records = rc == 0 ? n : 0;
	m->res->records += n;
	return rc;
}

static int count_damage(struct merge *m, const struct report_section *rs,
			const struct tally_damage *d)
{
	if (!tally_grow_in(&m->damaged, &m->ndamaged, (size_t)rs->index + 1, sizeof(*m->damaged)))
		return -ENOMEM;
	m->damaged[rs->index] += d->kind == TALLY_DAMAGE_SEQ_GAP && d->missing ? d->missing : 1;
	return 0;
}

static int on_damage(void *ctx, struct report_input *in, struct report_section *rs,
		     const struct tally_damage *d)
{
	struct merge *m = ctx;
	struct pending_note *t;
	char *text;
	int rc;

	m->res->damaged++;
	if (!rs) /* a file with no section: becomes a section of its own at the end */
		return 0;
	rc = count_damage(m, rs, d);
	if (rc)
		return rc;
	if (d->kind == TALLY_DAMAGE_SEQ_GAP)
		rc = asprintf(&text, "%s: %u chunk(s) missing before byte %" PRIu64, in->path,
			      d->missing, d->offset);
	else
		rc = asprintf(&text,
			      "%s: %s, bytes %" PRIu64 "-%" PRIu64
			      " unreadable: what they held is not in this section",
			      in->path, tally_damage_kind_name(d->kind), d->offset, d->end);
	if (rc < 0)
		return -ENOMEM;
	t = tally_array_push(&m->notes, &m->nnotes, sizeof(*t));
	if (!t) {
		free(text);
		return -ENOMEM;
	}
	*t = (struct pending_note){rs->index, text};
	return m->begun && rs == m->cur ? flush_notes(m) : 0;
}

static int on_section_end(void *ctx, struct report_section *rs)
{
	struct merge *m = ctx;
	int rc = begin_section(m, rs);

	if (rc == 0)
		rc = flush_notes(m);
	if (rc == 0 && m->final) {
		m->final->v[TALLY_C_MERGE_DAMAGED] += damaged(m, rs);
		rc = write_ledger(m, m->final);
	}
	free(m->final);
	m->final = NULL;
	return rc;
}

/* An input with nothing readable: a section that says so and never closed (INCOMPLETE). */
static int empty_input(struct merge *m, const struct report_input *in)
{
	char text[4300];
	int rc;

	tally_buf_reset(&m->buf);
	tally_kv_str(&m->buf, TALLY_SK_WRITER, "tally merge");
	tally_kv_str(&m->buf, TALLY_SK_OUTPUT, in->path);
	tally_kv_uint(&m->buf, TALLY_SK_MERGED, 1);
	rc = emit(m, TALLY_CHUNK_SESSION, 0, &m->buf, 0);
	snprintf(text, sizeof(text), "%s: no readable section in this input (%zu damaged range(s))",
		 in->path, in->f->ndamage);
	if (rc == 0)
		rc = note(m, TALLY_NOTE_ERROR, "merge-input-unreadable", text);
	m->res->sections++;
	return rc;
}

/* ---- the whole merge ------------------------------------------------------------------------ */

/* The output: never one of the inputs (report_set_open protects them), never anything but a
 * regular file (outfile.h). */
static int open_output(struct outfile *out, const char *path, bool force, char *err, size_t errlen)
{
	return outfile_open(out, path, force ? OUTFILE_FORCE : 0, err, errlen);
}

static void merge_fini(struct merge *m)
{
	size_t i;

	for (i = 0; i < m->nnotes; i++)
		free(m->notes[i].text);
	free(m->notes);
	free(m->damaged);
	free(m->final);
	free(m->recs);
	tally_codec_fini(&m->codec);
	tally_buf_fini(&m->buf);
	tally_buf_fini(&m->recbuf);
	tally_buf_fini(&m->session);
	tally_writer_fini(&m->w);
}

static int finish(struct merge *m, struct report_set *set, char *err, size_t errlen)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < set->ninputs && rc == 0; i++)
		if (set->inputs[i].f->nsections == 0)
			rc = empty_input(m, &set->inputs[i]);
	if (rc == 0)
		rc = tally_writer_flush(&m->w);
	if (rc == 0 && m->w.stats.write_failures)
		rc = -(m->w.stats.last_errno ? m->w.stats.last_errno : EIO);
	if (rc == 0 && fsync(m->fd) < 0 && errno != EINVAL)
		rc = -errno;
	if (rc)
		snprintf(err, errlen, "%s: write failed: %s", m->path, strerror(-rc));
	return rc;
}

/* After the scan, before the output is kept: traces of several jobs are refused. */
static int check_jobs(const struct report_set *set, struct merge_result *res, char *err,
		      size_t errlen)
{
	struct report_jobs jobs;
	FILE *f;

	if (report_jobs_group(set, &jobs) < 0)
		return -ENOMEM;
	if (jobs.njobs > 1 && (f = fmemopen(err, errlen, "w"))) {
		fprintf(
		    f,
		    "the inputs are of %zu different jobs, not the ranks of one (merge the traces "
		    "of one job, or --mixed-jobs to merge them anyway):\n",
		    jobs.njobs);
		report_jobs_print(&jobs, f, "  ");
		fclose(f);
		err[errlen - 1] = '\0';
		if (*err && err[strlen(err) - 1] == '\n')
			err[strlen(err) - 1] = '\0';
	}
	res->mixed_jobs = jobs.njobs > 1;
	report_jobs_free(&jobs);
	return res->mixed_jobs ? -EINVAL : 0;
}

int report_merge(struct report_set *set, const char *path, unsigned flags,
		 void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		 struct merge_result *res, char *err, size_t errlen)
{
	struct merge m = {.path = path, .res = res};
	struct report_scan_ops ops = {
	    .records = on_records,
	    .chunk = on_chunk,
	    .damage = on_damage,
	    .section_end = on_section_end,
	    .progress = progress,
	    .ctx = &m,
	    .pctx = pctx,
	};
	struct tally_sink sink;
	struct outfile out;
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = open_output(&out, path, flags & MERGE_FORCE, err, errlen);
	if (rc < 0)
		return rc;
	m.fd = out.fd;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)m.fd, NULL, NULL};
	rc = tally_writer_init(&m.w, &sink, 0);
	if (rc == 0)
		rc = tally_writer_preamble(&m.w);
	if (rc == 0)
		rc = report_scan(set, &ops, err, errlen);
	if (rc == 0)
		rc = finish(&m, set, err, errlen);
	if (rc == 0 && !(flags & MERGE_MIXED_JOBS))
		rc = check_jobs(set, res, err, errlen);
	for (i = 0; i < set->nsections; i++) {
		int64_t off = set->sections[i]->offset;

		if (i == 0 || off < res->min_offset)
			res->min_offset = off;
		if (i == 0 || off > res->max_offset)
			res->max_offset = off;
	}
	merge_fini(&m);
	if (rc == 0 &&
	    outfile_commit(&out, flags & MERGE_FORCE ? OUTFILE_FORCE : 0, err, errlen) < 0)
		rc = -EIO;
	outfile_abort(&out); /* the temporary file, unless committed */
	if (rc && !err[0])
		snprintf(err, errlen, "%s: %s", path, strerror(rc < 0 ? -rc : EIO));
	return rc;
}
