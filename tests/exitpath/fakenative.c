/* SPDX-License-Identifier: MIT */
/*
 * fakenative: a C "CUDA program" for native stacks on the CPU.  It loads the collector as the
 * driver does, then launches through the stand-in CUPTI from three functions, in turns; each call
 * prints the function's name, the source line of its launching call (__LINE__) and how many
 * launches it made, so the test knows what the symbolized stacks must say without trusting
 * tally.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void (*launch)(unsigned n);

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (!init || init() != 1 ||
	    !(launch = (void (*)(unsigned))dlsym(RTLD_DEFAULT, "fakecupti_launch"))) {
		fprintf(stderr, "fakenative: no injection\n");
		exit(3);
	}
}

/* noinline, and work after the call so that it is not a tail call: each keeps its frame. */
__attribute__((noinline)) static int solver_step(unsigned n)
{
	volatile int after = 0;

	launch(n), printf("solver_step %d %u\n", __LINE__, n);
	return after;
}

__attribute__((noinline)) static int model_forward(unsigned n)
{
	volatile int after = 1;

	launch(n), printf("model_forward %d %u\n", __LINE__, n);
	return after;
}

/* Launches from a function under the name g++ gives `static int layer_norm(unsigned)`, so that
 * the C test meets what C++ programs (and nvcc's) have: a mangled name, which GCC's clone of it
 * suffixes (_ZL10layer_normj.constprop.0, demangled "layer_norm(unsigned int) [clone
 * .constprop.0]"), and a launch through an inlined helper, where the line table gives the
 * helper's line, not the caller's (as nvcc's host stub of a kernel, inlined at each <<<>>>). */
static inline __attribute__((always_inline)) void launch_inlined(unsigned n)
{
	launch(n);
}

__attribute__((noinline)) static int layer_norm(unsigned n) __asm__("_ZL10layer_normj");
__attribute__((noinline)) static int layer_norm(unsigned n)
{
	volatile int after = 0;

	launch_inlined(n), printf("layer_norm %d %u\n", __LINE__, n);
	return after;
}

/* The bench (bench/stack-capture.sh): n launches from `depth` nested frames, ns per launch. */
__attribute__((noinline)) static long nested(int depth, unsigned n)
{
	struct timespec t0, t1;
	volatile long r;

	if (depth > 1)
		return r = nested(depth - 1, n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < n; i++)
		launch(1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return r = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
}

int main(int argc, char **argv)
{
	cu_init();
	if (argc > 2 && strcmp(argv[1], "loop") == 0) {
		unsigned n = (unsigned)atoi(argv[2]);
		int depths[] = {1, 10, 30};

		for (int i = 0; i < 3; i++) {
			nested(depths[i], n / 10);
			printf("depth %d ns_per_launch %.1f\n", depths[i],
			       (double)nested(depths[i], n) / n);
		}
		return 0;
	}
	/* interleaved, so that each launch comes from a chain other than the last one's */
	for (int i = 0; i < 10; i++)
		if (solver_step(3) + model_forward(7) + layer_norm(5) != 1)
			return 1;
	return 0;
}
