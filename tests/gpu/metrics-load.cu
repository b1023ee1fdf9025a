// SPDX-License-Identifier: MIT
// metrics-load: phases whose GPU metrics are known by construction, each inside an NVTX range of
// its name, for tests/gpu/metrics.sh:
//   idle         sleep: nothing runs on the GPU (SM active ~ 0)
//   copy-kernel  a grid-stride copy kernel over 1 GiB, launched back to back: DRAM bound, its
//                throughput what ncu reports for the same kernel
//   spin         a kernel that busy-waits on every SM (SM active ~ 100, DRAM ~ 0)
// Each phase lasts SECONDS (default 1), after a second for the sampler to start.  It prints "phase NAME seconds S launches N" for each,
// measured by itself, and the copy kernel's achieved bandwidth.
//   metrics-load [SECONDS]           all phases, in that order
//   metrics-load --copy-once N       N launches of the copy kernel only (for ncu)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                   \
			exit(3);                                                                   \
		}                                                                                  \
	} while (0)

static const size_t BYTES = 1ull << 30;

__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		out[i] = in[i];
}

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0)
		;
}

static int sms;

static void copy(const float4 *a, float4 *b)
{
	copy_kernel<<<sms * 8, 512>>>(a, b, BYTES / sizeof(float4));
}

int main(int argc, char **argv)
{
	double seconds = 1.0, t0, t1;
	float4 *a, *b;
	long n = 0;
	int clock_khz = 0;

	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	CHECK(cudaMalloc(&a, BYTES));
	CHECK(cudaMalloc(&b, BYTES));
	CHECK(cudaMemset(a, 1, BYTES));
	CHECK(cudaDeviceSynchronize());
	if (argc > 2 && strcmp(argv[1], "--copy-once") == 0) {
		for (long i = 0; i < atol(argv[2]); i++)
			copy(a, b);
		CHECK(cudaDeviceSynchronize());
		return 0;
	}
	if (argc > 1)
		seconds = atof(argv[1]);
	sleep_s(1.0); /* the sampler sets the device up meanwhile: every phase below is sampled */

	nvtxRangePushA("idle");
	t0 = now_s();
	sleep_s(seconds);
	t1 = now_s();
	nvtxRangePop();
	printf("phase idle seconds %.6f launches 0\n", t1 - t0);

	// Launched in groups of 16 between synchronizations, so the GPU never waits for the CPU.
	nvtxRangePushA("copy-kernel");
	t0 = now_s();
	while (now_s() - t0 < seconds) {
		for (int i = 0; i < 16; i++)
			copy(a, b);
		n += 16;
		CHECK(cudaDeviceSynchronize());
	}
	t1 = now_s();
	nvtxRangePop();
	printf("phase copy-kernel seconds %.6f launches %ld\n", t1 - t0, n);
	printf("copy_bandwidth_gbs %.1f\n", 2.0 * (double)n * (double)BYTES / (t1 - t0) / 1e9);

	nvtxRangePushA("spin");
	t0 = now_s();
	spin<<<sms * 4, 256>>>((long long)(clock_khz * 1000.0 * seconds));
	CHECK(cudaDeviceSynchronize());
	t1 = now_s();
	nvtxRangePop();
	printf("phase spin seconds %.6f launches 1\n", t1 - t0);
	fflush(stdout);
	cudaFree(a);
	cudaFree(b);
	return 0;
}
