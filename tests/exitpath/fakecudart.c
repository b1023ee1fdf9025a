/* SPDX-License-Identifier: MIT */
/*
 * fakecudart: a stand-in libcudart.so.13 with just what an nvcc-built program calls, so that
 * tests/gpu/stacks.cu, compiled by nvcc as on the GPU machines, runs on the CPU: its launches go
 * through nvcc's own host stubs (__device_stub_*, inlined into the launching function) into
 * __cudaLaunchKernel here, which "launches" through the stand-in CUPTI (fakecupti_launch), and
 * its cudaMalloc/cudaFree are recorded as CUPTI records them (fakecupti_memory).  The first
 * cudaFree loads the collector as the driver does (CUDA_INJECTION64_PATH).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define API __attribute__((visibility("default")))

#define MAX_LIVE 64

static void (*launch)(unsigned n);
static void (*memory)(uint64_t address, uint64_t bytes, bool release);
static char fatbin_handle;
/* what cudaFree must say it released: CUDA knows each allocation's size */
static struct {
	void *p;
	size_t bytes;
} live[MAX_LIVE];

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (!init || init() != 1 ||
	    !(launch = (void (*)(unsigned))dlsym(RTLD_DEFAULT, "fakecupti_launch")) ||
	    !(memory =
		  (void (*)(uint64_t, uint64_t, bool))dlsym(RTLD_DEFAULT, "fakecupti_memory"))) {
		fprintf(stderr, "fakecudart: no injection\n");
		exit(3);
	}
}

API void **__cudaRegisterFatBinary(void *fatbin)
{
	(void)fatbin;
	return (void **)&fatbin_handle;
}

API void __cudaRegisterFatBinaryEnd(void **handle)
{
	(void)handle;
}

API void __cudaUnregisterFatBinary(void **handle)
{
	(void)handle;
}

API void __cudaRegisterFunction(void **handle, const char *host, char *dev, const char *name,
				int limit, void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
	(void)handle, (void)host, (void)dev, (void)name, (void)limit, (void)tid, (void)bid;
	(void)bdim, (void)gdim, (void)wsize;
}

API int __cudaGetKernel(void **kernel, const void *func)
{
	*kernel = (void *)func;
	return 0;
}

API unsigned __cudaPushCallConfiguration(unsigned long long grid, unsigned gridz,
					 unsigned long long block, unsigned blockz, size_t shmem,
					 void *stream)
{
	(void)grid, (void)gridz, (void)block, (void)blockz, (void)shmem, (void)stream;
	return 0;
}

API int __cudaPopCallConfiguration(void *grid, void *block, size_t *shmem, void *stream)
{
	(void)grid, (void)block, (void)stream;
	*shmem = 0;
	return 0;
}

API int __cudaLaunchKernel(const void *func, unsigned long long grid, unsigned gridz,
			   unsigned long long block, unsigned blockz, void **args, size_t shmem,
			   void *stream)
{
	(void)func, (void)grid, (void)gridz, (void)block, (void)blockz, (void)args, (void)shmem;
	(void)stream;
	launch(1);
	return 0;
}

API int cudaFree(void *p)
{
	unsigned i;

	if (!launch)
		cu_init();
	for (i = 0; p && i < MAX_LIVE; i++)
		if (live[i].p == p) {
			memory((uint64_t)(uintptr_t)p, live[i].bytes, true);
			live[i].p = NULL;
			free(p);
			return 0;
		}
	return p ? 1 : 0; /* cudaErrorInvalidValue: not ours */
}

API int cudaMalloc(void **p, size_t bytes)
{
	unsigned i;

	if (!launch)
		cu_init();
	for (i = 0; i < MAX_LIVE && live[i].p; i++)
		;
	if (i == MAX_LIVE || !(*p = malloc(bytes)))
		return 2; /* cudaErrorMemoryAllocation */
	live[i].p = *p;
	live[i].bytes = bytes;
	memory((uint64_t)(uintptr_t)*p, bytes, false);
	return 0;
}

API int cudaDeviceSynchronize(void)
{
	return 0;
}
