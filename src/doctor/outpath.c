/* SPDX-License-Identifier: MIT */
/*
 * The output pattern expanded as tally record would expand it for this process (its rank, its
 * host), found once per run: the name, the directory it lands in, and whether each rank gets a
 * name of its own.  The output and children checks read it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pattern.h"

static const char *const rank_vars[] = {"SLURM_PROCID", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};

/* Does the pattern give each rank its own name (%p, %n, or %q{a rank variable})? */
static bool per_rank(const char *pattern)
{
	char q[64];
	size_t i;

	if (strstr(pattern, "%p") || strstr(pattern, "%n"))
		return true;
	for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
		snprintf(q, sizeof(q), "%%q{%s}", rank_vars[i]);
		if (strstr(pattern, q))
			return true;
	}
	return false;
}

/* tally_pattern_vars.getenv takes no context: the run's context, for this thread. */
static _Thread_local const struct doctor_ctx *pattern_ctx;

static const char *pattern_getenv(const char *name)
{
	return doctor_getenv(pattern_ctx, name);
}

/* %n looks for a free name: relative names are taken from the run's current directory. */
static bool pattern_exists(const char *path, void *arg)
{
	const struct doctor_ctx *ctx = arg;
	char full[PATH_MAX];

	doctor_normpath(ctx->cwd, path, full, sizeof(full));
	return doctor_exists(ctx, full);
}

static void expand(struct doctor_ctx *ctx, struct doctor_out *o)
{
	struct tally_pattern_vars vars = {
	    .pid = ctx->opts->pid ? ctx->opts->pid : getpid(),
	    .host = ctx->fixture ? doctor_getenv_set(ctx, "HOSTNAME") : NULL,
	    .getenv = pattern_getenv,
	    .exists = pattern_exists,
	    .ctx = ctx,
	};
	char name[PATH_MAX];
	char *slash;

	if (ctx->fixture && !vars.host)
		vars.host = "fixture-host";
	pattern_ctx = ctx;
	o->rc = tally_pattern_expand(ctx->opts->pattern, &vars, name, sizeof(name), o->err,
				     sizeof(o->err));
	pattern_ctx = NULL;
	o->unset_vars = vars.unset_vars;
	if (o->rc < 0) {
		snprintf(o->dir, sizeof(o->dir), "%s", ctx->cwd);
		return;
	}
	doctor_normpath(ctx->cwd, name, o->name, sizeof(o->name));
	snprintf(o->dir, sizeof(o->dir), "%s", o->name);
	slash = strrchr(o->dir, '/');
	if (slash == o->dir)
		o->dir[1] = '\0';
	else if (slash)
		*slash = '\0';
}

const struct doctor_out *doctor_out(struct doctor_ctx *ctx)
{
	struct doctor_out *o = &ctx->out;
	size_t i;

	if (ctx->out_done)
		return o;
	ctx->out_done = true;
	for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]) && !o->rank_var; i++)
		if ((o->rank = doctor_getenv_set(ctx, rank_vars[i])))
			o->rank_var = rank_vars[i];
	o->has_pattern = ctx->opts->pattern != NULL;
	if (o->has_pattern) {
		expand(ctx, o);
		o->per_rank = per_rank(ctx->opts->pattern);
	} else
		doctor_normpath(ctx->cwd, ".", o->dir, sizeof(o->dir));
	return o;
}
