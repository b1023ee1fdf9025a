/* SPDX-License-Identifier: MIT */
/*
 * Native samples through perf_event_open: no signal, no stop, nothing in the sampled thread.
 *
 * One software event per (thread, CPU): PERF_COUNT_SW_TASK_CLOCK with a period of 1/rate
 * seconds of the thread's CPU time, sampling the thread id, the time (CLOCK_MONOTONIC, through
 * use_clockid) and the user-space callchain.  exclude_kernel is what perf_event_paranoid 2 allows
 * an unprivileged process; it also means time the thread spends in the kernel is not sampled.
 * The events are inherited by the threads a sampled thread makes (inherit, and inherit_thread
 * so that forked children are not: Linux 5.13; older kernels pass samples of children, which
 * are left out by pid), so sampling follows every thread from its first instruction.  Per CPU,
 * every event writes into one ring buffer (PERF_EVENT_IOC_SET_OUTPUT), which the sampler thread
 * drains: its size is bounded by perf_event_mlock_kb per CPU, not by the number of threads.
 * The kernel counts what did not fit (PERF_RECORD_LOST) and says when it throttled sampling
 * (PERF_RECORD_THROTTLE): both reach the ledger.
 *
 * The kernel walks user stacks by frame pointers: code built without them gives the right
 * innermost frame and a short or wrong chain above it (docs/format.md §14).
 *
 * The events' descriptors are the program's to close (close_range, a daemon's loop; keptfd.h):
 * each is moved to a high number, and its event id (PERF_EVENT_IOC_ID: every perf event shares
 * one anonymous inode, so device and inode say nothing) is checked before tally calls ioctl or
 * close on it.  tally_perf_lost says how many are gone; the sampler opens them all anew.
 */
#include "perfsample.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keptfd.h"
#include "libc.h"
#include "ownthread.h"

/* Per CPU: 128 KiB, about 400 ms of a busy thread at 1 kHz (perf_event_mlock_kb allows 516). */
#define DATA_PAGES  32
#define MAX_EVENTS  4096
#define MAX_CPUS    1024
#define CTX_MARKERS ((uint64_t)-4095) /* PERF_CONTEXT_*: markers in a callchain, not frames */

struct ring {
	int fd;
	uint64_t id; /* its event's id: the ring's owner is looked at to know the events are ours */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size;
};

static struct {
	int *fds;      /* every event */
	uint64_t *ids; /* and its id (PERF_EVENT_IOC_ID), to know it is still tally's */
	unsigned nfds;
	struct ring *rings; /* one per CPU that has an event */
	unsigned nrings, ncpu;
	size_t page;
	pid_t pid;
} pe;

static long perf_open(struct perf_event_attr *a, pid_t tid, int cpu, int group)
{
	return libc_syscall(SYS_perf_event_open, a, tid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

/* Does fd still name the event with this id?  (The program may have closed it, and opened
 * something else there.) */
static bool is_event(int fd, uint64_t id)
{
	uint64_t got = 0;

	return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &got) == 0 && got == id;
}

static bool event_ours(unsigned i)
{
	return is_event(pe.fds[i], pe.ids[i]);
}

static void attr_for(struct perf_event_attr *a, unsigned rate_hz, unsigned depth, bool inherit)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->size = sizeof(*a);
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = 1000000000ull / rate_hz;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_max_stack = (uint16_t)(depth + 2 < 127 ? depth + 2 : 127);
	a->inherit = inherit;
	a->inherit_thread = inherit;
	a->remove_on_exec = inherit;
}

static const char *paranoid_text(void)
{
	static char text[64];
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int level;

	snprintf(text, sizeof(text), "perf_event_paranoid unknown");
	if (f && fscanf(f, "%d", &level) == 1)
		snprintf(text, sizeof(text), "perf_event_paranoid %d", level);
	if (f)
		fclose(f);
	return text;
}

bool tally_perf_probe(char *why, size_t len)
{
	struct perf_event_attr a;
	long fd;

	attr_for(&a, 1000, 16, false);
	fd = perf_open(&a, 0, -1, -1);
	if (fd >= 0) {
		close((int)fd);
		return true;
	}
	snprintf(why, len, "perf_event_open refused a software event: %s (%s%s)", strerror(errno),
		 paranoid_text(),
		 errno == ENOSYS || errno == EPERM ? "; or a seccomp filter refuses the call" : "");
	return false;
}

/* The ring of cpu, made by mapping fd (the first event on that CPU, whose id is id). */
static struct ring *ring_of(int cpu, int fd, uint64_t id, bool *made)
{
	struct ring *r = &pe.rings[cpu];
	size_t len = (1 + DATA_PAGES) * pe.page;
	void *m;

	*made = false;
	if (r->meta)
		return r;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	r->fd = fd;
	r->id = id;
	r->meta = m;
	r->data = (uint8_t *)m + pe.page;
	r->size = DATA_PAGES * pe.page;
	pe.nrings++;
	*made = true;
	return r;
}

/* The events of one thread, one per CPU, each writing into that CPU's ring.  Returns how many;
 * errno of the last failure. */
static unsigned open_thread(pid_t tid, unsigned ncpu, struct perf_event_attr *a, int *err)
{
	unsigned cpu, n = 0;

	for (cpu = 0; cpu < ncpu && pe.nfds < MAX_EVENTS; cpu++) {
		long fd = perf_open(a, tid, (int)cpu, -1);
		struct ring *r;
		bool made;

		if (fd < 0) {
			if (errno != ENODEV) /* an offline CPU */
				*err = errno;
			continue;
		}
		fd = tally_fd_high((int)fd);
		if (ioctl((int)fd, PERF_EVENT_IOC_ID, &pe.ids[pe.nfds]) < 0) {
			*err = errno;
			close((int)fd);
			continue;
		}
		r = ring_of((int)cpu, (int)fd, pe.ids[pe.nfds], &made);
		if (!r || (!made && ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0)) {
			*err = errno;
			close((int)fd);
			continue;
		}
		pe.fds[pe.nfds++] = (int)fd;
		n++;
	}
	return n;
}

/* Every thread there now (tally's own excepted): the threads they make inherit the events. */
static unsigned open_threads(unsigned ncpu, struct perf_event_attr *a, int *err)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned threads = 0;

	if (!d) {
		*err = errno;
		return 0;
	}
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0 && !tally_own_tid(tid) && open_thread(tid, ncpu, a, err))
			threads++;
	}
	closedir(d);
	return threads;
}

int tally_perf_open(unsigned rate_hz, unsigned depth, char *why, size_t len)
{
	long nconf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned ncpu = nconf > 0 && nconf < MAX_CPUS ? (unsigned)nconf : MAX_CPUS;
	struct perf_event_attr a;
	int err = 0;

	pe.page = (size_t)sysconf(_SC_PAGESIZE);
	pe.pid = getpid();
	pe.ncpu = ncpu;
	pe.fds = calloc(MAX_EVENTS, sizeof(*pe.fds));
	pe.ids = calloc(MAX_EVENTS, sizeof(*pe.ids));
	pe.rings = calloc(ncpu, sizeof(*pe.rings));
	if (!pe.fds || !pe.ids || !pe.rings) {
		tally_perf_close();
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	attr_for(&a, rate_hz, depth, true);
	if (!open_threads(ncpu, &a, &err) && err == EINVAL) {
		/* before Linux 5.13: no inherit_thread (children inherit too: left out by pid) */
		a.inherit_thread = 0;
		a.remove_on_exec = 0;
		err = 0;
		(void)open_threads(ncpu, &a, &err);
	}
	if (!pe.nfds) {
		snprintf(why, len, "perf_event_open per thread and CPU: %s (%s)",
			 strerror(err ? err : ENODEV), paranoid_text());
		tally_perf_close();
		return -(err ? err : ENODEV);
	}
	return 0;
}

/* One record, copied out where it wraps around the ring's end. */
static const uint8_t *record_at(const struct ring *r, uint64_t off, size_t size, uint8_t *copy)
{
	size_t at = off & (r->size - 1), first = r->size - at;

	if (size <= first)
		return r->data + at;
	memcpy(copy, r->data + at, first);
	memcpy(copy + first, r->data, size - first);
	return copy;
}

static void sample(const struct perf_sink *s, const uint8_t *p, size_t size)
{
	uint32_t pid, tid;
	uint64_t time, nr, ips[128];
	unsigned n = 0;
	uint64_t i;

	if (size < 8 + 24)
		return;
	memcpy(&pid, p + 8, 4);
	memcpy(&tid, p + 12, 4);
	memcpy(&time, p + 16, 8);
	memcpy(&nr, p + 24, 8);
	if ((pid_t)pid != pe.pid || tally_own_tid((pid_t)tid) || nr > (size - 32) / 8)
		return; /* a forked child's (old kernels), or one of tally's own threads */
	for (i = 0; i < nr && n < 128; i++) {
		uint64_t ip;

		memcpy(&ip, p + 32 + 8 * i, 8);
		if (ip < CTX_MARKERS)
			ips[n++] = ip;
	}
	s->sample(s->ctx, (pid_t)tid, time, ips, n);
}

static void one_record(const struct perf_sink *s, const uint8_t *p, size_t size)
{
	struct perf_event_header h;
	uint64_t v;

	memcpy(&h, p, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		sample(s, p, size);
		break;
	case PERF_RECORD_LOST: /* id, lost */
		if (size >= 24) {
			memcpy(&v, p + 16, 8);
			s->lost(s->ctx, v);
		}
		break;
	case PERF_RECORD_LOST_SAMPLES: /* lost */
		if (size >= 16) {
			memcpy(&v, p + 8, 8);
			s->lost(s->ctx, v);
		}
		break;
	case PERF_RECORD_THROTTLE: /* time, id, stream_id */
		if (size >= 16) {
			memcpy(&v, p + 8, 8);
			s->throttled(s->ctx, v);
		}
		break;
	default:
		break;
	}
}

static void drain_ring(struct ring *r, const struct perf_sink *s)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	uint8_t copy[65536];

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		const uint8_t *p = record_at(r, tail, sizeof(h), copy);

		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		one_record(s, record_at(r, tail, h.size, copy), h.size);
		tail += h.size;
	}
	/* Release: our reads of the records happen before the kernel may overwrite them. */
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

void tally_perf_drain(const struct perf_sink *sink)
{
	unsigned cpu;

	for (cpu = 0; pe.rings && cpu < pe.ncpu; cpu++)
		if (pe.rings[cpu].meta)
			drain_ring(&pe.rings[cpu], sink);
}

/* An ioctl on an inherited event reaches its copies in the threads made since. */
void tally_perf_enable(bool on)
{
	unsigned i;

	for (i = 0; pe.fds && i < pe.nfds; i++)
		if (event_ours(i))
			(void)ioctl(pe.fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
				    0);
}

/* The rings' owners only, one event a CPU: a program that closes descriptors it does not know
 * closes them all (looking at every event, thousands on a large machine, every 100 ms would cost
 * the sampler more than its sampling); each event is still looked at before any use. */
unsigned tally_perf_lost(void)
{
	unsigned cpu, n = 0;

	for (cpu = 0; pe.rings && cpu < pe.ncpu; cpu++)
		if (pe.rings[cpu].meta)
			n += !is_event(pe.rings[cpu].fd, pe.rings[cpu].id);
	return n;
}

static void forget(bool disable)
{
	unsigned i;

	for (i = 0; pe.fds && i < pe.nfds; i++)
		if (!event_ours(i))
			pe.fds[i] = -1; /* the program's number now: neither touched nor closed */
		else if (disable)
			(void)ioctl(pe.fds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (i = 0; pe.rings && i < pe.ncpu; i++)
		if (pe.rings[i].meta) {
			munmap(pe.rings[i].meta, (1 + DATA_PAGES) * pe.page);
			pe.rings[i].meta = NULL;
		}
	for (i = 0; pe.fds && i < pe.nfds; i++)
		if (pe.fds[i] >= 0)
			close(pe.fds[i]);
	free(pe.fds);
	free(pe.ids);
	free(pe.rings);
	memset(&pe, 0, sizeof(pe));
}

void tally_perf_close(void)
{
	forget(true);
}

void tally_perf_after_fork_child(void)
{
	forget(false); /* disabling would stop the parent's events: they are the same ones */
}
