/* SPDX-License-Identifier: MIT */
/*
 * fakenative: a C "CUDA program" for native stacks on the CPU.  It loads the collector as the
 * driver does, then launches through the stand-in CUPTI from two functions; it prints, for each,
 * its name, the source line of its launching call (__LINE__) and how many launches it made, so
 * the test knows what the symbolized stacks must say without trusting tally.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(void)
{
	cu_init();
	return solver_step(30) + model_forward(70) == 1 ? 0 : 1;
}
