/* SPDX-License-Identifier: MIT */
/*
 * One GPU's PM sampling; see pmdevice.h.  What the code relies on was seen on an H200 with
 * CUDA 13.0 (tests/gpu/pm-probe.cu):
 * - sample timestamps are on CUPTI's clock, the clock of every other record;
 * - the first sample after a start spans from an arbitrary earlier moment: it is skipped;
 * - a full hardware buffer (KEEP_OLDEST) makes every later decode fail with
 *   CUPTI_ERROR_OUT_OF_MEMORY and the overflow flag: sampling must be set up again;
 * - a second process asking for a device that one samples gets CUPTI_ERROR_HARDWARE_BUSY from
 *   the counter availability query.
 */
#include "pmdevice.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "cupti-api.h"
#include "gpumetrics.h"
#include "metricbatch.h"
#include "pipeline.h"
#include "remedies.h"

#define MAX_DECODE_ROUNDS 64 /* per decode call: a full image is decoded again, this often */
#define OVERFLOWS_MAX	  8  /* overflows in a row, with no sample kept between: give up */

static uint64_t cupti_clock(void)
{
	uint64_t t = 0;

	(void)cupti.GetTimestamp(&t);
	return t;
}

static void pm_device_release(struct pm_device *d, const struct pm_request *rq);

/* ---- settling the device's state ---------------------------------------------------------- */

/* What a CUPTI error says of the device: refused (privileges), busy (another client), or
 * unsupported; anything else is a failure (state stopped, counted as loss). */
static unsigned state_of(CUptiResult r)
{
	switch (r) {
	case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
		return TALLY_GM_REFUSED;
	case CUPTI_ERROR_HARDWARE_BUSY:
	case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		return TALLY_GM_BUSY;
	case CUPTI_ERROR_NOT_SUPPORTED:
	case CUPTI_ERROR_NOT_COMPATIBLE:
	case CUPTI_ERROR_API_NOT_IMPLEMENTED:
	case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
	case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
	case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
	case CUPTI_ERROR_INVALID_CHIP_NAME:
		return TALLY_GM_UNSUPPORTED;
	default:
		return TALLY_GM_STOPPED;
	}
}

static void settle(struct pm_device *d, unsigned state, CUptiResult r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void settle(struct pm_device *d, unsigned state, CUptiResult r, const char *fmt, ...)
{
	va_list ap;

	d->state = state;
	d->result = (unsigned)r;
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	if (state == TALLY_GM_STOPPED)
		tally_pipeline_metric_count(TALLY_C_METRIC_FAILURES, 1);
}

/* A CUPTI call failed: the state its result means, and why in words. */
static void failed(struct pm_device *d, const char *call, CUptiResult r)
{
	static const char *const meaning[TALLY_GM_STATE_MAX] = {
	    [TALLY_GM_REFUSED] = "the driver keeps the GPU's performance counters for "
				 "administrators",
	    [TALLY_GM_BUSY] = "another tool holds the GPU's performance counters (Nsight "
			      "Systems or Compute, DCGM's profiling, another program's CUPTI)",
	    [TALLY_GM_UNSUPPORTED] = "CUPTI cannot PM-sample this device",
	    [TALLY_GM_STOPPED] = "sampling could not be set up",
	};
	unsigned state = state_of(r);
	char rs[128];

	settle(d, state, r, "%s (%s: %s)", meaning[state], call,
	       cupti_pm_result(r, rs, sizeof(rs)));
}

void pm_device_settle(struct pm_device *d, CUptiResult r, const char *call)
{
	d->lock = TALLY_KEPT_NONE;
	failed(d, call, r);
}

static const char *support_name(CUpti_Profiler_Support_Level l)
{
	return l == CUPTI_PROFILER_CONFIGURATION_DISABLED ? "disabled" : "unsupported";
}

/* CUPTI's word on this device and configuration for PM sampling. */
static bool supported(struct pm_device *d, int cu_dev)
{
	CUpti_Profiler_DeviceSupported_Params p = {
	    .structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
	static const struct {
		size_t at;
		const char *what;
	} parts[] = {
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, architecture),
	     "the GPU's architecture (PM sampling needs Turing or newer)"},
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, sli), "SLI"},
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, vGpu), "vGPU"},
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, confidentialCompute),
	     "confidential computing"},
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, cmp), "a mining processor (CMP)"},
	    {offsetof(CUpti_Profiler_DeviceSupported_Params, wsl), "WSL"},
	};
	CUptiResult r;
	size_t i;

	p.cuDevice = (CUdevice)cu_dev;
	p.api = CUPTI_PROFILER_PM_SAMPLING;
	if ((r = cupti_pm.DeviceSupported(&p)) != CUPTI_SUCCESS) {
		failed(d, "cuptiProfilerDeviceSupported", r);
		return false;
	}
	if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
		return true;
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		CUpti_Profiler_Support_Level l;

		memcpy(&l, (char *)&p + parts[i].at, sizeof(l));
		if (l != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
			settle(d, TALLY_GM_UNSUPPORTED, CUPTI_ERROR_NOT_SUPPORTED,
			       "CUPTI cannot PM-sample this device: %s %s", parts[i].what,
			       support_name(l));
			return false;
		}
	}
	settle(d, TALLY_GM_UNSUPPORTED, CUPTI_ERROR_NOT_SUPPORTED,
	       "CUPTI cannot PM-sample this device (no reason given)");
	return false;
}

static void chip_name(struct pm_device *d)
{
	CUpti_Device_GetChipName_Params p = {.structSize =
						 CUpti_Device_GetChipName_Params_STRUCT_SIZE};

	p.deviceIndex = d->ordinal;
	if (cupti_pm.GetChipName(&p) == CUPTI_SUCCESS && p.pChipName)
		snprintf(d->chip, sizeof(d->chip), "%s", p.pChipName);
}

/* One sampler per device: the first process to claim the lock samples it. */
static bool claim(struct pm_device *d, const struct pm_request *rq)
{
	int rc;

	if (!rq->lock_dir)
		return true;
	pm_lock_path(d->lock_path, sizeof(d->lock_path), rq->lock_dir, d->has_uuid ? d->uuid : NULL,
		     rq->self.host, d->ordinal);
	rc = pm_lock_claim(d->lock_path, &rq->self, &d->holder, &d->lock);
	if (rc >= 0)
		return true;
	if (rc != -EBUSY) { /* no lock to be had here: CUPTI's "busy" decides */
		d->lock_path[0] = '\0';
		return true;
	}
	settle(d, TALLY_GM_ELSEWHERE, CUPTI_SUCCESS,
	       "another process of the job claimed %s first and samples this device", d->lock_path);
	return false;
}

/*
 * The program may close the lock file's descriptor (close_range, a daemon's loop), and with it
 * the kernel drops the lock: another process of the job could claim the device and sample it
 * too.  Looked at every decode period: the device is claimed again, or the note says so.
 */
void pm_device_keep_lock(struct pm_device *d, const struct pm_request *rq)
{
	char text[4400];
	int rc;

	if (d->lock.fd < 0 || pm_lock_held(&d->lock))
		return;
	rc = pm_lock_claim(d->lock_path, &rq->self, &d->holder, &d->lock);
	tally_pipeline_fd_event(rc == 0);
	snprintf(text, sizeof(text),
		 rc == 0 ? "the program closed tally's descriptor of %s, and with it the lock on "
			   "device %u; tally claimed the device again"
			 : "the program closed tally's descriptor of %s, and with it the lock on "
			   "device %u, which tally could not claim again: another process of the "
			   "job may sample the device too",
		 d->lock_path, d->ordinal);
	tally_pipeline_note(rc == 0 ? TALLY_NOTE_WARNING : TALLY_NOTE_ERROR, "gpu-metrics-lock",
			    text);
}

/* The counter availability image, which also says whether the counters are ours to read. */
static bool availability(struct pm_device *d)
{
	CUpti_PmSampling_GetCounterAvailability_Params p = {
	    .structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
	CUptiResult r;

	p.deviceIndex = d->ordinal;
	if ((r = cupti_pm.GetCounterAvailability(&p)) != CUPTI_SUCCESS ||
	    !p.counterAvailabilityImageSize)
		goto fail;
	if (!(d->avail = malloc(p.counterAvailabilityImageSize))) {
		settle(d, TALLY_GM_STOPPED, CUPTI_ERROR_OUT_OF_MEMORY, "no memory");
		return false;
	}
	d->avail_size = p.counterAvailabilityImageSize;
	p.pCounterAvailabilityImage = d->avail;
	if ((r = cupti_pm.GetCounterAvailability(&p)) == CUPTI_SUCCESS)
		return true;
fail:
	failed(d, "cuptiPmSamplingGetCounterAvailability", r);
	return false;
}

/* ---- the metric set ----------------------------------------------------------------------- */

static CUpti_Profiler_Host_Object *host_new(const struct pm_device *d, CUptiResult *r)
{
	CUpti_Profiler_Host_Initialize_Params p = {
	    .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};

	p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
	p.pChipName = d->chip;
	p.pCounterAvailabilityImage = d->avail;
	*r = cupti_pm.HostInitialize(&p);
	return *r == CUPTI_SUCCESS ? p.pHostObject : NULL;
}

static void host_free(CUpti_Profiler_Host_Object *h)
{
	CUpti_Profiler_Host_Deinitialize_Params p = {
	    .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};

	if (!h)
		return;
	p.pHostObject = h;
	(void)cupti_pm.HostDeinitialize(&p);
}

static CUptiResult add_metrics(CUpti_Profiler_Host_Object *h, const char **names, size_t n)
{
	CUpti_Profiler_Host_ConfigAddMetrics_Params p = {
	    .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};

	p.pHostObject = h;
	p.ppMetricNames = names;
	p.numMetrics = n;
	return cupti_pm.ConfigAddMetrics(&p);
}

/* The config image of h's metrics into *img (malloc'd), and the passes it needs. */
static CUptiResult config_image(CUpti_Profiler_Host_Object *h, uint8_t **img, size_t *size,
				size_t *passes)
{
	CUpti_Profiler_Host_GetConfigImageSize_Params sp = {
	    .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
	CUpti_Profiler_Host_GetConfigImage_Params ip = {
	    .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
	CUpti_Profiler_Host_GetNumOfPasses_Params np = {
	    .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
	CUptiResult r;

	sp.pHostObject = h;
	if ((r = cupti_pm.GetConfigImageSize(&sp)) != CUPTI_SUCCESS)
		return r;
	if (!sp.configImageSize || !(*img = malloc(sp.configImageSize)))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	ip.pHostObject = h;
	ip.configImageSize = sp.configImageSize;
	ip.pConfigImage = *img;
	np.configImageSize = sp.configImageSize;
	np.pConfigImage = *img;
	*size = sp.configImageSize;
	if ((r = cupti_pm.GetConfigImage(&ip)) == CUPTI_SUCCESS)
		r = cupti_pm.GetNumOfPasses(&np);
	*passes = np.numOfPasses;
	if (r != CUPTI_SUCCESS) {
		free(*img);
		*img = NULL;
	}
	return r;
}

/*
 * Does names[0..n) fit one pass?  CUPTI_SUCCESS and the config image in *img if so; else the
 * result that refused it (CUPTI_ERROR_NOT_SUPPORTED for a set that needs more passes, *passes
 * saying how many).
 */
static CUptiResult try_set(const struct pm_device *d, const char **names, size_t n, uint8_t **img,
			   size_t *size, size_t *passes)
{
	CUptiResult r;
	CUpti_Profiler_Host_Object *h = host_new(d, &r);

	*img = NULL;
	*passes = 0;
	if (!h)
		return r;
	if ((r = add_metrics(h, names, n)) == CUPTI_SUCCESS &&
	    (r = config_image(h, img, size, passes)) == CUPTI_SUCCESS && *passes != 1) {
		free(*img);
		*img = NULL;
		r = CUPTI_ERROR_NOT_SUPPORTED;
	}
	host_free(h);
	return r;
}

static void leave_out(struct pm_device *d, const char *name, CUptiResult r, size_t passes)
{
	char rs[128];

	if (d->nleft_out == PM_METRICS_MAX)
		return;
	if (passes > 1)
		snprintf(d->left_out[d->nleft_out++], sizeof(d->left_out[0]),
			 "%s: the set would need %zu passes (PM sampling takes one)", name, passes);
	else
		snprintf(d->left_out[d->nleft_out++], sizeof(d->left_out[0]), "%s: %s", name,
			 cupti_pm_result(r, rs, sizeof(rs)));
}

/* The metrics asked for, all at once when they fit one pass, else one by one, each kept if
 * the set still fits with it (the default set is ordered most wanted first). */
static bool build_set(struct pm_device *d, const struct pm_request *rq)
{
	const char *names[PM_METRICS_MAX];
	size_t i, passes, size;
	uint8_t *img;
	CUptiResult r;

	for (i = 0; i < rq->nmetrics; i++)
		names[i] = rq->metrics[i].name;
	r = try_set(d, names, rq->nmetrics, &img, &size, &passes);
	if (r == CUPTI_SUCCESS) {
		memcpy(d->set, rq->metrics, rq->nmetrics * sizeof(d->set[0]));
		d->nset = rq->nmetrics;
	} else {
		img = NULL;
		for (i = 0; i < rq->nmetrics; i++) {
			uint8_t *trial;

			d->names[d->nset] = rq->metrics[i].name;
			r = try_set(d, d->names, d->nset + 1, &trial, &size, &passes);
			if (r != CUPTI_SUCCESS) {
				leave_out(d, rq->metrics[i].name, r, passes);
				continue;
			}
			free(img);
			img = trial;
			d->set[d->nset++] = rq->metrics[i];
		}
	}
	for (i = 0; i < d->nset; i++)
		d->names[i] = d->set[i].name;
	d->config = img;
	d->config_size = img ? size : 0;
	if (d->nset)
		return true;
	settle(d, TALLY_GM_UNSUPPORTED, r,
	       "none of the %zu metric(s) asked for can be sampled here", rq->nmetrics);
	return false;
}

/* The host object that evaluates samples: it must know the set's metrics. */
static bool evaluator(struct pm_device *d)
{
	CUptiResult r;

	if (!(d->host = host_new(d, &r)) ||
	    (r = add_metrics(d->host, d->names, d->nset)) != CUPTI_SUCCESS) {
		failed(d, "cuptiProfilerHostConfigAddMetrics", r);
		return false;
	}
	return true;
}

/* ---- CUPTI's sampler object --------------------------------------------------------------- */

static CUptiResult set_config(struct pm_device *d, CUpti_PmSampling_TriggerMode mode,
			      uint64_t interval)
{
	CUpti_PmSampling_SetConfig_Params p = {.structSize =
						   CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};

	p.pPmSamplingObject = d->obj;
	p.configSize = d->config_size;
	p.pConfig = d->config;
	p.hardwareBufferSize = d->hw_buffer;
	p.samplingInterval = interval;
	p.triggerMode = mode;
	/* KEEP_OLDEST: an overflow is reported (KEEP_LATEST would overwrite without a word) */
	p.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
	return cupti_pm.SetConfig(&p);
}

static CUptiResult init_image(struct pm_device *d)
{
	CUpti_PmSampling_CounterDataImage_Initialize_Params p = {
	    .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};

	p.pPmSamplingObject = d->obj;
	p.counterDataSize = d->image_size;
	p.pCounterData = d->images[d->cur];
	return cupti_pm.CounterDataInitialize(&p);
}

/* Enable and configure CUPTI's sampler; the time trigger where the GPU has it (Ampere GA10x
 * and later), else the SYS clock's (interval in cycles: taken as ns at 1 GHz). */
static CUptiResult open_sampler(struct pm_device *d, uint64_t interval_ns)
{
	CUpti_PmSampling_Enable_Params en = {.structSize =
						 CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
	CUptiResult r;

	en.deviceIndex = d->ordinal;
	if ((r = cupti_pm.Enable(&en)) != CUPTI_SUCCESS)
		return r;
	d->obj = en.pPmSamplingObject;
	d->trigger = TALLY_GM_TRIGGER_TIME;
	d->interval = interval_ns;
	r = set_config(d, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, interval_ns);
	if (r != CUPTI_SUCCESS && set_config(d, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL,
					     interval_ns) == CUPTI_SUCCESS) {
		d->trigger = TALLY_GM_TRIGGER_SYSCLK;
		r = CUPTI_SUCCESS;
	}
	return r; /* the time trigger's error, when neither would do */
}

static void close_sampler(struct pm_device *d)
{
	CUpti_PmSampling_Disable_Params p = {.structSize =
						 CUpti_PmSampling_Disable_Params_STRUCT_SIZE};

	if (!d->obj)
		return;
	p.pPmSamplingObject = d->obj;
	(void)cupti_pm.Disable(&p);
	d->obj = NULL;
}

/* A counter data image lives in its own mapping, left out of a fork's child (MADV_DONTFORK):
 * the child never uses it, and the sampler rewrites it at every decode, so while a child shared
 * the parent's pages copy-on-write each of its pages would be copied once more, on the sampler's
 * time.  A mapping that cannot be marked is still used. */
static uint8_t *image_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, size, MADV_DONTFORK);
	return p;
}

/* Both images, once no evaluation job holds them. */
static void images_free(struct pm_device *d, const struct pm_request *rq)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		pm_eval_wait_idle(rq->eval, &d->busy[i]);
		if (d->images[i])
			(void)munmap(d->images[i], d->image_size);
		d->images[i] = NULL;
	}
	d->image_size = 0;
}

/* The two counter data images: as many samples as asked, within 128 MiB each. */
static CUptiResult make_image(struct pm_device *d, uint32_t samples)
{
	CUpti_PmSampling_GetCounterDataSize_Params p = {
	    .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
	CUptiResult r;

	p.pPmSamplingObject = d->obj;
	p.pMetricNames = d->names;
	p.numMetrics = d->nset;
	for (;;) {
		p.maxSamples = samples;
		if ((r = cupti_pm.GetCounterDataSize(&p)) != CUPTI_SUCCESS)
			return r;
		if (p.counterDataSize <= (128u << 20) || samples <= 64)
			break;
		samples /= 2;
	}
	d->image_size = p.counterDataSize;
	d->image_samples = samples;
	d->cur = 0;
	if (!(d->images[0] = image_alloc(p.counterDataSize)) ||
	    !(d->images[1] = image_alloc(p.counterDataSize)))
		return CUPTI_ERROR_OUT_OF_MEMORY;
	return init_image(d);
}

static bool open_all(struct pm_device *d, const struct pm_request *rq)
{
	CUptiResult r;

	d->hw_buffer = rq->hw_buffer;
	d->expected_ns = rq->interval_ns;
	if ((r = open_sampler(d, rq->interval_ns)) != CUPTI_SUCCESS) {
		failed(d, "cuptiPmSamplingEnable/SetConfig", r);
		return false;
	}
	if ((r = make_image(d, rq->image_samples)) != CUPTI_SUCCESS) {
		failed(d, "cuptiPmSamplingGetCounterDataSize", r);
		return false;
	}
	return true;
}

void pm_device_setup(struct pm_device *d, int cu_dev, const struct pm_request *rq,
		     struct pm_cost *cost)
{
	uint64_t t0 = tally_monotonic_ns();

	d->lock = TALLY_KEPT_NONE;
	if (supported(d, cu_dev)) {
		chip_name(d);
		if (claim(d, rq) && availability(d) && build_set(d, rq) && evaluator(d) &&
		    open_all(d, rq))
			d->state = TALLY_GM_SAMPLED;
	}
	if (d->state != TALLY_GM_SAMPLED) {
		pm_device_release(d, rq);
	} else {
		tally_pipeline_metric_count(TALLY_C_METRIC_DEVICES, 1);
		d->set_up = true;
		if (d->trigger == TALLY_GM_TRIGGER_SYSCLK)
			d->expected_ns = 0; /* learnt from the first kept sample */
	}
	cost->setup_ns += tally_monotonic_ns() - t0;
}

/* ---- sampling ----------------------------------------------------------------------------- */

/* The device's context is gone (rq->contexts_gone): no CUPTI call for it may begin. */
static bool context_gone(const struct pm_device *d, const struct pm_request *rq)
{
	return rq->contexts_gone && d->ordinal < 64 &&
	       (atomic_load_explicit(rq->contexts_gone, memory_order_acquire) >> d->ordinal & 1);
}

static CUptiResult start_stop(struct pm_device *d, bool start)
{
	CUpti_PmSampling_Start_Params sp = {.structSize =
						CUpti_PmSampling_Start_Params_STRUCT_SIZE};
	CUpti_PmSampling_Stop_Params tp = {.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE};

	sp.pPmSamplingObject = tp.pPmSamplingObject = d->obj;
	return start ? cupti_pm.Start(&sp) : cupti_pm.Stop(&tp);
}

/* Sampling stopped for good on an error: what was sampled stands; the rest of the session has
 * no samples of the device, and the trace says so (state stopped, counter 88). */
static void give_up(struct pm_device *d, const struct pm_request *rq, const char *call,
		    CUptiResult r)
{
	char rs[128];

	if (d->running)
		(void)start_stop(d, false);
	d->running = false;
	settle(d, TALLY_GM_STOPPED, r, "%s: %s; no samples after that", call,
	       cupti_pm_result(r, rs, sizeof(rs)));
	pm_device_report(d);
	pm_device_release(d, rq);
}

static void begin(struct pm_device *d)
{
	d->started_at = cupti_clock();
	d->skip_next = true;
	d->running = true;
}

void pm_device_start(struct pm_device *d, const struct pm_request *rq)
{
	CUptiResult r;

	if (d->state != TALLY_GM_SAMPLED || d->running || d->ended)
		return;
	if ((r = start_stop(d, true)) != CUPTI_SUCCESS) {
		give_up(d, rq, "cuptiPmSamplingStart", r);
		return;
	}
	begin(d);
	d->prev_end = 0;
	d->bridge = false;
}

/* After an overflow the hardware buffer stays full (every decode fails): set sampling up again.
 * The time until the next kept sample is a gap (bridge). */
static void restart(struct pm_device *d, const struct pm_request *rq)
{
	CUptiResult r;

	tally_pipeline_metric_count(TALLY_C_METRIC_OVERFLOWS, 1);
	d->behind = true;
	if (context_gone(d, rq))
		return; /* pm_device_end counts the rest as a gap */
	if (++d->overflows_in_row > OVERFLOWS_MAX) {
		give_up(d, rq, "cuptiPmSamplingDecodeData", CUPTI_ERROR_OUT_OF_MEMORY);
		return;
	}
	if (!d->bridge) /* the first overflow in a row: coverage was lost from here */
		d->gap_from = d->prev_end ? d->prev_end : d->started_at;
	(void)start_stop(d, false);
	close_sampler(d);
	d->running = false;
	if ((r = open_sampler(d, rq->interval_ns)) != CUPTI_SUCCESS) {
		give_up(d, rq, "restarting after an overflow: cuptiPmSamplingEnable/SetConfig", r);
		return;
	}
	/* the image anew, for the new sampler object: initializing the old one again was refused
	 * (CUPTI_ERROR_INVALID_OPERATION on the H200) */
	images_free(d, rq);
	if ((r = make_image(d, rq->image_samples)) != CUPTI_SUCCESS) {
		give_up(d, rq, "restarting after an overflow: the counter data image", r);
		return;
	}
	if ((r = start_stop(d, true)) != CUPTI_SUCCESS) {
		give_up(d, rq, "restarting after an overflow: cuptiPmSamplingStart", r);
		return;
	}
	begin(d);
	d->bridge = true;
}

/* The flags of a kept sample, with its gap (if any) counted and placed. */
static uint32_t sample_flags(struct pm_device *d, uint64_t start, uint64_t end)
{
	uint64_t from = d->bridge ? d->gap_from : d->prev_end;
	uint32_t flags = 0;

	if (!d->expected_ns)
		d->expected_ns = end - start;
	if (from && start > from + d->expected_ns) {
		tally_pipeline_metric_gap(from, start);
		flags |= TALLY_METRIC_AFTER_GAP;
	}
	if (end - start > d->expected_ns + d->expected_ns / 2) {
		tally_pipeline_metric_count(TALLY_C_METRIC_MERGED, 1);
		flags |= TALLY_METRIC_MERGED;
	}
	return flags;
}

static bool sample_info(const struct pm_device *d, size_t i, uint64_t *start, uint64_t *end)
{
	CUpti_PmSampling_CounterData_GetSampleInfo_Params p = {
	    .structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};

	p.pPmSamplingObject = d->obj;
	p.pCounterDataImage = d->images[d->cur];
	p.counterDataImageSize = d->image_size;
	p.sampleIndex = i;
	if (cupti_pm.GetSampleInfo(&p) != CUPTI_SUCCESS || p.endTimestamp < p.startTimestamp)
		return false;
	*start = p.startTimestamp;
	*end = p.endTimestamp;
	return true;
}

/* One completed sample out of the image: skipped, dropped, or into the job to evaluate. */
static void take_sample(struct pm_device *d, size_t i, struct pm_eval_job *j)
{
	struct pm_batch_sample s;

	tally_pipeline_metric_count(TALLY_C_METRIC_DECODED, 1);
	s.number = ++d->number;
	if (!sample_info(d, i, &s.start, &s.end)) {
		tally_pipeline_metric_count(TALLY_C_METRIC_DROPPED, 1);
		return;
	}
	if (d->skip_next) {
		d->skip_next = false;
		if (!d->bridge)
			d->prev_end = s.end; /* coverage starts where the first kept sample does */
		tally_pipeline_metric_count(TALLY_C_METRIC_SKIPPED, 1);
		return;
	}
	s.flags = sample_flags(d, s.start, s.end);
	d->prev_end = s.end;
	d->bridge = false;
	d->overflows_in_row = 0;
	d->kept++;
	if (!j) {
		tally_pipeline_metric_count(TALLY_C_METRIC_DROPPED, 1);
		return;
	}
	j->samples[j->n].index = (uint32_t)i;
	j->samples[j->n].s = s;
	j->n++;
}

/* A job for the image's completed samples; NULL without memory. */
static struct pm_eval_job *job_for(struct pm_device *d, size_t n)
{
	struct pm_eval_job *j = pm_eval_job_new((uint32_t)n);

	if (!j)
		return NULL;
	j->host = d->host;
	j->names = d->names;
	j->set = d->set;
	j->nset = d->nset;
	j->ordinal = d->ordinal;
	j->image = d->images[d->cur];
	j->image_size = d->image_size;
	j->busy = &d->busy[d->cur];
	return j;
}

/* The image's completed samples to be evaluated, then the other image made ready for the next
 * decode (once its own samples are evaluated). */
static CUptiResult take_image(struct pm_device *d, const struct pm_request *rq,
			      struct pm_cost *cost)
{
	CUpti_PmSampling_GetCounterDataInfo_Params p = {
	    .structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
	struct pm_eval_job *j;
	uint64_t t0;
	size_t i;
	CUptiResult r;

	p.pCounterDataImage = d->images[d->cur];
	p.counterDataImageSize = d->image_size;
	if ((r = cupti_pm.GetCounterDataInfo(&p)) != CUPTI_SUCCESS)
		return r;
	if (p.numCompletedSamples > d->image_samples)
		p.numCompletedSamples = d->image_samples;
	if (p.numCompletedSamples) {
		j = job_for(d, p.numCompletedSamples);
		for (i = 0; i < p.numCompletedSamples; i++)
			take_sample(d, i, j);
		if (j && j->n)
			pm_eval_submit(rq->eval, j, cost);
		else
			free(j);
		d->cur ^= 1;
		pm_eval_wait_idle(rq->eval, &d->busy[d->cur]);
	}
	t0 = tally_monotonic_ns();
	r = init_image(d);
	cost->reset_ns += tally_monotonic_ns() - t0;
	return r;
}

bool pm_device_decode(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		      uint64_t deadline)
{
	CUpti_PmSampling_DecodeData_Params p = {.structSize =
						    CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
	unsigned round;
	uint64_t t0;
	CUptiResult r;

	for (round = 0; d->state == TALLY_GM_SAMPLED && d->obj && !context_gone(d, rq) &&
			round < MAX_DECODE_ROUNDS;
	     round++) {
		p.pPmSamplingObject = d->obj;
		p.pCounterDataImage = d->images[d->cur];
		p.counterDataImageSize = d->image_size;
		p.overflow = 0;
		t0 = tally_monotonic_ns();
		r = cupti_pm.DecodeData(&p);
		cost->decode_ns += tally_monotonic_ns() - t0;
		cost->decodes++;
		/* What was decoded before an error or an overflow still counts. */
		if ((r == CUPTI_SUCCESS || p.overflow) &&
		    (r = take_image(d, rq, cost)) != CUPTI_SUCCESS && !p.overflow) {
			give_up(d, rq, "cuptiPmSamplingGetCounterDataInfo", r);
			return true;
		}
		if (p.overflow) {
			restart(d, rq);
			return true;
		}
		if (r != CUPTI_SUCCESS) {
			give_up(d, rq, "cuptiPmSamplingDecodeData", r);
			return true;
		}
		if (p.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
			return true;
		cost->full_stops++;
		d->behind = true;
		if (tally_monotonic_ns() >= deadline)
			break; /* the rest waits in the hardware buffer */
	}
	return d->state != TALLY_GM_SAMPLED || !d->obj;
}

void pm_device_stop(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		    uint64_t deadline)
{
	uint64_t stopped_at;
	CUptiResult r;

	if (d->state != TALLY_GM_SAMPLED || !d->running || context_gone(d, rq))
		return;
	if ((r = start_stop(d, false)) != CUPTI_SUCCESS) {
		give_up(d, rq, "cuptiPmSamplingStop", r);
		return;
	}
	stopped_at = cupti_clock();
	d->running = false;
	/* Samples left in the hardware when the time is up are lost: the stretch they covered is
	 * a gap, from the last sample taken to the stop. */
	if (!pm_device_decode(d, rq, cost, deadline) && d->prev_end && stopped_at > d->prev_end) {
		tally_pipeline_metric_gap(d->prev_end, stopped_at);
		d->prev_end = stopped_at;
	}
}

/* Release CUPTI's objects, the memory and the lock. */
static void pm_device_release(struct pm_device *d, const struct pm_request *rq)
{
	if (d->running && d->obj)
		(void)start_stop(d, false);
	d->running = false;
	close_sampler(d);
	images_free(d, rq); /* first: the evaluating thread may still use the host object */
	host_free(d->host);
	d->host = NULL;
	free(d->avail);
	free(d->config);
	d->avail = d->config = NULL;
	pm_lock_release(&d->lock);
}

void pm_device_end(struct pm_device *d, const struct pm_request *rq, struct pm_cost *cost,
		   uint64_t deadline, uint64_t gone_at)
{
	uint64_t from = d->bridge ? d->gap_from : d->prev_end ? d->prev_end : d->started_at;

	if (d->ended)
		return;
	d->ended = true;
	if (!context_gone(d, rq))
		pm_device_stop(d, rq, cost, deadline);
	if (context_gone(d, rq)) { /* before, or while it stopped */
		if (d->state == TALLY_GM_SAMPLED && d->running && from && gone_at > from)
			tally_pipeline_metric_gap(from, gone_at);
		/* CUPTI's objects need the context: left as they are, never called again */
		d->running = false;
		d->obj = NULL;
		d->host = NULL;
	}
	pm_device_release(d, rq);
}

/* ---- what the trace says ------------------------------------------------------------------ */

static const struct {
	const char *code;
	unsigned severity;
} state_notes[TALLY_GM_STATE_MAX] = {
    [TALLY_GM_ELSEWHERE] = {"gpu-metrics-elsewhere", TALLY_NOTE_INFO},
    [TALLY_GM_REFUSED] = {"gpu-metrics-refused", TALLY_NOTE_WARNING},
    [TALLY_GM_UNSUPPORTED] = {"gpu-metrics-unsupported", TALLY_NOTE_WARNING},
    [TALLY_GM_BUSY] = {"gpu-metrics-busy", TALLY_NOTE_WARNING},
    [TALLY_GM_STOPPED] = {"gpu-metrics-stopped", TALLY_NOTE_ERROR},
};

static const char *remedy(const struct pm_device *d)
{
	switch (d->state) {
	case TALLY_GM_REFUSED:
		return TALLY_REMEDY_GPU_COUNTERS;
	case TALLY_GM_BUSY:
		return "end the other profiler's session on this GPU (nsys --gpu-metrics-devices, "
		       "ncu, DCGM's profiling module: `dcgmi profile --pause`), or record without "
		       "--gpu-metrics";
	default:
		return NULL;
	}
}

static void note(const struct pm_device *d)
{
	char text[2048], left[1024] = "";
	size_t i, n = 0;

	if (d->state < TALLY_GM_STATE_MAX && state_notes[d->state].code) {
		if (d->state == TALLY_GM_ELSEWHERE)
			snprintf(text, sizeof(text),
				 "GPU metrics of device %u: sampled by pid %ld on %.255s, into "
				 "%.1024s (%.512s)",
				 d->ordinal, d->holder.pid, d->holder.host,
				 d->holder.file[0] ? d->holder.file : "a trace not yet named",
				 d->why);
		else
			snprintf(text, sizeof(text), "no GPU metrics for device %u: %s%s%s",
				 d->ordinal, d->why, remedy(d) ? "; fix: " : "",
				 remedy(d) ? remedy(d) : "");
		tally_pipeline_note(state_notes[d->state].severity, state_notes[d->state].code,
				    text);
	}
	if (!d->nleft_out)
		return;
	for (i = 0; i < d->nleft_out && n < sizeof(left); i++)
		n += (size_t)snprintf(left + n, sizeof(left) - n, "%s%s", i ? "; " : "",
				      d->left_out[i]);
	snprintf(text, sizeof(text),
		 "device %u samples %zu of the %zu metrics asked for; left out: %s", d->ordinal,
		 d->nset, d->nset + d->nleft_out, left);
	tally_pipeline_note(TALLY_NOTE_INFO, "gpu-metrics-set", text);
}

void pm_device_report(const struct pm_device *d)
{
	struct tally_metric_desc descs[PM_METRICS_MAX];
	char *left[PM_METRICS_MAX], file[PATH_MAX];
	struct tally_gpu_metrics g = {0};
	struct tally_buf b = {0};
	size_t i;

	g.device = d->ordinal;
	g.has_uuid = d->has_uuid;
	memcpy(g.uuid, d->uuid, sizeof(g.uuid));
	g.state = d->state;
	g.chip = d->chip[0] ? (char *)d->chip : NULL;
	g.interval = d->interval;
	g.trigger = d->trigger;
	g.hw_buffer = d->hw_buffer;
	g.passes = 1;
	for (i = 0; i < d->nset; i++)
		descs[i] =
		    (struct tally_metric_desc){d->set[i].scale, (char *)d->set[i].name,
					       (char *)d->set[i].unit, (char *)d->set[i].label};
	g.metrics = d->state == TALLY_GM_SAMPLED || d->state == TALLY_GM_STOPPED ? descs : NULL;
	g.nmetrics = g.metrics ? d->nset : 0;
	for (i = 0; i < d->nleft_out; i++)
		left[i] = (char *)d->left_out[i];
	g.left_out = left;
	g.nleft_out = d->nleft_out;
	g.result = d->result;
	g.why = d->why[0] ? (char *)d->why : NULL;
	g.remedy = (char *)remedy(d);
	if (d->state == TALLY_GM_ELSEWHERE) {
		snprintf(file, sizeof(file), "%s", d->holder.file);
		g.holder_pid = (uint64_t)d->holder.pid;
		g.holder_host = (char *)d->holder.host;
		g.holder_file = file;
		g.has_holder_session = d->holder.has_session;
		memcpy(g.holder_session, d->holder.session, sizeof(g.holder_session));
	}
	tally_gpu_metrics_encode(&b, &g);
	if (!b.failed)
		tally_pipeline_gpu_metrics(&b);
	tally_buf_fini(&b);
	note(d);
}
