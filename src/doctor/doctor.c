/* SPDX-License-Identifier: MIT */
/*
 * The check table and the run loop.  One row per check, in report order.  The doctor's files in
 * layers, each calling only the layers below its own, never a file beside it (the test
 * doctor-layers reads the built objects to hold it so):
 *   the table and the run loop    doctor.c
 *   the checks, one file a gate   where.c card.c tool.c perf.c counters.c children.c output.c
 *   facts found once per run      place.c gpu.c outpath.c
 *   the run's context and reads   sys.c
 *   what a check says             findings.c
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

struct doctor_check {
	const char *id;
	const char *gate;
	bool needed; /* does cuda/nvtx recording need what this looks at? */
	bool blocks; /* can this check FAIL?  (docs/doctor.md "Which checks block") */
	doctor_check_fn *run;
};

static const struct tally_doctor_gate gates[] = {
    {"where", "where we are", false},
    {"card", "the card", true},
    {"tool", "the tool on board", true},
    {"perf", "CPU sampling (not needed for cuda/nvtx tracing)", false},
    {"counters", "GPU counters (not needed for cuda/nvtx tracing)", false},
    {"children", "forked children", true},
    {"output", "where the file lands", true},
};

static const struct doctor_check checks[] = {
    {"where.container", "where", false, false, check_where_container},
    {"where.kubernetes", "where", false, false, check_where_kubernetes},
    {"where.slurm", "where", false, false, check_where_slurm},
    {"where.serverless", "where", false, false, check_where_serverless},
    {"card.driver", "card", true, true, check_card_driver},
    {"card.devices", "card", true, true, check_card_devices},
    {"card.visible", "card", true, false, check_card_visible},
    {"tool.collector", "tool", true, true, check_tool_collector},
    {"tool.cupti", "tool", true, true, check_tool_cupti},
    {"tool.versions", "tool", true, true, check_tool_versions},
    {"tool.subscriber", "tool", true, false, check_tool_subscriber},
    {"tool.injection", "tool", true, true, check_tool_injection},
    {"perf.paranoid", "perf", false, false, check_perf_paranoid},
    {"perf.caps", "perf", false, false, check_perf_caps},
    {"perf.seccomp", "perf", false, false, check_perf_seccomp},
    {"counters.permission", "counters", false, false, check_counters_permission},
    {"children.follow", "children", true, false, check_children_follow},
    {"children.names", "children", true, false, check_children_names},
    {"output.name", "output", true, true, check_output_name},
    {"output.dir", "output", true, true, check_output_dir},
    {"output.space", "output", true, true, check_output_space},
    {"output.volume", "output", true, true, check_output_volume},
    {"output.tmpdir", "output", false, false, check_output_tmpdir},
};

#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

const char *tally_doctor_status_name(enum tally_doctor_status s)
{
	static const char *const names[] = {"OK", "WARN", "FAIL", "SKIP"};

	return (unsigned)s < TALLY_DOCTOR_STATUS_MAX ? names[s] : "?";
}

const struct tally_doctor_gate *tally_doctor_gates(size_t *count)
{
	*count = sizeof(gates) / sizeof(gates[0]);
	return gates;
}

bool tally_doctor_check_blocks(const char *id)
{
	size_t i;

	for (i = 0; i < NCHECKS; i++)
		if (strcmp(checks[i].id, id) == 0)
			return checks[i].blocks;
	return false;
}

const char *tally_doctor_blocking_check(size_t i)
{
	size_t k;

	for (k = 0; k < NCHECKS; k++)
		if (checks[k].blocks && i-- == 0)
			return checks[k].id;
	return NULL;
}

static void run_one(struct doctor_ctx *ctx, const struct doctor_check *c,
		    struct tally_doctor_finding *f)
{
	memset(f, 0, sizeof(*f));
	f->id = c->id;
	f->gate = c->gate;
	f->needed = c->needed;
	c->run(ctx, f);
	/* A check that cannot block never does, whatever it found: the table is the contract. */
	if (f->status == TALLY_DOCTOR_FAIL && !c->blocks)
		f->status = TALLY_DOCTOR_WARN;
	/*
	 * A fix for something tracing needs is noise once it is OK.  Checks of what it does not
	 * need keep theirs: it is how other tools get through that gate.
	 */
	if (f->status == TALLY_DOCTOR_OK && f->needed && !f->advise)
		f->remedy[0] = '\0';
}

int tally_doctor_run(const struct tally_doctor_opts *opts, struct tally_doctor_report *out)
{
	struct doctor_ctx *ctx;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	ctx = calloc(1, sizeof(*ctx));
	out->findings = calloc(NCHECKS, sizeof(*out->findings));
	if (!ctx || !out->findings) {
		rc = -ENOMEM;
		goto free_all;
	}
	rc = doctor_ctx_init(ctx, opts);
	if (rc < 0)
		goto free_all;
	snprintf(out->root, sizeof(out->root), "%s", ctx->fixture ? ctx->root : "/");
	for (i = 0; i < NCHECKS; i++) {
		struct tally_doctor_finding *f = &out->findings[out->count];

		if ((opts->flags & TALLY_DOCTOR_BLOCKING_ONLY) && !checks[i].blocks)
			continue;
		run_one(ctx, &checks[i], f);
		out->counts[f->status]++;
		out->count++;
	}
	out->can_record = out->counts[TALLY_DOCTOR_FAIL] == 0;
	if (doctor_out(ctx)->has_pattern && doctor_out(ctx)->rc == 0)
		snprintf(out->output, sizeof(out->output), "%s", doctor_out(ctx)->name);
	doctor_ctx_fini(ctx);
	free(ctx);
	return 0;
free_all:
	free(ctx);
	free(out->findings);
	memset(out, 0, sizeof(*out));
	return rc;
}

bool tally_doctor_blocking(const struct tally_doctor_report *r, FILE *explain)
{
	size_t i;

	for (i = 0; explain && i < r->count; i++) {
		const struct tally_doctor_finding *f = &r->findings[i];

		if (f->status != TALLY_DOCTOR_FAIL)
			continue;
		fprintf(explain, "  %s: %s\n", f->id, f->value);
		if (f->remedy[0])
			fprintf(explain, "    fix: %s\n", f->remedy);
	}
	return !r->can_record;
}

const struct tally_doctor_finding *tally_doctor_find(const struct tally_doctor_report *r,
						     const char *id)
{
	size_t i;

	for (i = 0; i < r->count; i++)
		if (strcmp(r->findings[i].id, id) == 0)
			return &r->findings[i];
	return NULL;
}

void tally_doctor_report_fini(struct tally_doctor_report *r)
{
	free(r->findings);
	memset(r, 0, sizeof(*r));
}
