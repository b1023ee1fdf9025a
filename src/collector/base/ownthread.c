/* SPDX-License-Identifier: MIT */
/* tally's own threads; see ownthread.h. */
#include "ownthread.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc.h"

#define OWN_MAX 16 /* consumer, control, sampler and a few watchdog helpers at a time */

/* Read by signal handlers and interposers: initial-exec, so that no first access allocates. */
#define HANDLER_TLS __attribute__((tls_model("initial-exec")))
static _Thread_local bool own HANDLER_TLS;
static _Thread_local pid_t cached_tid HANDLER_TLS;
static _Atomic pid_t own_tids[OWN_MAX];

struct start {
	void *(*fn)(void *);
	void *arg;
	char name[16];
};

pid_t tally_gettid(void)
{
	if (!cached_tid)
		cached_tid = (pid_t)libc_syscall(SYS_gettid);
	return cached_tid;
}

static void remember(pid_t tid)
{
	unsigned i;

	for (i = 0; i < OWN_MAX; i++) {
		pid_t none = 0;

		if (atomic_compare_exchange_strong(&own_tids[i], &none, tid))
			return;
	}
}

static void forget(pid_t tid)
{
	unsigned i;

	for (i = 0; i < OWN_MAX; i++) {
		pid_t was = tid;

		if (atomic_compare_exchange_strong(&own_tids[i], &was, 0))
			return;
	}
}

static void *own_main(void *arg)
{
	struct start s = *(struct start *)arg;
	void *ret;

	free(arg);
	if (s.name[0]) /* before anything can see the thread under its creator's name */
		pthread_setname_np(pthread_self(), s.name);
	own = true;
	remember(tally_gettid());
	ret = s.fn(s.arg); /* tally's threads return; none calls pthread_exit */
	forget(tally_gettid());
	return ret;
}

int tally_own_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name,
			    bool detached)
{
	struct start *s = malloc(sizeof(*s));
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->arg = arg;
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
	pthread_attr_init(&attr);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = libc_pthread_create(t, &attr, own_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		free(s);
		return -rc;
	}
	return 0;
}

bool tally_own_thread(void)
{
	return own;
}

bool tally_own_tid(pid_t tid)
{
	unsigned i;

	for (i = 0; i < OWN_MAX; i++)
		if (atomic_load_explicit(&own_tids[i], memory_order_relaxed) == tid)
			return true;
	return false;
}

void tally_own_threads_forget(void)
{
	unsigned i;

	for (i = 0; i < OWN_MAX; i++)
		atomic_store_explicit(&own_tids[i], 0, memory_order_relaxed);
	cached_tid = 0; /* the forking thread has a new tid in the child */
}
