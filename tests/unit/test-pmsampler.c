/* SPDX-License-Identifier: MIT */
/*
 * The GPU-metrics sampler's parts that need no CUPTI: metric sets and device lists, scaling,
 * batches, the hand-off to the pipeline (gaps, counters, the bound), the per-device lock file,
 * and a batch through the real pipeline into a file read back.  The sampler thread itself runs
 * against the stand-in CUPTI in tests/exitpath/test-gpumetrics.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "metricbatch.h"
#include "metriclock.h"
#include "metricq.h"
#include "metricset.h"
#include "pipeline.h"
#include "reader.h"
#include "testsrc.h"
#include "verdict.h"

#define SM "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"

static void test_default_set(void **state)
{
	struct pm_metric m[PM_METRICS_MAX];
	char store[4096], why[256];
	size_t i;

	(void)state;
	assert_int_equal(pm_default_count, 14);
	assert_int_equal(pm_metric_list_parse("default", m, PM_METRICS_MAX, store, sizeof(store),
					      why, sizeof(why)),
			 14);
	for (i = 0; i < 14; i++) {
		assert_string_equal(m[i].name, pm_default_set[i].name);
		assert_true(strcmp(m[i].unit, "%") == 0 ? m[i].scale == 3 : m[i].scale == 0);
	}
	assert_string_equal(m[0].label, "SM Active");
	/* named again, and among others: kept once, in the order first named */
	assert_int_equal(pm_metric_list_parse("foo__bar.sum," SM ",default", m, PM_METRICS_MAX,
					      store, sizeof(store), why, sizeof(why)),
			 15);
	assert_string_equal(m[0].name, "foo__bar.sum");
	assert_string_equal(m[1].name, SM);
	assert_string_equal(m[1].label, "SM Active");
	assert_string_equal(m[2].name, pm_default_set[1].name);
}

static void test_describe(void **state)
{
	static const struct {
		const char *name, *unit;
		unsigned scale;
	} cases[] = {
	    {"lts__t_bytes.sum.pct_of_peak_sustained_elapsed", "%", 3},
	    {"nvlrx__bytes.sum.per_second", "bytes/s", 0},
	    {"sys__cycles_elapsed.avg.per_second", "Hz", 0},
	    {"sm__inst_executed.sum.per_second", "/s", 3},
	    {"sm__warps_active.avg.ratio", "", 3},
	    {"gr__cycles_active.avg", "", 3},
	};
	struct pm_metric m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pm_metric_describe(cases[i].name, &m);
		assert_string_equal(m.unit, cases[i].unit);
		assert_int_equal(m.scale, cases[i].scale);
		/* NVLink's is in the default set, with its own label */
		assert_string_equal(m.label, i == 1 ? "NVLink RX" : cases[i].name);
	}
}

static void test_bad_lists(void **state)
{
	static const char *const bad[] = {"", ",,", "sm__x;rm -rf", "a b", "sm__x,\"y\""};
	struct pm_metric m[PM_METRICS_MAX];
	char store[PM_METRICS_MAX * (PM_METRIC_NAME_MAX + 1)], why[256], many[8192], name[200];
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pm_metric_list_parse(bad[i], m, PM_METRICS_MAX, store,
						      sizeof(store), why, sizeof(why)),
				 -EINVAL);
	for (i = 0; i < PM_METRICS_MAX + 1; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%sm%zu__x.sum", i ? "," : "", i);
	assert_int_equal(
	    pm_metric_list_parse(many, m, PM_METRICS_MAX, store, sizeof(store), why, sizeof(why)),
	    -EINVAL);
	assert_non_null(strstr(why, "more than 64"));
	memset(name, 'a', PM_METRIC_NAME_MAX + 1);
	name[PM_METRIC_NAME_MAX + 1] = '\0';
	assert_int_equal(
	    pm_metric_list_parse(name, m, PM_METRICS_MAX, store, sizeof(store), why, sizeof(why)),
	    -EINVAL);
}

static void test_devices(void **state)
{
	static const char *const bad[] = {"x", "1,", "-1", "64", " 1", "1,,2", "0x1"};
	uint64_t mask = 7;
	char why[128];
	size_t i;

	(void)state;
	assert_int_equal(pm_devices_parse("all", &mask, why, sizeof(why)), 0);
	assert_int_equal(mask, 0);
	assert_int_equal(pm_devices_parse("", &mask, why, sizeof(why)), 0);
	assert_int_equal(mask, 0);
	assert_int_equal(pm_devices_parse("0,2,63", &mask, why, sizeof(why)), 0);
	assert_int_equal(mask, 1ull | 4ull | 1ull << 63);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pm_devices_parse(bad[i], &mask, why, sizeof(why)), -EINVAL);
}

static void test_scaled(void **state)
{
	(void)state;
	assert_int_equal(pm_scaled(96.4404, 3), 96440);
	assert_int_equal(pm_scaled(96.4405, 3), 96441);
	assert_int_equal(pm_scaled(-0.0006, 3), -1);
	assert_int_equal(pm_scaled(-0.0004, 3), 0);
	assert_int_equal(pm_scaled(2081645173013.726, 0), 2081645173014ll);
	assert_int_equal(pm_scaled(NAN, 3), 0);
	assert_true(pm_scaled(1e300, 3) == INT64_MAX);
	assert_true(pm_scaled(-1e300, 0) == INT64_MIN);
	assert_true(pm_scaled(INFINITY, 0) == INT64_MAX);
}

static const struct pm_metric three[] = {
    {SM, "SM Active", "%", 3},
    {"dram__bytes_read.sum.per_second", "DRAM Read", "bytes/s", 0},
    {"gr__cycles_active.avg", "gr__cycles_active.avg", "", 3},
};

/* Sample i of the batches below: 100 us apart; the values tell metric and sample apart. */
static void sample(unsigned i, struct pm_batch_sample *s, double v[3])
{
	s->start = 1000000000ull + i * 100000ull;
	s->end = s->start + 100000;
	s->number = i + 2;
	s->flags = i == 50 ? TALLY_METRIC_AFTER_GAP : 0;
	v[0] = i * 0.5;
	v[1] = 1e9 + i;
	v[2] = -(double)i / 1000.0;
}

static void test_batch(void **state)
{
	struct pm_batch *b = pm_batch_new(3, three, 3, 4);
	struct pm_batch_sample s;
	struct tally_record r;
	double v[3];
	unsigned i;

	(void)state;
	assert_non_null(b);
	assert_null(pm_batch_new(0, three, 0, 4));
	assert_null(pm_batch_new(0, three, 3, 0));
	for (i = 0; i < 4; i++) {
		sample(i, &s, v);
		assert_true(pm_batch_add(b, &s, v));
	}
	assert_false(pm_batch_add(b, &s, v));
	assert_string_equal(b->names[1], three[1].name);
	pm_batch_record(b, 2, 3, 77, &r);
	assert_int_equal(r.kind, TALLY_KIND_GPU_METRIC);
	assert_int_equal(r.device_id, 3);
	assert_int_equal(r.name_id, 77);
	assert_int_equal(r.correlation_id, 5);
	assert_int_equal(r.subkind, 3);
	assert_int_equal(r.metric_value, -3);
	assert_int_equal(r.end - r.start, 100000);
	free(b);
}

static void test_metricq(void **state)
{
	struct pm_batch *b[PIPELINE_METRIC_BATCHES + 1], *got;
	struct metric_gap g[METRICQ_GAPS];
	struct metricq q;
	uint64_t v[TALLY_C_MAX] = {0};
	unsigned i, n;

	(void)state;
	metricq_init(&q, PIPELINE_METRIC_BATCHES);
	for (i = 0; i <= PIPELINE_METRIC_BATCHES; i++)
		b[i] = pm_batch_new(i, three, 3, 1);
	for (i = 0; i < PIPELINE_METRIC_BATCHES; i++)
		assert_int_equal(metricq_put(&q, b[i]), 0);
	assert_int_equal(metricq_put(&q, b[i]), -ENOSPC); /* bounded: still the caller's */
	for (got = metricq_take(&q), i = 0; got; got = got->next, i++)
		assert_ptr_equal(got, b[i]);
	assert_int_equal(i, PIPELINE_METRIC_BATCHES);
	assert_null(metricq_take(&q));
	assert_int_equal(metricq_put(&q, b[PIPELINE_METRIC_BATCHES]), 0); /* room again */
	for (i = 0; i < PIPELINE_METRIC_BATCHES; i++)
		free(b[i]);
	/* 20 gaps: 15 exact, the 16th entry spans the last 5 with their count and time */
	metricq_gap(&q, 50, 50); /* nothing */
	for (i = 0; i < 20; i++)
		metricq_gap(&q, 1000 * i, 1000 * i + 10 + i);
	n = metricq_take_gaps(&q, g);
	assert_int_equal(n, METRICQ_GAPS);
	assert_int_equal(g[0].t0, 0);
	assert_int_equal(g[0].t1, 10);
	assert_int_equal(g[14].count, 1);
	assert_int_equal(g[15].t0, 15000);
	assert_int_equal(g[15].t1, 19000 + 29);
	assert_int_equal(g[15].count, 5);
	assert_int_equal(g[15].ns, 25 + 26 + 27 + 28 + 29);
	assert_int_equal(metricq_take_gaps(&q, g), 0);
	metricq_count(&q, TALLY_C_METRIC_DECODED, 7);
	metricq_count(&q, TALLY_C_METRIC_DEVICES, 2);
	metricq_count(&q, TALLY_C_METRIC_DEVICES + 1, 5); /* not the sampler's: ignored */
	metricq_snapshot(&q, v);
	assert_int_equal(v[TALLY_C_METRIC_DECODED], 7);
	assert_int_equal(v[TALLY_C_METRIC_DEVICES], 2);
	assert_int_equal(v[TALLY_C_METRIC_DEVICES + 1], 0);
	metricq_fini(&q); /* frees the batch still waiting (ASan's leak check) */
}

/* ---- the lock file ------------------------------------------------------------------------ */

/* The lock is the process's (a POSIX lock: another claim in the same process would not see it),
 * so "another process" is one: a child that claims path and exits with what it found: 0 busy and
 * holder pid as expected (has_session as has), 1 it got the lock, 2 something else. */
static int other_claims(const char *path, long want_pid, bool want_session)
{
	struct pm_lock_holder them = {.pid = 7, .host = "node-8"}, who;
	struct tally_kept k;
	int status = -1, rc;
	pid_t pid = fork();

	if (pid == 0) {
		memset(&who, 0, sizeof(who));
		rc = pm_lock_claim(path, &them, &who, &k);
		_exit(rc >= 0 ? 1
		      : rc == -EBUSY && who.pid == want_pid && who.has_session == want_session &&
			      (!want_pid || strcmp(who.host, "node-7") == 0)
			  ? 0
			  : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* A process that claims path, forks a long-lived child (as libcudadebugger forks its debug agent
 * inside cuInit) which keeps every descriptor, and dies without releasing anything.  Returns the
 * child's pid (to be killed), or -1. */
static pid_t claim_fork_die(const char *path)
{
	struct pm_lock_holder h = {.pid = 555, .host = "node-7"}, who;
	struct tally_kept k;
	int status, ready[2];
	pid_t pid, agent = -1;

	if (pipe(ready) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		if (pm_lock_claim(path, &h, &who, &k) < 0 || (agent = fork()) < 0)
			_exit(2);
		if (agent == 0) {
			agent = getpid();
			(void)!write(ready[1], &agent, sizeof(agent));
			pause();
		}
		_exit(0);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &agent, sizeof(agent)) != sizeof(agent) ||
	    waitpid(pid, &status, 0) != pid)
		agent = -1;
	close(ready[0]);
	return agent;
}

static void test_lock(void **state)
{
	char dir[] = "/tmp/tally-lock-XXXXXX", path[PATH_MAX];
	static const uint8_t uuid[16] = {0xdb, 0x62, 0xd9, 0x84, 0x36, 0xfb, 0x5e, 0xd5,
					 0x61, 0xeb, 0x18, 0x16, 0x8f, 0xbb, 0x86, 0x2a};
	struct pm_lock_holder me = {.pid = 4242, .host = "node-7", .file = "/traces/a.tally"}, who;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct tally_kept lock;
	struct stat st;
	int rc, other, status, number;
	pid_t agent, pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	pm_lock_path(path, sizeof(path), dir, uuid, "node-7", 0);
	assert_non_null(
	    strstr(path, "/.tally-gpu-metrics-GPU-db62d984-36fb-5ed5-61eb-18168fbb862a.lock"));
	memset(me.session, 0xab, sizeof(me.session));
	me.has_session = true;
	assert_int_equal(pm_lock_claim(path, &me, &who, &lock), 0);
	assert_true(pm_lock_held(&lock));
	/* Another process's claim finds the holder, as it wrote itself in. */
	assert_int_equal(other_claims(path, 4242, true), 0);
	/* Released (as at exit): the next one takes it and writes itself in. */
	pm_lock_release(&lock);
	assert_int_equal(other_claims(path, 0, false), 1);
	me.pid = 99;
	me.has_session = false;
	assert_int_equal(pm_lock_claim(path, &me, &who, &lock), 0);
	assert_int_equal(other_claims(path, 99, false), 0);
	/* A fork child does not hold it: its own claim finds the parent's. */
	if ((pid = fork()) == 0)
		_exit(pm_lock_claim(path, &me, &who, &lock) == -EBUSY ? 0 : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The program closes the lock's descriptor and puts a file of its own at its number: the
	 * lock is gone (the kernel dropped it), and the release leaves the program's file open. */
	number = lock.fd;
	assert_true(number >= 3);
	other = open("/dev/null", O_RDONLY);
	assert_true(other >= 0 && dup2(other, number) == number);
	close(other);
	assert_false(pm_lock_held(&lock));
	assert_int_equal(other_claims(path, 0, false), 1); /* a process of the job may claim it */
	pm_lock_release(&lock);
	assert_int_equal(fstat(number, &st), 0); /* still the program's */
	close(number);
	/* A holder that died leaves the device free, even while a child it forked holding the
	 * lock lives on with the claim's descriptor: the next claim takes it over. */
	agent = claim_fork_die(path);
	assert_true(agent > 0);
	rc = pm_lock_claim(path, &me, &who, &lock);
	kill(agent, SIGKILL); /* a grandchild: init reaps it */
	assert_int_equal(rc, 0);
	pm_lock_release(&lock);
	/* Held by one that has not written yet: busy, holder unknown (pid 0). */
	other = open(path, O_RDWR);
	assert_true(other >= 0);
	assert_int_equal(ftruncate(other, 0), 0);
	assert_int_equal(fcntl(other, F_SETLK, &fl), 0);
	assert_int_equal(other_claims(path, 0, false), 0);
	close(other);
	unlink(path);
	/* No UUID: named by host and ordinal.  A directory that takes no file: no claim at all. */
	pm_lock_path(path, sizeof(path), dir, NULL, "node-7", 3);
	assert_non_null(strstr(path, "/.tally-gpu-metrics-node-7-dev3.lock"));
	rmdir(dir);
	pm_lock_path(path, sizeof(path), dir, uuid, "node-7", 0);
	rc = pm_lock_claim(path, &me, &who, &lock);
	assert_true(rc < 0 && rc != -EBUSY);
}

/* ---- through the pipeline into a file ----------------------------------------------------- */

struct metric_read {
	uint64_t n, order_breaks, value_mismatch;
	uint32_t last_name;
};

static int on_metric(void *ctx, struct tally_section *s, const struct tally_record *r, size_t n)
{
	struct metric_read *mr = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *name = tally_section_string(s, r[i].name_id);
		struct pm_batch_sample want;
		unsigned m, k;
		double v[3];

		if (r[i].kind != TALLY_KIND_GPU_METRIC)
			continue;
		for (m = 0; m < 3 && (!name || strcmp(name, three[m].name) != 0); m++)
			;
		k = r[i].correlation_id - 2;
		if (m == 3 || k >= 100) {
			mr->value_mismatch++;
			continue;
		}
		sample(k, &want, v);
		mr->value_mismatch += r[i].start != want.start || r[i].end != want.end ||
				      r[i].value != want.flags || r[i].subkind != three[m].scale ||
				      r[i].metric_value != pm_scaled(v[m], three[m].scale) ||
				      r[i].device_id != 1;
		mr->order_breaks += mr->n && r[i].name_id != mr->last_name && k != 0;
		mr->last_name = r[i].name_id;
		mr->n++;
	}
	return 0;
}

static void test_pipeline(void **state)
{
	char path[] = "/tmp/tally-metrics-XXXXXX", err[256];
	struct tally_pipeline_config cfg;
	struct tally_buf session = {0};
	struct metric_read mr = {0};
	struct tally_read_ops ops = {.records = on_metric, .ctx = &mr};
	struct tally_stop_report rep;
	struct tally_verdict v;
	struct tally_file *f;
	struct pm_batch *b, *extra[PIPELINE_METRIC_BATCHES];
	struct pm_batch_sample s;
	const struct tally_section *sec;
	struct tally_sink sink;
	double val[3];
	unsigned i, gaps = 0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	tally_pipeline_config_default(&cfg);
	cfg.consumer_thread = false;
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, ~0ull);
	assert_int_equal(tally_pipeline_start(&cfg, &testsrc_source, &sink, &session), 0);
	tally_buf_fini(&session);
	b = pm_batch_new(1, three, 3, 100);
	for (i = 0; i < 100; i++) {
		sample(i, &s, val);
		assert_true(pm_batch_add(b, &s, val));
	}
	assert_int_equal(tally_pipeline_metric_batch(b), 0);
	/* Bounded: with the consumer not draining, the ninth batch is refused. */
	for (i = 0; i < PIPELINE_METRIC_BATCHES - 1; i++) {
		extra[i] = pm_batch_new(1, three, 3, 1);
		assert_int_equal(tally_pipeline_metric_batch(extra[i]), 0);
	}
	extra[i] = pm_batch_new(1, three, 3, 1);
	assert_int_equal(tally_pipeline_metric_batch(extra[i]), -ENOSPC);
	free(extra[i]);
	tally_pipeline_metric_gap(1000000000ull + 49 * 100000 + 100000,
				  1000000000ull + 50 * 100000);
	tally_pipeline_metric_gap(1000000000ull + 4800000, 1000000000ull + 5000000);
	tally_pipeline_metric_count(TALLY_C_METRIC_DECODED, 101);
	tally_pipeline_metric_count(TALLY_C_METRIC_SKIPPED, 1);
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	assert_int_equal(tally_pipeline_stop(&rep), 0);
	tally_pipeline_reset();
	close(fd);
	assert_int_equal(tally_file_open(&f, path, err, sizeof(err)), 0);
	assert_int_equal(tally_file_read(f, &ops), 0);
	sec = f->sections[0];
	/* the empty extra batches carried no samples: 300 records, one metric after another */
	assert_int_equal(mr.n, 300);
	assert_int_equal(mr.value_mismatch, 0);
	assert_int_equal(mr.order_breaks, 0);
	assert_int_equal(sec->records[TALLY_KIND_GPU_METRIC], 300);
	assert_int_equal(sec->ledger.v[TALLY_C_METRIC_WRITTEN], 100);
	assert_int_equal(sec->ledger.v[TALLY_C_METRIC_DECODED], 101);
	assert_int_equal(sec->ledger.v[TALLY_C_METRIC_GAPS], 1); /* the empty one is none */
	assert_int_equal(sec->ledger.v[TALLY_C_METRIC_GAP_NS], 200000);
	for (i = 0; i < sec->nwindows; i++)
		if (sec->windows[i].counter == TALLY_C_METRIC_GAPS) {
			assert_int_equal(sec->windows[i].t_begin, 1000000000ull + 4800000);
			assert_int_equal(sec->windows[i].t_end, 1000000000ull + 5000000);
			gaps++;
		}
	assert_int_equal(gaps, 1);
	tally_verdict_compute(f, f->sections[0], &v);
	assert_false(v.complete);
	assert_int_equal(v.nreasons, 1);
	assert_int_equal(v.reasons[0].counter, TALLY_C_METRIC_GAPS);
	tally_verdict_fini(&v);
	tally_file_close(f);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_set), cmocka_unit_test(test_describe),
	    cmocka_unit_test(test_bad_lists),	cmocka_unit_test(test_devices),
	    cmocka_unit_test(test_scaled),	cmocka_unit_test(test_batch),
	    cmocka_unit_test(test_metricq),	cmocka_unit_test(test_lock),
	    cmocka_unit_test(test_pipeline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
