/* SPDX-License-Identifier: MIT */
/*
 * How libtally.so gets into a process, and its exported entry points:
 *
 * - CUDA_INJECTION64_PATH=libtally.so: at cuInit, the driver loads us and calls
 *   InitializeInjection(), where the session starts (the process's first CUDA call).
 * - NVTX_INJECTION64_PATH=libtally.so: the first NVTX call loads us and calls
 *   InitializeInjectionNvtx2(), where the session starts if it has not, and NVTX capture begins.
 * - LD_PRELOAD=libtally.so: our exits, execs and signal calls wrap libc's (exitpath.c,
 *   signals.c); a second CUPTI client's calls come to guard.c.
 *
 * Everything else is hidden (-fvisibility=hidden).  Nothing here may exit, abort, or print unless
 * asked (TALLY_DEBUG); a failure means "not recorded", said once, and the program runs on.
 */
#include "collector.h"
#include "exitpath.h"
#include "log.h"
#include "nvtx.h"
#include "sigreal.h"

__attribute__((constructor)) static void tally_loaded(void)
{
	sigreal_init();
	tally_log_init();
	session_init(session_get());
	exitpath_init();
}

/* Start the session; once it runs, every exit path closes it. */
static void start(const char *why)
{
	struct session *s = session_get();

	session_start(s, why);
	if (!session_running(s))
		return;
	exitpath_arm();
	signals_arm();
}

TALLY_EXPORT int InitializeInjection(void)
{
	start("cuda");
	/* 1 tells CUDA the injection succeeded; returning 0 would not stop CUDA, only log. */
	return 1;
}

TALLY_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	start("nvtx");
	if (!session_traces_nvtx(session_get()))
		return 0; /* NVTX calls become no-ops: nothing to pay */
	return nvtx_capture_register(get_table);
}
