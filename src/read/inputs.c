/* SPDX-License-Identifier: MIT */
/*
 * Inputs of stats, export and merge: FILE... and directories become a list of opened traces, read
 * in one pass with sections numbered across files, clock offsets worked out as each section
 * begins, damage handed out where the reader finds it, and a verdict per section at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "grow.h"
#include "outfile.h"
#include "path.h"
#include "prefetch.h"
#include "text.h"
#include "trace-set.h"
#include "workers.h"

static int add_input(struct report_set *set, const char *path, char *err, size_t errlen)
{
	struct report_input *in,
	    *v = tally_grow(set->inputs, &set->inputs_cap, set->ninputs + 1, sizeof(*in));
	struct stat st;
	int rc;

	if (!v)
		return -ENOMEM;
	set->inputs = v;
	in = &v[set->ninputs];
	memset(in, 0, sizeof(*in));
	rc = tally_file_open(&in->f, path, err, errlen);
	if (rc < 0)
		return rc;
	if (fstat(in->f->fd, &st) == 0) {
		in->dev = (unsigned long long)st.st_dev;
		in->ino = (unsigned long long)st.st_ino;
	}
	/* Checked, then closed until its turn, its read window given back: a directory of
	 * thousands of ranks must need neither thousands of descriptors nor of windows at once. */
	close(in->f->fd);
	in->f->fd = -1;
	tally_file_drop_window(in->f);
	in->path = strdup(path);
	if (!in->path || outfile_protect(path, in->dev, in->ino) < 0) {
		free(in->path);
		tally_file_close(in->f);
		return -ENOMEM;
	}
	set->total_bytes += in->f->size;
	set->ninputs++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && strcmp(s + n - m, suffix) == 0;
}

static int push_path(char ***files, size_t *n, size_t *cap, char *path)
{
	if (!path)
		return -ENOMEM;
	if (!tally_grow_in(files, cap, *n + 1, sizeof(**files))) {
		free(path);
		return -ENOMEM;
	}
	(*files)[(*n)++] = path;
	return 0;
}

/* Every *.tally and *.tsum (summaries) in dir, sorted by name so that the order (and section
 * numbers) are stable. */
static int expand_directory(const char *dir, char ***files, size_t *n, size_t *cap, char *err,
			    size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t first = *n;
	int rc = 0;

	if (!d) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	while (rc == 0 && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    (has_suffix(e->d_name, ".tally") || has_suffix(e->d_name, ".tsum")))
			rc = push_path(files, n, cap, tally_path_join(dir, e->d_name));
	closedir(d);
	if (rc == 0 && *n == first) {
		snprintf(err, errlen, "%s: no *.tally (or *.tsum) file in this directory", dir);
		rc = -ENOENT;
	}
	if (rc == 0)
		qsort(*files + first, *n - first, sizeof(**files), cmp_str);
	return rc;
}

int report_paths_expand(char *const *paths, size_t npaths, char ***files, size_t *nfiles, char *err,
			size_t errlen)
{
	size_t i, cap = 0;
	int rc = 0;

	*files = NULL;
	*nfiles = 0;
	for (i = 0; i < npaths && rc == 0; i++) {
		struct stat st;

		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			rc = expand_directory(paths[i], files, nfiles, &cap, err, errlen);
		else
			rc = push_path(files, nfiles, &cap, strdup(paths[i]));
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory listing the inputs");
	if (rc < 0) {
		report_paths_free(*files, *nfiles);
		*files = NULL;
		*nfiles = 0;
	}
	return rc;
}

void report_paths_free(char **files, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

int report_set_open(struct report_set *set, char *const *paths, size_t npaths, char *err,
		    size_t errlen)
{
	char **files;
	size_t i, n;
	int rc;

	memset(set, 0, sizeof(*set));
	set->align = true;
	rc = report_paths_expand(paths, npaths, &files, &n, err, errlen);
	for (i = 0; i < n && rc == 0; i++)
		rc = add_input(set, files[i], err, errlen);
	report_paths_free(files, n);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory opening the inputs");
	if (rc < 0)
		report_set_close(set);
	return rc;
}

void report_set_close(struct report_set *set)
{
	size_t i;

	for (i = 0; i < set->nsections; i++) {
		tally_verdict_fini(&set->sections[i]->verdict);
		report_names_free(set->sections[i]->names);
		report_frames_free(set->sections[i]->frames);
		report_metrics_free(set->sections[i]->metrics);
		free(set->sections[i]);
	}
	free(set->sections);
	for (i = 0; i < set->nduplicates; i++)
		free(set->duplicates[i]);
	free(set->duplicates);
	tally_map_fini(&set->sessions);
	for (i = set->ninputs; i-- > 0;) {
		outfile_unprotect(set->inputs[i].dev, set->inputs[i].ino);
		tally_file_close(set->inputs[i].f);
		free(set->inputs[i].path);
	}
	free(set->inputs);
	memset(set, 0, sizeof(*set));
}

/* ---- the base time ------------------------------------------------------------------------ */

/* The realtime - CUPTI offset of a CLOCK payload; false if it lacks either clock. */
static bool clock_pair_offset(const uint8_t *p, size_t len, int64_t *off)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t cupti = 0, realtime = 0;
	struct tally_kv kv;

	while (tally_kv_next(&c, &kv)) {
		if (kv.key == TALLY_CK_CUPTI && kv.type == TALLY_KV_UINT)
			cupti = kv.u;
		else if (kv.key == TALLY_CK_REALTIME && kv.type == TALLY_KV_UINT)
			realtime = kv.u;
	}
	if (!cupti || !realtime)
		return false;
	*off = (int64_t)(realtime - cupti);
	return true;
}

/* One section's offset, worked out as the scan does (session_offset, clock_offset). */
struct base_scan {
	struct report_set *set;
	const struct tally_section *s;
	int64_t offset;
	bool frozen, by_clock;
	bool first_only; /* stop at the first section's first records: its offset is known then */
};

static void base_section_done(struct base_scan *b)
{
	uint64_t t;

	if (!b->s || !(t = tally_section_origin(b->s)))
		return;
	t += (uint64_t)b->offset; /* as report_time: wraps, never a signed overflow */
	if (!b->set->base || t < b->set->base)
		b->set->base = t;
}

static int base_chunk(void *ctx, struct tally_section *s, const struct tally_chunk_info *c,
		      const uint8_t *payload)
{
	struct base_scan *b = ctx;
	bool align = b->set->align && !s->merged;

	if (s != b->s) {
		if (b->first_only && b->s) { /* a second section: the first one is done */
			base_section_done(b);
			b->s = NULL;
			return 1;
		}
		base_section_done(b);
		*b = (struct base_scan){.set = b->set, .s = s, .first_only = b->first_only};
		if (align && s->start_realtime && s->start_cupti)
			b->offset = (int64_t)(s->start_realtime - s->start_cupti);
	}
	if (c->type == TALLY_CHUNK_CLOCK && align && !b->frozen && !b->by_clock)
		b->by_clock = clock_pair_offset(payload, c->len, &b->offset);
	b->frozen |= c->type == TALLY_CHUNK_RECORDS;
	if (b->first_only && b->frozen) {
		base_section_done(b);
		b->s = NULL;
		return 1;
	}
	return 0;
}

/*
 * The earliest moment of any section: its session start or first record, whichever is earlier,
 * on the aligned clock.  A summary read of each input (records decoded, nothing kept), for
 * exporters whose times must not go negative (Perfetto drops events with a negative ts).
 */
uint64_t report_set_earliest(const struct report_set *set)
{
	struct report_set probe = *set; /* only base and align are touched */
	size_t i;

	probe.base = 0;
	for (i = 0; i < set->ninputs; i++) {
		struct base_scan b = {.set = &probe};
		struct tally_read_ops ops = {.chunk_payload = base_chunk, .ctx = &b};
		struct tally_file *f;

		if (tally_file_open(&f, set->inputs[i].path, NULL, 0) < 0)
			continue;
		(void)tally_file_read(f, &ops);
		base_section_done(&b);
		tally_file_close(f);
	}
	return probe.base;
}

/*
 * Cheap: each input's first section, read up to its first records (where the scan fixes its clock
 * offset), so that the base is on the same aligned clock as the records the scan hands out.
 */
void report_set_find_base(struct report_set *set)
{
	size_t i;

	set->base = 0;
	for (i = 0; i < set->ninputs; i++) {
		struct base_scan b = {.set = set, .first_only = true};
		struct tally_read_ops ops = {.chunk_payload = base_chunk, .ctx = &b};
		struct tally_file *f;

		if (tally_file_open(&f, set->inputs[i].path, NULL, 0) < 0)
			continue;
		(void)tally_file_read(f, &ops);
		base_section_done(&b);
		tally_file_close(f);
	}
}

/* ---- the pass ----------------------------------------------------------------------------- */

struct scan {
	struct report_set *set;
	const struct report_scan_ops *ops;
	struct report_input *in;
	struct report_section *cur; /* of the file being read */
	uint64_t done_before;	    /* bytes of the inputs already read */
	bool consumer_failed; /* a non-zero return came from us or a consumer, not the reader */
	struct prefetch *pf;  /* workers framing the inputs ahead (NULL: read here, serially) */
};

/* Every return from a consumer goes through here, so that a failure is not blamed on the input. */
static int took(struct scan *sc, int rc)
{
	if (rc)
		sc->consumer_failed = true;
	return rc;
}

static int end_section(struct scan *sc)
{
	struct report_section *rs = sc->cur;

	if (!rs || rs->ended)
		return 0;
	rs->ended = true;
	if (rs->s->summary) /* a summary's records are counted, not handed out */
		sc->set->records += rs->s->records_total;
	return sc->ops->section_end ? took(sc, sc->ops->section_end(sc->ops->ctx, rs)) : 0;
}

/* SESSION pair first; a CLOCK pair replaces it if one comes before any record. */
static void session_offset(struct report_set *set, struct report_section *rs)
{
	const struct tally_section *s = rs->s;

	rs->offset = 0;
	if (set->align && !s->merged && s->start_realtime && s->start_cupti)
		rs->offset = (int64_t)(s->start_realtime - s->start_cupti);
}

static uint64_t id_word(const uint8_t *id)
{
	uint64_t w;

	memcpy(&w, id, sizeof(w));
	return w;
}

/* The section read before with s's session id, if any (ids are unique per recording); a new id
 * is remembered.  A hash, so that thousands of ranks cost no more each than one. */
static const struct report_section *earlier_session(struct report_set *set,
						    const struct tally_section *s)
{
	uint32_t found;

	if (!s->has_session_id)
		return NULL;
	found = tally_map_get(&set->sessions, id_word(s->session_id), id_word(s->session_id + 8));
	if (found)
		return set->sections[found - 1];
	/* out of memory: the repeat goes unnoticed, as if its id were new */
	(void)tally_map_put(&set->sessions, id_word(s->session_id), id_word(s->session_id + 8),
			    (uint32_t)set->nsections + 1);
	return NULL;
}

/* A repeated section: remembered for the warning, shown to no consumer. */
static int keep_duplicate(struct scan *sc, struct report_section *rs)
{
	struct report_set *set = sc->set;
	struct report_section **d =
	    tally_grow(set->duplicates, &set->duplicates_cap, set->nduplicates + 1, sizeof(*d));

	if (!d) {
		free(rs);
		sc->cur = NULL;
		return took(sc, -ENOMEM);
	}
	set->duplicates = d;
	d[set->nduplicates++] = rs;
	rs->ended = true; /* nothing to end: no consumer saw it begin */
	return 0;
}

/* The report_section for the reader's s, announcing it (and ending the last) when it is new. */
static int section_for(struct scan *sc, struct tally_section *s, struct report_section **ret)
{
	struct report_set *set = sc->set;
	struct report_section *rs, **v;
	int rc;

	if (sc->cur && sc->cur->s == s) {
		*ret = sc->cur;
		return 0;
	}
	rc = end_section(sc);
	if (rc)
		return rc;
	v = tally_grow(set->sections, &set->sections_cap, set->nsections + 1, sizeof(*v));
	rs = calloc(1, sizeof(*rs));
	if (!v || !rs) {
		free(rs);
		if (v)
			set->sections = v;
		return took(sc, -ENOMEM);
	}
	set->sections = v;
	rs->index = (unsigned)set->nsections;
	rs->in = sc->in;
	rs->s = s;
	session_offset(set, rs);
	sc->cur = rs;
	*ret = rs;
	rs->duplicate_of = earlier_session(set, s);
	if (rs->duplicate_of)
		return keep_duplicate(sc, rs);
	set->sections[set->nsections++] = rs;
	return sc->ops->section ? took(sc, sc->ops->section(sc->ops->ctx, rs)) : 0;
}

/* The section of in with the reader's index k, or NULL (a duplicate, kept out of the set). */
static struct report_section *section_of_file(struct report_set *set, const struct report_input *in,
					      unsigned k)
{
	size_t i;

	for (i = in->first_section; i < set->nsections; i++)
		if (set->sections[i]->in == in && set->sections[i]->s->index == k)
			return set->sections[i];
	return NULL;
}

/* Hand out damage the reader found since the last callback. */
static int deliver_damage(struct scan *sc, bool at_end)
{
	struct report_input *in = sc->in;
	struct tally_file *f = in->f;
	int rc = 0;

	while (rc == 0 && in->damage_delivered < f->ndamage) {
		const struct tally_damage *d = &f->damage[in->damage_delivered];
		struct report_section *rs = sc->cur;

		/* Before any section: wait for the (implicit) section the reader makes next. */
		if (!rs && !at_end)
			return 0;
		if (rs && d->section >= 0 && d->section < (int)rs->s->index)
			rs = section_of_file(sc->set, in, (unsigned)d->section);
		in->damage_delivered++;
		if (rs && rs->duplicate_of)
			continue; /* its first reading reported it */
		if (sc->ops->damage)
			rc = took(sc, sc->ops->damage(sc->ops->ctx, in, rs, d));
	}
	return rc;
}

/* Every callback starts here: damage found so far goes to the section it was found in, then the
 * reader's s becomes (or stays) the current section. */
static int enter(struct scan *sc, struct tally_section *s, struct report_section **rs)
{
	int rc = deliver_damage(sc, false);

	if (rc == 0)
		rc = section_for(sc, s, rs);
	if (rc == 0)
		rc = deliver_damage(sc, false);
	return rc;
}

static int on_section(void *ctx, struct tally_file *f, struct tally_section *s)
{
	struct report_section *rs;

	(void)f;
	return enter(ctx, s, &rs);
}

static int on_records(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	struct scan *sc = ctx;
	struct report_section *rs;
	int rc = enter(sc, s, &rs);

	if (rc || rs->duplicate_of)
		return rc;
	rs->offset_frozen = true;
	sc->set->records += n;
	/* the reader keeps the latest end of timed records; aligned here for the consumers */
	if (s->t_max)
		rs->last_time = report_time(rs, s->t_max);
	return sc->ops->records ? took(sc, sc->ops->records(sc->ops->ctx, rs, r, n)) : 0;
}

static void clock_offset(struct scan *sc, struct report_section *rs, const uint8_t *p, size_t len)
{
	if (!sc->set->align || rs->s->merged || rs->offset_frozen || rs->aligned_by_clock)
		return;
	rs->aligned_by_clock = clock_pair_offset(p, len, &rs->offset);
}

static int on_chunk(void *ctx, struct tally_section *s, const struct tally_chunk_info *c,
		    const uint8_t *payload)
{
	struct scan *sc = ctx;
	const struct report_scan_ops *ops = sc->ops;
	struct report_section *rs;
	int rc = enter(sc, s, &rs);

	if (rc || rs->duplicate_of)
		return rc;
	if (c->type == TALLY_CHUNK_CLOCK)
		clock_offset(sc, rs, payload, c->len);
	if (c->type == TALLY_CHUNK_LEDGER && ops->ledger) {
		struct tally_ledger *l = malloc(sizeof(*l));

		if (!l)
			return took(sc, -ENOMEM);
		if (tally_ledger_decode(payload, c->len, c->flags & TALLY_CHUNK_FLAG_FINAL, l))
			rc = took(sc, ops->ledger(ops->ctx, rs, l));
		free(l);
		if (rc)
			return rc;
	}
	return ops->chunk ? took(sc, ops->chunk(ops->ctx, rs, c, payload)) : 0;
}

static void on_progress(void *ctx, uint64_t offset, uint64_t size)
{
	struct scan *sc = ctx;

	(void)size;
	if (sc->ops->progress)
		sc->ops->progress(sc->ops->pctx, sc->done_before + offset, sc->set->total_bytes);
}

/* Input in read here: framed and applied on this thread. */
static int read_here(struct scan *sc, const struct tally_read_ops *rops, char *err, size_t errlen)
{
	int rc;

	/* O_NONBLOCK: a regular file when opened first; should it be a FIFO now, fail, not wait */
	sc->in->f->fd = open(sc->in->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (sc->in->f->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", sc->in->path, strerror(errno));
		return rc;
	}
	rc = tally_file_read(sc->in->f, rops);
	close(sc->in->f->fd);
	sc->in->f->fd = -1;
	tally_file_drop_window(sc->in->f);
	return rc;
}

/* Input in framed by a worker (prefetch.h), its items applied here, in order. */
static int read_prefetched(struct scan *sc, const struct tally_read_ops *rops, char *err,
			   size_t errlen)
{
	struct tally_reading *r = tally_reading_new(sc->in->f, rops);
	int rc;

	if (!r)
		return -ENOMEM;
	rc = prefetch_input(sc->pf, (size_t)(sc->in - sc->set->inputs), r, err, errlen);
	tally_reading_end(r);
	return rc;
}

static int scan_file(struct scan *sc, char *err, size_t errlen)
{
	struct tally_read_ops rops = {
	    .section = on_section,
	    .records = on_records,
	    .chunk_payload = on_chunk,
	    .progress = on_progress,
	    .ctx = sc,
	};
	int rc;

	sc->cur = NULL;
	sc->in->first_section = (unsigned)sc->set->nsections;
	sc->consumer_failed = false;
	rc = sc->pf ? read_prefetched(sc, &rops, err, errlen) : read_here(sc, &rops, err, errlen);
	if (rc < 0 && !sc->consumer_failed) {
		if (!err[0]) /* else the open said why */
			snprintf(err, errlen, "%s: read failed: %s", sc->in->path, strerror(-rc));
		sc->set->read_failed = true;
	}
	if (rc)
		return rc;
	if (rc == 0)
		rc = deliver_damage(sc, true);
	if (rc == 0)
		rc = end_section(sc);
	sc->done_before += sc->in->f->size;
	return rc;
}

static void judge(struct report_set *set)
{
	size_t i;

	set->complete = true;
	for (i = 0; i < set->ninputs; i++)
		if (set->inputs[i].f->nsections == 0)
			set->complete = false;
	for (i = 0; i < set->nsections; i++) {
		struct report_section *rs = set->sections[i];

		tally_verdict_fini(&rs->verdict);
		tally_verdict_compute(rs->in->f, rs->s, &rs->verdict);
		set->complete &= rs->verdict.complete;
	}
}

int report_scan(struct report_set *set, const struct report_scan_ops *ops, char *err, size_t errlen)
{
	struct scan sc = {.set = set, .ops = ops};
	unsigned jobs = tally_workers();
	size_t i;
	int rc = 0;

	if (errlen)
		err[0] = '\0';
	/* a second thread is worth it for one large input too: decoding runs beside the consumer */
	if (jobs > 1)
		sc.pf = prefetch_start(set, jobs);
	for (i = 0; i < set->ninputs && rc == 0; i++) {
		sc.in = &set->inputs[i];
		rc = scan_file(&sc, err, errlen);
	}
	prefetch_stop(sc.pf);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc == 0)
		judge(set);
	if (ops->progress)
		ops->progress(ops->pctx, set->total_bytes, set->total_bytes);
	return rc;
}

int report_set_read(struct report_set *set, char *const *paths, size_t npaths, char *err,
		    size_t errlen)
{
	struct report_scan_ops none = {0};
	int rc = report_set_open(set, paths, npaths, err, errlen);

	if (rc == 0 && (rc = report_scan(set, &none, err, errlen)) != 0)
		report_set_close(set);
	return rc;
}

const char *report_section_label(const struct report_section *rs, char *buf, size_t len)
{
	const struct tally_section *s = rs->s;

	if (s->implicit)
		snprintf(buf, len, "section %u (session header lost)", rs->index);
	else {
		/* host and rank come from the trace: no control byte reaches a terminal */
		char *host = tally_text_printable(s->host ? s->host : "?");
		char *rank = s->rank ? tally_text_printable(s->rank) : NULL;

		snprintf(buf, len, "pid %llu on %s%s%s%s", (unsigned long long)s->pid,
			 host ? host : "?", rank ? " (" : "", rank ? rank : "", rank ? ")" : "");
		free(host);
		free(rank);
	}
	return buf;
}
