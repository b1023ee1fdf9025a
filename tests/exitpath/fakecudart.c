/* SPDX-License-Identifier: MIT */
/*
 * fakecudart: a stand-in libcudart.so.13 with just what an nvcc-built program calls, so that
 * tests/gpu/stacks.cu, compiled by nvcc as on the GPU machines, runs on the CPU: its launches go
 * through nvcc's own host stubs (__device_stub_*, inlined into the launching function) into
 * __cudaLaunchKernel here, which "launches" through the stand-in CUPTI (fakecupti_launch).  The
 * first cudaFree loads the collector as the driver does (CUDA_INJECTION64_PATH).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define API __attribute__((visibility("default")))

static void (*launch)(unsigned n);
static char fatbin_handle;

static void cu_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	void *h = inj ? dlopen(inj, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;

	if (!init || init() != 1 ||
	    !(launch = (void (*)(unsigned))dlsym(RTLD_DEFAULT, "fakecupti_launch"))) {
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
	if (!launch)
		cu_init();
	free(p);
	return 0;
}

API int cudaMalloc(void **p, size_t bytes)
{
	*p = malloc(bytes);
	return *p ? 0 : 2;
}

API int cudaDeviceSynchronize(void)
{
	return 0;
}
