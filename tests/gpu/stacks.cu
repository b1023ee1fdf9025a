// SPDX-License-Identifier: MIT
// Native stacks and CUDA memory with known answers (tests/gpu/stacks.sh).
//   stacks launches:  kernels from two functions; prints "<function> <line of the launch> <count>"
//   stacks malloc:    cudaMalloc/cudaFree of known sizes; prints each "alloc ADDR BYTES" and
//                     "free ADDR", and the peak bytes the program itself held ("peak BYTES")
//   stacks loop N:    N tiny launches from one function (the overhead bench), "loop_ns T"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void tiny(int *p) { if (p) *p += 1; }

// noinline and work after the launch: each keeps its own frame (no inlining, no tail call)
__attribute__((noinline)) static int solver_step(int n)
{
	for (int i = 0; i < n; i++)
		tiny<<<1, 32>>>(nullptr); int line = __LINE__;
	std::printf("solver_step %d %d\n", line, n);
	return cudaDeviceSynchronize();
}

__attribute__((noinline)) static int model_forward(int n)
{
	for (int i = 0; i < n; i++)
		tiny<<<2, 64>>>(nullptr); int line = __LINE__;
	std::printf("model_forward %d %d\n", line, n);
	return cudaDeviceSynchronize();
}

static void *alloc(size_t bytes, size_t *held, size_t *peak)
{
	void *p = nullptr;

	if (cudaMalloc(&p, bytes) != cudaSuccess)
		std::exit(2);
	*held += bytes;
	*peak = *held > *peak ? *held : *peak;
	std::printf("alloc %llu %zu\n", (unsigned long long)(uintptr_t)p, bytes);
	return p;
}

static void release(void *p, size_t bytes, size_t *held)
{
	cudaFree(p);
	*held -= bytes;
	std::printf("free %llu\n", (unsigned long long)(uintptr_t)p);
}

static int mallocs(void)
{
	const size_t MiB = 1 << 20;
	size_t held = 0, peak = 0;
	void *a = alloc(1 * MiB, &held, &peak), *b = alloc(2 * MiB, &held, &peak);
	void *c = alloc(4 * MiB, &held, &peak);

	release(b, 2 * MiB, &held);
	void *d = alloc(8 * MiB, &held, &peak); // 1 + 4 + 8 = 13 MiB: the peak
	release(a, 1 * MiB, &held);
	release(c, 4 * MiB, &held);
	release(d, 8 * MiB, &held);
	std::printf("peak %zu\n", peak);
	return 0;
}

__attribute__((noinline)) static int loop(int n)
{
	cudaDeviceSynchronize();
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < n; i++)
		tiny<<<1, 32>>>(nullptr);
	cudaDeviceSynchronize();
	auto t1 = std::chrono::steady_clock::now();
	std::printf("launched %d loop_ns %.0f\n", n,
		    (double)std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "launches";

	cudaFree(nullptr); // the context first: its setup is not the program's allocation
	if (std::strcmp(mode, "malloc") == 0)
		return mallocs();
	if (std::strcmp(mode, "loop") == 0)
		return loop(argc > 2 ? std::atoi(argv[2]) : 200000);
	return solver_step(30) | model_forward(70);
}
