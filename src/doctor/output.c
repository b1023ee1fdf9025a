/* SPDX-License-Identifier: MIT */
/*
 * Where the file lands: the name the output pattern gives this process (outpath.c expands it),
 * the directory it names - there, writable, room left, on a volume that outlives the container -
 * and the temporary directory the program will use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "units.h"

#define SPACE_FAIL (16 * MIB) /* less than this cannot hold a useful trace */
#define SPACE_WARN (1 * GIB)  /* a long or busy recording can need hundreds of MiB */
#define TMP_SMALL  (1 * GIB)

static const char *const size_vars[] = {"SLURM_NTASKS", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
					"PMI_SIZE"};

/* The first %q{VAR} of the pattern that is unset here, copied to out; false if none. */
static bool unset_var(struct doctor_ctx *ctx, char *out, size_t len)
{
	const char *p = ctx->opts->pattern;

	while ((p = strstr(p, "%q{"))) {
		const char *close = strchr(p + 3, '}');

		if (!close)
			break;
		snprintf(out, len, "%.*s", (int)(close - (p + 3)), p + 3);
		if (!doctor_getenv(ctx, out))
			return true;
		p = close;
	}
	return false;
}

/* How many ranks, when a launcher says so; 0 when none does. */
static long world_size(struct doctor_ctx *ctx, const char **var)
{
	size_t i;

	for (i = 0; i < sizeof(size_vars) / sizeof(size_vars[0]); i++) {
		const char *v = doctor_getenv_set(ctx, size_vars[i]);

		if (v) {
			*var = size_vars[i];
			return atol(v);
		}
	}
	return 0;
}

void check_output_name(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_out *o = doctor_out(ctx);
	const char *size_var = NULL;
	long ranks = world_size(ctx, &size_var);
	char var[128];

	finding_source(f, "-o pattern: %%p pid, %%h host, %%n sequence, %%q{VAR} environment");
	finding_why(f, "every rank and process needs a name of its own, or the traces overwrite "
		       "each other");
	finding_fix(f, "name each rank: -o 'trace_%%q{%s}' (or add %%p)",
		    o->rank_var ? o->rank_var : "SLURM_PROCID");
	if (!o->has_pattern) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no -o given: checking the current directory, %s",
			    o->dir);
		return;
	}
	if (o->rc < 0) {
		finding_set(f, TALLY_DOCTOR_FAIL, "cannot expand \"%s\": %s", ctx->opts->pattern,
			    o->err);
		finding_fix(f, "use %%p %%h %%n %%q{VAR} and %%%%, as in -o "
			       "'trace_%%q{SLURM_PROCID}'");
		return;
	}
	if (unset_var(ctx, var, sizeof(var))) {
		finding_set(f, TALLY_DOCTOR_WARN,
			    "%s (%%q{%s} is not set here, so it expands to nothing)", o->name, var);
		finding_fix(f,
			    "run under the launcher that sets %s (torchrun sets RANK, srun "
			    "SLURM_PROCID, mpirun OMPI_COMM_WORLD_RANK), or name a variable "
			    "set here",
			    var);
		return;
	}
	if (ranks > 1 && !o->per_rank) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s: the same name for all %ld ranks (%s)",
			    o->name, ranks, size_var);
		return;
	}
	if (o->rank_var)
		finding_set(f, TALLY_DOCTOR_OK, "rank %s (%s) writes %s", o->rank, o->rank_var,
			    o->name);
	else
		finding_set(f, TALLY_DOCTOR_OK, "%s", o->name);
}

/* What to do when the trace would land in the wrong place, for this kind of place. */
static const char *volume_fix(struct doctor_ctx *ctx)
{
	const struct doctor_where *w = doctor_where(ctx);

	if (w->kubernetes)
		return "mount a PVC (volumeMounts) and write there: -o /mnt/pvc/trace_%q{RANK}";
	if (w->serverless)
		return "write to the platform's volume (on Modal, a modal.Volume mount)";
	if (w->container == CONTAINER_APPTAINER)
		return "write to a bound directory: `apptainer exec --nv --bind $PWD ...` and -o "
		       "$PWD/trace";
	if (w->container == CONTAINER_PODMAN)
		return "mount a volume and write there: `podman run -v $PWD:/work -w /work ...` "
		       "and -o /work/trace";
	if (w->container == CONTAINER_NONE)
		return "write to a directory on disk that you can write: -o $HOME/traces/trace, "
		       "or the cluster's scratch space";
	return "mount a volume and write there: `docker run -v $PWD:/work -w /work ...` and -o "
	       "/work/trace";
}

void check_output_dir(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_out *o = doctor_out(ctx);
	struct doctor_fs fs;
	int rc = doctor_statfs(ctx, o->dir, &fs);

	finding_source(f, "stat, statvfs and access(W_OK) of the output directory");
	finding_why(f, "tally record cannot keep a trace it cannot write");
	finding_fix(f, "mkdir -p %s, or choose a directory that exists", o->dir);
	if (rc < 0) {
		finding_set(f, TALLY_DOCTOR_FAIL, "cannot check %s: %s", o->dir, strerror(-rc));
		return;
	}
	if (fs.source && strcmp(fs.source, ".statfs") == 0)
		finding_source(f, "ROOT/.statfs (fixture) for %s", o->dir);
	if (!fs.exists) {
		finding_set(f, TALLY_DOCTOR_FAIL, "%s does not exist", o->dir);
	} else if (!fs.is_dir) {
		finding_set(f, TALLY_DOCTOR_FAIL, "%s is not a directory", o->dir);
		finding_fix(f, "name a file inside a directory: -o DIR/trace");
	} else if (fs.readonly) {
		finding_set(f, TALLY_DOCTOR_FAIL, "%s is on a read-only filesystem", o->dir);
		finding_fix(f, "%s", volume_fix(ctx));
	} else if (!fs.writable) {
		finding_set(f, TALLY_DOCTOR_FAIL, "%s is not writable by this user", o->dir);
		finding_fix(f, "write where you may: a directory of your own, or %s",
			    volume_fix(ctx));
	} else {
		finding_set(f, TALLY_DOCTOR_OK, "%s is writable", o->dir);
	}
}

void check_output_space(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_out *o = doctor_out(ctx);
	char fr[32], tot[32];
	struct doctor_fs fs;

	finding_source(f, "statvfs of the output directory");
	finding_why(f, "a full disk cuts the trace short (tally check then reports it INCOMPLETE)");
	finding_fix(f, "free some space, or write elsewhere: -o /a/volume/with/room/trace");
	if (doctor_statfs(ctx, o->dir, &fs) < 0 || !fs.exists || !fs.is_dir) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no directory to measure (see output.dir)");
		return;
	}
	if (strcmp(fs.source, ".statfs") == 0)
		finding_source(f, "ROOT/.statfs (fixture) for %s", o->dir);
	tally_fmt_bytes(fr, sizeof(fr), fs.free_bytes);
	tally_fmt_bytes(tot, sizeof(tot), fs.total_bytes);
	if (fs.free_bytes < SPACE_FAIL)
		finding_set(f, TALLY_DOCTOR_FAIL, "only %s free in %s (of %s)", fr, o->dir, tot);
	else if (fs.free_files == 0)
		finding_set(f, TALLY_DOCTOR_FAIL, "no free inodes in %s", o->dir);
	else if (fs.free_bytes < SPACE_WARN)
		finding_set(f, TALLY_DOCTOR_WARN, "nearly full: %s free in %s (of %s)", fr, o->dir,
			    tot);
	else
		finding_set(f, TALLY_DOCTOR_OK, "%s free in %s (of %s)", fr, o->dir, tot);
}

static bool in_container(struct doctor_ctx *ctx)
{
	const struct doctor_where *w = doctor_where(ctx);

	return w->container != CONTAINER_NONE || w->kubernetes || w->serverless;
}

/* The copy-on-write layer a container runtime puts over its image. */
static bool is_overlay(const char *fstype)
{
	return strcmp(fstype, "overlay") == 0 || strstr(fstype, "overlayfs") != NULL;
}

/* "ext4 /dev/sda2", or just "overlay" when the source repeats the type. */
static const char *mount_desc(const struct doctor_mount *m, char *out, size_t len)
{
	if (strcmp(m->fstype, m->source) == 0 || !m->source[0])
		snprintf(out, len, "%s", m->fstype);
	else
		snprintf(out, len, "%s %s", m->fstype, m->source);
	return out;
}

void check_output_volume(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const struct doctor_out *o = doctor_out(ctx);
	char desc[sizeof(((struct doctor_mount *)0)->source) + 64];
	struct doctor_mount m;
	int rc = doctor_mount_of(ctx, o->dir, &m);

	finding_source(f, "/proc/self/mountinfo");
	finding_fix(f, "%s", volume_fix(ctx));
	finding_why(f, "a container's own files are thrown away with it (`docker rm`), and the "
		       "trace with them");
	if (rc == -EINVAL) {
		finding_set(f, TALLY_DOCTOR_WARN,
			    "/proc/self/mountinfo is malformed: no mount line could be read");
		return;
	}
	if (rc == -ENXIO) {
		finding_set(f, TALLY_DOCTOR_SKIP, "no mount in /proc/self/mountinfo covers %s",
			    o->dir);
		return;
	}
	if (rc < 0) {
		finding_unreadable(f, "/proc/self/mountinfo", rc);
		return;
	}
	if (strcmp(m.fstype, "tmpfs") == 0 || strcmp(m.fstype, "ramfs") == 0) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s is on %s at %s, in memory", o->dir, m.fstype,
			    m.point);
		finding_why(f,
			    "tmpfs lives in memory: the trace counts against it and is gone when "
			    "the %s stops",
			    in_container(ctx) ? "container" : "machine");
		return;
	}
	if (in_container(ctx) && strcmp(m.point, "/") == 0) {
		/* an image's overlay (Docker, Podman, containerd) goes with the container: tally
		 * record refuses it; another kind of root (a system container's) may be kept */
		finding_set(f, is_overlay(m.fstype) ? TALLY_DOCTOR_FAIL : TALLY_DOCTOR_WARN,
			    "%s is on the container's own root filesystem (%s at /), not on a "
			    "mounted volume",
			    o->dir, mount_desc(&m, desc, sizeof(desc)));
		return;
	}
	finding_set(f, TALLY_DOCTOR_OK, "%s is on %s%s (%s at %s)", o->dir,
		    in_container(ctx) ? "a mounted volume" : "the host's filesystem",
		    m.is_bind ? ", a bind mount" : "", mount_desc(&m, desc, sizeof(desc)), m.point);
}

void check_output_tmpdir(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	const char *tmpdir = doctor_getenv_set(ctx, "TMPDIR");
	const char *dir = tmpdir ? tmpdir : "/tmp";
	char what[PATH_MAX + 16], size[32];
	struct doctor_mount m = {0};
	struct doctor_fs fs;
	bool mounted;

	snprintf(what, sizeof(what), "%s%s", tmpdir ? "TMPDIR=" : "", dir);
	finding_source(f, "$TMPDIR, statvfs, /proc/self/mountinfo");
	finding_why(f, "tally writes no temporary files, but the program may: torch.compile and "
		       "Triton build and load code there, nsys stages its report there; a small or "
		       "noexec tmpfs breaks them");
	finding_fix(f, "export TMPDIR=/work/tmp (a directory on a mounted volume; mkdir it "
		       "first)");
	if (doctor_statfs(ctx, dir, &fs) < 0 || !fs.exists) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s does not exist", what);
		return;
	}
	if (!fs.is_dir || !fs.writable) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s is not a writable directory", what);
		return;
	}
	mounted = doctor_mount_of(ctx, dir, &m) == 0;
	tally_fmt_bytes(size, sizeof(size), fs.total_bytes);
	if (mounted && doctor_mount_opt(m.opts, "noexec")) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s is mounted noexec (%s at %s)", what, m.fstype,
			    m.point);
	} else if (mounted && strcmp(m.fstype, "tmpfs") == 0 && fs.total_bytes < TMP_SMALL) {
		finding_set(f, TALLY_DOCTOR_WARN, "%s is a %s tmpfs", what, size);
	} else if (mounted) {
		finding_set(f, TALLY_DOCTOR_OK, "%s: %s, %s free", what, m.fstype,
			    tally_fmt_bytes(size, sizeof(size), fs.free_bytes));
	} else { /* a chroot: its directories are not mount points of its own */
		finding_set(f, TALLY_DOCTOR_OK,
			    "%s: %s free (no mount of /proc/self/mountinfo holds it, as in a "
			    "chroot: its file-system type is not known)",
			    what, tally_fmt_bytes(size, sizeof(size), fs.free_bytes));
	}
}
