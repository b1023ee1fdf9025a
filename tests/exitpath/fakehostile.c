/* SPDX-License-Identifier: MIT */
/*
 * fakehostile MODE ...: a "CUDA program" that does to its own process what programs legally do,
 * for test-ownprocess.sh.  It loads the collector as the driver does (CUDA_INJECTION64_PATH, then
 * InitializeInjection), launches through the stand-in CUPTI, and prints what it did from its own
 * counts ("launched N pid P" lines, as fakeapp), never from tally.
 *
 *   fds HOW N          N launches; then the descriptors it does not know go: HOW closerange
 *                      (close_range(3, ~0U)), loop (close 3..1023, a daemon's way), or takeover
 *                      (its own file dup2'ed onto every open descriptor from 3 up, then closed);
 *                      then it writes 11 bytes into a file of its own ($FAKEHOSTILE_FILE), which
 *                      takes the lowest free number, and launches 100 x N more in 20 batches 50 ms
 *                      apart (tally writes meanwhile); prints "own_file_bytes B" at the end.
 *                      With FAKEHOSTILE_RENAME=PATH it renames PATH to PATH.moved once the
 *                      descriptors went (a program tidying its output directory); with
 *                      FAKEHOSTILE_WAIT_CLAIM=FILE (a GPU-metrics lock file) it closes them only
 *                      once FILE has been written (the sampler holds the device)
 *   stacks THREADS N   THREADS threads on PTHREAD_STACK_MIN stacks, each launching N times and
 *                      burning 300 ms of CPU (the timer's signal lands there); prints
 *                      "stack_min S", the launches, and "stack_used B": the most bytes of a
 *                      thread's stack below its start routine's frame that were ever written
 *                      (painted first, looked at last), what a tool in the thread costs it
 *   exec HOW TARGET N  N launches, an exec that fails (HOW: execve execv execvp execvpe execl
 *                      execle execlp fexecve execveat, or posix_spawn, which is not an exec of
 *                      this process; TARGET: missing, noexec (ENOEXEC), noperm (EACCES), all in
 *                      $FAKEHOSTILE_DIR), then N more; prints "exec HOW failed errno E".  With
 *                      FAKEHOSTILE_KILL=1 it then waits 500 ms and dies of SIGKILL"
 *
 * FAKEHOSTILE_NO_CUDA=1 runs the same program without the injection (untraced).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void (*launch)(unsigned n);

static void untraced_launch(unsigned n)
{
	(void)n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0)
		;
}

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	void *h;
	int (*init)(void);

	if (getenv("FAKEHOSTILE_NO_CUDA")) {
		launch = untraced_launch;
		return;
	}
	h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	init = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init || init() != 1 ||
	    !(launch = (void (*)(unsigned))dlsym(RTLD_DEFAULT, "fakecupti_launch"))) {
		fprintf(stderr, "fakehostile: no injection\n");
		exit(3);
	}
}

static void launched(unsigned n)
{
	launch(n);
	printf("launched %u pid %d\n", n, (int)getpid());
	fflush(stdout);
}

/* ---- fds ------------------------------------------------------------------------------------ */

/* With FAKEHOSTILE_WAIT_CLAIM=FILE, wait (5 s at most) until FILE has been written: each case
 * has a directory of its own, so the claim is this process's. */
static void wait_claim(void)
{
	const char *path = getenv("FAKEHOSTILE_WAIT_CLAIM");
	struct stat st;
	int i;

	for (i = 0; path && i < 500 && (stat(path, &st) != 0 || st.st_size == 0); i++)
		sleep_ms(10);
}

static int fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > 65536)
		return 65536;
	return (int)rl.rlim_cur;
}

/* Every open descriptor from 3 up now names own (then own is no longer needed). */
static void take_over(int own)
{
	int fd, max = fd_limit(), n = 0;

	for (fd = 3; fd < max; fd++)
		if (fd != own && fcntl(fd, F_GETFD) >= 0 && dup2(own, fd) == fd)
			n++;
	printf("took over %d descriptors\n", n);
}

static void close_taken(int own)
{
	struct stat a, b;
	int fd, max = fd_limit();

	if (fstat(own, &a) < 0)
		return;
	for (fd = 3; fd < max; fd++)
		if (fd != own && fstat(fd, &b) == 0 && b.st_dev == a.st_dev && b.st_ino == a.st_ino)
			close(fd);
}

static int mode_fds(const char *how, unsigned n)
{
	const char *path = getenv("FAKEHOSTILE_FILE");
	struct stat st;
	int own, i;

	if (!path)
		return 2;
	launched(n);
	wait_claim();
	if (strcmp(how, "closerange") == 0) {
		if (syscall(SYS_close_range, 3u, ~0u, 0) < 0)
			for (i = 3; i < fd_limit(); i++)
				close(i);
	} else if (strcmp(how, "loop") == 0) {
		for (i = 3; i < 1024; i++)
			close(i);
	}
	if (getenv("FAKEHOSTILE_RENAME")) {
		char to[PATH_MAX];

		snprintf(to, sizeof(to), "%s.moved", getenv("FAKEHOSTILE_RENAME"));
		if (rename(getenv("FAKEHOSTILE_RENAME"), to) < 0)
			return 4;
	}
	own = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (own < 0 || write(own, "11 bytes!!\n", 11) != 11)
		return 4;
	printf("own file fd %d\n", own);
	if (strcmp(how, "takeover") == 0)
		take_over(own);
	for (i = 0; i < 20; i++) {
		launched(5 * n);
		sleep_ms(50);
	}
	if (strcmp(how, "takeover") == 0)
		close_taken(own);
	close(own);
	printf("own_file_bytes %lld\n", stat(path, &st) == 0 ? (long long)st.st_size : -1LL);
	return 0;
}

/* ---- stacks --------------------------------------------------------------------------------- */

static unsigned per_thread;
static pthread_mutex_t used_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t used_most;

#define PAINT 0x5a

/* The thread's stack from its lowest usable byte to just below here, painted (the caller's
 * frame is above); returns where the paint starts, and its length in *len. */
__attribute__((noinline)) static unsigned char *paint(size_t *len)
{
	unsigned char *lo = NULL, *here = (unsigned char *)__builtin_frame_address(0) - 512;
	pthread_attr_t a;
	size_t size = 0, guard = 0;
	void *addr = NULL;

	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return NULL;
	pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_getguardsize(&a, &guard);
	pthread_attr_destroy(&a);
	lo = (unsigned char *)addr + guard + 64;
	if (here <= lo)
		return NULL;
	*len = (size_t)(here - lo);
	for (volatile unsigned char *p = lo; p < here; p++)
		*p = PAINT;
	return lo;
}

/* The deepest byte written since paint(). */
static void measure(const unsigned char *lo, size_t len)
{
	size_t i;

	for (i = 0; i < len && lo[i] == PAINT; i++)
		;
	pthread_mutex_lock(&used_lock);
	if (len - i > used_most)
		used_most = len - i;
	pthread_mutex_unlock(&used_lock);
}

/* Small on purpose: the thread has PTHREAD_STACK_MIN, less the TLS of what is loaded. */
static void *small_thread(void *arg)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;
	size_t len = 0;
	unsigned char *lo = paint(&len);

	(void)arg;
	launch(per_thread);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (unsigned i = 0; i < 10000; i++)
			x += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
	if (lo)
		measure(lo, len);
	return NULL;
}

static int mode_stacks(unsigned threads, unsigned n)
{
	pthread_t t[32];
	pthread_attr_t attr;
	unsigned i, made = 0;
	int rc;

	if (threads > 32)
		threads = 32;
	per_thread = n;
	printf("stack_min %ld\n", (long)PTHREAD_STACK_MIN);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
	for (i = 0; i < threads; i++) {
		rc = pthread_create(&t[i], &attr, small_thread, NULL);
		if (rc) {
			printf("pthread_create: %s\n", strerror(rc));
			break;
		}
		made++;
	}
	for (i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	printf("launched %u pid %d\nstack_used %zu\n", made * n, (int)getpid(), used_most);
	return made == threads ? 0 : 5;
}

/* ---- exec that fails ------------------------------------------------------------------------ */

static int exec_how(const char *how, const char *path)
{
	char *const argv[] = {(char *)"fakehostile", NULL};
	pid_t pid;
	int fd, rc;

	if (strcmp(how, "execve") == 0)
		return execve(path, argv, environ);
	if (strcmp(how, "execv") == 0)
		return execv(path, argv);
	if (strcmp(how, "execvp") == 0)
		return execvp(path, argv);
	if (strcmp(how, "execvpe") == 0)
		return execvpe(path, argv, environ);
	if (strcmp(how, "execl") == 0)
		return execl(path, "fakehostile", (char *)NULL);
	if (strcmp(how, "execle") == 0)
		return execle(path, "fakehostile", (char *)NULL, environ);
	if (strcmp(how, "execlp") == 0)
		return execlp(path, "fakehostile", (char *)NULL);
	if (strcmp(how, "execveat") == 0)
		return execveat(AT_FDCWD, path, argv, environ, 0);
	if (strcmp(how, "fexecve") == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1; /* missing, or unreadable: nothing to exec */
		rc = fexecve(fd, argv, environ);
		close(fd);
		return rc;
	}
	if (strcmp(how, "posix_spawn") == 0) {
		rc = posix_spawn(&pid, path, NULL, NULL, argv, environ);
		if (rc == 0) {
			waitpid(pid, NULL, 0);
			errno = 0;
		} else {
			errno = rc;
		}
		return -1;
	}
	errno = EINVAL;
	return -1;
}

static int mode_exec(const char *how, const char *target, unsigned n)
{
	const char *dir = getenv("FAKEHOSTILE_DIR");
	char path[PATH_MAX];

	if (!dir)
		return 2;
	snprintf(path, sizeof(path), "%s/%s", dir, target);
	launched(n);
	(void)exec_how(how, path);
	printf("exec %s failed errno %d\n", how, errno);
	launched(n);
	if (getenv("FAKEHOSTILE_KILL")) {
		sleep_ms(500);
		raise(SIGKILL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "fds") == 0 && argc > 3) {
		cu_init();
		return mode_fds(argv[2], (unsigned)atoi(argv[3]));
	}
	if (strcmp(mode, "stacks") == 0 && argc > 3) {
		cu_init();
		return mode_stacks((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	}
	if (strcmp(mode, "exec") == 0 && argc > 4) {
		cu_init();
		return mode_exec(argv[2], argv[3], (unsigned)atoi(argv[4]));
	}
	fprintf(stderr, "usage: fakehostile fds HOW N | stacks THREADS N | exec HOW TARGET N\n");
	return 2;
}
