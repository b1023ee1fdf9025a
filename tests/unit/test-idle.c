/* SPDX-License-Identifier: MIT */
/*
 * The idle classes of stats/idle.h on records built by hand: each rule of host wait, kernel wait
 * and other, --kernel-wait, a launch that was not recorded, the totals over every hole, the
 * listing threshold, and the holes of the largest class; the holes that followed a
 * synchronization; the unproven part as gpu_time_breakdown counts it; and each wording of the
 * diagnosis's cause (idle_cause).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "breakdown.h"
#include "idle.h"
#include "idlewhy.h"

struct fake {
	struct tally_file f;
	struct report_input in;
	struct tally_section s;
	struct report_section rs;
};

static void fake_init(struct fake *x)
{
	memset(x, 0, sizeof(*x));
	x->in.f = &x->f;
	x->s.has_final = true;
	x->rs.in = &x->in;
	x->rs.s = &x->s;
}

static struct tally_record kernel(uint64_t t0, uint64_t t1, uint32_t corr)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_KERNEL;
	r.start = t0;
	r.end = t1;
	r.correlation_id = corr;
	r.stream_id = 7;
	return r;
}

static struct tally_record launch(uint64_t t0, uint64_t dur, uint32_t corr)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_RUNTIME;
	r.flags = TALLY_REC_LAUNCH;
	r.start = t0;
	r.end = t0 + dur;
	r.correlation_id = corr;
	r.thread_id = 42;
	return r;
}

/* Kernel 1 runs [1000, 2000]; kernel 2 starts at 2000 + hole, launched at l2 for dur. */
static struct report_idle *two_kernels(struct fake *x, const struct report_idle_opts *o,
				       uint64_t hole, uint64_t l2, uint64_t dur, bool record_l2)
{
	struct report_idle *idle = report_idle_new(o);
	struct tally_record k[2] = {kernel(1000, 2000, 1), kernel(2000 + hole, 2100 + hole, 2)};
	struct tally_record a[2] = {launch(100, 500, 1), launch(l2, dur, 2)};

	assert_non_null(idle);
	assert_int_equal(report_idle_add(idle, &x->rs, a, record_l2 ? 2 : 1), 0);
	assert_int_equal(report_idle_add(idle, &x->rs, k, 2), 0);
	assert_int_equal(report_idle_section(idle, &x->rs), 0);
	return idle;
}

static enum idle_class only_class(struct report_idle *idle, uint64_t hole)
{
	size_t n;
	const struct report_idle_total *t = report_idle_totals(idle, &n);
	unsigned c, found = IDLE_CLASSES;

	assert_int_equal(n, 1);
	for (c = 0; c < IDLE_CLASSES; c++)
		if (t->holes[c]) {
			assert_int_equal(t->holes[c], 1);
			assert_int_equal(t->ns[c], hole);
			found = c;
		}
	assert_true(found < IDLE_CLASSES);
	return (enum idle_class)found;
}

/* The launch of the work after the hole began after the GPU went idle: host wait. */
static void host_wait(void **state)
{
	struct fake x;
	struct report_idle *idle;

	(void)state;
	fake_init(&x);
	idle = two_kernels(&x, NULL, 5000, 2001, 300, true);
	assert_int_equal(only_class(idle, 5000), IDLE_HOST_WAIT);
	report_idle_free(idle);
}

/* Launched before, and a hole shorter than that launch's call: kernel wait; longer: other. */
static void kernel_wait_and_other(void **state)
{
	struct fake x;
	struct report_idle *idle;

	(void)state;
	fake_init(&x);
	idle = two_kernels(&x, NULL, 1000, 1500, 3000, true);
	assert_int_equal(only_class(idle, 1000), IDLE_KERNEL_WAIT);
	report_idle_free(idle);
	idle = two_kernels(&x, NULL, 1000, 1500, 999, true);
	assert_int_equal(only_class(idle, 1000), IDLE_OTHER);
	report_idle_free(idle);
}

/* --kernel-wait replaces the launch's own cost as the threshold (HTA's fixed one). */
static void kernel_wait_option(void **state)
{
	struct report_idle_opts o = {.kernel_wait_ns = 2000};
	struct fake x;
	struct report_idle *idle;

	(void)state;
	fake_init(&x);
	idle = two_kernels(&x, &o, 1000, 1500, 10, true);
	assert_int_equal(only_class(idle, 1000), IDLE_KERNEL_WAIT);
	report_idle_free(idle);
	idle = two_kernels(&x, &o, 2000, 1500, 1000000, true);
	assert_int_equal(only_class(idle, 2000), IDLE_OTHER);
	report_idle_free(idle);
}

/* No record of the launching call: other, and the reason says so. */
static void launch_not_recorded(void **state)
{
	struct report_idle_opts o = {.list_min_ns = 1};
	struct fake x;
	struct report_idle *idle;
	const struct report_idle_gap *g;
	size_t n;

	(void)state;
	fake_init(&x);
	idle = two_kernels(&x, &o, 5000, 2001, 300, false);
	assert_int_equal(only_class(idle, 5000), IDLE_OTHER);
	g = report_idle_gaps(idle, &n);
	assert_int_equal(n, 1);
	assert_false(g->launch_known);
	assert_non_null(strstr(g->why, "not recorded"));
	report_idle_free(idle);
}

/*
 * Every hole counts in the totals; only those of list_min or more are listed; the largest
 * class's holes are handed out for the stacks behind it.  Kernels [0,1000], [1500,2000] (launched
 * at 100 for 2000 ns: kernel wait, 500 ns), [5000000,5001000] (launched at 4000000: host wait).
 */
static void totals_listing_largest(void **state)
{
	struct report_idle_opts o = {.list_min_ns = 1000000};
	struct fake x;
	struct report_idle *idle;
	struct tally_record k[3] = {kernel(0, 1000, 1), kernel(1500, 2000, 2),
				    kernel(5000000, 5001000, 3)};
	struct tally_record a[3] = {launch(0, 10, 1), launch(100, 2000, 2), launch(4000000, 50, 3)};
	const struct report_idle_total *t;
	const struct report_idle_gap *g;
	const struct report_idle_span *sp;
	size_t n;

	(void)state;
	fake_init(&x);
	idle = report_idle_new(&o);
	assert_int_equal(report_idle_add(idle, &x.rs, k, 3), 0);
	assert_int_equal(report_idle_add(idle, &x.rs, a, 3), 0);
	assert_int_equal(report_idle_section(idle, &x.rs), 0);
	t = report_idle_totals(idle, &n);
	assert_int_equal(n, 1);
	assert_int_equal(t->holes[IDLE_KERNEL_WAIT], 1);
	assert_int_equal(t->ns[IDLE_KERNEL_WAIT], 500);
	assert_int_equal(t->holes[IDLE_HOST_WAIT], 1);
	assert_int_equal(t->ns[IDLE_HOST_WAIT], 5000000 - 2000);
	assert_int_equal(t->unproven[IDLE_HOST_WAIT], 0);
	assert_int_equal(report_idle_largest(t), IDLE_HOST_WAIT);
	g = report_idle_gaps(idle, &n);
	assert_int_equal(n, 1); /* the 500 ns hole is not listed */
	assert_int_equal(g->cls, IDLE_HOST_WAIT);
	assert_int_equal(g->gap.t0, 2000);
	assert_int_equal(g->gap.t1, 5000000);
	assert_int_equal(g->launch_start, 4000000);
	sp = report_idle_largest_holes(idle, &n);
	assert_int_equal(n, 1);
	assert_int_equal(sp->t0, 2000);
	report_idle_free(idle);
}

/* A loss window over the hole: unproven, counted apart. */
static void unproven_hole(void **state)
{
	struct fake x;
	struct tally_window w = {
	    .t_begin = 2500, .t_end = 3000, .counter = TALLY_C_DROPPED_CUPTI, .count = 7};
	struct report_idle *idle;
	const struct report_idle_total *t;
	size_t n;

	(void)state;
	fake_init(&x);
	x.s.windows = &w;
	x.s.nwindows = 1;
	x.s.ledger.v[TALLY_C_DROPPED_CUPTI] = 7;
	idle = two_kernels(&x, NULL, 5000, 2001, 300, true);
	t = report_idle_totals(idle, &n);
	assert_int_equal(t->unproven[IDLE_HOST_WAIT], 5000);
	report_idle_free(idle);
}

static struct tally_record sample(uint64_t t, uint32_t tid, uint32_t stack, unsigned state)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_CPU_SAMPLE;
	r.start = r.end = t;
	r.thread_id = tid;
	r.subkind = TALLY_SAMPLE_PYTHON;
	r.value = state;
	r.stack_id = stack;
	return r;
}

/*
 * The host behind a hole: a 10 ms host-wait hole [2000, 10002000], the main thread (tid 7)
 * sampled every 1 ms from 1 ms on: 6 samples in sleep_between (line 30, waiting), then 4 in
 * compute (line 20, on CPU); one blocking call of 4 ms inside it.  gpu_idle_why's rows for the
 * thread, the breakdown's stacks, and the diagnosis's sentence.
 */
static void host_behind_a_hole(void **state)
{
	static struct tally_frame frames[3] = {
	    {0},
	    {.type = TALLY_FRAME_PYTHON,
	     .line = 30,
	     .file = "/w/train.py",
	     .func = "sleep_between"},
	    {.type = TALLY_FRAME_PYTHON, .line = 20, .file = "/w/train.py", .func = "compute"}};
	static uint32_t f1[] = {1}, f2[] = {2};
	static struct tally_stack stacks[3] = {{0}, {1, f1}, {1, f2}};
	static struct tally_thread threads[1] = {{.tid = 7,
						  .pthread_id = 0x7f000000002aull,
						  .flags = TALLY_THREADF_MAIN,
						  .name = "main"}};
	struct report_idle_opts o = {.list_min_ns = 1000000};
	struct tally_record k[2] = {kernel(1000, 2000, 1), kernel(10002000, 10003000, 2)};
	struct tally_record a[2] = {launch(0, 100, 1), launch(10001000, 500, 2)};
	struct tally_record smp[11], call;
	struct idle_cause_ctx cx;
	const struct why_row *w;
	const struct why_stack *st;
	struct report_section *list[1];
	struct report_set set;
	struct report_idle *idle;
	struct idle_why *why;
	struct fake x;
	char buf[300];
	size_t n, i, python = 0;

	(void)state;
	fake_init(&x);
	x.s.stacks.frames = frames;
	x.s.stacks.nframes = 3;
	x.s.stacks.stacks = stacks;
	x.s.stacks.nstacks = 3;
	x.s.threads = threads;
	x.s.nthreads = 1;
	x.s.sample_rate = 1000;
	for (i = 0; i < 11; i++) /* 1..11 ms: 10 inside the hole, the 11th after it */
		smp[i] = sample(1000000 * (i + 1), 7, i < 6 ? 1 : 2,
				i < 6 ? TALLY_THREAD_WAITING : TALLY_THREAD_ON_CPU);
	memset(&call, 0, sizeof(call));
	call.kind = TALLY_KIND_OSRT;
	call.start = 3000000;
	call.end = 7000000;
	call.thread_id = 7;
	call.cbid = TALLY_OSRT_CLOCK_NANOSLEEP;
	idle = report_idle_new(&o);
	why = idle_why_new(idle, true);
	assert_non_null(why);
	assert_int_equal(report_idle_add(idle, &x.rs, a, 2), 0);
	assert_int_equal(idle_why_add(why, &x.rs, a, 2), 0);
	assert_int_equal(report_idle_add(idle, &x.rs, k, 2), 0);
	assert_int_equal(idle_why_add(why, &x.rs, smp, 11), 0);
	assert_int_equal(idle_why_add(why, &x.rs, &call, 1), 0);
	assert_int_equal(report_idle_section(idle, &x.rs), 0);
	assert_int_equal(idle_why_section(why, &x.rs), 0);
	w = idle_why_rows(why, &n);
	assert_int_equal(w[0].what, WHY_GAP);
	for (i = 1; i < n; i++) {
		if (w[i].what == WHY_OSRT) {
			assert_int_equal(w[i].thread, 7);
			assert_int_equal(w[i].ns, 4000000);
		}
		if (w[i].what != WHY_PYTHON)
			continue;
		python += w[i].count;
		if (w[i].id == 1) /* sleep_between, waiting, heaviest: first */
			assert_true(w[i].count == 6 && w[i].state == TALLY_THREAD_WAITING &&
				    w[i].ns == 6000000 && w[i - 1].what != WHY_PYTHON);
		else
			assert_true(w[i].id == 2 && w[i].count == 4 &&
				    w[i].state == TALLY_THREAD_ON_CPU);
	}
	assert_int_equal(python, 10);
	st = idle_why_stacks(why, &n);
	assert_int_equal(n, 2);
	assert_true(st[0].stack == 1 && st[0].count == 6 && st[0].of == 10);
	list[0] = &x.rs;
	memset(&set, 0, sizeof(set));
	set.sections = list;
	set.nsections = 1;
	cx = (struct idle_cause_ctx){idle, why, &set};
	assert_non_null(idle_cause(&cx, 0, 0, buf, sizeof(buf)));
	/* the launching thread (CUPTI's 42, tied to tid 7 by THREADS) is named, and its state */
	assert_string_equal(buf, "host wait, 100% of the idle time; main (tid 7) launched the work "
				 "late: it was waiting in sleep_between (/w/train.py:30), 60% of "
				 "its samples in these gaps");
	assert_null(idle_cause(&cx, 0, 1, buf, sizeof(buf)));
	report_frames_free(x.rs.frames);
	idle_why_free(why);
	report_idle_free(idle);
}

/* An API call that is not a launch: a synchronize (name 2) or anything else (name 1). */
static struct tally_record api_call(uint64_t t0, uint64_t t1, uint32_t name)
{
	struct tally_record r;

	memset(&r, 0, sizeof(r));
	r.kind = TALLY_KIND_RUNTIME;
	r.start = t0;
	r.end = t1;
	r.name_id = name;
	r.correlation_id = 900 + name;
	r.thread_id = 42;
	return r;
}

static char *api_names[] = {NULL, "cudaGetDevice", "cudaStreamSynchronize"};

/*
 * Three host-wait holes after kernels ending at 1000, 3000 and 5000 (each next kernel launched
 * after the hole began), of sync_ns, plain_ns and other_ns.  The first hole begins inside a
 * cudaStreamSynchronize [500, 1000 + 10]; the second inside a cudaGetDevice (not a
 * synchronization); the third in no call.  Returns the diagnosis's cause.
 */
static const char *cause_of(uint64_t sync_ns, uint64_t plain_ns, uint64_t other_ns, char *buf,
			    size_t len)
{
	struct fake x;
	struct report_idle *idle;
	uint64_t end1 = 1000, end2 = end1 + sync_ns + 1000, end3 = end2 + plain_ns + 1000;
	struct tally_record k[4] = {kernel(0, end1, 1), kernel(end1 + sync_ns, end2, 2),
				    kernel(end2 + plain_ns, end3, 3),
				    kernel(end3 + other_ns, end3 + other_ns + 1000, 4)};
	struct tally_record a[6] = {launch(0, 10, 1),
				    launch(end1 + 5, 10, 2),
				    launch(end2 + 5, 10, 3),
				    launch(end3 + 5, 10, 4),
				    api_call(500, end1 + 10, 2),
				    api_call(end2 - 10, end2 + 10, 1)};
	struct report_section *list[1];
	struct report_set set;
	struct idle_cause_ctx cx;
	const struct report_idle_total *t;
	const char *c;
	size_t n;

	fake_init(&x);
	x.s.strings = api_names;
	x.s.nstrings = 3;
	idle = report_idle_new(NULL);
	assert_non_null(idle);
	assert_int_equal(report_idle_add(idle, &x.rs, a, 6), 0);
	assert_int_equal(report_idle_add(idle, &x.rs, k, 4), 0);
	assert_int_equal(report_idle_section(idle, &x.rs), 0);
	t = report_idle_totals(idle, &n);
	assert_int_equal(n, 1);
	assert_int_equal(t->ns[IDLE_HOST_WAIT], sync_ns + plain_ns + other_ns);
	assert_int_equal(t->after_sync[IDLE_HOST_WAIT], sync_ns);
	list[0] = &x.rs;
	memset(&set, 0, sizeof(set));
	set.sections = list;
	set.nsections = 1;
	cx = (struct idle_cause_ctx){idle, NULL, &set};
	c = idle_cause(&cx, 0, 0, buf, len);
	report_idle_free(idle);
	report_names_free(x.rs.names); /* the calls' names, read by the synchronization rule */
	return c;
}

/* The diagnosis's cause: synchronization from half the host wait on, said as a part of it from a
 * tenth, not at all below; kernel wait by its name. */
static void cause_wordings(void **state)
{
	struct fake x;
	struct report_idle *idle;
	struct report_section *list[1];
	struct report_set set;
	struct idle_cause_ctx cx;
	char buf[300];

	(void)state;
	assert_non_null(cause_of(6000, 2000, 2000, buf, sizeof(buf)));
	assert_string_equal(buf,
			    "synchronization, 60% of the idle time: host wait that began inside "
			    "a synchronizing call (the host waited for the GPU, then had "
			    "nothing queued)");
	assert_non_null(cause_of(3000, 4000, 3000, buf, sizeof(buf)));
	assert_string_equal(buf, "host wait, 100% of the idle time (30% of it right after a "
				 "synchronizing call)");
	assert_non_null(cause_of(900, 5000, 4100, buf, sizeof(buf)));
	assert_string_equal(buf, "host wait, 100% of the idle time");
	fake_init(&x);
	idle = two_kernels(&x, NULL, 1000, 1500, 3000, true);
	list[0] = &x.rs;
	memset(&set, 0, sizeof(set));
	set.sections = list;
	set.nsections = 1;
	cx = (struct idle_cause_ctx){idle, NULL, &set};
	assert_non_null(idle_cause(&cx, 0, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "kernel wait, 100% of the idle time");
	report_idle_free(idle);
}

/*
 * Unproven as gpu_time_breakdown counts it: a hole of list_min or more by itself, a shorter one
 * with the stretch of work it lies in.  Kernels [0,1000], [1500,2500] (a 500 ns hole), then
 * [5000000,5001000] after a listed hole, then [5001200,5002000] (a 200 ns hole).  A loss window
 * [2200, 2300] lies on the first stretch's work, not on its hole: the 500 ns are unproven, the
 * listed hole and the last 200 ns are not.  The breakdown of the same records says the same.
 */
static void unproven_like_the_breakdown(void **state)
{
	struct report_idle_opts o = {.list_min_ns = 1000000};
	struct tally_window w = {
	    .t_begin = 2200, .t_end = 2300, .counter = TALLY_C_DROPPED_CUPTI, .count = 3};
	struct tally_record k[4] = {kernel(0, 1000, 1), kernel(1500, 2500, 2),
				    kernel(5000000, 5001000, 3), kernel(5001200, 5002000, 4)};
	struct tally_record a[4] = {launch(0, 10, 1), launch(100, 10, 2), launch(4000000, 10, 3),
				    launch(4000100, 10, 4)};
	const struct report_idle_total *t;
	const struct bd_row *row;
	struct report_idle *idle;
	struct breakdown *bd;
	struct fake x;
	uint64_t ns = 0, unproven = 0;
	size_t n;
	unsigned c;

	(void)state;
	fake_init(&x);
	x.s.windows = &w;
	x.s.nwindows = 1;
	x.s.ledger.v[TALLY_C_DROPPED_CUPTI] = 3;
	idle = report_idle_new(&o);
	bd = breakdown_new(o.list_min_ns);
	assert_non_null(idle);
	assert_non_null(bd);
	assert_int_equal(report_idle_add(idle, &x.rs, a, 4), 0);
	assert_int_equal(report_idle_add(idle, &x.rs, k, 4), 0);
	assert_int_equal(report_idle_section(idle, &x.rs), 0);
	assert_int_equal(breakdown_add(bd, &x.rs, k, 4), 0);
	assert_int_equal(breakdown_section_end(bd, &x.rs), 0);
	t = report_idle_totals(idle, &n);
	assert_int_equal(n, 1);
	for (c = 0; c < IDLE_CLASSES; c++) {
		ns += t->ns[c];
		unproven += t->unproven[c];
	}
	assert_int_equal(ns, 500 + (5000000 - 2500) + 200);
	assert_int_equal(unproven, 500);
	row = breakdown_rows(bd, &n);
	assert_int_equal(n, 1);
	assert_int_equal(row->idle, ns);
	assert_int_equal(row->idle_unproven, unproven);
	breakdown_free(bd);
	report_idle_free(idle);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(host_wait),
	    cmocka_unit_test(kernel_wait_and_other),
	    cmocka_unit_test(kernel_wait_option),
	    cmocka_unit_test(launch_not_recorded),
	    cmocka_unit_test(totals_listing_largest),
	    cmocka_unit_test(unproven_hole),
	    cmocka_unit_test(host_behind_a_hole),
	    cmocka_unit_test(cause_wordings),
	    cmocka_unit_test(unproven_like_the_breakdown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
