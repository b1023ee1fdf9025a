/* SPDX-License-Identifier: MIT */
/*
 * The tool on board: libtally.so (the collector) and the libcupti it loads at run time are here,
 * CUPTI and the driver are versions that work together, and no other CUPTI client (nsys, ncu,
 * Kineto) is already set to attach to the program.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cupti_version.h>

#include "internal.h"

/* 0 if path starts with an ELF header, else -errno (-ENOEXEC: not ELF). */
static int check_elf(const char *path)
{
	unsigned char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (read(fd, magic, sizeof(magic)) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", 4) != 0)
		rc = -ENOEXEC;
	close(fd);
	return rc;
}

void check_tool_collector(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const char *env = doctor_getenv_set(ctx, "TALLY_COLLECTOR");
	/* A fixture tree has no tally binary beside which to look: only its $TALLY_COLLECTOR. */
	const char *found = ctx->fixture ? NULL : ctx->opts->collector;
	const char *looked = ctx->opts->collector_looked;
	char path[PATH_MAX + 64];
	int rc;

	finding_why(f, "libtally.so is what records: CUDA loads it into the program through "
		       "CUDA_INJECTION64_PATH");
	finding_fix(f, "build it (`cmake --build build`), install tally with its "
		       "lib/tally/libtally.so, or point TALLY_COLLECTOR at it");
	if (env) {
		doctor_path(ctx, env, path, sizeof(path));
		finding_source(f, "$TALLY_COLLECTOR");
	} else if (found) {
		snprintf(path, sizeof(path), "%s", found);
		finding_source(f, "beside the tally binary");
	} else {
		finding_source(f, "$TALLY_COLLECTOR, beside the tally binary");
		finding_set(f, TALLY_DOCTOR_FAIL, "libtally.so not found (last looked at %s)",
			    looked ? looked : "$TALLY_COLLECTOR, unset here");
		return;
	}
	rc = check_elf(path);
	if (rc == -ENOEXEC)
		finding_set(f, TALLY_DOCTOR_FAIL, "%s is not a shared library", env ? env : path);
	else if (rc < 0)
		finding_set(f, TALLY_DOCTOR_FAIL, "cannot read %s: %s", env ? env : path,
			    strerror(-rc));
	else
		finding_set(f, TALLY_DOCTOR_OK, "%s", env ? env : path);
}

/* What tally will load, by where it was found (gpu.c: probe_cupti). */
static const char *const cupti_origin[] = {
    [CUPTI_FROM_SEARCH] = "",
    [CUPTI_FROM_ENV] = " ($TALLY_CUPTI_PATH)",
    [CUPTI_FROM_BUNDLE] = " (bundled with tally)",
};

void check_tool_cupti(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);
	char ver[32];

	finding_source(f,
		       "$TALLY_CUPTI_PATH, beside libtally.so (bundled), dlopen(libcupti.so.%d), "
		       "$CUDA_HOME, /usr/local/cuda/lib64, /usr/local/cuda/extras/CUPTI/lib64",
		       TALLY_CUPTI_MAJOR);
	finding_why(f,
		    "libtally.so is not linked against CUPTI: it loads libcupti.so.%d when the "
		    "program starts CUDA, looking for it itself ($TALLY_CUPTI_PATH, a copy the "
		    "program loaded, beside libtally.so, the loader's search, $CUDA_HOME/lib64, "
		    "/usr/local/cuda/lib64 and extras/CUPTI/lib64); without it nothing is recorded",
		    TALLY_CUPTI_MAJOR);
	if (!g->probed) {
		finding_set(f, TALLY_DOCTOR_SKIP, "not probed (asked not to load libraries)");
		return;
	}
	if (!g->cupti_loaded) {
		finding_set(f, doctor_gpu_usable(ctx) ? TALLY_DOCTOR_FAIL : TALLY_DOCTOR_WARN,
			    "CUPTI not found: %s", g->cupti_error);
		finding_fix(f,
			    "CUPTI comes with the CUDA %d toolkit (lib64/libcupti.so.%d): install "
			    "it in /usr/local/cuda (the collector looks there), or point "
			    "TALLY_CUPTI_PATH at the file",
			    TALLY_CUPTI_MAJOR, TALLY_CUPTI_MAJOR);
		return;
	}
	doctor_cuda_version_str(doctor_cupti_cuda_version(g->cupti_version), ver, sizeof(ver));
	if (!g->cupti_default) {
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", g->cupti_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		finding_set(f, TALLY_DOCTOR_WARN,
			    "CUPTI %s found only at %s, where the collector does not look", ver,
			    g->cupti_path);
		finding_fix(f, "export TALLY_CUPTI_PATH=%s (or LD_LIBRARY_PATH=%s)", g->cupti_path,
			    dir);
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "CUPTI %s (API %u) at %s%s; %s", ver, g->cupti_version,
		    g->cupti_path, cupti_origin[g->cupti_from],
		    g->cupti_from == CUPTI_FROM_ENV
			? "used even by a program that loads its own"
			: "a program that loads its own libcupti (PyTorch, JAX) keeps its own");
}

void check_tool_versions(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);
	int built = doctor_cupti_cuda_version(CUPTI_API_VERSION);
	int have = doctor_cupti_cuda_version(g->cupti_version);
	char b[32], c[32], d[32];

	finding_source(f, "cuptiGetVersion, cuDriverGetVersion, CUPTI_API_VERSION at build time");
	finding_why(f, "CUPTI needs a driver at least as new as its CUDA major version, and "
		       "libtally.so needs the CUPTI major it was built with");
	if (!g->probed || !g->cupti_loaded) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no CUPTI to compare (see tool.cupti)");
		return;
	}
	doctor_cuda_version_str(built, b, sizeof(b));
	doctor_cuda_version_str(have, c, sizeof(c));
	doctor_cuda_version_str(g->driver_version, d, sizeof(d));
	if (have / 1000 != built / 1000) {
		finding_set(f, TALLY_DOCTOR_FAIL, "CUPTI %s, but tally was built against CUPTI %s",
			    c, b);
		finding_fix(f,
			    "put CUPTI %d (libcupti.so.%d) first on LD_LIBRARY_PATH, or use a "
			    "tally built for CUDA %d",
			    built / 1000, TALLY_CUPTI_MAJOR, have / 1000);
		return;
	}
	if (!g->cuda_loaded || g->driver_version <= 0) {
		finding_set(f, TALLY_DOCTOR_OK,
			    "CUPTI %s, as tally was built with; no driver to compare", c);
		return;
	}
	if (g->driver_version / 1000 < have / 1000) {
		finding_set(f, TALLY_DOCTOR_FAIL,
			    "CUPTI %s needs a driver for CUDA %d; this driver is for CUDA %s", c,
			    have / 1000, d);
		finding_fix(f, "update the driver (CUDA 13 needs r580 or newer), or on data-centre "
			       "GPUs put the CUDA forward-compatibility libcuda (cuda-compat) on "
			       "LD_LIBRARY_PATH");
		return;
	}
	if (g->driver_version < have) {
		finding_set(f, TALLY_DOCTOR_WARN,
			    "CUPTI %s on a driver for CUDA %s: minor version compatibility", c, d);
		finding_fix(f, "works with a limited feature set; if recording reports CUPTI "
			       "errors, update the driver");
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "CUPTI %s (tally built with %s), driver for CUDA %s", c, b,
		    d);
}

/* A name for the tool behind an injection or preload path. */
static const char *tool_name(const char *path)
{
	if (strstr(path, "libtally"))
		return "tally";
	if (strstr(path, "ToolsInjection") || strstr(path, "nsys") ||
	    strstr(path, "nsight-systems"))
		return "Nsight Systems";
	if (strstr(path, "TreeLauncher") || strstr(path, "nsight-compute"))
		return "Nsight Compute";
	if (strstr(path, "nvbit"))
		return "NVBit";
	return NULL;
}

/* The first environment variable whose name starts with prefix, "" if none. */
static const char *env_prefixed(const struct doctor_ctx *ctx, const char *prefix)
{
	char *const *e;

	for (e = doctor_environ(ctx); e && *e; e++)
		if (strncmp(*e, prefix, strlen(prefix)) == 0)
			return *e;
	return NULL;
}

/* Appends one sighting to the value; returns 1 so the caller can count them. */
static int __attribute__((format(printf, 2, 3)))
seen(struct tally_doctor_finding *f, const char *fmt, ...)
{
	size_t o = strlen(f->value);
	va_list ap;

	snprintf(f->value + o, sizeof(f->value) - o, "%s", o ? "; " : "");
	o = strlen(f->value);
	va_start(ap, fmt);
	vsnprintf(f->value + o, sizeof(f->value) - o, fmt, ap);
	va_end(ap);
	return 1;
}

void check_tool_subscriber(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const char *inj = doctor_getenv_set(ctx, "CUDA_INJECTION64_PATH");
	const char *nvtx = doctor_getenv_set(ctx, "NVTX_INJECTION64_PATH");
	const char *pre = doctor_getenv_set(ctx, "LD_PRELOAD");
	const char *nsys = env_prefixed(ctx, "NSYS_"), *kineto = env_prefixed(ctx, "KINETO_");
	const char *name;
	int n = 0;
	bool tally_env = inj && strstr(inj, "libtally");

	finding_source(f, "$CUDA_INJECTION64_PATH, $NVTX_INJECTION64_PATH, $LD_PRELOAD, $NSYS_*, "
			  "$KINETO_*");
	if (inj && !tally_env)
		n += seen(f, "CUDA_INJECTION64_PATH=%s (%s)", inj,
			  tool_name(inj) ? tool_name(inj) : "another tool");
	/* tally's own environment may point NVTX at libcupti: only a stranger's counts. */
	if (nvtx && !strstr(nvtx, "libtally") && !tally_env)
		n += seen(f, "NVTX_INJECTION64_PATH=%s", nvtx);
	if (pre && (name = tool_name(pre)) && strcmp(name, "tally") != 0)
		n += seen(f, "LD_PRELOAD=%s (%s)", pre, name);
	if (nsys)
		n += seen(f, "%s (running under Nsight Systems)", nsys);
	if (kineto)
		n += seen(f, "%s (PyTorch's Kineto profiler is configured)", kineto);
	finding_why(f, "CUPTI takes one subscriber per process (CUDA 13.2 and older, drivers older "
		       "than r610): the second tool gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_"
		       "SUPPORTED and records nothing");
	finding_fix(f, "record with one tool at a time: run tally outside nsys/ncu, unset "
		       "CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH (or remove the LD_PRELOAD "
		       "entry), and do not start torch.profiler in the recorded program");
	if (n) {
		f->status = TALLY_DOCTOR_WARN;
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%s",
		    inj ? "CUDA_INJECTION64_PATH names tally's collector (tool.injection opens "
			  "it)"
			: "no other CUPTI client set to attach (torch.profiler inside the program "
			  "cannot be seen from here)");
}
