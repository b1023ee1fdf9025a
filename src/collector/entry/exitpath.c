/* SPDX-License-Identifier: MIT */
/*
 * Every exit path closes the trace (docs/collector.md, "Every exit path flushes"):
 *
 *   exit(), return from main     atexit handler, registered when CUDA joins (and CUPTI's
 *                                context-destroy callback before it)
 *   _exit, _Exit, quick_exit     interposed (libtally.so is in LD_PRELOAD): close, then exit
 *   exec, every variant          interposed: the image is about to go; the trace is made whole
 *                                (a final ledger) but not closed, then exec; an exec that fails
 *                                returns to the program and the recording goes on (glibc's
 *                                execl* and fexecve call its internal execve, so each variant is
 *                                wrapped, not only execve; posix_spawn execs in a child)
 *   signals                      signals.c
 *   fork without exec            the fork hooks below: the child forgets the parent's session
 *
 * An exit path that comes while a signal is ending the process waits for that close and then
 * ends the process by the signal, as it would have ended untraced.  Interposed functions find
 * the real ones with dlsym(RTLD_NEXT).  A vfork child shares our memory and runs none of the
 * session's code: session_close() ignores any process but the session's own, and nothing here
 * allocates or sets a variable unless this is the process we loaded into (or forked into).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "exitpath.h"
#include "libc.h"
#include "sigreal.h"

#define EXEC_FROM_VAR "TALLY_EXEC_FROM"
#define ARGS_ON_STACK 64

extern char **environ;

static pid_t self_pid; /* at load, and in each fork child: a vfork child is not this process */
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT, cuda_atexit_once = PTHREAD_ONCE_INIT;

/* Close the trace by path; if a signal is ending the process (this exit may even beat the
 * control thread to the close: the close is then the signal's), end it by that signal. */
static void leave(enum tally_flush_path path)
{
	struct session *s = session_get();
	int sig = session_ending_signal(s);

	session_close(s, sig ? TALLY_FLUSH_SIGNAL : path, sig);
	sig = session_ending_signal(s);
	if (sig)
		die_by_signal(sig);
}

static void at_exit(void)
{
	leave(TALLY_FLUSH_EXIT);
}

static void register_atexit(void)
{
	atexit(at_exit);
}

/*
 * exit() runs the handlers in the reverse order of their registration, and the close must run
 * while CUDA and CUPTI are still there.  They register their own teardown as they come: libcupti
 * its destructors when it is loaded, the CUDA runtime its teardown (which destroys the contexts)
 * at its first call.  A handler registered by a library's constructor at load (a session begun
 * at load for host sampling) is older than all of them, and older than glibc's own unloading of
 * the libraries: it runs last, inside that unloading, after CUPTI's teardown (on the H200:
 * SIGSEGV in cuptiActivityDisable).  So when CUDA joins (at cuInit, CUPTI loaded and set up) the
 * handler is registered again, exactly where a session that CUDA starts registers it (its only
 * one); the older registration then finds the session closed.  No arm after CUDA's registers
 * one: it would run before the runtime's teardown, and the contexts' end, which the PM sampler
 * meets at CUPTI's context-destroy callback, would come after the close.
 */
static void registered_by_cuda(void)
{
}

void exitpath_arm(bool cuda)
{
	if (cuda)
		pthread_once(&cuda_atexit_once, register_atexit);
	/* the first arm registers it, unless that was CUDA's: a later one (NVTX's first call) would
	 * come after the runtime's teardown and run before it */
	pthread_once(&atexit_once, cuda ? registered_by_cuda : register_atexit);
}

/* ---- fork ------------------------------------------------------------------------------- */

static void before_fork(void)
{
	signals_before_fork(); /* first: blocks our signals in this thread */
	session_before_fork(session_get());
}

static void after_fork_parent(void)
{
	session_after_fork_parent(session_get());
	signals_after_fork_parent();
}

static void after_fork_child(void)
{
	self_pid = getpid();
	session_after_fork_child(session_get());
	signals_after_fork_child();
}

/* ---- the real functions ----------------------------------------------------------------- */

/* libc's, found at load: a vfork child that exits or execs must not call into the dynamic
 * loader, whose lock a thread of the parent may hold. */
static const char *const real_names[] = {"_exit",  "_Exit",   "quick_exit", "exit",
					 "execve", "execvpe", "fexecve",    "execveat"};
static void *real_fns[sizeof(real_names) / sizeof(real_names[0])];

static void *next_symbol(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(real_names) / sizeof(real_names[0]); i++)
		if (strcmp(real_names[i], name) == 0 && real_fns[i])
			return real_fns[i];
	return dlsym(RTLD_NEXT, name);
}

void exitpath_init(void)
{
	size_t i;

	self_pid = getpid();
	for (i = 0; i < sizeof(real_names) / sizeof(real_names[0]); i++)
		real_fns[i] = dlsym(RTLD_NEXT, real_names[i]);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- exits ------------------------------------------------------------------------------ */

typedef void (*exit_fn)(int);

static _Noreturn void exit_with(const char *name, int status)
{
	exit_fn real = (exit_fn)next_symbol(name);

	if (real)
		real(status);
	libc_syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

TALLY_EXPORT void _exit(int status)
{
	leave(TALLY_FLUSH__EXIT);
	exit_with("_exit", status);
}

TALLY_EXPORT void _Exit(int status)
{
	leave(TALLY_FLUSH__EXIT);
	exit_with("_Exit", status);
}

/* glibc's quick_exit runs the at_quick_exit handlers and then its internal _exit. */
TALLY_EXPORT void quick_exit(int status)
{
	leave(TALLY_FLUSH_QUICK_EXIT);
	exit_with("quick_exit", status);
}

/* exit() closes through atexit as before; only when a signal is already ending the process
 * does it wait for that close first, before other atexit handlers (CUDA's teardown) run. */
static _Noreturn void program_exit(int status)
{
	if (session_ending_signal(session_get()))
		leave(TALLY_FLUSH_EXIT);
	else
		session_exit_called(session_get());
	exit_with("exit", status);
}

TALLY_EXPORT void exit(int status)
{
	program_exit(status);
}

/* ---- return from main -------------------------------------------------------------------- */

/*
 * A main that returns reaches exit() inside libc, where the wrapper above never sees it.  With
 * GPU metrics asked for, the program's main is called through main_then_exit, so that what exit()
 * does first (session_exit_called) is done on that way too, before any exit handler.  A
 * dynamically linked program's _start calls __libc_start_main; without GPU metrics it passes
 * through untouched (no frame of ours under main in the program's stacks).
 */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void *, void *, void *, void *);
static main_fn program_main;

static int main_then_exit(int argc, char **argv, char **envp)
{
	int status = program_main(argc, argv, envp);

	session_exit_called(session_get());
	return status;
}

TALLY_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void *init, void *fini,
				   void *rtld_fini, void *stack_end);
TALLY_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void *init, void *fini,
				   void *rtld_fini, void *stack_end)
{
	start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");

	if (!real) /* no libc after us: never on glibc; run the program as _start would */
		program_exit(main(argc, argv, environ));
	if (tally_config_gpu_metrics_asked()) {
		program_main = main;
		main = main_then_exit;
	}
	return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

/* ---- exec ------------------------------------------------------------------------------- */

/*
 * The environment for the next image: when this pid's images wrote files, say how many
 * (TALLY_EXEC_FROM=PID:N), so the next one names its file apart.  Returns envp itself, or a copy
 * the caller frees (*owned).
 */
static char *const *exec_env(char *const envp[], char ***owned)
{
	static char var[64];
	unsigned files = session_exec_files(session_get());
	size_t n = 0, i, j = 0;
	char **env;

	*owned = NULL;
	if (!files || getpid() != self_pid || !envp)
		return envp;
	while (envp[n])
		n++;
	env = malloc((n + 2) * sizeof(*env));
	if (!env)
		return envp;
	snprintf(var, sizeof(var), "%s=%ld:%u", EXEC_FROM_VAR, (long)getpid(), files);
	for (i = 0; i < n; i++)
		if (strncmp(envp[i], EXEC_FROM_VAR "=", sizeof(EXEC_FROM_VAR)) != 0)
			env[j++] = envp[i];
	env[j++] = var;
	env[j] = NULL;
	*owned = env;
	return env;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

/* An exec wrapper's state around the real call: the environment handed to the next image, and
 * whether the session is held for it. */
struct exec_call {
	char **owned; /* exec_env's copy, if it made one */
	char *const *env;
	const char *path; /* what is executed (NULL: a descriptor) */
	bool held;	  /* session_exec_begin held the session */
};

/*
 * Before the real call: find it, make the trace whole without closing it (session_exec_begin:
 * an exec that fails returns to the program, which goes on, and so does the recording), make
 * the next image's environment.  While a signal is ending the process, its close comes first
 * and the process ends by it.  NULL (errno ENOSYS) when there is no real function to call.
 */
static void *exec_begin(const char *name, const char *path, char *const envp[], struct exec_call *x)
{
	void *real = next_symbol(name);
	struct session *s = session_get();

	x->path = path;
	x->held = false;
	x->owned = NULL;
	x->env = envp;
	if (session_ending_signal(s))
		leave(TALLY_FLUSH_EXEC);
	else if (getpid() == self_pid)
		x->held = session_exec_begin(s);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	x->env = exec_env(envp, &x->owned);
	return real;
}

/* After the real call, which came back only because it failed: the trace says so and recording
 * goes on; free, keep its errno. */
static int exec_end(struct exec_call *x, int rc)
{
	int saved = errno;

	free(x->owned);
	if (x->held)
		session_exec_after(session_get(), x->path, saved);
	errno = saved;
	return rc;
}

static int exec_path(const char *path, char *const argv[], char *const envp[])
{
	struct exec_call x;
	execve_fn real = (execve_fn)exec_begin("execve", path, envp, &x);

	return exec_end(&x, real ? real(path, argv, x.env) : -1);
}

static int exec_search(const char *file, char *const argv[], char *const envp[])
{
	struct exec_call x;
	execve_fn real = (execve_fn)exec_begin("execvpe", file, envp, &x);

	return exec_end(&x, real ? real(file, argv, x.env) : -1);
}

TALLY_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_path(path, argv, envp);
}

TALLY_EXPORT int execv(const char *path, char *const argv[])
{
	return exec_path(path, argv, environ);
}

TALLY_EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_search(file, argv, environ);
}

TALLY_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_search(file, argv, envp);
}

TALLY_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_call x;
	fexecve_fn real = (fexecve_fn)exec_begin("fexecve", NULL, envp, &x);

	return exec_end(&x, real ? real(fd, argv, x.env) : -1);
}

TALLY_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			  int flags)
{
	struct exec_call x;
	execveat_fn real = (execveat_fn)exec_begin("execveat", path, envp, &x);

	return exec_end(&x, real ? real(dirfd, path, argv, x.env, flags) : -1);
}

/* execl's list as execv's array: on the stack for the usual few, else on the heap. */
struct arglist {
	char *stack[ARGS_ON_STACK];
	char **v;
	char **envp; /* execle: the array after the NULL */
};

static int arglist_collect(struct arglist *l, const char *arg0, va_list ap, bool with_env)
{
	va_list count;
	size_t n = 1, i;

	va_copy(count, ap);
	while (va_arg(count, char *))
		n++;
	va_end(count);
	l->v = n < ARGS_ON_STACK ? l->stack : malloc((n + 1) * sizeof(char *));
	if (!l->v) {
		errno = ENOMEM;
		return -1;
	}
	l->v[0] = (char *)arg0;
	for (i = 1; i < n; i++)
		l->v[i] = va_arg(ap, char *);
	l->v[n] = va_arg(ap, char *); /* the NULL */
	l->envp = with_env ? va_arg(ap, char **) : environ;
	return 0;
}

static int arglist_done(struct arglist *l, int rc)
{
	int saved = errno;

	if (l->v != l->stack)
		free(l->v);
	errno = saved;
	return rc;
}

TALLY_EXPORT int execl(const char *path, const char *arg, ...)
{
	struct arglist l;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = arglist_collect(&l, arg, ap, false);
	va_end(ap);
	return rc < 0 ? rc : arglist_done(&l, exec_path(path, l.v, l.envp));
}

TALLY_EXPORT int execle(const char *path, const char *arg, ...)
{
	struct arglist l;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = arglist_collect(&l, arg, ap, true);
	va_end(ap);
	return rc < 0 ? rc : arglist_done(&l, exec_path(path, l.v, l.envp));
}

TALLY_EXPORT int execlp(const char *file, const char *arg, ...)
{
	struct arglist l;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = arglist_collect(&l, arg, ap, false);
	va_end(ap);
	return rc < 0 ? rc : arglist_done(&l, exec_search(file, l.v, l.envp));
}
