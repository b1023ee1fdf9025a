/* SPDX-License-Identifier: MIT */
/*
 * fakehost MODE [ARG]: a program whose host activity is known by construction, for the host
 * sampling tests (test-sampling.sh).  It prints what it did (from its own clocks and counters,
 * never from tally) on stdout, one "key value" per line.  Modes:
 *
 *   burn MS         burn_cpu() runs on the main thread for MS ms of its CPU time; prints the
 *                   thread's CPU time; with FAKEHOST_CUDA=1 it first loads the collector as the
 *                   driver does and launches through the stand-in CUPTI (CUDA joins a session
 *                   that began at load)
 *   gap MS          launches, then sleeps MS ms in sleep_gap(), then launches again (CUDA as
 *                   above): the idle stretch and the call that made it
 *   mutex MS        a second thread holds a mutex for MS ms while the main thread locks it;
 *                   prints the mutex's address and the time the main thread waited
 *   pipe N          the EINTR probe: a reader thread read()s a pipe N times without retrying
 *                   on EINTR, burning CPU between reads so that a CPU-time timer fires around
 *                   them; a writer feeds it.  Prints reads, bytes and eintr
 *   signals         the program's own handler for SIGUSR1 (installed before and checked after
 *                   sampling began), its mask, and every real-time signal's action as the
 *                   program sees it (sigaction): prints what it found
 *   fork            a fork child burns CPU and exits 7; an exec'd child (this program, mode
 *                   exit 5) exits 5; prints both statuses
 *   tallylock N     four threads launch N kernels each, one at a time from two call sites in
 *                   turn, through the stand-in CUPTI (CUDA as above), so that tally takes its
 *                   own locks (the stack table's, the buffer pool's) on the program's threads
 *                   at once; prints the one mutex the program (its CUPTI) locks: "mutex ADDRESS"
 *   exit CODE       exits with CODE after printing "hello"
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The function native samples of mode burn must land in. */
__attribute__((noinline)) static double burn_cpu(uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	volatile double x = 0;
	unsigned i;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (i = 0; i < 20000; i++)
			x += i * 0.5;
	return x;
}

/* The function the idle gap of mode gap is spent in. */
__attribute__((noinline)) static void sleep_gap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void (*launch)(unsigned n);

/* As the driver does at cuInit: load the collector, call its entry point, find the CUPTI. */
static void cuda_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (!init || init() != 1) {
		fprintf(stderr, "fakehost: no injection\n");
		exit(3);
	}
	*(void **)&launch = dlsym(RTLD_DEFAULT, "fakecupti_launch");
	if (!launch) {
		fprintf(stderr, "fakehost: the collector did not load the stand-in CUPTI\n");
		exit(3);
	}
}

static int mode_burn(long ms)
{
	uint64_t c0, m0;

	if (getenv("FAKEHOST_CUDA")) {
		cuda_init();
		launch(10);
		printf("launched 10\n");
	}
	m0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	(void)burn_cpu((uint64_t)ms * 1000000ull);
	printf("cpu_ns %llu\n", (unsigned long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0));
	printf("burn_monotonic_ns %llu %llu\n", (unsigned long long)m0,
	       (unsigned long long)clock_ns(CLOCK_MONOTONIC));
	return 0;
}

static int mode_gap(long ms)
{
	uint64_t t0, t1;

	cuda_init();
	launch(5);
	t0 = clock_ns(CLOCK_REALTIME);
	sleep_gap(ms);
	t1 = clock_ns(CLOCK_REALTIME);
	launch(5);
	printf("gap_ns %llu\ngap_start_realtime %llu\n", (unsigned long long)(t1 - t0),
	       (unsigned long long)t0);
	return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready;

static void *holder(void *arg)
{
	long ms = *(long *)arg;

	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&ready);
	sleep_gap(ms);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static int mode_mutex(long ms)
{
	pthread_t t;
	uint64_t t0;

	pthread_barrier_init(&ready, NULL, 2);
	pthread_create(&t, NULL, holder, &ms);
	pthread_barrier_wait(&ready);
	t0 = clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&lock);
	printf("waited_ns %llu\nmutex %p\n", (unsigned long long)(clock_ns(CLOCK_MONOTONIC) - t0),
	       (void *)&lock);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	return 0;
}

/* Two call sites, taken in turn: each launch's stack differs from the thread's last one, so
 * --native-stacks interns it under the stack table's lock (tally's) every time. */
__attribute__((noinline)) static void launch_here(void)
{
	launch(1);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

__attribute__((noinline)) static void launch_there(void)
{
	launch(1);
	__asm__ volatile("" ::: "memory");
}

static void *launcher(void *arg)
{
	long i, n = *(long *)arg;

	for (i = 0; i < n; i++)
		(i & 1 ? launch_here : launch_there)();
	return NULL;
}

static int mode_tallylock(long n)
{
	pthread_mutex_t *(*cupti_lock)(void);
	pthread_t t[4];
	unsigned i;

	cuda_init();
	*(void **)&cupti_lock = dlsym(RTLD_DEFAULT, "fakecupti_lock_address");
	if (!cupti_lock)
		return 3;
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, launcher, &n);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("launched %ld\nmutex %p\n", 4 * n, (void *)cupti_lock());
	return 0;
}

struct pipe_probe {
	int fd[2];
	long n;
	long reads, eintr, bytes;
};

static void *reader(void *arg)
{
	struct pipe_probe *p = arg;
	char buf[1];
	long i;

	for (i = 0; i < p->n; i++) {
		ssize_t r;

		(void)burn_cpu(200000);	    /* 0.2 ms of CPU: the timer fires around the reads */
		r = read(p->fd[0], buf, 1); /* a byte: n reads need n bytes; no retry on EINTR */
		if (r < 0 && errno == EINTR)
			p->eintr++;
		else if (r > 0)
			p->bytes += r, p->reads++;
	}
	return NULL;
}

static int mode_pipe(long n)
{
	struct pipe_probe p = {.n = n};
	pthread_t t;
	long i;

	if (pipe(p.fd) < 0)
		return 1;
	pthread_create(&t, NULL, reader, &p);
	for (i = 0; i < n + 100; i++) { /* a byte at a time; extra so no read waits forever */
		struct timespec ts = {0, 300000};

		if (write(p.fd[1], "x", 1) != 1)
			break;
		nanosleep(&ts, NULL);
	}
	pthread_join(t, NULL);
	printf("reads %ld\nbytes %ld\neintr %ld\n", p.reads, p.bytes, p.eintr);
	return 0;
}

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static int mode_signals(void)
{
	struct sigaction sa, got;
	sigset_t mask;
	int sig, dfl = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	(void)burn_cpu(300000000); /* let the sampler run a while */
	raise(SIGUSR1);
	sigaction(SIGUSR1, NULL, &got);
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	for (sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction a;

		sigaction(sig, NULL, &a);
		dfl += a.sa_handler == SIG_DFL;
	}
	printf("usr1_calls %d\nusr1_handler %s\nusr2_blocked %d\nrt_default %d of %d\n", (int)usr1,
	       got.sa_handler == on_usr1 ? "ours" : "changed", sigismember(&mask, SIGUSR2), dfl,
	       SIGRTMAX - SIGRTMIN + 1);
	return 0;
}

static int mode_fork(const char *self)
{
	int st1 = 0, st2 = 0;
	pid_t a = fork(), b;

	if (a == 0) {
		(void)burn_cpu(100000000);
		_exit(7);
	}
	b = fork();
	if (b == 0) {
		execl(self, self, "exit", "5", (char *)NULL);
		_exit(99);
	}
	waitpid(a, &st1, 0);
	waitpid(b, &st2, 0);
	printf("fork_status %d\nexec_status %d\n", WIFEXITED(st1) ? WEXITSTATUS(st1) : -1,
	       WIFEXITED(st2) ? WEXITSTATUS(st2) : -1);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long arg = argc > 2 ? atol(argv[2]) : 0;
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "burn") == 0)
		rc = mode_burn(arg);
	else if (strcmp(mode, "gap") == 0)
		rc = mode_gap(arg);
	else if (strcmp(mode, "mutex") == 0)
		rc = mode_mutex(arg);
	else if (strcmp(mode, "tallylock") == 0)
		rc = mode_tallylock(arg);
	else if (strcmp(mode, "pipe") == 0)
		rc = mode_pipe(arg);
	else if (strcmp(mode, "signals") == 0)
		rc = mode_signals();
	else if (strcmp(mode, "fork") == 0)
		rc = mode_fork(argv[0]);
	else if (strcmp(mode, "exit") == 0) {
		printf("hello\n");
		rc = (int)arg;
	} else
		fprintf(stderr,
			"usage: fakehost burn|gap|mutex|tallylock|pipe|signals|fork|exit ARG\n");
	return rc;
}
