/* SPDX-License-Identifier: MIT */
/*
 * Where we are: what each kind of place (place.c finds it) means for the other gates here: whose
 * kernel and driver, which files survive, where the GPU comes from.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void check_where_container(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_where *w = doctor_where(ctx);

	finding_source(f, "/.dockerenv, /run/.containerenv, $APPTAINER_CONTAINER, $container, "
			  "/proc/1/cgroup");
	finding_why(f, "a container shares the host's kernel and driver (perf and counter "
		       "permissions are the host's) and its own files vanish with it");
	switch (w->container) {
	case CONTAINER_NONE:
		finding_set(f, TALLY_DOCTOR_OK, "no container seen: a host or a VM");
		return;
	case CONTAINER_DOCKER:
		finding_fix(f,
			    "give it the GPUs and a volume for the trace: `docker run --gpus all "
			    "-v $PWD:/work -w /work IMAGE tally record -o /work/trace ...`");
		break;
	case CONTAINER_PODMAN:
		finding_fix(f, "give it the GPUs and a volume for the trace: `podman run --device "
			       "nvidia.com/gpu=all -v $PWD:/work -w /work IMAGE tally record -o "
			       "/work/trace ...`");
		break;
	case CONTAINER_APPTAINER:
		finding_fix(f, "the image is read-only: run with `apptainer exec --nv --bind "
			       "$PWD IMAGE tally record -o $PWD/trace ...`");
		break;
	default:
		finding_fix(f, "write the trace to a mounted volume, not the container's own "
			       "filesystem");
		break;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%s", w->container_desc);
	f->advise = true;
}

void check_where_kubernetes(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_where *w = doctor_where(ctx);
	char ns[256] = "";
	const char *pod = doctor_getenv_set(ctx, "HOSTNAME");

	finding_source(f,
		       "$KUBERNETES_SERVICE_HOST, /var/run/secrets/kubernetes.io/serviceaccount");
	if (!w->kubernetes) {
		finding_set(f, TALLY_DOCTOR_SKIP, "not a Kubernetes pod");
		return;
	}
	if (doctor_read(ctx, "/var/run/secrets/kubernetes.io/serviceaccount/namespace", ns,
			sizeof(ns)) < 0)
		ns[0] = '\0';
	ns[strcspn(ns, "\n")] = '\0';
	finding_set(f, TALLY_DOCTOR_OK, "pod %s%s%s", pod ? pod : "(name unknown)",
		    ns[0] ? " in namespace " : "", ns);
	finding_why(f, "a pod's own filesystem goes with the pod; GPUs come only from "
		       "resources.limits");
	finding_fix(f, "write the trace to a PVC volumeMount; GPUs: resources.limits: "
		       "nvidia.com/gpu: 1; cuda/nvtx tracing needs no securityContext.capabilities "
		       "(add: [\"SYS_ADMIN\"] is for CPU sampling only)");
	f->advise = true;
}

void check_where_slurm(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_where *w = doctor_where(ctx);
	const char *job = doctor_getenv(ctx, "SLURM_JOB_ID");
	const char *rank = doctor_getenv_set(ctx, "SLURM_PROCID");
	const char *ntasks = doctor_getenv_set(ctx, "SLURM_NTASKS");
	const char *node = doctor_getenv_set(ctx, "SLURMD_NODENAME");

	finding_source(f, "$SLURM_JOB_ID, $SLURM_JOB_GPUS, $SLURM_GPUS_ON_NODE, "
			  "$CUDA_VISIBLE_DEVICES, /etc/slurm/slurm.conf, srun on $PATH");
	if (w->slurm == SLURM_NONE) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no Slurm here");
		return;
	}
	finding_why(f, "Slurm gives GPUs to job steps; a login node has none, and a recording made "
		       "there has nothing in it");
	finding_fix(f, "record inside the job, per rank: `srun --gpus=1 tally record -o "
		       "trace_%%q{SLURM_PROCID} ...`");
	switch (w->slurm) {
	case SLURM_NONE:
		break;
	case SLURM_JOB_GPU:
		finding_set(f, TALLY_DOCTOR_OK, "job %s, rank %s of %s%s%s, GPUs: %s", job,
			    rank ? rank : "?", ntasks ? ntasks : "?", node ? " on " : "",
			    node ? node : "", w->slurm_gpus);
		break;
	case SLURM_JOB_NOGPU:
		finding_set(f, TALLY_DOCTOR_WARN,
			    "job %s has no GPU allocated (no SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE or "
			    "CUDA_VISIBLE_DEVICES)",
			    job);
		finding_why(f, "a job without a GPU records nothing");
		finding_fix(f, "ask for one: `srun --gpus=1 tally record ...`, or `#SBATCH "
			       "--gpus=1` (`--gres=gpu:1` on older clusters)");
		break;
	case SLURM_LOGIN:
		finding_set(f, TALLY_DOCTOR_WARN,
			    "login node: Slurm is installed but this shell is not in a job, and "
			    "there is no GPU here");
		finding_fix(f, "login node: run inside `srun --gpus=1 ...`: `srun --gpus=1 tally "
			       "record -o trace_%%q{SLURM_PROCID} ...`");
		break;
	case SLURM_OUTSIDE_GPU:
		finding_set(f, TALLY_DOCTOR_OK, "not in a Slurm job; this node has a GPU (%s)",
			    w->gpu_hint_src);
		break;
	}
}

void check_where_serverless(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_where *w = doctor_where(ctx);

	finding_source(f, "$MODAL_TASK_ID, $RUNPOD_POD_ID, $K_SERVICE, $CLOUD_RUN_JOB, "
			  "$AWS_LAMBDA_FUNCTION_NAME");
	if (!w->serverless) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no serverless platform");
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%s (%s)", w->serverless, w->serverless_var);
	finding_why(f, "the platform starts the container: no --cap-add, no host access, the "
		       "container's files are gone when it stops");
	finding_fix(f, "cuda/nvtx tracing needs no privilege: put tally in the image and write "
		       "the trace to the platform's volume (on Modal, a modal.Volume mount), then "
		       "fetch it");
	f->advise = true;
}
