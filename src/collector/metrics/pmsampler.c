/* SPDX-License-Identifier: MIT */
/*
 * The GPU-metrics sampler thread; see pmsampler.h.  It reads top-down:
 *
 *   pm_sampler_start   the metric list, the decode period and buffer sizes, the thread
 *   sampler_main       wait for CUDA, settle every device asked for, then every decode period
 *                      follow the window and decode; at the stop, the last decode and release
 *   pm_sampler_stop    the session's close: ask, and wait (bounded)
 */
#include "pmsampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cupti-pm.h"
#include "driver.h"
#include "libc.h"
#include "ownthread.h"
#include "pipeline.h"
#include "pmdevice.h"

#define DEVICES_MAX	    64
#define DECODE_MS_DEFAULT   100
#define DECODE_MS_MIN	    5
#define SAMPLES_PER_DECODE  250		  /* at most, by shortening the period at high rates */
#define HW_BUFFER_PER_10KHZ (64ull << 20) /* 64 MiB at 10 kHz held through seconds of decoding */
#define HW_BUFFER_MAX	    (512ull << 20)
#define IMAGE_SAMPLES_MAX   20000
#define STOP_DECODE_NS	    1000000000ull /* the close's last decode, all devices: 1 s at most */

struct pm_sampler {
	struct pm_sampler_config cfg;
	struct pm_metric metrics[PM_METRICS_MAX];
	char names[PM_METRICS_MAX * (PM_METRIC_NAME_MAX + 1)];
	struct pm_request rq;
	unsigned decode_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, done;       /* under lock */
	_Atomic bool stopping; /* stop, for the loop over devices to look at without the lock */
	struct pm_device *devs;
	unsigned ndevs;
	/* Lock files held, for a fork child to close (the sampler thread writes them; only a
	 * fork child, where that thread is not, reads them) */
	struct tally_kept locks[DEVICES_MAX];
	struct pm_cost cost;
	bool saw_cuda;
	/* CUDA contexts going away (pm_sampler_context_ending), by device bit: */
	uint64_t ending, ended;		/* under lock: asked for; done (sampling over) */
	uint64_t noted;			/* under lock: said late in a note (once each) */
	_Atomic uint64_t contexts_gone; /* gone before they were done: no CUPTI call for them */
	_Atomic uint64_t gone_at;	/* CUPTI ns, when the first of those went */
};

/* ---- the driver, looked up (libtally.so links no CUDA) ------------------------------------ */

typedef int (*count_fn)(int *);
typedef int (*get_fn)(int *, int);
typedef int (*uuid_fn)(CUuuid *, int);

/* The devices CUDA has, once the program's cuInit is done; false until then. */
static bool device_count(int *n)
{
	count_fn count = (count_fn)tally_driver_sym("cuDeviceGetCount");

	*n = 0;
	return count && count(n) == 0;
}

static int device_handle(unsigned ordinal)
{
	get_fn get = (get_fn)tally_driver_sym("cuDeviceGet");
	int dev = (int)ordinal;

	if (get)
		(void)get(&dev, (int)ordinal);
	return dev;
}

static bool device_uuid(int dev, uint8_t uuid[16])
{
	uuid_fn fn = (uuid_fn)tally_driver_sym("cuDeviceGetUuid_v2");
	CUuuid u;

	if (!fn)
		fn = (uuid_fn)tally_driver_sym("cuDeviceGetUuid");
	if (!fn || fn(&u, dev) != 0)
		return false;
	memcpy(uuid, u.bytes, 16);
	return true;
}

/* ---- waiting ------------------------------------------------------------------------------ */

/* Wait ms, or until the stop is asked for (or, with for_ending, the end of a device whose
 * context goes); true when the stop is. */
static bool wait_stop(struct pm_sampler *s, unsigned ms, bool for_ending)
{
	struct timespec until = tally_monotonic_after((uint64_t)ms * 1000000);
	bool stop;

	libc_pthread_mutex_lock(&s->lock);
	while (!s->stop && !(for_ending && (s->ending & ~s->ended)) &&
	       libc_pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
		;
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

/* The program's cuInit may still be running (we were started from inside it), or may come
 * much later (a session NVTX started): poll, 10 ms apart at first. */
static bool wait_for_cuda(struct pm_sampler *s, int *n)
{
	unsigned tries = 0;

	while (!device_count(n))
		if (wait_stop(s, tries++ < 100 ? 10 : 100, false))
			return false;
	s->saw_cuda = true;
	return true;
}

/* ---- devices ------------------------------------------------------------------------------ */

static CUptiResult profiler_init(void)
{
	CUpti_Profiler_Initialize_Params p = {.structSize =
						  CUpti_Profiler_Initialize_Params_STRUCT_SIZE};

	return cupti_pm.ProfilerInitialize(&p);
}

/* Settle every device asked for that CUDA has, and say what became of each. */
static void setup_devices(struct pm_sampler *s, int count)
{
	char why[256] = "cuptiProfilerInitialize";
	bool have_pm = cupti_pm_load(why, sizeof(why));
	CUptiResult init = have_pm ? profiler_init() : CUPTI_ERROR_NOT_SUPPORTED;
	unsigned i;
	if (!(s->devs = calloc((size_t)count, sizeof(*s->devs))))
		return;
	for (i = 0; i < (unsigned)count && i < DEVICES_MAX; i++) {
		struct pm_device *d = &s->devs[s->ndevs];
		int dev;

		if (s->cfg.device_mask && !(s->cfg.device_mask >> i & 1))
			continue;
		s->ndevs++;
		d->ordinal = i;
		d->lock = TALLY_KEPT_NONE;
		dev = device_handle(i);
		d->has_uuid = device_uuid(dev, d->uuid);
		if (init != CUPTI_SUCCESS)
			pm_device_settle(d, init, why);
		else if (atomic_load_explicit(&s->contexts_gone, memory_order_acquire) >> i & 1)
			pm_device_settle(
			    d, CUPTI_ERROR_INVALID_CONTEXT,
			    "the program's CUDA context went before sampling was set up");
		else
			pm_device_setup(d, dev, &s->rq, &s->cost);
		s->locks[i] = d->lock;
		pm_device_report(d);
	}
}

/* Devices asked for that CUDA does not have: said once. */
static void note_missing(const struct pm_sampler *s, int count)
{
	char text[256];
	unsigned i;

	for (i = (unsigned)count; i < DEVICES_MAX; i++)
		if (s->cfg.device_mask >> i & 1) {
			snprintf(text, sizeof(text),
				 "GPU metrics asked for device %u, but CUDA has %d device(s) here",
				 i, count);
			tally_pipeline_note(TALLY_NOTE_WARNING, "gpu-metrics-no-device", text);
		}
}

/* Each of the two images (one decoded into while the other is evaluated) holds two decode
 * periods' samples.  A decode that fills the image loses what the hardware held beyond it (on
 * the H200, images half a period's size left breaks of tens of ms at every other decode), so a
 * step late by up to a period still fits; a reset costs in proportion to the image's size (about
 * 12 us a sample), so it is no larger.  Images made after an overflow use the period then. */
static void size_images(struct pm_sampler *s)
{
	uint64_t per_decode = (uint64_t)s->cfg.hz * s->decode_ms / 1000 + 1;
	uint64_t image = 2 * per_decode + 64;

	s->rq.image_samples = (uint32_t)(image < IMAGE_SAMPLES_MAX ? image : IMAGE_SAMPLES_MAX);
}

static bool window_open(const struct pm_sampler *s)
{
	return !s->cfg.window_open || s->cfg.window_open(s->cfg.window_arg);
}

/* Devices whose CUDA context is going away: their sampling ends now, while it is still there
 * (the thread destroying it waits for that, bounded: pm_sampler_context_ending). */
static void end_devices(struct pm_sampler *s)
{
	uint64_t deadline = tally_monotonic_ns() + STOP_DECODE_NS, want;
	unsigned i;

	libc_pthread_mutex_lock(&s->lock);
	want = s->ending & ~s->ended;
	pthread_mutex_unlock(&s->lock);
	if (!want)
		return;
	for (i = 0; i < s->ndevs; i++) {
		struct pm_device *d = &s->devs[i];

		if (d->ordinal >= 64 || !(want >> d->ordinal & 1))
			continue;
		pm_device_end(d, &s->rq, &s->cost, deadline,
			      atomic_load_explicit(&s->gone_at, memory_order_acquire));
		s->locks[d->ordinal] = TALLY_KEPT_NONE;
	}
	libc_pthread_mutex_lock(&s->lock);
	s->ended |= want;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* One decode period's work: start or stop with the window, and decode.  True when a device
 * still has samples in the hardware (the period's time ran out first). */
static bool step(struct pm_sampler *s)
{
	/* a backlog takes at most one period per device: the stop is looked at in between */
	uint64_t deadline = tally_monotonic_ns() + (uint64_t)s->decode_ms * 1000000;
	bool open = window_open(s), backlog = false;
	unsigned i;

	end_devices(s);
	for (i = 0; i < s->ndevs && !atomic_load_explicit(&s->stopping, memory_order_relaxed);
	     i++) {
		struct pm_device *d = &s->devs[i];

		if (d->state != TALLY_GM_SAMPLED || d->ended)
			continue;
		pm_device_keep_lock(d, &s->rq);
		s->locks[d->ordinal] = d->lock;
		if (open && !d->running)
			pm_device_start(d, &s->rq);
		else if (!open && d->running)
			pm_device_stop(d, &s->rq, &s->cost, deadline);
		if (d->running)
			backlog |= !pm_device_decode(d, &s->rq, &s->cost, deadline);
		if (d->behind && s->decode_ms > DECODE_MS_MIN) {
			/* the hardware buffer, or the image, filled between two decodes: decode
			 * twice as often */
			s->decode_ms =
			    s->decode_ms / 2 > DECODE_MS_MIN ? s->decode_ms / 2 : DECODE_MS_MIN;
			size_images(s);
			s->cost.faster++;
		}
		d->behind = false;
		if (d->state != TALLY_GM_SAMPLED) /* given up: its lock is released */
			s->locks[d->ordinal] = TALLY_KEPT_NONE;
	}
	return backlog;
}

/* A step every decode period, counted from the start of the last one: the time a step takes
 * (decoding and evaluating at 10 kHz took most of a period on the H200) is not added to the
 * wait, or the thread decodes fewer samples a second than the hardware makes and falls behind;
 * after a step that left a backlog, the next comes at once. */
static void sample_until_stopped(struct pm_sampler *s)
{
	unsigned wait;

	do {
		uint64_t t0 = tally_monotonic_ns();
		bool backlog = step(s);
		uint64_t spent_ms = (tally_monotonic_ns() - t0) / 1000000;

		wait = backlog || spent_ms >= s->decode_ms ? 0 : s->decode_ms - (unsigned)spent_ms;
	} while (!wait_stop(s, wait, true));
}

static void finish_devices(struct pm_sampler *s)
{
	uint64_t deadline = tally_monotonic_ns() + STOP_DECODE_NS;
	unsigned i;

	for (i = 0; i < s->ndevs; i++) {
		pm_device_end(&s->devs[i], &s->rq, &s->cost, deadline,
			      atomic_load_explicit(&s->gone_at, memory_order_acquire));
		s->locks[s->devs[i].ordinal] = TALLY_KEPT_NONE;
	}
}

/* What sampling cost this process, measured as it went (docs/collector.md). */
static void note_cost(const struct pm_sampler *s, uint64_t wall_ns)
{
	const struct pm_cost *c = &s->cost;
	uint64_t cpu = tally_thread_cpu_ns(), kept = 0;
	unsigned i, sampled = 0;
	char text[768];

	for (i = 0; i < s->ndevs; i++) {
		kept += s->devs[i].kept;
		sampled += s->devs[i].set_up;
	}
	if (!sampled)
		return;
	snprintf(text, sizeof(text),
		 "GPU metrics: %u device(s) sampled, %llu samples kept; decode %.1f ms in %llu "
		 "calls (%llu stopped at a full image), evaluate %.1f ms (%.2f us/sample), image "
		 "reset %.1f ms, setup %.1f ms; "
		 "the sampler thread used %.1f ms of CPU in %.3f s (%.2f%% of a core), the "
		 "evaluating thread %.1f ms (%.2f%%); decode period %u ms (halved %u times after "
		 "overflows or full images)",
		 sampled, (unsigned long long)kept, (double)c->decode_ns / 1e6,
		 (unsigned long long)c->decodes, (unsigned long long)c->full_stops,
		 (double)c->evaluate_ns / 1e6,
		 c->evaluated ? (double)c->evaluate_ns / 1e3 / (double)c->evaluated : 0.0,
		 (double)c->reset_ns / 1e6, (double)c->setup_ns / 1e6, (double)cpu / 1e6,
		 (double)wall_ns / 1e9, wall_ns ? 100.0 * (double)cpu / (double)wall_ns : 0.0,
		 (double)c->eval_cpu_ns / 1e6,
		 wall_ns ? 100.0 * (double)c->eval_cpu_ns / (double)wall_ns : 0.0, s->decode_ms,
		 s->cost.faster);
	tally_pipeline_note(TALLY_NOTE_INFO, "gpu-metrics-cost", text);
}

static void *sampler_main(void *arg)
{
	struct pm_sampler *s = arg;
	uint64_t t0 = tally_monotonic_ns();
	int count = 0;

	if (wait_for_cuda(s, &count)) {
		setup_devices(s, count);
		if (s->cfg.pm_loaded)
			s->cfg.pm_loaded(s->cfg.window_arg);
		note_missing(s, count);
		s->rq.eval = pm_eval_start();
		/* sampling starts at once: a program may be shorter than a decode period */
		sample_until_stopped(s);
		finish_devices(s);
		pm_eval_stop(s->rq.eval, &s->cost);
		s->rq.eval = NULL;
		note_cost(s, tally_monotonic_ns() - t0);
	} else {
		tally_pipeline_note(TALLY_NOTE_INFO, "gpu-metrics-no-cuda",
				    "GPU metrics: the program did not initialise CUDA while it was "
				    "recorded; no device was sampled");
	}
	libc_pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- the session's calls ------------------------------------------------------------------ */

/* The decode period, the images and the hardware buffer, by the rate. */
static void size_for_rate(struct pm_sampler *s)
{
	const struct pm_sampler_config *c = &s->cfg;
	uint64_t buffer;

	s->decode_ms = c->decode_ms;
	if (!s->decode_ms) {
		s->decode_ms = DECODE_MS_DEFAULT;
		if ((uint64_t)c->hz * s->decode_ms / 1000 > SAMPLES_PER_DECODE)
			s->decode_ms = (unsigned)(SAMPLES_PER_DECODE * 1000ull / c->hz);
		if (s->decode_ms < DECODE_MS_MIN)
			s->decode_ms = DECODE_MS_MIN;
	}
	size_images(s);
	s->rq.interval_ns = 1000000000ull / c->hz;
	buffer = c->hw_buffer;
	if (!buffer) {
		buffer = HW_BUFFER_PER_10KHZ * ((c->hz + 9999) / 10000);
		buffer = buffer > HW_BUFFER_MAX ? HW_BUFFER_MAX : buffer;
	}
	s->rq.hw_buffer = buffer;
}

/* One of tally's own threads: it takes no signals (they are the program's), and the host
 * sampler and the blocking-call interposers leave it out. */
static int start_thread(struct pm_sampler *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	return tally_own_thread_create(&s->thread, sampler_main, s, "tally-metrics", false);
}

struct pm_sampler *pm_sampler_start(const struct pm_sampler_config *cfg)
{
	struct pm_sampler *s = calloc(1, sizeof(*s));
	char why[256], text[320];
	int n, i;

	if (!s) {
		tally_pipeline_note(TALLY_NOTE_WARNING, "gpu-metrics-stopped",
				    "GPU metrics: no memory for the sampler");
		return NULL;
	}
	s->cfg = *cfg;
	n = pm_metric_list_parse(cfg->set, s->metrics, PM_METRICS_MAX, s->names, sizeof(s->names),
				 why, sizeof(why));
	if (n < 0 || !cfg->hz) {
		snprintf(text, sizeof(text), "GPU metrics not sampled: %s",
			 n < 0 ? why : "a frequency of 0 Hz");
		tally_pipeline_note(TALLY_NOTE_WARNING, "gpu-metrics-stopped", text);
		free(s);
		return NULL;
	}
	for (i = 0; i < DEVICES_MAX; i++)
		s->locks[i] = TALLY_KEPT_NONE;
	s->rq.metrics = s->metrics;
	s->rq.nmetrics = (size_t)n;
	s->rq.lock_dir = s->cfg.lock_dir[0] ? s->cfg.lock_dir : NULL;
	s->rq.contexts_gone = &s->contexts_gone;
	s->rq.self = s->cfg.self;
	size_for_rate(s);
	if (start_thread(s) < 0) {
		tally_pipeline_note(TALLY_NOTE_WARNING, "gpu-metrics-stopped",
				    "GPU metrics not sampled: no thread could be started");
		free(s);
		return NULL;
	}
	return s;
}

static bool wait_done(struct pm_sampler *s, uint64_t timeout_ns)
{
	struct timespec until = tally_monotonic_after(timeout_ns);
	bool done;

	atomic_store_explicit(&s->stopping, true, memory_order_relaxed);
	libc_pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	while (!s->done && libc_pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
		;
	done = s->done;
	pthread_mutex_unlock(&s->lock);
	return done;
}

bool pm_sampler_stop(struct pm_sampler *s, uint64_t timeout_ns)
{
	if (!s)
		return true;
	if (!wait_done(s, timeout_ns)) {
		tally_pipeline_note(
		    TALLY_NOTE_ERROR, "gpu-metrics-stuck",
		    "the GPU-metrics sampler did not stop in time (stuck in a CUPTI "
		    "call): its last samples are not in the trace");
		tally_pipeline_metric_count(TALLY_C_METRIC_FAILURES, 1);
		/* left behind: it ends (or not) on its own, and nothing will join it */
		pthread_detach(s->thread);
		return false;
	}
	libc_pthread_join(s->thread, NULL);
	free(s->devs);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	return true;
}

void pm_sampler_context_ending(struct pm_sampler *s, uint64_t devices, uint64_t gone_at,
			       uint64_t timeout_ns)
{
	struct timespec until = tally_monotonic_after(timeout_ns);
	uint64_t late;
	char text[256], which[32];

	if (!s)
		return;
	libc_pthread_mutex_lock(&s->lock);
	s->ending |= devices;
	pthread_cond_broadcast(&s->cond);
	while (!s->done && (s->ended & devices) != devices &&
	       libc_pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
		;
	late = s->done ? 0 : devices & ~s->ended;
	if (late) { /* the sampler is stuck, or far behind: it must not touch these any more */
		uint64_t none = 0;

		atomic_compare_exchange_strong_explicit(&s->gone_at, &none, gone_at,
							memory_order_release, memory_order_relaxed);
		atomic_fetch_or_explicit(&s->contexts_gone, late, memory_order_release);
	}
	/* said once: the exit paths ask for every device, the contexts' ends then for each */
	devices = late & ~s->noted;
	s->noted |= late;
	pthread_mutex_unlock(&s->lock);
	if (!devices)
		return;
	snprintf(which, sizeof(which), devices == ~0ull ? "every device" : "devices %#llx",
		 (unsigned long long)devices);
	snprintf(
	    text, sizeof(text),
	    "GPU metrics: the sampler had not stopped when the program exited or the CUDA "
	    "context went (%s); their samples from there on are lost, and the stretch is a gap",
	    which);
	tally_pipeline_note(TALLY_NOTE_WARNING, "gpu-metrics-context-gone", text);
}

void pm_sampler_forget(struct pm_sampler *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < DEVICES_MAX; i++)
		pm_lock_release(&s->locks[i]);
}
