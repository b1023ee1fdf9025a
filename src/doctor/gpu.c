/* SPDX-License-Identifier: MIT */
/*
 * What the driver and CUPTI say, asked at run time through dlopen, so that tally has no link-time
 * CUDA dependency and the doctor runs (and says something useful) where there is no GPU or no
 * driver.  Under a fixture root the answers come from ROOT/.gpu instead (docs/doctor.md).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti_version.h> /* CUPTI_API_VERSION: the CUPTI libtally.so is built against */

#include "internal.h"

/* The driver API, as far as the doctor uses it (cuda.h's types, without linking libcuda). */
typedef int cu_result;
typedef cu_result (*cu_init_fn)(unsigned flags);
typedef cu_result (*cu_int_fn)(int *v);
typedef cu_result (*cu_device_get_fn)(int *dev, int ordinal);
typedef cu_result (*cu_name_fn)(char *name, int len, int dev);
typedef cu_result (*cu_uuid_fn)(unsigned char uuid[16], int dev);
typedef cu_result (*cu_error_name_fn)(cu_result rc, const char **name);
typedef int (*cupti_version_fn)(uint32_t *version);

#define STR_(x) #x
#define STR(x)	STR_(x)

void doctor_cuda_version_str(int v, char *out, size_t len)
{
	snprintf(out, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

int doctor_cupti_cuda_version(unsigned v)
{
	/* Before CUDA 13 the API version was a small counter (cupti_version.h lists them). */
	static const int old[][2] = {
	    {12, 10000}, {13, 11000}, {14, 11010}, {15, 11020}, {16, 11050}, {17, 11060},
	    {18, 11080}, {19, 12000}, {20, 12020}, {21, 12030}, {22, 12040}, {23, 12050},
	    {24, 12060}, {25, 12070}, {26, 12080}, {27, 12090}, {28, 12090},
	};
	size_t i;

	if (v >= 10000) /* xxyyzz: CUDA xx.yy */
		return (int)(v / 10000) * 1000 + (int)((v / 100) % 100) * 10;
	for (i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		if ((unsigned)old[i][0] == v)
			return old[i][1];
	return 0;
}

static void uuid_str(const unsigned char u[16], char *out, size_t len)
{
	snprintf(out, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static void loaded_path(void *h, char *out, size_t len, const char *fallback)
{
	struct link_map *lm = NULL;

	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
		snprintf(out, len, "%s", lm->l_name);
	else
		snprintf(out, len, "%s", fallback);
}

/*
 * cuInit reads CUDA_INJECTION64_PATH: were it set (by `tally env`, nsys, ...), the doctor itself
 * would load that injection and be traced.  Hide it for the call, then put it back.
 */
static cu_result init_uninjected(cu_init_fn init)
{
	const char *v = getenv("CUDA_INJECTION64_PATH");
	char *saved = v ? strdup(v) : NULL;
	cu_result rc;

	if (v)
		unsetenv("CUDA_INJECTION64_PATH");
	rc = init(0);
	if (saved)
		setenv("CUDA_INJECTION64_PATH", saved, 1);
	free(saved);
	return rc;
}

static void probe_devices(void *h, struct doctor_gpu *g)
{
	cu_int_fn count = (cu_int_fn)dlsym(h, "cuDeviceGetCount");
	cu_device_get_fn get = (cu_device_get_fn)dlsym(h, "cuDeviceGet");
	cu_name_fn name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
	cu_uuid_fn uuid = (cu_uuid_fn)dlsym(h, "cuDeviceGetUuid_v2");
	int n = 0, i;

	if (!uuid)
		uuid = (cu_uuid_fn)dlsym(h, "cuDeviceGetUuid");
	if (!count || count(&n) != 0)
		return;
	g->ndev = n;
	for (i = 0; i < n && i < DOCTOR_MAX_GPUS && get && name; i++) {
		unsigned char u[16];
		int dev;

		if (get(&dev, i) != 0)
			continue;
		if (name(g->dev[i].name, (int)sizeof(g->dev[i].name), dev) != 0)
			snprintf(g->dev[i].name, sizeof(g->dev[i].name), "?");
		if (uuid && uuid(u, dev) == 0)
			uuid_str(u, g->dev[i].uuid, sizeof(g->dev[i].uuid));
	}
}

static void probe_cuda(struct doctor_gpu *g)
{
	cu_error_name_fn err_name;
	cu_int_fn version;
	cu_init_fn init;
	const char *nm = NULL;
	void *h;

	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(g->cuda_error, sizeof(g->cuda_error), "%s", dlerror());
		return;
	}
	/* libcuda stays loaded: unloading the driver after cuInit is not supported. */
	g->cuda_loaded = true;
	loaded_path(h, g->cuda_path, sizeof(g->cuda_path), "libcuda.so.1");
	init = (cu_init_fn)dlsym(h, "cuInit");
	version = (cu_int_fn)dlsym(h, "cuDriverGetVersion");
	err_name = (cu_error_name_fn)dlsym(h, "cuGetErrorName");
	if (version)
		version(&g->driver_version);
	g->init_rc = init ? init_uninjected(init) : -1;
	if (g->init_rc != 0 && err_name && err_name(g->init_rc, &nm) == 0 && nm)
		snprintf(g->init_name, sizeof(g->init_name), "%s", nm);
	else if (g->init_rc != 0)
		snprintf(g->init_name, sizeof(g->init_name), "CUresult %d", g->init_rc);
	if (g->init_rc == 0)
		probe_devices(h, g);
}

static bool try_cupti(struct doctor_gpu *g, const char *name, bool by_search)
{
	cupti_version_fn version;
	/*
	 * RTLD_NODELETE: libcupti keeps static allocations of its own (its C++ runtime's);
	 * unloaded, they would look leaked, and it costs nothing to keep the library mapped.
	 */
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

	if (!h) {
		if (!g->cupti_error[0])
			snprintf(g->cupti_error, sizeof(g->cupti_error), "%s", dlerror());
		return false;
	}
	g->cupti_loaded = true;
	g->cupti_default = by_search;
	loaded_path(h, g->cupti_path, sizeof(g->cupti_path), name);
	version = (cupti_version_fn)dlsym(h, "cuptiGetVersion");
	if (version)
		version(&g->cupti_version);
	dlclose(h);
	return true;
}

/* libcupti beside the collector: what a bundle made with `make dist WITH_CUPTI=1` carries. */
static bool try_bundled(struct doctor_gpu *g, const char *collector, const char *soname)
{
	char path[PATH_MAX], *slash;

	if (!collector)
		return false;
	snprintf(path, sizeof(path), "%s", collector);
	slash = strrchr(path, '/');
	if (!slash)
		return false;
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "%s", soname);
	return access(path, R_OK) == 0 && try_cupti(g, path, true);
}

/*
 * The CUPTI the collector will load (src/collector/cupti-api.c), in its order: $TALLY_CUPTI_PATH,
 * the bundle's, the loader's search, then the usual CUDA places.  A program that loads its own
 * CUPTI (PyTorch, JAX) is not running yet: check_tool_cupti says it would win.
 */
static void probe_cupti(struct doctor_gpu *g, const char *cuda_home, const char *env_path,
			const char *collector)
{
	const char *soname = "libcupti.so." STR(TALLY_CUPTI_MAJOR);
	static const char *const dirs[] = {"/usr/local/cuda/lib64",
					   "/usr/local/cuda/extras/CUPTI/lib64"};
	char path[PATH_MAX];
	size_t i;

	if (env_path && try_cupti(g, env_path, true)) {
		g->cupti_from = CUPTI_FROM_ENV;
		return;
	}
	if (try_bundled(g, collector, soname)) {
		g->cupti_from = CUPTI_FROM_BUNDLE;
		return;
	}
	if (try_cupti(g, soname, true) || try_cupti(g, "libcupti.so", true))
		return;
	/* the collector looks in $CUDA_HOME/lib64 and /usr/local/cuda's itself; not in
	 * $CUDA_HOME/extras/CUPTI/lib64 */
	if (cuda_home) {
		snprintf(path, sizeof(path), "%s/lib64/%s", cuda_home, soname);
		if (try_cupti(g, path, true))
			return;
		snprintf(path, sizeof(path), "%s/extras/CUPTI/lib64/%s", cuda_home, soname);
		if (try_cupti(g, path, false))
			return;
	}
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], soname);
		if (try_cupti(g, path, true))
			return;
	}
}

/* ROOT/.gpu: key=value lines standing in for the driver's and CUPTI's answers. */
static void fixture_line(struct doctor_gpu *g, const char *key, const char *v)
{
	if (strcmp(key, "cuda") == 0) {
		g->cuda_loaded = true;
		snprintf(g->cuda_path, sizeof(g->cuda_path), "%s", v);
	} else if (strcmp(key, "cuda_error") == 0) {
		snprintf(g->cuda_error, sizeof(g->cuda_error), "%s", v);
	} else if (strcmp(key, "init") == 0) {
		g->init_rc = atoi(v);
		if (strchr(v, ' '))
			snprintf(g->init_name, sizeof(g->init_name), "%s", strchr(v, ' ') + 1);
	} else if (strcmp(key, "driver") == 0) {
		g->driver_version = atoi(v);
	} else if (strcmp(key, "device") == 0 && g->ndev < DOCTOR_MAX_GPUS) {
		const char *bar = strchr(v, '|');

		snprintf(g->dev[g->ndev].name, sizeof(g->dev[0].name), "%.*s",
			 bar ? (int)(bar - v) : (int)strlen(v), v);
		snprintf(g->dev[g->ndev].uuid, sizeof(g->dev[0].uuid), "%s", bar ? bar + 1 : "");
		g->ndev++;
	} else if (strcmp(key, "cupti") == 0) {
		g->cupti_loaded = true;
		snprintf(g->cupti_path, sizeof(g->cupti_path), "%s", v);
	} else if (strcmp(key, "cupti_default") == 0) {
		g->cupti_default = atoi(v) != 0;
	} else if (strcmp(key, "cupti_version") == 0) {
		g->cupti_version = (unsigned)strtoul(v, NULL, 10);
	} else if (strcmp(key, "cupti_error") == 0) {
		snprintf(g->cupti_error, sizeof(g->cupti_error), "%s", v);
	}
}

static void probe_fixture(const struct doctor_ctx *ctx, struct doctor_gpu *g)
{
	char text[8192], *save = NULL, *line;

	if (doctor_read(ctx, "/.gpu", text, sizeof(text)) < 0)
		text[0] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (line[0] == '#' || !eq)
			continue;
		*eq = '\0';
		fixture_line(g, line, eq + 1);
	}
	if (!g->cuda_loaded && !g->cuda_error[0])
		snprintf(g->cuda_error, sizeof(g->cuda_error),
			 "libcuda.so.1: cannot open shared object file: No such file or directory");
	if (!g->cupti_loaded && !g->cupti_error[0])
		snprintf(g->cupti_error, sizeof(g->cupti_error),
			 "libcupti.so." STR(TALLY_CUPTI_MAJOR) ": cannot open shared object file");
}

const struct doctor_gpu *doctor_gpu(struct doctor_ctx *ctx)
{
	struct doctor_gpu *g = &ctx->gpu;

	if (ctx->gpu_done)
		return g;
	ctx->gpu_done = true;
	memset(g, 0, sizeof(*g));
	if (ctx->opts->flags & TALLY_DOCTOR_NO_GPU_PROBE)
		return g;
	g->probed = true;
	if (ctx->fixture) {
		probe_fixture(ctx, g);
		return g;
	}
	probe_cuda(g);
	probe_cupti(
	    g, doctor_getenv_set(ctx, "CUDA_HOME"), doctor_getenv_set(ctx, "TALLY_CUPTI_PATH"),
	    doctor_getenv_set(ctx, "TALLY_COLLECTOR") ? doctor_getenv_set(ctx, "TALLY_COLLECTOR")
						      : ctx->opts->collector);
	return g;
}

bool doctor_gpu_usable(struct doctor_ctx *ctx)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);

	return g->cuda_loaded && g->init_rc == 0 && g->ndev > 0;
}
