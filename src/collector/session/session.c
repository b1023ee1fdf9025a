/* SPDX-License-Identifier: MIT */
/*
 * The session (collector.h): the one owner of the process's recording.  It reads top-down:
 *
 *   session_start    config, rank, CUPTI, output file, SESSION header, pipeline, tracer,
 *                    control thread
 *   control_main     the control thread: periodic flush, the window's timers, and what signal
 *                    handlers ask for (close and end the process, flush, crash close)
 *   session_close    the closing flush, by whichever exit path comes first
 *   session_*_fork   the locks across fork; the child forgets the parent's recording
 *
 * Every state change of struct session happens here.
 */
#include "clock.h"
#include "collector.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "bounded.h"
#include "cupti-api.h"
#include "driver.h"
#include "jobkeys.h"
#include "libc.h"
#include "log.h"
#include "nvtx.h"
#include "ownthread.h"
#include "pattern.h"
#include "pipeline.h"
#include "quiet.h"
#include "sampler.h"
#include "sigreal.h"

#define EXEC_FROM_VAR  "TALLY_EXEC_FROM"
#define QUIET_EVERY_MS 50 /* the control thread takes in the reports of quiet.c this often */

static struct session the_session = {.file = {.kept = {-1, 0, 0}},
				     .lock = PTHREAD_MUTEX_INITIALIZER,
				     .metrics_lock = PTHREAD_MUTEX_INITIALIZER};

struct session *session_get(void)
{
	return &the_session;
}

static uint64_t mono_now_ns(void)
{
	return tally_monotonic_ns();
}

/* TALLY_EXEC_FROM=PID:N: N files were written by earlier images of PID (exitpath.c sets it
 * when one execs).  Only this very pid's count applies: a fork child's is its own. */
static unsigned exec_files_from_env(void)
{
	const char *v = getenv(EXEC_FROM_VAR);
	long pid = 0;
	unsigned n = 0;

	if (!v || sscanf(v, "%ld:%u", &pid, &n) != 2 || pid != (long)getpid())
		return 0;
	return n;
}

/* When this image was loaded: --force replaces only a file older than that (see replaceable). */
static struct timespec loaded_at;

/* CUPTI's context-destroy callback, on the thread destroying the context: GPU metrics of its
 * device end now, while the context is there (pmsampler.h). */
static void context_ending(void *arg, uint64_t devices)
{
	struct session *s = arg;
	struct timespec step = {0, 1000000};
	uint64_t until = tally_monotonic_ns() + s->cfg.flush_timeout_ns;
	bool closing;

	if (s->pid != getpid())
		return;
	libc_pthread_mutex_lock(&s->metrics_lock);
	pm_sampler_context_ending(s->metrics, devices, cupti_now(), s->cfg.flush_timeout_ns);
	closing = atomic_load_explicit(&s->close_in_metrics, memory_order_acquire);
	pthread_mutex_unlock(&s->metrics_lock);
	/* A close is stopping the sampler (a signal's, whose thread was let go and went on to
	 * exit): its stop, last decode and disable need the context and the PM libraries, which
	 * go once this returns.  Wait for it, bounded as the close is (the stand-in's PM calls
	 * after them aborted the program, test-gpumetrics.sh's termstop). */
	while (closing && tally_monotonic_ns() < until) {
		libc_nanosleep(&step, NULL);
		closing = atomic_load_explicit(&s->close_in_metrics, memory_order_acquire);
	}
}

/*
 * exit() runs atexit handlers newest first.  The PM libraries that CUPTI loads to sample GPU
 * metrics register their destructors when loaded, after the session's own exit handler, so they
 * would run before it and leave the sampler's last stop, decode and disable to freed state (a
 * double free in libnvperf_host on the H200).  This handler, registered once those libraries are
 * in, ends sampling first, while they and the context are there; the session closes later as
 * before.  A fork child inherits it and returns at once (context_ending's pid check).
 */
static void metrics_at_exit(void)
{
	context_ending(&the_session, ~0ull);
}

static void register_metrics_at_exit(void)
{
	atexit(metrics_at_exit);
}

/*
 * A program that calls exit() while the sampler is still setting sampling up (its first half
 * second or so) has the PM libraries' destructors registered, but not yet metrics_at_exit: they
 * would run first, and the sampler's next PM call meet freed state.  Where exit() itself comes
 * to us (LD_PRELOAD), sampling ends here, before any handler: the sampler finishes its setup,
 * stops and disables each device, and makes no PM call after (bounded by the flush timeout, as
 * at the context's end).  A return from main reaches libc's exit() without us: that window stays.
 */
void session_exit_called(struct session *s)
{
	context_ending(s, ~0ull);
}

static void metrics_pm_loaded(void *arg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)arg;
	pthread_once(&once, register_metrics_at_exit);
}

void session_init(struct session *s)
{
	clock_gettime(CLOCK_REALTIME, &loaded_at);
	s->file.kept = TALLY_KEPT_NONE;
	s->room.fd = -1;
	s->exec_files = exec_files_from_env();
	cupti_tracer_init(&s->tracer);
	s->tracer.context_ending = context_ending;
	s->tracer.context_arg = s;
	control_init(&s->control);
}

unsigned session_exec_files(const struct session *s)
{
	return s->exec_files + (s->wrote_file && s->pid == getpid());
}

bool session_running(const struct session *s)
{
	return atomic_load_explicit(&s->state, memory_order_acquire) == SESSION_RUNNING &&
	       s->pid == getpid();
}

bool session_traces_nvtx(const struct session *s)
{
	return session_running(s) && (s->cfg.trace & TRACE_NVTX);
}

/* Append one line to the manifest `tally record` reads (O_APPEND: one write is one line). */
static void manifest_line(const struct session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void manifest_line(const struct session *s, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;
	int fd, n;

	if (!s->cfg.manifest[0])
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(s->cfg.manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		(void)!write(fd, line, (size_t)n);
		close(fd);
	}
}

/* The trace could not be opened again after the program closed its descriptor: the trace may
 * never get the word, so tally record hears it from the manifest. */
static void trace_lost(void *arg, const char *text)
{
	manifest_line(arg, "note %d %s", (int)getpid(), text);
}

/* Put "-WHAT" before ".tally" (or at the end). */
static void name_suffix(char *path, size_t len, const char *what)
{
	char *dot = strrchr(path, '.');
	size_t at = dot && strcmp(dot, ".tally") == 0 ? (size_t)(dot - path) : strlen(path);
	char tail[16];

	snprintf(tail, sizeof(tail), "%s", path + at);
	if (at + strlen(what) + strlen(tail) + 2 < len)
		snprintf(path + at, len - at, "-%s%s", what, tail);
}

/* A regular file from before this run: one written since may be another process's trace
 * (a fork child that started recording first took the exact name). */
static bool replaceable(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	return st.st_mtim.tv_sec < loaded_at.tv_sec ||
	       (st.st_mtim.tv_sec == loaded_at.tv_sec && st.st_mtim.tv_nsec < loaded_at.tv_nsec);
}

/* A pattern with %p or %n makes a name no other process of the run makes. */
static bool name_is_unique(const struct session *s)
{
	return strstr(s->cfg.output, "%p") || strstr(s->cfg.output, "%n");
}

/* The root process (the one `tally record` started) owns the exact name: --force may replace
 * it.  Another process replaces nothing it did not make: the name may be a sibling's. */
static bool may_replace(const struct session *s)
{
	return name_is_unique(s) || s->cfg.root_pid == 0 || s->cfg.root_pid == (long)getpid();
}

/*
 * The expanded name, with "-PID" when with_pid (the exact name was taken: two processes of one
 * run whose pattern has no %p or %n), and "-execN" for an image that follows another of the
 * same pid through exec, when that one wrote a file: the pid (and so %p) is the same, and the
 * earlier image's file must stay as it was.
 */
static void per_process_name(const struct session *s, bool with_pid, char *path, size_t len)
{
	char what[32];

	if (with_pid) {
		snprintf(what, sizeof(what), "%ld", (long)getpid());
		name_suffix(path, len, what);
	}
	if (s->exec_files) {
		snprintf(what, sizeof(what), "exec%u", s->exec_files);
		name_suffix(path, len, what);
	}
}

/* Only ever a regular file is replaced, and never through a link: --force removes an existing
 * regular file, then the trace is created anew (O_EXCL does not follow links). */
static int create_trace(const struct session *s, bool replace)
{
	if (replace && s->cfg.force && replaceable(s->path))
		unlink(s->path);
	return open(s->path, O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | O_EXCL | O_NOFOLLOW, 0644);
}

/* The exact name if it is free (or ours to replace); else, for a process that shares the
 * pattern with others, the name with "-PID". */
static int open_output(struct session *s, char *why, size_t len)
{
	struct tally_pattern_vars vars = {.pid = getpid()};
	char exact[PATH_MAX], err[256];
	bool shared = !name_is_unique(s);
	int rc, fd;

	rc = tally_pattern_expand(s->cfg.output, &vars, exact, sizeof(exact), err, sizeof(err));
	if (rc < 0) {
		snprintf(why, len, "TALLY_OUTPUT=%.1024s: %.200s", s->cfg.output, err);
		return rc;
	}
	snprintf(s->path, sizeof(s->path), "%s", exact);
	per_process_name(s, false, s->path, sizeof(s->path));
	fd = create_trace(s, may_replace(s));
	if (fd < 0 && errno == EEXIST && shared) {
		snprintf(s->path, sizeof(s->path), "%s", exact);
		per_process_name(s, true, s->path, sizeof(s->path));
		fd = create_trace(s, true);
	}
	if (fd < 0) {
		rc = -errno;
		snprintf(why, len, "%s: %s%s", s->path, strerror(errno),
			 errno == EEXIST ? " (set TALLY_FORCE=1 or tally record --force)" : "");
		return rc;
	}
	return fd;
}

static void cmdline(struct tally_buf *b)
{
	char buf[8192];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? libc_read(fd, buf, sizeof(buf)) : -1;

	if (fd >= 0)
		close(fd);
	if (n > 0)
		tally_kv_bytes(b, TALLY_SK_CMDLINE, buf, (size_t)(buf[n - 1] ? n : n - 1));
}

/* The GPU metrics' devices as TALLY_GPU_METRICS says them: "all", or the CUDA ordinals. */
static const char *devices_text(uint64_t mask, char *buf, size_t len)
{
	size_t at = 0;
	unsigned i;

	snprintf(buf, len, "all");
	for (i = 0; mask && i < 64 && at < len; i++)
		if (mask >> i & 1)
			at += (size_t)snprintf(buf + at, len - at, "%s%u", at ? "," : "", i);
	return buf;
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
	k |= trace & TRACE_OSRT ? 1u << TALLY_KIND_OSRT : 0;
	return k;
}

/* The driver is loaded (it is injecting us) but we do not link it: look its symbol up in it. */
static void driver_version(struct tally_buf *b)
{
	int (*get)(int *) = (int (*)(int *))tally_driver_sym("cuDriverGetVersion");
	int v = 0;

	if (get && get(&v) == 0 && v > 0)
		tally_kv_uint(b, TALLY_SK_DRIVER_VERSION, (uint64_t)v);
}

/* The output's file system, by name where it is a known one: where no room could be kept for the
 * close, a reader says which file system refused. */
static void output_fs(struct tally_buf *b, int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
	    {0xef53, "ext4"},	   {0x01021994, "tmpfs"},  {0x58465342, "xfs"},
	    {0x9123683e, "btrfs"}, {0x6969, "nfs"},	   {0x794c7630, "overlay"},
	    {0x65735546, "fuse"},  {0x0bd00bd0, "lustre"}, {0x47504653, "gpfs"},
	    {0xff534d42, "cifs"},  {0xfe534d42, "smb2"},   {0x00c36400, "ceph"},
	    {0x2fc12fc1, "zfs"},   {0x4d44, "vfat"},	   {0x19830326, "beegfs"},
	    {0x01021997, "9p"},	   {0x858458f6, "ramfs"},  {0x73717368, "squashfs"},
	};
	struct statfs st;
	char hex[32];
	size_t i;

	if (fstatfs(fd, &st) < 0)
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((unsigned long)st.f_type == names[i].magic) {
			tally_kv_str(b, TALLY_SK_OUTPUT_FS, names[i].name);
			return;
		}
	snprintf(hex, sizeof(hex), "0x%lx", (unsigned long)st.f_type);
	tally_kv_str(b, TALLY_SK_OUTPUT_FS, hex);
}

static void session_header(const struct session *s, struct tally_buf *b)
{
	const struct tally_config *c = &s->cfg;
	char host[256] = "", exe[PATH_MAX];
	uint32_t version = 0;
	ssize_t n;

	gethostname(host, sizeof(host) - 1);
	tally_kv_str(b, TALLY_SK_WRITER, "tally " TALLY_VERSION);
	tally_kv_str(b, TALLY_SK_HOST, host);
	tally_kv_uint(b, TALLY_SK_PID, (uint64_t)getpid());
	tally_kv_uint(b, TALLY_SK_PPID, (uint64_t)getppid());
	cmdline(b);
	if (s->rank[0])
		tally_kv_str(b, TALLY_SK_RANK, s->rank);
	tally_job_keys(b);
	tally_kv_uint(b, TALLY_SK_START_REALTIME, s->start_realtime);
	tally_kv_uint(b, TALLY_SK_START_MONOTONIC, s->start_mono);
	tally_kv_uint(b, TALLY_SK_START_CUPTI, s->start_clock);
	if (cupti.GetVersion && cupti.GetVersion(&version) == CUPTI_SUCCESS)
		tally_kv_uint(b, TALLY_SK_CUPTI_VERSION, version);
	config_text(b, c);
	tally_kv_uint(b, TALLY_SK_KINDS,
		      kinds_mask(c->trace) | (c->sample ? 1u << TALLY_KIND_CPU_SAMPLE : 0));
	tally_kv_bytes(b, TALLY_SK_SESSION_ID, s->id, sizeof(s->id));
	if (memcmp(s->parent_id, (uint8_t[16]){0}, sizeof(s->parent_id)) != 0)
		tally_kv_bytes(b, TALLY_SK_PARENT_ID, s->parent_id, sizeof(s->parent_id));
	tally_kv_str(b, TALLY_SK_SOURCE, "cupti");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		tally_kv_str(b, TALLY_SK_EXE, exe);
	}
	driver_version(b);
	tally_kv_uint(b, TALLY_SK_SLICE_NS, c->slice_ns);
	tally_kv_str(b, TALLY_SK_OUTPUT, s->path);
	tally_kv_uint(b, TALLY_SK_CLOSE_RESERVE, s->reserve_errno ? 0 : TALLY_CLOSE_RESERVE);
	tally_kv_uint(b, TALLY_SK_CLOSE_RESERVE_ERRNO, (uint64_t)s->reserve_errno);
	output_fs(b, trace_file_fd(&s->file));
	if (c->gpu_metrics) {
		char devices[256];

		tally_kv_str(b, TALLY_SK_GPU_METRICS,
			     devices_text(c->gpu_metrics_devices, devices, sizeof(devices)));
		tally_kv_uint(b, TALLY_SK_GPU_METRICS_HZ, c->gpu_metrics_hz);
		tally_kv_str(b, TALLY_SK_GPU_METRICS_SET, c->gpu_metrics_set);
	}
}

static void new_session_id(uint8_t id[16])
{
	uint64_t x = tally_realtime_ns() ^ ((uint64_t)getpid() << 32) ^ mono_now_ns();
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t i;

	if (fd >= 0 && libc_read(fd, id, 16) == 16) {
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < 16; i++) { /* splitmix64 fallback */
		x += 0x9e3779b97f4a7c15ull;
		id[i] = (uint8_t)((x ^ (x >> 31)) >> (i % 8));
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
	pc.stacks = c->python_stacks || c->native_stacks || c->sample;
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

/* ---- start -------------------------------------------------------------------------------- */

static void *control_main(void *arg);

/* Config, rank, CUPTI and its version: whether this process is recorded at all. */
static int start_check(struct session *s, const char *why_started, bool *cupti_ok, char *why,
		       size_t len)
{
	struct tally_config *c = &s->cfg;
	int rc;

	rc = tally_config_load(c, why, len);
	if (rc < 0)
		return rc;
	if (!tally_rank_selected(c->ranks, s->rank, sizeof(s->rank))) {
		snprintf(why, len, "rank not in TALLY_RANKS=%s: not recorded", c->ranks);
		return -ECANCELED;
	}
	if (strcmp(why_started, "host") == 0)
		return 0; /* CUPTI comes at cuInit, if the program ever calls it */
	*cupti_ok = cupti_api_load(why, len) == 0;
	if (!*cupti_ok && strcmp(why_started, "cuda") == 0)
		return -ENOENT;
	if (*cupti_ok && (rc = check_cupti_version(why, len)) < 0)
		return rc;
	return 0;
}

/* Which clock and CUPTI calls the pipeline uses: a session that starts before CUPTI (host
 * sampling from load) can take CUPTI in later, on the clock CUPTI uses by default. */
static const struct tally_source *source_for(const struct session *s, bool cupti_ok)
{
	if (cupti_ok)
		return &tally_collector_source;
	return tally_config_from_start(&s->cfg) ? &tally_late_cupti_source : &tally_clock_source;
}

/* The trace file (with the room kept for its close), its sink and its SESSION payload. */
static int open_trace(struct session *s, struct tally_sink *sink, struct tally_buf *header,
		      char *why, size_t len)
{
	int rc = open_output(s, why, len);

	if (rc < 0)
		return rc;
	rc = trace_file_adopt(&s->file, rc, s->path);
	if (rc < 0) {
		snprintf(why, len, "%s: %s", s->path, strerror(-rc));
		unlink(s->path);
		return rc;
	}
	s->file.lost = trace_lost;
	s->file.lost_arg = s;
	/* Room for the final ledger, so that a full disk still ends the file with one that says
	 * so; where the file system cannot keep it, the session header says which one refused. */
	rc = tally_room_keep(&s->room, s->path);
	s->reserve_errno = rc < 0 ? -rc : 0;
	s->room.fd = tally_fd_high(s->room.fd);
	session_header(s, header);
	tally_buf_put(header, s->plan.data, s->plan.len);
	*sink = (struct tally_sink){trace_file_write, &s->file,
				    s->room.fd >= 0 ? tally_room_release : NULL, &s->room};
	s->wrote_file = true;
	manifest_line(s, "start %d %s", (int)getpid(), s->path);
	return 0;
}

/* The pipeline's opener (config.open), on its consumer's side at the first record: it must not
 * take s->lock (the close holds it while it stops the pipeline). */
static int open_lazily(void *arg, struct tally_sink *sink, struct tally_buf *header)
{
	struct session *s = arg;
	char why[PATH_MAX + 128];
	int rc = open_trace(s, sink, header, why, sizeof(why));

	if (rc < 0) {
		s->open_refused = true;
		tally_log_user("not recording this process: %s", why);
		manifest_line(s, "off %d %s", (int)getpid(), why);
		return rc;
	}
	tally_log("recording to %s", s->path);
	return 0;
}

/* The pipeline, and the file it writes: opened now, or (a session from load) at its first
 * record. */
static int start_pipeline(struct session *s, bool cupti_ok, char *why, size_t len)
{
	struct tally_pipeline_config pc = pipeline_config(&s->cfg);
	struct tally_buf header = {0};
	struct tally_sink sink = {0};
	int rc;

	s->pid = getpid();
	new_session_id(s->id);
	s->cupti_on = cupti_ok;
	s->open_refused = false;
	s->start_realtime = tally_realtime_ns();
	s->start_mono = mono_now_ns();
	/* before CUPTI (a session started at load for sampling): its clock, CLOCK_REALTIME */
	s->start_clock = cupti_ok ? cupti_now() : s->start_realtime;
	tally_buf_reset(&s->plan);
	tally_sampler_plan(&s->cfg, &s->plan);
	if (s->lazy) {
		pc.open = open_lazily;
		pc.open_arg = s;
	} else if ((rc = open_trace(s, &sink, &header, why, len)) < 0) {
		tally_buf_fini(&header);
		return rc;
	}
	rc = tally_pipeline_start(&pc, source_for(s, cupti_ok), &sink, &header);
	tally_buf_fini(&header);
	if (rc < 0 && s->wrote_file) {
		snprintf(why, len, "%s: cannot start: %s", s->path, strerror(-rc));
		trace_file_close(&s->file);
		unlink(s->path);
		s->wrote_file = false;
		(void)tally_room_release(&s->room);
	} else if (rc < 0) {
		snprintf(why, len, "cannot start: %s", strerror(-rc));
	}
	return rc;
}

/* The collection window, and for a benchmark (TALLY_BENCH_TOGGLE_MS) closed in the intervals
 * it turns off. */
static bool metrics_window_open(void *session)
{
	struct session *s = session;

	return !tally_toggled_off(s->cfg.bench_toggle_ns, tally_monotonic_ns()) &&
	       cupti_tracer_window_open(&s->tracer);
}

/* GPU metrics, when asked for: the sampler thread, with this trace's lock files beside it. */
static void start_metrics(struct session *s)
{
	struct pm_sampler_config pc = {0};
	const struct tally_config *c = &s->cfg;
	char *slash;

	if (!c->gpu_metrics)
		return;
	pc.device_mask = c->gpu_metrics_devices;
	pc.hz = c->gpu_metrics_hz;
	pc.set = c->gpu_metrics_set;
	pc.hw_buffer = c->gpu_metrics_buffer;
	pc.decode_ms = (unsigned)(c->gpu_metrics_decode_ns / 1000000);
	snprintf(pc.lock_dir, sizeof(pc.lock_dir), "%s", s->path);
	slash = strrchr(pc.lock_dir, '/');
	if (slash)
		*(slash == pc.lock_dir ? slash + 1 : slash) = '\0';
	else
		snprintf(pc.lock_dir, sizeof(pc.lock_dir), ".");
	pc.self.pid = (long)getpid();
	gethostname(pc.self.host, sizeof(pc.self.host) - 1);
	snprintf(pc.self.file, sizeof(pc.self.file), "%s", s->path);
	memcpy(pc.self.session, s->id, sizeof(s->id));
	pc.self.has_session = true;
	pc.window_open = metrics_window_open;
	pc.window_arg = s;
	pc.pm_loaded = metrics_pm_loaded;
	libc_pthread_mutex_lock(&s->metrics_lock);
	s->metrics = pm_sampler_start(&pc);
	pthread_mutex_unlock(&s->metrics_lock);
}

/* A benchmark's setting: the trace must not read as if its recorders were off for a reason. */
static void note_bench_toggle(const struct tally_config *c)
{
	char text[200];

	if (!c->bench_toggle_ns)
		return;
	snprintf(text, sizeof(text),
		 "TALLY_BENCH_TOGGLE_MS=%llu: GPU metrics and host samples were taken in about "
		 "half the intervals of that length only, to measure their cost within one run",
		 (unsigned long long)(c->bench_toggle_ns / 1000000));
	tally_pipeline_note(TALLY_NOTE_INFO, "bench-toggle", text);
}

/* Open, write the header, start the pipeline and CUPTI.  Called with s->lock held. */
static int start_locked(struct session *s, const char *why_started, char *why, size_t len)
{
	bool cupti_ok = false;
	int rc;

	if ((rc = start_check(s, why_started, &cupti_ok, why, len)) < 0)
		return rc;
	s->lazy = strcmp(why_started, "host") == 0;
	if ((rc = start_pipeline(s, cupti_ok, why, len)) < 0)
		return rc;
	if (s->lazy)
		quiet_listen();
	note_bench_toggle(&s->cfg);
	s->cupti_tried = cupti_ok || strcmp(why_started, "host") != 0;
	if (cupti_ok && (rc = cupti_tracer_setup(&s->tracer, &s->cfg, why, len)) < 0)
		tally_pipeline_note(TALLY_NOTE_ERROR, "cupti-setup", why); /* keep NVTX going */
	else if (cupti_ok)
		start_metrics(s);
	s->started_mono = mono_now_ns();
	return 0;
}

static void start_failed(struct session *s, int rc, const char *why)
{
	atomic_store_explicit(&s->state, SESSION_OFF, memory_order_release);
	if (rc == -ECANCELED)
		tally_log("%s", why);
	else
		tally_log_user("not recording this process: %s", why);
	manifest_line(s, "off %d %s", (int)getpid(), why);
}

/* The header was written before CUPTI was there: its versions, said now (the driver's as the
 * header says it: from the libcuda.so.1 the program loaded, "unknown" without one). */
static void cupti_joined_note(void)
{
	int (*driver)(int *) = (int (*)(int *))tally_driver_sym("cuDriverGetVersion");
	uint32_t version = 0;
	char text[PATH_MAX + 128], dv[32] = "unknown";
	int v = 0;

	if (cupti.GetVersion)
		(void)cupti.GetVersion(&version);
	if (driver && driver(&v) == 0 && v > 0)
		snprintf(dv, sizeof(dv), "%d", v);
	snprintf(text, sizeof(text),
		 "CUDA joined the recording at cuInit: CUPTI API version %u (%s), CUDA driver %s",
		 version, cupti.path, dv);
	tally_pipeline_note(TALLY_NOTE_INFO, "cupti-joined", text);
}

/* A session that started at load (host sampling) meets CUDA: CUPTI joins it now, as it would
 * have at the start of a session started by CUDA. */
static void attach_cupti(struct session *s)
{
	char why[PATH_MAX + 128];
	int rc;

	libc_pthread_mutex_lock(&s->lock);
	if (s->cupti_tried || !session_running(s))
		goto unlock;
	s->cupti_tried = true;
	/* a process that uses CUDA has its trace, records or not (and says there if CUDA is not
	 * recorded); the GPU-metrics lock files go beside it */
	if (tally_pipeline_open() < 0)
		goto unlock;
	if ((rc = cupti_api_load(why, sizeof(why))) < 0 ||
	    (rc = check_cupti_version(why, sizeof(why))) < 0) {
		tally_pipeline_note(TALLY_NOTE_ERROR, "cupti-load", why);
		tally_log_user("CUDA is not recorded in this process: %s", why);
		goto unlock;
	}
	s->cupti_on = true;
	if ((rc = cupti_tracer_setup(&s->tracer, &s->cfg, why, sizeof(why))) < 0) {
		tally_pipeline_note(TALLY_NOTE_ERROR, "cupti-setup", why);
		goto unlock;
	}
	cupti_joined_note();
	start_metrics(s);
	tally_log("CUDA joins the recording to %s", s->path);
unlock:
	pthread_mutex_unlock(&s->lock);
}

void session_start(struct session *s, const char *why_started)
{
	char why[PATH_MAX + 128];
	int expected = SESSION_NONE, rc;

	if (strcmp(why_started, "cuda") == 0)
		atomic_store_explicit(&s->cuda_called, true, memory_order_release);
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SESSION_RUNNING &&
	    strcmp(why_started, "cuda") == 0 && !s->cupti_on)
		attach_cupti(s);
	if (atomic_load_explicit(&s->state, memory_order_acquire) != SESSION_NONE)
		return;
	libc_pthread_mutex_lock(&s->lock);
	/* STARTING also stops re-entry on this thread: setting CUPTI up may call cuInit, which
	 * calls InitializeInjection, which comes back here. */
	if (!atomic_compare_exchange_strong_explicit(&s->state, &expected, SESSION_STARTING,
						     memory_order_acq_rel, memory_order_relaxed))
		goto unlock;
	rc = start_locked(s, why_started, why, sizeof(why));
	if (rc < 0) {
		start_failed(s, rc, why);
		goto unlock;
	}
	/* Release: the pipeline and config are set up before anyone sees RUNNING. */
	atomic_store_explicit(&s->state, SESSION_RUNNING, memory_order_release);
	if (s->lazy)
		tally_log("session started by %s: its trace opens at its first record",
			  why_started);
	else
		tally_log("recording to %s (started by %s)", s->path, why_started);
	if (control_start(&s->control, control_main, s, "tally-control") < 0)
		tally_pipeline_note(TALLY_NOTE_WARNING, "no-control-thread",
				    "no periodic flush, and signals end the process without a "
				    "close: a SIGKILL or SIGTERM loses more than one slice");
unlock:
	pthread_mutex_unlock(&s->lock);
}

void session_sampling_start(struct session *s)
{
	libc_pthread_mutex_lock(&s->lock);
	if (session_running(s) && !tally_sampler_running() && tally_config_from_start(&s->cfg))
		(void)tally_sampler_start(&s->cfg);
	pthread_mutex_unlock(&s->lock);
}

/* ---- the control thread ------------------------------------------------------------------- */

static void flush_normal(void *arg)
{
	cupti_tracer_flush(arg, false);
}

/* Make what is recorded so far durable without ending the session. */
static void durable_flush(struct session *s)
{
	if (!session_running(s))
		return;
	if (cupti_tracer_on(&s->tracer))
		(void)run_bounded(flush_normal, &s->tracer, s->cfg.flush_timeout_ns);
	tally_pipeline_tick();
}

static void handle_request(struct session *s, const struct ctl_msg *m)
{
	switch (m->cmd) {
	case CTL_CLOSE_SIGNAL:
		session_close(s, TALLY_FLUSH_SIGNAL, m->signo);
		/* The trace is closed: the process ends as the signal would have ended it. */
		die_by_signal(m->signo);
		break;
	case CTL_CLOSE_CRASH:
		session_close(s, TALLY_FLUSH_CRASH, m->signo);
		break;
	default:
		durable_flush(s);
		break;
	}
	/* Release: the request's effects are visible to the handler that sees the new count. */
	atomic_fetch_add_explicit(&s->done_gen, 1, memory_order_release);
}

static int next_timeout_ms(uint64_t now, uint64_t next_flush, uint64_t window_at)
{
	uint64_t next = next_flush;

	if (window_at && window_at < next)
		next = window_at;
	return next <= now ? 0 : (int)((next - now) / 1000000 + 1);
}

/* Delay over: open the window.  Duration over: close the session (flush path "stop").
 * Returns when to look again, 0 never. */
static uint64_t window_step(struct session *s, uint64_t now)
{
	const struct tally_config *c = &s->cfg;
	uint64_t start = s->started_mono;
	uint64_t open_at = c->delay_ns ? start + c->delay_ns : 0;
	uint64_t close_at = c->duration_ns ? start + c->delay_ns + c->duration_ns : 0;

	if (open_at && now >= open_at && !c->capture_profiler_api &&
	    (!close_at || now < close_at) && !cupti_tracer_window_open(&s->tracer)) {
		cupti_tracer_window(&s->tracer, true);
		open_at = 0;
	}
	if (close_at && now >= close_at) {
		session_close(s, TALLY_FLUSH_STOP, 0);
		return 0;
	}
	if (open_at && now < open_at)
		return open_at;
	return close_at;
}

/*
 * A process that initialised CUDA although CUDA never called our injection, with no CUPTI of ours
 * set up some other way (a session begun at load or by NVTX): nothing of CUDA is recorded.  Under
 * cuda-gdb it is so: the debugger's back-end takes the injection's place.  Said once, lest the
 * trace read as a program that used no GPU.  Looked at on the periodic flush, not at the close (a
 * close at exit can come after the driver's teardown); two looks in a row, since the driver counts
 * as initialised a moment before it calls the injection.
 */
static void watch_cuda_join(struct session *s)
{
	int (*count)(int *);
	int n = 0;

	if (s->unjoined_said)
		return;
	count = (int (*)(int *))tally_driver_sym("cuDeviceGetCount");
	if (atomic_load_explicit(&s->cuda_called, memory_order_acquire) ||
	    cupti_tracer_on(&s->tracer) || !count || count(&n) != 0) {
		s->unjoined_looks = 0;
		return;
	}
	if (++s->unjoined_looks < 2)
		return;
	s->unjoined_said = true;
	tally_pipeline_note(
	    TALLY_NOTE_WARNING, "cuda-not-joined",
	    "this process initialised CUDA, but CUDA never called tally's injection "
	    "(CUDA_INJECTION64_PATH; under cuda-gdb its debugger back-end takes that "
	    "place): its CUDA activity is not recorded");
}

static void *control_main(void *arg)
{
	struct session *s = arg;
	uint64_t next_flush = s->started_mono + s->cfg.slice_ns, window_at = 1;
	struct ctl_msg m;

	while (session_running(s)) {
		uint64_t now = mono_now_ns();
		int wait_ms;

		if (window_at)
			window_at = window_step(s, now);
		wait_ms = next_timeout_ms(now, next_flush, window_at);
		/* the children that recorded nothing say so on a socket of their own: taken in
		 * often enough that its buffer (some hundreds of reports) does not fill */
		if (quiet_fd() >= 0 && wait_ms > QUIET_EVERY_MS)
			wait_ms = QUIET_EVERY_MS;
		if (control_wait(&s->control, wait_ms, &m))
			handle_request(s, &m);
		quiet_drain();
		now = mono_now_ns();
		if (now >= next_flush && session_running(s)) {
			/* Partly filled buffers reach the pipeline; the consumer writes them. */
			cupti_tracer_flush(&s->tracer, false);
			watch_cuda_join(s);
			next_flush = now + s->cfg.slice_ns;
		}
	}
	/* Requests after the close still get their answer (a signal still ends the process). */
	for (;;)
		if (control_wait(&s->control, -1, &m))
			handle_request(s, &m);
	return NULL;
}

/* ---- the close ---------------------------------------------------------------------------- */

/* No new records (the window ends here; a program that runs on after a SIGTERM must not leave
 * a buffer in CUPTI's hands), then everything CUPTI holds, complete or not. */
static void flush_forced(void *arg)
{
	cupti_tracer_window(arg, false);
	cupti_tracer_flush(arg, true);
}

static void window_off(void *arg)
{
	cupti_tracer_window(arg, false);
}

static void finalize_cupti(void *arg)
{
	cupti_tracer_teardown(arg);
}

static void wait_until_closed(struct session *s, uint64_t max_ns)
{
	struct timespec step = {0, 2000000};
	uint64_t waited = 0;

	while (atomic_load_explicit(&s->state, memory_order_acquire) == SESSION_FINISHING &&
	       waited < max_ns) {
		libc_nanosleep(&step, NULL);
		waited += 2000000;
	}
}

/* A part of the close that calls CUPTI, bounded by the watchdog; false if it hung. */
static bool bounded_cupti(struct session *s, void (*fn)(void *))
{
	uint64_t timeout = s->cfg.flush_timeout_ns;

	if (!cupti_tracer_on(&s->tracer) || run_bounded(fn, &s->tracer, timeout))
		return true;
	tally_pipeline_watchdog_fired();
	tally_log_user("CUPTI did not return in %llu ms (the close's flush); closing without it",
		       (unsigned long long)(timeout / 1000000));
	return false;
}

/* Processes of this tree that recorded nothing and said so here: into the trace, if it is
 * written (a PROCESSES chunk waits for the trace like any note; at the close the count stays,
 * for a trace that is not written after all, which passes it on).  reset: the trace is open,
 * and what comes later is counted in a chunk of its own. */
static void processes_quiet(struct session *s, bool reset)
{
	struct tally_buf b = {0};

	if (!s->lazy)
		return;
	quiet_drain();
	if (quiet_payload(&b, reset) && !b.failed)
		tally_pipeline_processes(&b);
	tally_buf_fini(&b);
}

/* This image recorded nothing: it leaves no file, and is counted by the next image (exec) or its
 * parent, and in tally record's manifest, which reaches tally record even when no process of
 * the tree listens. */
static void pass_quiet_on(struct session *s, enum tally_flush_path path)
{
	bool exec = path == TALLY_FLUSH_EXEC;

	(void)quiet_pass_on(exec, true);
	manifest_line(s, "quiet %d %s", (int)getpid(), quiet_self_name());
	tally_log("recorded nothing: no trace (%llu process(es) counted %s)",
		  (unsigned long long)quiet_total(),
		  exec ? "for the next image" : "for the parent");
}

/* At an exec: an image that recorded nothing hands what it stands for to the next image (the
 * manifest says it now: after the exec nothing of it runs; an exec that fails then leaves one
 * "quiet" line too many there, and takes itself back from the count). */
static void exec_quiet(struct session *s)
{
	s->exec_quiet = s->lazy && !s->open_refused && !tally_pipeline_is_open();
	if (s->exec_quiet)
		pass_quiet_on(s, TALLY_FLUSH_EXEC);
}

const char *session_exec_quiet(const struct session *s)
{
	(void)s;
	return quiet_exec_var();
}

/* The metric samples up to now, before CUPTI's own flush; a sampler stuck inside CUPTI is left
 * behind (false), and then CUPTI is not finalized under it.  *had (if given): there was one. */
static bool stop_metrics(struct session *s, bool *had)
{
	struct pm_sampler *metrics;
	bool done;

	libc_pthread_mutex_lock(&s->metrics_lock);
	metrics = s->metrics;
	s->metrics = NULL;
	/* under the lock: a context's end that no longer finds the sampler finds this */
	atomic_store_explicit(&s->close_in_metrics, metrics != NULL, memory_order_release);
	pthread_mutex_unlock(&s->metrics_lock);
	if (had)
		*had = metrics != NULL;
	done = pm_sampler_stop(metrics, s->cfg.flush_timeout_ns);
	atomic_store_explicit(&s->close_in_metrics, false, memory_order_release);
	return done;
}

static void close_locked(struct session *s, enum tally_flush_path path, int signo)
{
	struct tally_stop_report rep;
	bool flushed, sampler_done;

	tally_pipeline_flush_begin(path, signo);
	tally_sampler_stop(); /* what it holds reaches the pipeline before the pipeline stops */
	/* No new activity from here on: a thread a signal interrupted is let go when the close
	 * outlasts its wait (the GPU metrics' stop can), and what it does then must not be in a
	 * buffer the forced flush hands over half-written (an incomplete record, on which CUPTI's
	 * walk stops: parse_failures at SIGTERM with --gpu-metrics on the H100). */
	flushed = bounded_cupti(s, window_off);
	sampler_done = stop_metrics(s, NULL);
	atomic_fetch_add_explicit(&s->close_steps, 1, memory_order_relaxed);
	flushed = flushed && bounded_cupti(s, flush_forced) && sampler_done;
	atomic_fetch_add_explicit(&s->close_steps, 1, memory_order_relaxed);
	nvtx_flush_all();
	processes_quiet(s, false);
	tally_pipeline_stop(&rep);
	atomic_fetch_add_explicit(&s->close_steps, 1, memory_order_relaxed);
	/* Finalize only a CUPTI that answered: one stuck in its flush could hang us here too. */
	if (path == TALLY_FLUSH_EXIT && flushed && cupti_tracer_on(&s->tracer))
		(void)run_bounded(finalize_cupti, &s->tracer, s->cfg.flush_timeout_ns);
	trace_file_close(&s->file);
	(void)tally_room_release(&s->room); /* the close gave it back already, unless it hung */
	if (!rep.opened) {
		if (!s->open_refused)
			pass_quiet_on(s, path);
		return;
	}
	manifest_line(s, "end %d %s %s %llu %llu %s", (int)getpid(),
		      rep.complete ? "clean" : "loss", tally_flush_path_name(path),
		      (unsigned long long)rep.records, (unsigned long long)rep.bytes_written,
		      s->path);
	tally_log("closed %s: %llu records, flush by %s in %.3f ms", s->path,
		  (unsigned long long)rep.records, tally_flush_path_name(path),
		  (double)rep.flush_ns / 1e6);
}

void session_close(struct session *s, enum tally_flush_path path, int signo)
{
	int expected = SESSION_RUNNING;
	pid_t self = getpid(), deferred = self;

	/* a fork child leaving before its session started: it recorded nothing (one that execs is
	 * the image it becomes, which counts itself) */
	if (atomic_compare_exchange_strong(&s->deferred, &deferred, 0)) {
		if (path != TALLY_FLUSH_EXEC)
			pass_quiet_on(s, path);
		else /* what its children said goes to the next image, which is this process */
			(void)quiet_pass_on(true, false);
		return;
	}
	if (s->pid != self)
		return; /* a fork or vfork child sharing our memory: not its session */
	if (!atomic_compare_exchange_strong_explicit(&s->state, &expected, SESSION_FINISHING,
						     memory_order_acq_rel, memory_order_acquire)) {
		/* Another exit path is closing the trace (a signal's, say, on the control thread):
		 * don't let this one end the process under it.  Bounded. */
		wait_until_closed(s, 2 * s->cfg.flush_timeout_ns + 2000000000ull);
		return;
	}
	libc_pthread_mutex_lock(&s->lock);
	close_locked(s, path, signo);
	atomic_store_explicit(&s->state, SESSION_DONE, memory_order_release);
	atomic_fetch_add_explicit(&s->done_gen, 1, memory_order_release);
	pthread_mutex_unlock(&s->lock);
}

/* ---- exec ---------------------------------------------------------------------------------- */

/* Everything CUPTI holds, complete or not, with the window left open: the exec may fail. */
static void flush_forced_open(void *arg)
{
	cupti_tracer_flush(arg, true);
}

/*
 * An exec that succeeds runs nothing of this process again, so everything recorded so far must
 * be in the file, ending in a final ledger, before the real exec; one that fails returns to the
 * program, which goes on.  So the session is not closed but checkpointed (pipeline.h): host
 * sampling stops (its samples reach the file; it starts again if the exec fails), GPU metrics
 * stop (their last samples in; not started twice in a process: an exec that fails ends them,
 * and says so), CUPTI's buffers and NVTX's are handed over, and the pipeline writes a final
 * ledger while it runs on.  The session's lock is held until session_exec_after: a close, a
 * fork or another exec waits.  False when there is no session of this process's to hold.
 */
bool session_exec_begin(struct session *s)
{
	pid_t self = getpid(), deferred = self;
	bool metrics;

	/* a fork child whose session has not started yet becomes the program it execs (sampled
	 * from its load); what its children said goes to it */
	if (atomic_compare_exchange_strong(&s->deferred, &deferred, 0)) {
		(void)quiet_pass_on(true, false);
		return false;
	}
	if (s->pid != self || !session_running(s))
		return false;
	libc_pthread_mutex_lock(&s->lock);
	if (!session_running(s)) {
		pthread_mutex_unlock(&s->lock);
		return false;
	}
	s->exec_sampling = tally_sampler_running();
	s->exec_at = mono_now_ns();
	tally_sampler_stop();
	(void)stop_metrics(s, &metrics);
	s->exec_metrics = metrics;
	if (cupti_tracer_on(&s->tracer) &&
	    !run_bounded(flush_forced_open, &s->tracer, s->cfg.flush_timeout_ns))
		tally_pipeline_watchdog_fired();
	nvtx_flush_all();
	/* what is queued decides whether this image has a trace: the processes that reported
	 * here go in it before its final ledger, or on to the next image */
	tally_pipeline_drain();
	if (tally_pipeline_is_open())
		processes_quiet(s, true);
	(void)tally_pipeline_checkpoint(TALLY_FLUSH_EXEC);
	exec_quiet(s);
	return true;
}

/* Host sampling again, as planned at the start (perf events opened anew, or the timer). */
static void restart_sampling(struct session *s)
{
	struct tally_buf unused = {0};

	tally_sampler_plan(&s->cfg, &unused);
	tally_buf_fini(&unused);
	(void)tally_sampler_start(&s->cfg);
}

/* The exec failed with err (it returned): recording goes on, and the trace says so. */
static void exec_failed(struct session *s, const char *path, int err)
{
	uint64_t paused = mono_now_ns() - s->exec_at;
	char text[PATH_MAX + 512];

	tally_pipeline_resume();
	if (s->exec_quiet)
		quiet_exec_undo();
	if (s->exec_sampling) {
		restart_sampling(s);
		if (paused > s->cfg.sample_stall_ns)
			tally_pipeline_count(TALLY_C_SAMPLE_STALLS, 1);
	}
	if (s->exec_metrics)
		tally_pipeline_metric_count(TALLY_C_METRIC_FAILURES, 1);
	snprintf(text, sizeof(text),
		 "an exec of %.2048s failed (%s) and the program went on: recording went on too "
		 "(the final ledger written before the exec is superseded)%s%s",
		 path ? path : "(a descriptor)", strerror(err),
		 s->exec_sampling ? "; host sampling paused around it" : "",
		 s->exec_metrics ? "; GPU metrics ended there (they are not started twice in a "
				   "process)"
				 : "");
	tally_pipeline_note(s->exec_metrics ? TALLY_NOTE_ERROR : TALLY_NOTE_WARNING, "exec-failed",
			    text);
	tally_log("%s", text);
}

void session_exec_after(struct session *s, const char *path, int err)
{
	exec_failed(s, path, err);
	pthread_mutex_unlock(&s->lock);
}

/* ---- signals (async-signal-safe: atomics, getpid, write, nanosleep) ----------------------- */

/* A session that a signal can still close: recording, or being closed by another path. */
static bool closable(const struct session *s)
{
	int state = atomic_load_explicit(&s->state, memory_order_acquire);

	return s->pid == getpid() && (state == SESSION_RUNNING || state == SESSION_FINISHING) &&
	       control_alive(&s->control);
}

static int sender_of(const siginfo_t *info)
{
	return info && info->si_code <= 0 ? (int)info->si_pid : 0;
}

/* What moves while a close gets on: its parts ending, records reaching the pipeline.  (The
 * GPU-metrics sampler's stop counts as moving throughout: see wait_close_after.) */
static uint64_t close_progress(struct session *s)
{
	return atomic_load_explicit(&s->close_steps, memory_order_relaxed) +
	       tally_pipeline_progress();
}

/* Waits (async-signal-safe, bounded) until the control thread has finished a close after gen:
 * at most most_ns, and at most still_ns with nothing moving (outside the metrics' stop). */
static void wait_close_after(struct session *s, uint64_t gen, uint64_t still_ns, uint64_t most_ns)
{
	struct timespec step = {0, 2000000};
	uint64_t waited = 0, still = 0, seen = close_progress(s), now;

	/* Acquire: pairs with the control thread's release after the close. */
	while (atomic_load_explicit(&s->done_gen, memory_order_acquire) == gen &&
	       still < still_ns && waited < most_ns) {
		libc_nanosleep(&step, NULL);
		waited += 2000000;
		now = close_progress(s);
		/* the sampler's stop (its last decode, CUPTI's stop and disable) went still for
		 * longer than still_ns on the H200: a PyTorch loop was let go and ran on */
		still =
		    now == seen && !atomic_load_explicit(&s->close_in_metrics, memory_order_relaxed)
			? still + 2000000
			: 0;
		seen = now;
	}
}

bool session_signal_end(struct session *s, int sig, const siginfo_t *info, uint64_t still_ns,
			uint64_t most_ns)
{
	uint64_t gen = atomic_load_explicit(&s->done_gen, memory_order_acquire);
	int none = 0;

	if (!closable(s))
		return false;
	tally_pipeline_signal(sig, sender_of(info));
	if (!atomic_compare_exchange_strong_explicit(&s->ending_signal, &none, sig,
						     memory_order_acq_rel, memory_order_relaxed)) {
		/* a repeat (group delivery plus forwarding, ^C twice): the close is running */
		wait_close_after(s, gen, still_ns, most_ns);
		return true;
	}
	if (control_post(&s->control, CTL_CLOSE_SIGNAL, sig)) {
		wait_close_after(s, gen, still_ns, most_ns);
		return true;
	}
	atomic_store_explicit(&s->ending_signal, 0, memory_order_relaxed);
	return false;
}

void session_signal_flush(struct session *s, int sig)
{
	if (session_running(s))
		(void)control_post(&s->control, CTL_FLUSH, sig);
}

void session_signal_crash(struct session *s, int sig, const siginfo_t *info, uint64_t wait_ns)
{
	uint64_t gen = atomic_load_explicit(&s->done_gen, memory_order_acquire);

	if (!closable(s))
		return;
	tally_pipeline_signal(sig, sender_of(info));
	if (control_post(&s->control, CTL_CLOSE_CRASH, sig))
		wait_close_after(s, gen, wait_ns, wait_ns);
}

int session_ending_signal(const struct session *s)
{
	return s->pid == getpid() ? atomic_load_explicit(&s->ending_signal, memory_order_acquire)
				  : 0;
}

/* ---- fork --------------------------------------------------------------------------------- */

#define DEFERRED_START_NS 2000000ull /* about two periods at the default rate */

struct deferred_start {
	struct session *s;
	void (*start)(const char *why);
};

static void *start_later(void *arg)
{
	struct deferred_start d = *(struct deferred_start *)arg;
	struct timespec ts = {0, (long)DEFERRED_START_NS};
	pid_t self = getpid();

	free(arg);
	while (libc_nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	if (atomic_compare_exchange_strong(&d.s->deferred, &self, 0))
		d.start("host");
	return NULL;
}

void session_start_deferred(struct session *s, void (*start)(const char *why))
{
	struct deferred_start *d = malloc(sizeof(*d));
	pthread_t t;

	if (!d)
		return;
	*d = (struct deferred_start){s, start};
	quiet_listen(); /* its children may end before its session starts */
	atomic_store(&s->deferred, getpid());
	if (tally_own_thread_create(&t, start_later, d, "tally-start", true) < 0) {
		atomic_store(&s->deferred, 0);
		free(d);
	}
}

void session_before_fork(struct session *s)
{
	tally_sampler_fork_begin();
	libc_pthread_mutex_lock(&s->lock);
	cupti_tracer_before_fork(&s->tracer);
	nvtx_before_fork();
}

void session_after_fork_parent(struct session *s)
{
	nvtx_after_fork_parent();
	cupti_tracer_after_fork_parent(&s->tracer);
	pthread_mutex_unlock(&s->lock);
	tally_sampler_fork_end();
}

/*
 * Threads do not survive fork: the parent's consumer and control threads are not here, and its
 * pipeline and file are the parent's.  Forget them (leaking the copies: their locks may be
 * held by threads that are gone); if this child uses CUDA or NVTX it starts a session of its
 * own, with its own file.  A child that never does exits as it would untraced.  The locks taken
 * before the fork were taken by this thread, the only one here: it releases them.
 */
/* ThreadSanitizer cannot follow the threads a fork child of a threaded process starts (it stops
 * the child: "dup thread with used id", the id of a parent's thread it still counts alive): its
 * builds leave fork children unsampled, as tally did before it sampled the tree. */
#if defined(__SANITIZE_THREAD__)
#define SAMPLE_FORK_CHILDREN false
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SAMPLE_FORK_CHILDREN false
#endif
#endif
#ifndef SAMPLE_FORK_CHILDREN
#define SAMPLE_FORK_CHILDREN true
#endif

bool session_after_fork_child(struct session *s)
{
	int state = atomic_load_explicit(&s->state, memory_order_relaxed);
	/* with host sampling every process of the tree is sampled: the child too, as from load
	 * (also the child of a child whose own session had not started yet) */
	bool sample = ((state == SESSION_RUNNING && s->lazy) ||
		       atomic_exchange_explicit(&s->deferred, 0, memory_order_relaxed) != 0) &&
		      SAMPLE_FORK_CHILDREN;

	nvtx_forget();
	tally_sampler_after_fork_child();
	quiet_after_fork_child();
	cupti_tracer_after_fork_child(&s->tracer);
	pthread_mutex_unlock(&s->lock); /* taken by this thread in session_before_fork */
	s->wrote_file = false;
	s->cupti_on = s->cupti_tried = false;
	s->exec_files = 0; /* counted per pid: this is a new one */
	s->unjoined_looks = 0;
	s->unjoined_said = false;
	/* the parent's session, named in the child's trace (a reader ties the two) */
	if (state != SESSION_NONE)
		memcpy(s->parent_id, s->id, sizeof(s->id));
	else /* a parent whose own session had not started: none to name */
		memset(s->parent_id, 0, sizeof(s->parent_id));
	s->lazy = false;
	if (state == SESSION_NONE)
		return sample;
	tally_pipeline_abandon();
	control_forget(&s->control);
	/* a thread of the parent's may have held it (in CUPTI's callback): renewed, not unlocked */
	pthread_mutex_init(&s->metrics_lock, NULL);
	pm_sampler_forget(s->metrics);
	s->metrics = NULL;
	trace_file_close(&s->file);
	tally_room_forget(&s->room); /* the parent's room: it gives it back itself */
	atomic_store_explicit(&s->ending_signal, 0, memory_order_relaxed);
	atomic_store_explicit(&s->state, SESSION_NONE, memory_order_relaxed);
	return sample;
}
