/* SPDX-License-Identifier: MIT */
/*
 * Reads of our own memory that cannot fault, for walking another thread's Python frames while
 * that thread runs (a frame chain read half-way through a call or return may point at memory
 * that was just unmapped: a CPython data-stack chunk is munmap'd when the thread returns out of
 * it).  The collector must never fault in someone else's process, and cannot install a SIGSEGV
 * handler there, so every pointer it follows is read through the kernel:
 *
 *   process_vm_readv(getpid(), ...)  one system call per read; a bad address gives a short count
 *                                    or EFAULT, never a signal.  Needs no privilege for one's own
 *                                    process (the ptrace check passes for the same thread group)
 *                                    and takes no lock of ours, so any thread may call it.
 *   write() into a pipe, read() back the fallback where a seccomp profile refuses
 *                                    process_vm_readv (EPERM, ENOSYS): write(2) returns EFAULT for
 *                                    unreadable source bytes; two calls, and one pipe shared
 *                                    under a lock, kept as tally's (keptfd.h): where the
 *                                    program closed an end or took its number, a new pipe is
 *                                    made, and the program's file is never written.
 *
 * A read that straddles readable and unreadable pages is a failure either way.
 */
#include "saferead.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "keptfd.h"
#include "libc.h"

enum { HOW_UNKNOWN, HOW_VM, HOW_PIPE };

static _Atomic int how = HOW_UNKNOWN;
static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally_kept probe[2] = {{-1, 0, 0}, {-1, 0, 0}}; /* under pipe_lock */

/* The probe pipe, made anew when there is none or the program took an end of it. */
static bool probe_ready(void)
{
	int fds[2];

	if (tally_kept_ours(&probe[0]) && tally_kept_ours(&probe[1]))
		return true;
	tally_kept_close(&probe[0]);
	tally_kept_close(&probe[1]);
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return false;
	if ((tally_kept_take(&probe[0], fds[0]) | tally_kept_take(&probe[1], fds[1])) < 0) {
		tally_kept_close(&probe[0]);
		tally_kept_close(&probe[1]);
		return false;
	}
	return true;
}

static ssize_t vm_read(const void *addr, void *out, size_t n)
{
	struct iovec local = {out, n}, remote = {(void *)(uintptr_t)addr, n};

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

static bool pipe_read(const void *addr, void *out, size_t n)
{
	bool ok = false;
	ssize_t w;

	libc_pthread_mutex_lock(&pipe_lock);
	if (n <= 4096 && probe_ready()) { /* a pipe takes at least a page without blocking */
		w = write(probe[1].fd, addr, n);
		if (w > 0)
			ok = libc_read(probe[0].fd, out, (size_t)w) == w && w == (ssize_t)n;
	}
	pthread_mutex_unlock(&pipe_lock);
	return ok;
}

/* The first read decides: process_vm_readv unless the kernel or a filter refuses it. */
static int choose(const void *addr, void *out, size_t n, bool *done)
{
	ssize_t r = vm_read(addr, out, n);

	if (r >= 0 || errno == EFAULT || errno == ESRCH) {
		atomic_store(&how, HOW_VM);
		*done = r == (ssize_t)n;
		return HOW_VM;
	}
	atomic_store(&how, HOW_PIPE);
	*done = pipe_read(addr, out, n);
	return HOW_PIPE;
}

bool tally_safe_read(const void *addr, void *out, size_t n)
{
	int h = atomic_load_explicit(&how, memory_order_relaxed);
	bool done = false;

	if (!addr || !n)
		return !n;
	if (h == HOW_VM)
		return vm_read(addr, out, n) == (ssize_t)n;
	if (h == HOW_PIPE)
		return pipe_read(addr, out, n);
	(void)choose(addr, out, n, &done);
	return done;
}

bool tally_safe_read2(const void *a, void *out_a, size_t na, const void *b, void *out_b, size_t nb)
{
	struct iovec local[2] = {{out_a, na}, {out_b, nb}};
	struct iovec remote[2] = {{(void *)(uintptr_t)a, na}, {(void *)(uintptr_t)b, nb}};

	if (!a || !b)
		return false;
	if (atomic_load_explicit(&how, memory_order_relaxed) != HOW_VM)
		return tally_safe_read(a, out_a, na) && tally_safe_read(b, out_b, nb);
	return process_vm_readv(getpid(), local, 2, remote, 2, 0) == (ssize_t)(na + nb);
}

bool tally_safe_ptr(const void *base, long off, const void **out)
{
	return base && tally_safe_read((const char *)base + off, out, sizeof(*out));
}

const char *tally_safe_read_how(void)
{
	return atomic_load(&how) == HOW_PIPE ? "pipe" : "process_vm_readv";
}
