// SPDX-License-Identifier: MIT
// Workloads for tally's analyses on a real GPU (tests/gpu/analyses.sh), each built so that the
// answer is known, each printing what it measured itself (key=value lines):
//
//   analyses tiny N          N launches of an empty kernel, one stream: shorter than their launch
//   analyses long N MS       N kernels of MS ms each, one stream: the control for tiny
//   analyses phases MB MS    a copy phase (MB MiB host-to-device from pinned memory, in 4 MiB
//                            copies) then a compute phase (MS ms of 1 ms kernels); prints each
//                            phase's GPU time as CUDA events measure it
//   analyses overlap N C M A N steps: a compute kernel of C ms on one stream and, A ms after it
//                            started, a kernel named like NCCL's all-reduce of M ms on another
//                            (a stand-in: NCCL will not put two ranks on one GPU), after a
//                            warm-up of each (0 ns: see warm_up)
//   analyses queue N US      N kernels of US us launched without waiting: the queue fills
//   analyses memory PCT      allocate PCT percent of the device's memory, then free it
//
// The spinning kernels wait on %globaltimer, so their length is time, not a count of cycles.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __device__ unsigned long long now_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void empty_kernel() {}

__global__ void compute_spin(unsigned long long ns)
{
	unsigned long long t0 = now_ns();
	while (now_ns() - t0 < ns)
		;
}

// the name NCCL gives its all-reduce kernels, unmangled, so tally's name rule sees NCCL
extern "C" __global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL(unsigned long long ns)
{
	unsigned long long t0 = now_ns();
	while (now_ns() - t0 < ns)
		;
}

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "analyses: %s: %s\n", #x, cudaGetErrorString(e_));         \
			exit(3);                                                                   \
		}                                                                                  \
	} while (0)

static double host_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void tiny(long n)
{
	for (long i = 0; i < n; i++)
		empty_kernel<<<1, 1>>>();
	CHECK(cudaDeviceSynchronize());
	printf("kernels=%ld\n", n);
}

static void longk(long n, double ms)
{
	for (long i = 0; i < n; i++) {
		compute_spin<<<1, 1>>>((unsigned long long)(ms * 1e6));
		CHECK(cudaDeviceSynchronize());
	}
	printf("kernels=%ld\n", n);
}

static void phases(long mb, double ms)
{
	const size_t chunk = 4u << 20;
	long copies = mb / 4, kernels = (long)ms;
	void *host, *dev;
	cudaEvent_t e0, e1, e2;
	float copy_ms, compute_ms;
	cudaStream_t s;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMallocHost(&host, chunk));
	CHECK(cudaMalloc(&dev, chunk));
	memset(host, 1, chunk);
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	CHECK(cudaEventCreate(&e2));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaEventRecord(e0, s));
	for (long i = 0; i < copies; i++)
		CHECK(cudaMemcpyAsync(dev, host, chunk, cudaMemcpyHostToDevice, s));
	CHECK(cudaEventRecord(e1, s));
	for (long i = 0; i < kernels; i++)
		compute_spin<<<1, 1, 0, s>>>(1000000ull);
	CHECK(cudaEventRecord(e2, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaEventElapsedTime(&copy_ms, e0, e1));
	CHECK(cudaEventElapsedTime(&compute_ms, e1, e2));
	printf("copies=%ld kernels=%ld copy_phase_ns=%.0f compute_phase_ns=%.0f\n", copies, kernels,
	       copy_ms * 1e6, compute_ms * 1e6);
}

/*
 * Before the measured steps, each kernel is loaded and run once on its stream: CUDA loads modules
 * lazily (the default since 12.2), and on the H200 the first step's comm kernel, meeting the
 * load, ran past the compute (19 of 20 steps overlapped).  cudaFuncGetAttributes loads a kernel
 * without running it; the zero-length runs take whatever else a first launch on a stream costs.
 * They add no compute or comm time to what the steps make (0 ns each).
 */
static void warm_up(cudaStream_t s1, cudaStream_t s2)
{
	cudaFuncAttributes attr;

	CHECK(cudaFuncGetAttributes(&attr, compute_spin));
	CHECK(cudaFuncGetAttributes(&attr, ncclDevKernel_AllReduce_Sum_f32_RING_LL));
	compute_spin<<<1, 1, 0, s1>>>(0ull);
	CHECK(cudaStreamSynchronize(s1));
	ncclDevKernel_AllReduce_Sum_f32_RING_LL<<<1, 1, 0, s2>>>(0ull);
	CHECK(cudaStreamSynchronize(s2));
}

static void overlap(long n, double c, double m, double a)
{
	cudaStream_t s1, s2;

	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	warm_up(s1, s2);
	for (long i = 0; i < n; i++) {
		compute_spin<<<1, 1, 0, s1>>>((unsigned long long)(c * 1e6));
		usleep((useconds_t)(a * 1000));
		ncclDevKernel_AllReduce_Sum_f32_RING_LL<<<1, 1, 0, s2>>>((unsigned long long)(m * 1e6));
		CHECK(cudaDeviceSynchronize());
	}
	printf("steps=%ld compute_ms=%g comm_ms=%g comm_at_ms=%g\n", n, c, m, a);
}

static void queue(long n, double us)
{
	double t0 = host_s();

	for (long i = 0; i < n; i++)
		compute_spin<<<1, 1>>>((unsigned long long)(us * 1e3));
	double launched = host_s();
	CHECK(cudaDeviceSynchronize());
	printf("kernels=%ld launch_s=%.6f run_s=%.6f\n", n, launched - t0, host_s() - t0);
}

static void memory(double pct)
{
	size_t free_b, total;
	void *p;

	CHECK(cudaMemGetInfo(&free_b, &total));
	size_t want = (size_t)((double)total * pct / 100.0);
	if (want > free_b)
		want = free_b - (64u << 20);
	CHECK(cudaMalloc(&p, want));
	CHECK(cudaMemset(p, 0, 1 << 20));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(p));
	printf("total_bytes=%zu allocated_bytes=%zu\n", total, want);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double a2 = argc > 2 ? atof(argv[2]) : 0, a3 = argc > 3 ? atof(argv[3]) : 0;
	double a4 = argc > 4 ? atof(argv[4]) : 0, a5 = argc > 5 ? atof(argv[5]) : 0;

	CHECK(cudaFree(0));
	if (!strcmp(mode, "tiny"))
		tiny((long)a2);
	else if (!strcmp(mode, "long"))
		longk((long)a2, a3);
	else if (!strcmp(mode, "phases"))
		phases((long)a2, a3);
	else if (!strcmp(mode, "overlap"))
		overlap((long)a2, a3, a4, a5);
	else if (!strcmp(mode, "queue"))
		queue((long)a2, a3);
	else if (!strcmp(mode, "memory"))
		memory(a2);
	else {
		fprintf(stderr, "usage: analyses tiny N | long N MS | phases MB MS | overlap N C M A | "
				"queue N US | memory PCT\n");
		return 2;
	}
	return 0;
}
