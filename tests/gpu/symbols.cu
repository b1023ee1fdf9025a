// SPDX-License-Identifier: MIT
// A CUDA program whose CPU work is in one known function, for the names of native frames that
// travel (tests/gpu/symbols.sh; issue 31's measured case):
//   cpu_between ITERS MS   each iteration: 200 tiny kernels, cudaDeviceSynchronize, then
//                          crunch(double) computes on the CPU for MS ms of the thread's CPU time
// Prints "crunch_cpu_ns N": the main thread's CPU time in crunch, by its own clock.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

__global__ void tiny(int *p) { if (p) *p += 1; }

// The thread's CPU time in ms: its own frame, called from crunch.
__attribute__((noinline)) double now()
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Where the CPU time goes: a C++ name (_Z6crunchd), noinline, its own frame.
__attribute__((noinline)) double crunch(double ms)
{
	double end = now() + ms;
	volatile double x = 0;

	while (now() < end)
		for (int i = 0; i < 20000; i++)
			x += i * 0.5;
	return x;
}

static void burst()
{
	for (int i = 0; i < 200; i++)
		tiny<<<1, 32>>>(nullptr);
	if (cudaDeviceSynchronize() != cudaSuccess)
		std::exit(2);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? std::atoi(argv[1]) : 10;
	double ms = argc > 2 ? std::atof(argv[2]) : 40;
	double in_crunch = 0;

	cudaFree(nullptr);
	for (int i = 0; i < iters; i++) {
		burst();
		double t0 = now();
		(void)crunch(ms);
		in_crunch += now() - t0;
	}
	std::printf("crunch_cpu_ns %.0f\n", in_crunch * 1e6);
	return 0;
}
