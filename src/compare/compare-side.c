/* SPDX-License-Identifier: MIT */
/*
 * One side of tally compare: a streaming pass that keeps each GPU record in 24 bytes, then the
 * stretch (whole run, NVTX range, capture window) cut out of it, and the side's losses judged
 * against that stretch: a loss window that overlaps it, or a loss whose time is not known, makes
 * the side's timings unusable.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "compare-int.h"
#include "grow.h"

#define MEMOP_KEYS 15 /* memcpy kinds 0..13, then memset */
/* name ids below this are cached in an array indexed by id (4 bytes each, 4 MiB at most);
 * larger ones are interned on every record */
#define NAME_CACHE_MAX (1u << 20)

static struct cmp_sec *sec_of(struct cmp_side *sd, const struct report_section *rs)
{
	size_t cap = sd->nsecs;
	struct cmp_sec *n;

	if (rs->index < sd->nsecs)
		return &sd->secs[rs->index];
	n = tally_grow(sd->secs, &cap, rs->index + 1, sizeof(*n));
	if (!n)
		return NULL;
	sd->secs = n;
	sd->nsecs = cap;
	return &sd->secs[rs->index];
}

static long stream_of(struct cmp_side *sd, const struct report_section *rs,
		      const struct tally_record *r)
{
	struct cmp_stream_id id = {rs->index, r->device_id, r->context_id, r->stream_id};
	struct cmp_stream_id *s;
	uint32_t found;

	if (sd->nstreams && memcmp(&sd->streams[sd->last_stream], &id, sizeof(id)) == 0)
		return (long)sd->last_stream;
	found = cmp_stream_find(sd, &id);
	if (found)
		return (long)(sd->last_stream = found - 1);
	s = tally_grow(sd->streams, &sd->scap, sd->nstreams + 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	sd->streams = s;
	if (tally_map_put(&sd->stream_map, tally_key32(id.process, id.device),
			  tally_key32(id.context, id.stream), (uint32_t)sd->nstreams + 1) < 0)
		return -ENOMEM;
	s[sd->nstreams] = id;
	return (long)(sd->last_stream = sd->nstreams++);
}

static const char *memop_name(unsigned op, char *buf, size_t len)
{
	if (op == MEMOP_KEYS - 1)
		snprintf(buf, len, "[CUDA memset]");
	else
		snprintf(buf, len, "[CUDA memcpy %s]", report_memcpy_kind_label(op));
	return buf;
}

static long key_of(struct cmp_side *sd, struct report_section *rs, struct cmp_sec *sec,
		   const struct tally_record *r)
{
	char buf[64];
	long k;

	if (r->kind != TALLY_KIND_KERNEL) {
		unsigned op = r->kind == TALLY_KIND_MEMSET  ? MEMOP_KEYS - 1
			      : r->subkind < MEMOP_KEYS - 1 ? r->subkind
							    : 0;

		return cmp_key_intern(sd->keys, memop_name(op, buf, sizeof(buf)), r->kind);
	}
	if (r->name_id < sec->nnames && sec->key_of_name[r->name_id])
		return (long)sec->key_of_name[r->name_id] - 1;
	k = cmp_key_intern(sd->keys, report_kernel_name(rs, r->name_id, REPORT_NAME_MANGLED),
			   TALLY_KIND_KERNEL);
	if (k < 0)
		return k;
	if (r->name_id >= NAME_CACHE_MAX) /* a record's name id is not bounded by the file: a
					   * crafted one asked for 16 GiB here */
		return k;
	if (r->name_id >= sec->nnames) {
		size_t cap = sec->nnames;
		uint32_t *n =
		    tally_grow(sec->key_of_name, &cap, (size_t)r->name_id + 1, sizeof(*n));

		if (!n)
			return -ENOMEM;
		sec->key_of_name = n;
		sec->nnames = (uint32_t)cap;
	}
	sec->key_of_name[r->name_id] = (uint32_t)k + 1;
	return k;
}

static int add_gpu(struct cmp_side *sd, struct report_section *rs, struct cmp_sec *sec,
		   const struct tally_record *r)
{
	long key = key_of(sd, rs, sec, r), stream = stream_of(sd, rs, r);
	uint64_t dur = r->end > r->start ? r->end - r->start : 0;
	struct cmp_event *ev = tally_grow(sd->ev, &sd->cap, sd->nev + 1, sizeof(*ev));

	if (key < 0 || stream < 0 || !ev)
		return -ENOMEM;
	sd->ev = ev;
	ev[sd->nev++] = (struct cmp_event){report_time(rs, r->start),
					   dur > UINT32_MAX ? UINT32_MAX : (uint32_t)dur,
					   (uint32_t)key, (uint32_t)stream, r->correlation_id};
	return 0;
}

static int add_launch(struct cmp_sec *sec, struct report_section *rs, const struct tally_record *r)
{
	struct cmp_launch *l;

	if (!((r->flags & TALLY_REC_LAUNCH) || r->subkind == TALLY_API_LAUNCH) ||
	    !r->correlation_id)
		return 0;
	l = tally_grow(sec->launch, &sec->launch_cap, sec->nlaunch + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	sec->launch = l;
	l[sec->nlaunch++] = (struct cmp_launch){r->correlation_id, report_time(rs, r->start)};
	return 0;
}

static int launch_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct cmp_launch *)a)->corr, y = ((const struct cmp_launch *)b)->corr;

	return (x > y) - (x < y);
}

/* The launch time of a correlation id, 0 if none was seen (sec->launch sorted by build_ivals). */
static uint64_t launch_time(const struct cmp_sec *sec, uint32_t corr)
{
	size_t lo = 0, hi = sec->nlaunch;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sec->launch[mid].corr < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sec->nlaunch && sec->launch[lo].corr == corr ? sec->launch[lo].t : 0;
}

static int add_range(struct cmp_side *sd, struct cmp_sec *sec, struct report_section *rs,
		     const struct tally_record *r)
{
	const char *msg = report_string(rs, r->name_id);
	struct cmp_ival *iv;

	if ((r->flags & TALLY_REC_DEPTH_LOST) || !msg || strcmp(msg, sd->o->range_name) != 0)
		return 0;
	iv = tally_grow(sec->ivals, &sec->cap, sec->nivals + 1, sizeof(*iv));
	if (!iv)
		return -ENOMEM;
	sec->ivals = iv;
	iv[sec->nivals++] = (struct cmp_ival){report_time(rs, r->start), report_time(rs, r->end)};
	return 0;
}

static int one_record(struct cmp_side *sd, struct report_section *rs, struct cmp_sec *sec,
		      const struct tally_record *r)
{
	bool ranges = sd->o->stretch == COMPARE_RANGE;

	if (tally_kind_is_gpu(r->kind)) {
		if (!(r->flags & TALLY_REC_BAD_TIME))
			return add_gpu(sd, rs, sec, r);
		sd->untimed++;
	} else if (ranges && tally_kind_is_api(r->kind)) {
		return add_launch(sec, rs, r);
	} else if (ranges && r->kind == TALLY_KIND_NVTX_RANGE) {
		return add_range(sd, sec, rs, r);
	}
	return 0;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct cmp_side *sd = ctx;
	struct cmp_sec *sec = sec_of(sd, rs);
	size_t i;

	if (!sec)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (one_record(sd, rs, sec, &r[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* A summary's group of GPU work: its durations' sketch, under the key a record would have. */
static int summary_group(void *ctx, const struct stats_summary_group *g)
{
	struct cmp_side *sd = ctx;
	unsigned kind = g->report == (unsigned)report_find("cuda_gpu_kern_sum") ? TALLY_KIND_KERNEL
			: strcmp(g->name, "[CUDA memset]") == 0			? TALLY_KIND_MEMSET
										: TALLY_KIND_MEMCPY;
	long k;

	if (g->report != (unsigned)report_find("cuda_gpu_kern_sum") &&
	    g->report != (unsigned)report_find("cuda_gpu_mem_time_sum"))
		return 0;
	k = cmp_key_intern(sd->keys, g->name, kind);
	if (k < 0)
		return -ENOMEM;
	if ((size_t)k >= sd->nsk) {
		size_t cap = sd->nsk;
		struct tally_sketch *t = tally_grow(sd->sk, &cap, (size_t)k + 1, sizeof(*t));

		if (!t)
			return -ENOMEM;
		sd->sk = t;
		sd->nsk = cap;
	}
	return tally_sketch_merge(&sd->sk[k], g->sk);
}

static int on_chunk(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		    const uint8_t *payload)
{
	struct cmp_side *sd = ctx;

	if (!rs->s->summary)
		return 0;
	sd->summaries = true;
	if (c->type != TALLY_CHUNK_SUMMARY)
		return 0;
	return stats_summary_each(payload, c->len, summary_group, sd);
}

/* The model's pass beside compare's own: both see every call, the model first. */
static int tee_section(void *ctx, struct report_section *rs)
{
	struct report_scan_ops *m = &((struct cmp_side *)ctx)->model;

	return m->section ? m->section(m->ctx, rs) : 0;
}

static int tee_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct cmp_side *sd = ctx;
	int rc = sd->model.records(sd->model.ctx, rs, r, n);

	return rc ? rc : on_records(ctx, rs, r, n);
}

static int tee_section_end(void *ctx, struct report_section *rs)
{
	struct report_scan_ops *m = &((struct cmp_side *)ctx)->model;

	return m->section_end ? m->section_end(m->ctx, rs) : 0;
}

static int tee_chunk(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		     const uint8_t *payload)
{
	struct cmp_side *sd = ctx;
	int rc = sd->model.chunk ? sd->model.chunk(sd->model.ctx, rs, c, payload) : 0;

	return rc ? rc : on_chunk(ctx, rs, c, payload);
}

/* What bounds the side's steps: step_bound's rows, summed. */
static void bottleneck(struct cmp_side *sd, struct compare_bottleneck *b)
{
	size_t n, i;
	const struct bound_row *r = stats_bound(sd->st, &n);
	uint64_t largest = 0;
	unsigned k;

	memset(b, 0, sizeof(*b));
	for (i = 0; r && i < n; i++) {
		b->rows++;
		b->steps += r[i].nsteps;
		b->step_ns += r[i].step_ns;
		for (k = 0; k < BOUND_CLASSES; k++)
			b->ns[k] += r[i].ns[k];
		if (r[i].step_ns > largest) {
			largest = r[i].step_ns;
			b->median_step = r[i].median_step;
		}
	}
	b->known = b->step_ns > 0;
	for (k = 1; k < BOUND_CLASSES; k++)
		if (b->ns[k] > b->ns[b->verdict])
			b->verdict = (enum bound_class)k;
}

/* The model's count and median of every kernel name and copy kind (stats' groups, by the names
 * compare keys them by), so that compare shows the figures tally stats shows. */
static int model_figures(struct cmp_side *sd)
{
	static const char *const reports[] = {"cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum"};
	const struct stats_group_view *g;
	unsigned r;
	size_t i;

	for (r = 0; r < 2; r++) {
		for (i = 0; (g = stats_group(sd->st, (unsigned)report_find(reports[r]), i)); i++) {
			unsigned kind = r == 0					? TALLY_KIND_KERNEL
					: strcmp(g->name, "[CUDA memset]") == 0 ? TALLY_KIND_MEMSET
										: TALLY_KIND_MEMCPY;
			long k = cmp_key_intern(sd->keys, g->name, kind);

			if (k < 0 ||
			    !tally_grow_in(&sd->fig, &sd->nfig, (size_t)k + 1, sizeof(*sd->fig)))
				return -ENOMEM;
			sd->fig[k] = (struct cmp_model_fig){g->count, g->median};
		}
	}
	return 0;
}

int cmp_side_read(struct cmp_side *sd, char *const *paths, size_t n, char *err, size_t errlen,
		  struct compare_bottleneck *b)
{
	struct report_scan_ops ops = {.section = tee_section,
				      .records = tee_records,
				      .section_end = tee_section_end,
				      .chunk = tee_chunk,
				      .ctx = sd};
	struct stats_request req = {0};
	int rc = report_set_open(&sd->set, paths, n, err, errlen);

	if (rc < 0)
		return rc;
	req.reports = 1ull << report_find("step_bound");
	if (sd->o->stretch == COMPARE_WHOLE) { /* the model's groups are of the whole run */
		req.reports |= 1ull << report_find("cuda_gpu_kern_sum") |
			       1ull << report_find("cuda_gpu_mem_time_sum");
		req.names[report_find("cuda_gpu_kern_sum")] = REPORT_NAME_MANGLED;
	}
	req.range = sd->o->stretch == COMPARE_RANGE ? sd->o->range_name : NULL;
	if (!(sd->st = stats_new(&req))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	stats_scan_ops(sd->st, &sd->model);
	report_set_find_base(&sd->set);
	rc = report_scan(&sd->set, &ops, err, errlen);
	if (rc == 0 && (rc = stats_finish(sd->st, &sd->set)) < 0 && stats_error(sd->st)) {
		snprintf(err, errlen, "%s", stats_error(sd->st));
		return rc;
	}
	if (rc > 0 || rc == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc == 0 && model_figures(sd) < 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc == 0)
		bottleneck(sd, b);
	return rc;
}

void cmp_side_free(struct cmp_side *sd)
{
	size_t i;

	for (i = 0; i < sd->nsecs; i++) {
		free(sd->secs[i].key_of_name);
		free(sd->secs[i].launch);
		free(sd->secs[i].ivals);
	}
	free(sd->secs);
	free(sd->ev);
	free(sd->streams);
	tally_map_fini(&sd->stream_map);
	for (i = 0; i < sd->nsk; i++)
		tally_sketch_fini(&sd->sk[i]);
	free(sd->sk);
	free(sd->fig);
	stats_free(sd->st);
	report_set_close(&sd->set);
}

/* ---- the stretch --------------------------------------------------------------------------- */

static int ival_cmp(const void *a, const void *b)
{
	const struct cmp_ival *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* Keep the k-th (or every) interval, sorted and merged where they overlap. */
static void select_ivals(struct cmp_sec *sec, unsigned k)
{
	size_t i, n = 0;

	if (sec->nivals > 1)
		qsort(sec->ivals, sec->nivals, sizeof(*sec->ivals), ival_cmp);
	if (k) {
		if (k <= sec->nivals)
			sec->ivals[0] = sec->ivals[k - 1];
		sec->nivals = k <= sec->nivals;
		return;
	}
	for (i = 0; i < sec->nivals; i++) {
		if (n && sec->ivals[i].t0 <= sec->ivals[n - 1].t1) {
			if (sec->ivals[i].t1 > sec->ivals[n - 1].t1)
				sec->ivals[n - 1].t1 = sec->ivals[i].t1;
			continue;
		}
		sec->ivals[n++] = sec->ivals[i];
	}
	sec->nivals = n;
}

/* The collection window from its notes: open (or the start) to close (or the end). */
static int capture_ivals(struct cmp_sec *sec, struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	uint64_t t0 = 0;
	bool open = false;
	size_t i;

	for (i = 0; i < s->nnotes; i++) {
		const struct tally_note *nt = &s->notes[i];
		bool is_open = nt->code && strcmp(nt->code, "window-open") == 0;
		bool is_close = nt->code && strcmp(nt->code, "window-close") == 0;
		struct cmp_ival *iv;

		if (is_open && !open) {
			t0 = report_time(rs, nt->time);
			open = true;
		} else if (is_close && open) {
			iv = tally_grow(sec->ivals, &sec->cap, sec->nivals + 1, sizeof(*iv));
			if (!iv)
				return -ENOMEM;
			sec->ivals = iv;
			iv[sec->nivals++] = (struct cmp_ival){t0, report_time(rs, nt->time)};
			open = false;
		}
	}
	if (open) {
		struct cmp_ival *iv =
		    tally_grow(sec->ivals, &sec->cap, sec->nivals + 1, sizeof(*iv));

		if (!iv)
			return -ENOMEM;
		sec->ivals = iv;
		iv[sec->nivals++] = (struct cmp_ival){t0, UINT64_MAX};
	}
	return 0;
}

static bool in_ivals(const struct cmp_sec *sec, uint64_t t)
{
	size_t lo = 0, hi = sec->nivals;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sec->ivals[mid].t1 < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sec->nivals && sec->ivals[lo].t0 <= t;
}

static uint64_t event_time(const struct cmp_side *sd, const struct cmp_event *e)
{
	const struct cmp_sec *sec = &sd->secs[sd->streams[e->stream].process];

	uint64_t t = sd->o->stretch == COMPARE_RANGE ? launch_time(sec, e->corr) : 0;

	return t ? t : e->start;
}

static int build_ivals(struct cmp_side *sd, struct compare_side_info *info)
{
	size_t i;

	for (i = 0; i < sd->set.nsections; i++) {
		struct report_section *rs = sd->set.sections[i];
		struct cmp_sec *sec = sec_of(sd, rs);

		if (!sec)
			return -ENOMEM;
		if (sec->nlaunch) /* qsort's base may not be NULL, even for none */
			qsort(sec->launch, sec->nlaunch, sizeof(*sec->launch), launch_cmp);
		if (sd->o->stretch == COMPARE_CAPTURE && capture_ivals(sec, rs) < 0)
			return -ENOMEM;
		select_ivals(sec, sd->o->stretch == COMPARE_RANGE ? sd->o->range_k : 0);
		info->intervals += sec->nivals;
	}
	return 0;
}

static void cut(struct cmp_side *sd)
{
	size_t i, n = 0;

	for (i = 0; i < sd->nev; i++) {
		const struct cmp_event *e = &sd->ev[i];

		if (in_ivals(&sd->secs[sd->streams[e->stream].process], event_time(sd, e)))
			sd->ev[n++] = *e;
	}
	sd->nev = n;
}

/* ---- losses against the stretch ---------------------------------------------------------- */

/* Where each section's events lie in sd->ev: they come in reading order, a section's together,
 * so each judged window looks at its own section's events, not at every rank's. */
static void event_ranges(struct cmp_side *sd)
{
	size_t i;

	for (i = 0; i < sd->nsecs; i++)
		sd->secs[i].ev_begin = sd->secs[i].ev_end = 0;
	for (i = 0; i < sd->nev; i++) {
		struct cmp_sec *sec = &sd->secs[sd->streams[sd->ev[i].stream].process];

		if (sec->ev_end == 0)
			sec->ev_begin = i;
		sec->ev_end = i + 1;
	}
}

static void say(struct compare_side_info *info, const char *text)
{
	size_t used = strlen(info->why);

	info->timing_usable = false;
	snprintf(info->why + used, sizeof(info->why) - used, "%s%s", used ? "; " : "", text);
}

static bool window_hits(const struct cmp_side *sd, const struct report_section *rs,
			const struct tally_window *w)
{
	uint64_t t0 = report_time(rs, w->t_begin), t1 = report_time(rs, w->t_end);
	/* a section that had no record has no entry (secs may even be NULL) */
	const struct cmp_sec *sec = rs->index < sd->nsecs ? &sd->secs[rs->index] : NULL;
	size_t i;

	if (sd->o->stretch == COMPARE_WHOLE)
		return true;
	for (i = 0; sec && i < sec->nivals; i++)
		if (sec->ivals[i].t0 <= t1 && t0 <= sec->ivals[i].t1)
			return true;
	/* GPU work launched in the stretch, run after it: the section's own events */
	for (i = sec ? sec->ev_begin : 0; sec && i < sec->ev_end; i++) {
		const struct cmp_event *e = &sd->ev[i];

		if (sd->streams[e->stream].process == rs->index && e->start <= t1 &&
		    t0 <= e->start + e->dur)
			return true;
	}
	return false;
}

static bool counter_has_window(const struct tally_section *s, unsigned counter)
{
	size_t i;

	for (i = 0; i < s->nwindows; i++)
		if (s->windows[i].counter == counter)
			return true;
	return false;
}

static void judge_section(const struct cmp_side *sd, struct report_section *rs,
			  struct compare_side_info *info)
{
	const struct tally_verdict *v = &rs->verdict;
	const struct tally_section *s = rs->s;
	char text[160];
	size_t i;

	for (i = 0; i < v->nreasons; i++) {
		const struct tally_reason *r = &v->reasons[i];
		const struct tally_counter_info *ci = tally_counter_info(r->counter);

		if (r->code != TALLY_R_LOSS)
			snprintf(text, sizeof(text), "%s (time unknown)",
				 tally_reason_code_name(r->code));
		else if (!counter_has_window(s, r->counter))
			snprintf(text, sizeof(text), "%s: %" PRIu64 " lost at an unknown time",
				 ci ? ci->name : "loss", r->count);
		else
			continue;
		say(info, text);
	}
	for (i = 0; i < s->nwindows; i++) {
		const struct tally_counter_info *ci = tally_counter_info(s->windows[i].counter);

		if (!window_hits(sd, rs, &s->windows[i]))
			continue;
		snprintf(text, sizeof(text), "%s: %" PRIu64 " lost in the stretch",
			 ci ? ci->name : "loss", s->windows[i].count);
		say(info, text);
	}
}

/* A file in which no section could be read (a header and nothing, junk, a resynchronisation
 * that found no session) says nothing about its run: its side cannot be timed at all. */
static void judge_input(const struct report_input *in, struct compare_side_info *info)
{
	char text[300];

	if (in->f->nsections)
		return;
	snprintf(text, sizeof(text), "%s: no session could be read (%zu damaged range(s))",
		 in->path, in->f->ndamage);
	say(info, text);
}

static int collect_drops(const struct report_section *rs, struct compare_side_info *info)
{
	size_t i;

	for (i = 0; i < rs->s->ndrops; i++) {
		const struct tally_drops *d = &rs->s->drops[i];
		struct compare_ctx_drops *n =
		    tally_array_push(&info->ctx_drops, &info->nctx_drops, sizeof(*n));

		if (!n)
			return -ENOMEM;
		*n = (struct compare_ctx_drops){rs->index, *d};
	}
	return 0;
}

static int collect_reasons(const struct cmp_side *sd, struct compare_side_info *info)
{
	size_t i, j;

	for (i = 0; i < sd->set.nsections; i++) {
		struct report_section *rs = sd->set.sections[i];
		char label[300], line[600];

		if (collect_drops(rs, info) < 0)
			return -ENOMEM;
		for (j = 0; j < rs->verdict.nreasons; j++) {
			char **n = tally_array_push(&info->reasons, &info->nreasons, sizeof(*n));

			if (!n)
				return -ENOMEM;
			snprintf(line, sizeof(line), "%s: %s",
				 report_section_label(rs, label, sizeof(label)),
				 rs->verdict.reasons[j].text);
			if (!(*n = strdup(line)))
				return -ENOMEM;
		}
		for (j = 0; j < tally_loss_counters_count && j < 64; j++)
			info->loss[j] += rs->s->ledger.v[tally_loss_counters[j]];
	}
	return 0;
}

int cmp_side_stretch(struct cmp_side *sd, struct compare_side_info *info, char *err, size_t errlen)
{
	size_t i;

	info->files = sd->set.ninputs;
	info->processes = sd->set.nsections;
	info->complete = sd->set.complete;
	info->timing_usable = true;
	info->untimed = sd->untimed;
	if (sd->o->stretch != COMPARE_WHOLE && sd->summaries) {
		snprintf(err, errlen, "%s",
			 "a summary (tally stats --partial) holds no ranges or capture windows: "
			 "compare the traces themselves, or compare the whole runs");
		return -ESRCH;
	}
	if (sd->o->stretch != COMPARE_WHOLE) {
		if (build_ivals(sd, info) < 0)
			return -ENOMEM;
		if (!info->intervals) {
			snprintf(err, errlen, "%s",
				 sd->o->stretch == COMPARE_CAPTURE
				     ? "no capture window (the trace has no window-open note)"
				     : "no such NVTX range (or not that many occurrences)");
			return -ESRCH;
		}
		cut(sd);
	}
	info->gpu_records = sd->nev;
	for (i = 0; i < sd->nsk; i++) /* what summaries stand for */
		info->gpu_records += sd->sk[i].values;
	event_ranges(sd);
	for (i = 0; i < sd->set.nsections; i++)
		judge_section(sd, sd->set.sections[i], info);
	for (i = 0; i < sd->set.ninputs; i++)
		judge_input(&sd->set.inputs[i], info);
	return collect_reasons(sd, info);
}
