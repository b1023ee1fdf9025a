/* SPDX-License-Identifier: MIT */
/* The three-minute diagnosis: a table of rules; see diagnosis.h and docs/diagnosis.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnosis-int.h"
#include "satmath.h"
#include "units.h"

/* " and 3 more processes (cost 1.2 s in all)" after the worst case, when there are others. */
static void and_more(struct diag_finding *f, size_t others, const char *what, uint64_t cost)
{
	char d[32];
	size_t len = strlen(f->figure);

	if (others)
		snprintf(f->figure + len, sizeof(f->figure) - len,
			 "; and %zu more %s past the threshold (%s in all)", others, what,
			 tally_fmt_ns(d, sizeof(d), cost));
}

/* ---- rules --------------------------------------------------------------------------------- */

#define STEP_CLASS_THRESHOLD "the steps' largest class, or >= 15% of the step"

static int rule_jobs(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	struct diag_finding *f;

	if (!in->jobs || in->jobs->njobs < 2 || !(f = diag_add(out, n, cap, "mixed-jobs")))
		return 0;
	f->order = 0;
	snprintf(f->figure, sizeof(f->figure),
		 "the traces are of %zu different jobs, not the ranks of one", in->jobs->njobs);
	snprintf(f->proof, sizeof(f->proof), "from the job ids and start times in the traces");
	snprintf(f->where, sizeof(f->where), "job 1: %s; job 2: %s",
		 in->jobs->jobs[0].key ? in->jobs->jobs[0].key : "no job id",
		 in->jobs->jobs[1].key ? in->jobs->jobs[1].key : "no job id");
	snprintf(f->why, sizeof(f->why),
		 "different job ids or recordings far apart in time: cross-rank figures compare "
		 "unrelated runs");
	f->try_ = "give the traces of one job (tally merge and report refuse mixed jobs unless "
		  "--mixed-jobs)";
	return 0;
}

static int by_begin(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/*
 * The GPU time a section's loss windows cover: per device of it, the union of its windows (they
 * overlap: one loss counted by several counters) within the device's span, summed over devices;
 * a window is never counted twice, so the cost is at most the devices' spans.
 */
static uint64_t loss_time(const struct diag_input *in, const struct report_section *rs)
{
	size_t nw = rs->s->nwindows, i, k, n;
	uint64_t(*iv)[2] = nw ? malloc(nw * sizeof(*iv)) : NULL, sum = 0;

	if (!iv)
		return 0;
	for (i = 0; i < in->nbd; i++) {
		const struct bd_row *r = &in->bd[i];
		uint64_t end = 0;

		if (r->section != rs->index)
			continue;
		for (k = n = 0; k < nw; k++) { /* clipped to the span, in the set's aligned time */
			uint64_t b = report_time(rs, rs->s->windows[k].t_begin);
			uint64_t e = report_time(rs, rs->s->windows[k].t_end);

			b = b < r->t0 ? r->t0 : b;
			e = e > r->t1 ? r->t1 : e;
			if (e > b) {
				iv[n][0] = b;
				iv[n++][1] = e;
			}
		}
		qsort(iv, n, sizeof(*iv), by_begin);
		for (k = 0; k < n; k++) { /* the union: what one window covers again is not added */
			uint64_t b = iv[k][0] > end ? iv[k][0] : end;

			if (iv[k][1] > b)
				sum = tally_add_sat(sum, iv[k][1] - b, &(bool){false});
			end = iv[k][1] > end ? iv[k][1] : end;
		}
	}
	free(iv);
	return sum;
}

static int rule_loss(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	struct report_section *worst = NULL;
	uint64_t total = 0, worst_cost = 0, unproven = 0;
	size_t i, count = 0, k;
	struct diag_finding *f;
	char w[200], d[32];

	for (i = 0; i < in->set->nsections; i++) {
		struct report_section *rs = in->set->sections[i];
		uint64_t c = loss_time(in, rs);

		if (rs->verdict.complete)
			continue;
		count++;
		total = tally_add_sat(total, c, &(bool){false});
		if (!worst || c > worst_cost) {
			worst = rs;
			worst_cost = c;
		}
	}
	for (i = 0; i < in->nbd; i++)
		unproven = tally_add_sat(unproven, in->bd[i].idle_unproven, &(bool){false});
	if (!worst || !(f = diag_add(out, n, cap, "lost-records")))
		return 0;
	f->cost = total > unproven ? total : unproven;
	snprintf(f->figure, sizeof(f->figure),
		 "%zu of %zu process(es) INCOMPLETE: records were lost, so counts are lower bounds "
		 "and %s of idle time is unproven",
		 count, in->set->nsections, tally_fmt_ns(d, sizeof(d), unproven));
	snprintf(f->proof, sizeof(f->proof), "the ledger counts the loss: it is certain");
	snprintf(f->where, sizeof(f->where), "%s", diag_who(in, worst->index, w, sizeof(w)));
	for (k = 0; k < worst->verdict.nreasons && !f->why[0]; k++)
		snprintf(f->why, sizeof(f->why), "%s", worst->verdict.reasons[k].text);
	for (k = 0; k < worst->verdict.nreasons && !f->try_; k++)
		if (worst->verdict.reasons[k].hint[0])
			f->try_ = worst->verdict.reasons[k].hint;
	if (!f->try_)
		f->try_ = "see tally check for what was lost and how to keep it";
	return 0;
}

static void idle_finding(const struct diag_input *in, const struct bd_row *r,
			 struct diag_finding *f)
{
	char w[200], d1[32], d2[32], d3[32], cause[sizeof(f->why)];
	const char *c = in->idle_cause ? in->idle_cause(in->idle_ctx, r->section, r->device, cause,
							sizeof(cause))
				       : NULL;

	char phases[160];

	diag_idle_phases(in, r->section, r->device, phases, sizeof(phases));
	snprintf(f->figure, sizeof(f->figure), "GPU %u idle %.1f%% of its span (%s of %s)%s",
		 r->device, diag_pct(r->idle, r->t1 - r->t0), tally_fmt_ns(d1, sizeof(d1), r->idle),
		 tally_fmt_ns(d2, sizeof(d2), r->t1 - r->t0), phases);
	if (r->idle_unproven)
		snprintf(f->proof, sizeof(f->proof),
			 "a bound: %s of it lies where records were lost, so work may have run "
			 "there",
			 tally_fmt_ns(d1, sizeof(d1), r->idle_unproven));
	else
		snprintf(f->proof, sizeof(f->proof), "exact: the ledger proves every idle stretch");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u; longest idle stretch %s at +%.3f s%s",
		 diag_who(in, r->section, w, sizeof(w)), r->device,
		 tally_fmt_ns(d3, sizeof(d3), r->longest_gap), diag_at_s(in, r->longest_gap_at),
		 r->longest_unproven ? " (unproven)" : "");
	snprintf(f->why, sizeof(f->why), "%s",
		 c ? c
		   : "no kernel, copy or memset ran; what the host did meanwhile is in the "
		     "timeline (gpu_gaps lists the stretches)");
}

/* "; not counting 36.0 ms ...": the gaps the GPU metrics show busy are not idle (gaps.h). */
static void busy_outside(const struct diag_input *in, struct diag_finding *f)
{
	uint64_t outside = 0;
	size_t i, len = strlen(f->figure);
	char d[32];

	for (i = 0; i < in->nbd; i++)
		outside = tally_add_sat(outside, in->bd[i].outside, &(bool){false});
	if (outside)
		snprintf(f->figure + len, sizeof(f->figure) - len,
			 "; not counting %s the GPU metrics show busy outside the trace",
			 tally_fmt_ns(d, sizeof(d), outside));
}

static int rule_idle(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	const struct bd_row *worst = NULL;
	uint64_t cost = 0;
	size_t i, count = 0;
	struct diag_finding *f;

	for (i = 0; i < in->nbd; i++) {
		const struct bd_row *r = &in->bd[i];

		if (diag_pct(r->idle, r->t1 - r->t0) <= DIAG_IDLE_PCT)
			continue;
		count++;
		cost = tally_add_sat(cost, r->idle, &(bool){false});
		if (!worst || r->idle > worst->idle)
			worst = r;
	}
	if (!worst || !(f = diag_add(out, n, cap, "gpu-idle")))
		return 0;
	f->cost = cost;
	idle_finding(in, worst, f);
	and_more(f, count - 1, "device(s)", cost);
	busy_outside(in, f);
	f->try_ = "see what the host did in the longest stretch (gpu_idle_why, the page's 'Why "
		  "the GPU was idle'; record with --sample python,native --trace osrt for its "
		  "stacks and blocking calls); feed the GPU ahead: DataLoader workers and "
		  "pin_memory, no .item()/.cpu() synchronizations in the loop, larger batches";
	return 0;
}

/* What the others lose waiting for the straggler: its lead in every step, on each of the other
 * processes' devices, at most the time that device was idle or in communication (where a rank
 * waits for another); so never more than their spans. */
static uint64_t straggler_cost(const struct diag_input *in, const struct steps_verdict *v)
{
	uint64_t cost = 0, lead = v->lead > 0
				      ? tally_mul_sat((uint64_t)v->lead, v->steps, &(bool){false})
				      : 0;
	size_t i;

	for (i = 0; i < in->nbd; i++) {
		const struct bd_row *r = &in->bd[i];
		uint64_t waited = r->idle + r->comm_exposed;

		if (r->section != v->candidate)
			cost = tally_add_sat(cost, lead < waited ? lead : waited, &(bool){false});
	}
	return cost;
}

static int rule_straggler(const struct diag_input *in, struct diag_finding *out, size_t *n,
			  size_t cap)
{
	const struct steps_verdict *v = in->steps;
	struct diag_finding *f;
	char w[200], d1[32], d2[32], d3[32];

	if (!v || !v->named || !(f = diag_add(out, n, cap, "straggler")))
		return 0;
	f->cost = straggler_cost(in, v);
	snprintf(f->figure, sizeof(f->figure),
		 "straggler: %s is the slowest in %" PRIu64 " of %" PRIu64
		 " '%s' steps, %s ahead of the others' median (%.1f%% of its step)",
		 diag_sec(in, v->candidate) && diag_sec(in, v->candidate)->s->rank
		     ? diag_sec(in, v->candidate)->s->rank
		     : diag_who(in, v->candidate, w, sizeof(w)),
		 v->slowest_count, v->steps, v->range,
		 tally_fmt_ns(d1, sizeof(d1), (uint64_t)v->lead),
		 v->candidate_median ? diag_pct((uint64_t)v->lead, v->candidate_median) : 0.0);
	snprintf(f->proof, sizeof(f->proof),
		 "its lead (%s) exceeds the ranks' own step-to-step spread (%s); the cost is an "
		 "upper bound",
		 tally_fmt_ns(d2, sizeof(d2), (uint64_t)v->lead),
		 tally_fmt_ns(d3, sizeof(d3), v->spread));
	char own[120];

	diag_steps_of(in, v->candidate, own, sizeof(own));
	snprintf(f->where, sizeof(f->where), "%s", diag_who(in, v->candidate, w, sizeof(w)));
	snprintf(f->why, sizeof(f->why),
		 "every step the other %u rank(s) wait for it: the cost is its lead times the "
		 "steps on each of them, at most the time each one's GPU was idle or in "
		 "communication%s",
		 v->ranks - 1, own);
	f->try_ = "compare what it does in a step with the others: its kernels "
		  "(kern_rank_spread), its host work (data loading, CPU), its node and GPU";
	return 0;
}

static bool launch_bound(const struct launch_row *r)
{
	return diag_pct(r->short_ns, r->kernel_ns) > DIAG_LAUNCH_TIME_PCT ||
	       (diag_pct(r->short_n, r->matched) > DIAG_LAUNCH_COUNT_PCT &&
		r->short_n >= DIAG_LAUNCH_COUNT_MIN);
}

/* The idle time of a section's devices: launch overhead cannot cost more than that. */
static uint64_t section_idle(const struct diag_input *in, unsigned s)
{
	uint64_t idle = 0;
	size_t i;

	for (i = 0; i < in->nbd; i++)
		if (in->bd[i].section == s)
			idle = tally_add_sat(idle, in->bd[i].idle, &(bool){false});
	return idle;
}

static int rule_launch(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	const struct launch_row *worst = NULL;
	uint64_t cost = 0, worst_cost = 0;
	size_t i, count = 0;
	struct diag_finding *f;
	char w[200], d1[32];

	for (i = 0; i < in->nln; i++) {
		const struct launch_row *r = &in->ln[i];
		uint64_t idle = section_idle(in, r->section);
		uint64_t c = r->overhead_ns < idle ? r->overhead_ns : idle;

		if (!launch_bound(r))
			continue;
		count++;
		cost = tally_add_sat(cost, c, &(bool){false});
		if (!worst || c > worst_cost) {
			worst = r;
			worst_cost = c;
		}
	}
	if (!worst || !(f = diag_add(out, n, cap, "short-kernels")))
		return 0;
	f->cost = cost;
	snprintf(f->figure, sizeof(f->figure),
		 "short kernels: %" PRIu64 " of %" PRIu64
		 " kernels (%.1f%% of kernel time) ran shorter than their launch call; median "
		 "launch call %s",
		 worst->short_n, worst->matched, diag_pct(worst->short_ns, worst->kernel_ns),
		 tally_fmt_ns(d1, sizeof(d1), worst->call_p50));
	snprintf(f->proof, sizeof(f->proof),
		 "an upper bound: the launch calls' excess over those kernels, at most the GPU's "
		 "idle time");
	snprintf(f->where, sizeof(f->where), "%s; most often %s (%" PRIu64 " times)%s%s",
		 diag_who(in, worst->section, w, sizeof(w)),
		 worst->top_short ? worst->top_short : "?", worst->top_short_n,
		 worst->top_where ? ", launched from " : "",
		 worst->top_where ? worst->top_where : "");
	and_more(f, count - 1, "process(es)", cost);
	snprintf(f->why, sizeof(f->why),
		 "the CPU takes longer to launch these kernels than the GPU takes to run them");
	f->try_ = "CUDA graphs (torch.compile(mode=\"reduce-overhead\"), torch.cuda.graphs), "
		  "fuse the small kernels (torch.compile), or give each kernel more work "
		  "(larger batches)";
	return 0;
}

static const char *copy_kind(const struct bd_row *r, char *buf, size_t len)
{
	uint64_t total = 0;
	unsigned k, best = 0;

	for (k = 0; k < 16; k++) {
		total = tally_add_sat(total, r->copy_ns[k], &(bool){false});
		if (r->copy_ns[k] > r->copy_ns[best])
			best = k;
	}
	snprintf(buf, len, "mostly %s (%.0f%% of copy time)",
		 best == 15 ? "memset" : report_memcpy_kind_label(best),
		 diag_pct(r->copy_ns[best], total));
	return buf;
}

/* Share of a row's span in its field: the exposed copies or the exposed communication. */
typedef uint64_t (*bd_field)(const struct bd_row *r);

static uint64_t exposed_copy(const struct bd_row *r)
{
	return r->copy_exposed;
}

static uint64_t exposed_comm(const struct bd_row *r)
{
	return r->comm_exposed;
}

static const struct bd_row *worst_row(const struct diag_input *in, bd_field field, double min_pct,
				      uint64_t *cost, size_t *count)
{
	const struct bd_row *worst = NULL;
	size_t i;

	*cost = 0;
	*count = 0;
	for (i = 0; i < in->nbd; i++) {
		const struct bd_row *r = &in->bd[i];

		if (diag_pct(field(r), r->t1 - r->t0) <= min_pct)
			continue;
		(*count)++;
		*cost = tally_add_sat(*cost, field(r), &(bool){false});
		if (!worst || field(r) > field(worst))
			worst = r;
	}
	return worst;
}

static int rule_copies(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	uint64_t cost;
	size_t count;
	const struct bd_row *r = worst_row(in, exposed_copy, DIAG_COPY_PCT, &cost, &count);
	struct diag_finding *f;
	char w[200], d1[32], k[120];

	if (!r || !(f = diag_add(out, n, cap, "exposed-copies")))
		return 0;
	f->cost = cost;
	snprintf(f->figure, sizeof(f->figure),
		 "copies no kernel overlaps: %s, %.1f%% of GPU %u's span",
		 tally_fmt_ns(d1, sizeof(d1), r->copy_exposed),
		 diag_pct(r->copy_exposed, r->t1 - r->t0), r->device);
	snprintf(f->proof, sizeof(f->proof), "exact: measured from the copy and kernel records");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u; %s",
		 diag_who(in, r->section, w, sizeof(w)), r->device, copy_kind(r, k, sizeof(k)));
	and_more(f, count - 1, "device(s)", cost);
	snprintf(f->why, sizeof(f->why), "while they ran, the GPU computed nothing");
	f->try_ = "overlap them with compute: pinned host memory and non_blocking=True copies on "
		  "a side stream, prefetch the next batch, keep data on the GPU";
	return 0;
}

static int rule_comm(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	uint64_t cost;
	size_t count;
	const struct bd_row *r = worst_row(in, exposed_comm, DIAG_COMM_PCT, &cost, &count);
	struct diag_finding *f;
	char w[200], d1[32];

	if (!r || !(f = diag_add(out, n, cap, "exposed-comm")))
		return 0;
	f->cost = cost;
	snprintf(f->figure, sizeof(f->figure),
		 "communication no compute overlaps: %s, %.1f%% of GPU %u's span (%.1f%% of "
		 "its communication)",
		 tally_fmt_ns(d1, sizeof(d1), r->comm_exposed),
		 diag_pct(r->comm_exposed, r->t1 - r->t0), r->device,
		 diag_pct(r->comm_exposed, r->comm));
	snprintf(f->proof, sizeof(f->proof),
		 "exact: measured from the kernel records (communication by name, "
		 "docs/stats.md)");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u", diag_who(in, r->section, w, sizeof(w)),
		 r->device);
	and_more(f, count - 1, "device(s)", cost);
	snprintf(f->why, sizeof(f->why),
		 "the GPU waited in collectives: for the data, or for a slower rank");
	f->try_ = "overlap communication with compute (DDP's gradient buckets, FSDP's prefetch); "
		  "if a rank is slow the others wait here: see rank_steps";
	return 0;
}

/* Peak CUDA memory per (process, device), against the device's memory. */
static int rule_memory(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	const struct mem_usage_row *worst = NULL;
	double worst_pct = 0;
	size_t i, k;
	struct diag_finding *f;
	char w[200];

	for (i = 0; in->mem && i < in->mem->nrows; i++) {
		const struct mem_usage_row *m = &in->mem->rows[i];
		const struct report_section *rs = diag_sec(in, m->sec);

		for (k = 0; rs && k < rs->s->ndevices; k++)
			if (rs->s->devices[k].id == m->device && rs->s->devices[k].global_mem &&
			    diag_pct(m->peak, rs->s->devices[k].global_mem) > worst_pct) {
				worst = m;
				worst_pct = diag_pct(m->peak, rs->s->devices[k].global_mem);
			}
	}
	if (!worst || worst_pct <= DIAG_MEMORY_PCT ||
	    !(f = diag_add(out, n, cap, "memory-near-capacity")))
		return 0;
	snprintf(f->figure, sizeof(f->figure),
		 "memory: CUDA allocations peaked at %.1f%% of GPU %u's memory (%.2f GiB)",
		 worst_pct, worst->device, (double)worst->peak / (1u << 30));
	snprintf(f->proof, sizeof(f->proof), "exact: from the allocation records");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u, at +%.3f s",
		 diag_who(in, worst->sec, w, sizeof(w)), worst->device,
		 diag_at_s(in, worst->peak_time));
	snprintf(f->why, sizeof(f->why),
		 "close to an out-of-memory error; no time lost yet (for PyTorch: reserved, not "
		 "live, memory)");
	f->try_ = "a smaller batch, activation checkpointing, "
		  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation";
	return 0;
}

const struct diag_rule diag_rules[] = {
    {"mixed-jobs", "the traces are of more than one job (docs/merge.md)", rule_jobs},
    {"gpu-bound", "the steps' largest class is the GPU busy", diag_rule_gpu_bound},
    {"comm-bound", STEP_CLASS_THRESHOLD, diag_rule_comm_bound},
    {"data-bound", STEP_CLASS_THRESHOLD, diag_rule_data_bound},
    {"launch-bound", STEP_CLASS_THRESHOLD, diag_rule_launch_bound},
    {"sync-bound", STEP_CLASS_THRESHOLD, diag_rule_sync_bound},
    {"wait-bound", STEP_CLASS_THRESHOLD, diag_rule_wait_bound},
    {"dependency-bound", "the steps' largest class is the GPU waiting on work submitted earlier",
     diag_rule_dependency_bound},
    {"start-up", "start-up (before the first steady step) > 10% of the process's run",
     diag_rule_startup},
    {"tail", "the tail (after the last step) > 10% of the process's run", diag_rule_tail},
    {"lost-records", "any process INCOMPLETE", rule_loss},
    {"gpu-idle", "idle > 10% of a device's span", rule_idle},
    {"straggler", "rank_steps names one: slowest in half the steps or more, lead > spread",
     rule_straggler},
    {"short-kernels",
     "kernels shorter than their launch call hold > 20% of kernel time, or are > 50% of "
     "kernels and 1000 or more",
     rule_launch},
    {"exposed-copies", "copies and memsets no kernel overlaps > 5% of a device's span",
     rule_copies},
    {"exposed-comm", "communication no compute overlaps > 10% of a device's span", rule_comm},
    {"memory-near-capacity", "peak CUDA allocations > 90% of the device's memory", rule_memory},
};
const unsigned diag_rules_count = sizeof(diag_rules) / sizeof(diag_rules[0]);

static int by_rank(const void *a, const void *b)
{
	const struct diag_finding *x = a, *y = b;

	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->share > y->share ? -1 : x->share < y->share;
}

int diagnose(const struct diag_input *in, struct diag_finding **out, size_t *n)
{
	size_t cap = diag_rules_count * 2, i;
	uint64_t gpu_time = 0;
	unsigned r;

	*n = 0;
	*out = calloc(cap, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (r = 0; r < diag_rules_count; r++)
		if (diag_rules[r].eval(in, *out, n, cap) < 0)
			return -ENOMEM;
	/* one definition of the share for every rule: of the run's GPU time, which each rule's
	 * cost is a part of (docs/diagnosis.md) */
	for (i = 0; i < in->nbd; i++)
		gpu_time = tally_add_sat(gpu_time, in->bd[i].t1 - in->bd[i].t0, &(bool){false});
	for (i = 0; i < *n; i++)
		(*out)[i].share = diag_pct((*out)[i].cost, gpu_time);
	qsort(*out, *n, sizeof(**out), by_rank);
	return 0;
}
