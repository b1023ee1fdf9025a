/* SPDX-License-Identifier: MIT */
/*
 * The control thread's plumbing (control.h).  Signal handlers must not do the closing work
 * themselves (the thread they interrupt may hold CUDA's or malloc's locks), so they write a
 * two-byte request into a pipe, and the control thread, which takes no signals, reads it.
 */
#include "control.h"
#include "ownthread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

void control_init(struct control *c)
{
	c->pipe[0] = c->pipe[1] = -1;
	atomic_store_explicit(&c->running, false, memory_order_relaxed);
}

int control_start(struct control *c, void *(*main)(void *), void *arg, const char *name)
{
	int rc;

	if (pipe2(c->pipe, O_CLOEXEC) < 0)
		return -errno;
	rc = tally_own_thread_create(&c->thread, main, arg, name, true);
	if (rc < 0) {
		close(c->pipe[0]);
		close(c->pipe[1]);
		c->pipe[0] = c->pipe[1] = -1;
		return rc;
	}
	/* Release: the pipe is set before a handler that sees running writes to it. */
	atomic_store_explicit(&c->running, true, memory_order_release);
	return 0;
}

bool control_wait(struct control *c, int timeout_ms, struct ctl_msg *m)
{
	struct pollfd pfd = {c->pipe[0], POLLIN, 0};

	return poll(&pfd, 1, timeout_ms) > 0 &&
	       read(c->pipe[0], m, sizeof(*m)) == (ssize_t)sizeof(*m);
}

bool control_alive(const struct control *c)
{
	return atomic_load_explicit(&c->running, memory_order_acquire);
}

/* Async-signal-safe: an atomic load and write(2). */
bool control_post(struct control *c, enum ctl_cmd cmd, int signo)
{
	struct ctl_msg m = {(uint8_t)cmd, (uint8_t)signo};

	if (!control_alive(c) || c->pipe[1] < 0)
		return false;
	return write(c->pipe[1], &m, sizeof(m)) == (ssize_t)sizeof(m);
}

void control_forget(struct control *c)
{
	atomic_store_explicit(&c->running, false, memory_order_relaxed);
	if (c->pipe[0] >= 0) {
		close(c->pipe[0]);
		close(c->pipe[1]);
	}
	c->pipe[0] = c->pipe[1] = -1;
}
