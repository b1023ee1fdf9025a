/* SPDX-License-Identifier: MIT */
/*
 * What the doctor's check files share: the run context, the readers that go through the root
 * prefix (sys.c), the facts several checks need (computed once, on first use), and one function
 * per check.  Not installed; doctor.h is the interface.
 */
#ifndef TALLY_DOCTOR_INTERNAL_H
#define TALLY_DOCTOR_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "doctor.h"
#include "findings.h"

#define DOCTOR_MAX_GPUS 64
#define GIB		(1024ull * 1024 * 1024)
#define MIB		(1024ull * 1024)

/* What libcuda and libcupti answered (gpu.c), or what ROOT/.gpu says they would have. */
struct doctor_gpu {
	bool probed; /* false under TALLY_DOCTOR_NO_GPU_PROBE: nothing is known */
	bool cuda_loaded;
	char cuda_path[PATH_MAX];
	char cuda_error[256]; /* dlerror() when not loaded */
	int init_rc;	      /* cuInit's CUresult */
	char init_name[64];   /* "CUDA_ERROR_NO_DEVICE" */
	int driver_version;   /* cuDriverGetVersion: 13000 for CUDA 13.0 */
	int ndev;
	struct {
		char name[128];
		char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "" if unknown */
	} dev[DOCTOR_MAX_GPUS];
	bool cupti_loaded;
	bool cupti_default; /* found where libtally.so will look without being told */
	enum { CUPTI_FROM_SEARCH, CUPTI_FROM_ENV, CUPTI_FROM_BUNDLE } cupti_from;
	char cupti_path[PATH_MAX];
	char cupti_error[256];
	unsigned cupti_version; /* cuptiGetVersion */
};

enum doctor_container {
	CONTAINER_NONE,
	CONTAINER_DOCKER,
	CONTAINER_PODMAN,
	CONTAINER_APPTAINER,
	CONTAINER_CGROUP, /* seen only in /proc/1/cgroup: containerd, CRI-O, LXC */
	CONTAINER_OTHER,  /* $container says so: systemd-nspawn, lxc */
};

enum doctor_slurm {
	SLURM_NONE,	  /* no sign of Slurm */
	SLURM_JOB_GPU,	  /* inside a job with a GPU allocated */
	SLURM_JOB_NOGPU,  /* inside a job without one */
	SLURM_LOGIN,	  /* Slurm installed, not in a job, no GPU: a login node */
	SLURM_OUTSIDE_GPU /* Slurm installed, not in a job, but this node has a GPU */
};

struct doctor_where {
	enum doctor_container container;
	char container_desc[256]; /* "docker (/.dockerenv)" */
	bool kubernetes;
	enum doctor_slurm slurm;
	char slurm_gpus[128];	    /* what the job's variables say about GPUs */
	const char *serverless;	    /* platform name, NULL if none */
	const char *serverless_var; /* the variable that told */
	bool gpu_hint;		    /* evidence of a GPU apart from the driver */
	char gpu_hint_src[256];
};

/* The output pattern expanded here (outpath.c). */
struct doctor_out {
	bool has_pattern;
	int rc; /* tally_pattern_expand's */
	char err[256];
	char name[PATH_MAX]; /* the expanded name, absolute */
	char dir[PATH_MAX];  /* the directory it lands in, absolute and normalised */
	unsigned unset_vars;
	const char *rank_var; /* the variable that gives this process's rank, NULL: none */
	bool per_rank;	      /* the pattern gives each rank its own name (%p, %n, %q{rank}) */
	const char *rank;
};

/* One run of the doctor. */
struct doctor_ctx {
	const struct tally_doctor_opts *opts;
	char
	    root[PATH_MAX]; /* "" for the real system, else the fixture root without trailing '/' */
	bool fixture;
	char **env; /* NULL-terminated NAME=value; owned when env_owned; NULL: environ */
	bool env_owned;
	char cwd[PATH_MAX];

	bool where_done, gpu_done, out_done;
	struct doctor_where where;
	struct doctor_gpu gpu;
	struct doctor_out out;
};

/* sys.c: reading through the root and the environment */
int doctor_ctx_init(struct doctor_ctx *ctx, const struct tally_doctor_opts *opts);
void doctor_ctx_fini(struct doctor_ctx *ctx);
const char *doctor_getenv(const struct doctor_ctx *ctx, const char *name);
/* The environment as NAME=value strings, NULL-terminated. */
char *const *doctor_environ(const struct doctor_ctx *ctx);
/* Set and not empty. */
const char *doctor_getenv_set(const struct doctor_ctx *ctx, const char *name);
/* Root-prefixed path for reading. */
void doctor_path(const struct doctor_ctx *ctx, const char *path, char *out, size_t len);
/* Read a whole (small) file, NUL-terminated; returns its length or -errno. */
int doctor_read(const struct doctor_ctx *ctx, const char *path, char *buf, size_t len);
bool doctor_exists(const struct doctor_ctx *ctx, const char *path);
/* First line of a file starting with key (e.g. "CapEff:"); returns the rest, trimmed, or NULL. */
const char *doctor_field(const char *text, const char *key, char *out, size_t len);
/* Lexically normalised absolute path (no ".", "..", "//"); relative ones are taken from cwd. */
void doctor_normpath(const char *cwd, const char *in, char *out, size_t len);

struct doctor_fs {
	bool exists, is_dir, writable, readonly;
	uint64_t free_bytes, total_bytes, free_files; /* free_files UINT64_MAX: unknown */
	const char *source;			      /* "statvfs" or ".statfs" */
};
/* What statvfs()/access() say of path (real), or ROOT/.statfs (fixture).  0 or -errno. */
int doctor_statfs(const struct doctor_ctx *ctx, const char *path, struct doctor_fs *fs);

struct doctor_mount {
	char point[PATH_MAX];
	char fstype[64];
	char source[256];
	char opts[256];	      /* per-mount options: rw,nosuid,noexec,... */
	char super_opts[256]; /* per-superblock options: size=65536k,... */
	bool is_bind;	      /* mountinfo's root field is not "/": a bind of a subdirectory */
};
/*
 * The mount path lands on, from ROOT/proc/self/mountinfo.  0, or -errno: -EINVAL when no line
 * parses, -ENXIO when no mount covers path.
 */
int doctor_mount_of(const struct doctor_ctx *ctx, const char *path, struct doctor_mount *m);
bool doctor_mount_opt(const char *opts, const char *opt);

/* gpu.c, place.c, outpath.c: facts, computed on first use */
const struct doctor_gpu *doctor_gpu(struct doctor_ctx *ctx);
const struct doctor_where *doctor_where(struct doctor_ctx *ctx);
const struct doctor_out *doctor_out(struct doctor_ctx *ctx);
/* Is the GPU usable for recording: libcuda loaded, cuInit succeeded, a device seen? */
bool doctor_gpu_usable(struct doctor_ctx *ctx);
/* "13.0" from 13000 */
void doctor_cuda_version_str(int v, char *out, size_t len);
/* CUPTI API version to CUDA version (13000 for 130001, 12040 for 22), 0 if unknown. */
int doctor_cupti_cuda_version(unsigned cupti);

typedef void doctor_check_fn(struct doctor_ctx *ctx, struct tally_doctor_finding *f);

doctor_check_fn check_where_container, check_where_kubernetes, check_where_slurm,
    check_where_serverless;
doctor_check_fn check_card_driver, check_card_devices, check_card_visible;
doctor_check_fn check_tool_collector, check_tool_cupti, check_tool_versions, check_tool_subscriber,
    check_tool_injection;
doctor_check_fn check_perf_paranoid, check_perf_caps, check_perf_seccomp;
doctor_check_fn check_counters_permission;
doctor_check_fn check_children_follow, check_children_names;
doctor_check_fn check_output_name, check_output_dir, check_output_space, check_output_volume,
    check_output_tmpdir;

#endif
