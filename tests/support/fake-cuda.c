/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libcuda.so.1 for testing tally doctor's real probe (dlopen, cuInit, devices, UUIDs)
 * on machines with no GPU.  FAKE_CUDA_INIT sets cuInit's result; cuInit fails with 999 when
 * CUDA_INJECTION64_PATH is set at that moment, since the doctor must hide it from the driver,
 * unless FAKE_CUDA_DEBUGGER is set: then it succeeds without calling the injection, as CUDA does
 * under cuda-gdb.
 */
#include <stdio.h>
#include <stdlib.h>

#define FAKE_DEVICES 2

static int initialised; /* as the driver: nothing but versions answers before cuInit */

int cuInit(unsigned flags)
{
	const char *rc = getenv("FAKE_CUDA_INIT");

	(void)flags;
	if (getenv("CUDA_INJECTION64_PATH") && !getenv("FAKE_CUDA_DEBUGGER"))
		return 999;
	initialised = !rc || atoi(rc) == 0;
	return rc ? atoi(rc) : 0;
}

int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

int cuDeviceGetCount(int *n)
{
	*n = initialised ? FAKE_DEVICES : 0;
	return initialised ? 0 : 3; /* CUDA_ERROR_NOT_INITIALIZED */
}

int cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal < 0 || ordinal >= FAKE_DEVICES)
		return 101;
	*dev = ordinal;
	return 0;
}

int cuDeviceGetName(char *name, int len, int dev)
{
	snprintf(name, (size_t)len, "Fake GPU %d", dev);
	return 0;
}

int cuDeviceGetUuid_v2(unsigned char uuid[16], int dev)
{
	int i;

	for (i = 0; i < 16; i++)
		uuid[i] = (unsigned char)(dev * 16 + i);
	return 0;
}

int cuGetErrorName(int rc, const char **name)
{
	*name = rc == 803   ? "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
		: rc == 999 ? "CUDA_ERROR_UNKNOWN"
			    : "CUDA_ERROR_FAKE";
	return 0;
}
