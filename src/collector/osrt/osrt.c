/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls, interposed (osrt.h).  libtally.so is in LD_PRELOAD, so the program's calls of
 * these functions (through its dynamic symbol table: calls the C library makes inside itself are
 * not seen) come here first, and go on to the next definition (libc's, or a sanitizer's) found
 * with dlsym(RTLD_NEXT) at load:
 *
 *   pthread_mutex_lock  pthread_cond_wait  pthread_cond_timedwait  pthread_cond_clockwait
 *   sem_wait  sem_timedwait  sem_clockwait  pthread_join  poll  ppoll  select  pselect
 *   epoll_wait  epoll_pwait  read  recv  recvfrom  recvmsg  nanosleep  clock_nanosleep  usleep
 *   sleep  waitpid  wait  syscall(SYS_futex, ...) (waits only)
 *   and the fortified __read_chk, __recv_chk, __recvfrom_chk, __poll_chk, __ppoll_chk
 *
 * The cost on a call that does not block is what matters (CUDA takes locks on every launch):
 *
 *   recording off      one relaxed load of a global flag, then the real call
 *   pthread_mutex_lock one relaxed read of the mutex's lock word: a free mutex goes straight to
 *                      the real lock with no clock read at all, and only a held one is timed
 *                      (the real lock does the locking either way, so every mutex type behaves
 *                      as it would; pthread_mutex_trylock first was measured slower: glibc's
 *                      trylock costs more than its lock)
 *   every other call   the flag, a thread-local check (tally's own threads are not recorded),
 *                      two vDSO clock reads around the call; a call shorter than the threshold
 *                      ends there
 *   a call kept        a slot in a lock-free ring (ring.h) that the sampler thread drains; a
 *                      full ring drops the call and counts it (osrt_dropped)
 *
 * Every interposer keeps errno as the real call left it.  Nothing here takes a lock or
 * allocates, so a signal handler of the program's may call these functions.
 */
#include "osrt.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "libc.h"
#include "ownthread.h"
#include "pipeline.h"
#include "ring.h"

static _Atomic bool on;
static uint64_t threshold;
static struct tally_ring ring;
static _Atomic bool ring_ready;

static uint64_t now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Recording, and not one of tally's own threads. */
static bool active(void)
{
	return atomic_load_explicit(&on, memory_order_relaxed) && !tally_own_thread();
}

/* The call is over: keep it if it lasted long enough.  errno is the caller's to restore. */
static void done(unsigned call, uint64_t t0, uint64_t object, int64_t ret, int err)
{
	uint64_t t1 = now();
	struct osrt_event *e;
	size_t pos;

	if (t1 - t0 < threshold || !atomic_load_explicit(&on, memory_order_relaxed))
		return;
	if (!atomic_load_explicit(&ring_ready, memory_order_acquire))
		return;
	e = tally_ring_claim(&ring, &pos);
	if (!e) {
		tally_pipeline_count(TALLY_C_OSRT_DROPPED, 1);
		return;
	}
	e->start = t0;
	e->end = t1;
	e->object = object;
	e->tid = tally_gettid();
	e->call = (uint16_t)call;
	e->err = (int16_t)(ret == -1 ? err : 0);
	e->ret = (int32_t)ret;
	tally_ring_publish(&ring, pos);
}

/* A timed call: the real one between two clock reads, its errno kept. */
#define TIMED(type, call_id, object, name, ...)                                                    \
	do {                                                                                       \
		uint64_t t0_;                                                                      \
		type r_;                                                                           \
		int e_;                                                                            \
		if (!active())                                                                     \
			return libc_##name(__VA_ARGS__);                                           \
		t0_ = now();                                                                       \
		r_ = libc_##name(__VA_ARGS__);                                                     \
		e_ = errno;                                                                        \
		done(call_id, t0_, (uint64_t)(object), (int64_t)r_, e_);                           \
		errno = e_;                                                                        \
		return r_;                                                                         \
	} while (0)

/* ---- locks and conditions ------------------------------------------------------------------- */

/* Is the mutex held right now?  glibc keeps its lock word first (__data.__lock: 0 free).  A
 * relaxed read, a hint only: a mutex taken between this read and the lock is waited for
 * untimed (the call is then not recorded), one let go meanwhile is timed and found short. */
static bool held(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 0;
}

TALLY_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	uint64_t t0;
	int r;

	if (!atomic_load_explicit(&on, memory_order_relaxed) || !held(m) || tally_own_thread())
		return libc_pthread_mutex_lock(m);
	t0 = now();
	r = libc_pthread_mutex_lock(m);
	done(TALLY_OSRT_PTHREAD_MUTEX_LOCK, t0, (uint64_t)(uintptr_t)m, r, 0);
	return r;
}

TALLY_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	TIMED(int, TALLY_OSRT_PTHREAD_COND_WAIT, (uintptr_t)c, pthread_cond_wait, c, m);
}

TALLY_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
					const struct timespec *t)
{
	TIMED(int, TALLY_OSRT_PTHREAD_COND_TIMEDWAIT, (uintptr_t)c, pthread_cond_timedwait, c, m,
	      t);
}

TALLY_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
					const struct timespec *t)
{
	TIMED(int, TALLY_OSRT_PTHREAD_COND_CLOCKWAIT, (uintptr_t)c, pthread_cond_clockwait, c, m,
	      clk, t);
}

TALLY_EXPORT int sem_wait(sem_t *s)
{
	TIMED(int, TALLY_OSRT_SEM_WAIT, (uintptr_t)s, sem_wait, s);
}

TALLY_EXPORT int sem_timedwait(sem_t *s, const struct timespec *t)
{
	TIMED(int, TALLY_OSRT_SEM_TIMEDWAIT, (uintptr_t)s, sem_timedwait, s, t);
}

TALLY_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *t)
{
	TIMED(int, TALLY_OSRT_SEM_CLOCKWAIT, (uintptr_t)s, sem_clockwait, s, clk, t);
}

TALLY_EXPORT int pthread_join(pthread_t t, void **ret)
{
	TIMED(int, TALLY_OSRT_PTHREAD_JOIN, t, pthread_join, t, ret);
}

/* ---- waiting for file descriptors ----------------------------------------------------------- */

TALLY_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	TIMED(int, TALLY_OSRT_POLL, 0, poll, fds, n, timeout);
}

TALLY_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m)
{
	TIMED(int, TALLY_OSRT_PPOLL, 0, ppoll, fds, n, t, m);
}

TALLY_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	TIMED(int, TALLY_OSRT_SELECT, 0, select, n, r, w, e, t);
}

TALLY_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
			 const sigset_t *m)
{
	TIMED(int, TALLY_OSRT_PSELECT, 0, pselect, n, r, w, e, t, m);
}

TALLY_EXPORT int epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
	TIMED(int, TALLY_OSRT_EPOLL_WAIT, fd, epoll_wait, fd, ev, max, timeout);
}

TALLY_EXPORT int epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout,
			     const sigset_t *m)
{
	TIMED(int, TALLY_OSRT_EPOLL_PWAIT, fd, epoll_pwait, fd, ev, max, timeout, m);
}

TALLY_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	TIMED(ssize_t, TALLY_OSRT_READ, fd, read, fd, buf, n);
}

TALLY_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	TIMED(ssize_t, TALLY_OSRT_RECV, fd, recv, fd, buf, n, flags);
}

TALLY_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
			      socklen_t *alen)
{
	TIMED(ssize_t, TALLY_OSRT_RECVFROM, fd, recvfrom, fd, buf, n, flags, a, alen);
}

TALLY_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	TIMED(ssize_t, TALLY_OSRT_RECVMSG, fd, recvmsg, fd, msg, flags);
}

/* The fortified forms, which a program built with _FORTIFY_SOURCE calls instead. */

TALLY_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	TIMED(ssize_t, TALLY_OSRT_READ, fd, __read_chk, fd, buf, n, buflen);
}

TALLY_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	TIMED(ssize_t, TALLY_OSRT_RECV, fd, __recv_chk, fd, buf, n, buflen, flags);
}

TALLY_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				    struct sockaddr *a, socklen_t *alen)
{
	TIMED(ssize_t, TALLY_OSRT_RECVFROM, fd, __recvfrom_chk, fd, buf, n, buflen, flags, a, alen);
}

TALLY_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	TIMED(int, TALLY_OSRT_POLL, 0, __poll_chk, fds, n, timeout, fdslen);
}

TALLY_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t,
			     const sigset_t *m, size_t fdslen)
{
	TIMED(int, TALLY_OSRT_PPOLL, 0, __ppoll_chk, fds, n, t, m, fdslen);
}

/* ---- sleeping and waiting for children ------------------------------------------------------ */

TALLY_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	TIMED(int, TALLY_OSRT_NANOSLEEP, 0, nanosleep, req, rem);
}

/* Returns an error number, not -1: a failure is not told by errno. */
TALLY_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
				 struct timespec *rem)
{
	TIMED(int, TALLY_OSRT_CLOCK_NANOSLEEP, 0, clock_nanosleep, clk, flags, req, rem);
}

TALLY_EXPORT int usleep(useconds_t us)
{
	TIMED(int, TALLY_OSRT_USLEEP, 0, usleep, us);
}

TALLY_EXPORT unsigned sleep(unsigned s)
{
	TIMED(unsigned, TALLY_OSRT_SLEEP, 0, sleep, s);
}

TALLY_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	TIMED(pid_t, TALLY_OSRT_WAITPID, pid, waitpid, pid, status, options);
}

TALLY_EXPORT pid_t wait(int *status)
{
	TIMED(pid_t, TALLY_OSRT_WAIT, 0, wait, status);
}

/* A futex operation that waits (the others wake, requeue or fail at once). */
static bool futex_waits(long op)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_LOCK_PI:
	case FUTEX_WAIT_REQUEUE_PI:
		return true;
	default:
		return false;
	}
}

/* syscall(2): every system call by number.  Only futex waits are timed; the arguments are passed
 * on as six longs, as the C library's own syscall() takes them on x86-64 and aarch64. */
TALLY_EXPORT long syscall(long number, ...)
{
	long a[6], r;
	uint64_t t0;
	va_list ap;
	int i, e;

	va_start(ap, number);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number != SYS_futex || !futex_waits(a[1]) || !active())
		return libc_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	t0 = now();
	r = libc_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	e = errno;
	done(TALLY_OSRT_FUTEX, t0, (uint64_t)a[0], r, e);
	errno = e;
	return r;
}

/* ---- the sampler's side --------------------------------------------------------------------- */

int tally_osrt_start(uint64_t threshold_ns, size_t slots)
{
	int rc;

	if (!atomic_load(&ring_ready)) {
		rc = tally_ring_init(&ring, slots, sizeof(struct osrt_event));
		if (rc < 0)
			return rc;
		atomic_store(&ring_ready, true);
	}
	threshold = threshold_ns;
	atomic_store_explicit(&on, true, memory_order_release);
	return 0;
}

void tally_osrt_stop(void)
{
	atomic_store_explicit(&on, false, memory_order_release);
}

size_t tally_osrt_drain(void (*fn)(void *ctx, const struct osrt_event *e), void *ctx)
{
	const struct osrt_event *e;
	size_t n = 0;

	if (!atomic_load(&ring_ready))
		return 0;
	while ((e = tally_ring_front(&ring))) {
		fn(ctx, e);
		tally_ring_pop(&ring);
		n++;
	}
	return n;
}

/* The child's copy of the ring may hold a slot another thread of the parent had claimed and not
 * yet published: a new session in the child gets a new ring (this is its only thread). */
void tally_osrt_after_fork_child(void)
{
	atomic_store_explicit(&on, false, memory_order_relaxed);
	if (atomic_load(&ring_ready))
		tally_ring_fini(&ring);
	atomic_store(&ring_ready, false);
}
