// SPDX-License-Identifier: MIT
// Host activity between kernels, with known answers (tests/gpu/sampling.sh):
//   sampling compute ITERS MS  each iteration: 200 tiny kernels, cudaDeviceSynchronize, then
//                              cpu_work() computes on the CPU for MS ms: the GPU idles in
//                              cpu_work, and native samples must say so
//   sampling mutex ITERS MS    each iteration: 200 tiny kernels, synchronize, then the main
//                              thread locks a mutex another thread holds for MS ms: the
//                              blocking call and its length must appear (--trace osrt)
// Prints what it did, from its own clocks: "cpu_ns", "waited_ns N" per wait, "mutex ADDR".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>
#include <pthread.h>

__global__ void tiny(int *p) { if (p) *p += 1; }

static unsigned long long ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

// The function the GPU's idle stretches are spent in: noinline, its own frame.
__attribute__((noinline)) static double cpu_work(long ms)
{
	unsigned long long end = ns(CLOCK_THREAD_CPUTIME_ID) + (unsigned long long)ms * 1000000ull;
	volatile double x = 0;

	while (ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 20000; i++)
			x += i * 0.5;
	return x;
}

static void burst(void)
{
	for (int i = 0; i < 200; i++)
		tiny<<<1, 32>>>(nullptr);
	if (cudaDeviceSynchronize() != cudaSuccess)
		std::exit(2);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready, done;
static long hold_ms;
static int rounds;

static void *holder(void *)
{
	for (int r = 0; r < rounds; r++) {
		pthread_mutex_lock(&lock);
		pthread_barrier_wait(&ready);
		struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
		nanosleep(&ts, nullptr);
		pthread_mutex_unlock(&lock);
		pthread_barrier_wait(&done);
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "compute";
	int iters = argc > 2 ? std::atoi(argv[2]) : 10;
	long ms = argc > 3 ? std::atol(argv[3]) : 100;

	cudaFree(nullptr); // CUDA up before the measured part (the CPU tests' stand-in starts here)
	burst();
	if (std::strcmp(mode, "compute") == 0) {
		unsigned long long c0 = ns(CLOCK_THREAD_CPUTIME_ID), in_work = 0;

		for (int i = 0; i < iters; i++) {
			burst();
			unsigned long long w0 = ns(CLOCK_THREAD_CPUTIME_ID);
			(void)cpu_work(ms);
			in_work += ns(CLOCK_THREAD_CPUTIME_ID) - w0;
		}
		burst();
		std::printf("cpu_ns %llu\ncpu_work_ns %llu\n", ns(CLOCK_THREAD_CPUTIME_ID) - c0, in_work);
		return 0;
	}
	pthread_t t;
	rounds = iters;
	hold_ms = ms;
	pthread_barrier_init(&ready, nullptr, 2);
	pthread_barrier_init(&done, nullptr, 2);
	pthread_create(&t, nullptr, holder, nullptr);
	for (int i = 0; i < iters; i++) {
		burst();
		pthread_barrier_wait(&ready);
		unsigned long long t0 = ns(CLOCK_MONOTONIC);
		pthread_mutex_lock(&lock);
		std::printf("waited_ns %llu\n", ns(CLOCK_MONOTONIC) - t0);
		pthread_mutex_unlock(&lock);
		pthread_barrier_wait(&done);
	}
	burst();
	pthread_join(t, nullptr);
	std::printf("mutex %p\n", (void *)&lock);
	return 0;
}
