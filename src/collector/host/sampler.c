/* SPDX-License-Identifier: MIT */
/*
 * The sampler thread (sampler.h).  It never stops, signals or slows a sampled thread:
 *
 *   Python samples  every period (1/rate, wall clock) it walks the interpreter's thread states
 *                   and reads each thread's frames in place from outside (pyframes.c: checked
 *                   reads, torn chains detected), and the thread's state from
 *                   /proc/self/task/TID/stat (one pread of a kept fd: R on CPU, D in a system
 *                   call, S waiting).  Reading costs the sampler, not the sampled thread.
 *   native samples  taken by the kernel (perf events: perfsample.c) or by the thread itself in
 *                   a signal handler (the timer fallback: timersample.c); the sampler drains
 *                   them every 10 ms
 *   blocking calls  recorded by the interposers (osrt.c) in the calling thread; drained here
 *
 * Every record is timed on CLOCK_MONOTONIC and put on the pipeline's clock with the offset
 * between the two, measured at every drain.  Records go to the pipeline in batches
 * (tally_pipeline_host_records); what a full queue turns away is counted as dropped.  Every
 * 100 ms the sampler scans /proc/self/task: new threads get a THREADS entry (and a timer, in the
 * fallback), threads that ended get their last entry.
 */
#include "sampler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hostthreads.h"
#include "ledger.h"
#include "libc.h"
#include "log.h"
#include "osrt.h"
#include "ownthread.h"
#include "payloads.h"
#include "perfsample.h"
#include "pipeline.h"
#include "pyframes.h"
#include "saferead.h"
#include "stacks.h"
#include "stacktab.h"
#include "timersample.h"
#include "unwinder.h"

#define DRAIN_NS     10000000ull  /* native samples and calls drained this often */
#define SCAN_NS	     100000000ull /* /proc/self/task scanned this often */
#define PY_RETRY_NS  10000000ull  /* how often to look for CPython until it is loaded */
#define BATCH_MAX    4096	  /* records per hand-over */
#define BATCH_NS     20000000ull  /* and at least this often */
#define TABLE	     4096	  /* threads the sampler tracks (a power of two) */
#define MAX_PYTHREAD 256
#define OSRT_SLOTS   65536
#define TIMER_SLOTS  4096

enum mechanism { MECH_NONE, MECH_PERF, MECH_TIMER };

#define WRITTEN (1u << 31) /* in written_flags: an entry was written */

struct thread {
	pid_t tid; /* 0: free */
	unsigned flags;
	unsigned long pthread_id;
	char name[16];
	unsigned written_flags; /* what the last THREADS entry said */
	unsigned long written_pthread;
	char written_name[16];
	uint64_t seen;	     /* the scan that last saw it */
	uint64_t first_seen; /* the scan that first saw it */
};

static struct {
	unsigned asked; /* TALLY_SAMPLE_BIT_* */
	enum mechanism mech;
	unsigned rate, depth;
	int signo;
	int parent_signo; /* a fork child: the signal its parent's timers used */
	bool mixed;	  /* native samples carry the thread's Python frames (mixed stacks) */
	bool osrt;
	uint64_t period_ns, stall_ns, osrt_ns;
	size_t timer_slots;
	bool test_torn;
	uint64_t toggle_ns; /* TALLY_BENCH_TOGGLE_MS */
	char why[256];	    /* how native samples are taken, and why */

	pthread_t thread;
	_Atomic bool running, started;
	_Atomic uint32_t wake; /* futex word: bumped to wake the sampler's sleep */
	/* The program's forks (fork_begin/end, in the forking thread): CLOCK_MONOTONIC start of
	 * the one under way (0 none), and the time of all that ended. */
	_Atomic uint64_t fork_since, fork_ns;
	uint64_t fork_ns_seen; /* sampler thread: fork_ns at its last Python pass */
	pid_t pid;
	unsigned long main_pthread;

	/* sampler thread only */
	int python; /* 0 not yet, 1 on, -1 never */
	char python_why[160];
	uint64_t offset; /* pipeline clock - CLOCK_MONOTONIC */
	struct tally_record *batch;
	size_t n;
	uint64_t batch_at, scan_gen;
	struct thread threads[TABLE];
	struct tally_buf entries; /* THREADS entries not yet handed over */
	bool toggled_off;
} sm;

static uint64_t mono(void)
{
	return tally_monotonic_ns();
}

void tally_sampler_init(void)
{
	sm.main_pthread = (unsigned long)pthread_self();
}

/* ---- records ------------------------------------------------------------------------------- */

static void hand_over(void)
{
	if (sm.n)
		(void)tally_pipeline_host_records(sm.batch, sm.n);
	else
		free(sm.batch);
	sm.batch = NULL;
	sm.n = 0;
	sm.batch_at = mono();
}

static struct tally_record *next_record(void)
{
	if (sm.n == BATCH_MAX)
		hand_over();
	if (!sm.batch) {
		sm.batch = malloc(BATCH_MAX * sizeof(*sm.batch));
		if (!sm.batch)
			return NULL;
	}
	memset(&sm.batch[sm.n], 0, sizeof(sm.batch[0]));
	return &sm.batch[sm.n++];
}

static void add_sample(uint64_t t, uint64_t stands_for, pid_t tid, unsigned source, unsigned state,
		       uint32_t stack, unsigned flags)
{
	struct tally_record *r = next_record();

	tally_pipeline_count(TALLY_C_SAMPLES_TAKEN, 1);
	if (!r) {
		tally_pipeline_count(TALLY_C_SAMPLES_DROPPED, 1);
		return;
	}
	r->kind = TALLY_KIND_CPU_SAMPLE;
	r->start = t + sm.offset;
	r->end = r->start + stands_for;
	r->thread_id = (uint32_t)tid;
	r->process_id = (uint32_t)sm.pid;
	r->subkind = source;
	r->value = state;
	r->stack_id = stack;
	r->flags = flags;
}

/* Native frames: the first is the instruction itself, the rest return addresses. */
static uint32_t native_stack(const uint64_t *pcs, unsigned n)
{
	struct raw_frame f[TIMER_SAMPLE_DEPTH];
	unsigned i;

	if (n > sm.depth)
		n = sm.depth;
	if (n > TIMER_SAMPLE_DEPTH)
		n = TIMER_SAMPLE_DEPTH;
	for (i = 0; i < n; i++)
		f[i] = (struct raw_frame){pcs[i], 0, i ? TALLY_FRAME_NATIVE : TALLY_FRAME_NATIVE_PC,
					  0};
	return tally_stacktab_intern(f, n, NULL);
}

/* stands_ns: the thread's CPU time since its previous sample on that CPU.  Periods past the
 * first (rounded) are ones the kernel's timer folded into this sample: counted as overruns. */
static void perf_sample(void *ctx, pid_t tid, uint64_t time, uint64_t stands_ns,
			const uint64_t *ips, unsigned n)
{
	uint64_t periods = (stands_ns + sm.period_ns / 2) / sm.period_ns;

	(void)ctx;
	if (periods > 1)
		tally_pipeline_count(TALLY_C_SAMPLE_OVERRUNS, periods - 1);
	add_sample(time, stands_ns, tid, TALLY_SAMPLE_PERF, TALLY_THREAD_ON_CPU,
		   n ? native_stack(ips, n) : 0, 0);
}

static void perf_lost(void *ctx, uint64_t samples)
{
	(void)ctx;
	tally_pipeline_count(TALLY_C_SAMPLES_TAKEN, samples);
	tally_pipeline_count(TALLY_C_SAMPLES_DROPPED, samples);
}

static void perf_throttled(void *ctx, uint64_t time)
{
	(void)ctx;
	(void)time;
	tally_pipeline_count(TALLY_C_SAMPLE_STALLS, 1);
}

/* Python segment k of a mixed sample, innermost first, into f at m; returns the new m. */
static unsigned put_segment(const struct timer_sample *s, unsigned k, struct raw_frame *f,
			    unsigned m, unsigned max)
{
	unsigned i = k ? s->seg_end[k - 1] : 0,
		 end = k < s->nseg ? s->seg_end[k] : (unsigned)s->npy;

	for (; i < end && m < max; i++)
		f[m++] = s->py[i];
	return m;
}

/*
 * One stack of a mixed sample, as py-spy --native draws it: the native frames, innermost first,
 * each evaluation (_PyEval_EvalFrameDefault) in place of its Python frames; evaluations that
 * were not found among the native frames (past the depth unwound), and Python frames of no
 * evaluation, at the outer end.
 */
static uint32_t mixed_stack(const struct timer_sample *s)
{
	struct raw_frame f[TIMER_SAMPLE_DEPTH + TIMER_PY_DEPTH];
	unsigned max = sizeof(f) / sizeof(f[0]), m = 0, i, k;

	for (i = 0; i < s->n && m < max; i++) {
		bool eval = false;

		for (k = 0; k < s->nseg; k++)
			if (s->seg_at[k] == i) {
				m = put_segment(s, k, f, m, max);
				eval = true;
			}
		if (!eval)
			f[m++] = (struct raw_frame){
			    s->pcs[i], 0, i ? TALLY_FRAME_NATIVE : TALLY_FRAME_NATIVE_PC, 0};
	}
	for (k = 0; k <= s->nseg; k++) /* the unplaced, and those after the last evaluation */
		if (k == s->nseg || s->seg_at[k] >= s->n)
			m = put_segment(s, k, f, m, max);
	return tally_stacktab_intern(f, m, tally_pyframes_name_outside);
}

static void timer_sample(void *ctx, const struct timer_sample *s)
{
	uint32_t stack = 0;

	(void)ctx;
	if (s->overrun)
		tally_pipeline_count(TALLY_C_SAMPLE_OVERRUNS, s->overrun);
	if (sm.mixed && s->npy < 0) /* the Python part tore: the native frames alone */
		tally_pipeline_count(TALLY_C_SAMPLES_TORN, 1);
	if (sm.mixed && s->npy > 0)
		stack = mixed_stack(s);
	else if (s->n)
		stack = native_stack(s->pcs, s->n);
	add_sample(s->time, (1 + (uint64_t)s->overrun) * sm.period_ns, s->tid, TALLY_SAMPLE_TIMER,
		   TALLY_THREAD_ON_CPU, stack, 0);
}

static void osrt_call(void *ctx, const struct osrt_event *e)
{
	struct tally_record *r = next_record();

	(void)ctx;
	if (!r) {
		tally_pipeline_count(TALLY_C_OSRT_DROPPED, 1);
		return;
	}
	r->kind = TALLY_KIND_OSRT;
	r->start = e->start + sm.offset;
	r->end = e->end + sm.offset;
	r->thread_id = (uint32_t)e->tid;
	r->process_id = (uint32_t)sm.pid;
	r->cbid = e->call;
	r->value = (uint32_t)e->ret;
	r->subkind = (uint32_t)e->err;
	r->address = e->object;
}

static void drain(void)
{
	static const struct perf_sink sink = {perf_sample, perf_lost, perf_throttled, NULL};
	uint64_t now = mono();

	sm.offset = tally_pipeline_now() - now;
	if (sm.mech == MECH_PERF)
		tally_perf_drain(&sink);
	else if (sm.mech == MECH_TIMER)
		(void)tally_timer_drain(timer_sample, NULL);
	if (sm.osrt)
		(void)tally_osrt_drain(osrt_call, NULL);
	if (sm.n && (sm.n >= BATCH_MAX / 2 || mono() - sm.batch_at >= BATCH_NS))
		hand_over();
}

/*
 * The program may close the perf events' descriptors (close_range, a daemon's loop): most
 * threads' events end with them, and their sampling.  Looked at every scan: the events are
 * opened anew for every thread, the stretch without them is counted as a stall (loss: samples
 * are missing there), and a note says why.
 */
static void perf_keep(void)
{
	unsigned lost = tally_perf_lost();
	char why[200] = "", text[400];
	int rc;

	if (!lost)
		return;
	drain();
	tally_perf_close();
	rc = tally_perf_open(sm.rate, sm.depth, why, sizeof(why));
	tally_pipeline_count(TALLY_C_SAMPLE_STALLS, 1);
	tally_pipeline_fd_event(rc == 0);
	snprintf(text, sizeof(text),
		 "the program closed tally's perf event descriptors (%u of its per-CPU rings' "
		 "owners): native sampling stopped until the next look (at most 100 ms)%s%s",
		 lost, rc == 0 ? "; the events were opened again" : ", and now for good: ",
		 rc == 0 ? "" : why);
	tally_pipeline_note(rc == 0 ? TALLY_NOTE_WARNING : TALLY_NOTE_ERROR, "perf-descriptors",
			    text);
	if (rc < 0)
		sm.mech = MECH_NONE;
}

/* ---- threads ------------------------------------------------------------------------------- */

static struct thread *thread_of(pid_t tid, bool create)
{
	size_t i = ((size_t)tid * 2654435761u) & (TABLE - 1), k;

	for (k = 0; k < TABLE; k++, i = (i + 1) & (TABLE - 1)) {
		if (sm.threads[i].tid == tid)
			return &sm.threads[i];
		if (!sm.threads[i].tid) {
			if (!create)
				return NULL;
			sm.threads[i].tid = tid;
			tally_pipeline_count(TALLY_C_THREADS_SEEN, 1);
			return &sm.threads[i];
		}
	}
	return NULL;
}

/* A THREADS entry when what is known of the thread changed. */
static void note_thread(struct thread *t)
{
	size_t len = strlen(t->name);

	if (t->written_flags == (t->flags | WRITTEN) && t->written_pthread == t->pthread_id &&
	    strcmp(t->written_name, t->name) == 0)
		return;
	tally_thread_put(&sm.entries, (uint64_t)t->tid, t->pthread_id, t->flags, t->name, len);
	t->written_flags = t->flags | WRITTEN;
	t->written_pthread = t->pthread_id;
	memcpy(t->written_name, t->name, sizeof(t->name));
}

static void hand_over_threads(void)
{
	if (!sm.entries.len)
		return;
	tally_pipeline_threads(&sm.entries);
	tally_buf_reset(&sm.entries);
}

static void refresh(struct thread *t, bool name)
{
	unsigned long p = tally_host_thread_pthread(t->tid);

	if (p)
		t->pthread_id = p;
	if (t->tid == sm.pid)
		t->flags |= TALLY_THREADF_MAIN;
	if (tally_own_tid(t->tid))
		t->flags |= TALLY_THREADF_TALLY;
	if (name)
		(void)tally_host_thread_name(t->tid, t->name, sizeof(t->name));
	note_thread(t);
}

static void ended(struct thread *t)
{
	t->flags |= TALLY_THREADF_EXITED;
	note_thread(t);
	if (sm.mech == MECH_TIMER)
		tally_timer_disarm(t->tid);
	tally_host_thread_close(t->tid);
}

/* New threads, renamed threads, ended threads. */
static void scan(bool names)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t i;

	if (!d)
		return;
	sm.scan_gen++;
	if (sm.mech == MECH_PERF)
		perf_keep();
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		struct thread *t = tid > 0 ? thread_of(tid, true) : NULL;
		bool fresh;

		if (!t)
			continue;
		fresh = !t->seen || (t->flags & TALLY_THREADF_EXITED);
		if (fresh) { /* a new thread, or a new one with an ended one's tid */
			t->flags = 0;
			t->written_flags = 0;
			t->first_seen = sm.scan_gen;
			if (sm.mech == MECH_TIMER && !tally_host_thread_word(tid))
				tally_timer_arm(tid);
		}
		t->seen = sm.scan_gen;
		/* a thread seen just after its start may not have named itself yet (tally's own
		 * threads do so first thing): its name is read again at the next scan */
		refresh(t, names || sm.scan_gen - t->first_seen <= 1);
	}
	closedir(d);
	for (i = 0; i < TABLE; i++)
		if (sm.threads[i].tid && sm.threads[i].seen != sm.scan_gen &&
		    !(sm.threads[i].flags & TALLY_THREADF_EXITED))
			ended(&sm.threads[i]);
	hand_over_threads();
}

/* ---- Python -------------------------------------------------------------------------------- */

static void python_note(const char *text, unsigned severity)
{
	char full[300];

	snprintf(full, sizeof(full), "python sampling: %s", text);
	tally_pipeline_note(severity, "python-sampling", full);
}

/* Until CPython is there and its layout checks out (it may load late, or never).  Returns
 * whether CPython's symbols are in the process yet. */
static bool python_find(void)
{
	static bool symbols; /* found once: dlsym takes the loader's lock */
	char why[160] = "", text[256];
	int rc;

	if (!symbols && !(symbols = dlsym(RTLD_DEFAULT, "Py_IsInitialized") != NULL))
		return false;
	if (tally_pyframes_init() < 0) {
		sm.python = -1;
		snprintf(sm.python_why, sizeof(sm.python_why),
			 "this CPython is not 3.11 to 3.13, or lacks what tally reads");
		python_note(sm.python_why, TALLY_NOTE_WARNING);
		return true;
	}
	rc = tally_pyframes_outside_init(sm.main_pthread, why, sizeof(why));
	if (rc == -EAGAIN)
		return true;
	sm.python = rc == 0 ? 1 : -1;
	if (rc == 0)
		snprintf(text, sizeof(text), "on: every thread's frames read in place (%s)",
			 tally_safe_read_how());
	else
		snprintf(sm.python_why, sizeof(sm.python_why), "%s", why);
	python_note(rc == 0 ? text : sm.python_why, rc == 0 ? TALLY_NOTE_INFO : TALLY_NOTE_WARNING);
	return true;
}

/*
 * One thread's Python sample.  A chain that changed under the reader (a call or a return) is
 * read again at once, up to TORN_TRIES times within TORN_BUDGET_NS: a thread on the CPU running
 * Python calls and returns all the time, and each read of its chain (a safe read per frame) holds
 * about half the time in a PyTorch loop (on an H100, 3 tries left 12.8% of the main thread's
 * running samples torn, 4.3% of its waiting ones): the tries are cheap next to the interval, the
 * budget keeps a thread that never holds from delaying the others.  A thread state
 * with no Python frame (a C++ thread that keeps one to call into Python now and then: PyTorch's
 * autograd threads) has nothing to say of Python: not written, counted apart.
 */
#define TORN_TRIES     16
#define TORN_BUDGET_NS 300000

static void python_thread(const struct py_thread *p, uint64_t stands)
{
	struct raw_frame f[128];
	unsigned state, flags = 0, tries = 0;
	struct thread *t;
	uint32_t stack = 0;
	uint64_t t0;
	uint64_t first = mono();
	int n;

	do
		t0 = mono(),
		n = tally_pyframes_sample(p->tstate, f, sm.depth < 128 ? sm.depth : 128);
	while (n < 0 && ++tries < TORN_TRIES && t0 - first < TORN_BUDGET_NS && !sm.test_torn);
	if (n == 0 && !sm.test_torn) {
		tally_pipeline_count(TALLY_C_SAMPLES_NO_PYTHON, 1);
		return;
	}
	if (n < 0 || sm.test_torn) {
		flags = TALLY_REC_TORN;
		tally_pipeline_count(TALLY_C_SAMPLES_TORN, 1);
	} else {
		stack = tally_stacktab_intern(f, (unsigned)n, tally_pyframes_name_outside);
	}
	state = tally_host_thread_state(p->tid);
	add_sample(t0, stands, p->tid, TALLY_SAMPLE_PYTHON, state, stack, flags);
	t = thread_of(p->tid, true);
	if (t && (!(t->flags & TALLY_THREADF_PYTHON) || t->pthread_id != p->pthread_id)) {
		t->flags |= TALLY_THREADF_PYTHON;
		t->pthread_id = p->pthread_id;
		tally_host_thread_set_pthread(p->tid, p->pthread_id);
		if (!t->seen)
			refresh(t, true);
		else
			note_thread(t);
	}
}

static void python_pass(uint64_t stands)
{
	struct py_thread threads[MAX_PYTHREAD];
	unsigned i, n;

	tally_pyframes_lines_retry(sm.main_pthread);
	n = tally_pyframes_threads(threads, MAX_PYTHREAD);
	for (i = 0; i < n; i++)
		python_thread(&threads[i], stands);
}

/* ---- the thread ---------------------------------------------------------------------------- */

/* Until t (CLOCK_MONOTONIC), or until tally_sampler_stop wakes it: a stop (an exec, an exit)
 * does not wait out the sampler's sleep. */
static void sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
	uint32_t seen = atomic_load_explicit(&sm.wake, memory_order_acquire);

	if (!atomic_load_explicit(&sm.running, memory_order_acquire))
		return;
	/* FUTEX_WAIT_BITSET's timeout is absolute, on CLOCK_MONOTONIC */
	(void)libc_syscall(SYS_futex, &sm.wake, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, &ts,
			   NULL, FUTEX_BITSET_MATCH_ANY);
}

static void wake_sampler(void)
{
	atomic_fetch_add_explicit(&sm.wake, 1, memory_order_release);
	(void)libc_syscall(SYS_futex, &sm.wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

/*
 * How much of the last `late` ns the program spent in fork().  While the kernel copies a
 * process's memory map it holds the map's lock, and every thread that writes memory (or faults
 * a page in) waits for it: the sampler too, whatever it reads with.  A Python process of some
 * GB takes hundreds of ms to fork; the program's own threads were held as long.
 */
static uint64_t fork_time_since_last_pass(uint64_t now, uint64_t late)
{
	uint64_t total = atomic_load_explicit(&sm.fork_ns, memory_order_relaxed);
	uint64_t since = atomic_load_explicit(&sm.fork_since, memory_order_relaxed);
	uint64_t held = total - sm.fork_ns_seen + (since && since < now ? now - since : 0);

	sm.fork_ns_seen = total;
	return held < late ? held : late;
}

/*
 * The Python pass is due.  On time, each sample stands for one period.  A late one stands for the
 * periods since the last pass too (counted: ticks missed), unless the sampler was away for longer
 * than the stall limit for another reason than the program's fork: then those periods are a loss
 * (a stall), and the samples stand for one period.  Time the program spent forking is counted,
 * and not a stall: its threads waited with the sampler, where its next samples find them.
 */
static void python_tick(uint64_t *due, uint64_t now)
{
	uint64_t late = now - *due, forked = fork_time_since_last_pass(now, late);
	uint64_t stands = (late / sm.period_ns + 1) * sm.period_ns;

	if (forked)
		tally_pipeline_count(TALLY_C_SAMPLE_FORK_NS, forked);
	if (late - forked >= sm.stall_ns) {
		tally_pipeline_count(TALLY_C_SAMPLE_STALLS, 1);
		stands = sm.period_ns;
	} else if (late >= sm.period_ns) {
		tally_pipeline_count(TALLY_C_SAMPLE_TICKS_MISSED, late / sm.period_ns);
	}
	python_pass(stands);
	*due += (late / sm.period_ns + 1) * sm.period_ns;
}

void tally_sampler_fork_begin(void)
{
	atomic_store_explicit(&sm.fork_since, mono(), memory_order_relaxed);
}

void tally_sampler_fork_end(void)
{
	uint64_t since = atomic_exchange_explicit(&sm.fork_since, 0, memory_order_relaxed);

	if (since)
		atomic_fetch_add_explicit(&sm.fork_ns, mono() - since, memory_order_relaxed);
}

/* Benchmarks: in the intervals TALLY_BENCH_TOGGLE_MS turns off, no native or Python samples
 * are taken (the sampler thread still drains and scans).  Returns whether this is one. */
static bool toggle(uint64_t now, uint64_t *py_due)
{
	bool off = tally_toggled_off(sm.toggle_ns, now);

	if (off != sm.toggled_off) {
		if (sm.mech == MECH_PERF)
			tally_perf_enable(!off);
		else if (sm.mech == MECH_TIMER)
			tally_timer_pause(off);
		sm.toggled_off = off;
	}
	if (off && *py_due <= now) /* not late, not a stall: the next pass when it turns on */
		*py_due = (now / sm.toggle_ns + 1) * sm.toggle_ns;
	return off;
}

static void *sampler_main(void *arg)
{
	uint64_t now = mono(), py_due = now, drain_due = now, scan_due = now, find_due = now;
	uint64_t names_due = now;
	bool python = sm.asked & TALLY_SAMPLE_BIT_PYTHON, off;

	(void)arg;
	while (atomic_load_explicit(&sm.running, memory_order_acquire)) {
		uint64_t next = drain_due;

		now = mono();
		off = sm.toggle_ns && toggle(now, &py_due);
		if (now >= scan_due) {
			scan(now >= names_due);
			if (now >= names_due)
				names_due = now + 10 * SCAN_NS;
			scan_due = now + SCAN_NS;
		}
		if (python && sm.python == 0 && now >= find_due) {
			/* once CPython is loaded, every period until its first frame shows */
			find_due = now + (python_find() ? sm.period_ns : PY_RETRY_NS);
			py_due = now;
		}
		if (python && sm.python == 1 && now >= py_due && !off)
			python_tick(&py_due, now);
		if (now >= drain_due) {
			drain();
			/* a test's tiny ring (TALLY_TEST_SAMPLE_RING) is drained seldom, so that it
			 * fills whatever the machine's load */
			drain_due = now + (sm.timer_slots < TIMER_SLOTS ? 10 * DRAIN_NS : DRAIN_NS);
		}
		if (python && sm.python == 1 && py_due < next)
			next = py_due;
		if (python && sm.python == 0 && find_due < next)
			next = find_due;
		if (sm.toggle_ns && (now / sm.toggle_ns + 1) * sm.toggle_ns < next)
			next = (now / sm.toggle_ns + 1) * sm.toggle_ns;
		sleep_until(next);
	}
	return NULL;
}

/* ---- plan, start, stop ---------------------------------------------------------------------- */

/* The timer fallback, if this process can take it: libgcc's lock-free unwinding, a signal. */
static bool plan_timer(const struct tally_config *c, char *why, size_t len)
{
	tally_unwind_init(); /* loads libgcc_s now, never in a signal handler */
	if (!tally_unwind_signal_safe()) {
		snprintf(why, len,
			 "the timer needs libgcc_s and glibc 2.35's _dl_find_object to unwind "
			 "inside a signal handler");
		return false;
	}
	/* a fork child's session starts on a thread of tally's, which blocks every signal: the
	 * parent's pick stands (the child has its dispositions and its forking thread's mask) */
	sm.signo = tally_timer_pick_signal(c->sample_signal ? c->sample_signal : sm.parent_signo,
					   why, len);
	if (!sm.signo)
		return false;
	sm.mech = MECH_TIMER;
	return true;
}

static void plan_perf(void)
{
	sm.mech = MECH_PERF;
	snprintf(
	    sm.why, sizeof(sm.why),
	    "perf: perf_event_open, task-clock every %u us of CPU time, user callchains (frame "
	    "pointers), %s",
	    1000000 / sm.rate,
	    tally_perf_counts() ? "each sample standing for the CPU time since the last"
				: "one period per sample (no counts in samples before Linux "
				  "6.12)");
}

/*
 * How native samples are taken.  With Python sampling too, each native sample gets the thread's
 * Python frames read at the same instant, in the thread, and placed where the interpreter's
 * evaluations are among its native frames (mixed stacks): only the timer's handler runs in the
 * thread, so it is the timer then, perf events where it cannot run.
 */
static void plan_native(const struct tally_config *c)
{
	char why[200] = "", timer_why[200] = "";
	bool python = (c->sample & TALLY_SAMPLE_BIT_PYTHON) && tally_safe_read_in_handler();

	if (python && plan_timer(c, timer_why, sizeof(timer_why))) {
		sm.mixed = true;
		snprintf(sm.why, sizeof(sm.why),
			 "timer: mixed stacks (--sample python,native): each sample's Python "
			 "frames are read in the thread with its native ones, which perf events "
			 "cannot");
		return;
	}
	if (c->sample_fallback)
		snprintf(sm.why, sizeof(sm.why), "timer: TALLY_SAMPLE_FALLBACK asks for it");
	else if (!tally_perf_probe(why, sizeof(why)))
		snprintf(sm.why, sizeof(sm.why), "timer: %s", why);
	else if (tally_perf_open(sm.rate, sm.depth, why, sizeof(why)) < 0)
		snprintf(sm.why, sizeof(sm.why), "timer: %s", why);
	else
		return plan_perf();
	if (!plan_timer(c, timer_why, sizeof(timer_why)))
		snprintf(sm.why, sizeof(sm.why), "none: perf events are refused and %s", timer_why);
}

void tally_sampler_plan(const struct tally_config *c, struct tally_buf *header)
{
	memset(&sm.why, 0, sizeof(sm.why));
	sm.asked = c->sample;
	sm.mech = MECH_NONE;
	sm.rate = c->sample_rate;
	sm.depth = c->stack_depth;
	sm.period_ns = 1000000000ull / c->sample_rate;
	sm.stall_ns = c->sample_stall_ns > sm.period_ns ? c->sample_stall_ns : 2 * sm.period_ns;
	sm.osrt = c->trace & TRACE_OSRT;
	sm.osrt_ns = c->osrt_threshold_ns;
	sm.timer_slots = c->test_sample_ring ? c->test_sample_ring : TIMER_SLOTS;
	sm.test_torn = c->test_torn;
	sm.toggle_ns = c->bench_toggle_ns;
	sm.toggled_off = false;
	sm.signo = 0;
	sm.mixed = false;
	if (c->sample & TALLY_SAMPLE_BIT_NATIVE)
		plan_native(c);
	if (c->sample) {
		tally_kv_uint(header, TALLY_SK_SAMPLE, c->sample);
		tally_kv_uint(header, TALLY_SK_SAMPLE_RATE, c->sample_rate);
	}
	if (sm.why[0])
		tally_kv_str(header, TALLY_SK_SAMPLE_MECHANISM, sm.why);
	if (sm.signo)
		tally_kv_uint(header, TALLY_SK_SAMPLE_SIGNAL, (uint64_t)sm.signo);
	if (sm.osrt)
		tally_kv_uint(header, TALLY_SK_OSRT_THRESHOLD, sm.osrt_ns);
}

static void on_new_thread(pid_t tid)
{
	tally_timer_arm(tid); /* in the new thread, before its first instruction of its own */
}

static void start_native(void)
{
	char why[200] = "", text[400];

	if (sm.mech != MECH_TIMER)
		return;
	/* mixed samples are large: a smaller ring (a quarter of a second's at 4 kHz a thread) */
	if (tally_timer_start(sm.rate, sm.mixed ? TIMER_SAMPLE_DEPTH : sm.depth, sm.signo,
			      sm.mixed && sm.timer_slots > 1024 ? 1024 : sm.timer_slots, sm.mixed,
			      why, sizeof(why)) < 0) {
		sm.mech = MECH_NONE;
		snprintf(text, sizeof(text), "native sampling is off: %s", why);
		tally_pipeline_note(TALLY_NOTE_WARNING, "native-sampling", text);
		return;
	}
	snprintf(text, sizeof(text),
		 "native samples by a CPU-time timer per thread, signal %d (SA_RESTART); it "
		 "cannot see kernel frames, nor time off CPU",
		 sm.signo);
	tally_pipeline_note(TALLY_NOTE_INFO, "native-sampling", text);
}

int tally_sampler_start(const struct tally_config *c)
{
	int rc;

	(void)c;
	if (!sm.asked && !sm.osrt)
		return 0;
	sm.pid = getpid();
	sm.python = 0;
	sm.offset = tally_pipeline_now() - mono();
	tally_host_threads_watch(sm.mech == MECH_TIMER ? on_new_thread : NULL);
	start_native();
	if (sm.osrt && (rc = tally_osrt_start(sm.osrt_ns, OSRT_SLOTS)) < 0) {
		sm.osrt = false;
		tally_pipeline_note(TALLY_NOTE_WARNING, "osrt", "blocking calls: out of memory");
	}
	atomic_store_explicit(&sm.running, true, memory_order_release);
	rc = tally_own_thread_create(&sm.thread, sampler_main, NULL, "tally-sampler", false);
	if (rc < 0) {
		atomic_store(&sm.running, false);
		tally_sampler_stop();
		tally_pipeline_note(TALLY_NOTE_ERROR, "sampler",
				    "no sampler thread: nothing sampled");
		return rc;
	}
	atomic_store(&sm.started, true);
	return 0;
}

bool tally_sampler_running(void)
{
	return atomic_load_explicit(&sm.running, memory_order_relaxed);
}

/* Everything still in the rings, and every thread's entry once more (cumulative). */
static void final_drain(void)
{
	size_t i;

	drain();
	for (i = 0; i < TABLE; i++)
		if (sm.threads[i].tid) {
			sm.threads[i].written_flags = 0; /* write it again */
			note_thread(&sm.threads[i]);
		}
	hand_over_threads();
	hand_over();
	if ((sm.asked & TALLY_SAMPLE_BIT_PYTHON) && sm.python == 0)
		python_note("off: no CPython interpreter was running in this process",
			    TALLY_NOTE_INFO);
}

void tally_sampler_stop(void)
{
	if (sm.osrt) /* first: the waits of the close itself are tally's, not the program's */
		tally_osrt_stop();
	if (atomic_exchange(&sm.running, false) && atomic_load(&sm.started)) {
		wake_sampler();
		libc_pthread_join(sm.thread, NULL);
	}
	atomic_store(&sm.started, false);
	tally_host_threads_unwatch();
	if (sm.mech == MECH_TIMER)
		tally_timer_stop();
	if (sm.asked || sm.osrt)
		final_drain();
	if (sm.mech == MECH_PERF)
		tally_perf_close();
	sm.mech = MECH_NONE;
	sm.asked = 0;
	sm.osrt = false;
	tally_host_thread_close_all();
	tally_buf_fini(&sm.entries);
}

void tally_sampler_after_fork_child(void)
{
	/* the sampler thread is not here; its state is the parent's copy */
	atomic_store(&sm.running, false);
	atomic_store(&sm.started, false);
	tally_osrt_after_fork_child();
	tally_timer_after_fork_child();
	tally_perf_after_fork_child();
	tally_host_threads_forget();
	tally_own_threads_forget();
	/* the parent's sampler may have handed this batch over (and the pipeline freed it) an
	 * instant before the fork: the child's copy of the pointer is not its own to free */
	sm.batch = NULL;
	sm.n = 0;
	memset(sm.threads, 0, sizeof(sm.threads));
	memset(&sm.entries, 0, sizeof(sm.entries)); /* the parent's buffer: leaked, not freed */
	sm.parent_signo = sm.signo;
	sm.mech = MECH_NONE;
	sm.asked = 0;
	sm.osrt = false;
	sm.main_pthread = (unsigned long)pthread_self(); /* the child's only thread */
	atomic_store(&sm.fork_since, 0);
	atomic_store(&sm.fork_ns, 0);
	sm.fork_ns_seen = 0;
}
