/* SPDX-License-Identifier: MIT */
/*
 * The control thread: CUPTI's periodic flush (so a SIGKILL loses at most one slice), the
 * collection window's timers (--delay, --duration), and flushes requested from signal handlers,
 * which must not do the work themselves.  It takes no signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "pipeline.h"

enum ctl_cmd { CTL_FLUSH = 1, CTL_FINISH = 2, CTL_CRASH = 3 };

struct ctl_msg {
	uint8_t cmd;
	uint8_t signo;
};

/* Written once by control_start before the thread runs; read by signal handlers. */
static int ctl_pipe[2] = {-1, -1};
static _Atomic bool ctl_running;
static pthread_t ctl_thread;

static int next_timeout_ms(uint64_t now, uint64_t next_flush, uint64_t window_at)
{
	uint64_t next = next_flush;

	if (window_at && window_at < next)
		next = window_at;
	return next <= now ? 0 : (int)((next - now) / 1000000 + 1);
}

/* The signal's default action, now that the trace is closed: the process ends as it would have. */
static void terminate_with(int signo)
{
	sigset_t set;

	signal(signo, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), signo);
}

static void handle_msg(const struct ctl_msg *m)
{
	if (m->cmd == CTL_CRASH) {
		session_finish(TALLY_FLUSH_CRASH, m->signo);
	} else if (m->cmd == CTL_FINISH) {
		session_finish(TALLY_FLUSH_SIGNAL, m->signo);
		terminate_with(m->signo);
	} else {
		session_durable_flush();
	}
	/* Release: the flush's effects are visible to the handler that sees the new generation. */
	atomic_fetch_add_explicit(&g_session.done_gen, 1, memory_order_release);
}

/* Delay over: open the window.  Duration over: close the session (flush path "stop"). */
static uint64_t window_step(uint64_t now, uint64_t start)
{
	const struct tally_config *c = &g_session.cfg;
	uint64_t open_at = c->delay_ns ? start + c->delay_ns : 0;
	uint64_t close_at = c->duration_ns ? start + c->delay_ns + c->duration_ns : 0;

	if (open_at && now >= open_at && !g_session.window_open && !c->capture_profiler_api &&
	    (!close_at || now < close_at)) {
		cupti_window(true);
		open_at = 0;
	}
	if (close_at && now >= close_at) {
		session_finish(TALLY_FLUSH_STOP, 0);
		return 0;
	}
	if (open_at && now < open_at)
		return open_at;
	return close_at;
}

static void *control_main(void *arg)
{
	uint64_t start = g_session.started_mono, slice = g_session.cfg.slice_ns;
	uint64_t next_flush = start + slice, window_at = 1;

	(void)arg;
	while (session_running()) {
		struct pollfd pfd = {ctl_pipe[0], POLLIN, 0};
		uint64_t now = mono_now_ns();
		struct ctl_msg m;

		if (window_at)
			window_at = window_step(now, start);
		if (poll(&pfd, 1, next_timeout_ms(now, next_flush, window_at)) > 0 &&
		    read(ctl_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m))
			handle_msg(&m);
		now = mono_now_ns();
		if (now >= next_flush && session_running()) {
			/* Partly filled buffers reach the pipeline; the consumer writes them. */
			cupti_flush(false);
			next_flush = now + slice;
		}
	}
	/* Requests that arrive after the end still get their answer. */
	for (;;) {
		struct pollfd pfd = {ctl_pipe[0], POLLIN, 0};
		struct ctl_msg m;

		if (poll(&pfd, 1, -1) > 0 && read(ctl_pipe[0], &m, sizeof(m)) == (ssize_t)sizeof(m))
			atomic_fetch_add_explicit(&g_session.done_gen, 1, memory_order_release);
	}
	return NULL;
}

int control_start(void)
{
	sigset_t all, old;
	int rc;

	if (pipe2(ctl_pipe, O_CLOEXEC) < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&ctl_thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(ctl_pipe[0]);
		close(ctl_pipe[1]);
		ctl_pipe[0] = ctl_pipe[1] = -1;
		return -rc;
	}
	pthread_detach(ctl_thread);
	pthread_setname_np(ctl_thread, "tally-control");
	atomic_store_explicit(&ctl_running, true, memory_order_release);
	return 0;
}

void control_forget(void)
{
	/* A fork child: the thread is not there; its pipe ends are, and are closed. */
	atomic_store_explicit(&ctl_running, false, memory_order_relaxed);
	if (ctl_pipe[0] >= 0) {
		close(ctl_pipe[0]);
		close(ctl_pipe[1]);
	}
	ctl_pipe[0] = ctl_pipe[1] = -1;
}

/* Async-signal-safe: write(2), nanosleep(2), atomics. */
bool control_signal(int signo, enum ctl_request req, uint64_t wait_ns)
{
	static const uint8_t cmd[] = {[CTL_REQ_FLUSH] = CTL_FLUSH,
				      [CTL_REQ_FINISH] = CTL_FINISH,
				      [CTL_REQ_CRASH] = CTL_CRASH};
	struct ctl_msg m = {cmd[req], (uint8_t)signo};
	uint64_t gen = atomic_load_explicit(&g_session.done_gen, memory_order_acquire);
	struct timespec step = {0, 2000000};
	uint64_t waited = 0;

	if (!atomic_load_explicit(&ctl_running, memory_order_acquire) || ctl_pipe[1] < 0)
		return false;
	if (write(ctl_pipe[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
		return false;
	/* Acquire: pairs with the control thread's release after the flush. */
	while (atomic_load_explicit(&g_session.done_gen, memory_order_acquire) == gen &&
	       waited < wait_ns) {
		nanosleep(&step, NULL);
		waited += 2000000;
	}
	return true;
}
