// SPDX-License-Identifier: MIT
// pm-probe: what tally's GPU-metrics sampler needs to know about CUPTI's PM sampling on this GPU,
// printed as "probe KEY: VALUE" lines (tests/gpu/pm-probe.sh runs it).  Modes:
//   pm-probe metrics          which candidate metrics exist, their units, and how many passes each
//                             and a greedy set of them need (only one-pass sets can be sampled)
//   pm-probe sample           10 kHz sampling through idle, copy, sleep and kernel phases, with
//                             kernel activity records on: sample spacing, gaps, which clock the
//                             sample timestamps are in, decode and evaluation costs, a restart
//   pm-probe overflow         a small hardware buffer left undecoded: what overflow looks like
//   pm-probe fullimage        a decode that fills a small counter data image: is the rest kept
//                             in the hardware for the next decode, or lost?
//   pm-probe hold SECONDS     sample device 0 for SECONDS (the first of two processes)
//   pm-probe second           try to sample device 0 while another process holds it
// It is a probe, not a test: it reports, and exits 0 unless CUDA itself fails.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

static const char *rs(CUptiResult r)
{
	const char *s = "?";
	cuptiGetResultString(r, &s);
	return s;
}

#define SAY(key, ...)                                                                              \
	do {                                                                                       \
		printf("probe %s: ", key);                                                         \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
	} while (0)

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			SAY("cuda-error", "%s: %s", #x, cudaGetErrorString(e_));                   \
			exit(3);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t cupti_ns(void)
{
	uint64_t t = 0;
	cuptiGetTimestamp(&t);
	return t;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0)
		;
}

// ---- chip, availability, host object -----------------------------------------------------

static std::string chip;
static std::vector<uint8_t> avail;

static void device_facts(int dev)
{
	CUpti_Profiler_Initialize_Params pi = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
	CUptiResult r = cuptiProfilerInitialize(&pi);
	SAY("profiler-initialize", "%d %s", r, rs(r));

	CUpti_Profiler_DeviceSupported_Params ds = {CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
	ds.cuDevice = dev;
	ds.api = CUPTI_PROFILER_PM_SAMPLING;
	r = cuptiProfilerDeviceSupported(&ds);
	SAY("device-supported", "rc=%d overall=%d arch=%d sli=%d vgpu=%d cc=%d cmp=%d wsl=%d", r,
	    ds.isSupported, ds.architecture, ds.sli, ds.vGpu, ds.confidentialCompute, ds.cmp, ds.wsl);

	CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
	cn.deviceIndex = (size_t)dev;
	r = cuptiDeviceGetChipName(&cn);
	chip = r == CUPTI_SUCCESS && cn.pChipName ? cn.pChipName : "";
	SAY("chip", "rc=%d %s", r, chip.c_str());

	CUpti_PmSampling_GetCounterAvailability_Params ca = {
	    CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
	ca.deviceIndex = (size_t)dev;
	r = cuptiPmSamplingGetCounterAvailability(&ca);
	SAY("availability-size", "rc=%d %s bytes=%zu", r, rs(r), ca.counterAvailabilityImageSize);
	if (r != CUPTI_SUCCESS)
		return;
	avail.assign(ca.counterAvailabilityImageSize, 0);
	ca.pCounterAvailabilityImage = avail.data();
	r = cuptiPmSamplingGetCounterAvailability(&ca);
	SAY("availability", "rc=%d %s", r, rs(r));
}

static CUpti_Profiler_Host_Object *host_new(void)
{
	CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
	hi.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
	hi.pChipName = chip.c_str();
	hi.pCounterAvailabilityImage = avail.empty() ? NULL : avail.data();
	CUptiResult r = cuptiProfilerHostInitialize(&hi);
	if (r != CUPTI_SUCCESS) {
		SAY("host-initialize", "%d %s", r, rs(r));
		return NULL;
	}
	return hi.pHostObject;
}

static void host_free(CUpti_Profiler_Host_Object *h)
{
	CUpti_Profiler_Host_Deinitialize_Params hd = {
	    CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
	hd.pHostObject = h;
	cuptiProfilerHostDeinitialize(&hd);
}

// Config image for names; passes (0 if the image could not be made); rc of AddMetrics.
static std::vector<uint8_t> config_for(const std::vector<const char *> &names, size_t *passes,
				       CUptiResult *add_rc)
{
	std::vector<uint8_t> img;
	CUpti_Profiler_Host_Object *h = host_new();

	*passes = 0;
	*add_rc = CUPTI_ERROR_UNKNOWN;
	if (!h)
		return img;
	CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
	    CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
	am.pHostObject = h;
	am.ppMetricNames = const_cast<const char **>(names.data());
	am.numMetrics = names.size();
	*add_rc = cuptiProfilerHostConfigAddMetrics(&am);
	if (*add_rc == CUPTI_SUCCESS) {
		CUpti_Profiler_Host_GetConfigImageSize_Params gs = {
		    CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
		gs.pHostObject = h;
		if (cuptiProfilerHostGetConfigImageSize(&gs) == CUPTI_SUCCESS) {
			img.assign(gs.configImageSize, 0);
			CUpti_Profiler_Host_GetConfigImage_Params gi = {
			    CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
			gi.pHostObject = h;
			gi.configImageSize = img.size();
			gi.pConfigImage = img.data();
			if (cuptiProfilerHostGetConfigImage(&gi) == CUPTI_SUCCESS) {
				CUpti_Profiler_Host_GetNumOfPasses_Params np = {
				    CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
				np.configImageSize = img.size();
				np.pConfigImage = img.data();
				if (cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS)
					*passes = np.numOfPasses;
			}
		}
	}
	host_free(h);
	return img;
}

// The candidates for tally's default set, after nsys's Hopper sets, with alternatives.
static const char *const candidates[] = {
    "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gpc__cycles_elapsed.avg.per_second",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "tpc__warps_inactive_sm_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum.per_second",
    "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
    "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "pcie__read_bytes.sum.per_second",
    "pcie__write_bytes.sum.per_second",
    "nvlrx__bytes.sum.per_second",
    "nvltx__bytes.sum.per_second",
    "pcie__read_bytes.sum.pct_of_peak_sustained_elapsed",
    "pcie__write_bytes.sum.pct_of_peak_sustained_elapsed",
    "nvlrx__bytes.sum.pct_of_peak_sustained_elapsed",
    "nvltx__bytes.sum.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
    "gr__cycles_active.avg",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
};
#define NCAND (sizeof(candidates) / sizeof(candidates[0]))

static void properties(const char *name)
{
	CUpti_Profiler_Host_Object *h = host_new();
	if (!h)
		return;
	CUpti_Profiler_Host_GetMetricProperties_Params mp = {
	    CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
	mp.pHostObject = h;
	mp.pMetricName = name;
	CUptiResult r = cuptiProfilerHostGetMetricProperties(&mp);
	SAY("metric-props", "%s rc=%d type=%d hw=%s dim=%s desc=%s", name, r, mp.metricType,
	    r == CUPTI_SUCCESS && mp.pHwUnit ? mp.pHwUnit : "-",
	    r == CUPTI_SUCCESS && mp.pDimUnit ? mp.pDimUnit : "-",
	    r == CUPTI_SUCCESS && mp.pDescription ? mp.pDescription : "-");
	host_free(h);
}

static void mode_metrics(void)
{
	std::vector<const char *> accepted;
	size_t passes;
	CUptiResult rc;
	size_t i;

	CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params mx = {
	    CUpti_Profiler_Host_GetMaxNumHardwareMetricsPerPass_Params_STRUCT_SIZE};
	mx.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
	mx.pChipName = chip.c_str();
	mx.pCounterAvailabilityImage = avail.empty() ? NULL : avail.data();
	rc = cuptiProfilerHostGetMaxNumHardwareMetricsPerPass(&mx);
	SAY("max-hw-metrics-per-pass", "rc=%d %zu", rc, mx.maxMetricsPerPass);
	for (i = 0; i < NCAND; i++) {
		std::vector<const char *> one(1, candidates[i]);
		config_for(one, &passes, &rc);
		SAY("metric", "%s add=%d(%s) passes=%zu", candidates[i], rc, rs(rc), passes);
		properties(candidates[i]);
	}
	for (i = 0; i < NCAND; i++) {
		std::vector<const char *> trial = accepted;
		trial.push_back(candidates[i]);
		config_for(trial, &passes, &rc);
		bool ok = rc == CUPTI_SUCCESS && passes == 1;
		SAY("greedy", "+%s -> add=%d passes=%zu %s", candidates[i], rc, passes,
		    ok ? "kept" : "dropped");
		if (ok)
			accepted.push_back(candidates[i]);
	}
	SAY("greedy-set-size", "%zu", accepted.size());
}

// ---- sampling ----------------------------------------------------------------------------

static const char *const sample_metrics[] = {
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum.per_second",
};
#define NSM (sizeof(sample_metrics) / sizeof(sample_metrics[0]))

struct sample {
	uint64_t start, end;
	double v[NSM];
};

struct sampler {
	CUpti_PmSampling_Object *obj;
	CUpti_Profiler_Host_Object *host;
	std::vector<const char *> names;
	std::vector<uint8_t> counter_data;
	std::vector<sample> samples;
	volatile bool stop;
	unsigned decodes, decode_fail, overflows, stop_reason[4];
	size_t max_completed, max_populated_not_completed;
	double decode_us, eval_us;
	uint64_t evals, last_end_vs_now_max, last_end_vs_now_min;
};

static CUpti_PmSampling_Object *enable(int dev, CUptiResult *rc)
{
	CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
	en.deviceIndex = (size_t)dev;
	*rc = cuptiPmSamplingEnable(&en);
	return *rc == CUPTI_SUCCESS ? en.pPmSamplingObject : NULL;
}

static CUptiResult set_config(CUpti_PmSampling_Object *o, const std::vector<uint8_t> &img,
			      size_t hwbuf, uint64_t interval, CUpti_PmSampling_TriggerMode mode)
{
	CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
	sc.pPmSamplingObject = o;
	sc.configSize = img.size();
	sc.pConfig = img.data();
	sc.hardwareBufferSize = hwbuf;
	sc.samplingInterval = interval;
	sc.triggerMode = mode;
	sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
	return cuptiPmSamplingSetConfig(&sc);
}

static size_t data_size(CUpti_PmSampling_Object *o, const std::vector<const char *> &names,
			uint32_t max_samples)
{
	CUpti_PmSampling_GetCounterDataSize_Params gs = {
	    CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
	gs.pPmSamplingObject = o;
	gs.pMetricNames = const_cast<const char **>(names.data());
	gs.numMetrics = names.size();
	gs.maxSamples = max_samples;
	CUptiResult r = cuptiPmSamplingGetCounterDataSize(&gs);
	return r == CUPTI_SUCCESS ? gs.counterDataSize : 0;
}

static CUptiResult init_data(struct sampler *s)
{
	CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {
	    CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
	ci.pPmSamplingObject = s->obj;
	ci.counterDataSize = s->counter_data.size();
	ci.pCounterData = s->counter_data.data();
	return cuptiPmSamplingCounterDataImageInitialize(&ci);
}

static CUptiResult start_stop(CUpti_PmSampling_Object *o, bool start)
{
	if (start) {
		CUpti_PmSampling_Start_Params p = {CUpti_PmSampling_Start_Params_STRUCT_SIZE};
		p.pPmSamplingObject = o;
		return cuptiPmSamplingStart(&p);
	}
	CUpti_PmSampling_Stop_Params p = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
	p.pPmSamplingObject = o;
	return cuptiPmSamplingStop(&p);
}

static void disable(CUpti_PmSampling_Object *o)
{
	CUpti_PmSampling_Disable_Params d = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
	d.pPmSamplingObject = o;
	CUptiResult r = cuptiPmSamplingDisable(&d);
	SAY("disable", "%d %s", r, rs(r));
}

// One decode pass: decode, read the completed samples, evaluate, reset.
static void decode_once(struct sampler *s)
{
	CUpti_PmSampling_DecodeData_Params dd = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	dd.pPmSamplingObject = s->obj;
	dd.pCounterDataImage = s->counter_data.data();
	dd.counterDataImageSize = s->counter_data.size();
	CUptiResult r = cuptiPmSamplingDecodeData(&dd);
	s->decode_us += (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e3;
	s->decodes++;
	if (dd.overflow)
		s->overflows++;
	if (r != CUPTI_SUCCESS) {
		if (s->decode_fail++ < 5)
			SAY("decode-error", "%d %s overflow=%u", r, rs(r), dd.overflow);
		if (r != CUPTI_ERROR_OUT_OF_MEMORY)
			return;
	}
	if ((unsigned)dd.decodeStopReason < 4)
		s->stop_reason[dd.decodeStopReason]++;
	CUpti_PmSampling_GetCounterDataInfo_Params di = {
	    CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
	di.pCounterDataImage = s->counter_data.data();
	di.counterDataImageSize = s->counter_data.size();
	if (cuptiPmSamplingGetCounterDataInfo(&di) != CUPTI_SUCCESS)
		return;
	s->max_completed = std::max(s->max_completed, di.numCompletedSamples);
	s->max_populated_not_completed =
	    std::max(s->max_populated_not_completed, di.numPopulatedSamples - di.numCompletedSamples);
	uint64_t now = cupti_ns();
	for (size_t i = 0; i < di.numCompletedSamples; i++) {
		CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
		    CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
		struct sample smp;
		si.pPmSamplingObject = s->obj;
		si.pCounterDataImage = s->counter_data.data();
		si.counterDataImageSize = s->counter_data.size();
		si.sampleIndex = i;
		if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS)
			continue;
		smp.start = si.startTimestamp;
		smp.end = si.endTimestamp;
		CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
		    CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
		ev.pHostObject = s->host;
		ev.pCounterDataImage = s->counter_data.data();
		ev.counterDataImageSize = s->counter_data.size();
		ev.rangeIndex = i;
		ev.ppMetricNames = const_cast<const char **>(s->names.data());
		ev.numMetrics = s->names.size();
		ev.pMetricValues = smp.v;
		uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
		CUptiResult er = cuptiProfilerHostEvaluateToGpuValues(&ev);
		s->eval_us += (double)(clock_ns(CLOCK_MONOTONIC) - t1) / 1e3;
		s->evals++;
		if (er != CUPTI_SUCCESS && s->evals < 3)
			SAY("evaluate-error", "%d %s", er, rs(er));
		s->samples.push_back(smp);
		if (i + 1 == di.numCompletedSamples && smp.end) {
			uint64_t d = now > smp.end ? now - smp.end : 0;
			s->last_end_vs_now_max = std::max(s->last_end_vs_now_max, d);
			s->last_end_vs_now_min = std::min(s->last_end_vs_now_min, d);
			if (now < smp.end)
				SAY("sample-after-now", "end %llu now %llu", (unsigned long long)smp.end,
				    (unsigned long long)now);
		}
	}
	init_data(s);
}

static void *decode_main(void *arg)
{
	struct sampler *s = (struct sampler *)arg;
	while (!s->stop) {
		sleep_ms(50);
		decode_once(s);
	}
	return NULL;
}

// ---- kernel activity, to compare sample timestamps with kernel records -------------------

static uint64_t kern_start, kern_end;

static void CUPTIAPI buf_request(uint8_t **b, size_t *size, size_t *max)
{
	*size = 1 << 20;
	*b = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_complete(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	while (cuptiActivityGetNextRecord(b, valid, &rec) == CUPTI_SUCCESS)
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)rec;
			if (strstr(k->name, "spin")) {
				kern_start = k->start;
				kern_end = k->end;
			}
		}
	free(b);
}

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

struct phase {
	const char *name;
	uint64_t t0, t1;
};

static void phase_means(const struct sampler *s, const struct phase *ph, int nph)
{
	for (int p = 0; p < nph; p++) {
		double sum[NSM] = {0};
		size_t n = 0;
		for (size_t i = 1; i < s->samples.size(); i++) {
			uint64_t mid = s->samples[i].start / 2 + s->samples[i].end / 2;
			if (mid < ph[p].t0 || mid > ph[p].t1)
				continue;
			for (size_t m = 0; m < NSM; m++)
				sum[m] += s->samples[i].v[m];
			n++;
		}
		printf("probe phase %s: %.3f s, %zu samples (by sample midpoint in cupti time)",
		       ph[p].name, (double)(ph[p].t1 - ph[p].t0) / 1e9, n);
		for (size_t m = 0; m < NSM; m++)
			printf(" %s=%.3f", sample_metrics[m], n ? sum[m] / (double)n : -1.0);
		printf("\n");
	}
}

static void spacing(const struct sampler *s, size_t from, const char *tag)
{
	std::vector<uint64_t> dur;
	size_t gaps = 0, overlaps = 0;
	uint64_t gap_max = 0, gap_total = 0;
	for (size_t i = from + 1; i < s->samples.size(); i++) {
		const struct sample &a = s->samples[i - 1], &b = s->samples[i];
		dur.push_back(b.end - b.start);
		if (b.start > a.end) {
			gaps++;
			gap_total += b.start - a.end;
			gap_max = std::max(gap_max, b.start - a.end);
		} else if (b.start < a.end) {
			overlaps++;
		}
	}
	std::sort(dur.begin(), dur.end());
	if (dur.empty()) {
		SAY(tag, "no samples");
		return;
	}
	SAY(tag,
	    "samples=%zu duration ns min=%llu p1=%llu p50=%llu p99=%llu max=%llu; start>prev.end "
	    "%zu times (max %llu ns, total %llu ns); start<prev.end %zu times",
	    dur.size() + 1, (unsigned long long)dur.front(),
	    (unsigned long long)dur[dur.size() / 100], (unsigned long long)dur[dur.size() / 2],
	    (unsigned long long)dur[dur.size() * 99 / 100], (unsigned long long)dur.back(), gaps,
	    (unsigned long long)gap_max, (unsigned long long)gap_total, overlaps);
	size_t longer = 0;
	for (uint64_t d : dur)
		longer += d > dur[dur.size() / 2] * 3 / 2;
	SAY(tag, "samples longer than 1.5x the median: %zu", longer);
}

static bool setup_sampler(struct sampler *s, int dev, size_t hwbuf, uint64_t interval,
			  uint32_t max_samples)
{
	size_t passes;
	CUptiResult rc;
	s->names.assign(sample_metrics, sample_metrics + NSM);
	std::vector<uint8_t> img = config_for(s->names, &passes, &rc);
	SAY("sample-config", "add=%d passes=%zu bytes=%zu", rc, passes, img.size());
	s->host = host_new();
	CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
	    CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
	am.pHostObject = s->host;
	am.ppMetricNames = s->names.data();
	am.numMetrics = s->names.size();
	cuptiProfilerHostConfigAddMetrics(&am);
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	s->obj = enable(dev, &rc);
	SAY("enable", "%d %s (%.3f ms)", rc, rs(rc), (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	if (!s->obj)
		return false;
	rc = set_config(s->obj, img, hwbuf, interval, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL);
	SAY("set-config-time-interval", "%d %s interval=%llu ns hwbuf=%zu", rc, rs(rc),
	    (unsigned long long)interval, hwbuf);
	if (rc != CUPTI_SUCCESS) {
		rc = set_config(s->obj, img, hwbuf, interval,
				CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL);
		SAY("set-config-sysclk", "%d %s", rc, rs(rc));
		if (rc != CUPTI_SUCCESS)
			return false;
	}
	size_t a = data_size(s->obj, s->names, 1000), b = data_size(s->obj, s->names, 2000);
	SAY("counter-data-bytes", "1000 samples: %zu, 2000 samples: %zu, per sample %.1f", a, b,
	    (double)(b - a) / 1000.0);
	s->counter_data.assign(data_size(s->obj, s->names, max_samples), 0);
	rc = init_data(s);
	SAY("counter-data-init", "%d %s", rc, rs(rc));
	s->last_end_vs_now_min = UINT64_MAX;
	return rc == CUPTI_SUCCESS;
}

// Enabling from a thread of our own, before any context exists (the collector's sampler thread
// does it while the program may still be inside cuInit).
static void *enable_thread(void *arg)
{
	struct sampler *s = (struct sampler *)arg;
	if (!setup_sampler(s, 0, 64u << 20, 100000, 20000))
		s->obj = NULL;
	return NULL;
}

static void CUPTIAPI on_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p)
{
}

static void mode_sample(void)
{
	static struct sampler s;
	CUptiResult rc0;
	struct phase ph[5];
	pthread_t th;
	size_t bytes = 1ull << 30;
	void *a, *b;

	pthread_create(&th, NULL, enable_thread, &s);
	pthread_join(th, NULL);
	if (!s.obj)
		return;
	// As the collector runs: a subscriber for callbacks, and activity records.
	CUpti_SubscriberHandle sub;
	rc0 = cuptiSubscribe(&sub, on_cb, NULL);
	SAY("subscribe", "%d %s", rc0, rs(rc0));
	if (rc0 == CUPTI_SUCCESS)
		cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
				    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	cuptiActivityRegisterCallbacks(buf_request, buf_complete);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaDeviceSynchronize());

	CUptiResult rc = start_stop(s.obj, true);
	uint64_t started = cupti_ns();
	SAY("start", "%d %s at cupti %llu realtime %llu monotonic %llu", rc, rs(rc),
	    (unsigned long long)started, (unsigned long long)clock_ns(CLOCK_REALTIME),
	    (unsigned long long)clock_ns(CLOCK_MONOTONIC));
	if (rc != CUPTI_SUCCESS)
		return;
	pthread_create(&th, NULL, decode_main, &s);

	ph[0] = {"idle-300ms", cupti_ns(), 0};
	sleep_ms(300);
	ph[0].t1 = cupti_ns();
	ph[1] = {"copy-d2d-1GiB", cupti_ns(), 0};
	int copies = 0;
	while (cupti_ns() - ph[1].t0 < 500000000ull) {
		CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
		CK(cudaDeviceSynchronize());
		copies++;
	}
	ph[1].t1 = cupti_ns();
	SAY("copies", "%d x %zu bytes in %.3f s = %.1f GB/s (read+write %.1f GB/s)", copies, bytes,
	    (double)(ph[1].t1 - ph[1].t0) / 1e9,
	    (double)copies * (double)bytes / (double)(ph[1].t1 - ph[1].t0),
	    2.0 * (double)copies * (double)bytes / (double)(ph[1].t1 - ph[1].t0));
	ph[2] = {"sleep-500ms", cupti_ns(), 0};
	sleep_ms(500);
	ph[2].t1 = cupti_ns();
	int sms = 0, clock_khz = 0;
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
	ph[3] = {"spin-kernel", cupti_ns(), 0};
	spin<<<sms * 4, 256>>>((long long)clock_khz * 300); // ~300 ms at the base clock
	CK(cudaDeviceSynchronize());
	ph[3].t1 = cupti_ns();
	ph[4] = {"idle-200ms", cupti_ns(), 0};
	sleep_ms(200);
	ph[4].t1 = cupti_ns();

	uint64_t t_stop = clock_ns(CLOCK_MONOTONIC);
	rc = start_stop(s.obj, false);
	SAY("stop", "%d %s (%.3f ms)", rc, rs(rc), (double)(clock_ns(CLOCK_MONOTONIC) - t_stop) / 1e6);
	s.stop = true;
	pthread_join(th, NULL);
	t_stop = clock_ns(CLOCK_MONOTONIC);
	decode_once(&s); // what the stop left
	SAY("final-decode", "%.3f ms", (double)(clock_ns(CLOCK_MONOTONIC) - t_stop) / 1e6);
	SAY("decodes", "%u calls, %u failed, overflow flagged %u times, stop reasons other=%u "
		       "full=%u end=%u; most completed in one decode %zu; most populated-not-"
		       "completed %zu; decode %.1f us/call; evaluate %.2f us/sample",
	    s.decodes, s.decode_fail, s.overflows, s.stop_reason[0], s.stop_reason[1],
	    s.stop_reason[2], s.max_completed, s.max_populated_not_completed,
	    s.decode_us / std::max(1u, s.decodes), s.eval_us / (double)std::max<uint64_t>(1, s.evals));
	SAY("lag", "newest sample end to cuptiGetTimestamp at decode: min %.3f ms max %.3f ms",
	    (double)s.last_end_vs_now_min / 1e6, (double)s.last_end_vs_now_max / 1e6);
	for (size_t i = 0; i < 3 && i < s.samples.size(); i++)
		SAY("first-samples", "#%zu start %llu end %llu dur %lld ns v0=%.3f (start - cupti at "
				     "Start: %lld ns)",
		    i, (unsigned long long)s.samples[i].start, (unsigned long long)s.samples[i].end,
		    (long long)(s.samples[i].end - s.samples[i].start), s.samples[i].v[0],
		    (long long)(s.samples[i].start - started));
	if (!s.samples.empty())
		SAY("last-sample", "end %llu, cupti at stop-phase end %llu (diff %lld ns)",
		    (unsigned long long)s.samples.back().end, (unsigned long long)ph[4].t1,
		    (long long)(s.samples.back().end - ph[4].t1));
	spacing(&s, 1, "spacing");
	phase_means(&s, ph, 5);

	cuptiActivityFlushAll(1);
	SAY("spin-kernel-record", "start %llu end %llu (%.3f ms); phase window %llu..%llu",
	    (unsigned long long)kern_start, (unsigned long long)kern_end,
	    (double)(kern_end - kern_start) / 1e6, (unsigned long long)ph[3].t0,
	    (unsigned long long)ph[3].t1);
	uint64_t first_busy = 0, last_busy = 0;
	for (size_t i = 1; i < s.samples.size(); i++)
		if (s.samples[i].v[0] > 50.0) {
			if (!first_busy)
				first_busy = s.samples[i].start;
			last_busy = s.samples[i].end;
		}
	SAY("busy-vs-kernel", "samples with sm active > 50%%: %llu..%llu; minus kernel record: "
			      "start %+lld ns, end %+lld ns",
	    (unsigned long long)first_busy, (unsigned long long)last_busy,
	    (long long)(first_busy - kern_start), (long long)(last_busy - kern_end));

	// A second start on the same object: does the first sample again span from far back?
	size_t before = s.samples.size();
	rc = start_stop(s.obj, true);
	uint64_t restarted = cupti_ns();
	SAY("restart", "%d %s", rc, rs(rc));
	sleep_ms(100);
	start_stop(s.obj, false);
	decode_once(&s);
	if (s.samples.size() > before)
		SAY("restart-first", "start - cupti at restart %lld ns, dur %lld ns, samples %zu",
		    (long long)(s.samples[before].start - restarted),
		    (long long)(s.samples[before].end - s.samples[before].start),
		    s.samples.size() - before);
	spacing(&s, before + 1, "restart-spacing");
	t_stop = clock_ns(CLOCK_MONOTONIC);
	disable(s.obj);
	SAY("disable-time", "%.3f ms", (double)(clock_ns(CLOCK_MONOTONIC) - t_stop) / 1e6);
	cudaFree(a);
	cudaFree(b);
}

static void mode_overflow(void)
{
	static struct sampler s;
	if (!setup_sampler(&s, 0, 1u << 20, 10000, 20000)) // 1 MiB, 100 kHz
		return;
	CUptiResult rc = start_stop(s.obj, true);
	SAY("overflow-start", "%d %s", rc, rs(rc));
	sleep_ms(500);
	decode_once(&s);
	SAY("overflow-first-decode", "samples %zu overflows %u failures %u", s.samples.size(),
	    s.overflows, s.decode_fail);
	size_t before = s.samples.size();
	sleep_ms(50);
	decode_once(&s);
	SAY("overflow-next-decode", "new samples %zu overflows %u failures %u",
	    s.samples.size() - before, s.overflows, s.decode_fail);
	start_stop(s.obj, false);
	decode_once(&s);
	spacing(&s, 1, "overflow-spacing");
	disable(s.obj);
}

// A counter data image of 100 samples, 200 ms of samples (2,000 at 10 kHz) left in the
// hardware, then one decode after another until one does not fill the image: does a decode that
// fills its image leave the rest in the hardware buffer for the next (the samples run on without
// a break: tally's sampler could decode again at once), or is the rest lost (a break after
// every full image: tally must size its images for the longest a decode can be late)?
static void mode_fullimage(void)
{
	static struct sampler s;
	const unsigned full_reason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
	unsigned rounds = 0, full = 0, breaks = 0;
	uint64_t lost = 0;

	CK(cudaFree(0));
	if (!setup_sampler(&s, 0, 64u << 20, 100000, 100))
		return;
	CUptiResult rc = start_stop(s.obj, true);
	SAY("fullimage-start", "%d %s", rc, rs(rc));
	sleep_ms(200);
	while (rounds < 60) {
		unsigned before = s.stop_reason[full_reason];
		decode_once(&s);
		rounds++;
		if (s.stop_reason[full_reason] == before)
			break;
		full++;
	}
	start_stop(s.obj, false);
	decode_once(&s);
	for (size_t i = 2; i < s.samples.size(); i++) // [0] spans from far back
		if (s.samples[i].start > s.samples[i - 1].end + 150000) {
			breaks++;
			lost += s.samples[i].start - s.samples[i - 1].end;
		}
	SAY("fullimage-decodes",
	    "%u decodes, %u stopped at a full image; %zu samples; %u breaks (%.3f ms); most "
	    "populated-not-completed %zu",
	    rounds, full, s.samples.size(), breaks, (double)lost / 1e6,
	    s.max_populated_not_completed);
	SAY("fullimage-verdict", "%s",
	    !full ? "no decode filled the image (inconclusive)"
	    : breaks ? "the rest is lost when a decode fills its image"
		     : "the rest stays in the hardware when a decode fills its image");
	spacing(&s, 1, "fullimage-spacing");
	disable(s.obj);
}

static void mode_hold(int seconds)
{
	static struct sampler s;
	if (!setup_sampler(&s, 0, 64u << 20, 100000, 20000))
		return;
	CUptiResult rc = start_stop(s.obj, true); // no CUDA context in this process
	SAY("hold-start-without-context", "%d %s", rc, rs(rc));
	for (int i = 0; i < seconds * 10; i++) {
		sleep_ms(100);
		decode_once(&s);
	}
	start_stop(s.obj, false);
	SAY("hold-samples", "%zu", s.samples.size());
	spacing(&s, 1, "hold-spacing");
	disable(s.obj);
}

static void mode_second(void)
{
	CUptiResult rc;
	size_t passes;
	std::vector<const char *> names(sample_metrics, sample_metrics + NSM);
	std::vector<uint8_t> img = config_for(names, &passes, &rc);
	CUpti_PmSampling_Object *o = enable(0, &rc);
	SAY("second-enable", "%d %s", rc, rs(rc));
	if (!o)
		return;
	rc = set_config(o, img, 64u << 20, 100000, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL);
	SAY("second-set-config", "%d %s", rc, rs(rc));
	rc = start_stop(o, true);
	SAY("second-start", "%d %s", rc, rs(rc));
	if (rc == CUPTI_SUCCESS) {
		static struct sampler s;
		s.obj = o;
		s.host = host_new();
		CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
		    CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
		am.pHostObject = s.host;
		am.ppMetricNames = names.data();
		am.numMetrics = names.size();
		cuptiProfilerHostConfigAddMetrics(&am);
		s.names = names;
		s.counter_data.assign(data_size(o, names, 20000), 0);
		init_data(&s);
		s.last_end_vs_now_min = UINT64_MAX;
		sleep_ms(300);
		decode_once(&s);
		SAY("second-samples", "%zu (decode failures %u)", s.samples.size(), s.decode_fail);
		start_stop(o, false);
	}
	disable(o);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "metrics";
	uint32_t v = 0;

	cuInit(0);
	cuptiGetVersion(&v);
	SAY("cupti-version", "%u", v);
	// The availability image needs no context; the chip name neither.
	if (strcmp(mode, "second") == 0) {
		device_facts(0);
		mode_second();
		return 0;
	}
	device_facts(0);
	if (strcmp(mode, "metrics") == 0)
		mode_metrics();
	else if (strcmp(mode, "sample") == 0)
		mode_sample();
	else if (strcmp(mode, "overflow") == 0)
		mode_overflow();
	else if (strcmp(mode, "hold") == 0)
		mode_hold(argc > 2 ? atoi(argv[2]) : 3);
	else if (strcmp(mode, "fullimage") == 0)
		mode_fullimage();
	else
		SAY("usage", "pm-probe metrics|sample|overflow|fullimage|hold SECONDS|second");
	return 0;
}
