/* SPDX-License-Identifier: MIT */
/*
 * The session: output file, SESSION header, pipeline, and the closing flush.  See collector.h.
 */
#include "clock.h"
#include "collector.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cupti-api.h"
#include "log.h"
#include "pattern.h"
#include "pipeline.h"

struct session g_session;

/* Serialises start and finish; never taken in a signal handler or a CUPTI buffer callback. */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t mono_now_ns(void)
{
	return tally_monotonic_ns();
}

bool session_running(void)
{
	return atomic_load_explicit(&g_session.state, memory_order_acquire) == SESSION_RUNNING &&
	       g_session.pid == getpid();
}

/* Append one line to the manifest `tally record` reads (O_APPEND: one write is one line). */
static void manifest_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void manifest_line(const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;
	int fd, n;

	if (!g_session.cfg.manifest[0])
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(g_session.cfg.manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, line, (size_t)n);
		close(fd);
	}
}

/* Only the root process may take the exact name; others get "-PID" before ".tally". */
static void per_process_name(char *path, size_t len)
{
	const char *pat = g_session.cfg.output;
	char *dot;

	if (strstr(pat, "%p") || strstr(pat, "%n"))
		return;
	if (g_session.cfg.root_pid == 0 || g_session.cfg.root_pid == (long)getpid())
		return;
	dot = strrchr(path, '.');
	if (dot && strcmp(dot, ".tally") == 0 && (size_t)(dot - path) + 24 < len)
		snprintf(dot, len - (size_t)(dot - path), "-%ld.tally", (long)getpid());
}

static bool replaceable(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int open_output(char *why, size_t len)
{
	struct tally_pattern_vars vars = {.pid = getpid()};
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND;
	char err[256];
	int rc, fd;

	rc = tally_pattern_expand(g_session.cfg.output, &vars, g_session.path,
				  sizeof(g_session.path), err, sizeof(err));
	if (rc < 0) {
		snprintf(why, len, "TALLY_OUTPUT=%.1024s: %.200s", g_session.cfg.output, err);
		return rc;
	}
	per_process_name(g_session.path, sizeof(g_session.path));
	/* Only ever a regular file is replaced, and never through a link: --force removes an
	 * existing regular file, then the trace is created anew (O_EXCL does not follow links). */
	if (g_session.cfg.force && replaceable(g_session.path))
		unlink(g_session.path);
	flags |= O_EXCL | O_NOFOLLOW;
	fd = open(g_session.path, flags, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, len, "%s: %s%s", g_session.path, strerror(errno),
			 errno == EEXIST ? " (set TALLY_FORCE=1 or tally record --force)" : "");
		return rc;
	}
	return fd;
}

static void cmdline(struct tally_buf *b)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

	if (fd >= 0)
		close(fd);
	if (n > 0)
		tally_kv_bytes(b, TALLY_SK_CMDLINE, buf, (size_t)(buf[n - 1] ? n : n - 1));
}

static void config_text(struct tally_buf *b, const struct tally_config *c)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "trace=%#x\nbuffer_size=%zu\npool_buffers=%u\nslice_ms=%llu\ndelay_ms=%llu\n"
		 "duration_ms=%llu\ncapture_range=%s\ndevices=%#llx\nranks=%s\ncupti=%s\n",
		 c->trace, c->buffer_size, c->pool_buffers,
		 (unsigned long long)(c->slice_ns / 1000000),
		 (unsigned long long)(c->delay_ns / 1000000),
		 (unsigned long long)(c->duration_ns / 1000000),
		 c->capture_profiler_api ? "cudaProfilerApi" : "none",
		 (unsigned long long)c->device_mask, c->ranks, cupti.path);
	tally_kv_str(b, TALLY_SK_CONFIG, text);
}

static uint64_t kinds_mask(unsigned trace)
{
	uint64_t k = 0;

	k |= trace & TRACE_KERNEL ? 1u << TALLY_KIND_KERNEL : 0;
	k |= trace & TRACE_MEMCPY ? 1u << TALLY_KIND_MEMCPY : 0;
	k |= trace & TRACE_MEMSET ? 1u << TALLY_KIND_MEMSET : 0;
	k |= trace & TRACE_RUNTIME ? 1u << TALLY_KIND_RUNTIME : 0;
	k |= trace & (TRACE_DRIVER | TRACE_LAUNCH_DRIVER) ? 1u << TALLY_KIND_DRIVER : 0;
	k |= trace & TRACE_SYNC ? 1u << TALLY_KIND_SYNC : 0;
	k |= trace & TRACE_NVTX ? 1u << TALLY_KIND_NVTX_RANGE | 1u << TALLY_KIND_NVTX_MARK : 0;
	k |= trace & TRACE_OVERHEAD ? 1u << TALLY_KIND_OVERHEAD : 0;
	k |= trace & TRACE_MEMORY ? 1u << TALLY_KIND_MEMORY : 0;
	return k;
}

/* The driver is loaded (it is injecting us) but we do not link it: look its symbol up. */
static void driver_version(struct tally_buf *b)
{
	int (*get)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cuDriverGetVersion");
	int v = 0;

	if (get && get(&v) == 0 && v > 0)
		tally_kv_uint(b, TALLY_SK_DRIVER_VERSION, (uint64_t)v);
}

static void session_header(struct tally_buf *b)
{
	const struct tally_config *c = &g_session.cfg;
	char host[256] = "", exe[PATH_MAX];
	uint32_t version = 0;
	ssize_t n;

	gethostname(host, sizeof(host) - 1);
	tally_kv_str(b, TALLY_SK_WRITER, "tally " TALLY_VERSION);
	tally_kv_str(b, TALLY_SK_HOST, host);
	tally_kv_uint(b, TALLY_SK_PID, (uint64_t)getpid());
	tally_kv_uint(b, TALLY_SK_PPID, (uint64_t)getppid());
	cmdline(b);
	if (g_session.rank[0])
		tally_kv_str(b, TALLY_SK_RANK, g_session.rank);
	tally_kv_uint(b, TALLY_SK_START_REALTIME, tally_realtime_ns());
	tally_kv_uint(b, TALLY_SK_START_MONOTONIC, mono_now_ns());
	tally_kv_uint(b, TALLY_SK_START_CUPTI, cupti_now());
	if (cupti.GetVersion && cupti.GetVersion(&version) == CUPTI_SUCCESS)
		tally_kv_uint(b, TALLY_SK_CUPTI_VERSION, version);
	config_text(b, c);
	tally_kv_uint(b, TALLY_SK_KINDS, kinds_mask(c->trace));
	tally_kv_bytes(b, TALLY_SK_SESSION_ID, g_session.id, sizeof(g_session.id));
	tally_kv_str(b, TALLY_SK_SOURCE, "cupti");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		tally_kv_str(b, TALLY_SK_EXE, exe);
	}
	driver_version(b);
	tally_kv_uint(b, TALLY_SK_SLICE_NS, c->slice_ns);
	tally_kv_str(b, TALLY_SK_OUTPUT, g_session.path);
}

static void new_session_id(void)
{
	uint64_t x = tally_realtime_ns() ^ ((uint64_t)getpid() << 32) ^ mono_now_ns();
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t i;

	if (fd >= 0 && read(fd, g_session.id, sizeof(g_session.id)) == sizeof(g_session.id)) {
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < sizeof(g_session.id); i++) { /* splitmix64 fallback */
		x += 0x9e3779b97f4a7c15ull;
		g_session.id[i] = (uint8_t)((x ^ (x >> 31)) >> (i % 8));
	}
}

static struct tally_pipeline_config pipeline_config(const struct tally_config *c)
{
	struct tally_pipeline_config pc;

	tally_pipeline_config_default(&pc);
	pc.buffer_size = c->buffer_size;
	pc.pool_buffers = c->pool_buffers;
	pc.slice_ns = c->slice_ns;
	pc.trace_api = (c->trace & (TRACE_RUNTIME | TRACE_DRIVER | TRACE_LAUNCH_DRIVER)) != 0;
	pc.device_mask = c->device_mask;
	pc.slow_consumer_ns = c->slow_consumer_ns;
	pc.stacks = c->python_stacks || c->native_stacks;
	return pc;
}

/*
 * Declining a buffer when the pool is empty (the bounded pool's answer) crashed CUPTI before API
 * version 27 (CUDA 12.9).  Rather than risk the program, such a CUPTI is not used.
 */
static int check_cupti_version(char *why, size_t len)
{
	uint32_t v = 0;

	if (cupti.GetVersion(&v) == CUPTI_SUCCESS && v >= 27)
		return 0;
	snprintf(why, len,
		 "CUPTI API version %u at %s is older than 27 (CUDA 12.9): tally needs "
		 "CUDA 12.9 or newer",
		 v, cupti.path);
	return -ENOTSUP;
}

/* Open, write the header, start the pipeline and CUPTI.  Called with session_lock held. */
static int start_locked(const char *why_started, char *why, size_t len)
{
	struct tally_config *c = &g_session.cfg;
	struct tally_pipeline_config pc;
	struct tally_buf header = {0};
	struct tally_sink sink;
	bool cupti_ok;
	int rc;

	rc = tally_config_load(c, why, len);
	if (rc < 0)
		return rc;
	if (!tally_rank_selected(c->ranks, g_session.rank, sizeof(g_session.rank))) {
		snprintf(why, len, "rank not in TALLY_RANKS=%s: not recorded", c->ranks);
		return -ECANCELED;
	}
	cupti_ok = cupti_api_load(why, len) == 0;
	if (!cupti_ok && strcmp(why_started, "cuda") == 0)
		return -ENOENT;
	if (cupti_ok && (rc = check_cupti_version(why, len)) < 0)
		return rc;
	rc = open_output(why, len);
	if (rc < 0)
		return rc;
	g_session.fd = rc;
	g_session.pid = getpid();
	new_session_id();
	session_header(&header);
	pc = pipeline_config(c);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)g_session.fd};
	rc = tally_pipeline_start(&pc, cupti_ok ? &tally_collector_source : &tally_clock_source,
				  &sink, &header);
	tally_buf_fini(&header);
	if (rc < 0) {
		snprintf(why, len, "%s: cannot start: %s", g_session.path, strerror(-rc));
		goto close_file;
	}
	if (cupti_ok && (rc = cupti_setup(c, why, len)) < 0)
		tally_pipeline_note(TALLY_NOTE_ERROR, "cupti-setup", why); /* keep NVTX going */
	g_session.started_mono = mono_now_ns();
	return 0;
close_file:
	close(g_session.fd);
	unlink(g_session.path);
	g_session.fd = -1;
	return rc;
}

void session_start(const char *why_started)
{
	char why[PATH_MAX + 128];
	int expected = SESSION_NONE, rc;

	if (atomic_load_explicit(&g_session.state, memory_order_acquire) != SESSION_NONE)
		return;
	pthread_mutex_lock(&session_lock);
	/* STARTING also stops re-entry on this thread: setting CUPTI up may call cuInit, which
	 * calls InitializeInjection, which comes back here. */
	if (!atomic_compare_exchange_strong_explicit(&g_session.state, &expected, SESSION_STARTING,
						     memory_order_acq_rel, memory_order_relaxed))
		goto unlock;
	expected = SESSION_STARTING;
	rc = start_locked(why_started, why, sizeof(why));
	if (rc < 0) {
		atomic_store_explicit(&g_session.state, SESSION_OFF, memory_order_release);
		if (rc == -ECANCELED)
			tally_log("%s", why);
		else
			tally_log_user("not recording this process: %s", why);
		manifest_line("off %d %s", (int)getpid(), why);
		goto unlock;
	}
	/* Release: the pipeline and config are set up before anyone sees RUNNING. */
	atomic_compare_exchange_strong_explicit(&g_session.state, &expected, SESSION_RUNNING,
						memory_order_release, memory_order_relaxed);
	manifest_line("start %d %s", (int)getpid(), g_session.path);
	tally_log("recording to %s (started by %s)", g_session.path, why_started);
	if (control_start() < 0)
		tally_pipeline_note(TALLY_NOTE_WARNING, "no-control-thread",
				    "no periodic flush: a SIGKILL loses more than one slice");
	exitpath_install();
unlock:
	pthread_mutex_unlock(&session_lock);
}

/* The close: no new records (the window ends here; a program that runs on after a SIGTERM
 * must not leave a buffer in CUPTI's hands), then everything CUPTI holds, complete or not. */
static void flush_forced(void *arg)
{
	(void)arg;
	cupti_window(false);
	cupti_flush(true);
}

static void finalize_cupti(void *arg)
{
	(void)arg;
	cupti_teardown();
}

static void wait_until_closed(uint64_t max_ns)
{
	struct timespec step = {0, 2000000};
	uint64_t waited = 0;

	while (atomic_load_explicit(&g_session.state, memory_order_acquire) == SESSION_FINISHING &&
	       waited < max_ns) {
		nanosleep(&step, NULL);
		waited += 2000000;
	}
}

void session_finish(enum tally_flush_path path, int signo)
{
	struct tally_stop_report rep;
	int expected = SESSION_RUNNING;
	uint64_t timeout = g_session.cfg.flush_timeout_ns;
	bool flushed = true;

	if (g_session.pid != getpid())
		return; /* a fork or vfork child sharing our memory: not its session */
	if (!atomic_compare_exchange_strong_explicit(&g_session.state, &expected, SESSION_FINISHING,
						     memory_order_acq_rel, memory_order_acquire)) {
		/* Another exit path is closing the trace (a signal's, say, on the control thread):
		 * don't let this one end the process under it.  Bounded. */
		wait_until_closed(2 * timeout + 2000000000ull);
		return;
	}
	pthread_mutex_lock(&session_lock);
	tally_pipeline_flush_begin(path, signo);
	if (g_session.cupti_on && !run_bounded(flush_forced, NULL, timeout)) {
		flushed = false;
		tally_pipeline_watchdog_fired();
		tally_log_user("CUPTI's flush did not return in %llu ms; closing without it",
			       (unsigned long long)(timeout / 1000000));
	}
	nvtx_flush_all();
	tally_pipeline_stop(&rep);
	/* Finalize only a CUPTI that answered: one stuck in its flush could hang us here too. */
	if (path == TALLY_FLUSH_EXIT && g_session.cupti_on && flushed)
		(void)run_bounded(finalize_cupti, NULL, timeout);
	close(g_session.fd);
	g_session.fd = -1;
	manifest_line("end %d %s %s %llu %llu %s", (int)getpid(), rep.complete ? "clean" : "loss",
		      tally_flush_path_name(path), (unsigned long long)rep.records,
		      (unsigned long long)rep.bytes_written, g_session.path);
	tally_log("closed %s: %llu records, flush by %s in %.3f ms", g_session.path,
		  (unsigned long long)rep.records, tally_flush_path_name(path),
		  (double)rep.flush_ns / 1e6);
	atomic_store_explicit(&g_session.state, SESSION_DONE, memory_order_release);
	atomic_fetch_add_explicit(&g_session.done_gen, 1, memory_order_release);
	pthread_mutex_unlock(&session_lock);
}

static void flush_normal(void *arg)
{
	(void)arg;
	cupti_flush(false);
}

void session_durable_flush(void)
{
	if (!session_running())
		return;
	if (g_session.cupti_on)
		(void)run_bounded(flush_normal, NULL, g_session.cfg.flush_timeout_ns);
	tally_pipeline_tick();
}

struct bounded {
	void (*fn)(void *);
	void *arg;
	_Atomic int done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	_Atomic int refs; /* the waiter and the runner; the last one frees */
};

static void bounded_put(struct bounded *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b);
	}
}

static void *bounded_main(void *arg)
{
	struct bounded *b = arg;

	b->fn(b->arg);
	pthread_mutex_lock(&b->lock);
	atomic_store_explicit(&b->done, 1, memory_order_release);
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	bounded_put(b);
	return NULL;
}

static struct bounded *bounded_new(void (*fn)(void *), void *arg)
{
	struct bounded *b = calloc(1, sizeof(*b));
	pthread_condattr_t ca;

	if (!b)
		return NULL;
	b->fn = fn;
	b->arg = arg;
	atomic_init(&b->refs, 2);
	pthread_mutex_init(&b->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cond, &ca);
	pthread_condattr_destroy(&ca);
	return b;
}

/* A detached thread that takes no signals; false if none could be made. */
static bool bounded_start(struct bounded *b)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &attr, bounded_main, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0;
}

static bool bounded_wait(struct bounded *b, uint64_t timeout_ns)
{
	struct timespec deadline;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)(timeout_ns / 1000000000ull);
	deadline.tv_nsec += (long)(timeout_ns % 1000000000ull);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&b->lock);
	while (!atomic_load_explicit(&b->done, memory_order_acquire))
		if (pthread_cond_timedwait(&b->cond, &b->lock, &deadline) == ETIMEDOUT)
			break;
	ok = atomic_load_explicit(&b->done, memory_order_acquire);
	pthread_mutex_unlock(&b->lock);
	return ok;
}

bool run_bounded(void (*fn)(void *), void *arg, uint64_t timeout_ns)
{
	struct bounded *b = bounded_new(fn, arg);
	bool ok;

	if (!b || !bounded_start(b)) {
		/* No watchdog to be had (no memory, no threads): run it here, unbounded. */
		if (b) {
			atomic_store(&b->refs, 1);
			bounded_put(b);
		}
		fn(arg);
		return true;
	}
	ok = bounded_wait(b, timeout_ns);
	/* On a timeout the runner is left behind, stuck; it frees b if it ever returns. */
	bounded_put(b);
	return ok;
}
