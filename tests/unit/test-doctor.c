/* SPDX-License-Identifier: MIT */
/*
 * tally doctor against fixture trees (tests/fixtures/doctor/<situation>/): every situation of the
 * issue, each asserting the status and the remedy it expects; then bad input - missing, empty,
 * unreadable, malformed and random files - which must give SKIP or WARN with a reason, never a
 * crash.  A fixture's environment is its .env, with a test's own variables put first (they win)
 * and "-NAME" entries taking NAME away.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "doctor.h"
#include "scratch.h"

#ifndef TALLY_DOCTOR_FIXTURES
#error "TALLY_DOCTOR_FIXTURES must name tests/fixtures/doctor"
#endif

#define MAX_ENV 256

struct run {
	struct tally_doctor_report rep;
	char *env[MAX_ENV];
	size_t nenv;
};

static void env_add(struct run *r, const char *entry)
{
	assert_true(r->nenv + 1 < MAX_ENV);
	r->env[r->nenv++] = strdup(entry);
	r->env[r->nenv] = NULL;
}

/* Is NAME (of "NAME=value") taken away or given by the test's own entries? */
static bool overridden(const char *entry, const char *const *extra)
{
	size_t n = strcspn(entry, "=");

	for (; extra && *extra; extra++) {
		const char *e = (*extra)[0] == '-' ? *extra + 1 : *extra;

		if (strncmp(e, entry, n) == 0 && (e[n] == '=' || e[n] == '\0'))
			return true;
	}
	return false;
}

static void load_env(struct run *r, const char *root, const char *const *extra)
{
	char path[8192], line[4096];
	const char *const *e;
	FILE *f;

	for (e = extra; e && *e; e++)
		if ((*e)[0] != '-')
			env_add(r, *e);
	snprintf(path, sizeof(path), "%s/.env", root);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] && line[0] != '#' && !overridden(line, extra))
			env_add(r, line);
	}
	if (f)
		fclose(f);
}

/* Pass as extra to let the library read the tree's .env itself. */
static const char *const tree_env[] = {NULL};

/* Run every check on a tree (a fixture name, or an absolute path). */
static void run_in(struct run *r, const char *tree, const char *pattern, unsigned flags,
		   const char *const *extra)
{
	char root[4096];
	struct tally_doctor_opts o = {0};

	memset(r, 0, sizeof(*r));
	if (tree[0] == '/')
		snprintf(root, sizeof(root), "%s", tree);
	else
		snprintf(root, sizeof(root), "%s/%s", TALLY_DOCTOR_FIXTURES, tree);
	if (extra != tree_env)
		load_env(r, root, extra);
	o.root = root;
	o.pattern = pattern;
	o.environ = extra != tree_env ? r->env : NULL;
	o.pid = 4242;
	o.flags = flags;
	o.collector_looked = "/nowhere/libtally.so";
	assert_int_equal(tally_doctor_run(&o, &r->rep), 0);
}

static void run_done(struct run *r)
{
	size_t i;

	tally_doctor_report_fini(&r->rep);
	for (i = 0; i < r->nenv; i++)
		free(r->env[i]);
}

static void show(const struct tally_doctor_finding *f)
{
	print_message("  %s %s: %s\n    why: %s\n    fix: %s\n",
		      tally_doctor_status_name(f->status), f->id, f->value, f->why, f->remedy);
}

/* The check ran, has status st, and its value and remedy hold the given texts (NULL: any). */
static const struct tally_doctor_finding *expect(struct run *r, const char *id,
						 enum tally_doctor_status st, const char *value,
						 const char *remedy)
{
	const struct tally_doctor_finding *f = tally_doctor_find(&r->rep, id);

	if (!f) {
		print_message("no finding %s\n", id);
		fail();
	}
	if (f->status != st || (value && !strstr(f->value, value)) ||
	    (remedy && !strstr(f->remedy, remedy))) {
		print_message("%s: want %s, value ~ \"%s\", remedy ~ \"%s\"; got:\n", id,
			      tally_doctor_status_name(st), value ? value : "*",
			      remedy ? remedy : "*");
		show(f);
		fail();
	}
	return f;
}

static void expect_why(const struct tally_doctor_finding *f, const char *why)
{
	if (!strstr(f->why, why)) {
		print_message("%s: why should hold \"%s\"\n", f->id, why);
		show(f);
		fail();
	}
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the baseline: a GPU host where everything needed is in place */

static void test_host_gpu(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "host-gpu", "/home/alice/proj/trace_%p", 0, NULL);
	assert_true(r.rep.can_record);
	assert_int_equal(r.rep.counts[TALLY_DOCTOR_FAIL], 0);
	assert_int_equal(r.rep.counts[TALLY_DOCTOR_WARN], 0);
	expect(&r, "card.driver", TALLY_DOCTOR_OK, "kernel module 580.159.03", NULL);
	expect(&r, "card.devices", TALLY_DOCTOR_OK, "GPU-2f1c6a3e-8b7d-4c1a-9e55-0d3b7a1c9f01",
	       NULL);
	expect(&r, "tool.collector", TALLY_DOCTOR_OK, "/opt/tally/lib/tally/libtally.so", NULL);
	expect(&r, "tool.versions", TALLY_DOCTOR_OK, "driver for CUDA 13.0", NULL);
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/home/alice/proj/trace_4242.tally", NULL);
	expect(&r, "children.names", TALLY_DOCTOR_OK, "%p", NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_OK, "host's filesystem", NULL);
	assert_string_equal(r.rep.output, "/home/alice/proj/trace_4242.tally");
	run_done(&r);
}

/* ---- CPU sampling: reported, never warned about or blocking */

static void test_paranoid(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "perf-paranoid-2", NULL, 0, NULL);
	f = expect(&r, "perf.paranoid", TALLY_DOCTOR_OK, "2: user-space CPU sampling allowed",
		   "perf_event_paranoid=2");
	assert_non_null(strstr(f->value, "not needed for cuda/nvtx tracing"));
	assert_non_null(strstr(f->value, "tally --sample native uses perf events"));
	assert_false(f->advise);
	expect_why(f, "need no perf permission");
	run_done(&r);

	run_in(&r, "perf-paranoid-3", NULL, 0, NULL);
	f = expect(&r, "perf.paranoid", TALLY_DOCTOR_OK, "3: perf_event_open closed",
		   "--cap-add=SYS_ADMIN");
	assert_non_null(strstr(f->value, "uses the timer fallback"));
	assert_non_null(strstr(f->value, "no kernel frames, no time off CPU"));
	assert_true(f->advise);
	assert_non_null(strstr(f->remedy, "nothing to do for tally"));
	assert_non_null(strstr(f->remedy, "--sample=none"));
	run_done(&r);

	run_in(&r, "perf-paranoid-4", NULL, 0, NULL);
	f = expect(&r, "perf.paranoid", TALLY_DOCTOR_OK, "4: perf_event_open closed",
		   "sysctl kernel.perf_event_paranoid=2");
	assert_true(f->advise);
	expect(&r, "perf.caps", TALLY_DOCTOR_OK, "neither CAP_SYS_ADMIN nor CAP_PERFMON",
	       "--cap-add=SYS_ADMIN");
	assert_true(tally_doctor_find(&r.rep, "perf.caps")->advise);
	run_done(&r);
}

static void test_caps_and_seccomp(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "caps-docker-default", NULL, 0, NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_OK, "CapEff 00000000a80425fb: neither",
	       "securityContext.capabilities.add: [\"SYS_ADMIN\"]");
	f = expect(&r, "perf.seccomp", TALLY_DOCTOR_OK, "2: filtered (1 filter(s))",
		   "--security-opt seccomp=unconfined");
	assert_true(f->advise);
	expect_why(f, "even with --cap-add");
	run_done(&r);

	run_in(&r, "caps-sys-admin", NULL, 0, NULL);
	f = expect(&r, "perf.caps", TALLY_DOCTOR_OK, "CAP_SYS_ADMIN, no CAP_PERFMON",
		   "--cap-add=PERFMON");
	assert_false(f->advise);
	assert_false(tally_doctor_find(&r.rep, "perf.paranoid")->advise); /* caps open the door */
	expect(&r, "counters.permission", TALLY_DOCTOR_OK, "this process has CAP_SYS_ADMIN", NULL);
	run_done(&r);

	run_in(&r, "caps-perfmon", NULL, 0, NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_OK, "CAP_PERFMON, no CAP_SYS_ADMIN", NULL);
	f = expect(&r, "perf.paranoid", TALLY_DOCTOR_OK, "3:", NULL);
	assert_non_null(strstr(f->value, "uses perf events")); /* CAP_PERFMON opens the door */
	assert_false(f->advise);
	f = expect(&r, "perf.seccomp", TALLY_DOCTOR_OK, "0: no seccomp filter", NULL);
	assert_false(f->advise);
	run_done(&r);
}

/* ---- GPU counters */

static void test_counters(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "counters-admin-only", NULL, 0, NULL);
	f = expect(&r, "counters.permission", TALLY_DOCTOR_OK,
		   "RmProfilingAdminOnly: 1: GPU counters for admins only (ERR_NVGPUCTRPERM",
		   "NVreg_RestrictProfilingToAdminUsers=0");
	assert_true(f->advise);
	assert_non_null(strstr(f->value, "not needed for cuda/nvtx tracing"));
	run_done(&r);

	run_in(&r, "counters-open", NULL, 0, NULL);
	f = expect(&r, "counters.permission", TALLY_DOCTOR_OK, "RmProfilingAdminOnly: 0",
		   "NVreg_RestrictProfilingToAdminUsers=0");
	assert_false(f->advise);
	run_done(&r);

	run_in(&r, "counters-missing", NULL, 0, NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_SKIP, "no /proc/driver/nvidia/params", NULL);
	run_done(&r);
}

/* ---- containers */

static void test_docker(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "docker", "/work/trace_%q{RANK}", 0, ENV("RANK=1"));
	/* the open kernel modules word it "Open Kernel Module for x86_64  VERSION" (seen on H200)
	 */
	expect(&r, "card.driver", TALLY_DOCTOR_OK, "kernel module 580.159.04", NULL);
	f = expect(&r, "where.container", TALLY_DOCTOR_OK, "docker (/.dockerenv)", "--gpus all");
	assert_non_null(strstr(f->remedy, "-v $PWD:/work"));
	expect(&r, "output.name", TALLY_DOCTOR_OK, "rank 1 (RANK) writes /work/trace_1.tally",
	       NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_OK,
	       "a mounted volume, a bind mount (ext4 /dev/sda2", NULL);
	expect(&r, "output.space", TALLY_DOCTOR_OK, "300 GiB free in /work (of 1 TiB)", NULL);
	assert_true(r.rep.can_record);
	run_done(&r);

	/* the same container, the trace written inside it */
	run_in(&r, "docker", "/out/trace", 0, NULL);
	f = expect(&r, "output.volume", TALLY_DOCTOR_FAIL,
		   "container's own root filesystem (overlay", "-v $PWD:/work");
	expect_why(f, "thrown away");
	assert_false(r.rep.can_record); /* tally record refuses it */
	run_done(&r);
}

static void test_docker_without_gpus(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "docker-no-gpus", NULL, 0, NULL);
	f = expect(&r, "card.driver", TALLY_DOCTOR_FAIL, "no CUDA driver library", "`--gpus all`");
	expect_why(f, "NVIDIA_VISIBLE_DEVICES=all");
	assert_false(r.rep.can_record);
	expect(&r, "card.devices", TALLY_DOCTOR_SKIP, NULL, NULL);
	run_done(&r);

	/* outside a container nothing reads NVIDIA_VISIBLE_DEVICES: no GPU is expected from it */
	run_in(&r, "counters-missing", NULL, 0, ENV("NVIDIA_VISIBLE_DEVICES=all"));
	expect(&r, "card.driver", TALLY_DOCTOR_WARN, "no CUDA driver", NULL);
	run_done(&r);
}

static void test_podman(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "podman", "/results/t", 0, NULL);
	expect(&r, "where.container", TALLY_DOCTOR_OK,
	       "podman (/run/.containerenv, engine podman-4.9.3)", "--device nvidia.com/gpu=all");
	expect(&r, "output.volume", TALLY_DOCTOR_FAIL, "fuse-overlayfs",
	       "podman run -v $PWD:/work");
	run_done(&r);
}

static void test_apptainer(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "apptainer", "/trace", 0, NULL);
	expect(&r, "where.container", TALLY_DOCTOR_OK,
	       "apptainer/singularity (APPTAINER_CONTAINER=/scratch/images/pytorch_25.06.sif)",
	       "apptainer exec --nv --bind $PWD");
	expect(&r, "output.dir", TALLY_DOCTOR_FAIL, "/ is on a read-only filesystem",
	       "--bind $PWD");
	assert_false(r.rep.can_record);
	run_done(&r);

	run_in(&r, "apptainer", "trace_%p", 0, NULL); /* relative: $PWD is the bound $HOME */
	expect(&r, "output.dir", TALLY_DOCTOR_OK, "/home/alice is writable", NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_OK, "a bind mount (nfs4 nas01:/export/home", NULL);
	run_done(&r);

	run_in(
	    &r, "apptainer", NULL, 0,
	    ENV("-APPTAINER_CONTAINER", "-APPTAINER_NAME", "SINGULARITY_CONTAINER=/img/old.simg"));
	expect(&r, "where.container", TALLY_DOCTOR_OK, "SINGULARITY_CONTAINER=/img/old.simg", NULL);
	run_done(&r);
}

static void test_kubernetes(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "kubernetes", "/data/trace", 0, NULL);
	f = expect(&r, "where.kubernetes", TALLY_DOCTOR_OK,
		   "pod trainer-7d9f8-0 in namespace ml-team", "securityContext.capabilities");
	assert_non_null(strstr(f->remedy, "nvidia.com/gpu: 1"));
	expect(&r, "where.container", TALLY_DOCTOR_OK, "\"kubepods\" in /proc/1/cgroup", NULL);
	expect(&r, "output.name", TALLY_DOCTOR_WARN, "the same name for all 4 ranks (WORLD_SIZE)",
	       "%q{RANK}");
	expect(&r, "output.volume", TALLY_DOCTOR_OK, "a mounted volume (nfs4", NULL);
	run_done(&r);

	run_in(&r, "kubernetes", "/app/trace_%q{RANK}", 0, NULL);
	expect(&r, "output.name", TALLY_DOCTOR_OK, "rank 0 (RANK) writes /app/trace_0.tally", NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_FAIL, "container's own root filesystem", "PVC");
	run_done(&r);
}

static void test_serverless(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "serverless-modal", "/vol/trace", 0, NULL);
	expect(&r, "where.serverless", TALLY_DOCTOR_OK, "Modal (MODAL_TASK_ID)", "modal.Volume");
	expect(&r, "output.volume", TALLY_DOCTOR_OK, "a mounted volume", NULL);
	run_done(&r);
	run_in(&r, "serverless-modal", "/root/trace", 0, NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_FAIL, "own root filesystem", "platform's volume");
	run_done(&r);
}

/* ---- Slurm */

static void test_slurm_job_gpu(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "slurm-job-gpu", "trace_%q{SLURM_PROCID}", 0, NULL);
	expect(&r, "where.slurm", TALLY_DOCTOR_OK,
	       "job 812345, rank 3 of 8 on gpu-node-07, GPUs: SLURM_JOB_GPUS=3,7", NULL);
	f = expect(
	    &r, "card.visible", TALLY_DOCTOR_OK,
	    "CUDA_VISIBLE_DEVICES=0,1: indices, renumbered here (the node's SLURM_JOB_GPUS=3,7)",
	    "CUDA_VISIBLE_DEVICES=GPU-<uuid>");
	assert_true(f->advise);
	assert_non_null(strstr(f->value, "CUDA 0=GPU-2f1c6a3e"));
	expect(&r, "output.name", TALLY_DOCTOR_OK,
	       "rank 3 (SLURM_PROCID) writes /scratch/alice/run/trace_3.tally", NULL);
	assert_true(r.rep.can_record);
	run_done(&r);
}

static void test_slurm_job_without_gpu(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "slurm-job-nogpu", NULL, 0, NULL);
	expect(&r, "where.slurm", TALLY_DOCTOR_WARN, "job 812346 has no GPU allocated",
	       "srun --gpus=1");
	f = expect(&r, "card.driver", TALLY_DOCTOR_WARN, "no CUDA driver",
		   "this Slurm job has no GPU: `srun --gpus=1 ...`");
	(void)f;
	assert_true(r.rep.can_record); /* nothing here says a GPU was expected */
	run_done(&r);
}

static void test_slurm_login_node(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "slurm-login", NULL, 0, NULL);
	expect(&r, "where.slurm", TALLY_DOCTOR_WARN, "login node",
	       "login node: run inside `srun --gpus=1 ...`");
	f = expect(&r, "card.driver", TALLY_DOCTOR_WARN, "no CUDA driver",
		   "login node: run inside `srun --gpus=1 ...`");
	expect_why(f, "login node");
	run_done(&r);

	/* not Slurm at all: the same missing driver says nothing of srun */
	run_in(&r, "counters-missing", NULL, 0, NULL);
	expect(&r, "where.slurm", TALLY_DOCTOR_SKIP, "no Slurm here", NULL);
	f = expect(&r, "card.driver", TALLY_DOCTOR_WARN, "no CUDA driver",
		   "`nvidia-smi` must work");
	run_done(&r);
}

/* ---- where the file lands */

static void test_tmp(void **state)
{
	const struct tally_doctor_finding *f;
	struct run r;

	(void)state;
	run_in(&r, "tmp", NULL, 0, NULL);
	f = expect(&r, "output.tmpdir", TALLY_DOCTOR_WARN, "/tmp is a 64 MiB tmpfs",
		   "export TMPDIR=/work/tmp");
	expect_why(f, "tally writes no temporary files");
	assert_false(f->needed);
	run_done(&r);

	run_in(&r, "tmp", "/tmp/trace", 0, NULL); /* the trace itself in the tmpfs */
	f = expect(&r, "output.volume", TALLY_DOCTOR_WARN, "/tmp is on tmpfs at /tmp, in memory",
		   "a directory on disk that you can write");
	expect_why(f, "gone when the machine stops");
	expect(&r, "output.space", TALLY_DOCTOR_WARN,
	       "nearly full: 60 MiB free in /tmp (of 64 MiB)", NULL);
	run_done(&r);

	run_in(&r, "tmp", NULL, 0, ENV("TMPDIR=/fasttmp"));
	expect(&r, "output.tmpdir", TALLY_DOCTOR_WARN, "TMPDIR=/fasttmp is mounted noexec",
	       "TMPDIR=");
	run_done(&r);

	run_in(&r, "tmp", NULL, 0, ENV("TMPDIR=/scratch/tmp"));
	expect(&r, "output.tmpdir", TALLY_DOCTOR_OK, "TMPDIR=/scratch/tmp: ext4, 900 GiB free",
	       NULL);
	run_done(&r);

	run_in(&r, "tmp", NULL, 0, ENV("TMPDIR=/nope"));
	expect(&r, "output.tmpdir", TALLY_DOCTOR_WARN, "TMPDIR=/nope does not exist", "TMPDIR=");
	run_done(&r);
}

static void test_output_dirs(void **state)
{
	static const struct {
		const char *pattern, *id;
		enum tally_doctor_status st;
		const char *value, *remedy;
	} cases[] = {
	    {"/ok/t", "output.dir", TALLY_DOCTOR_OK, "/ok is writable", NULL},
	    {"/ok/t", "output.space", TALLY_DOCTOR_OK, "100 GiB free in /ok (of 1 TiB)", NULL},
	    {"/ro/t", "output.dir", TALLY_DOCTOR_FAIL, "/ro is on a read-only filesystem",
	     "-o $HOME/traces/trace"},
	    {"/locked/t", "output.dir", TALLY_DOCTOR_FAIL, "/locked is not writable by this user",
	     "a directory of your own"},
	    {"/full/t", "output.space", TALLY_DOCTOR_FAIL, "only 4 MiB free in /full",
	     "write elsewhere"},
	    {"/nearly/t", "output.space", TALLY_DOCTOR_WARN, "nearly full: 200 MiB free in /nearly",
	     "write elsewhere"},
	    {"/noinodes/t", "output.space", TALLY_DOCTOR_FAIL, "no free inodes in /noinodes", NULL},
	    {"/missing/t", "output.dir", TALLY_DOCTOR_FAIL, "/missing does not exist",
	     "mkdir -p /missing"},
	    {"/missing/t", "output.space", TALLY_DOCTOR_SKIP, "see output.dir", NULL},
	    {"/afile/t", "output.dir", TALLY_DOCTOR_FAIL, "/afile is not a directory", NULL},
	    {"trace", "output.name", TALLY_DOCTOR_OK, "/ok/trace.tally", NULL}, /* $PWD=/ok */
	    {"sub/../trace", "output.name", TALLY_DOCTOR_OK, "/ok/trace.tally", NULL},
	    {"/ro/t", "output.volume", TALLY_DOCTOR_OK,
	     "/ro is on the host's filesystem (ext4 "
	     "/dev/sda2 at /ro)",
	     NULL},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r;

		run_in(&r, "output", cases[i].pattern, 0, NULL);
		expect(&r, cases[i].id, cases[i].st, cases[i].value, cases[i].remedy);
		assert_int_equal(r.rep.can_record, r.rep.counts[TALLY_DOCTOR_FAIL] == 0);
		run_done(&r);
	}
}

static void test_output_pattern(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "output", "/ok/trace%x", 0, NULL);
	expect(&r, "output.name", TALLY_DOCTOR_FAIL, "cannot expand", "%q{VAR}");
	expect(&r, "children.names", TALLY_DOCTOR_SKIP, NULL, NULL);
	run_done(&r);

	run_in(&r, "output", "/ok/rank%q{RANK}", 0, NULL);
	expect(&r, "output.name", TALLY_DOCTOR_WARN, "%q{RANK} is not set here",
	       "torchrun sets RANK");
	expect(&r, "children.names", TALLY_DOCTOR_OK, "neither %p nor %n",
	       "add %p: -o '/ok/rank%q{RANK}-%p'");
	run_done(&r);

	run_in(&r, "output", "/ok/job%q{SLURM_PROCID}.tally", 0,
	       ENV("SLURM_PROCID=5", "SLURM_NTASKS=16"));
	expect(&r, "output.name", TALLY_DOCTOR_OK, "rank 5 (SLURM_PROCID) writes /ok/job5.tally",
	       NULL);
	expect(&r, "children.names", TALLY_DOCTOR_OK, NULL,
	       "-o '/ok/job%q{SLURM_PROCID}-%p.tally'");
	run_done(&r);

	/* %n: the first number whose name is free, relative names from $PWD (/ok holds .keep) */
	run_in(&r, "output", "trace%n", 0, NULL);
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/ok/trace1.tally", NULL);
	run_done(&r);
	run_in(&r, "output", "/%n", 0, ENV("PWD=/"));
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/1.tally", NULL);
	run_done(&r);

	/* values from the environment cannot climb out of the directory */
	run_in(&r, "output", "/ok/t_%q{EVIL}", 0, ENV("EVIL=../../etc/x"));
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/ok/t__._.._etc_x.tally", NULL);
	expect(&r, "output.dir", TALLY_DOCTOR_OK, "/ok is writable", NULL);
	run_done(&r);
}

/* ---- the card: CUDA_VISIBLE_DEVICES as indices and as UUIDs */

static void test_visible_devices(void **state)
{
	static const struct {
		const char *tree, *cvd;
		enum tally_doctor_status st;
		const char *value, *remedy;
		bool advise;
	} cases[] = {
	    {"docker", "0,1", TALLY_DOCTOR_OK, "CUDA_VISIBLE_DEVICES=0,1: indices, renumbered here",
	     "CUDA_VISIBLE_DEVICES=GPU-<uuid> (`nvidia-smi -L`", true},
	    {"docker", "GPU-9b07d4e2-1f3a-4b6c-8d2e-7a5c3e9f1b02", TALLY_DOCTOR_OK,
	     "by UUID, the same in every container", NULL, false},
	    {"docker", "GPU-9b07d4e2", TALLY_DOCTOR_OK, "by UUID", NULL, false}, /* a prefix */
	    {"docker", "GPU-deadbeef-0000", TALLY_DOCTOR_WARN, "not the UUID of a GPU here",
	     "nvidia-smi -L", false},
	    {"docker", "5", TALLY_DOCTOR_WARN, "names index 5, but only 2 GPU(s) are here",
	     "CUDA_VISIBLE_DEVICES=GPU-<uuid>", false},
	    {"docker", "", TALLY_DOCTOR_WARN, "hides every GPU", "unset CUDA_VISIBLE_DEVICES",
	     false},
	    {"docker", "-1", TALLY_DOCTOR_WARN, "hides every GPU", NULL, false},
	    {"docker", "0,gpu1", TALLY_DOCTOR_WARN, "\"gpu1\" is neither an index nor a UUID", NULL,
	     false},
	    {"host-gpu", "1", TALLY_DOCTOR_OK, "CUDA_VISIBLE_DEVICES=1 (indices)", NULL, false},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char var[128];
		struct run r;

		snprintf(var, sizeof(var), "CUDA_VISIBLE_DEVICES=%s", cases[i].cvd);
		run_in(&r, cases[i].tree, NULL, 0, ENV(var));
		assert_int_equal(
		    expect(&r, "card.visible", cases[i].st, cases[i].value, cases[i].remedy)
			->advise,
		    cases[i].advise);
		run_done(&r);
	}
}

static void test_nvidia_visible_devices_void(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "docker", NULL, 0, ENV("NVIDIA_VISIBLE_DEVICES=void"));
	expect(&r, "card.visible", TALLY_DOCTOR_WARN, "NVIDIA_VISIBLE_DEVICES=void", "--gpus all");
	run_done(&r);
}

/* ---- the card and the tool: driver and CUPTI variants */

static void test_gpu_variants(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "gpu-driver-mismatch", NULL, 0, NULL);
	expect(&r, "card.driver", TALLY_DOCTOR_FAIL,
	       "cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "different versions");
	assert_false(r.rep.can_record);
	run_done(&r);

	run_in(&r, "gpu-old-driver", NULL, 0, NULL);
	expect(&r, "tool.versions", TALLY_DOCTOR_FAIL,
	       "CUPTI 13.0 needs a driver for CUDA 13; this driver is for CUDA 12.4", "r580");
	run_done(&r);

	run_in(&r, "gpu-no-cupti", NULL, 0, NULL);
	expect(&r, "tool.cupti", TALLY_DOCTOR_FAIL, "CUPTI not found", "TALLY_CUPTI_PATH");
	expect(&r, "tool.versions", TALLY_DOCTOR_SKIP, NULL, NULL);
	run_done(&r);

	run_in(&r, "gpu-cupti-elsewhere", NULL, 0, NULL);
	expect(&r, "tool.cupti", TALLY_DOCTOR_WARN, "where the collector does not look",
	       "export TALLY_CUPTI_PATH=/opt/cuda-13/extras/CUPTI/lib64/libcupti.so.13");
	assert_true(r.rep.can_record);
	run_done(&r);

	/* no GPU at all: a missing CUPTI is worth a warning, not a block */
	run_in(&r, "counters-missing", NULL, 0, NULL);
	expect(&r, "tool.cupti", TALLY_DOCTOR_WARN, "CUPTI not found", NULL);
	run_done(&r);

	run_in(&r, "host-gpu", NULL, TALLY_DOCTOR_NO_GPU_PROBE, NULL);
	expect(&r, "card.driver", TALLY_DOCTOR_SKIP, "not probed", NULL);
	expect(&r, "tool.cupti", TALLY_DOCTOR_SKIP, "not probed", NULL);
	run_done(&r);
}

static void test_other_subscribers(void **state)
{
	static const struct {
		const char *var, *value;
	} cases[] = {
	    {"CUDA_INJECTION64_PATH=/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/"
	     "libToolsInjection64.so",
	     "(Nsight Systems)"},
	    {"CUDA_INJECTION64_PATH=/home/alice/libmytracer.so", "(another tool)"},
	    {"NVTX_INJECTION64_PATH=/usr/local/cuda/lib64/libcupti.so", "NVTX_INJECTION64_PATH="},
	    {"NSYS_PROFILING_SESSION_ID=7", "running under Nsight Systems"},
	    {"LD_PRELOAD=/opt/nvidia/nsight-compute/2025.2/target/linux-desktop-glibc_2_11_3-x64/"
	     "libTreeLauncherTargetInjection.so",
	     "(Nsight Compute)"},
	    {"KINETO_USE_DAEMON=1", "Kineto"},
	};
	size_t i;
	struct run r;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_in(&r, "host-gpu", NULL, 0, ENV(cases[i].var));
		expect(&r, "tool.subscriber", TALLY_DOCTOR_WARN, cases[i].value,
		       "unset CUDA_INJECTION64_PATH");
		assert_true(r.rep.can_record);
		run_done(&r);
	}
	/* tally's own environment (tally env) is not a stranger */
	run_in(&r, "host-gpu", NULL, 0,
	       ENV("CUDA_INJECTION64_PATH=/opt/tally/lib/tally/libtally.so",
		   "NVTX_INJECTION64_PATH=/usr/local/cuda/lib64/libcupti.so.13",
		   "LD_PRELOAD=/opt/tally/lib/tally/libtally.so:/usr/lib/libncursesw.so.6"));
	expect(&r, "tool.subscriber", TALLY_DOCTOR_OK, "tally's collector", NULL);
	run_done(&r);
}

static void test_collector(void **state)
{
	struct run r;

	(void)state;
	run_in(&r, "host-gpu", NULL, 0, ENV("TALLY_COLLECTOR=/nope/libtally.so"));
	expect(&r, "tool.collector", TALLY_DOCTOR_FAIL, "cannot read /nope/libtally.so",
	       "TALLY_COLLECTOR");
	assert_false(r.rep.can_record);
	run_done(&r);

	run_in(&r, "host-gpu", NULL, 0, ENV("TALLY_COLLECTOR=/proc/driver/nvidia/version"));
	expect(&r, "tool.collector", TALLY_DOCTOR_FAIL, "is not a shared library", NULL);
	run_done(&r);

	run_in(&r, "host-gpu", NULL, 0, ENV("-TALLY_COLLECTOR"));
	expect(&r, "tool.collector", TALLY_DOCTOR_FAIL,
	       "libtally.so not found (last looked at /nowhere/libtally.so)", "cmake --build");
	run_done(&r);
}

/* ---- the API tally record uses */

static void test_blocking_api(void **state)
{
	char *text = NULL;
	size_t len = 0, i;
	struct run r;
	FILE *mem;

	(void)state;
	run_in(&r, "host-gpu", "/nope/t", TALLY_DOCTOR_BLOCKING_ONLY,
	       ENV("TALLY_COLLECTOR=/nope/libtally.so"));
	for (i = 0; i < r.rep.count; i++)
		assert_true(tally_doctor_check_blocks(r.rep.findings[i].id));
	assert_int_equal(r.rep.count, 10); /* card 2, tool 4, output 4 */
	assert_null(tally_doctor_find(&r.rep, "perf.paranoid"));
	mem = open_memstream(&text, &len);
	assert_true(tally_doctor_blocking(&r.rep, mem));
	fclose(mem);
	assert_non_null(
	    strstr(text, "  tool.collector: cannot read /nope/libtally.so: No such file"));
	assert_non_null(
	    strstr(text, "  output.dir: /nope does not exist\n    fix: mkdir -p /nope"));
	free(text);
	run_done(&r);

	run_in(&r, "host-gpu", NULL, TALLY_DOCTOR_BLOCKING_ONLY, NULL);
	assert_false(tally_doctor_blocking(&r.rep, NULL));
	run_done(&r);

	/* never blocking, whatever they see */
	assert_false(tally_doctor_check_blocks("perf.paranoid"));
	assert_false(tally_doctor_check_blocks("counters.permission"));
	assert_false(tally_doctor_check_blocks("output.tmpdir"));
	assert_false(tally_doctor_check_blocks("tool.subscriber"));
	assert_true(tally_doctor_check_blocks("card.driver"));
	{
		struct tally_doctor_opts o = {.root = "/nonexistent-root-for-tally"};
		struct tally_doctor_report rep;

		assert_int_equal(tally_doctor_run(&o, &rep), -ENOENT);
		assert_null(rep.findings);
	}
}

/* ---- bad input: a tree written at run time */

static const char *scratch; /* the tree of the test running: scratch_new() */

static void put(const char *rel, const void *data, size_t len)
{
	char path[16384], dir[16384], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", scratch, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (p = dir + strlen(scratch) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void puts_(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

static void test_missing_files(void **state)
{
	struct run r;

	(void)state;
	scratch = scratch_new();
	run_in(&r, scratch, "/t", 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_SKIP,
	       "/proc/sys/kernel/perf_event_paranoid does not exist here", NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_SKIP, "/proc/self/status does not exist here", NULL);
	expect(&r, "perf.seccomp", TALLY_DOCTOR_SKIP, NULL, NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_SKIP, NULL, NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_SKIP, "/proc/self/mountinfo does not exist", NULL);
	expect(&r, "where.container", TALLY_DOCTOR_OK, "no container seen", NULL);
	run_done(&r);
	scratch_remove();
}

static void test_empty_files(void **state)
{
	static const char *const files[] = {
	    "/proc/sys/kernel/perf_event_paranoid",
	    "/proc/self/status",
	    "/proc/self/mountinfo",
	    "/proc/driver/nvidia/params",
	    "/run/.containerenv",
	    "/proc/1/cgroup",
	    "/.gpu",
	    "/.statfs",
	    "/proc/driver/nvidia/version",
	};
	struct run r;
	size_t i;

	(void)state;
	scratch = scratch_new();
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		puts_(files[i], "");
	run_in(&r, scratch, "/t", 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_WARN,
	       "/proc/sys/kernel/perf_event_paranoid is empty", NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_WARN, "/proc/self/status is empty", NULL);
	expect(&r, "perf.seccomp", TALLY_DOCTOR_WARN, "is empty", NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_WARN, "/proc/driver/nvidia/params is empty",
	       NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_WARN, "mountinfo is malformed", NULL);
	expect(&r, "where.container", TALLY_DOCTOR_OK, "podman (/run/.containerenv)", NULL);
	expect(&r, "card.driver", TALLY_DOCTOR_WARN, "no CUDA driver", NULL);
	run_done(&r);
	scratch_remove();
}

static void test_malformed_files(void **state)
{
	struct run r;

	(void)state;
	scratch = scratch_new();
	puts_("/proc/sys/kernel/perf_event_paranoid", "two\n");
	puts_("/proc/self/status", "Name:\tx\nCapEff:\tnot-hex\nSeccomp:\t7\n");
	puts_("/proc/driver/nvidia/params", "RmProfilingAdminOnly: maybe\n");
	puts_("/proc/self/mountinfo", "this is not\na mount table\n- - -\n");
	puts_("/.gpu", "cuda\ninit=\ndevice=|\n==\ndriver=abc\n");
	puts_("/.statfs", "/ free=lots total=\n");
	run_in(&r, scratch, "/t", 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_WARN, "malformed value \"two\"", NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_WARN, "no readable CapEff line", NULL);
	expect(&r, "perf.seccomp", TALLY_DOCTOR_WARN, "malformed Seccomp value \"7\"", NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_WARN,
	       "malformed RmProfilingAdminOnly value \"maybe\"", NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_WARN, "mountinfo is malformed", NULL);
	run_done(&r);

	puts_("/proc/sys/kernel/perf_event_paranoid", "2 3\n");
	puts_("/proc/self/status", "Name:\tx\nCapEff:\t0000000000000000\n");
	puts_("/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\n");
	run_in(&r, scratch, "/t", 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_WARN, "malformed value \"2 3\"", NULL);
	expect(&r, "perf.seccomp", TALLY_DOCTOR_SKIP, "no Seccomp line", NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_WARN, "no RmProfilingAdminOnly line", NULL);
	run_done(&r);
	scratch_remove();
}

/* %n skips names already taken under the root, relative ones from $PWD included. */
static void test_pattern_sequence(void **state)
{
	struct run r;

	(void)state;
	scratch = scratch_new();
	puts_("/a/t1.tally", "");
	puts_("/a/t2.tally", "");
	run_in(&r, scratch, "/a/t%n", 0, NULL);
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/a/t3.tally", NULL);
	run_done(&r);
	run_in(&r, scratch, "t%n", 0, ENV("PWD=/a"));
	expect(&r, "output.name", TALLY_DOCTOR_OK, "/a/t3.tally", NULL);
	run_done(&r);
	scratch_remove();
}

/* A directory where a file should be cannot be read by anyone, root included. */
static void test_unreadable_files(void **state)
{
	static const char *const dirs[] = {"/proc/sys/kernel/perf_event_paranoid/x",
					   "/proc/self/status/x", "/proc/driver/nvidia/params/x",
					   "/proc/self/mountinfo/x"};
	char path[8192];
	struct run r;
	size_t i;

	(void)state;
	scratch = scratch_new();
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		puts_(dirs[i], "");
	run_in(&r, scratch, "/t", 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_SKIP,
	       "cannot read /proc/sys/kernel/perf_event_paranoid: Is a directory", NULL);
	expect(&r, "perf.caps", TALLY_DOCTOR_SKIP, "cannot read /proc/self/status", NULL);
	expect(&r, "counters.permission", TALLY_DOCTOR_SKIP,
	       "cannot read /proc/driver/nvidia/params: Is a directory", NULL);
	expect(&r, "output.volume", TALLY_DOCTOR_SKIP, "cannot read /proc/self/mountinfo", NULL);
	run_done(&r);
	scratch_remove();

	if (geteuid() == 0)
		return; /* root reads mode 000 files: the directory case above stands in */
	scratch = scratch_new();
	puts_("/proc/sys/kernel/perf_event_paranoid", "2\n");
	snprintf(path, sizeof(path), "%s/proc/sys/kernel/perf_event_paranoid", scratch);
	assert_int_equal(chmod(path, 0), 0);
	run_in(&r, scratch, NULL, 0, NULL);
	expect(&r, "perf.paranoid", TALLY_DOCTOR_SKIP, "Permission denied", NULL);
	run_done(&r);
	scratch_remove();
}

/* Random bytes (NULs, no newlines, over-long lines) in every file read: valid statuses only. */
static void test_random_files(void **state)
{
	static const char *const files[] = {
	    "/proc/sys/kernel/perf_event_paranoid",
	    "/proc/self/status",
	    "/proc/self/mountinfo",
	    "/proc/driver/nvidia/params",
	    "/proc/driver/nvidia/version",
	    "/run/.containerenv",
	    "/proc/1/cgroup",
	    "/.gpu",
	    "/.statfs",
	    "/.env",
	    "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
	};
	static unsigned char junk[200000];
	unsigned seed = 12345;
	int round;
	size_t i, j;

	(void)state;
	for (round = 0; round < 40; round++) {
		struct run r;

		scratch = scratch_new();
		for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			size_t len = (size_t)(rand_r(&seed) % (round & 1 ? 200000 : 300));

			for (j = 0; j < len; j++) {
				int k = rand_r(&seed) % 8;

				/* mostly text-like bytes, with the separators the parsers look for
				 */
				junk[j] = k == 0   ? (unsigned char)(rand_r(&seed) & 0xff)
					  : k == 1 ? "\n =:-/\\\t"[rand_r(&seed) % 9]
						   : (unsigned char)('0' + rand_r(&seed) % 75);
			}
			put(files[i], junk, len);
		}
		run_in(&r, scratch, round % 3 ? "/x/%q{RANK}_%p" : NULL, 0, tree_env);
		for (i = 0; i < r.rep.count; i++)
			assert_true((unsigned)r.rep.findings[i].status < TALLY_DOCTOR_STATUS_MAX);
		run_done(&r);
		scratch_remove();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_gpu),
	    cmocka_unit_test(test_paranoid),
	    cmocka_unit_test(test_caps_and_seccomp),
	    cmocka_unit_test(test_counters),
	    cmocka_unit_test(test_docker),
	    cmocka_unit_test(test_docker_without_gpus),
	    cmocka_unit_test(test_podman),
	    cmocka_unit_test(test_apptainer),
	    cmocka_unit_test(test_kubernetes),
	    cmocka_unit_test(test_serverless),
	    cmocka_unit_test(test_slurm_job_gpu),
	    cmocka_unit_test(test_slurm_job_without_gpu),
	    cmocka_unit_test(test_slurm_login_node),
	    cmocka_unit_test(test_tmp),
	    cmocka_unit_test(test_output_dirs),
	    cmocka_unit_test(test_output_pattern),
	    cmocka_unit_test(test_visible_devices),
	    cmocka_unit_test(test_nvidia_visible_devices_void),
	    cmocka_unit_test(test_gpu_variants),
	    cmocka_unit_test(test_other_subscribers),
	    cmocka_unit_test(test_collector),
	    cmocka_unit_test(test_blocking_api),
	    cmocka_unit_test(test_missing_files),
	    cmocka_unit_test(test_empty_files),
	    cmocka_unit_test(test_malformed_files),
	    cmocka_unit_test(test_pattern_sequence),
	    cmocka_unit_test(test_unreadable_files),
	    cmocka_unit_test(test_random_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
