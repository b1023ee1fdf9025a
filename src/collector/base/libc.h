/* SPDX-License-Identifier: MIT */
/*
 * libc's own functions behind the ones libtally.so defines too.  Under LD_PRELOAD, a call of
 * read() or pthread_mutex_lock() anywhere in the process, libtally.so's own included, binds to
 * the first definition: ours (osrt/'s interposers, host/'s pthread_create).  tally's own calls
 * must never pass through them (a contended lock of tally's would be recorded as the program
 * blocking, a thread of tally's registered as the program's), so the collector calls these
 * instead: the next definition after libtally.so (libc's, or a sanitizer's), found with
 * dlsym(RTLD_NEXT) once at load and called through the saved pointer.  -Bsymbolic would do the
 * opposite (bind our calls to our own definitions), and the linker cannot tell our calls from
 * the program's any other way.  scripts/include-graph.py --objects fails on a file of
 * libtally.so that calls one of the names libtally.so exports.
 *
 * Each is async-signal-safe where its libc function is, once libc_init has run (at load, before
 * any thread or handler of ours); a call that comes earlier finds its function then.
 */
#ifndef TALLY_COLLECTOR_LIBC_H
#define TALLY_COLLECTOR_LIBC_H

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The fortified forms a program built with _FORTIFY_SOURCE calls (glibc declares them only
 * under fortification). */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *a,
		       socklen_t *alen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m,
		size_t fdslen);

/* A definition libtally.so exports (an entry point, or an interposer): every other is hidden. */
#define TALLY_EXPORT __attribute__((visibility("default")))

/* X(return type, name, parameters, arguments): every function libtally.so interposes that
 * tally itself calls or passes calls on to, but syscall (variadic: below). */
#define LIBC_FUNCTIONS(X)                                                                          \
	X(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))                                     \
	X(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t * m), (c, m))               \
	X(int, pthread_cond_timedwait,                                                             \
	  (pthread_cond_t * c, pthread_mutex_t * m, const struct timespec *t), (c, m, t))          \
	X(int, pthread_cond_clockwait,                                                             \
	  (pthread_cond_t * c, pthread_mutex_t * m, clockid_t clk, const struct timespec *t),      \
	  (c, m, clk, t))                                                                          \
	X(int, sem_wait, (sem_t * s), (s))                                                         \
	X(int, sem_timedwait, (sem_t * s, const struct timespec *t), (s, t))                       \
	X(int, sem_clockwait, (sem_t * s, clockid_t clk, const struct timespec *t), (s, clk, t))   \
	X(int, pthread_join, (pthread_t t, void **ret), (t, ret))                                  \
	X(int, pthread_create,                                                                     \
	  (pthread_t * t, const pthread_attr_t *a, void *(*fn)(void *), void *arg),                \
	  (t, a, fn, arg))                                                                         \
	X(int, poll, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout))              \
	X(int, ppoll,                                                                              \
	  (struct pollfd * fds, nfds_t n, const struct timespec *t, const sigset_t *m),            \
	  (fds, n, t, m))                                                                          \
	X(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t),                \
	  (n, r, w, e, t))                                                                         \
	X(int, pselect,                                                                            \
	  (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *m),   \
	  (n, r, w, e, t, m))                                                                      \
	X(int, epoll_wait, (int fd, struct epoll_event *ev, int max, int timeout),                 \
	  (fd, ev, max, timeout))                                                                  \
	X(int, epoll_pwait,                                                                        \
	  (int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *m),               \
	  (fd, ev, max, timeout, m))                                                               \
	X(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n))                              \
	X(ssize_t, recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags))            \
	X(ssize_t, recvfrom,                                                                       \
	  (int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *alen),           \
	  (fd, buf, n, flags, a, alen))                                                            \
	X(ssize_t, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags))             \
	X(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem))          \
	X(int, clock_nanosleep,                                                                    \
	  (clockid_t clk, int flags, const struct timespec *req, struct timespec *rem),            \
	  (clk, flags, req, rem))                                                                  \
	X(int, usleep, (useconds_t us), (us))                                                      \
	X(unsigned, sleep, (unsigned s), (s))                                                      \
	X(pid_t, waitpid, (pid_t pid, int *status, int options), (pid, status, options))           \
	X(pid_t, wait, (int *status), (status))                                                    \
	X(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen)) \
	X(ssize_t, __recv_chk, (int fd, void *buf, size_t n, size_t buflen, int flags),            \
	  (fd, buf, n, buflen, flags))                                                             \
	X(ssize_t, __recvfrom_chk,                                                                 \
	  (int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *a,              \
	   socklen_t *alen),                                                                       \
	  (fd, buf, n, buflen, flags, a, alen))                                                    \
	X(int, __poll_chk, (struct pollfd * fds, nfds_t n, int timeout, size_t fdslen),            \
	  (fds, n, timeout, fdslen))                                                               \
	X(int, __ppoll_chk,                                                                        \
	  (struct pollfd * fds, nfds_t n, const struct timespec *t, const sigset_t *m,             \
	   size_t fdslen),                                                                         \
	  (fds, n, t, m, fdslen))

/* libc_read(fd, buf, n) is libc's read(fd, buf, n), and so on down the list. */
#define LIBC_DECLARE(ret, name, params, args) ret libc_##name params;
LIBC_FUNCTIONS(LIBC_DECLARE)
#undef LIBC_DECLARE

/* syscall(2): the arguments are passed on as six longs, as libc's own syscall() takes them on
 * x86-64 and aarch64. */
long libc_syscall(long number, ...);

/* At load: find every function (outside any call of the program's). */
void libc_init(void);

#endif
