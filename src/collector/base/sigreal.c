/* SPDX-License-Identifier: MIT */
/* libc's signal calls behind tally's interposed ones, and the default action (sigreal.h). */
#include "sigreal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* Resolved at load, before any handler of ours can run; read-only afterwards. */
static sigaction_fn next_sigaction;

void sigreal_init(void)
{
	/* RTLD_NEXT when preloaded (a sanitizer's interceptor or libc); loaded by dlopen only,
	 * nothing of ours is interposed and libc's is the default one. */
	next_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (!next_sigaction)
		next_sigaction = (sigaction_fn)dlsym(RTLD_DEFAULT, "sigaction");
}

int libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!next_sigaction)
		sigreal_init();
	if (!next_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return next_sigaction(sig, act, old);
}

void die_by_signal(int sig)
{
	struct sigaction dfl;
	sigset_t set;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	(void)libc_sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* Thread-directed, to a thread that does not block it: delivered before raise returns. */
	raise(sig);
}
