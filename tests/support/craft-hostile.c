/* SPDX-License-Identifier: MIT */
/*
 * Hostile traces for the readers' bounds (tests/cli/test-readers-bounded.sh, docs/scaling.md,
 * "What a hostile trace costs"): each is small, and each says in few bytes what once made a
 * reader's memory or output explode.  ARG (N) scales it; a reader must stay within a stated
 * multiple of the file's size, and doubling N may at most about double its cost.
 *
 *   metric-series N   N GPU_METRIC records, each of a series of its own (device i): the
 *                     columns count up by one, so the file is a few bytes per sample
 *   idle-why N        N/2 kernels with a 2 ms gap after each, and N/2 threads each in one
 *                     blocking call that spans the whole run: every gap has every thread
 *   name-rows N       N kernels and their N launches, all named by one 4 KiB name
 *   empty-stack N     N host samples on a call stack of no frame
 *   ranks-gaps N      N processes (sections), each with 8 kernels, gaps and GPU metrics
 *   tsum-sketch N     a summary (.tsum) whose N groups each come twice, their sketches at
 *                     the two ends of the range of values
 *   tsum-reasons N    a summary of N processes, each INCOMPLETE with 4 reasons
 *
 * Arithmetic at the edges (no ARG):
 *   tsum-wrap         a summary whose group appears twice with counts, totals and sketch
 *                     counts that pass 2^64 when added
 *   tsum-nan          a summary group whose sum of squares (the IEEE double) is NaN
 *   tsum-incomplete   a summary section judged INCOMPLETE that gives no reason
 *   metric-extremes   GPU metric samples that overlap for more than 2^64 ns in all, some of
 *                     INT64_MAX: their time and their value x time sums pass 64 and 127 bits
 *   step-extremes     two processes whose "step" ranges last 1 ns and 2^60 ns
 *   idle-span         two processes, each a GPU idle for 2^63 ns between two kernels: their
 *                     spans add past 2^64
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craft.h"
#include "gpumetrics.h"
#include "stacks.h"
#include "summary.h"
#include "verdict.h"

#define MS	      1000000ull
#define BATCH	      16384u
#define SM_ACTIVE     "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define KERN_SUM_WHAT 3	   /* cuda_gpu_kern_sum's index + 1 (docs/format.md §16) */
#define SKETCH_LAST   7423 /* the last bucket of src/stats/sketch.h: (64 - 7 + 1) * 128 - 1 */

static void sm_active_chunk(struct craft *c, uint32_t device)
{
	struct tally_metric_desc set[] = {{3, SM_ACTIVE, "%", "SM Active"}};
	struct tally_gpu_metrics g = {.device = device,
				      .state = TALLY_GM_SAMPLED,
				      .chip = "GH100",
				      .interval = 100000,
				      .trigger = TALLY_GM_TRIGGER_TIME,
				      .passes = 1,
				      .metrics = set,
				      .nmetrics = 1};

	metrics_chunk(c, &g);
}

/* n records made by make(i, &r), in chunks of BATCH. */
static void batched(struct craft *c, size_t n, void (*make)(size_t i, struct tally_record *r))
{
	static struct tally_record r[BATCH];
	size_t i, b;

	for (i = 0; i < n; i += b) {
		for (b = 0; b < BATCH && i + b < n; b++)
			make(i + b, &r[b]);
		records(c, r, b);
	}
}

/* ---- metric-series -------------------------------------------------------------------------- */

static void series_sample(size_t i, struct tally_record *r)
{
	*r = metric_rec(T0 + 1000 + i * 100000, 100000, (uint32_t)i, 1, 3, 50000, (uint32_t)i);
}

static void metric_series(struct craft *c)
{
	const char *s[] = {SM_ACTIVE};
	size_t len[] = {strlen(SM_ACTIVE)};

	session(c, "metric-series", 13);
	strings(c, 1, s, len, 1);
	sm_active_chunk(c, 0);
	batched(c, count_arg(), series_sample);
	ledger(c, true, NULL);
}

/* ---- idle-why ------------------------------------------------------------------------------- */

static unsigned idle_half;

/* kernel i runs 1 ms from 3i ms; its launch 20 us before it */
static void idle_launch(size_t i, struct tally_record *r)
{
	*r = launch_rec(T0 + 1000 + i * 3 * MS - 20000, 2, (uint32_t)i + 1);
}

static void idle_kernel(size_t i, struct tally_record *r)
{
	*r = kernel_rec(T0 + 1000 + i * 3 * MS, MS, 1, (uint32_t)i + 1);
}

/* thread 5000 + i blocks from the start to the end */
static void idle_blocked(size_t i, struct tally_record *r)
{
	*r = host_rec(TALLY_KIND_OSRT, T0, (uint64_t)idle_half * 3 * MS + 2 * MS,
		      5000 + (uint32_t)i);
	r->cbid = TALLY_OSRT_FUTEX;
}

static void idle_why(struct craft *c)
{
	const char *s[] = {"_Z4workv", "cudaLaunchKernel"};
	size_t len[] = {8, 16};

	idle_half = count_arg() / 2 ? count_arg() / 2 : 1;
	session(c, "idle-why", 8);
	strings(c, 1, s, len, 2);
	batched(c, idle_half, idle_launch);
	batched(c, idle_half, idle_kernel);
	batched(c, idle_half, idle_blocked);
	ledger(c, true, NULL);
}

/* ---- name-rows ------------------------------------------------------------------------------ */

static uint32_t name_one(unsigned i)
{
	(void)i;
	return 1;
}

static void name_rows(struct craft *c)
{
	static char name[4096];
	const char *s[] = {name};
	size_t len[] = {sizeof(name)};

	memset(name, 'k', sizeof(name));
	memcpy(name, "_Z4long", 7);
	session(c, "name-rows", 9);
	strings(c, 1, s, len, 1);
	kernels_batched(c, count_arg(), name_one, NULL);
	ledger(c, true, NULL);
}

/* ---- empty-stack ---------------------------------------------------------------------------- */

static void empty_sample(size_t i, struct tally_record *r)
{
	*r = host_rec(TALLY_KIND_CPU_SAMPLE, T0 + 1000 + i * 1000000, 0, 4242);
	r->subkind = TALLY_SAMPLE_PERF;
	r->value = TALLY_THREAD_ON_CPU;
	r->stack_id = 1;
}

static void empty_stack(struct craft *c)
{
	struct tally_pending_table stacks = {0};

	session(c, "empty-stack", 11);
	tally_stack_put(&stacks, NULL, 0);
	pending_chunk(c, TALLY_CHUNK_STACKS, &stacks);
	tally_buf_reset(&c->b);
	thread_entry(&c->b, 4242, 0x7f0000001000ull, TALLY_THREADF_MAIN, "main");
	chunk(c, TALLY_CHUNK_THREADS, 0, &c->b);
	batched(c, count_arg(), empty_sample);
	ledger(c, true, NULL);
}

/* ---- ranks-gaps ----------------------------------------------------------------------------- */

/* 8 kernels of 1 ms, 2 ms apart; SM Active samples every 100 us over the 16 ms */
static void rank_kernel(size_t i, struct tally_record *r)
{
	*r = kernel_rec(T0 + 1000 + i * 2 * MS, MS, 1, (uint32_t)i + 1);
}

static void rank_sample(size_t i, struct tally_record *r)
{
	*r = metric_rec(T0 + i * 100000, 100000, 0, 2, 3, i % 20 < 10 ? 90000 : 0, (uint32_t)i);
}

static void ranks_gaps(struct craft *c)
{
	const char *s[] = {"_Z4workv", SM_ACTIVE};
	size_t len[] = {8, strlen(SM_ACTIVE)};
	unsigned n = count_arg(), i;
	char rank[32];

	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "RANK=%u", i);
		session_rank = rank;
		memset(c->by_kind, 0, sizeof(c->by_kind));
		session(c, "ranks-gaps", 10);
		strings(c, 1, s, len, 2);
		sm_active_chunk(c, 0);
		batched(c, 8, rank_kernel);
		batched(c, 160, rank_sample);
		ledger(c, true, NULL);
	}
}

/* ---- summaries ------------------------------------------------------------------------------ */

/* A summary section: its SESSION and its SECTION part, COMPLETE or with reasons reasons. */
static void summary_section(struct craft *c, unsigned reasons, bool complete)
{
	struct tally_buf r = {0};
	unsigned i;

	tally_buf_reset(&c->b);
	tally_kv_str(&c->b, TALLY_SK_WRITER, "tally-craft");
	tally_kv_str(&c->b, TALLY_SK_HOST, session_host);
	tally_kv_str(&c->b, TALLY_SK_RANK, session_rank);
	tally_kv_uint(&c->b, TALLY_SK_PID, 4242);
	tally_kv_uint(&c->b, TALLY_SK_START_CUPTI, T0);
	tally_kv_uint(&c->b, TALLY_SK_START_REALTIME, T0);
	tally_kv_uint(&c->b, TALLY_SK_MERGED, 1);
	tally_kv_sint(&c->b, TALLY_SK_MERGE_OFFSET, 0);
	tally_kv_uint(&c->b, TALLY_SK_SUMMARY, 1);
	chunk(c, TALLY_CHUNK_SESSION, 0, &c->b);
	tally_buf_reset(&c->b);
	tally_buf_put_varint(&c->b, TALLY_SUMMARY_SECTION);
	tally_kv_uint(&c->b, TALLY_SUMK_COMPLETE, complete);
	tally_kv_uint(&c->b, TALLY_SUMK_T_MIN, T0);
	tally_kv_uint(&c->b, TALLY_SUMK_T_MAX, T0 + MS);
	for (i = 0; i < reasons; i++) {
		tally_buf_reset(&r);
		tally_buf_put_varint(&r, TALLY_R_LOSS);
		tally_buf_put_varint(&r, TALLY_C_DROPPED_CUPTI);
		tally_buf_put_varint(&r, i + 1);
		tally_buf_put_str(&r, "CUPTI dropped records");
		tally_buf_put_str(&r, "a bigger pool");
		tally_kv_bytes(&c->b, TALLY_SUMK_REASON, r.data, r.len);
	}
	chunk(c, TALLY_CHUNK_SUMMARY, 0, &c->b);
	tally_buf_fini(&r);
}

struct tsum_group {
	const char *name;
	uint64_t n, total, min, max;
	uint64_t sq_lo, sq_hi;
	double lsq;
	uint32_t lo; /* the sketch: one bucket, lo, of count */
	uint64_t count;
};

static void tsum_group(struct tally_buf *b, const struct tsum_group *g)
{
	uint64_t bits;
	int k;

	memcpy(&bits, &g->lsq, sizeof(bits));
	tally_buf_put_str(b, g->name);
	tally_buf_put_varint(b, 0); /* style */
	for (k = 0; k < 6; k++)
		tally_buf_put_varint(b, tally_zigzag(1));
	tally_buf_put_varint(b, g->n);
	tally_buf_put_varint(b, g->total);
	tally_buf_put_varint(b, g->min);
	tally_buf_put_varint(b, g->max);
	tally_buf_put_varint(b, g->sq_lo);
	tally_buf_put_varint(b, g->sq_hi);
	tally_buf_put_varint(b, bits);
	tally_buf_put_varint(b, g->lo);
	tally_buf_put_varint(b, 1);
	tally_buf_put_varint(b, g->count);
}

/* A STATS chunk of cuda_gpu_kern_sum: the groups g[0..n). */
static void tsum_kernels(struct craft *c, const struct tsum_group *g, size_t n)
{
	size_t i;

	tally_buf_reset(&c->b);
	tally_buf_put_varint(&c->b, TALLY_SUMMARY_STATS);
	tally_buf_put_varint(&c->b, KERN_SUM_WHAT);
	for (i = 0; i < n; i++)
		tsum_group(&c->b, &g[i]);
	chunk(c, TALLY_CHUNK_SUMMARY, 0, &c->b);
}

static void tsum_sketch(struct craft *c)
{
	unsigned n = count_arg(), i, end;
	struct tsum_group *g = calloc(n, sizeof(*g));
	char *names = malloc((size_t)n * 16);

	if (!g || !names)
		die("calloc");
	summary_section(c, 0, true);
	for (end = 0; end < 2; end++) {
		for (i = 0; i < n; i++) {
			uint64_t v = end ? 1ull << 62 : 1;

			snprintf(names + (size_t)i * 16, 16, "k%u", i);
			g[i] = (struct tsum_group){
			    names + (size_t)i * 16, 1, v, v, v, 0, 0, (double)v * (double)v,
			    end ? SKETCH_LAST : 1,  1};
		}
		tsum_kernels(c, g, n);
	}
	free(g);
	free(names);
}

static void tsum_reasons(struct craft *c)
{
	unsigned n = count_arg(), i;
	char rank[32];

	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "RANK=%u", i);
		session_rank = rank;
		summary_section(c, 4, false);
	}
}

static void tsum_wrap(struct craft *c)
{
	const uint64_t big = (1ull << 63) + 5;
	struct tsum_group g = {"_Z4wrapv", big, big, 1, 100, 0, 0, 1e40, 100, big};

	summary_section(c, 0, true);
	tsum_kernels(c, &g, 1);
	tsum_kernels(c, &g, 1);
}

static void tsum_nan(struct craft *c)
{
	/* three values 2^32 .. 2^33: the sum of squares is the double's, and it says NaN */
	struct tsum_group g = {
	    "_Z3nanv", 3,   (1ull << 32) * 4 + 5, 1ull << 32, (1ull << 33) + 5, 0,
	    0,	       NAN, (32 - 7 + 1) * 128,	  3};

	summary_section(c, 0, true);
	tsum_kernels(c, &g, 1);
}

static void tsum_incomplete(struct craft *c)
{
	summary_section(c, 0, false);
}

/* ---- arithmetic in traces ------------------------------------------------------------------- */

static void metric_extremes(struct craft *c)
{
	const char *s[] = {SM_ACTIVE};
	size_t len[] = {strlen(SM_ACTIVE)};
	struct tally_record r[5];

	session(c, "metric-extremes", 15);
	strings(c, 1, s, len, 1);
	sm_active_chunk(c, 0);
	/* three samples of 1% over 2^63 ns each, overlapping: their time passes 2^64 */
	for (unsigned i = 0; i < 3; i++)
		r[i] = metric_rec(T0, 1ull << 63, 0, 1, 3, 1000, i + 1);
	/* INT64_MAX over 2^62 ns, twice: value x time passes 2^127 */
	r[3] = metric_rec(T0, 1ull << 62, 0, 1, 3, INT64_MAX, 4);
	r[4] = metric_rec(T0, 1ull << 62, 0, 1, 3, INT64_MAX, 5);
	records(c, r, 5);
	ledger(c, true, NULL);
}

static void step_range(struct craft *c, uint64_t at, uint64_t dur, unsigned steps)
{
	struct tally_record r[8];
	unsigned i;

	for (i = 0; i < steps; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].kind = TALLY_KIND_NVTX_RANGE;
		r[i].start = at + i * (dur + 1000);
		r[i].end = r[i].start + dur;
		r[i].name_id = 1;
		r[i].process_id = 4242;
		r[i].thread_id = 1;
	}
	records(c, r, steps);
}

/* rank 0's four steps last 1 ns, rank 1's 2^60 ns: a lead 2^60 times the slow one's median? */
static void step_extremes(struct craft *c)
{
	const char *s[] = {"step"};
	size_t len[] = {4};
	unsigned i;

	for (i = 0; i < 2; i++) {
		session_rank = i ? "RANK=1" : "RANK=0";
		memset(c->by_kind, 0, sizeof(c->by_kind));
		session(c, "step-extremes", 13);
		strings(c, 1, s, len, 1);
		step_range(c, T0 + 1000, i ? 1ull << 60 : 1, 4);
		ledger(c, true, NULL);
	}
}

/* two processes, each a device span past 2^63 ns: two kernels 2^63 + 2,636 ns apart */
static void idle_span(struct craft *c)
{
	const char *s[] = {"_Z4workv", "cudaLaunchKernel"};
	size_t len[] = {8, 16};
	struct tally_record k[2], a[2];
	unsigned i;

	for (i = 0; i < 2; i++) {
		session_rank = i ? "RANK=1" : "RANK=0";
		memset(c->by_kind, 0, sizeof(c->by_kind));
		session(c, "idle-span", 9);
		strings(c, 1, s, len, 2);
		a[0] = launch_rec(T0 + 1000, 2, 1);
		k[0] = kernel_rec(T0 + 5000, 1000, 1, 1);
		a[1] = launch_rec(T0 + 5000 + (1ull << 63), 2, 2);
		k[1] = kernel_rec(T0 + 5000 + (1ull << 63) + 2636, 1000, 1, 2);
		records(c, a, 2);
		records(c, k, 2);
		ledger(c, true, NULL);
	}
}

const struct craft_case craft_hostile_cases[] = {
    {"metric-series", metric_series},
    {"idle-why", idle_why},
    {"name-rows", name_rows},
    {"empty-stack", empty_stack},
    {"ranks-gaps", ranks_gaps},
    {"tsum-sketch", tsum_sketch},
    {"tsum-reasons", tsum_reasons},
    {"tsum-wrap", tsum_wrap},
    {"tsum-nan", tsum_nan},
    {"tsum-incomplete", tsum_incomplete},
    {"metric-extremes", metric_extremes},
    {"step-extremes", step_extremes},
    {"idle-span", idle_span},
};
const size_t craft_hostile_count = sizeof(craft_hostile_cases) / sizeof(craft_hostile_cases[0]);
