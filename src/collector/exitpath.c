/* SPDX-License-Identifier: MIT */
/*
 * Every exit path flushes (design §3):
 *
 *   exit(), return from main     atexit handler (and CUPTI's context-destroy callback before it)
 *   _exit, _Exit, os._exit       interposed here (libtally.so is in LD_PRELOAD): flush, then exit
 *   execve and friends           interposed: the image is about to go; flush, then exec
 *   SIGTERM, SIGINT, SIGHUP      the handler asks the control thread to flush and waits (bounded),
 *                                then the program's own handler runs, or the default action
 *   SIGSEGV, SIGBUS, SIGABRT...  the same, best effort, with a short bound
 *   SIGKILL, OOM                 nothing runs: the periodic flush bounds the loss to one slice
 *   fork without exec            the child forgets the parent's session and starts its own
 *
 * Interposed functions find the real ones with dlsym(RTLD_NEXT).  A vfork child (posix_spawn)
 * shares our memory: session_finish() ignores any process but the session's own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "log.h"
#include "pipeline.h"

#define CRASH_TIMEOUT_NS 3000000000ull

static const int term_signals[] = {SIGTERM, SIGINT, SIGHUP};
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

/* The program's dispositions we replaced, to chain to.  Written at install, before the
 * handlers can run; read in the handlers. */
static struct sigaction old_action[NSIG];
static bool installed;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void at_exit(void)
{
	session_finish(TALLY_FLUSH_EXIT, 0);
}

/* Run what the program wanted for sig: its handler, nothing, or the default action. */
static void chain(int sig, siginfo_t *info, void *uc)
{
	const struct sigaction *old = &old_action[sig];

	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction)
			old->sa_sigaction(sig, info, uc);
		return;
	}
	if (old->sa_handler == SIG_IGN)
		return;
	if (old->sa_handler != SIG_DFL) {
		old->sa_handler(sig);
		return;
	}
	/* Default action: put it back and deliver the signal again, unblocked. */
	signal(sig, SIG_DFL);
	{
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, sig);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	raise(sig);
}

static bool default_terminates(int sig)
{
	const struct sigaction *old = &old_action[sig];

	return !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL;
}

static _Atomic bool termination_requested;

static void on_term_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;

	if (session_running() && default_terminates(sig)) {
		/* The first one: the control thread closes the trace, then ends the process with
		 * this signal.  We return at once (the interrupted thread may hold CUDA's locks).
		 * A second one while that runs takes effect now. */
		if (!atomic_exchange_explicit(&termination_requested, true, memory_order_acq_rel) &&
		    control_signal(sig, CTL_REQ_FINISH, 0)) {
			errno = saved;
			return;
		}
	} else if (session_running()) {
		/* The program handles it and may go on: make the records durable, don't close. */
		(void)control_signal(sig, CTL_REQ_FLUSH, 0);
	}
	errno = saved;
	chain(sig, info, uc);
}

static void on_crash_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;

	if (session_running())
		(void)control_signal(sig, CTL_REQ_CRASH, CRASH_TIMEOUT_NS);
	errno = saved;
	/* For a fault, returning re-runs the faulting instruction under the old disposition. */
	if (default_terminates(sig) && sig != SIGABRT) {
		signal(sig, SIG_DFL);
		return;
	}
	chain(sig, info, uc);
}

static void install_handler(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, NULL, &old_action[sig]) < 0)
		return;
	if (!(old_action[sig].sa_flags & SA_SIGINFO) && old_action[sig].sa_handler == SIG_IGN)
		return; /* ignored (nohup): leave it so */
	sigaction(sig, &sa, NULL);
}

static void atfork_prepare(void)
{
}

static void atfork_parent(void)
{
}

static void atfork_child(void)
{
	exitpath_after_fork_child();
}

static void register_atfork(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void exitpath_install(void)
{
	size_t i;

	pthread_once(&atfork_once, register_atfork);
	if (installed)
		return;
	installed = true;
	atexit(at_exit);
	for (i = 0; i < sizeof(term_signals) / sizeof(term_signals[0]); i++)
		install_handler(term_signals[i], on_term_signal);
	for (i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		install_handler(crash_signals[i], on_crash_signal);
}

void exitpath_after_fork_child(void)
{
	/* Threads do not survive fork: the parent's consumer and control threads are not here, and
	 * its pipeline and file are the parent's.  Forget them; if this child uses CUDA or NVTX it
	 * starts a session of its own, with its own file.  Handlers and atexit stay installed; they
	 * act only on a session of this process. */
	session_after_fork();
	if (atomic_load_explicit(&g_session.state, memory_order_relaxed) != SESSION_NONE) {
		tally_pipeline_abandon();
		control_forget();
		nvtx_forget();
		if (g_session.fd >= 0)
			close(g_session.fd);
		g_session.fd = -1;
		g_session.cupti_on = false;
		g_session.window_open = false;
		atomic_store_explicit(&g_session.state, SESSION_NONE, memory_order_relaxed);
	}
}

/* ---- interposed ------------------------------------------------------------------------ */

static void *next_symbol(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

TALLY_EXPORT void _exit(int status)
{
	void (*real)(int) = (void (*)(int))next_symbol("_exit");

	session_finish(TALLY_FLUSH__EXIT, 0);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

TALLY_EXPORT void _Exit(int status)
{
	void (*real)(int) = (void (*)(int))next_symbol("_Exit");

	session_finish(TALLY_FLUSH__EXIT, 0);
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

TALLY_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)next_symbol("execve");

	session_finish(TALLY_FLUSH_EXEC, 0);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(path, argv, envp);
}

TALLY_EXPORT int execv(const char *path, char *const argv[])
{
	execv_fn real = (execv_fn)next_symbol("execv");

	session_finish(TALLY_FLUSH_EXEC, 0);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(path, argv);
}

TALLY_EXPORT int execvp(const char *file, char *const argv[])
{
	execv_fn real = (execv_fn)next_symbol("execvp");

	session_finish(TALLY_FLUSH_EXEC, 0);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(file, argv);
}

TALLY_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)next_symbol("execvpe");

	session_finish(TALLY_FLUSH_EXEC, 0);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(file, argv, envp);
}
