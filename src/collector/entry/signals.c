/* SPDX-License-Identifier: MIT */
/*
 * Signals: every signal whose default action ends the process is an exit path (docs/collector.md,
 * "Signals").  Once a session runs, tally's handler sits in front of each of them, and keeps its
 * place: libtally.so is in LD_PRELOAD, so the program's sigaction(), signal(), sigset() ... calls
 * come here.  What the program asks for is kept (its "view") and honoured:
 *
 *   the program's handler   called from ours, with the program's mask and flags (the kernel
 *                           action mirrors them); for SIGTERM/SIGINT/SIGHUP a durable flush too
 *   SIG_IGN                 installed for real: the kernel discards the signal, exec keeps it
 *   SIG_DFL                 the session closes the trace, then the default action ends the
 *                           process (session_signal_end); a fault closes, then repeats under
 *                           SIG_DFL; a crash signal that was sent ends the process at once
 *
 * sigaction() answers with the view, so a program that saves and restores its old action (Python,
 * faulthandler) gets back what it set.  The view is read in handlers on any thread while another
 * may change it: a sequence lock per signal, written with all signals blocked.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "exitpath.h"
#include "forward.h"
#include "sigreal.h"

#define CRASH_WAIT_NS 3000000000ull
/* How long after an original a forwarded copy of it is still a repeat (both are sent in the same
 * instant; the rest is scheduling, seconds on a loaded node)... */
#define FORWARD_WINDOW_NS 2000000000ull
/* ...and how long after a copy that stood in for it the original may still come.  Shorter: the
 * original was queued before the copy was even sent, so it comes as soon as the copy's handler
 * returns; a longer wait would only risk taking the next real signal for it. */
#define STANDIN_WINDOW_NS 500000000ull
/* How long a thread a terminating signal interrupted waits for the close (see collector.h): while
 * it gets on, up to 2 s (GPU metrics' last decode alone can take up to a second), but no longer
 * than 100 ms with nothing moving (the close may be waiting on this very thread). */
#define END_STILL_NS 100000000ull
#define END_MOST_NS  2000000000ull
#define MAX_SIG	     65 /* the kernel's signals are 1..64 */

enum sig_class {
	SIG_NOT_OURS,
	SIG_STOP,  /* TERM INT HUP: how schedulers and terminals ask a program to stop */
	SIG_END,   /* every other signal whose default action ends the process */
	SIG_FAULT, /* SEGV BUS FPE ILL: returning from the handler repeats a real fault */
	SIG_CRASH, /* ABRT TRAP SYS: crash signals that do not repeat */
};

static const struct {
	int sig;
	enum sig_class cls;
} managed[] = {
    {SIGTERM, SIG_STOP},  {SIGINT, SIG_STOP},  {SIGHUP, SIG_STOP},   {SIGQUIT, SIG_END},
    {SIGUSR1, SIG_END},	  {SIGUSR2, SIG_END},  {SIGALRM, SIG_END},   {SIGVTALRM, SIG_END},
    {SIGPROF, SIG_END},	  {SIGXCPU, SIG_END},  {SIGXFSZ, SIG_END},   {SIGPIPE, SIG_END},
    {SIGIO, SIG_END},	  {SIGPWR, SIG_END},   {SIGSTKFLT, SIG_END}, {SIGSEGV, SIG_FAULT},
    {SIGBUS, SIG_FAULT},  {SIGFPE, SIG_FAULT}, {SIGILL, SIG_FAULT},  {SIGABRT, SIG_CRASH},
    {SIGTRAP, SIG_CRASH}, {SIGSYS, SIG_CRASH},
};

/* The program's view of one signal, in words a sequence lock can copy atomically. */
struct view {
	_Atomic unsigned seq; /* odd while being written */
	_Atomic uintptr_t handler;
	_Atomic int flags;
	_Atomic uint64_t mask; /* bit n-1: signal n */
};

static struct view views[MAX_SIG];
/* The sampler's timer signal (signals_claim): written before the handler is in front. */
static _Atomic int claimed_sig, claimed_tag;
static void (*_Atomic claimed_fn)(int, siginfo_t *, void *);
static _Atomic bool armed[MAX_SIG];
static atomic_flag write_lock = ATOMIC_FLAG_INIT;
static __thread sigset_t fork_saved_mask;

static enum sig_class class_of(int sig)
{
	size_t i;

	for (i = 0; i < sizeof(managed) / sizeof(managed[0]); i++)
		if (managed[i].sig == sig)
			return managed[i].cls;
	/* Real-time signals end the process by default too (glibc keeps the first few for itself,
	 * and SIGRTMIN starts after them). */
	return sig >= SIGRTMIN && sig <= SIGRTMAX && sig < MAX_SIG ? SIG_END : SIG_NOT_OURS;
}

static bool is_armed(int sig)
{
	return sig > 0 && sig < MAX_SIG && atomic_load_explicit(&armed[sig], memory_order_acquire);
}

static uint64_t mask_bits(const sigset_t *set)
{
	uint64_t bits = 0;
	int i;

	for (i = 1; i < MAX_SIG; i++)
		if (sigismember(set, i) == 1)
			bits |= 1ull << (i - 1);
	return bits;
}

static void mask_set(uint64_t bits, sigset_t *set)
{
	int i;

	sigemptyset(set);
	for (i = 1; i < MAX_SIG; i++)
		if (bits >> (i - 1) & 1)
			sigaddset(set, i);
}

/* ---- the view: written under write_lock with every signal blocked, read anywhere ---------- */

static void writer_lock(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, saved);
	while (atomic_flag_test_and_set_explicit(&write_lock, memory_order_acquire))
		;
}

static void writer_unlock(const sigset_t *saved)
{
	atomic_flag_clear_explicit(&write_lock, memory_order_release);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static void view_store(int sig, const struct sigaction *act)
{
	struct view *v = &views[sig];
	unsigned seq = atomic_load_explicit(&v->seq, memory_order_relaxed);

	atomic_store_explicit(&v->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&v->handler, (uintptr_t)act->sa_handler, memory_order_relaxed);
	atomic_store_explicit(&v->flags, act->sa_flags, memory_order_relaxed);
	atomic_store_explicit(&v->mask, mask_bits(&act->sa_mask), memory_order_relaxed);
	atomic_store_explicit(&v->seq, seq + 2, memory_order_release);
}

/* Async-signal-safe.  A writer on this thread is impossible (it blocks every signal). */
static void view_load(int sig, struct sigaction *out)
{
	struct view *v = &views[sig];
	unsigned s1, s2;
	uintptr_t handler;
	uint64_t mask;
	int flags;

	do {
		s1 = atomic_load_explicit(&v->seq, memory_order_acquire);
		handler = atomic_load_explicit(&v->handler, memory_order_relaxed);
		flags = atomic_load_explicit(&v->flags, memory_order_relaxed);
		mask = atomic_load_explicit(&v->mask, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&v->seq, memory_order_relaxed);
	} while ((s1 & 1) || s1 != s2);
	memset(out, 0, sizeof(*out));
	out->sa_handler = (void (*)(int))handler;
	out->sa_flags = flags;
	mask_set(mask, &out->sa_mask);
}

/* ---- the handler ------------------------------------------------------------------------ */

static void on_signal(int sig, siginfo_t *info, void *uc);

/* What the kernel gets for the program's action: ignoring is the program's own; anything else
 * is our handler with the program's mask and the flags that change how the interrupted code
 * sees it (SA_RESTART above all: Python's input() must still see EINTR on ^C). */
static void install_front(int sig, const struct sigaction *act)
{
	struct sigaction sa;
	bool claimed = sig == atomic_load_explicit(&claimed_sig, memory_order_relaxed);

	if (act->sa_handler == SIG_IGN && !claimed) {
		(void)libc_sigaction(sig, act, NULL);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_mask = act->sa_mask;
	sa.sa_flags = SA_SIGINFO | (act->sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
	if (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)
		sa.sa_flags |= SA_RESTART | SA_ONSTACK;
	if (claimed) /* the sampler's timer must not make the program's calls fail with EINTR */
		sa.sa_flags |= SA_RESTART;
	(void)libc_sigaction(sig, &sa, NULL);
}

static void set_view(int sig, const struct sigaction *act)
{
	view_store(sig, act);
	install_front(sig, act);
}

/* SA_RESETHAND: the program's action becomes SIG_DFL as its handler is entered. */
static void reset_view(int sig)
{
	struct sigaction dfl;
	sigset_t saved;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	writer_lock(&saved);
	set_view(sig, &dfl);
	writer_unlock(&saved);
}

static void call_program(int sig, const struct sigaction *a, siginfo_t *info, void *uc)
{
	if (a->sa_flags & SA_RESETHAND)
		reset_view(sig);
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, info, uc);
	else
		a->sa_handler(sig);
}

/* A crash with the default action: close (bounded), then end as untraced.  A real fault is
 * left to repeat under SIG_DFL, so the core shows it where it happened; a sent one (kill,
 * raise, abort: si_code <= 0) or one that does not repeat (TRAP, SYS) is delivered again. */
static void on_crash(int sig, enum sig_class cls, siginfo_t *info)
{
	struct sigaction dfl;

	session_signal_crash(session_get(), sig, info, CRASH_WAIT_NS);
	if (cls == SIG_FAULT && info && info->si_code > 0) {
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		(void)libc_sigaction(sig, &dfl, NULL);
		return;
	}
	die_by_signal(sig);
}

/* ---- forwarded copies (forward.h): never a delivery the program would not have had ---------
 *
 * A signal sent to the whole process group, or by Slurm's proctrack/linuxproc to every process,
 * reaches both the program (the original) and tally record, which forwards a copy.  Per signal:
 * when the last original came from whom and when, and how many copies were delivered in place of
 * an original not yet come (the copy can overtake it).  Atomics only: signal handlers.
 */
static struct {
	_Atomic uint64_t original_ns;
	_Atomic int original_sender;
	_Atomic uint64_t standin_ns;
	_Atomic int standin_sender;
	_Atomic int standins_owed;
} recent[MAX_SIG];

static uint64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static bool within(uint64_t then, uint64_t now, uint64_t window)
{
	return then != 0 && now - then < window;
}

/* A forwarded copy: a repeat when the program had the original from the same sender lately;
 * otherwise (proctrack/cgroup: only tally record was signalled) it stands in for it. */
static bool copy_is_repeat(int sig, int sender, uint64_t now)
{
	if (atomic_load(&recent[sig].original_sender) == sender &&
	    within(atomic_load(&recent[sig].original_ns), now, FORWARD_WINDOW_NS))
		return true;
	if (!within(atomic_load(&recent[sig].standin_ns), now, STANDIN_WINDOW_NS) ||
	    atomic_load(&recent[sig].standin_sender) != sender)
		atomic_store(&recent[sig].standins_owed, 0);
	atomic_store(&recent[sig].standin_sender, sender);
	atomic_store(&recent[sig].standin_ns, now);
	atomic_fetch_add(&recent[sig].standins_owed, 1);
	return false;
}

/* An original (sent by a process): a repeat when a copy already stood in for it. */
static bool original_is_repeat(int sig, int sender, uint64_t now)
{
	int owed;

	atomic_store(&recent[sig].original_sender, sender);
	atomic_store(&recent[sig].original_ns, now);
	if (atomic_load(&recent[sig].standin_sender) != sender ||
	    !within(atomic_load(&recent[sig].standin_ns), now, STANDIN_WINDOW_NS))
		return false;
	owed = atomic_load(&recent[sig].standins_owed);
	while (owed > 0 &&
	       !atomic_compare_exchange_weak(&recent[sig].standins_owed, &owed, owed - 1))
		;
	return owed > 0;
}

/* true: drop this signal, the program had it already (only a handler must not see a repeat:
 * under SIG_DFL it is counted in the close).  A copy that is delivered is shown to the program,
 * and to the ledger, as its original sender sent it (SI_USER from that pid), through *info. */
static bool drop_repeat(int sig, bool handler, siginfo_t **info, siginfo_t *as_sent)
{
	uint64_t now;
	int sender;

	if (!*info)
		return false;
	now = monotonic_ns();
	if (!tally_forwarded(*info, (int)getppid(), &sender))
		return handler && (*info)->si_code <= 0 &&
		       original_is_repeat(sig, (*info)->si_pid, now);
	if (handler && copy_is_repeat(sig, sender, now))
		return true;
	*as_sent = **info;
	as_sent->si_code = SI_USER;
	as_sent->si_pid = sender;
	as_sent->si_value.sival_ptr = NULL;
	*info = as_sent;
	return false;
}

static bool is_claimed_timer(int sig, const siginfo_t *info)
{
	return sig == atomic_load_explicit(&claimed_sig, memory_order_acquire) && info &&
	       info->si_code == SI_TIMER &&
	       info->si_value.sival_int == atomic_load_explicit(&claimed_tag, memory_order_relaxed);
}

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	enum sig_class cls = class_of(sig);
	int saved = errno;
	struct sigaction a;
	siginfo_t as_sent;
	void (*fn)(int, siginfo_t *, void *);

	if (is_claimed_timer(sig, info)) {
		fn = atomic_load_explicit(&claimed_fn, memory_order_acquire);
		if (fn)
			fn(sig, info, uc);
		errno = saved;
		return; /* tally's own: the program never sees it */
	}
	view_load(sig, &a);
	if (a.sa_handler == SIG_IGN) /* ignored since the kernel chose us: as if it had not come */
		return;
	if (drop_repeat(sig, a.sa_handler != SIG_DFL, &info, &as_sent)) {
		errno = saved;
		return;
	}
	if (a.sa_handler != SIG_DFL) {
		if (cls == SIG_STOP)
			session_signal_flush(session_get(), sig);
		errno = saved;
		call_program(sig, &a, info, uc);
		return;
	}
	if (cls == SIG_FAULT || cls == SIG_CRASH)
		on_crash(sig, cls, info);
	else if (!session_signal_end(session_get(), sig, info, END_STILL_NS, END_MOST_NS))
		die_by_signal(sig); /* no session here: as untraced */
	errno = saved;
}

/* ---- arming, and fork ------------------------------------------------------------------- */

static void arm_one(int sig)
{
	struct sigaction cur;
	sigset_t saved;

	writer_lock(&saved);
	if (!atomic_load_explicit(&armed[sig], memory_order_relaxed) &&
	    libc_sigaction(sig, NULL, &cur) == 0) {
		view_store(sig, &cur);
		atomic_store_explicit(&armed[sig], true, memory_order_release);
		install_front(sig, &cur);
	}
	writer_unlock(&saved);
}

void signals_claim(int sig, int tag, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction a;
	sigset_t saved;

	atomic_store_explicit(&claimed_tag, tag, memory_order_relaxed);
	atomic_store_explicit(&claimed_fn, fn, memory_order_release);
	atomic_store_explicit(&claimed_sig, sig, memory_order_release);
	arm_one(sig);
	/* in front even where the program asked to ignore it; with SA_RESTART */
	writer_lock(&saved);
	view_load(sig, &a);
	install_front(sig, &a);
	writer_unlock(&saved);
}

void signals_program_action(int sig, struct sigaction *out)
{
	if (sig > 0 && sig < MAX_SIG && is_armed(sig))
		view_load(sig, out);
	else
		(void)libc_sigaction(sig, NULL, out);
}

void signals_arm(void)
{
	int sig;

	for (sig = 1; sig < MAX_SIG; sig++)
		if (class_of(sig) != SIG_NOT_OURS)
			arm_one(sig);
}

/* As LTTng-UST: no handler of ours runs in the forking thread across fork, and the view's lock
 * is held so the child's copy is whole. */
void signals_before_fork(void)
{
	writer_lock(&fork_saved_mask);
}

void signals_after_fork_parent(void)
{
	writer_unlock(&fork_saved_mask);
}

void signals_after_fork_child(void)
{
	struct sigaction a;
	int sig;

	/* no sampler here: a timer's signal cannot come (timers are not inherited by fork) */
	atomic_store_explicit(&claimed_sig, 0, memory_order_relaxed);

	for (sig = 1; sig < MAX_SIG; sig++) {
		if (!atomic_load_explicit(&armed[sig], memory_order_relaxed))
			continue;
		view_load(sig, &a);
		(void)libc_sigaction(sig, &a, NULL);
		atomic_store_explicit(&armed[sig], false, memory_order_release);
	}
	writer_unlock(&fork_saved_mask);
}

/* ---- interposed ------------------------------------------------------------------------- */

/* The interposers below call one another through these static functions, never through the
 * exported names (a call of ours never goes through the dynamic symbol table: libc.h). */

/* sigaction() as the program sees it. */
static int program_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t saved;

	if (!is_armed(sig))
		return libc_sigaction(sig, act, old);
	writer_lock(&saved);
	if (old)
		view_load(sig, old);
	if (act)
		set_view(sig, act);
	writer_unlock(&saved);
	return 0;
}

TALLY_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return program_sigaction(sig, act, old);
}

/* siginterrupt's set, for signal(): glibc keeps its own, which our signal() cannot see. */
static _Atomic uint64_t interrupting;

static sighandler_t set_simple(int sig, sighandler_t h, int flags, bool self_mask)
{
	struct sigaction act, old;

	if (h == SIG_ERR || sig <= 0 || sig >= MAX_SIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (self_mask)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (program_sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* BSD semantics, as glibc's signal(): the signal is blocked in its handler, calls restart. */
static sighandler_t bsd_semantics(int sig, sighandler_t h)
{
	bool intr = sig > 0 && sig < MAX_SIG &&
		    (atomic_load_explicit(&interrupting, memory_order_relaxed) >> (sig - 1) & 1);

	return set_simple(sig, h, intr ? 0 : SA_RESTART, true);
}

TALLY_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return bsd_semantics(sig, h);
}

sighandler_t bsd_signal(int sig, sighandler_t h); /* glibc declares it for XPG4 only */

TALLY_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return bsd_semantics(sig, h);
}

TALLY_EXPORT sighandler_t ssignal(int sig, sighandler_t h)
{
	return bsd_semantics(sig, h);
}

/* System V semantics: one shot, not blocked in its handler, calls interrupted. */
TALLY_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set_simple(sig, h, SA_RESETHAND | SA_NODEFER, false);
}

TALLY_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return set_simple(sig, h, SA_RESETHAND | SA_NODEFER, false);
}

TALLY_EXPORT int siginterrupt(int sig, int flag)
{
	struct sigaction act;

	if (sig <= 0 || sig >= MAX_SIG) {
		errno = EINVAL;
		return -1;
	}
	if (program_sigaction(sig, NULL, &act) < 0)
		return -1;
	if (flag) {
		atomic_fetch_or_explicit(&interrupting, 1ull << (sig - 1), memory_order_relaxed);
		act.sa_flags &= ~SA_RESTART;
	} else {
		atomic_fetch_and_explicit(&interrupting, ~(1ull << (sig - 1)),
					  memory_order_relaxed);
		act.sa_flags |= SA_RESTART;
	}
	return program_sigaction(sig, &act, NULL);
}

TALLY_EXPORT int sigignore(int sig)
{
	return set_simple(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}

/* System V sigset(): SIG_HOLD blocks; anything else installs and unblocks. */
TALLY_EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
	sigset_t set, old;
	struct sigaction cur;
	sighandler_t prev;

	sigemptyset(&set);
	if (sig <= 0 || sig >= MAX_SIG || sigaddset(&set, sig) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
			return SIG_ERR;
		if (sigismember(&old, sig))
			return SIG_HOLD;
		return program_sigaction(sig, NULL, &cur) < 0 ? SIG_ERR : cur.sa_handler;
	}
	prev = set_simple(sig, disp, 0, false);
	if (prev == SIG_ERR || sigprocmask(SIG_UNBLOCK, &set, &old) < 0)
		return SIG_ERR;
	return sigismember(&old, sig) ? SIG_HOLD : prev;
}
