/* SPDX-License-Identifier: MIT */
/*
 * How libtally.so gets into a process, and its exported entry points:
 *
 * - CUDA_INJECTION64_PATH=libtally.so: at cuInit, the driver loads us and calls
 *   InitializeInjection(), where the session starts (the process's first CUDA call).
 * - NVTX_INJECTION64_PATH=libtally.so: the first NVTX call loads us and calls
 *   InitializeInjectionNvtx2() (nvtx.c).
 * - LD_PRELOAD=libtally.so: our _exit, _Exit and exec* wrap libc's (exitpath.c).
 *
 * Everything else is hidden (-fvisibility=hidden).  Nothing here may exit, abort, or print unless
 * asked (TALLY_DEBUG); a failure means "not recorded", said once, and the program runs on.
 */
#include "collector.h"
#include "log.h"

__attribute__((constructor)) static void tally_loaded(void)
{
	g_session.fd = -1;
	tally_log_init();
}

TALLY_EXPORT int InitializeInjection(void)
{
	session_start("cuda");
	/* 1 tells CUDA the injection succeeded; returning 0 would not stop CUDA, only log. */
	return 1;
}
