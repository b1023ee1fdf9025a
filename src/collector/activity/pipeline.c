/* SPDX-License-Identifier: MIT */
/*
 * The collection pipeline; see pipeline.h for the picture.  Three kinds of thread touch it:
 *
 * - producers: CUPTI's request and completion callbacks, on any application or CUPTI thread.
 *   They touch the pool (short mutex), the queue (lock-free) and relaxed atomic counters only.
 *   (pipeline-producers.c)
 * - the consumer: the consumer thread, or whoever calls drain/stop.  consume_lock makes sure only
 *   one runs at a time; everything under "consumer state" belongs to it.  (pipeline-consumer.c)
 * - the controller: whoever calls flush_begin/stop (an exit path), through atomics and the lock.
 *   (this file: the start, drain and tick, and the close)
 */
#include "clock.h"
#include "libc.h"
#include "pipeline-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nativestack.h"
#include "ownthread.h"
#include "settings.h"
#include "stacktab.h"

#define DEFAULT_BATCH 8192

uint64_t tally_pipeline_progress(void)
{
	return atomic_load_explicit(&g_progress, memory_order_relaxed);
}

void tally_pipeline_config_default(struct tally_pipeline_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* the settings' defaults (common/settings.c) */
	cfg->buffer_size = (size_t)tally_settings[TS_BUFFER_SIZE].def;
	cfg->pool_buffers = (unsigned)tally_settings[TS_POOL_BUFFERS].def;
	cfg->slice_ns = tally_settings[TS_SLICE].def;
	cfg->batch_records = DEFAULT_BATCH;
	cfg->trace_api = true;
	cfg->consumer_thread = true;
}

/* ---- control --------------------------------------------------------------------------- */

static void pipeline_free(struct pipeline *p)
{
	unsigned k;

	for (k = 0; k < TALLY_KIND_MAX; k++)
		free(p->batches[k].recs);
	tally_writer_fini(&p->writer);
	tally_strtab_fini(&p->strings);
	tally_convert_fini(&p->convert);
	tally_codec_fini(&p->codec);
	tally_corr_fini(&p->corr);
	tally_buf_fini(&p->payload);
	tally_buf_fini(&p->device);
	tally_buf_fini(&p->side);
	tally_queue_fini(&p->queue);
	tally_pool_fini(&p->pool);
	metricq_fini(&p->metrics);
	sem_destroy(&p->wake);
	pthread_mutex_destroy(&p->consume_lock);
	pthread_mutex_destroy(&p->side_lock);
	free(p);
}

static int pipeline_init(struct pipeline *p, const struct tally_pipeline_config *cfg,
			 const struct tally_source *src, const struct tally_sink *sink)
{
	int rc;

	p->cfg = *cfg;
	p->src = *src;
	if (!p->cfg.batch_records || p->cfg.batch_records > TALLY_RECORDS_MAX)
		p->cfg.batch_records = DEFAULT_BATCH;
	if (!p->cfg.slice_ns)
		p->cfg.slice_ns = tally_settings[TS_SLICE].def;
	pthread_mutex_init(&p->consume_lock, NULL);
	pthread_mutex_init(&p->side_lock, NULL);
	sem_init(&p->wake, 0, 0);
	metricq_init(&p->metrics, PIPELINE_METRIC_BATCHES);
	tally_corr_init(&p->corr);
	rc = tally_pool_init(&p->pool, cfg->buffer_size, cfg->pool_buffers);
	if (rc == 0)
		rc = tally_queue_init(&p->queue, 2 * (size_t)cfg->pool_buffers + 64);
	if (rc == 0)
		p->others_max = tally_queue_capacity(&p->queue) - p->pool.capacity;
	if (rc == 0)
		rc = tally_writer_init(&p->writer, sink, 0);
	if (rc == 0)
		rc = tally_strtab_init(&p->strings);
	if (rc == 0)
		rc = tally_convert_init(&p->convert, &p->strings, src->api_name);
	return rc;
}

static int start_consumer(struct pipeline *p)
{
	/* The consumer takes no signals: they belong to the program's threads. */
	int rc = tally_own_thread_create(&p->thread, consumer_main, p, "tally-consumer", false);

	if (rc < 0)
		return rc;
	p->has_thread = true;
	return 0;
}

int tally_pipeline_start(const struct tally_pipeline_config *cfg, const struct tally_source *src,
			 const struct tally_sink *sink, const struct tally_buf *session)
{
	struct pipeline *p;
	int rc;

	if (atomic_load_explicit(&g_pipeline, memory_order_acquire))
		return -EBUSY;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = pipeline_init(p, cfg, src, sink);
	if (rc < 0)
		goto free_pipeline;
	if (cfg->stacks) { /* fresh tables: a fork child's file starts its ids again */
		tally_nativestack_forget_modules();
		if (tally_stacktab_reset() < 0)
			p->cfg.stacks = false;
	}
	p->start_time = p->slice_begin = src->now();
	p->start_mono = tally_monotonic_ns();
	atomic_init(&p->next_slice_mono, tally_monotonic_ns() + p->cfg.slice_ns);
	if (tally_writer_preamble(&p->writer) < 0)
		goto no_memory;
	emit_chunk(p, TALLY_CHUNK_SESSION, 0, session, 0);
	emit_clock(p);
	(void)tally_writer_flush(&p->writer);
	if (p->writer.stats.write_failures) {
		rc = -p->writer.stats.last_errno;
		goto free_pipeline;
	}
	atomic_store_explicit(&p->state, P_RUNNING, memory_order_relaxed);
	if (cfg->consumer_thread && (rc = start_consumer(p)) < 0)
		goto free_pipeline;
	/* Release: everything above is visible to any callback that finds the pointer. */
	atomic_store_explicit(&g_pipeline, p, memory_order_release);
	return 0;
no_memory:
	rc = -ENOMEM;
free_pipeline:
	pipeline_free(p);
	return rc;
}

void tally_pipeline_drain(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (!p)
		return;
	libc_pthread_mutex_lock(&p->consume_lock);
	if (atomic_load_explicit(&p->state, memory_order_relaxed) == P_RUNNING)
		consume_all(p, false);
	pthread_mutex_unlock(&p->consume_lock);
}

void tally_pipeline_tick(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (!p)
		return;
	libc_pthread_mutex_lock(&p->consume_lock);
	if (atomic_load_explicit(&p->state, memory_order_relaxed) == P_RUNNING) {
		consume_all(p, false);
		end_slice(p);
	}
	pthread_mutex_unlock(&p->consume_lock);
}

void tally_pipeline_flush_begin(enum tally_flush_path path, int signo)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	uint64_t zero = 0;

	if (!p)
		return;
	atomic_store_explicit(&p->flush_path, path, memory_order_relaxed);
	atomic_store_explicit(&p->flush_signal, signo, memory_order_relaxed);
	/* Release: path and signal are visible to whoever sees flush_start set.  Only the
	 * first exit path to get here is recorded. */
	if (!atomic_compare_exchange_strong_explicit(&p->flush_start, &zero, p->src.now(),
						     memory_order_release, memory_order_relaxed))
		return;
}

void tally_pipeline_signal(int sig, int sender)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	int unclaimed = 0;

	if (!p)
		return;
	atomic_fetch_add_explicit(&p->sig_count, 1, memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&p->sig_claimed, &unclaimed, 1,
						     memory_order_acq_rel, memory_order_relaxed))
		return;
	atomic_store_explicit(&p->sig_at_mono, tally_monotonic_ns(), memory_order_relaxed);
	atomic_store_explicit(&p->sig_sender, sender, memory_order_relaxed);
	atomic_store_explicit(&p->sig_first, sig, memory_order_release);
	atomic_store_explicit(&p->sig_unwritten, true, memory_order_relaxed);
	sem_post(&p->wake); /* async-signal-safe */
}

void tally_pipeline_window_edge(bool open)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	unsigned n;

	if (!p)
		return;
	libc_pthread_mutex_lock(&p->side_lock);
	n = p->nedges < sizeof(p->edges) / sizeof(p->edges[0]) ? p->nedges++ : p->nedges - 1;
	p->edges[n].t = p->src.now();
	p->edges[n].open = open;
	pthread_mutex_unlock(&p->side_lock);
}

void tally_pipeline_watchdog_fired(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (p)
		atomic_store_explicit(&p->watchdog_fired, true, memory_order_relaxed);
}

int tally_pipeline_stop(struct tally_stop_report *report)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	int expected = P_RUNNING;
	uint64_t t1;
	unsigned i;

	if (report)
		memset(report, 0, sizeof(*report));
	if (!p)
		return -ENOENT;
	if (!atomic_compare_exchange_strong_explicit(&p->state, &expected, P_STOPPING,
						     memory_order_acq_rel, memory_order_relaxed))
		return -EALREADY;
	if (p->has_thread) {
		sem_post(&p->wake);
		libc_pthread_join(p->thread, NULL);
		p->has_thread = false;
	}
	libc_pthread_mutex_lock(&p->consume_lock);
	t1 = tally_monotonic_ns();
	finish_locked(p);
	/* Release: late completions that see STOPPED find the consumer done with the pool. */
	atomic_store_explicit(&p->state, P_STOPPED, memory_order_release);
	if (report) {
		snapshot_locked(p, &report->final);
		report->final.final = true;
		report->drain_ns = tally_monotonic_ns() - t1;
		report->flush_ns = p->c[TALLY_C_FLUSH_END] - p->c[TALLY_C_FLUSH_START];
		report->records = p->c[TALLY_C_RECORDS_PARSED];
		report->flush_records = p->c[TALLY_C_FLUSH_RECORDS];
		report->bytes_written = p->writer.stats.bytes_written;
		report->complete = true;
		for (i = 0; i < tally_loss_counters_count; i++)
			report->complete &= report->final.v[tally_loss_counters[i]] == 0;
	}
	pthread_mutex_unlock(&p->consume_lock);
	return 0;
}

int tally_pipeline_checkpoint(enum tally_flush_path path)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	int rc = -ENOENT;

	if (!p)
		return rc;
	tally_pipeline_flush_begin(path, 0);
	libc_pthread_mutex_lock(&p->consume_lock);
	if (atomic_load_explicit(&p->state, memory_order_relaxed) == P_RUNNING) {
		checkpoint_locked(p);
		rc = p->writer.stats.write_failures ? -p->writer.stats.last_errno : 0;
	}
	pthread_mutex_unlock(&p->consume_lock);
	return rc;
}

void tally_pipeline_resume(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (!p)
		return;
	libc_pthread_mutex_lock(&p->consume_lock);
	resume_locked(p);
	pthread_mutex_unlock(&p->consume_lock);
}

bool tally_pipeline_running(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	return p && atomic_load_explicit(&p->state, memory_order_relaxed) == P_RUNNING;
}

void tally_pipeline_abandon(void)
{
	/* In a fork child the consumer thread does not exist and the lock may be held by a thread
	 * that is gone: leave the parent's pipeline (a copy here) untouched and forget it. */
	atomic_store_explicit(&g_pipeline, NULL, memory_order_release);
}

void tally_pipeline_reset(void)
{
	struct pipeline *p = atomic_exchange_explicit(&g_pipeline, NULL, memory_order_acq_rel);

	if (p && atomic_load_explicit(&p->state, memory_order_relaxed) == P_STOPPED)
		pipeline_free(p);
}
