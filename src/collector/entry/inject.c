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
/*
 * The room entry/ (inject.c, exitpath.c, signals.c, guard.c): every way into the collector and
 * out of the process: the injection entry points, the interposed exits and execs, the fork hooks,
 * the signal handler in front of the program's, the guard against a second CUPTI client.  Only
 * the loader, CUDA, NVTX and the program's own calls enter it; it calls the session
 * (collector.h) and may call every room of the collector below that.
 */
#include <string.h>

#include "collector.h"
#include "exitpath.h"
#include "libc.h"
#include "log.h"
#include "nvtx.h"
#include "sampler.h"
#include "sigreal.h"
#include "timersample.h"

/* Start the session; once it runs, every exit path closes it. */
static void start(const char *why)
{
	struct session *s = session_get();

	session_start(s, why);
	if (!session_running(s))
		return;
	exitpath_arm(strcmp(why, "cuda") == 0);
	signals_arm();
	session_sampling_start(s);
}

/* Host sampling or blocking calls asked for: the session starts now, before main, so that they
 * cover the program from its first instruction (CUDA joins it at cuInit).  A setting that is
 * wrong starts it too, so that the refusal is said now (the manifest, the log), whether or not
 * the program ever calls CUDA. */
static bool wanted_from_start(void)
{
	struct tally_config c;
	char why[256];

	return tally_config_load(&c, why, sizeof(why)) < 0 || tally_config_from_start(&c);
}

__attribute__((constructor)) static void tally_loaded(void)
{
	sigreal_init();
	libc_init();
	tally_log_init();
	tally_sampler_init();
	tally_timer_use_signals(&(struct timer_signals){signals_claim, signals_program_action});
	session_init(session_get());
	exitpath_init();
	if (wanted_from_start())
		start("host");
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
