/* SPDX-License-Identifier: MIT */
/*
 * Where we are, found once per run: a container (Docker, Podman, Apptainer, or one seen only in
 * the cgroup), a Kubernetes pod, a Slurm job or login node, a serverless GPU platform, and any
 * evidence of a GPU apart from the driver.  The checks of several gates read these facts.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool detect_apptainer(struct doctor_ctx *ctx, struct doctor_where *w)
{
	static const char *const vars[] = {"APPTAINER_CONTAINER", "SINGULARITY_CONTAINER",
					   "APPTAINER_NAME", "SINGULARITY_NAME"};
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = doctor_getenv_set(ctx, vars[i]);

		if (v) {
			snprintf(w->container_desc, sizeof(w->container_desc),
				 "apptainer/singularity (%s=%s)", vars[i], v);
			return true;
		}
	}
	if (doctor_exists(ctx, "/.singularity.d")) {
		snprintf(w->container_desc, sizeof(w->container_desc),
			 "apptainer/singularity (/.singularity.d)");
		return true;
	}
	return false;
}

/* Podman writes /run/.containerenv; privileged containers get engine="podman-X" and more in it. */
static bool detect_podman(struct doctor_ctx *ctx, struct doctor_where *w)
{
	char text[4096], engine[128];
	const char *e;

	if (!doctor_exists(ctx, "/run/.containerenv"))
		return false;
	if (doctor_read(ctx, "/run/.containerenv", text, sizeof(text)) > 0 &&
	    doctor_field(text, "engine=", engine, sizeof(engine))) {
		e = engine + (engine[0] == '"');
		snprintf(w->container_desc, sizeof(w->container_desc),
			 "podman (/run/.containerenv, engine %.*s)", (int)strcspn(e, "\""), e);
	} else {
		snprintf(w->container_desc, sizeof(w->container_desc),
			 "podman (/run/.containerenv)");
	}
	return true;
}

static enum doctor_container detect_other(struct doctor_ctx *ctx, struct doctor_where *w)
{
	static const char *const words[] = {"kubepods", "docker", "containerd",
					    "crio",	"libpod", "lxc"};
	const char *c = doctor_getenv_set(ctx, "container");
	char text[8192];
	size_t i;

	if (c) {
		snprintf(w->container_desc, sizeof(w->container_desc), "%s ($container)", c);
		return strcmp(c, "podman") == 0	  ? CONTAINER_PODMAN
		       : strcmp(c, "docker") == 0 ? CONTAINER_DOCKER
						  : CONTAINER_OTHER;
	}
	if (doctor_read(ctx, "/proc/1/cgroup", text, sizeof(text)) <= 0)
		return CONTAINER_NONE;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(text, words[i])) {
			snprintf(w->container_desc, sizeof(w->container_desc),
				 "a container (\"%s\" in /proc/1/cgroup)", words[i]);
			return CONTAINER_CGROUP;
		}
	return CONTAINER_NONE;
}

static void detect_container(struct doctor_ctx *ctx, struct doctor_where *w)
{
	if (detect_apptainer(ctx, w)) {
		w->container = CONTAINER_APPTAINER;
	} else if (detect_podman(ctx, w)) {
		w->container = CONTAINER_PODMAN;
	} else if (doctor_exists(ctx, "/.dockerenv")) {
		w->container = CONTAINER_DOCKER;
		snprintf(w->container_desc, sizeof(w->container_desc), "docker (/.dockerenv)");
	} else {
		w->container = detect_other(ctx, w);
	}
}

/* Any entry in a directory under the root, e.g. a GPU in /proc/driver/nvidia/gpus. */
static bool dir_has_entries(struct doctor_ctx *ctx, const char *dir, char *first, size_t len)
{
	char full[PATH_MAX + 64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	doctor_path(ctx, dir, full, sizeof(full));
	d = opendir(full);
	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(first, len, "%s/%s", dir, de->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/* Evidence of a GPU apart from the driver library: device nodes, the kernel module, the runtime. */
static void detect_gpu_hint(struct doctor_ctx *ctx, struct doctor_where *w)
{
	const char *nvd = doctor_getenv_set(ctx, "NVIDIA_VISIBLE_DEVICES");
	char first[PATH_MAX];

	w->gpu_hint = true;
	if (doctor_exists(ctx, "/dev/nvidia0") || doctor_exists(ctx, "/dev/nvidiactl")) {
		snprintf(w->gpu_hint_src, sizeof(w->gpu_hint_src), "/dev/nvidia* device nodes");
	} else if (dir_has_entries(ctx, "/proc/driver/nvidia/gpus", first, sizeof(first))) {
		snprintf(w->gpu_hint_src, sizeof(w->gpu_hint_src), "%.200s", first);
	} else if (nvd && strcmp(nvd, "void") != 0 && strcmp(nvd, "none") != 0 &&
		   w->container != CONTAINER_NONE) {
		/* Only a container runtime reads it: the GPUs this container was meant to get. */
		snprintf(w->gpu_hint_src, sizeof(w->gpu_hint_src), "NVIDIA_VISIBLE_DEVICES=%s",
			 nvd);
	} else if (w->slurm == SLURM_JOB_GPU) {
		snprintf(w->gpu_hint_src, sizeof(w->gpu_hint_src), "the Slurm job's %s",
			 w->slurm_gpus);
	} else {
		w->gpu_hint = false;
	}
}

static bool slurm_job_gpus(struct doctor_ctx *ctx, struct doctor_where *w)
{
	static const char *const vars[] = {
	    "SLURM_JOB_GPUS",	   "SLURM_STEP_GPUS",	  "SLURM_GPUS_ON_NODE",	 "SLURM_GPUS",
	    "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK", "CUDA_VISIBLE_DEVICES"};
	const char *tres = doctor_getenv_set(ctx, "SLURM_TRES_PER_TASK");
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = doctor_getenv_set(ctx, vars[i]);

		if (v && strcmp(v, "0") != 0) {
			snprintf(w->slurm_gpus, sizeof(w->slurm_gpus), "%s=%s", vars[i], v);
			return true;
		}
	}
	if (tres && strstr(tres, "gpu")) {
		snprintf(w->slurm_gpus, sizeof(w->slurm_gpus), "SLURM_TRES_PER_TASK=%s", tres);
		return true;
	}
	return false;
}

/* Is Slurm installed here?  Its configuration file, or srun on PATH. */
static bool slurm_installed(struct doctor_ctx *ctx)
{
	static const char *const confs[] = {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf",
					    "/usr/local/etc/slurm.conf"};
	const char *path = doctor_getenv_set(ctx, "PATH");
	char dirs[4096], *save = NULL, *d;
	size_t i;

	if (doctor_getenv_set(ctx, "SLURM_CONF"))
		return true;
	for (i = 0; i < sizeof(confs) / sizeof(confs[0]); i++)
		if (doctor_exists(ctx, confs[i]))
			return true;
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char srun[PATH_MAX];

		snprintf(srun, sizeof(srun), "%s/srun", d);
		if (d[0] == '/' && doctor_exists(ctx, srun))
			return true;
	}
	return false;
}

static const struct {
	const char *var, *name;
} serverless[] = {
    {"MODAL_TASK_ID", "Modal"},
    {"RUNPOD_POD_ID", "RunPod"},
    {"K_SERVICE", "Google Cloud Run"},
    {"CLOUD_RUN_JOB", "Google Cloud Run (job)"},
    {"AWS_LAMBDA_FUNCTION_NAME", "AWS Lambda"},
};

const struct doctor_where *doctor_where(struct doctor_ctx *ctx)
{
	struct doctor_where *w = &ctx->where;
	size_t i;

	if (ctx->where_done)
		return w;
	ctx->where_done = true;
	detect_container(ctx, w);
	w->kubernetes = doctor_getenv_set(ctx, "KUBERNETES_SERVICE_HOST") ||
			doctor_exists(ctx, "/var/run/secrets/kubernetes.io/serviceaccount");
	if (doctor_getenv_set(ctx, "SLURM_JOB_ID"))
		w->slurm = slurm_job_gpus(ctx, w) ? SLURM_JOB_GPU : SLURM_JOB_NOGPU;
	detect_gpu_hint(ctx, w);
	if (w->slurm == SLURM_NONE && slurm_installed(ctx))
		w->slurm = w->gpu_hint ? SLURM_OUTSIDE_GPU : SLURM_LOGIN;
	for (i = 0; i < sizeof(serverless) / sizeof(serverless[0]); i++)
		if (doctor_getenv_set(ctx, serverless[i].var)) {
			w->serverless = serverless[i].name;
			w->serverless_var = serverless[i].var;
			break;
		}
	return w;
}
