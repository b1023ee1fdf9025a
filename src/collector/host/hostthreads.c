/* SPDX-License-Identifier: MIT */
/* The process's threads; see hostthreads.h. */
#include "hostthreads.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keptfd.h"
#include "libc.h"
#include "ownthread.h"
#include "tally-format.h"

#define SLOTS 16384 /* threads remembered; a process that makes more loses their pthread ids */

struct slot {
	_Atomic pid_t tid;
	_Atomic unsigned long pthread_id;
	_Atomic uintptr_t word;
	struct tally_kept stat; /* sampler thread only; fd 0 (or less): not open */
};

static struct slot slots[SLOTS];
static _Atomic(void (*)(pid_t)) start_hook;
static _Atomic bool watching;

static size_t hash(pid_t tid)
{
	return ((size_t)tid * 2654435761u) & (SLOTS - 1);
}

/* The slot of tid, made if need be (create); NULL if the table is full or it is not there. */
static struct slot *slot_of(pid_t tid, bool create)
{
	size_t i = hash(tid), n;

	for (n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		pid_t t = atomic_load_explicit(&slots[i].tid, memory_order_acquire), none = 0;

		if (t == tid)
			return &slots[i];
		if (t)
			continue;
		if (!create)
			return NULL;
		if (atomic_compare_exchange_strong(&slots[i].tid, &none, tid) || none == tid)
			return &slots[i];
	}
	return NULL;
}

/* A thread's stat file, closed if it is still tally's (the program may have taken its number). */
static void stat_close(struct slot *s)
{
	if (s->stat.fd > 0)
		tally_kept_close(&s->stat);
	s->stat.fd = 0;
}

unsigned long tally_host_thread_pthread(pid_t tid)
{
	struct slot *s = slot_of(tid, false);

	return s ? atomic_load_explicit(&s->pthread_id, memory_order_relaxed) : 0;
}

void tally_host_thread_set_pthread(pid_t tid, unsigned long pthread_id)
{
	struct slot *s = slot_of(tid, true);

	if (s)
		atomic_store_explicit(&s->pthread_id, pthread_id, memory_order_relaxed);
}

uintptr_t tally_host_thread_word(pid_t tid)
{
	struct slot *s = slot_of(tid, false);

	return s ? atomic_load_explicit(&s->word, memory_order_relaxed) : 0;
}

uintptr_t tally_host_thread_swap_word(pid_t tid, uintptr_t word)
{
	struct slot *s = slot_of(tid, true);

	return s ? atomic_exchange_explicit(&s->word, word, memory_order_acq_rel) : 0;
}

size_t tally_host_threads_list(pid_t *out, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < SLOTS && n < max; i++) {
		pid_t t = atomic_load_explicit(&slots[i].tid, memory_order_acquire);

		if (t)
			out[n++] = t;
	}
	return n;
}

void tally_host_threads_forget(void)
{
	size_t i;

	for (i = 0; i < SLOTS; i++) {
		stat_close(&slots[i]);
		atomic_store(&slots[i].tid, 0);
		atomic_store(&slots[i].pthread_id, 0);
		atomic_store(&slots[i].word, 0);
	}
	atomic_store(&watching, false);
	atomic_store(&start_hook, NULL);
}

void tally_host_threads_watch(void (*hook)(pid_t tid))
{
	atomic_store(&start_hook, hook);
	atomic_store(&watching, true);
}

void tally_host_threads_unwatch(void)
{
	atomic_store(&watching, false);
	atomic_store(&start_hook, NULL);
}

/* ---- pthread_create, interposed ------------------------------------------------------------ */

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;
	pid_t tid = tally_gettid();
	void (*hook)(pid_t);

	free(p);
	tally_host_thread_set_pthread(tid, (unsigned long)pthread_self());
	hook = atomic_load_explicit(&start_hook, memory_order_acquire);
	if (hook)
		hook(tid);
	return s.fn(s.arg);
}

TALLY_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
				void *arg)
{
	struct start *s;
	int rc;

	/* every thread while nothing is sampled goes straight through (tally's own threads never
	 * come here: they are made with libc's, libc.h) */
	if (!atomic_load_explicit(&watching, memory_order_relaxed) || !(s = malloc(sizeof(*s))))
		return libc_pthread_create(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	rc = libc_pthread_create(t, attr, thread_start, s);
	if (rc)
		free(s);
	return rc;
}

/* ---- /proc/self/task/TID -------------------------------------------------------------------- */

/* The thread's stat file, opened once and kept as tally's (keptfd.h): a failed open is tried
 * again next time, since a tid whose thread ended may come back as another's; one whose number
 * the program closed or took is opened anew (the number is left to the program). */
static int stat_fd(struct slot *s, pid_t tid)
{
	char path[64];
	int fd;

	if (s->stat.fd > 0 && tally_kept_ours(&s->stat))
		return s->stat.fd;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == 0) { /* 0 means "not open" here, and fd 0 is the program's to reuse */
		fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
		close(0);
	}
	if (tally_kept_take(&s->stat, fd) < 0 || s->stat.fd <= 0) {
		s->stat.fd = 0;
		return -1;
	}
	return s->stat.fd;
}

/* Field 3 of stat, after "pid (comm) ": the comm may hold spaces and parentheses, so the state
 * follows the *last* ')'. */
static unsigned parse_state(const char *text)
{
	static const struct {
		char c;
		unsigned state;
	} states[] = {{'R', TALLY_THREAD_ON_CPU},  {'D', TALLY_THREAD_SYSCALL},
		      {'S', TALLY_THREAD_WAITING}, {'I', TALLY_THREAD_WAITING},
		      {'T', TALLY_THREAD_STOPPED}, {'t', TALLY_THREAD_STOPPED}};
	const char *p = strrchr(text, ')');
	size_t i;

	if (!p || p[1] != ' ')
		return TALLY_THREAD_UNKNOWN;
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (p[2] == states[i].c)
			return states[i].state;
	return TALLY_THREAD_UNKNOWN;
}

unsigned tally_host_thread_state(pid_t tid)
{
	struct slot *s = slot_of(tid, true);
	char text[512];
	ssize_t n;
	int fd;

	if (!s || (fd = stat_fd(s, tid)) < 0)
		return TALLY_THREAD_UNKNOWN;
	n = pread(fd, text, sizeof(text) - 1, 0);
	if (n <= 0) { /* ESRCH: the thread is gone */
		stat_close(s);
		return TALLY_THREAD_UNKNOWN;
	}
	text[n] = 0;
	return parse_state(text);
}

bool tally_host_thread_name(pid_t tid, char *out, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	out[0] = 0;
	if (fd < 0)
		return false;
	n = libc_read(fd, out, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return true;
}

void tally_host_thread_close(pid_t tid)
{
	struct slot *s = slot_of(tid, false);

	if (s)
		stat_close(s);
}

void tally_host_thread_close_all(void)
{
	size_t i;

	for (i = 0; i < SLOTS; i++)
		stat_close(&slots[i]);
}
