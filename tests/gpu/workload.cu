// SPDX-License-Identifier: MIT
// workload: a CUDA program with known counts, for the GPU tests and the overhead bench.
// Every count it prints is what it did, so tests compare tally's trace against the program,
// never against tally.  Options (all counts per host thread):
//   --kernels N          N launches of an empty kernel (runtime API; --driver: cuLaunchKernel)
//   --threads T          T host threads, each on its own stream
//   --memcpy K:BYTES     K host-to-device and K device-to-host copies of BYTES (pinned, async)
//   --memset K:BYTES     K cudaMemsetAsync of BYTES
//   --graph K:R          capture K kernels in a CUDA graph, replay it R times
//   --nvtx               an NVTX range around every 100 launches, and one mark
//   --nvtx-long          one range named "a" + 2500 x "é" (5001 bytes, over tally's 4000), one
//                        named "short"; prints the long name's length
//   --profiler-range     N/4 launches, cudaProfilerStart, N/2, cudaProfilerStop, N/4
//   --device D           cudaSetDevice(D)
//   --forever            launch batches of 1000 until killed, printing the running total
//   --stop-on-signal     with --forever: SIGTERM/SIGINT end the loop after the current batch;
//                        it prints "stopped_by SIG launched_total N" (every launch synchronized)
//                        and then dies of the signal (SIG_DFL, raise), as a graceful trainer does
//   --sleep-ms MS        sleep before exiting
//   --exit MODE          leave by: return (default), exit, _exit, abort
//   --spin K             every K-th launch is `spin` (a kernel that busy-waits SPIN_CYCLES GPU
//                        clock cycles) instead of `tiny`; the environment variable
//                        WORKLOAD_SPIN_SCALE (default 1) multiplies the cycles: one kernel made
//                        longer, for tally compare's tests
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../src/common/clock.h" // tally_toggled_off: which intervals tally recorded in

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "workload: %s: %s\n", #x, cudaGetErrorString(e_));         \
			exit(3);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void tiny(int *p)
{
	if (p && threadIdx.x == 0 && blockIdx.x == 0)
		atomicAdd(p, 1);
}

#define SPIN_CYCLES 20000

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

struct opts {
	long spin_every = 0;
	long long spin_cycles = SPIN_CYCLES;
	long kernels = 1000;
	int threads = 1;
	long memcpy_n = 0, memcpy_bytes = 0, memset_n = 0, memset_bytes = 0;
	long graph_k = 0, graph_r = 0;
	bool nvtx = false, driver = false, forever = false, profiler_range = false, nvtx_long = false;
	bool stop_on_signal = false;
	int device = 0;
	long sleep_ms = 0;
	const char *exit_mode = "return";
};

static opts O;
static CUfunction tiny_fn;

static double now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void launch(cudaStream_t s, int *counter)
{
	if (O.driver) {
		void *args[] = {&counter};
		if (cuLaunchKernel(tiny_fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, NULL) !=
		    CUDA_SUCCESS) {
			fprintf(stderr, "workload: cuLaunchKernel failed\n");
			exit(3);
		}
	} else {
		tiny<<<1, 32, 0, s>>>(counter);
	}
}

static long spins;

static void launch_nth(cudaStream_t s, int *counter, long i)
{
	if (O.spin_every && i % O.spin_every == O.spin_every - 1) {
		spin<<<1, 32, 0, s>>>(O.spin_cycles);
		__atomic_fetch_add(&spins, 1, __ATOMIC_RELAXED);
	} else {
		launch(s, counter);
	}
}

#define CHUNK  1000
#define CHUNKS 4096
static double chunk_s[CHUNKS]; /* each chunk of CHUNK launches' time, of the first thread's loop */
static double chunk_end[CHUNKS]; /* and when it ended (CLOCK_MONOTONIC s) */
static long nchunks;

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The loop's time as its fastest chunks make it: the 10th percentile of the chunks' times, scaled
 * to n launches.  A chunk that the machine slowed (another tenant, a migration) is left out; what
 * a tool adds to every launch is not.  0 with fewer than 10 chunks. */
static double chunk_p10_ns(long n)
{
	if (nchunks < 10)
		return 0;
	qsort(chunk_s, (size_t)nchunks, sizeof(chunk_s[0]), by_value);
	return chunk_s[nchunks / 10] * 1e9 * (double)n / CHUNK;
}

/* With TALLY_BENCH_TOGGLE_MS=P, tally records GPU metrics and host samples in some intervals of
 * P ms of CLOCK_MONOTONIC only (tally_toggled_off, tally's own): the median chunk of each interval, as "phase_ns
 * INDEX:NS:ON,...", leaving out the chunks of its first third (tally's threads catch up with the
 * switch) and those that straddle two.  bench/stats.sh compares each interval that is on with
 * the ones beside it that are off.  Called before the chunks are sorted. */
static void print_toggle_phases(void)
{
	const char *v = getenv("TALLY_BENCH_TOGGLE_MS");
	uint64_t period_ns = v ? strtoull(v, NULL, 10) * 1000000ull : 0; // as tally reads it
	double p = (double)period_ns / 1e9, in[CHUNK];
	long k = 0, n = 0, cur = -1;

	if (p <= 0 || nchunks < 1)
		return;
	printf("phase_ns ");
	for (long i = 0; i <= nchunks; i++) {
		long ph = -1;
		if (i < nchunks) {
			double start = chunk_end[i] - chunk_s[i];
			ph = (long)(start / p);
			if ((long)(chunk_end[i] / p) != ph || start - ph * p < p / 3)
				continue;
		}
		if (ph != cur && n >= 3) {
			qsort(in, (size_t)n, sizeof(in[0]), by_value);
			printf("%s%ld:%.0f:%d", k++ ? "," : "", cur, in[n / 2] * 1e9,
			       !tally_toggled_off(period_ns, ((uint64_t)cur * 2 + 1) * period_ns / 2));
		}
		if (ph != cur)
			n = 0, cur = ph;
		if (n < CHUNK)
			in[n++] = chunk_s[i];
	}
	printf("\n");
}

/* Where the loop's time went beyond its typical chunk (after chunk_p10_ns sorted them): the
 * median and slowest chunk, and "excess", the sum over the chunks of their time above the
 * median: a cost that comes in bursts shows there, one on every launch in the median. */
static void print_chunk_spread(void)
{
	double med, excess = 0;

	if (nchunks < 10)
		return;
	med = chunk_s[nchunks / 2];
	for (long i = nchunks / 2; i < nchunks; i++)
		excess += chunk_s[i] - med;
	printf("chunks %ld chunk_p50_ns %.0f chunk_p99_ns %.0f chunk_max_ns %.0f chunk_excess_ns %.0f\n",
	       nchunks, med * 1e9, chunk_s[nchunks * 99 / 100] * 1e9, chunk_s[nchunks - 1] * 1e9,
	       excess * 1e9);
}

/* The calling thread's CPU time and context switches so far. */
static void thread_usage(struct rusage *u)
{
	if (getrusage(RUSAGE_THREAD, u) != 0)
		memset(u, 0, sizeof(*u));
}

static double cpu_s(const struct rusage *u)
{
	return (double)u->ru_utime.tv_sec + (double)u->ru_stime.tv_sec +
	       ((double)u->ru_utime.tv_usec + (double)u->ru_stime.tv_usec) * 1e-6;
}

static void launches(cudaStream_t s, int *counter, long n, long *nvtx_ranges)
{
	double t = now_s(), u;

	for (long i = 0; i < n; i++) {
		if (i % CHUNK == CHUNK - 1 && nchunks < CHUNKS && O.threads == 1) {
			u = now_s();
			chunk_end[nchunks] = u;
			chunk_s[nchunks++] = u - t;
			t = u;
		}
		if (O.nvtx && i % 100 == 0) {
			nvtxRangePushA("batch");
			(*nvtx_ranges)++;
		}
		launch_nth(s, counter, i);
		if (O.nvtx && (i % 100 == 99 || i == n - 1))
			nvtxRangePop();
	}
}

static void copies(cudaStream_t s)
{
	void *host, *dev;
	CHECK(cudaMallocHost(&host, O.memcpy_bytes ? O.memcpy_bytes : 1));
	CHECK(cudaMalloc(&dev, O.memcpy_bytes > O.memset_bytes ? O.memcpy_bytes : O.memset_bytes));
	for (long i = 0; i < O.memcpy_n; i++) {
		CHECK(cudaMemcpyAsync(dev, host, O.memcpy_bytes, cudaMemcpyHostToDevice, s));
		CHECK(cudaMemcpyAsync(host, dev, O.memcpy_bytes, cudaMemcpyDeviceToHost, s));
	}
	for (long i = 0; i < O.memset_n; i++)
		CHECK(cudaMemsetAsync(dev, 0, O.memset_bytes, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFreeHost(host));
	CHECK(cudaFree(dev));
}

static void graph(cudaStream_t s, int *counter)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	for (long i = 0; i < O.graph_k; i++)
		tiny<<<1, 32, 0, s>>>(counter);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&ge, g, 0));
	double t0 = now_s();
	for (long r = 0; r < O.graph_r; r++)
		CHECK(cudaGraphLaunch(ge, s));
	CHECK(cudaStreamSynchronize(s));
	double t1 = now_s();
	printf("graph_kernels %ld graph_launches %ld graph_loop_ns %.0f\n", O.graph_k * O.graph_r,
	       O.graph_r, (t1 - t0) * 1e9);
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaGraphDestroy(g));
}

static void *thread_main(void *arg)
{
	long nvtx_ranges = 0, *out = (long *)arg;
	cudaStream_t s;
	int *counter;

	CHECK(cudaSetDevice(O.device));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&counter, sizeof(int)));
	struct rusage u0, u1;
	thread_usage(&u0);
	double t0 = now_s();
	launches(s, counter, O.kernels, &nvtx_ranges);
	CHECK(cudaStreamSynchronize(s));
	double t1 = now_s();
	thread_usage(&u1);
	if (O.threads == 1)
		print_toggle_phases();
	printf("thread %ld launched %ld loop_ns %.0f chunk_p10_ns %.0f\n", (long)syscall(SYS_gettid),
	       O.kernels, (t1 - t0) * 1e9, chunk_p10_ns(O.kernels));
	if (O.threads == 1) {
		print_chunk_spread();
		printf("loop_cpu_ns %.0f loop_user_ns %.0f voluntary_switches %ld involuntary_switches "
		       "%ld\n",
		       (cpu_s(&u1) - cpu_s(&u0)) * 1e9,
		       ((double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec) +
			(double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec) * 1e-6) *
			   1e9,
		       u1.ru_nvcsw - u0.ru_nvcsw, u1.ru_nivcsw - u0.ru_nivcsw);
	}
	if (O.memcpy_n || O.memset_n)
		copies(s);
	if (O.graph_k)
		graph(s, counter);
	CHECK(cudaFree(counter));
	CHECK(cudaStreamDestroy(s));
	*out = nvtx_ranges;
	return NULL;
}

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* The program's own handlers, installed after CUDA started (tally is in front by then). */
static void catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static void forever(void)
{
	int *counter;
	long total = 0;
	CHECK(cudaMalloc(&counter, sizeof(int)));
	if (O.stop_on_signal)
		catch_stop_signals();
	while (!stop_signal) {
		for (int i = 0; i < 1000; i++)
			tiny<<<1, 32>>>(counter);
		CHECK(cudaDeviceSynchronize());
		total += 1000;
		timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts); // CUPTI's clock: comparable with the trace's times
		printf("launched_total %ld at %lld\n", total,
		       (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
		fflush(stdout);
	}
	/* Every launch above is synchronized: the trace must hold exactly `total` kernels. */
	printf("stopped_by %d launched_total %ld\n", (int)stop_signal, total);
	fflush(stdout);
	signal(stop_signal, SIG_DFL);
	raise(stop_signal);
	for (;;) /* the default action ends us (under tally, once the trace is closed) */
		pause();
}

static void profiler_range(void)
{
	int *counter;
	long quarter = O.kernels / 4, unused = 0;
	CHECK(cudaMalloc(&counter, sizeof(int)));
	launches(0, counter, quarter, &unused);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaProfilerStart());
	launches(0, counter, 2 * quarter, &unused);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaProfilerStop());
	launches(0, counter, quarter, &unused);
	CHECK(cudaDeviceSynchronize());
	printf("in_range %ld outside %ld\n", 2 * quarter, 2 * quarter);
}

static void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--kernels")) O.kernels = atol(v), i++;
		else if (!strcmp(a, "--threads")) O.threads = atoi(v), i++;
		else if (!strcmp(a, "--memcpy")) sscanf(v, "%ld:%ld", &O.memcpy_n, &O.memcpy_bytes), i++;
		else if (!strcmp(a, "--memset")) sscanf(v, "%ld:%ld", &O.memset_n, &O.memset_bytes), i++;
		else if (!strcmp(a, "--graph")) sscanf(v, "%ld:%ld", &O.graph_k, &O.graph_r), i++;
		else if (!strcmp(a, "--device")) O.device = atoi(v), i++;
		else if (!strcmp(a, "--sleep-ms")) O.sleep_ms = atol(v), i++;
		else if (!strcmp(a, "--exit")) O.exit_mode = v, i++;
		else if (!strcmp(a, "--nvtx")) O.nvtx = true;
		else if (!strcmp(a, "--nvtx-long")) O.nvtx_long = true;
		else if (!strcmp(a, "--driver")) O.driver = true;
		else if (!strcmp(a, "--forever")) O.forever = true;
		else if (!strcmp(a, "--stop-on-signal")) O.stop_on_signal = true;
		else if (!strcmp(a, "--profiler-range")) O.profiler_range = true;
		else if (!strcmp(a, "--spin")) O.spin_every = atol(v), i++;
		else { fprintf(stderr, "workload: unknown option %s\n", a); exit(2); }
	}
}

int main(int argc, char **argv)
{
	const char *scale = getenv("WORKLOAD_SPIN_SCALE");

	parse(argc, argv);
	if (scale && atof(scale) > 0)
		O.spin_cycles = (long long)(SPIN_CYCLES * atof(scale));
	printf("pid %d tid %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	CHECK(cudaSetDevice(O.device));
	CHECK(cudaFree(0)); // the context, and tally's session, start here
	if (O.driver) {
		CUmodule m;
		CHECK(cudaGetFuncBySymbol((cudaFunction_t *)&tiny_fn, (const void *)tiny));
		(void)m;
	}
	if (O.nvtx)
		nvtxMarkA("workload start");
	if (O.nvtx_long) { /* byte 4000 falls inside a 2-byte character: the cut must not */
		static char name[1 + 2500 * 2 + 1] = "a";
		for (int i = 0; i < 2500; i++)
			memcpy(name + 1 + 2 * i, "\xc3\xa9", 2);
		nvtxRangePushA(name);
		nvtxRangePop();
		nvtxRangePushA("short");
		nvtxRangePop();
		printf("nvtx_long_bytes %zu\n", strlen(name));
	}
	if (O.forever)
		forever();
	if (O.profiler_range) {
		profiler_range();
	} else {
		pthread_t t[64];
		long ranges[64] = {0}, total_ranges = 0;
		for (int i = 0; i < O.threads && i < 64; i++)
			pthread_create(&t[i], NULL, thread_main, &ranges[i]);
		for (int i = 0; i < O.threads && i < 64; i++) {
			pthread_join(t[i], NULL);
			total_ranges += ranges[i];
		}
		printf("total_kernels %ld memcpy %ld memcpy_bytes %ld memset %ld memset_bytes %ld "
		       "nvtx_ranges %ld nvtx_marks %d\n",
		       O.kernels * O.threads, 2 * O.memcpy_n * O.threads,
		       2 * O.memcpy_n * O.memcpy_bytes * O.threads, O.memset_n * O.threads,
		       O.memset_n * O.memset_bytes * O.threads, total_ranges, O.nvtx ? 1 : 0);
	}
	if (O.spin_every)
		printf("spin_kernels %ld spin_cycles %lld\n", spins, O.spin_cycles);
	fflush(stdout);
	if (O.sleep_ms)
		usleep(O.sleep_ms * 1000);
	if (!strcmp(O.exit_mode, "_exit"))
		_exit(0);
	if (!strcmp(O.exit_mode, "exit"))
		exit(0);
	if (!strcmp(O.exit_mode, "abort"))
		abort();
	return 0;
}
