/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's consumer (pipeline-int.h): the consumer thread, or whoever calls drain, tick or
 * stop, one at a time under consume_lock.  It walks the queued buffers, checks and correlates
 * the records, encodes them into batches and writes the chunks; each slice it writes the ledger,
 * and at the close (finish_locked) everything left and the final ledger.
 */
#include "clock.h"
#include "libc.h"
#include "payloads.h"
#include "pipeline-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nativestack.h"
#include "stacktab.h"

static void emit_clock(struct pipeline *p);

static void emit_chunk(struct pipeline *p, unsigned type, unsigned flags, const struct tally_buf *b,
		       uint64_t records)
{
	(void)tally_writer_chunk(&p->writer, type, flags, b->data, b->len, records);
}

/* New frames, stacks and modules, before the records that name them. */
static void emit_stacks(struct pipeline *p)
{
	struct tally_buf frames = {0}, stacks = {0}, modules = {0};

	tally_stacktab_take(&frames, &stacks, &modules, tally_nativestack_modules_for);
	if (frames.len)
		emit_chunk(p, TALLY_CHUNK_FRAMES, 0, &frames, 0);
	if (stacks.len)
		emit_chunk(p, TALLY_CHUNK_STACKS, 0, &stacks, 0);
	if (modules.len)
		emit_chunk(p, TALLY_CHUNK_MODULES, 0, &modules, 0);
	tally_buf_fini(&frames);
	tally_buf_fini(&stacks);
	tally_buf_fini(&modules);
}

static void emit_strings(struct pipeline *p)
{
	tally_buf_reset(&p->payload);
	if (tally_strtab_take_pending(&p->strings, &p->payload))
		emit_chunk(p, TALLY_CHUNK_STRINGS, 0, &p->payload, 0);
	if (p->cfg.stacks)
		emit_stacks(p);
}

static void emit_batch(struct pipeline *p, unsigned kind)
{
	struct batch *b = &p->batches[kind];

	if (!b->n)
		return;
	emit_strings(p); /* a RECORDS chunk may only use ids already written */
	tally_buf_reset(&p->payload);
	if (tally_records_encode(&p->codec, &p->payload, kind, b->recs, b->n,
				 tally_kind_columns(kind)) < 0) {
		p->c[TALLY_C_DROPPED_INPROCESS] += b->n;
	} else {
		emit_chunk(p, TALLY_CHUNK_RECORDS, 0, &p->payload, b->n);
		p->c[TALLY_C_BY_KIND + kind] += b->n;
	}
	b->n = 0;
}

static void note_context(struct pipeline *p, const struct tally_record *r)
{
	struct drop_context *d = p->contexts;
	unsigned i;

	for (i = 0; i < p->ncontexts && d[i].context != r->context_id; i++)
		;
	if (i == p->ncontexts) {
		if (i == sizeof(p->contexts) / sizeof(p->contexts[0]))
			return; /* more contexts than any process has: the rest go unlisted */
		d[p->ncontexts++] = (struct drop_context){r->context_id, r->device_id, 0};
		p->drops_dirty = true;
	}
	d[i].gpu_records++;
}

static void append_record(struct pipeline *p, const struct tally_record *r)
{
	struct batch *b = &p->batches[r->kind];

	if (tally_kind_is_gpu(r->kind))
		note_context(p, r);
	if (!b->recs) {
		b->recs = malloc(p->cfg.batch_records * sizeof(*b->recs));
		if (!b->recs) {
			p->c[TALLY_C_DROPPED_INPROCESS]++;
			return;
		}
	}
	b->recs[b->n++] = *r;
	if (b->n == p->cfg.batch_records)
		emit_batch(p, r->kind);
}

/*
 * Launches between cudaStreamBeginCapture and EndCapture on a thread go into a graph: they launch
 * nothing themselves (the graph's launch does), so no GPU record will answer them.  A thread's
 * records come in order (CUPTI keeps a buffer per thread), so a depth per thread is enough.
 */
static void track_capture(struct pipeline *p, struct tally_record *r)
{
	struct capture *c = NULL;
	unsigned i;

	for (i = 0; i < p->ncaptures; i++)
		if (p->captures[i].thread == r->thread_id)
			c = &p->captures[i];
	if (r->subkind == TALLY_API_CAPTURE_BEGIN) {
		if (!c && p->ncaptures < sizeof(p->captures) / sizeof(p->captures[0]))
			c = &p->captures[p->ncaptures++], c->thread = r->thread_id, c->depth = 0;
		if (c)
			c->depth++;
	} else if (r->subkind == TALLY_API_CAPTURE_END && c && c->depth > 0) {
		c->depth--;
	} else if (c && c->depth > 0 && (r->flags & TALLY_REC_LAUNCH)) {
		r->flags = (r->flags & ~TALLY_REC_LAUNCH) | TALLY_REC_CAPTURED;
	}
}

static void check_record(struct pipeline *p, struct tally_record *r)
{
	bool launches;

	if (tally_kind_is_api(r->kind) && (p->ncaptures || r->subkind >= TALLY_API_CAPTURE_BEGIN))
		track_capture(p, r);
	launches = r->flags & TALLY_REC_LAUNCH;

	if (!r->start || !r->end || r->end < r->start) {
		r->flags |= TALLY_REC_BAD_TIME;
		p->c[TALLY_C_BAD_TIME]++;
	}
	if (tally_kind_is_api(r->kind)) {
		tally_corr_api(&p->corr, r->correlation_id, launches, r->start ? r->start : r->end);
		p->c[TALLY_C_LAUNCH_CALLS] += launches;
	} else if (tally_kind_is_gpu(r->kind)) {
		tally_corr_gpu(&p->corr, r->correlation_id, r->start ? r->start : r->end);
		p->c[TALLY_C_GPU_RECORDS]++;
	}
}

/*
 * The test knob's delay, spun on the monotonic clock: nanosleep's timer slack (50 us by default)
 * turned a 5 us delay into about 57 us, so a "5 us per record" consumer was ten times slower
 * than asked and the backlog tests measured the knob rather than the close.
 */
static void slow_down(uint64_t ns)
{
	uint64_t until = tally_monotonic_ns() + ns;

	while (tally_monotonic_ns() < until)
		;
}

static void consume_record(struct pipeline *p, const CUpti_Activity *rec)
{
	struct tally_record r;

	if (p->cfg.slow_consumer_ns)
		slow_down(p->cfg.slow_consumer_ns);
	p->c[TALLY_C_RECORDS_PARSED]++;
	switch (tally_convert(&p->convert, rec, &r, &p->device)) {
	case CONVERT_UNKNOWN:
		p->c[TALLY_C_UNKNOWN_KIND]++;
		return;
	case CONVERT_NONE:
		return;
	case CONVERT_DEVICE:
		emit_chunk(p, TALLY_CHUNK_DEVICE, 0, &p->device, 0);
		tally_buf_reset(&p->device);
		return;
	case CONVERT_RECORD:
		break;
	}
	if (r.kind >= TALLY_KIND_MAX) {
		p->c[TALLY_C_UNKNOWN_KIND]++;
		return;
	}
	if (p->cfg.stacks)
		r.stack_id = tally_stacktab_lookup(r.correlation_id);
	check_record(p, &r);
	if (p->cfg.device_mask && tally_kind_is_gpu(r.kind) &&
	    (r.device_id >= 64 || !(p->cfg.device_mask >> r.device_id & 1))) {
		p->c[TALLY_C_OUTSIDE_WINDOW]++; /* left out on purpose (--devices) */
		return;
	}
	append_record(p, &r);
}

static void consume_cupti(struct pipeline *p, const struct tally_queue_item *it);

/* Our own NVTX events: walk, intern names, check, batch; then the buffer is freed. */
static void consume_nvtx(struct pipeline *p, const struct tally_queue_item *it)
{
	const uint8_t *q = it->buf, *end = it->buf + it->valid;
	pid_t pid = getpid();

	while (q + sizeof(struct tally_nvtx_event) <= end) {
		struct tally_nvtx_event ev;
		struct tally_record r;
		const char *text;

		memcpy(&ev, q, sizeof(ev));
		if (ev.size < sizeof(ev) || q + ev.size > end ||
		    sizeof(ev) + ev.name_len + ev.domain_len > ev.size) {
			p->c[TALLY_C_PARSE_FAILURES]++;
			break;
		}
		text = (const char *)q + sizeof(ev);
		memset(&r, 0, sizeof(r));
		r.kind =
		    ev.kind == TALLY_KIND_NVTX_MARK ? TALLY_KIND_NVTX_MARK : TALLY_KIND_NVTX_RANGE;
		r.start = ev.start;
		r.end = ev.end;
		r.thread_id = ev.tid;
		r.process_id = (uint32_t)pid;
		r.color = ev.color;
		r.category = ev.category;
		r.value = (uint32_t)ev.payload;
		r.flags = (ev.flags & 1 ? TALLY_REC_DEPTH_LOST : 0) |
			  (ev.flags & 2 ? TALLY_REC_TEXT_TRUNCATED : 0);
		r.name_id = tally_strtab_intern_len(&p->strings, text, ev.name_len);
		if (ev.domain_len)
			r.domain_id =
			    tally_strtab_intern_len(&p->strings, text + ev.name_len, ev.domain_len);
		p->c[TALLY_C_RECORDS_PARSED]++;
		check_record(p, &r);
		append_record(p, &r);
		q += ev.size;
	}
	free(it->buf);
}

/* The NAME of an OSRT record: the call's name, interned once per session. */
static uint32_t osrt_name(struct pipeline *p, unsigned call)
{
	const char *name = tally_osrt_call_name(call);

	if (!name)
		return 0;
	if (!p->osrt_names[call])
		p->osrt_names[call] = tally_strtab_intern(&p->strings, name);
	return p->osrt_names[call];
}

/* Host records, ready as they are: the OSRT names are the only thing left to fill in. */
static void consume_host(struct pipeline *p, const struct tally_queue_item *it)
{
	struct tally_record *r = (struct tally_record *)(void *)it->buf;
	size_t i, n = it->valid / sizeof(*r);

	for (i = 0; i < n; i++) {
		if (r[i].kind != TALLY_KIND_CPU_SAMPLE && r[i].kind != TALLY_KIND_OSRT)
			continue; /* only these come this way */
		if (r[i].kind == TALLY_KIND_OSRT)
			r[i].name_id = osrt_name(p, r[i].cbid);
		append_record(p, &r[i]);
	}
	free(it->buf);
}

static void consume_buffer(struct pipeline *p, const struct tally_queue_item *it)
{
	if (it->origin == ORIGIN_NVTX) {
		consume_nvtx(p, it);
		return;
	}
	if (it->origin == ORIGIN_HOST) {
		consume_host(p, it);
		return;
	}
	consume_cupti(p, it);
}

static void consume_cupti(struct pipeline *p, const struct tally_queue_item *it)
{
	uint64_t parsed_before = p->c[TALLY_C_RECORDS_PARSED];
	uint64_t flush_start = atomic_load_explicit(&p->flush_start, memory_order_acquire);
	CUpti_Activity *rec = NULL, *last = NULL;
	CUptiResult st;

	while ((st = p->src.next_record(it->buf, it->valid, &rec)) == CUPTI_SUCCESS) {
		consume_record(p, rec);
		last = rec;
	}
	if (st != CUPTI_ERROR_MAX_LIMIT_REACHED) {
		/* CUPTI could not walk on (an invalid or incomplete record): the rest is lost.  In
		 * a buffer the close's forced flush handed over, which CUPTI says may hold records
		 * it has not finished (INVALID_KIND: "incomplete or invalid"), that is an activity
		 * in flight as the trace closed, not a walk that failed. */
		size_t at = last ? (size_t)((uint8_t *)last - it->buf) : 0;

		if (st == CUPTI_ERROR_INVALID_KIND && flush_start &&
		    it->delivered_at >= flush_start)
			p->c[TALLY_C_INCOMPLETE_AT_CLOSE]++;
		else
			p->c[TALLY_C_PARSE_FAILURES]++;
		p->c[TALLY_C_PARSE_BYTES_LOST] += it->valid > at ? it->valid - at : 0;
	}
	if (flush_start && it->delivered_at >= flush_start) {
		p->c[TALLY_C_FLUSH_BUFFERS]++;
		p->c[TALLY_C_FLUSH_RECORDS] += p->c[TALLY_C_RECORDS_PARSED] - parsed_before;
	}
	tally_pool_give(&p->pool, it->buf, p->src.now());
	p->c[TALLY_C_BUFFERS_RETURNED]++;
}

static void consume_side(struct pipeline *p)
{
	struct tally_buf side = {0};
	struct tally_cursor cur;

	if (!p->opened && p->cfg.open)
		return; /* kept for the trace, if it is ever opened */
	libc_pthread_mutex_lock(&p->side_lock);
	side = p->side;
	memset(&p->side, 0, sizeof(p->side));
	pthread_mutex_unlock(&p->side_lock);
	cur = (struct tally_cursor){side.data, side.data + side.len, false};
	while (cur.p < cur.end && !cur.bad) {
		unsigned type = tally_cur_u8(&cur);
		uint64_t len = tally_cur_varint(&cur);
		const uint8_t *bytes = tally_cur_bytes(&cur, len);

		if (bytes)
			(void)tally_writer_chunk(&p->writer, type, 0, bytes, len, 0);
	}
	tally_buf_fini(&side);
}

/* The preamble, the SESSION chunk and the first clock pair, written now.  0 or -errno. */
int write_head(struct pipeline *p, const struct tally_buf *session)
{
	if (tally_writer_preamble(&p->writer) < 0)
		return -ENOMEM;
	emit_chunk(p, TALLY_CHUNK_SESSION, 0, session, 0);
	emit_clock(p);
	(void)tally_writer_flush(&p->writer);
	if (p->writer.stats.write_failures)
		return -p->writer.stats.last_errno;
	p->opened = true;
	return 0;
}

/* With cfg.open: the trace, opened when first needed; then what waited for it (notes, threads).
 * false: it could not be (nothing is written; the opener said why). */
bool ensure_open(struct pipeline *p)
{
	struct tally_buf session = {0};
	struct tally_sink sink;

	if (p->opened || p->open_failed)
		return p->opened;
	if (p->cfg.open(p->cfg.open_arg, &sink, &session) < 0) {
		p->open_failed = true;
		tally_buf_fini(&session);
		return false;
	}
	p->writer.sink = sink;
	if (write_head(p, &session) < 0)
		p->opened = true; /* a sink that fails: counted as any failed write */
	tally_buf_fini(&session);
	consume_side(p);
	return true;
}

/* Does the ledger show a loss?  A trace that lost something is always written. */
static bool any_loss(struct pipeline *p)
{
	struct tally_ledger l;
	unsigned i;

	snapshot_locked(p, &l);
	for (i = 0; i < tally_loss_counters_count; i++)
		if (l.v[tally_loss_counters[i]])
			return true;
	return false;
}

/* The sampler's batches: each metric's samples one after another (the columns compress well). */
static void consume_metrics(struct pipeline *p)
{
	struct pm_batch *b = metricq_take(&p->metrics), *next;
	uint32_t ids[PM_METRICS_MAX], m, i;
	struct tally_record r;

	if (b && p->cfg.open)
		(void)ensure_open(p);
	for (; b; b = next) {
		next = b->next;
		for (m = 0; m < b->nmetrics; m++)
			ids[m] = tally_strtab_intern(&p->strings, b->names[m]);
		for (m = 0; m < b->nmetrics; m++)
			for (i = 0; i < b->nsamples; i++) {
				pm_batch_record(b, m, i, ids[m], &r);
				append_record(p, &r);
			}
		p->c[TALLY_C_METRIC_WRITTEN] += b->nsamples;
		free(b);
	}
}

/* Gaps in the devices' samples, counted and placed (LOSS class 85) before the ledger that
 * counts them, so that a reader takes these windows instead of the slice's. */
static void emit_metric_gaps(struct pipeline *p)
{
	struct metric_gap g[METRICQ_GAPS];
	unsigned n = metricq_take_gaps(&p->metrics, g), i;

	if (!n)
		return;
	tally_buf_reset(&p->payload);
	for (i = 0; i < n; i++) {
		tally_loss_put(&p->payload, g[i].t0, g[i].t1, TALLY_C_METRIC_GAPS, g[i].count);
		p->c[TALLY_C_METRIC_GAPS] += g[i].count;
		p->c[TALLY_C_METRIC_GAP_NS] += g[i].ns;
	}
	emit_chunk(p, TALLY_CHUNK_LOSS, 0, &p->payload, 0);
}

static void read_dropped(struct pipeline *p)
{
	size_t dropped = 0;

	if (p->src.dropped(&dropped) == CUPTI_SUCCESS && dropped) {
		p->c[TALLY_C_DROPPED_CUPTI] += dropped;
		p->drops_dirty = true;
	}
}

/* Drops by the queue CUPTI counted them in, and each context tied to its device (format 1.2).
 * Cumulative: a reader keeps the latest chunk. */
static void emit_drops(struct pipeline *p, bool at_close)
{
	unsigned i;

	if (!p->drops_dirty && !(at_close && (p->ncontexts || p->c[TALLY_C_DROPPED_CUPTI])))
		return;
	tally_buf_reset(&p->payload);
	/* stream 0: CUPTI's global queue has none, nor a context's tie to its device */
	if (p->c[TALLY_C_DROPPED_CUPTI])
		tally_drops_put(&p->payload,
				&(struct tally_drops){.source = TALLY_DROPS_GLOBAL,
						      .count = p->c[TALLY_C_DROPPED_CUPTI]});
	for (i = 0; i < p->ncontexts; i++)
		tally_drops_put(&p->payload,
				&(struct tally_drops){.source = TALLY_DROPS_SEEN,
						      .context = p->contexts[i].context,
						      .device = p->contexts[i].device,
						      .count = p->contexts[i].gpu_records});
	emit_chunk(p, TALLY_CHUNK_DROPS, 0, &p->payload, 0);
	p->drops_dirty = false;
}

/* A signal arrived that the file does not show yet: the ledger that says so goes out now, so
 * that a SIGKILL before the close still leaves it (the reader then says what happened). */
static bool signal_unwritten(struct pipeline *p)
{
	return atomic_load_explicit(&p->sig_unwritten, memory_order_relaxed) &&
	       atomic_exchange_explicit(&p->sig_unwritten, false, memory_order_relaxed);
}

static uint64_t slice_deadline(struct pipeline *p)
{
	return atomic_load_explicit(&p->next_slice_mono, memory_order_relaxed);
}

/*
 * Everything queued now; returns the number of buffers consumed.  With slices, a slice that ends
 * meanwhile is closed between two buffers: under a steady stream the queue may never be empty,
 * and the periodic ledger and write must not wait for it.
 */
unsigned consume_all(struct pipeline *p, bool slices)
{
	struct tally_queue_item it;
	unsigned n = 0;

	consume_side(p);
	consume_metrics(p);
	while (tally_queue_pop(&p->queue, &it)) {
		if (it.origin != ORIGIN_CUPTI)
			atomic_fetch_sub_explicit(&p->others_queued, 1, memory_order_relaxed);
		if (p->cfg.open) /* a record: the trace is needed */
			(void)ensure_open(p);
		consume_buffer(p, &it);
		n++;
		if (slices && (tally_monotonic_ns() >= slice_deadline(p) || signal_unwritten(p)))
			end_slice(p);
	}
	if (n)
		read_dropped(p);
	return n;
}

static void snapshot_signal(struct pipeline *p, struct tally_ledger *l)
{
	int sig = atomic_load_explicit(&p->sig_first, memory_order_acquire);
	uint64_t at;

	l->v[TALLY_C_SIGNALS_RECEIVED] = atomic_load_explicit(&p->sig_count, memory_order_relaxed);
	if (!sig)
		return;
	at = atomic_load_explicit(&p->sig_at_mono, memory_order_relaxed);
	l->v[TALLY_C_SIGNAL_RECEIVED] = (uint64_t)sig;
	l->v[TALLY_C_SIGNAL_AT] = at > p->start_mono ? at - p->start_mono : 0;
	l->v[TALLY_C_SIGNAL_SENDER] =
	    (uint64_t)atomic_load_explicit(&p->sig_sender, memory_order_relaxed);
}

/* Writes failed since the last look (a full disk, say): when, at the grain of the flushes. */
static void time_write_failures(struct pipeline *p)
{
	uint64_t now;

	if (p->writer.stats.write_failures == p->failures_seen)
		return;
	p->failures_seen = p->writer.stats.write_failures;
	now = p->src.now();
	if (!p->c[TALLY_C_WRITE_FIRST_FAILED_AT])
		p->c[TALLY_C_WRITE_FIRST_FAILED_AT] = now;
	p->c[TALLY_C_WRITE_LAST_FAILED_AT] = now;
}

static void writer_flush(struct pipeline *p)
{
	(void)tally_writer_flush(&p->writer);
	time_write_failures(p);
}

/*
 * Give back the room the sink kept for the close (tally_room_release): when writes have failed,
 * just before the closing chunks, so that a full disk still takes the final ledger that says
 * so; otherwise after them, so that the file keeps nothing past its end.
 */
static void release_close_room(struct pipeline *p, bool needed)
{
	if (p->room_released || !p->writer.sink.release)
		return;
	p->room_released = true;
	if (p->writer.sink.release(p->writer.sink.release_ctx) == 0 && needed)
		p->c[TALLY_C_CLOSE_RESERVE_USED] = 1;
}

void snapshot_locked(struct pipeline *p, struct tally_ledger *l)
{
	const struct tally_writer_stats *w = &p->writer.stats;

	time_write_failures(p);
	memcpy(l->v, p->c, sizeof(l->v));
	l->unknown_counters = 0; /* a writer has none: only readers pass them on */
	l->v[TALLY_C_BUFFERS_REQUESTED] = atomic_load_explicit(&p->requested, memory_order_relaxed);
	l->v[TALLY_C_BUFFERS_DELIVERED] = atomic_load_explicit(&p->delivered, memory_order_relaxed);
	l->v[TALLY_C_BUFFERS_REFUSED] = atomic_load_explicit(&p->refused, memory_order_relaxed);
	l->v[TALLY_C_FOREIGN_BUFFERS] = atomic_load_explicit(&p->foreign, memory_order_relaxed);
	l->v[TALLY_C_BUFFERS_UNQUEUED] = atomic_load_explicit(&p->unqueued, memory_order_relaxed);
	l->v[TALLY_C_FDS_REOPENED] = atomic_load_explicit(&p->fds_reopened, memory_order_relaxed);
	l->v[TALLY_C_FD_LOST_WRITES] =
	    atomic_load_explicit(&p->fd_lost_writes, memory_order_relaxed);
	l->v[TALLY_C_DROPPED_INPROCESS] +=
	    atomic_load_explicit(&p->dropped_nvtx, memory_order_relaxed);
	l->v[TALLY_C_POOL_CAPACITY] = p->pool.capacity;
	l->v[TALLY_C_BUFFER_SIZE] = p->pool.size;
	libc_pthread_mutex_lock(&p->pool.lock);
	l->v[TALLY_C_POOL_HIGH_WATER] = p->pool.high_water;
	l->v[TALLY_C_POOL_EMPTY_NS] = p->pool.empty_ns;
	pthread_mutex_unlock(&p->pool.lock);
	l->v[TALLY_C_QUEUE_CAPACITY] = tally_queue_capacity(&p->queue);
	l->v[TALLY_C_QUEUE_HIGH_WATER] =
	    atomic_load_explicit(&p->queue.high_water, memory_order_relaxed);
	l->v[TALLY_C_WRITE_FAILURES] = w->write_failures;
	l->v[TALLY_C_WRITE_ERRNO] = (uint64_t)w->last_errno;
	l->v[TALLY_C_BYTES_WRITTEN] = w->bytes_written;
	l->v[TALLY_C_BYTES_LOST] = w->bytes_lost;
	l->v[TALLY_C_SHORT_WRITES] = w->short_writes;
	l->v[TALLY_C_CHUNKS_WRITTEN] = w->chunks_written;
	l->v[TALLY_C_CHUNKS_LOST] = w->chunks_lost;
	l->v[TALLY_C_RECORDS_LOST_WRITE] = w->records_lost;
	l->v[TALLY_C_WATCHDOG_FIRED] =
	    atomic_load_explicit(&p->watchdog_fired, memory_order_relaxed);
	for (unsigned i = 0; i < HOST_COUNTERS; i++)
		l->v[HOST_FIRST + i] = atomic_load_explicit(&p->host[i], memory_order_relaxed);
	for (unsigned i = 0; i < HOST2_COUNTERS; i++)
		l->v[HOST2_FIRST + i] = atomic_load_explicit(&p->host2[i], memory_order_relaxed);
	metricq_snapshot(&p->metrics, l->v);
	snapshot_signal(p, l);
}

static void flush_batches(struct pipeline *p)
{
	unsigned k;

	for (k = 1; k < TALLY_KIND_MAX; k++)
		emit_batch(p, k);
	emit_strings(p);
}

static void emit_ledger(struct pipeline *p, bool final)
{
	struct tally_ledger l;

	snapshot_locked(p, &l);
	l.slice = p->slice;
	l.t_begin = p->slice_begin;
	l.t_end = p->src.now();
	tally_buf_reset(&p->payload);
	tally_ledger_encode(&p->payload, &l);
	emit_chunk(p, TALLY_CHUNK_LEDGER, final ? TALLY_CHUNK_FLAG_FINAL : 0, &p->payload, 0);
	p->slice++;
	p->slice_begin = l.t_end;
}

/* End of a time slice: write what is batched, the ledger, and push it all to the file. */
void end_slice(struct pipeline *p)
{
	uint64_t next;

	if (!p->opened && p->cfg.open && !(any_loss(p) && ensure_open(p)))
		goto next_slice; /* nothing to say yet, and no trace to say it in */
	flush_batches(p);
	read_dropped(p);
	emit_drops(p, false);
	tally_corr_sweep(&p->corr);
	emit_metric_gaps(p);
	writer_flush(p); /* so the ledger counts what reached the file */
	emit_ledger(p, false);
	writer_flush(p);
next_slice:
	next = slice_deadline(p) + p->cfg.slice_ns;
	if (next < tally_monotonic_ns()) /* fell behind (suspended?): don't catch up in a burst */
		next = tally_monotonic_ns() + p->cfg.slice_ns;
	atomic_store_explicit(&p->next_slice_mono, next, memory_order_relaxed);
}

static void emit_clock(struct pipeline *p)
{
	tally_buf_reset(&p->payload);
	tally_kv_uint(&p->payload, TALLY_CK_CUPTI, p->src.now());
	tally_kv_uint(&p->payload, TALLY_CK_REALTIME, tally_realtime_ns());
	tally_kv_uint(&p->payload, TALLY_CK_MONOTONIC, tally_monotonic_ns());
	emit_chunk(p, TALLY_CHUNK_CLOCK, 0, &p->payload, 0);
}

struct finish_ctx {
	struct pipeline *p;
	struct tally_buf *payload;
};

#define EDGE_SLACK_NS 10000000ull /* a launch call is in flight for well under 10 ms */

/* Near an edge: around an opening; from just before a closing until the next opening. */
static bool at_edge(void *ctx, uint64_t ts)
{
	struct pipeline *p = ((struct finish_ctx *)ctx)->p;
	unsigned i;

	for (i = 0; i < p->nedges; i++) {
		const struct window_edge *e = &p->edges[i];
		uint64_t until = i + 1 < p->nedges ? p->edges[i + 1].t : UINT64_MAX;

		if (e->open && ts + EDGE_SLACK_NS >= e->t && ts <= e->t + EDGE_SLACK_NS)
			return true;
		if (!e->open && ts + EDGE_SLACK_NS >= e->t && ts < until)
			return true;
	}
	return false;
}

static void loss_window(void *ctx, uint64_t t0, uint64_t t1, uint64_t launches, uint64_t gpu)
{
	struct tally_buf *b = ((struct finish_ctx *)ctx)->payload;

	if (launches)
		tally_loss_put(b, t0, t1, TALLY_C_UNMATCHED_API, launches);
	if (gpu)
		tally_loss_put(b, t0, t1, TALLY_C_UNMATCHED_GPU, gpu);
}

/* Launches whose stack the full tables could not take: said once, at close. */
static void note_stacks_lost(void)
{
	uint64_t lost = tally_stacktab_lost();
	char text[160];

	if (!lost)
		return;
	snprintf(text, sizeof(text),
		 "%llu launch(es) got no call stack: the frame or stack table was full",
		 (unsigned long long)lost);
	tally_pipeline_note(TALLY_NOTE_WARNING, "stacks-lost", text);
}

/* The flush facts of a close (or of an exec's checkpoint): which path, when, and the buffers
 * CUPTI still holds. */
static void flush_facts(struct pipeline *p)
{
	uint64_t handed, delivered, empty;

	handed = atomic_load_explicit(&p->requested, memory_order_relaxed) -
		 atomic_load_explicit(&p->refused, memory_order_relaxed);
	delivered = atomic_load_explicit(&p->delivered, memory_order_relaxed);
	/* CUPTI may ask for a buffer during the close's forced flush and keep it: with no record
	 * in it, nothing is lost there */
	empty = handed > delivered ? tally_pool_held_empty(&p->pool) : 0;
	if (empty > handed - delivered)
		empty = handed - delivered;
	p->c[TALLY_C_BUFFERS_EMPTY_AT_CLOSE] = empty;
	p->c[TALLY_C_BUFFERS_STRANDED] = handed > delivered ? handed - delivered - empty : 0;
	p->c[TALLY_C_FLUSH_START] = atomic_load_explicit(&p->flush_start, memory_order_acquire);
	p->c[TALLY_C_FLUSH_PATH] = atomic_load_explicit(&p->flush_path, memory_order_relaxed);
	p->c[TALLY_C_SIGNAL] =
	    (uint64_t)atomic_load_explicit(&p->flush_signal, memory_order_relaxed);
	if (!p->c[TALLY_C_FLUSH_START])
		p->c[TALLY_C_FLUSH_START] = p->src.now();
	p->c[TALLY_C_FLUSH_END] = p->src.now();
	p->c[TALLY_C_FLUSH_COMPLETED] = 1;
}

/* The close: everything left, the unmatched, the stranded, the flush facts, the final ledger. */
void finish_locked(struct pipeline *p)
{
	struct finish_ctx fctx = {p, &p->payload};

	if (p->cfg.stacks)
		note_stacks_lost();
	consume_all(p, false);
	if (p->cfg.open && !p->opened && !(any_loss(p) && ensure_open(p)))
		return; /* nothing was recorded: no trace at all */
	flush_batches(p);
	writer_flush(p); /* the records: on a full disk they fail here, and are counted */
	if (p->writer.stats.write_failures)
		release_close_room(p, true);
	read_dropped(p);
	emit_drops(p, true);
	tally_buf_reset(&p->payload);
	libc_pthread_mutex_lock(&p->side_lock);
	tally_corr_finish(&p->corr, p->cfg.trace_api, loss_window, at_edge, &fctx,
			  &p->c[TALLY_C_UNMATCHED_API], &p->c[TALLY_C_UNMATCHED_GPU],
			  &p->c[TALLY_C_CUT_AT_EDGES]);
	pthread_mutex_unlock(&p->side_lock);
	if (p->payload.len)
		emit_chunk(p, TALLY_CHUNK_LOSS, 0, &p->payload, 0);
	emit_metric_gaps(p);
	flush_facts(p);
	emit_clock(p);
	writer_flush(p);
	if (atomic_load_explicit(&p->sig_first, memory_order_acquire))
		p->c[TALLY_C_SIGNAL_TO_CLOSE] =
		    tally_monotonic_ns() -
		    atomic_load_explicit(&p->sig_at_mono, memory_order_relaxed);
	if (p->writer.stats.write_failures) /* the close's own chunks failed: the last chance */
		release_close_room(p, true);
	writer_flush(p); /* so the ledger counts what reached the file */
	emit_ledger(p, true);
	writer_flush(p);
	release_close_room(p, false);
}

/* The flush facts and the counts an exec's checkpoint wrote: taken back when the exec failed. */
static const unsigned checkpoint_counters[] = {
    TALLY_C_BUFFERS_STRANDED, TALLY_C_FLUSH_START,     TALLY_C_FLUSH_PATH,    TALLY_C_SIGNAL,
    TALLY_C_FLUSH_END,	      TALLY_C_FLUSH_COMPLETED, TALLY_C_UNMATCHED_API, TALLY_C_UNMATCHED_GPU,
};

/*
 * An exec's checkpoint: the file as a close would leave it, ending in a final ledger, without
 * ending anything: the correlation table keeps what is in flight (counted in the ledger, as a
 * close would: one-sided entries of the last 10 ms as cut at the window's edge, older ones as
 * unmatched), the room stays kept.  resume_locked takes it back.
 */
void checkpoint_locked(struct pipeline *p)
{
	uint64_t now = p->src.now(), cut = 0, cut_before = p->c[TALLY_C_CUT_AT_EDGES];

	consume_all(p, false);
	if (p->cfg.open && !p->opened && !(any_loss(p) && ensure_open(p)))
		return; /* nothing recorded yet: nothing to make durable */
	flush_batches(p);
	writer_flush(p);
	read_dropped(p);
	emit_drops(p, true);
	libc_pthread_mutex_lock(&p->side_lock);
	tally_corr_count(&p->corr, p->cfg.trace_api, now > EDGE_SLACK_NS ? now - EDGE_SLACK_NS : 0,
			 &cut, &p->c[TALLY_C_UNMATCHED_API], &p->c[TALLY_C_UNMATCHED_GPU]);
	pthread_mutex_unlock(&p->side_lock);
	p->c[TALLY_C_CUT_AT_EDGES] += cut;
	emit_metric_gaps(p);
	flush_facts(p);
	emit_clock(p);
	writer_flush(p);
	emit_ledger(p, true);
	writer_flush(p);
	p->c[TALLY_C_CUT_AT_EDGES] = cut_before;
}

void resume_locked(struct pipeline *p)
{
	uint64_t zero = 0;
	size_t i;

	for (i = 0; i < sizeof(checkpoint_counters) / sizeof(checkpoint_counters[0]); i++)
		p->c[checkpoint_counters[i]] = 0;
	atomic_store_explicit(&p->flush_path, 0, memory_order_relaxed);
	atomic_store_explicit(&p->flush_signal, 0, memory_order_relaxed);
	atomic_store_explicit(&p->flush_start, zero, memory_order_release);
}

void *consumer_main(void *arg)
{
	struct pipeline *p = arg;

	while (atomic_load_explicit(&p->state, memory_order_acquire) == P_RUNNING) {
		uint64_t at = slice_deadline(p);
		struct timespec deadline;

		deadline.tv_sec = (time_t)(at / 1000000000ull);
		deadline.tv_nsec = (long)(at % 1000000000ull);
		(void)libc_sem_clockwait(&p->wake, CLOCK_MONOTONIC, &deadline);
		libc_pthread_mutex_lock(&p->consume_lock);
		if (atomic_load_explicit(&p->state, memory_order_acquire) == P_RUNNING) {
			consume_all(p, true);
			if (tally_monotonic_ns() >= slice_deadline(p) || signal_unwritten(p))
				end_slice(p);
		}
		pthread_mutex_unlock(&p->consume_lock);
	}
	return NULL;
}
