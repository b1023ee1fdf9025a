/* SPDX-License-Identifier: MIT */
/*
 * fakeapp MODE N: a "CUDA program" for the exit-path tests.  It does what the driver does at
 * cuInit (dlopen CUDA_INJECTION64_PATH, call InitializeInjection), launches N fake kernels
 * through the stand-in CUPTI, and leaves by MODE (the table at the end says what each does).
 *
 * It prints "launched K pid P" lines on stdout as it goes, so the test knows how many launches
 * each process made without trusting tally.  Modes that wait for a signal from outside write
 * their pid to $FAKEAPP_READY (atomically, by rename) once they are ready for it.
 * FAKEAPP_NO_CUDA=1 runs the same program untraced (no injection), for comparing exit statuses.
 * Mode forever launches N every 100 ms until a signal ends it (a job past its time limit).
 * With FAKEAPP_SAY_CUPTI=1 it prints "cupti PATH", the CUPTI its launches went through;
 * FAKEAPP_OWN_CUPTI=PATH loads a CUPTI before CUDA starts (as PyTorch brings its own);
 * FAKEAPP_LATE_CUPTI=NAME loads one by name after, and says whether it got the same copy.
 * FAKEAPP_DRIVER=1 first loads libcuda.so.1 by name with RTLD_LOCAL, as libcudart and PyTorch
 * load the driver (with tests/support/fake-cuda.c's stand-in on LD_LIBRARY_PATH).
 * FAKE_CUDA_DEBUGGER=1 initialises that driver and never calls the injection, as CUDA does in
 * a program cuda-gdb runs; its launches then go untraced (with FAKEAPP_INJECT_TOO=1 it calls the
 * injection after all, as CUDA does outside a debugger).
 * FAKEAPP_FORK_IN_CUINIT=before|after forks, inside "cuInit", before or after the injection's
 * InitializeInjection, a child that never uses CUDA and outlives the program, as
 * libcudadebugger's debug agent under cuda-gdb: it prints "agent pid P", blocks in read() until
 * the program has ended, lingers FAKEAPP_AGENT_LINGER_MS (1000) more, and exits.  With "after"
 * and FAKEAPP_WAIT_CLAIM, it forks once the GPU-metrics sampler has claimed the device.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

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

/* With FAKEAPP_WAIT_CLAIM=FILE (a GPU-metrics lock file), wait until the file has been written:
 * each case has a directory of its own, so the claim is this process's.  Its contents are not
 * read here: closing a descriptor of the file would drop the claim's lock (a POSIX lock). */
static void wait_claim(void)
{
	const char *path = getenv("FAKEAPP_WAIT_CLAIM");
	struct stat st;
	int i;

	for (i = 0; path && i < 500 && (stat(path, &st) != 0 || st.st_size == 0); i++)
		sleep_ms(10);
}

/* The debug agent: blocks until the program has ended (the pipe's other end closes with it),
 * lingers, and exits, never touching CUDA. */
static void agent(int from_parent)
{
	long linger =
	    getenv("FAKEAPP_AGENT_LINGER_MS") ? atol(getenv("FAKEAPP_AGENT_LINGER_MS")) : 1000;
	char c;

	printf("agent pid %d\n", (int)getpid());
	fflush(stdout);
	while (read(from_parent, &c, 1) != 0)
		;
	sleep_ms(linger);
	exit(0);
}

/* A fork inside cuInit, as libcudadebugger does: the child is the agent, the parent goes on. */
static void fork_agent(const char *when)
{
	const char *want = getenv("FAKEAPP_FORK_IN_CUINIT");
	int fds[2];
	pid_t pid;

	if (!want || strcmp(want, when) != 0)
		return;
	if (strcmp(when, "after") == 0)
		wait_claim();
	if (pipe(fds) < 0 || (pid = fork()) < 0) {
		perror("fakeapp: agent");
		exit(3);
	}
	if (pid == 0) {
		close(fds[1]);
		agent(fds[0]);
	}
	close(fds[0]); /* fds[1] stays open until this process ends */
}

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH"), *own = getenv("FAKEAPP_OWN_CUPTI");

	if (getenv("FAKEAPP_DRIVER") && !dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "fakeapp: %s\n", dlerror());
		exit(3);
	}
	if (getenv("FAKEAPP_NO_CUDA")) {
		launch = untraced_launch;
		return;
	}
	if (getenv(
		"FAKE_CUDA_DEBUGGER")) { /* as under cuda-gdb: CUDA starts, the injection never */
		void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		int (*init)(unsigned) = drv ? (int (*)(unsigned))dlsym(drv, "cuInit") : NULL;

		if (!init || init(0) != 0) {
			fprintf(stderr, "fakeapp: no driver to initialise\n");
			exit(3);
		}
		if (!getenv("FAKEAPP_INJECT_TOO")) {
			launch = untraced_launch;
			return;
		}
	}
	if (own && !dlopen(own, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "fakeapp: %s\n", dlerror());
		exit(3);
	}
	fork_agent("before");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (!inj && getenv("FAKEAPP_UNTRACED_OK")) {
		launch = untraced_launch; /* run with no tool at all (tally control's baseline) */
		return;
	}
	if (!init || init() != 1) {
		fprintf(stderr, "fakeapp: no injection (%s)\n", inj ? dlerror() : "unset");
		exit(3);
	}
	fork_agent("after");
	launch = (void (*)(unsigned))dlsym(RTLD_DEFAULT, "fakecupti_launch");
	if (!launch && getenv("FAKEAPP_UNTRACED_OK")) {
		launch = untraced_launch; /* a process tally leaves alone (--ranks) */
		return;
	}
	if (!launch) {
		fprintf(stderr, "fakeapp: the collector did not load the stand-in CUPTI\n");
		exit(3);
	}
}

/* Which CUPTI the launches go through, and whether one loaded later by name is the same. */
static void say_cupti(void)
{
	const char *late = getenv("FAKEAPP_LATE_CUPTI");
	Dl_info info;
	void *h;

	if (getenv("FAKEAPP_SAY_CUPTI") && launch != untraced_launch &&
	    dladdr((void *)launch, &info) && info.dli_fname)
		printf("cupti %s\n", info.dli_fname);
	if (late) {
		h = dlopen(late, RTLD_NOW);
		printf("late cupti %s\n",
		       h && dlsym(h, "fakecupti_launch") == (void *)launch ? "same" : "other");
	}
	fflush(stdout);
}

static void launched(unsigned n)
{
	launch(n);
	printf("launched %u pid %d\n", n, (int)getpid());
	fflush(stdout);
}

/* ---- NVTX, through the loader's protocol (what nvtx3's header does at the first call) ---- */

static NvtxFunctionPointer core_slot[NVTX_CBID_CORE_SIZE], core2_slot[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *core_table[NVTX_CBID_CORE_SIZE], *core2_table[NVTX_CBID_CORE2_SIZE];

static int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned *size)
{
	unsigned i;

	if (m == NVTX_CB_MODULE_CORE) {
		for (i = 0; i < NVTX_CBID_CORE_SIZE; i++)
			core_table[i] = &core_slot[i];
		*out = core_table;
		*size = NVTX_CBID_CORE_SIZE;
		return 1;
	}
	if (m == NVTX_CB_MODULE_CORE2) {
		for (i = 0; i < NVTX_CBID_CORE2_SIZE; i++)
			core2_table[i] = &core2_slot[i];
		*out = core2_table;
		*size = NVTX_CBID_CORE2_SIZE;
		return 1;
	}
	return 0;
}

static const NvtxExportTableCallbacks callbacks = {sizeof(callbacks), get_module};

static const void *NVTX_API get_export_table(uint32_t id)
{
	return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL;
}

/* The NVTX loader's part: hand the injection our tables, as nvtx3 does at the first call. */
static void nvtx_init(void)
{
	const char *inj = getenv("NVTX_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(NvtxGetExportTableFunc_t) =
	    h ? (int (*)(NvtxGetExportTableFunc_t))dlsym(h, "InitializeInjectionNvtx2") : NULL;

	if (core_slot[NVTX_CBID_CORE_RangePushA])
		return;
	if (!init || init(get_export_table) != 1 || !core_slot[NVTX_CBID_CORE_RangePushA]) {
		fprintf(stderr, "fakeapp: NVTX injection refused\n");
		exit(4);
	}
}

/* n times: push "step", push "forward", pop, pop; one mark; one start/end range. */
static void nvtx_ranges(unsigned n)
{
	int (*push)(const char *);
	int (*pop)(void);
	unsigned i;

	nvtx_init();
	push = (int (*)(const char *))core_slot[NVTX_CBID_CORE_RangePushA];
	pop = (int (*)(void))core_slot[NVTX_CBID_CORE_RangePop];
	for (i = 0; i < n; i++) {
		push("step");
		push("forward \"quoted\"");
		pop();
		pop();
	}
	((void (*)(const char *))core_slot[NVTX_CBID_CORE_MarkA])("checkpoint");
	((void (*)(nvtxRangeId_t))core_slot[NVTX_CBID_CORE_RangeEnd])(
	    ((nvtxRangeId_t(*)(const char *))core_slot[NVTX_CBID_CORE_RangeStartA])("load"));
	printf("nvtx %u ranges 1 mark 1 startend\n", 2 * n);
}

static volatile sig_atomic_t handled;
static volatile uintptr_t bad_address = 8; /* unmapped: the segv mode writes through it */
static const char *self_exe;
static unsigned count;

static void on_int(int sig)
{
	(void)sig;
	handled = 1;
}

/* Tell the test we are ready for its signal: our pid in $FAKEAPP_READY, whole or not at all. */
static void ready(void)
{
	const char *path = getenv("FAKEAPP_READY");
	char tmp[4096], pid[32];
	int fd, len;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, pid, (size_t)len) != len || close(fd) < 0 ||
	    rename(tmp, path) < 0) {
		fprintf(stderr, "fakeapp: cannot write %s: %s\n", path, strerror(errno));
		exit(5);
	}
}

static void wait_forever(void)
{
	for (;;)
		pause();
}

/* Wait until the test creates $FAKEAPP_GO (polling: the test may be slow under load). */
static void wait_for_go(void)
{
	const char *go = getenv("FAKEAPP_GO");

	while (go && access(go, F_OK) != 0)
		sleep_ms(20);
}

static void set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static int mode_return(void)
{
	return 0;
}

static int mode__exit(void)
{
	_exit(0);
}

/* exit() at once, as a short program does: GPU metrics may still be being set up. */
static int mode_exit_now(void)
{
	exit(0);
}

static int mode_paced(void)
{
	/* n more launches spread over 1.5 s, for the collection-window tests */
	for (unsigned i = 0; i < 30; i++) {
		launched(count / 30);
		sleep_ms(50);
	}
	return 0;
}

/*
 * `count` more every 100 ms until a signal ends the program.  The signals that end a job are
 * held while a batch is launched and printed, so every "launched" line is exactly what reached
 * CUPTI when the signal lands.
 */
static int mode_forever(void)
{
	static const int held[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(&set, held[i]);
	for (;;) {
		sleep_ms(100);
		sigprocmask(SIG_BLOCK, &set, NULL);
		launched(count);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
	}
	return 0; /* not reached: a signal ends the program */
}

static int mode_other_client(void)
{
	/* A second CUPTI client (as torch.profiler's Kineto) tries to take the buffers. */
	int (*reg)(void *, void *) =
	    (int (*)(void *, void *))dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");

	printf("register returned %d\n", reg ? reg(NULL, NULL) : -1);
	launched(count);
	return 0;
}

/* As a program busy in its main loop when Slurm's SIGTERM comes: it goes on until the
 * signal's action ends it. */
static int raise_and_wait(int sig)
{
	raise(sig);
	wait_forever();
	return 0;
}

static int mode_sigterm(void)
{
	return raise_and_wait(SIGTERM);
}

/* SIGTERM after FAKEAPP_PHASE_MS of running, from a thread that would go on launching: what it
 * prints after the raise is what the program did past a signal that, untraced, ended it there. */
static int mode_term_late(void)
{
	long ms = getenv("FAKEAPP_PHASE_MS") ? atol(getenv("FAKEAPP_PHASE_MS")) : 300;
	unsigned i;

	sleep_ms(ms);
	raise(SIGTERM);
	for (i = 0; i < 50; i++) {
		printf("ran on after the signal\n");
		launched(count);
		sleep_ms(10);
	}
	return 0;
}

static int mode_sigint(void)
{
	return raise_and_wait(SIGINT);
}

static int mode_sighup(void)
{
	return raise_and_wait(SIGHUP);
}

static int mode_handled_int(void)
{
	raise(SIGINT);
	launched(count); /* the program goes on after its handler: so must the recording */
	return handled ? 0 : 5;
}

static int mode_sigkill(void)
{
	sleep_ms(1500);	 /* a periodic flush (TALLY_SLICE_MS=500) has run */
	launched(count); /* these are still in the pipeline when the kill comes */
	raise(SIGKILL);
	return 0;
}

static int mode_segv(void)
{
	*(volatile int *)bad_address = 1;
	return 6;
}

static int mode_abort(void)
{
	abort();
}

/* Ready for a signal from outside (the test's kill), with no handler of its own. */
static int mode_wait(void)
{
	ready();
	wait_forever();
	return 0;
}

/* Its own SIGINT handler, installed after CUDA started (so through tally's sigaction): each
 * ^C is counted, and the program goes on and ends normally. */
static int mode_own_handler(void)
{
	set_handler(SIGINT, on_int);
	ready();
	while (!handled)
		pause();
	launched(count);
	return 0;
}

/* What Python does at the end of an uncaught KeyboardInterrupt: handle SIGINT, then reset it
 * to SIG_DFL and kill itself with it.  Untraced, the kill ends it (status 130); 99 says the
 * kill did not. */
static int mode_dfl_raise(void)
{
	set_handler(SIGINT, on_int);
	ready();
	while (!handled)
		pause();
	signal(SIGINT, SIG_DFL);
	kill(getpid(), SIGINT);
	return 99;
}

/* Each stop signal counted as it reaches the program's handler: tally's forwarding must add
 * none to what the program gets untraced. */
static volatile sig_atomic_t stops_int, stops_term, stops_hup;

static void count_stop(int sig)
{
	if (sig == SIGINT)
		stops_int++;
	else if (sig == SIGTERM)
		stops_term++;
	else
		stops_hup++;
}

/* Handlers for SIGINT, SIGTERM and SIGHUP (after CUDA started) that count; after the first stop,
 * 2.5 s more for any repeat, then "stopped INT=a TERM=b HUP=c", and a normal end. */
static int mode_count_stops(void)
{
	set_handler(SIGINT, count_stop);
	set_handler(SIGTERM, count_stop);
	set_handler(SIGHUP, count_stop);
	ready();
	while (!stops_int && !stops_term && !stops_hup)
		pause();
	sleep_ms(2500);
	printf("stopped INT=%d TERM=%d HUP=%d\n", (int)stops_int, (int)stops_term, (int)stops_hup);
	launched(count);
	return 0;
}

/* Ignores SIGTERM (after CUDA started): it must not die of one, and goes on when told to. */
static int mode_ignore_term(void)
{
	signal(SIGTERM, SIG_IGN);
	ready();
	wait_for_go();
	launched(count);
	return 0;
}

/* fork after the session started: the child does nothing, exits, _exits, execs, or records. */
static int fork_child(const char *how)
{
	if (strcmp(how, "exit") == 0)
		exit(7);
	if (strcmp(how, "_exit") == 0)
		_exit(9);
	if (strcmp(how, "exec") == 0) {
		char n[32];

		snprintf(n, sizeof(n), "%u", count / 2);
		execl(self_exe, "fakeapp", "return", n, (char *)NULL);
		_exit(126);
	}
	if (strcmp(how, "session") == 0) {
		cu_init(); /* loaded already: starts this child's own session */
		launched(count / 2);
	}
	return 0; /* "nothing": back from main */
}

static int fork_and(const char *how)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		return fork_child(how);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return 8;
	launched(count); /* the parent records on after the fork */
	printf("child status %d\n", status);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int mode_fork_nothing(void)
{
	return fork_and("nothing");
}

static int mode_fork_exit(void)
{
	return fork_and("exit");
}

static int mode_fork__exit(void)
{
	return fork_and("_exit");
}

static int mode_fork_exec(void)
{
	return fork_and("exec");
}

/* With FAKEAPP_WAIT_CLAIM, fork only once the parent holds the device (its GPU-metrics lock),
 * before its child starts a session of its own. */
static int mode_fork_session(void)
{
	wait_claim();
	return fork_and("session");
}

/* Another program (fakeapp without CUDA: a sanitizer build's libtally.so cannot be preloaded
 * into an uninstrumented /bin/true) */
static int mode_execl(void)
{
	execl(self_exe, "fakeapp", "none", (char *)NULL);
	return 126;
}

/* found on PATH, which the test sets */
static int mode_execlp(void)
{
	execlp("fakeapp", "fakeapp", "none", (char *)NULL);
	return 126;
}

/* The same pid, a new image, recorded again: its file must not meet the first one's. */
static int mode_exec_self(void)
{
	char n[32];

	snprintf(n, sizeof(n), "%u", count / 2);
	execl(self_exe, "fakeapp", "return", n, (char *)NULL);
	return 126;
}

static int mode_quick_exit(void)
{
	quick_exit(3);
}

/*
 * GPU metrics by construction: an NVTX range per phase, idle, busy (the stand-in CUPTI's
 * samples read busy values while fakecupti_pm_busy says so: fakecupti-pm.c), idle.  Each phase
 * lasts FAKEAPP_PHASE_MS (300).
 */
static int mode_metrics(void)
{
	static const char *const phases[] = {"idle-a", "busy", "idle-b"};
	void (*busy)(bool) = (void (*)(bool))dlsym(RTLD_DEFAULT, "fakecupti_pm_busy");
	long ms = getenv("FAKEAPP_PHASE_MS") ? atol(getenv("FAKEAPP_PHASE_MS")) : 300;
	unsigned i;

	if (!busy) {
		fprintf(stderr, "fakeapp: the stand-in CUPTI has no PM part\n");
		return 3;
	}
	nvtx_init();
	for (i = 0; i < 3; i++) {
		/* busy encloses its range: a delay between the calls leaves busy samples between
		 * ranges, never idle ones inside "busy" or busy ones inside an idle range */
		if (i == 1)
			busy(true);
		((int (*)(const char *))core_slot[NVTX_CBID_CORE_RangePushA])(phases[i]);
		if (i == 1)
			launched(count);
		sleep_ms(ms);
		((int (*)(void))core_slot[NVTX_CBID_CORE_RangePop])();
		if (i == 1)
			busy(false);
	}
	return 0;
}

static const struct mode {
	const char *name;
	int (*run)(void); /* after cu_init and the first `count` launches */
} modes[] = {
    {"exit", mode_return},
    {"return", mode_return},
    {"fulldisk", mode_return},
    {"nvtx", mode_return},
    {"_exit", mode__exit},
    {"exit-now", mode_exit_now},
    {"paced", mode_paced},
    {"forever", mode_forever},
    {"other-client", mode_other_client},
    {"sigterm", mode_sigterm},
    {"term-late", mode_term_late},
    {"sigint", mode_sigint},
    {"sighup", mode_sighup},
    {"handled-int", mode_handled_int},
    {"sigkill", mode_sigkill},
    {"segv", mode_segv},
    {"abort", mode_abort},
    {"wait", mode_wait},
    {"own-handler", mode_own_handler},
    {"dfl-raise", mode_dfl_raise},
    {"ignore-term", mode_ignore_term},
    {"count-stops", mode_count_stops},
    {"fork-nothing", mode_fork_nothing},
    {"fork-exit", mode_fork_exit},
    {"fork-_exit", mode_fork__exit},
    {"fork-exec", mode_fork_exec},
    {"fork-session", mode_fork_session},
    {"execl", mode_execl},
    {"execlp", mode_execlp},
    {"exec-self", mode_exec_self},
    {"quick_exit", mode_quick_exit},
    {"metrics", mode_metrics},
};

/* Before CUDA starts: the program's own SIGINT handler, a small "disk". */
static void before_cuda(const char *mode)
{
	if (strcmp(mode, "handled-int") == 0)
		signal(SIGINT, on_int);
	if (strcmp(mode, "fulldisk") == 0) {
		struct rlimit rl = {6144, 6144}; /* the "disk" takes 6 KiB: less than the trace */

		signal(SIGXFSZ, SIG_IGN); /* so writes fail with EFBIG instead of killing us */
		setrlimit(RLIMIT_FSIZE, &rl);
	}
}

/* The parent never starts CUDA; the child does, then leaves by _exit (as multiprocessing's
 * fork children leave by os._exit). */
static int fork_before_cuda(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		cu_init();
		launched(count / 2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	cu_init();
	launched(count);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	size_t i;

	count = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
	self_exe = "/proc/self/exe";
	before_cuda(mode);
	if (strcmp(mode, "none") == 0)
		return 0; /* what the exec modes exec: a program that never starts CUDA */
	if (strcmp(mode, "fork") == 0)
		return fork_before_cuda();
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(mode, modes[i].name) != 0)
			continue;
		cu_init();
		say_cupti();
		if (strcmp(mode, "nvtx") == 0)
			nvtx_ranges(count);
		launched(count);
		return modes[i].run();
	}
	fprintf(stderr, "fakeapp: unknown mode %s\n", mode);
	return 2;
}
