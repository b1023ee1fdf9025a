/* SPDX-License-Identifier: MIT */
/*
 * fakeapp MODE N: a "CUDA program" for the exit-path tests.  It does what the driver does at
 * cuInit (dlopen CUDA_INJECTION64_PATH, call InitializeInjection), launches N fake kernels
 * through the stand-in CUPTI, and leaves by MODE:
 *
 *   exit _exit sigterm sigint sighup sigkill segv abort hang fork fulldisk nvtx handled-int
 *   forever (launches N every 100 ms until a signal ends it, as a job past its time limit)
 *
 * It prints "launched K" lines on stdout as it goes, so the test knows how many launches each
 * process made without trusting tally; with FAKEAPP_SAY_CUPTI=1, "cupti PATH": the CUPTI its
 * launches went through.
 * FAKEAPP_OWN_CUPTI=PATH loads a CUPTI before CUDA starts (as PyTorch brings its own);
 * FAKEAPP_LATE_CUPTI=NAME loads one by name after, and says whether it got the same copy.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static void (*launch)(unsigned n);

static void untraced_launch(unsigned n)
{
	(void)n;
}

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH"), *own = getenv("FAKEAPP_OWN_CUPTI");
	void *h;
	int (*init)(void);

	if (!inj && getenv("FAKEAPP_UNTRACED_OK")) {
		launch = untraced_launch; /* run with no tool at all (tally control's baseline) */
		return;
	}
	if (own && !dlopen(own, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "fakeapp: %s\n", dlerror());
		exit(3);
	}
	h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	init = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init || init() != 1) {
		fprintf(stderr, "fakeapp: no injection (%s)\n", inj ? dlerror() : "unset");
		exit(3);
	}
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

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0)
		;
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

/* n times: push "step", push "forward", pop, pop; one mark; one start/end range. */
static void nvtx_ranges(unsigned n)
{
	const char *inj = getenv("NVTX_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(NvtxGetExportTableFunc_t) =
	    h ? (int (*)(NvtxGetExportTableFunc_t))dlsym(h, "InitializeInjectionNvtx2") : NULL;
	int (*push)(const char *);
	int (*pop)(void);
	unsigned i;

	if (!init || init(get_export_table) != 1 || !core_slot[NVTX_CBID_CORE_RangePushA]) {
		fprintf(stderr, "fakeapp: NVTX injection refused\n");
		exit(4);
	}
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

/*
 * Launches n every 100 ms until a signal ends the program.  The signals that end a job are held
 * while a batch is launched and printed, so every "launched" line is exactly what reached CUPTI
 * when the signal lands.
 */
static void forever(unsigned n)
{
	static const int held[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(&set, held[i]);
	for (;;) {
		sigprocmask(SIG_BLOCK, &set, NULL);
		launched(n);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		sleep_ms(100);
	}
}

static int handled;
static volatile uintptr_t bad_address = 8; /* unmapped: the segv mode writes through it */

static void on_int(int sig)
{
	(void)sig;
	handled = 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;

	if (strcmp(mode, "handled-int") == 0)
		signal(SIGINT,
		       on_int); /* the program's own handler, installed before CUDA starts */
	if (strcmp(mode, "fulldisk") == 0) {
		struct rlimit rl = {6144, 6144}; /* the "disk" takes 6 KiB: less than the trace */

		signal(SIGXFSZ, SIG_IGN); /* so writes fail with EFBIG instead of killing us */
		setrlimit(RLIMIT_FSIZE, &rl);
	}
	if (strcmp(mode, "fork") == 0) {
		/* The parent never starts CUDA; the child does, then leaves by _exit (as
		 * multiprocessing's fork children leave by os._exit). */
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			cu_init();
			launched(n / 2);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		cu_init();
		launched(n);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	cu_init();
	say_cupti();
	if (strcmp(mode, "forever") == 0)
		forever(n);
	if (strcmp(mode, "nvtx") == 0)
		nvtx_ranges(n);
	launched(n);
	if (strcmp(mode, "exit") == 0 || strcmp(mode, "fulldisk") == 0 ||
	    strcmp(mode, "hang") == 0 || strcmp(mode, "nvtx") == 0)
		return 0;
	if (strcmp(mode, "_exit") == 0)
		_exit(0);
	if (strcmp(mode, "paced") == 0) {
		/* n more launches spread over 1.5 s, for the collection-window tests */
		for (unsigned i = 0; i < 30; i++) {
			launched(n / 30);
			sleep_ms(50);
		}
		return 0;
	}
	if (strcmp(mode, "other-client") == 0) {
		/* A second CUPTI client (as torch.profiler's Kineto) tries to take the buffers. */
		int (*reg)(void *, void *) =
		    (int (*)(void *, void *))dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");

		printf("register returned %d\n", reg ? reg(NULL, NULL) : -1);
		launched(n);
		return 0;
	}
	if (strcmp(mode, "sigterm") == 0 || strcmp(mode, "sigint") == 0 ||
	    strcmp(mode, "sighup") == 0) {
		/* As a program busy in its main loop when Slurm's SIGTERM comes: it goes on until
		 * the signal's action ends it. */
		raise(strcmp(mode, "sigterm") == 0  ? SIGTERM
		      : strcmp(mode, "sigint") == 0 ? SIGINT
						    : SIGHUP);
		for (;;)
			pause();
	}
	if (strcmp(mode, "handled-int") == 0) {
		raise(SIGINT);
		launched(n); /* the program goes on after its handler: so must the recording */
		return handled ? 0 : 5;
	}
	if (strcmp(mode, "sigkill") == 0) {
		sleep_ms(1500); /* a periodic flush (TALLY_SLICE_MS=500) has run */
		launched(n);	/* these are still in the pipeline when the kill comes */
		raise(SIGKILL);
	}
	if (strcmp(mode, "segv") == 0)
		*(volatile int *)bad_address = 1;
	if (strcmp(mode, "abort") == 0)
		abort();
	fprintf(stderr, "fakeapp: unknown mode %s\n", mode);
	return 2;
}
