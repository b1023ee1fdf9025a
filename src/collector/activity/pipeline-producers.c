/* SPDX-License-Identifier: MIT */
/*
 * The pipeline's producers (pipeline-int.h): CUPTI's request and completion callbacks, on any
 * application or CUPTI thread, and what other threads hand in (NVTX buffers, host records,
 * notes, counters, GPU metrics).  The callbacks touch the pool (short mutex), the queue
 * (lock-free) and relaxed atomic counters only.
 */
#include "clock.h"
#include "libc.h"
#include "pipeline-int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Here, on the lowest of the three files, so that the other two find them below them. */
_Atomic(struct pipeline *) g_pipeline; /* pipeline-int.h says what these two are */
_Atomic uint64_t g_progress;

void CUPTIAPI tally_pipeline_buffer_request(uint8_t **buffer, size_t *size, size_t *max_num_records)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	uint8_t *buf = NULL;

	*max_num_records = 0; /* as many as fit */
	if (p && atomic_load_explicit(&p->state, memory_order_relaxed) == P_RUNNING) {
		atomic_fetch_add_explicit(&p->requested, 1, memory_order_relaxed);
		buf = tally_pool_take(&p->pool, p->src.now());
		if (!buf)
			atomic_fetch_add_explicit(&p->refused, 1, memory_order_relaxed);
		else /* CUPTI writes records from the start: a buffer still zero there holds none */
			memset(buf, 0, TALLY_POOL_EMPTY_LEN);
	}
	/* A NULL buffer makes CUPTI drop (and count) records: safe from CUPTI API 27 on.  The
	 * collector refuses to run on older CUPTI without a pool large enough (inject.c). */
	*buffer = buf;
	*size = buf ? p->pool.size : 0;
}

void CUPTIAPI tally_pipeline_buffer_complete(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
					     size_t size, size_t valid_size)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	struct tally_queue_item item;

	(void)ctx;
	(void)stream_id;
	if (!p || !buffer)
		return;
	if (tally_pool_index(&p->pool, buffer) < 0 || valid_size > size || size > p->pool.size) {
		atomic_fetch_add_explicit(&p->foreign, 1, memory_order_relaxed);
		return; /* not ours: never parse or free what we did not hand out */
	}
	atomic_fetch_add_explicit(&p->delivered, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
	if (atomic_load_explicit(&p->state, memory_order_acquire) == P_STOPPED) {
		atomic_fetch_add_explicit(&p->late, 1, memory_order_relaxed);
		tally_pool_give(&p->pool, buffer, 0);
		return;
	}
	item.buf = buffer;
	item.valid = valid_size;
	item.delivered_at = p->src.now();
	item.origin = ORIGIN_CUPTI;
	/* Room is kept for every buffer of the pool (push_other), so this never fails; if it
	 * ever did, the loss is counted as what it is. */
	if (!tally_queue_push(&p->queue, &item)) {
		atomic_fetch_add_explicit(&p->unqueued, 1, memory_order_relaxed);
		tally_pool_give(&p->pool, buffer, item.delivered_at);
		return;
	}
	sem_post(&p->wake); /* never blocks; async-signal-safe */
}

/*
 * NVTX's buffers and the host's records may fill the queue only up to the room kept for CUPTI:
 * the pool's every buffer, which CUPTI may hand back at once.  When they come faster than the
 * consumer writes, they are turned away and counted as what they are (NVTX events dropped in
 * process, samples or blocking calls dropped), and CUPTI's buffers still find their slots.
 */
static bool push_other(struct pipeline *p, const struct tally_queue_item *item)
{
	if (atomic_fetch_add_explicit(&p->others_queued, 1, memory_order_relaxed) < p->others_max &&
	    tally_queue_push(&p->queue, item))
		return true;
	atomic_fetch_sub_explicit(&p->others_queued, 1, memory_order_relaxed);
	return false;
}

static void side_put(unsigned type, const void *bytes, size_t len)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (!p)
		return;
	libc_pthread_mutex_lock(&p->side_lock);
	tally_buf_put_u8(&p->side, (uint8_t)type);
	tally_buf_put_varint(&p->side, len);
	tally_buf_put(&p->side, bytes, len);
	pthread_mutex_unlock(&p->side_lock);
}

void tally_pipeline_note(unsigned severity, const char *code, const char *text)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	struct tally_buf b = {0};

	if (!p)
		return;
	tally_kv_uint(&b, TALLY_NK_TIME, p->src.now());
	tally_kv_uint(&b, TALLY_NK_SEVERITY, severity);
	tally_kv_str(&b, TALLY_NK_CODE, code);
	tally_kv_str(&b, TALLY_NK_TEXT, text);
	if (!b.failed)
		side_put(TALLY_CHUNK_NOTE, b.data, b.len);
	tally_buf_fini(&b);
}

int tally_pipeline_nvtx_buffer(uint8_t *buf, size_t used)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	struct tally_queue_item item = {buf, used, 0, ORIGIN_NVTX};

	if (!p || atomic_load_explicit(&p->state, memory_order_acquire) != P_RUNNING)
		return -ENOENT;
	item.delivered_at = p->src.now();
	if (!push_other(p, &item)) {
		/* Count the events it held: each entry says its own size. */
		const uint8_t *q = buf;
		uint64_t n = 0;

		while (q + sizeof(struct tally_nvtx_event) <= buf + used &&
		       ((const struct tally_nvtx_event *)(const void *)q)->size) {
			q += ((const struct tally_nvtx_event *)(const void *)q)->size;
			n++;
		}
		tally_pipeline_nvtx_dropped(n);
		return -ENOSPC;
	}
	sem_post(&p->wake);
	return 0;
}

void tally_pipeline_nvtx_dropped(uint64_t events)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (p)
		atomic_fetch_add_explicit(&p->dropped_nvtx, events, memory_order_relaxed);
}

/* Host records a full queue (or no pipeline) turned away: counted by what they were. */
static void host_dropped(struct pipeline *p, const struct tally_record *r, size_t n)
{
	uint64_t samples = 0, calls = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		samples += r[i].kind == TALLY_KIND_CPU_SAMPLE;
		calls += r[i].kind == TALLY_KIND_OSRT;
	}
	if (!p)
		return;
	atomic_fetch_add_explicit(&p->host[TALLY_C_SAMPLES_DROPPED - HOST_FIRST], samples,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&p->host[TALLY_C_OSRT_DROPPED - HOST_FIRST], calls,
				  memory_order_relaxed);
}

int tally_pipeline_host_records(struct tally_record *recs, size_t n)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	struct tally_queue_item item = {(uint8_t *)recs, n * sizeof(*recs), 0, ORIGIN_HOST};
	int rc = 0;

	if (!n) {
		free(recs);
		return 0;
	}
	if (!p || atomic_load_explicit(&p->state, memory_order_acquire) != P_RUNNING)
		rc = -ENOENT;
	else if (item.delivered_at = p->src.now(), !push_other(p, &item))
		rc = -ENOSPC;
	if (rc < 0) {
		host_dropped(p, recs, n);
		free(recs);
		return rc;
	}
	sem_post(&p->wake);
	return 0;
}

void tally_pipeline_count(unsigned counter, uint64_t n)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (p && counter >= HOST_FIRST && counter < HOST_FIRST + HOST_COUNTERS)
		atomic_fetch_add_explicit(&p->host[counter - HOST_FIRST], n, memory_order_relaxed);
	else if (p && counter >= HOST2_FIRST && counter < HOST2_FIRST + HOST2_COUNTERS)
		atomic_fetch_add_explicit(&p->host2[counter - HOST2_FIRST], n,
					  memory_order_relaxed);
}

void tally_pipeline_fd_event(bool reopened)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (p)
		atomic_fetch_add_explicit(reopened ? &p->fds_reopened : &p->fd_lost_writes, 1,
					  memory_order_relaxed);
}

void tally_pipeline_threads(const struct tally_buf *payload)
{
	side_put(TALLY_CHUNK_THREADS, payload->data, payload->len);
}

uint64_t tally_pipeline_now(void)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	return p ? p->src.now() : 0;
}

int tally_pipeline_metric_batch(struct pm_batch *b)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);
	int rc;

	if (!p || atomic_load_explicit(&p->state, memory_order_acquire) != P_RUNNING)
		return -ENOENT;
	atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
	rc = metricq_put(&p->metrics, b);
	if (rc == 0)
		sem_post(&p->wake);
	return rc;
}

void tally_pipeline_metric_count(unsigned counter, uint64_t n)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed); /* a sample decoded, say */
	if (p)
		metricq_count(&p->metrics, counter, n);
}

void tally_pipeline_metric_gap(uint64_t t0, uint64_t t1)
{
	struct pipeline *p = atomic_load_explicit(&g_pipeline, memory_order_acquire);

	if (p)
		metricq_gap(&p->metrics, t0, t1);
}

void tally_pipeline_gpu_metrics(const struct tally_buf *kv)
{
	side_put(TALLY_CHUNK_GPU_METRICS, kv->data, kv->len);
}

void tally_pipeline_processes(const struct tally_buf *payload)
{
	side_put(TALLY_CHUNK_PROCESSES, payload->data, payload->len);
}
