/* SPDX-License-Identifier: MIT */
/*
 * The card: does libcuda load, does cuInit work, which devices and UUIDs, and what
 * CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES make of them (numbers inside a container or job
 * are renumbered; UUIDs are not).
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The kernel module's version from /proc/driver/nvidia/version: the first word after "Kernel
 * Module" that starts with a digit ("... Kernel Module  580.95.05 ..." and the open modules'
 * "... Open Kernel Module for x86_64  580.159.04 ..."). */
static void module_version(struct doctor_ctx *ctx, char *out, size_t len)
{
	char text[1024], word[64], *p;
	int n = 0, i;

	out[0] = '\0';
	if (doctor_read(ctx, "/proc/driver/nvidia/version", text, sizeof(text)) <= 0)
		return;
	p = strstr(text, "Kernel Module");
	if (!p)
		return;
	p += strlen("Kernel Module");
	for (i = 0; i < 6 && sscanf(p, " %63s%n", word, &n) == 1; i++, p += n) {
		if (word[0] >= '0' && word[0] <= '9') {
			snprintf(out, len, "%s", word);
			return;
		}
	}
}

/* How to give this place a GPU and its driver, for the messages below. */
static const char *gpu_remedy(struct doctor_ctx *ctx)
{
	const struct doctor_where *w = doctor_where(ctx);

	if (w->slurm == SLURM_LOGIN)
		return "login node: run inside `srun --gpus=1 ...`";
	if (w->slurm == SLURM_JOB_NOGPU)
		return "this Slurm job has no GPU: `srun --gpus=1 ...` or `#SBATCH --gpus=1`";
	if (w->kubernetes)
		return "request one in the pod spec: resources.limits: nvidia.com/gpu: 1 (and "
		       "runtimeClassName: nvidia where the cluster needs it)";
	switch (w->container) {
	case CONTAINER_DOCKER:
		return "start the container with `--gpus all` (the NVIDIA Container Toolkit mounts "
		       "the host's driver, libcuda.so.1 included)";
	case CONTAINER_PODMAN:
		return "start the container with `--device nvidia.com/gpu=all` (CDI, from the "
		       "NVIDIA Container Toolkit)";
	case CONTAINER_APPTAINER:
		return "run with `apptainer exec --nv ...` (it binds the host's driver in)";
	case CONTAINER_NONE:
		return "run on a machine with an NVIDIA GPU, with the driver installed "
		       "(`nvidia-smi` must work)";
	default:
		return "give the container the GPUs and the host's driver "
		       "(NVIDIA Container Toolkit)";
	}
}

/* cuInit errors with a cause of their own. */
static const char *init_remedy(int rc)
{
	switch (rc) {
	case 34: /* CUDA_ERROR_STUB_LIBRARY */
		return "the link-time stub libcuda (cuda/lib64/stubs) was loaded instead of the "
		       "driver: take the stubs directory out of LD_LIBRARY_PATH";
	case 46: /* CUDA_ERROR_DEVICE_UNAVAILABLE */
		return "every GPU is busy or prohibited (compute mode EXCLUSIVE_PROCESS or "
		       "PROHIBITED): see `nvidia-smi -q -d COMPUTE`";
	case 802: /* CUDA_ERROR_SYSTEM_NOT_READY */
		return "the system is not ready for CUDA: on NVSwitch machines (HGX), start the "
		       "fabric manager (`systemctl start nvidia-fabricmanager`)";
	case 803: /* CUDA_ERROR_SYSTEM_DRIVER_MISMATCH */
		return "libcuda.so.1 and the nvidia kernel module are different versions: in a "
		       "container, do not ship libcuda in the image (let `--gpus all` mount the "
		       "host's); on a host, reboot or reload the module after a driver update";
	case 804: /* CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE */
		return "a CUDA forward-compatibility libcuda (cuda-compat) is on LD_LIBRARY_PATH "
		       "but this GPU does not support it: remove it from LD_LIBRARY_PATH";
	case 100: /* CUDA_ERROR_NO_DEVICE */
		return NULL;
	default:
		return "cuInit failed: check `nvidia-smi` and the kernel log (`dmesg | grep -i "
		       "nvrm`)";
	}
}

static void driver_not_loaded(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_where *w = doctor_where(ctx);
	const struct doctor_gpu *g = doctor_gpu(ctx);

	finding_fix(f, "%s", gpu_remedy(ctx));
	if (w->gpu_hint) {
		finding_set(f, TALLY_DOCTOR_FAIL, "no CUDA driver library: %s", g->cuda_error);
		finding_why(f,
			    "a GPU is expected here (%s) but libcuda.so.1 is missing: the program "
			    "cannot run CUDA and the trace would be empty",
			    w->gpu_hint_src);
		return;
	}
	finding_set(f, TALLY_DOCTOR_WARN, "no CUDA driver: %s", g->cuda_error);
	if (w->slurm == SLURM_LOGIN)
		finding_why(f, "this is a login node: no GPU, no driver, nothing to record here");
	else
		finding_why(f, "no GPU and no driver here (no /dev/nvidia*, no "
			       "/proc/driver/nvidia): nothing to record on this machine");
}

static void driver_init_failed(struct doctor_ctx *ctx, struct tally_doctor_finding *f,
			       const char *drv)
{
	const struct doctor_where *w = doctor_where(ctx);
	const struct doctor_gpu *g = doctor_gpu(ctx);
	const char *cvd = doctor_getenv(ctx, "CUDA_VISIBLE_DEVICES");
	const char *fix = init_remedy(g->init_rc);
	bool expected = w->gpu_hint || g->init_rc != 100;

	finding_set(f, expected ? TALLY_DOCTOR_FAIL : TALLY_DOCTOR_WARN, "cuInit failed: %s (%s)",
		    g->init_name, drv);
	finding_why(f, "%s",
		    expected ? "the driver is here but CUDA cannot start: the program "
			       "fails and the trace would be empty"
			     : "a driver library but no GPU: nothing to record here");
	if (fix)
		finding_fix(f, "%s", fix);
	else if (cvd)
		finding_fix(f,
			    "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU: unset it, or name GPUs "
			    "that exist here (see card.visible)",
			    cvd);
	else
		finding_fix(f, "%s", gpu_remedy(ctx));
}

void check_card_driver(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);
	char ver[32], mod[64], drv[160];

	finding_source(f, "dlopen(libcuda.so.1), cuInit, cuDriverGetVersion, "
			  "/proc/driver/nvidia/version");
	if (!g->probed) {
		finding_set(f, TALLY_DOCTOR_SKIP, "not probed (asked not to load the driver)");
		return;
	}
	if (!g->cuda_loaded) {
		driver_not_loaded(ctx, f);
		return;
	}
	module_version(ctx, mod, sizeof(mod));
	doctor_cuda_version_str(g->driver_version, ver, sizeof(ver));
	snprintf(drv, sizeof(drv), "driver for CUDA %s%s%s", ver, mod[0] ? ", kernel module " : "",
		 mod);
	if (g->init_rc != 0) {
		driver_init_failed(ctx, f, drv);
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%s (%s)", drv, g->cuda_path);
	finding_why(f, "CUPTI records through the driver: no driver, no trace");
}

void check_card_devices(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);
	size_t o = 0;
	int i;

	finding_source(f, "cuDeviceGetCount, cuDeviceGetName, cuDeviceGetUuid_v2");
	finding_why(f, "tally names each device in the trace by UUID, which is the same inside "
		       "and outside containers");
	if (!g->probed || !g->cuda_loaded || g->init_rc != 0) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no working driver to ask (see card.driver)");
		return;
	}
	if (g->ndev == 0) {
		finding_set(f, TALLY_DOCTOR_FAIL, "cuInit succeeded but CUDA sees no device");
		finding_fix(f, "%s", gpu_remedy(ctx));
		return;
	}
	o = (size_t)snprintf(f->value, sizeof(f->value), "%d:", g->ndev);
	for (i = 0; i < g->ndev && i < DOCTOR_MAX_GPUS && o < sizeof(f->value); i++)
		o += (size_t)snprintf(f->value + o, sizeof(f->value) - o, "%s %d %s %s",
				      i ? "," : "", i, g->dev[i].name,
				      g->dev[i].uuid[0] ? g->dev[i].uuid : "(no UUID)");
	f->status = TALLY_DOCTOR_OK;
}

/* GPUs given to this container or machine, from the kernel module's view; -1 if unknown. */
static int gpus_here(struct doctor_ctx *ctx)
{
	char full[PATH_MAX + 64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	doctor_path(ctx, "/proc/driver/nvidia/gpus", full, sizeof(full));
	d = opendir(full);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n ? n : -1;
}

static bool is_index(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Does uuid (or a unique prefix of one, as CUDA accepts) name a device the driver showed? */
static bool uuid_known(const struct doctor_gpu *g, const char *uuid)
{
	int i;

	for (i = 0; i < g->ndev && i < DOCTOR_MAX_GPUS; i++)
		if (g->dev[i].uuid[0] && strncmp(g->dev[i].uuid, uuid, strlen(uuid)) == 0)
			return true;
	return false;
}

struct cvd_scan {
	int indices, uuids, max_index;
	char bad[64];	  /* the first entry that is neither */
	char unknown[64]; /* the first UUID the driver did not show */
};

static void scan_cvd(const struct doctor_gpu *g, const char *cvd, struct cvd_scan *s)
{
	char copy[1024], *save = NULL, *tok;

	memset(s, 0, sizeof(*s));
	s->max_index = -1;
	snprintf(copy, sizeof(copy), "%s", cvd);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (is_index(tok)) {
			s->indices++;
			if (atoi(tok) > s->max_index)
				s->max_index = atoi(tok);
		} else if (strncmp(tok, "GPU-", 4) == 0 || strncmp(tok, "MIG-", 4) == 0) {
			s->uuids++;
			if (g->ndev && strncmp(tok, "GPU-", 4) == 0 && !uuid_known(g, tok) &&
			    !s->unknown[0])
				snprintf(s->unknown, sizeof(s->unknown), "%s", tok);
		} else if (!s->bad[0]) {
			snprintf(s->bad, sizeof(s->bad), "%s", tok);
		}
	}
}

/* "0=GPU-1234abcd, 1=GPU-..." from what the driver showed, for the value line. */
static void cuda_map(const struct doctor_gpu *g, char *out, size_t len)
{
	size_t o = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < g->ndev && i < DOCTOR_MAX_GPUS && o < len; i++)
		if (g->dev[i].uuid[0])
			o += (size_t)snprintf(out + o, len - o, "%s%d=%.12s...",
					      i ? ", " : "; CUDA ", i, g->dev[i].uuid);
}

static void visible_indices(struct doctor_ctx *ctx, struct tally_doctor_finding *f, const char *cvd,
			    const struct cvd_scan *s)
{
	const struct doctor_where *w = doctor_where(ctx);
	const char *job_gpus = doctor_getenv_set(ctx, "SLURM_JOB_GPUS");
	int here = gpus_here(ctx);
	char map[256];

	cuda_map(doctor_gpu(ctx), map, sizeof(map));
	finding_fix(f,
		    "to name the same GPU in every container, job and host, use UUIDs: "
		    "CUDA_VISIBLE_DEVICES=GPU-<uuid> (`nvidia-smi -L` lists them); tally's trace "
		    "names each device by UUID");
	if (here > 0 && s->max_index >= here) {
		finding_set(f, TALLY_DOCTOR_WARN,
			    "CUDA_VISIBLE_DEVICES=%s names index %d, but only %d GPU(s) are here "
			    "(/proc/driver/nvidia/gpus)",
			    cvd, s->max_index, here);
		finding_why(f,
			    "numbers are renumbered from 0 inside containers and jobs: the host's "
			    "GPU 3 may be 0 here, and CUDA stops at the first index that does "
			    "not exist");
		return;
	}
	if (w->container == CONTAINER_NONE && w->slurm != SLURM_JOB_GPU && !w->kubernetes) {
		finding_set(f, TALLY_DOCTOR_OK, "CUDA_VISIBLE_DEVICES=%s (indices)%s", cvd, map);
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "CUDA_VISIBLE_DEVICES=%s: indices, renumbered here%s%s%s",
		    cvd, job_gpus ? " (the node's SLURM_JOB_GPUS=" : "", job_gpus ? job_gpus : "",
		    job_gpus ? ")" : "");
	snprintf(f->value + strlen(f->value), sizeof(f->value) - strlen(f->value), "%s", map);
	finding_why(f, "inside a container or job, GPU numbers start again at 0: index 0 here is "
		       "not the host's GPU 0");
	f->advise = true;
}

static void visible_unset(struct doctor_ctx *ctx, struct tally_doctor_finding *f, const char *nvd)
{
	const struct doctor_gpu *g = doctor_gpu(ctx);

	if (g->ndev)
		finding_set(f, TALLY_DOCTOR_OK,
			    "CUDA_VISIBLE_DEVICES unset: CUDA sees all %d GPU(s) given to this "
			    "process",
			    g->ndev);
	else
		finding_set(f, TALLY_DOCTOR_OK, "CUDA_VISIBLE_DEVICES unset");
	if (nvd)
		snprintf(f->value + strlen(f->value), sizeof(f->value) - strlen(f->value),
			 "; NVIDIA_VISIBLE_DEVICES=%s", nvd);
}

void check_card_visible(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const char *cvd = doctor_getenv(ctx, "CUDA_VISIBLE_DEVICES");
	const char *nvd = doctor_getenv_set(ctx, "NVIDIA_VISIBLE_DEVICES");
	struct cvd_scan s;

	finding_source(f, "$CUDA_VISIBLE_DEVICES, $NVIDIA_VISIBLE_DEVICES, "
			  "/proc/driver/nvidia/gpus");
	finding_why(f, "CUDA_VISIBLE_DEVICES picks and renumbers the GPUs CUDA sees");
	if (nvd && (strcmp(nvd, "void") == 0 || strcmp(nvd, "none") == 0)) {
		finding_set(f, TALLY_DOCTOR_WARN,
			    "NVIDIA_VISIBLE_DEVICES=%s: the container was given no GPU", nvd);
		finding_fix(f, "%s", gpu_remedy(ctx));
		return;
	}
	if (!cvd) {
		visible_unset(ctx, f, nvd);
		return;
	}
	if (!*cvd || strcmp(cvd, "-1") == 0 || strcmp(cvd, "NoDevFiles") == 0) {
		finding_set(f, TALLY_DOCTOR_WARN, "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU",
			    cvd);
		finding_fix(f, "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (UUIDs from "
			       "`nvidia-smi -L`)");
		return;
	}
	scan_cvd(doctor_gpu(ctx), cvd, &s);
	if (s.bad[0] || s.unknown[0]) {
		finding_set(f, TALLY_DOCTOR_WARN, "CUDA_VISIBLE_DEVICES=%s: \"%s\" is %s", cvd,
			    s.bad[0] ? s.bad : s.unknown,
			    s.bad[0] ? "neither an index nor a UUID"
				     : "not the UUID of a GPU here");
		finding_why(f, "CUDA ignores an entry it cannot match, and every entry after it");
		finding_fix(f, "list UUIDs exactly as `nvidia-smi -L` prints them (GPU-...), or "
			       "this container's own indices");
		return;
	}
	if (s.indices) {
		visible_indices(ctx, f, cvd, &s);
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK,
		    "CUDA_VISIBLE_DEVICES=%s: by UUID, the same in every container, job and host",
		    cvd);
}
