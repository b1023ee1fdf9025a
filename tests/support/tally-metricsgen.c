/* SPDX-License-Identifier: MIT */
/*
 * tally-metricsgen: write a trace with GPU metrics whose every value follows from a construction,
 * and (with --expect) the figures tally's readers must find in it, computed here from the values
 * written, never by tally.  For the reading side's tests (tests/cli/test-gpumetrics-read.sh), its
 * doubling test and the kept trace tests/data/gen-metrics.tally.
 *
 * Process A (pid 4242) runs, on each device, periods of 10 ms: three 2 ms kernels back to back
 * (SM Active 50, 70 and 90%, the third with the tensor pipe at 60%), then 4 ms of nothing: a GPU
 * gap.  NVTX ranges ":step" (each period) and ":compute" (its kernels).  A samples the metrics of
 * its devices (GPU_METRICS state sampled, the default set less NVLink) every --hz, from 1 ms after
 * the start: each metric's value over a sample is what the kernels overlapping it make of it,
 * weighted by their overlap.  --other-gaps K: a 2 ms kernel at SM Active 40% starts 1 ms into
 * every Kth gap of device 0 - a process of its own, whose trace is --second FILE (pid 4343,
 * state elsewhere: A samples the GPU) or, without --second, nobody's (untraced work).
 * --metric-gap MS:LEN: no sample starts in [MS, MS + LEN) ms (a gap in the samples, counted and
 * placed as the collector does).  --host: A's thread 4242 is host-sampled at 1 kHz (Python, on
 * the CPU in compute (/work/train.py:20)) from 0.5 ms to the end, so that each 4 ms gap holds 4
 * samples standing for 1 ms each.  --late-launches: the launches of device 0's kernels are recorded
 * (cudaLaunchKernel on A's thread 4242) only for the first kernels of period 1 and of every even
 * period, each call beginning 1 ms into the gap before its kernel: those gaps are host waits, the
 * others' launches unknown ("other").  With --other-gaps 2 the gaps before the even periods are
 * busy outside the trace: host wait is the largest class as the trace is read, "other" once the
 * busy gaps are out, with one host-wait gap left (before period 1).
 *
 *   tally-metricsgen -o A.tally [--second B.tally] [--seconds S] [--hz H] [--devices N]
 *       [--metrics N] [--other-gaps K] [--metric-gap MS:LEN] [--host] [--late-launches]
 *       [--expect FILE.json]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "codec.h"
#include "gpumetrics.h"
#include "ledger.h"
#include "metricset.h"
#include "payloads.h"
#include "stacks.h"
#include "writer.h"

#define T0	   1796000000000000000ull /* session start, CUPTI ns = realtime ns */
#define MS	   1000000ull
#define PERIOD	   (10 * MS)
#define FIRST_WORK (2 * MS)
#define BATCH	   1000 /* samples per RECORDS chunk (one chunk per metric) */
#define MAXM	   16
#define MAXDEV	   4

struct kernel {
	uint64_t t0, t1;
	double sm, tensor;
};

struct opts {
	const char *out, *second, *expect;
	double seconds;
	unsigned hz, devices, nmetrics, other_gaps;
	bool host;		   /* --host: A's thread 4242 host-sampled */
	bool late_launches;	   /* --late-launches: some of device 0's launches, late */
	uint64_t mgap_t0, mgap_t1; /* relative to T0; 0 0: none */
};

struct gen {
	struct opts o;
	struct pm_metric m[MAXM];
	unsigned nm;
	uint64_t interval, nperiods;
	struct kernel *other; /* the other process's kernels, on device 0 */
	size_t nother;
	/* what was written, for --expect: per device, metric, sample: value (scaled), start, end */
	int64_t *val[MAXDEV][MAXM];
	uint64_t *st[MAXDEV], *en[MAXDEV];
	size_t ns[MAXDEV];
};

struct out {
	int fd;
	struct tally_writer w;
	struct tally_codec codec;
	struct tally_buf b;
	struct tally_ledger l;
	uint32_t next_string;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---- writing ------------------------------------------------------------------------------ */

static void chunk(struct out *o, unsigned type, unsigned flags)
{
	if (tally_writer_chunk(&o->w, type, flags, o->b.data, o->b.len, 0) < 0 ||
	    tally_writer_flush(&o->w) < 0)
		die("write");
	tally_buf_reset(&o->b);
}

static void open_out(struct out *o, const char *path)
{
	struct tally_sink sink;

	memset(o, 0, sizeof(*o));
	o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o->fd < 0)
		die(path);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)o->fd, NULL, NULL};
	if (tally_writer_init(&o->w, &sink, 1 << 20) < 0 || tally_writer_preamble(&o->w) < 0)
		die("writer");
	o->next_string = 1;
}

static void close_out(struct out *o)
{
	if (tally_writer_flush(&o->w) < 0)
		die("flush");
	tally_writer_fini(&o->w);
	tally_codec_fini(&o->codec);
	tally_buf_fini(&o->b);
	close(o->fd);
}

static uint32_t string(struct out *o, const char *s)
{
	tally_buf_put_varint(&o->b, o->next_string);
	tally_buf_put_varint(&o->b, 1);
	tally_buf_put_varint(&o->b, strlen(s));
	tally_buf_put(&o->b, s, strlen(s));
	chunk(o, TALLY_CHUNK_STRINGS, 0);
	return o->next_string++;
}

static void uuid_of(unsigned device, uint8_t *u)
{
	unsigned i;

	for (i = 0; i < 16; i++)
		u[i] = (uint8_t)(0xa0 + i + 16 * device);
}

static void session(struct out *o, uint64_t pid, const struct gen *g, bool sampler)
{
	uint8_t id[16];
	unsigned i;

	for (i = 0; i < 16; i++)
		id[i] = (uint8_t)(pid + i);
	tally_kv_str(&o->b, TALLY_SK_WRITER, "tally-metricsgen");
	tally_kv_str(&o->b, TALLY_SK_HOST, "gen");
	tally_kv_uint(&o->b, TALLY_SK_PID, pid);
	tally_kv_bytes(&o->b, TALLY_SK_CMDLINE, "metrics-workload", 16);
	tally_kv_uint(&o->b, TALLY_SK_START_CUPTI, T0);
	tally_kv_uint(&o->b, TALLY_SK_START_REALTIME, T0);
	tally_kv_str(&o->b, TALLY_SK_SOURCE, "tally-metricsgen");
	tally_kv_uint(&o->b, TALLY_SK_KINDS,
		      1u << TALLY_KIND_KERNEL | 1u << TALLY_KIND_NVTX_RANGE |
			  (sampler ? 1u << TALLY_KIND_GPU_METRIC : 0) |
			  (sampler && g->o.late_launches ? 1u << TALLY_KIND_RUNTIME : 0));
	tally_kv_bytes(&o->b, TALLY_SK_SESSION_ID, id, sizeof(id));
	tally_kv_str(&o->b, TALLY_SK_GPU_METRICS, "all");
	tally_kv_uint(&o->b, TALLY_SK_GPU_METRICS_HZ, g->o.hz);
	tally_kv_str(&o->b, TALLY_SK_GPU_METRICS_SET, "default");
	if (sampler && g->o.host) {
		tally_kv_uint(&o->b, TALLY_SK_SAMPLE, TALLY_SAMPLE_BIT_PYTHON);
		tally_kv_uint(&o->b, TALLY_SK_SAMPLE_RATE, 1000);
		tally_kv_str(&o->b, TALLY_SK_SAMPLE_MECHANISM,
			     "made up by tally-metricsgen --host");
	}
	chunk(o, TALLY_CHUNK_SESSION, 0);
}

static void devices(struct out *o, const struct gen *g, unsigned n)
{
	uint8_t u[16];
	unsigned d;

	for (d = 0; d < n; d++) {
		uuid_of(d, u);
		tally_kv_uint(&o->b, TALLY_DK_ID, d);
		tally_kv_str(&o->b, TALLY_DK_NAME, "NVIDIA H200 (generated)");
		tally_kv_bytes(&o->b, TALLY_DK_UUID, u, 16);
		chunk(o, TALLY_CHUNK_DEVICE, 0);
	}
	(void)g;
}

static void gpu_metrics_chunk(struct out *o, const struct gen *g, unsigned device, unsigned state)
{
	struct tally_metric_desc md[MAXM];
	struct tally_gpu_metrics c = {.device = device, .has_uuid = true, .state = state};
	unsigned i;

	uuid_of(device, c.uuid);
	if (state == TALLY_GM_SAMPLED) {
		for (i = 0; i < g->nm; i++)
			md[i] =
			    (struct tally_metric_desc){g->m[i].scale, (char *)g->m[i].name,
						       (char *)g->m[i].unit, (char *)g->m[i].label};
		c.chip = "GH100";
		c.interval = g->interval;
		c.trigger = TALLY_GM_TRIGGER_TIME;
		c.passes = 1;
		c.metrics = md;
		c.nmetrics = g->nm;
	} else {
		c.holder_pid = 4242;
		c.holder_host = "gen";
		c.holder_file = "metrics.tally";
		c.why = "the first process to claim the device samples it";
	}
	tally_gpu_metrics_encode(&o->b, &c);
	chunk(o, TALLY_CHUNK_GPU_METRICS, 0);
}

static void records(struct out *o, const struct tally_record *r, size_t n)
{
	if (n > BATCH) { /* chunks of a bounded size, as the collector writes them */
		records(o, r, BATCH);
		records(o, r + BATCH, n - BATCH);
		return;
	}
	if (!n)
		return;
	if (tally_records_encode(&o->codec, &o->b, r[0].kind, r, n, tally_kind_columns(r[0].kind)) <
	    0)
		die("encode");
	chunk(o, TALLY_CHUNK_RECORDS, 0);
	o->l.v[TALLY_C_BY_KIND + r[0].kind] += n;
	if (r[0].kind != TALLY_KIND_GPU_METRIC)
		o->l.v[TALLY_C_RECORDS_PARSED] += n;
	if (r[0].kind == TALLY_KIND_KERNEL)
		o->l.v[TALLY_C_GPU_RECORDS] += n;
}

static void final_ledger(struct out *o, uint64_t end)
{
	o->l.t_begin = T0;
	o->l.t_end = end;
	o->l.v[TALLY_C_FLUSH_COMPLETED] = 1;
	tally_ledger_encode(&o->b, &o->l);
	chunk(o, TALLY_CHUNK_LEDGER, TALLY_CHUNK_FLAG_FINAL);
}

/* ---- the construction ------------------------------------------------------------------------ */

static uint64_t trace_end(const struct gen *g)
{
	return T0 + (uint64_t)(g->o.seconds * 1e9);
}

/* Kernel k (0..2) of period p on a device of A. */
static struct kernel a_kernel(uint64_t p, unsigned k)
{
	static const double sm[] = {50, 70, 90}, tensor[] = {0, 0, 60};
	uint64_t at = T0 + FIRST_WORK + p * PERIOD + k * 2 * MS;

	return (struct kernel){at, at + 2 * MS, sm[k], tensor[k]};
}

/* The other process's kernels: 1 ms into every other_gaps-th gap of device 0. */
static void make_other(struct gen *g)
{
	uint64_t p;

	if (!g->o.other_gaps)
		return;
	g->other = calloc(g->nperiods + 1, sizeof(*g->other));
	if (!g->other)
		die("calloc");
	for (p = g->o.other_gaps - 1; p + 1 < g->nperiods; p += g->o.other_gaps) {
		uint64_t at = a_kernel(p, 2).t1 + MS;

		g->other[g->nother++] = (struct kernel){at, at + 2 * MS, 40, 0};
	}
}

static double overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? (double)(hi - lo) : 0;
}

/* SM Active, tensor and DRAM shares (0..1 of the sample) over [a, b) of a device. */
static void activity(const struct gen *g, unsigned device, uint64_t a, uint64_t b, double *sm,
		     double *tensor, double *busy)
{
	uint64_t p = a > T0 + FIRST_WORK ? (a - T0 - FIRST_WORK) / PERIOD : 0, q;
	unsigned k;
	size_t i;

	*sm = *tensor = *busy = 0;
	for (q = p ? p - 1 : 0; q <= p + 1 && q < g->nperiods; q++)
		for (k = 0; k < 3; k++) {
			struct kernel x = a_kernel(q, k);
			double f = overlap(a, b, x.t0, x.t1) / (double)(b - a);

			*sm += f * x.sm;
			*tensor += f * x.tensor;
			*busy += f;
		}
	for (i = 0; device == 0 && i < g->nother; i++) {
		double f = overlap(a, b, g->other[i].t0, g->other[i].t1) / (double)(b - a);

		*sm += f * g->other[i].sm;
		*busy += f;
	}
	*sm = *sm > 100 ? 100 : *sm;
	*busy = *busy > 1 ? 1 : *busy;
}

/* Metric m's value over [a, b) of a device, in its unit. */
static double metric_value(const struct gen *g, unsigned device, unsigned m, uint64_t a, uint64_t b)
{
	const char *n = g->m[m].name;
	double sm, tensor, busy;

	activity(g, device, a, b, &sm, &tensor, &busy);
	if (strstr(n, "sm__cycles_active"))
		return sm;
	if (strstr(n, "sm__inst_executed"))
		return sm / 2;
	if (strstr(n, "tensor"))
		return tensor;
	if (strstr(n, "sm__warps_active"))
		return sm * 0.8;
	if (strstr(n, "dram__throughput"))
		return 40 * busy;
	if (strstr(n, "dram__bytes_read"))
		return 1.92e12 * busy;
	if (strstr(n, "dram__bytes_write"))
		return 0.96e12 * busy;
	if (strstr(n, "gr__cycles_active"))
		return sm + 0.12 > 100 ? 100 : sm + 0.12;
	if (strstr(n, "gpc__cycles_elapsed"))
		return 1.98e9;
	if (strstr(n, "pcie"))
		return 1e6; /* a trickle, idle or not */
	return 0;
}

static int64_t scaled(double v, unsigned scale)
{
	return (int64_t)llround(v * pow(10, scale));
}

static bool in_metric_gap(const struct gen *g, uint64_t t)
{
	return g->o.mgap_t1 > g->o.mgap_t0 && t >= T0 + g->o.mgap_t0 && t < T0 + g->o.mgap_t1;
}

/* A batch of samples of one device: each metric's records after another (as the collector). */
struct batch {
	uint64_t st[BATCH], en[BATCH];
	uint32_t flags[BATCH], num[BATCH];
	size_t n;
};

static void keep_values(struct gen *g, unsigned d, unsigned m, const struct tally_record *r,
			size_t n)
{
	size_t i;

	if (!(g->val[d][m] = realloc(g->val[d][m], (g->ns[d] + n) * sizeof(int64_t))))
		die("realloc");
	for (i = 0; i < n; i++)
		g->val[d][m][g->ns[d] + i] = r[i].metric_value;
}

static void keep_times(struct gen *g, unsigned d, const struct batch *b)
{
	g->st[d] = realloc(g->st[d], (g->ns[d] + b->n) * sizeof(uint64_t));
	g->en[d] = realloc(g->en[d], (g->ns[d] + b->n) * sizeof(uint64_t));
	if (!g->st[d] || !g->en[d])
		die("realloc");
	memcpy(g->st[d] + g->ns[d], b->st, b->n * sizeof(uint64_t));
	memcpy(g->en[d] + g->ns[d], b->en, b->n * sizeof(uint64_t));
	g->ns[d] += b->n;
}

static void flush_batch(struct out *o, struct gen *g, unsigned d, const uint32_t *names,
			struct batch *b)
{
	static struct tally_record r[BATCH];
	unsigned m;
	size_t i;

	for (m = 0; m < g->nm && b->n; m++) {
		for (i = 0; i < b->n; i++)
			r[i] = (struct tally_record){
			    .kind = TALLY_KIND_GPU_METRIC,
			    .start = b->st[i],
			    .end = b->en[i],
			    .device_id = d,
			    .name_id = names[m],
			    .subkind = g->m[m].scale,
			    .correlation_id = b->num[i],
			    .value = b->flags[i],
			    .metric_value =
				scaled(metric_value(g, d, m, b->st[i], b->en[i]), g->m[m].scale)};
		records(o, r, b->n);
		if (g->o.expect)
			keep_values(g, d, m, r, b->n);
	}
	if (g->o.expect)
		keep_times(g, d, b);
	o->l.v[TALLY_C_METRIC_WRITTEN] += b->n;
	o->l.v[TALLY_C_METRIC_DECODED] += b->n;
	b->n = 0;
}

/* The collector's LOSS entry for a gap in the samples: exactly the unsampled time. */
static void metric_gap(struct out *o, uint64_t t0, uint64_t t1)
{
	tally_loss_put(&o->b, t0, t1, TALLY_C_METRIC_GAPS, 1);
	chunk(o, TALLY_CHUNK_LOSS, 0);
	o->l.v[TALLY_C_METRIC_GAPS]++;
	o->l.v[TALLY_C_METRIC_GAP_NS] += t1 - t0;
}

/* The samples of one device, from 1 ms after the start to 1 ms before the end. */
static void device_samples(struct out *o, struct gen *g, unsigned d, const uint32_t *names)
{
	static struct batch b;
	uint64_t t, end = trace_end(g) - MS, prev_end = 0;
	uint32_t number = 1; /* the first sample, taken and left out */

	o->l.v[TALLY_C_METRIC_SKIPPED]++;
	o->l.v[TALLY_C_METRIC_DECODED]++;
	b.n = 0;
	for (t = T0 + MS; t + g->interval <= end; t += g->interval) {
		number++;
		if (in_metric_gap(g, t))
			continue;
		b.flags[b.n] = prev_end && t > prev_end ? TALLY_METRIC_AFTER_GAP : 0;
		if (b.flags[b.n])
			metric_gap(o, prev_end, t);
		b.st[b.n] = t;
		b.en[b.n] = prev_end = t + g->interval;
		b.num[b.n++] = number;
		if (b.n == BATCH)
			flush_batch(o, g, d, names, &b);
	}
	flush_batch(o, g, d, names, &b);
}

static struct tally_record kernel_rec(const struct kernel *k, unsigned device, uint32_t name,
				      uint32_t corr, uint32_t stream)
{
	return (struct tally_record){.kind = TALLY_KIND_KERNEL,
				     .start = k->t0,
				     .end = k->t1,
				     .device_id = device,
				     .name_id = name,
				     .correlation_id = corr,
				     .context_id = 1,
				     .stream_id = stream,
				     .grid = {64, 1, 1},
				     .block = {256, 1, 1}};
}

static struct tally_record range_rec(uint64_t t0, uint64_t t1, uint32_t name)
{
	return (struct tally_record){.kind = TALLY_KIND_NVTX_RANGE,
				     .start = t0,
				     .end = t1,
				     .name_id = name,
				     .process_id = 4242,
				     .thread_id = 1};
}

static void a_work(struct out *o, const struct gen *g)
{
	static const char *const knames[] = {"gemm_a", "gemm_b", "hmma_c"};
	uint32_t kn[3], step = string(o, "step"), compute = string(o, "compute"), corr = 1;
	struct tally_record *k = calloc(3 * g->nperiods + 1, sizeof(*k));
	struct tally_record *rg = calloc(2 * g->nperiods + 1, sizeof(*rg));
	uint64_t p;
	unsigned d, i;

	if (!k || !rg)
		die("calloc");
	for (i = 0; i < 3; i++)
		kn[i] = string(o, knames[i]);
	for (d = 0; d < g->o.devices; d++) {
		for (p = 0; p < g->nperiods; p++)
			for (i = 0; i < 3; i++) {
				struct kernel x = a_kernel(p, i);

				k[p * 3 + i] = kernel_rec(&x, d, kn[i], corr++, 7);
			}
		records(o, k, 3 * g->nperiods);
	}
	for (p = 0; p < g->nperiods; p++) {
		struct kernel first = a_kernel(p, 0), third = a_kernel(p, 2);

		rg[2 * p] = range_rec(first.t0, first.t0 + PERIOD, step);
		rg[2 * p + 1] = range_rec(first.t0, third.t1, compute);
	}
	records(o, rg, 2 * g->nperiods);
	free(k);
	free(rg);
}

/* --late-launches: the recorded launches of device 0 (its correlation ids are the first 3 per
 * period, a_work's), 1 ms into the gap before each kernel. */
static void late_launches(struct out *o, const struct gen *g)
{
	uint32_t name = string(o, "cudaLaunchKernel");
	struct tally_record *r = calloc(g->nperiods + 1, sizeof(*r));
	size_t n = 0;
	uint64_t p;

	if (!r)
		die("calloc");
	for (p = 1; p < g->nperiods; p++) {
		uint64_t at = a_kernel(p - 1, 2).t1 + MS;

		if (p != 1 && p % 2)
			continue;
		r[n++] = (struct tally_record){.kind = TALLY_KIND_RUNTIME,
					       .start = at,
					       .end = at + MS / 10,
					       .correlation_id = (uint32_t)(p * 3 + 1),
					       .thread_id = 4242,
					       .process_id = 4242,
					       .cbid = 211, /* cudaLaunchKernel_v7000 */
					       .name_id = name,
					       .flags = TALLY_REC_LAUNCH};
	}
	records(o, r, n);
	free(r);
}

/* --host: one thread on the CPU in compute (/work/train.py:20), a sample every 1 ms from 0.5 ms. */
static void host_samples(struct out *o, const struct gen *g)
{
	struct tally_pending_table frames = {0}, stacks = {0};
	uint64_t n = (trace_end(g) - T0 - MS / 2) / MS + 1, i;
	struct tally_record *r = calloc(n, sizeof(*r));
	uint32_t f, stack;

	if (!r)
		die("calloc");
	f = tally_frame_put(&frames, TALLY_FRAME_PYTHON, 20, 0, "/work/train.py", 14, "compute", 7);
	stack = tally_stack_put(&stacks, &f, 1);
	tally_buf_reset(&o->b);
	if (tally_pending_take(&frames, &o->b))
		chunk(o, TALLY_CHUNK_FRAMES, 0);
	tally_buf_reset(&o->b);
	if (tally_pending_take(&stacks, &o->b))
		chunk(o, TALLY_CHUNK_STACKS, 0);
	tally_pending_fini(&frames);
	tally_pending_fini(&stacks);
	for (i = 0; i < n; i++)
		r[i] = (struct tally_record){.kind = TALLY_KIND_CPU_SAMPLE,
					     .start = T0 + MS / 2 + i * MS,
					     .end = T0 + MS / 2 + i * MS,
					     .thread_id = 4242,
					     .process_id = 4242,
					     .subkind = TALLY_SAMPLE_PYTHON,
					     .value = TALLY_THREAD_ON_CPU,
					     .stack_id = stack};
	records(o, r, n);
	o->l.v[TALLY_C_SAMPLES_TAKEN] += n;
	free(r);
}

static void write_a(struct gen *g)
{
	struct out o;
	uint32_t names[MAXM];
	unsigned d, m;

	open_out(&o, g->o.out);
	session(&o, 4242, g, true);
	devices(&o, g, g->o.devices);
	for (d = 0; d < g->o.devices; d++)
		gpu_metrics_chunk(&o, g, d, TALLY_GM_SAMPLED);
	a_work(&o, g);
	if (g->o.late_launches)
		late_launches(&o, g);
	if (g->o.host)
		host_samples(&o, g);
	for (m = 0; m < g->nm; m++)
		names[m] = string(&o, g->m[m].name);
	for (d = 0; d < g->o.devices; d++)
		device_samples(&o, g, d, names);
	o.l.v[TALLY_C_METRIC_DEVICES] = g->o.devices;
	final_ledger(&o, trace_end(g));
	close_out(&o);
}

static void write_b(struct gen *g)
{
	struct out o;
	struct tally_record *k = calloc(g->nother + 1, sizeof(*k));
	uint32_t name;
	size_t i;

	if (!k)
		die("calloc");
	open_out(&o, g->o.second);
	session(&o, 4343, g, false);
	devices(&o, g, 1);
	gpu_metrics_chunk(&o, g, 0, TALLY_GM_ELSEWHERE);
	name = string(&o, "other_work");
	for (i = 0; i < g->nother; i++)
		k[i] = kernel_rec(&g->other[i], 0, name, (uint32_t)i + 1, 13);
	records(&o, k, g->nother);
	final_ledger(&o, trace_end(g));
	close_out(&o);
	free(k);
}

/* ---- what the readers must find (--expect) ------------------------------------------------ */

struct wv {
	int64_t v;
	uint64_t w;
};

static int by_value(const void *a, const void *b)
{
	const struct wv *x = a, *y = b;

	return x->v < y->v ? -1 : x->v > y->v;
}

/* The weighted quantile: the first value by which more than q of the weight is seen. */
static double quantile(const struct wv *s, size_t n, uint64_t total, double q, double unit)
{
	uint64_t target = (uint64_t)(q * (double)total), seen = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		seen += s[i].w;
		if (seen > target)
			return (double)s[i].v / unit;
	}
	return n ? (double)s[n - 1].v / unit : 0;
}

/* One metric over the samples of device d that window() weighs (0: not at all). */
typedef uint64_t (*weigh_fn)(const struct gen *g, unsigned d, size_t i, const void *ctx);

static uint64_t whole(const struct gen *g, unsigned d, size_t i, const void *ctx)
{
	(void)ctx;
	return g->en[d][i] - g->st[d][i];
}

static void metric_json(FILE *f, const struct gen *g, unsigned d, unsigned m, weigh_fn weigh,
			const void *ctx, bool quantiles)
{
	struct wv *s = calloc(g->ns[d] + 1, sizeof(*s));
	double unit = pow(10, g->m[m].scale), sum = 0, thr;
	uint64_t total = 0, above = 0, samples = 0, first = UINT64_MAX, last = 0;
	int64_t max = INT64_MIN, min = INT64_MAX;
	size_t i, n = 0;

	if (!s)
		die("calloc");
	for (i = 0; i < g->ns[d]; i++) {
		uint64_t w = weigh(g, d, i, ctx);

		if (!w)
			continue;
		s[n++] = (struct wv){g->val[d][m][i], w};
		sum += (double)g->val[d][m][i] * (double)w;
		total += w;
		samples++;
		first = g->st[d][i] < first ? g->st[d][i] : first;
		last = g->en[d][i] > last ? g->en[d][i] : last;
		max = g->val[d][m][i] > max ? g->val[d][m][i] : max;
		min = g->val[d][m][i] < min ? g->val[d][m][i] : min;
	}
	fprintf(f,
		"\"%s\": {\"samples\": %" PRIu64 ", \"covered_ns\": %" PRIu64
		", \"span_ns\": %" PRIu64,
		g->m[m].name, samples, total, samples ? last - first : 0);
	if (total) {
		thr = strcmp(g->m[m].unit, "%") == 0 ? 80 * unit : 0.8 * (double)max;
		for (i = 0; i < n; i++)
			above += (double)s[i].v >= thr ? s[i].w : 0;
		qsort(s, n, sizeof(*s), by_value);
		fprintf(f, ", \"mean\": %.17g, \"min\": %.17g, \"max\": %.17g, \"above\": %.17g",
			sum / (double)total / unit, (double)min / unit, (double)max / unit,
			(double)above / (double)total);
		if (quantiles)
			fprintf(f, ", \"p50\": %.17g, \"p90\": %.17g",
				quantile(s, n, total, 0.5, unit), quantile(s, n, total, 0.9, unit));
	}
	fputc('}', f);
	free(s);
}

struct span {
	uint64_t t0, t1;
	bool contain;
};

static uint64_t in_span(const struct gen *g, unsigned d, size_t i, const void *ctx)
{
	const struct span *w = ctx;

	if (w->contain)
		return g->st[d][i] >= w->t0 && g->en[d][i] <= w->t1 ? g->en[d][i] - g->st[d][i] : 0;
	return (uint64_t)overlap(g->st[d][i], g->en[d][i], w->t0, w->t1);
}

/* Several disjoint spans, overlap-weighted (NVTX ranges of one name, busy time). */
struct spans {
	const struct span *v;
	size_t n;
};

static uint64_t in_spans(const struct gen *g, unsigned d, size_t i, const void *ctx)
{
	const struct spans *w = ctx;
	uint64_t sum = 0;
	size_t k;

	for (k = 0; k < w->n; k++) /* small: the tests keep --seconds short with --expect */
		sum += in_span(g, d, i, &w->v[k]);
	return sum;
}

/* A's device gaps of d: between the third kernel of a period and the first of the next; the
 * samples wholly inside, one interval in from each end. */
static void gaps_json(FILE *f, const struct gen *g, unsigned d)
{
	uint64_t p;

	fputs("\"gaps\": [", f);
	for (p = 0; p + 1 < g->nperiods; p++) {
		struct span w = {a_kernel(p, 2).t1 + g->interval,
				 a_kernel(p + 1, 0).t0 - g->interval, true};

		fprintf(f, "%s{\"start_ns\": %" PRIu64 ", \"sm\": {", p ? ", " : "",
			a_kernel(p, 2).t1);
		metric_json(f, g, d, 0, in_span, &w, false);
		fputs("}}", f);
	}
	fputs("]", f);
}

/* The other process's device gaps (device 0), with A's samples (the same GPU). */
static void other_gaps_json(FILE *f, const struct gen *g)
{
	size_t i;

	fputs("\"other_gaps\": [", f);
	for (i = 0; i + 1 < g->nother; i++) {
		struct span w = {g->other[i].t1 + g->interval, g->other[i + 1].t0 - g->interval,
				 true};

		fprintf(f, "%s{\"start_ns\": %" PRIu64 ", \"sm\": {", i ? ", " : "",
			g->other[i].t1);
		metric_json(f, g, 0, 0, in_span, &w, false);
		fputs("}}", f);
	}
	fputs("]", f);
}

static void ranges_json(FILE *f, const struct gen *g, unsigned d, bool compute)
{
	struct span *v = calloc(g->nperiods + 1, sizeof(*v));
	struct spans w = {v, g->nperiods};
	uint64_t p;
	unsigned m;

	if (!v)
		die("calloc");
	for (p = 0; p < g->nperiods; p++)
		v[p] =
		    (struct span){a_kernel(p, 0).t0,
				  compute ? a_kernel(p, 2).t1 : a_kernel(p, 0).t0 + PERIOD, false};
	fprintf(f, "\"%s\": {", compute ? ":compute" : ":step");
	for (m = 0; m < g->nm; m++) {
		fputs(m ? ", " : "", f);
		metric_json(f, g, d, m, in_spans, &w, true);
	}
	fputs("}", f);
	free(v);
}

static void write_expect(const struct gen *g)
{
	FILE *f = fopen(g->o.expect, "w");
	unsigned d, m;

	if (!f)
		die(g->o.expect);
	fprintf(f, "{\"interval_ns\": %" PRIu64 ", \"periods\": %" PRIu64 ", ", g->interval,
		g->nperiods);
	other_gaps_json(f, g);
	fputs(", \"devices\": {", f);
	for (d = 0; d < g->o.devices; d++) {
		fprintf(f, "%s\"%u\": {\"metrics\": {", d ? ", " : "", d);
		for (m = 0; m < g->nm; m++) {
			fputs(m ? ", " : "", f);
			metric_json(f, g, d, m, whole, NULL, true);
		}
		fputs("}, \"compute\": {", f);
		ranges_json(f, g, d, true);
		fputs("}, \"step\": {", f);
		ranges_json(f, g, d, false);
		fputs("}, ", f);
		gaps_json(f, g, d);
		fputs("}", f);
	}
	fputs("}}\n", f);
	if (fclose(f) != 0)
		die(g->o.expect);
}

static void gen_free(struct gen *g)
{
	unsigned d, m;

	for (d = 0; d < MAXDEV; d++) {
		for (m = 0; m < MAXM; m++)
			free(g->val[d][m]);
		free(g->st[d]);
		free(g->en[d]);
	}
	free(g->other);
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void)
{
	fputs("usage: tally-metricsgen -o A.tally [--second B.tally] [--seconds S] [--hz H]\n"
	      "  [--devices N] [--metrics N] [--other-gaps K] [--metric-gap MS:LEN] [--host]\n"
	      "  [--late-launches] [--expect FILE.json]\n",
	      stderr);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
	    {"second", 1, 0, 's'},  {"seconds", 1, 0, 'S'},
	    {"hz", 1, 0, 'h'},	    {"devices", 1, 0, 'd'},
	    {"metrics", 1, 0, 'm'}, {"other-gaps", 1, 0, 'k'},
	    {"expect", 1, 0, 'e'},  {"metric-gap", 1, 0, 'g'},
	    {"host", 0, 0, 'H'},    {"late-launches", 0, 0, 'L'},
	    {0, 0, 0, 0},
	};
	double a, b;
	int c;

	*o = (struct opts){.seconds = 1, .hz = 10000, .devices = 1, .nmetrics = MAXM};
	while ((c = getopt_long(argc, argv, "o:", longs, NULL)) != -1) {
		if (c == 'o')
			o->out = optarg;
		else if (c == 's')
			o->second = optarg;
		else if (c == 'S')
			o->seconds = atof(optarg);
		else if (c == 'h')
			o->hz = (unsigned)atoi(optarg);
		else if (c == 'd')
			o->devices = (unsigned)atoi(optarg);
		else if (c == 'm')
			o->nmetrics = (unsigned)atoi(optarg);
		else if (c == 'k')
			o->other_gaps = (unsigned)atoi(optarg);
		else if (c == 'e')
			o->expect = optarg;
		else if (c == 'H')
			o->host = true;
		else if (c == 'L')
			o->late_launches = true;
		else if (c == 'g' && sscanf(optarg, "%lf:%lf", &a, &b) == 2) {
			o->mgap_t0 = (uint64_t)(a * MS);
			o->mgap_t1 = (uint64_t)((a + b) * MS);
		} else
			usage();
	}
	if (!o->out || !o->hz || 1000000000u % o->hz || !o->devices || o->devices > MAXDEV ||
	    o->seconds < 0.05 || (o->second && !o->other_gaps))
		usage();
}

int main(int argc, char **argv)
{
	struct gen g = {0};
	size_t i;

	parse(argc, argv, &g.o);
	for (i = 0; i < pm_default_count && g.nm < g.o.nmetrics && g.nm < MAXM; i++)
		if (strncmp(pm_default_set[i].name, "nvl", 3) != 0)
			g.m[g.nm++] = pm_default_set[i];
	g.interval = 1000000000u / g.o.hz;
	g.nperiods = (uint64_t)(g.o.seconds * 1e9 - FIRST_WORK - MS) / PERIOD;
	make_other(&g);
	write_a(&g);
	if (g.o.second)
		write_b(&g);
	if (g.o.expect)
		write_expect(&g);
	gen_free(&g);
	return 0;
}
