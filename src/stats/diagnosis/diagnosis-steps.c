/* SPDX-License-Identifier: MIT */
/*
 * The diagnosis's rules over the steps (docs/diagnosis.md, "The verdict of the steps"): what
 * bounds a step, each class with its share of the step and its evidence (bound.h); start-up and
 * the tail, reported apart from the steps.  The step verdicts come before every finding ranked
 * by cost: they answer the question a user brings.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "diagnosis-int.h"
#include "idlewhy.h"
#include "satmath.h"
#include "units.h"
#include "waits.h"

/* What each class says, as the verdict's words, and what to try. */
static const struct {
	const char *rule, *doing, *try_;
} class_text[BOUND_CLASSES] = {
    [BOUND_GPU] = {"gpu-bound", "the GPU busy",
		   "the GPU is the limit: make its top kernels cheaper (fusion: torch.compile; "
		   "lower precision on tensor cores: bf16, fp8; better shapes), or do less work "
		   "per step"},
    [BOUND_COMM] = {"comm-bound", "communication no compute overlapped",
		    "overlap communication with compute (DDP's gradient buckets, FSDP's "
		    "prefetch), communicate less (gradient accumulation, compression); a slow "
		    "rank makes the others wait here (see straggler)"},
    [BOUND_DATA] = {"data-bound", "the launching thread waiting for the next batch",
		    "make the batch ready ahead: more DataLoader workers (num_workers), a "
		    "cheaper __getitem__ (the workers' line above), persistent_workers and "
		    "prefetch_factor, or data already on the GPU"},
    [BOUND_LAUNCH] = {"launch-bound", "the GPU waiting while the host launched work",
		      "launch less from Python: CUDA graphs (torch.compile(mode=\"reduce-"
		      "overhead\"), torch.cuda.graphs), fused kernels (torch.compile), more work "
		      "per kernel (larger batches)"},
    [BOUND_SYNC] = {"sync-bound", "host work after a synchronizing call",
		    "do not wait for the GPU in the step: move .item()/.cpu() out of it (log "
		    "every N steps), or launch the next step's work before the host work that "
		    "needs the result"},
    [BOUND_WAIT] = {"wait-bound", "the launching thread waiting (not for data)",
		    "see what it waited on (gpu_idle_why: its blocking calls and stacks): a lock "
		    "another thread held, a sleep, an event"},
    [BOUND_OTHER] = {"dependency-bound", "the GPU waiting on work submitted earlier",
		     "see what the work waited on (gpu_idle_why): an event, another stream, a "
		     "copy from pageable memory"},
};

#define DIAG_STEP_SHARE_PCT 15.0 /* a class below the verdict named from this share of the step */

/* A row's span on its device (gpu_time_breakdown's), to keep a cost within it. */
static uint64_t span_of(const struct diag_input *in, const struct bound_row *r)
{
	size_t i;

	for (i = 0; i < in->nbd; i++)
		if (in->bd[i].section == r->section && in->bd[i].device == r->device)
			return in->bd[i].t1 - in->bd[i].t0;
	return 0;
}

static bool class_named(const struct bound_row *r, enum bound_class c)
{
	if (bound_verdict(r) == c)
		return true;
	return c != BOUND_GPU && c != BOUND_OTHER &&
	       diag_pct(r->ns[c], r->step_ns) >= DIAG_STEP_SHARE_PCT;
}

/* "NVTX ranges 'step' (29, after 1 of warm-up)" or "the launch pattern: ..." */
static void steps_source(const struct diag_input *in, const struct bound_row *r, char *buf,
			 size_t len)
{
	struct report_section *rs = diag_sec(in, r->section);

	if (r->range)
		snprintf(buf, len, "NVTX ranges '%s'", r->range);
	else
		snprintf(buf, len, "the launch pattern: %s begins each step of %" PRIu64 " kernels",
			 rs ? report_kernel_name(rs, r->pattern_name, REPORT_NAME_BASE) : "?",
			 r->period);
}

/* "; the rest: gpu 30.2%, launch 7.8%" (classes of 1% and more) */
static size_t the_rest(const struct bound_row *r, enum bound_class c, char *buf, size_t len)
{
	size_t used = 0;
	unsigned k;
	bool first = true;

	for (k = 0; k < BOUND_CLASSES && used < len; k++) {
		double share = diag_pct(r->ns[k], r->step_ns);

		if (k == c || share < 1.0)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s %.1f%%",
					 first ? "; the rest: " : ", ", bound_class_name(k), share);
		first = false;
	}
	return used;
}

static const char *line(const struct diag_input *in, unsigned section, uint64_t l, char *buf,
			size_t len)
{
	struct report_section *rs = diag_sec(in, section);

	return rs ? host_line_label(rs, l, buf, len) : "?";
}

/* "L1 (62%), L2 (20%)": the class's lines, as shares of the time its samples stand for. */
static size_t lines_text(const struct diag_input *in, const struct bound_row *r, enum bound_class c,
			 char *buf, size_t len)
{
	char l[600];
	size_t used = 0;
	unsigned k;

	for (k = 0; k < BOUND_TOP && r->lines[c][k].ns && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s (%.0f%%)", k ? ", " : "",
					 line(in, r->section, r->lines[c][k].line, l, sizeof(l)),
					 diag_pct(r->lines[c][k].ns, r->lines_ns[c]));
	return used;
}

static const char *thread_of(const struct diag_input *in, const struct bound_row *r,
			     enum bound_class c)
{
	struct report_section *rs = diag_sec(in, r->section);

	return rs && r->thread[c] ? idle_why_thread_label(rs, r->thread[c])
				  : "the launching thread";
}

/* The GPU's own evidence: its top kernels, and from the counters what limits them. */
static void why_gpu(const struct diag_input *in, const struct bound_row *r, char *buf, size_t len)
{
	struct report_section *rs = diag_sec(in, r->section);
	const struct bound_kernel *k = r->ns[BOUND_COMM] > r->ns[BOUND_GPU] ? r->comm : r->kernels;
	const struct gm_series_view *issue, *tensor, *dram;
	size_t used = (size_t)snprintf(buf, len, "top kernels in the steps:");
	unsigned i;

	for (i = 0; i < BOUND_TOP && k[i].ns && rs && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s %s %.0f%%", i ? "," : "",
					 report_kernel_name(rs, k[i].name, REPORT_NAME_BASE),
					 diag_pct(k[i].ns, r->kernel_ns));
	issue = in->gm ? gm_find(in->gm, r->section, r->device, "SM Issue") : NULL;
	tensor = in->gm ? gm_find(in->gm, r->section, r->device, "Tensor Active") : NULL;
	dram = in->gm ? gm_find(in->gm, r->section, r->device, "DRAM Throughput") : NULL;
	if (used >= len || !issue || !dram || !issue->busy_ns) {
		if (used < len)
			snprintf(buf + used, len - used,
				 " (record with --gpu-metrics to see whether they are compute- "
				 "or memory-bound)");
		return;
	}
	double compute = issue->busy_mean, mem = dram->busy_mean;
	double tc = tensor && tensor->busy_ns ? tensor->busy_mean : -1;

	compute = tc > compute ? tc : compute;
	used += (size_t)snprintf(
	    buf + used, len - used,
	    "; while the GPU ran work: SM Issue %.0f%%, %s%.0f%%%s, DRAM %.0f%% of peak: %s",
	    issue->busy_mean, tc >= 0 ? "Tensor Active " : "", tc >= 0 ? tc : 0.0,
	    tc >= 0 ? "" : " (no tensor counter)", mem,
	    compute >= 60 && compute >= mem ? "compute-bound"
	    : mem >= 60 && mem > compute    ? "memory-bound"
					    : "neither compute nor memory near its peak (latency: "
					      "small kernels, low occupancy, dependencies)");
	if (tc >= 0 && used < len)
		snprintf(buf + used, len - used, "; tensor cores %s",
			 tc >= 5     ? "in use"
			 : tc >= 0.5 ? "barely used"
				     : "not used");
}

/* The other processes during the waits: the one busiest first, with its line and its share. */
static size_t why_procs(const struct diag_input *in, const struct bound_row *r, char *buf,
			size_t len)
{
	char l[600];
	size_t used = 0;
	unsigned k;

	if (!r->children)
		return (size_t)snprintf(
		    buf, len,
		    "; no other process of the job was recorded (its workers: tally record "
		    "--sample python,native records fork children too)");
	for (k = 0; k < BOUND_TOP && r->procs[k].busy_ns && used < len; k++) {
		const struct bound_proc *p = &r->procs[k];
		struct report_section *ps = diag_sec(in, p->section);

		used += (size_t)snprintf(
		    buf + used, len - used, "%s pid %" PRIu64 " was %s %s, %.0f%% of the wait",
		    k ? ";" : "; meanwhile", ps ? ps->s->pid : 0,
		    p->on_cpu ? "on the CPU in" : "waiting in its own code at",
		    p->line ? line(in, p->section, p->line, l, sizeof(l)) : "[no stack]",
		    diag_pct(p->line_ns, r->wait_ns) > 100 ? 100.0
							   : diag_pct(p->line_ns, r->wait_ns));
	}
	if (!r->procs[0].busy_ns && used < len)
		used += (size_t)snprintf(buf + used, len - used,
					 "; the job's other %zu process(es) were idle meanwhile",
					 r->children);
	return used;
}

/* Threads of the process on the CPU during the waits. */
static size_t why_peers(const struct diag_input *in, const struct bound_row *r, char *buf,
			size_t len)
{
	struct report_section *rs = diag_sec(in, r->section);
	char l[600];

	if (!rs || !r->peers[0].ns || diag_pct(r->peers[0].ns, r->wait_ns) < 10)
		return 0;
	return (size_t)snprintf(buf, len, "; in the process, %s was on the CPU in %s, %.0f%% of it",
				idle_why_thread_label(rs, r->peers[0].tid),
				line(in, r->section, r->peers[0].line, l, sizeof(l)),
				diag_pct(r->peers[0].ns, r->wait_ns));
}

static void why_of(const struct diag_input *in, const struct bound_row *r, enum bound_class c,
		   char *buf, size_t len)
{
	char l[600];
	size_t used = 0;

	switch (c) {
	case BOUND_GPU:
	case BOUND_COMM:
		why_gpu(in, r, buf, len);
		return;
	case BOUND_DATA:
	case BOUND_WAIT:
		used = (size_t)snprintf(buf, len, "%s waited in ", thread_of(in, r, c));
		used += r->lines[c][0].ns ? lines_text(in, r, c, buf + used, len - used)
					  : (size_t)snprintf(buf + used, len - used, "?");
		if (used < len && c == BOUND_DATA)
			used += why_procs(in, r, buf + used, len - used);
		if (used < len)
			why_peers(in, r, buf + used, len - used);
		return;
	case BOUND_LAUNCH:
		used =
		    (size_t)snprintf(buf, len, "%" PRIu64 " launch call(s) a step; %s ",
				     r->nsteps ? r->launches / r->nsteps : 0, thread_of(in, r, c));
		if (!r->lines[c][0].ns)
			snprintf(buf + used, len - used, "did not keep the GPU fed%s",
				 r->host_samples ? ""
						 : " (no host samples name its lines: record with "
						   "--sample python,native)");
		else if ((used += (size_t)snprintf(buf + used, len - used, "was on the CPU in ")) <
			 len)
			lines_text(in, r, c, buf + used, len - used);
		return;
	case BOUND_SYNC:
		used = (size_t)snprintf(
		    buf, len, "a synchronizing call%s%s waited for the GPU; then the host worked",
		    r->sync_line.ns ? " at " : "",
		    r->sync_line.ns ? line(in, r->section, r->sync_line.line, l, sizeof(l)) : "");
		if (r->lines[c][0].ns && used < len) {
			used += (size_t)snprintf(buf + used, len - used, " in ");
			used += used < len ? lines_text(in, r, c, buf + used, len - used) : 0;
		}
		if (used < len)
			snprintf(buf + used, len - used, " before launching again%s",
				 r->lines[c][0].ns ? ""
				 : r->host_samples
				     ? ""
				     : " (no host samples name where: record with --sample "
				       "python,native)");
		return;
	default:
		snprintf(buf, len,
			 "work was submitted but started later: it waited on an event, another "
			 "stream or a copy");
	}
}

/* A row's verdict of class c into f. */
static void step_finding(const struct diag_input *in, const struct bound_row *r, enum bound_class c,
			 struct diag_finding *f)
{
	struct report_section *rs = diag_sec(in, r->section);
	char w[200], d[32], src[200];
	size_t used;

	steps_source(in, r, src, sizeof(src));
	f->step_share = diag_pct(r->ns[c], r->step_ns);
	used =
	    (size_t)snprintf(f->figure, sizeof(f->figure),
			     "%s: %s %.1f%% of the step (median step %s, %" PRIu64 " steps of %s",
			     class_text[c].rule, class_text[c].doing, f->step_share,
			     tally_fmt_ns(d, sizeof(d), r->median_step), r->nsteps, src);
	if (used < sizeof(f->figure))
		used += (size_t)snprintf(f->figure + used, sizeof(f->figure) - used, "%s)",
					 r->warmup ? ", after warm-up" : "");
	if (used < sizeof(f->figure))
		the_rest(r, c, f->figure + used, sizeof(f->figure) - used);
	snprintf(f->proof, sizeof(f->proof), "%s; %s",
		 rs && !rs->verdict.complete
		     ? "a bound: records were lost in this process, so the GPU's busy time is a "
		       "lower bound"
		     : "the GPU's part is exact (the ledger proves its idle time)",
		 r->host_samples
		     ? "the host's split is from its blocking calls (exact) and "
		       "samples (each stands for its thread's time to the next)"
		     : "without host samples, idle time after a sync is counted sync and "
		       "the rest launch (record with --sample python,native --trace osrt "
		       "to see waits)");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u; the steps from %s",
		 diag_who(in, r->section, w, sizeof(w)), r->device, src);
	why_of(in, r, c, f->why, sizeof(f->why));
	f->try_ = class_text[c].try_;
}

/* The findings of class c: the row with the largest share, and how many more rows name it. */
static int rule_class(const struct diag_input *in, enum bound_class c, struct diag_finding *out,
		      size_t *n, size_t cap)
{
	const struct bound_row *worst = NULL;
	uint64_t cost = 0;
	size_t i, count = 0;
	struct diag_finding *f;

	for (i = 0; i < in->nbound; i++) {
		const struct bound_row *r = &in->bound[i];
		uint64_t span = span_of(in, r);

		if (!r->step_ns || !class_named(r, c))
			continue;
		count++;
		cost =
		    tally_add_sat(cost, span && r->ns[c] > span ? span : r->ns[c], &(bool){false});
		if (!worst ||
		    diag_pct(r->ns[c], r->step_ns) > diag_pct(worst->ns[c], worst->step_ns))
			worst = r;
	}
	if (!worst || !(f = diag_add(out, n, cap, class_text[c].rule)))
		return 0;
	f->order = 1;
	f->cost = cost;
	step_finding(in, worst, c, f);
	if (count > 1) {
		size_t len = strlen(f->figure);
		char d[32];

		snprintf(f->figure + len, sizeof(f->figure) - len,
			 "; and %zu more process(es) or device(s) (%s in all)", count - 1,
			 tally_fmt_ns(d, sizeof(d), cost));
	}
	return 0;
}

int diag_rule_gpu_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			size_t cap)
{
	return rule_class(in, BOUND_GPU, out, n, cap);
}

int diag_rule_comm_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap)
{
	return rule_class(in, BOUND_COMM, out, n, cap);
}

int diag_rule_data_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap)
{
	return rule_class(in, BOUND_DATA, out, n, cap);
}

int diag_rule_launch_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			   size_t cap)
{
	return rule_class(in, BOUND_LAUNCH, out, n, cap);
}

int diag_rule_sync_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap)
{
	return rule_class(in, BOUND_SYNC, out, n, cap);
}

int diag_rule_wait_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			 size_t cap)
{
	return rule_class(in, BOUND_WAIT, out, n, cap);
}

int diag_rule_dependency_bound(const struct diag_input *in, struct diag_finding *out, size_t *n,
			       size_t cap)
{
	return rule_class(in, BOUND_OTHER, out, n, cap);
}

/* ---- start-up and the tail ----------------------------------------------------------------- */

#define DIAG_PHASE_PCT 10.0 /* start-up or tail named from this share of the process's run */

/* "imports 4.1 s, the model to the GPU 0.9 s, ..." (causes of 5% of the phase and more). */
static void causes_text(const struct diag_input *in, const struct bound_row *r,
			const uint64_t *cause, uint64_t phase, const struct bound_line *top,
			char *buf, size_t len)
{
	uint64_t sampled = 0;
	size_t used = 0;
	char d[32], l[600];
	unsigned k, shown = 0;

	for (k = 0; k < BOUND_CAUSES; k++)
		sampled += cause[k];
	for (k = 0; k < BOUND_CAUSES && used < len; k++) {
		if (!cause[k] || diag_pct(cause[k], phase) < 5)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s %s", shown++ ? ", " : "",
					 bound_cause_name(k), tally_fmt_ns(d, sizeof(d), cause[k]));
		if (k == CAUSE_OTHER && top->ns && used < len)
			used += (size_t)snprintf(buf + used, len - used, " (most in %s)",
						 line(in, r->section, top->line, l, sizeof(l)));
	}
	if (!shown && used < len)
		used += (size_t)snprintf(buf + used, len - used,
					 "no sample of the main thread says what (record with "
					 "--sample python)");
	if (sampled < phase && diag_pct(phase - sampled, phase) >= 5 && used < len)
		snprintf(buf + used, len - used, "%s%s with no sample of the main thread",
			 used ? ", " : "", tally_fmt_ns(d, sizeof(d), phase - sampled));
}

static int rule_phase(const struct diag_input *in, bool tail, struct diag_finding *out, size_t *n,
		      size_t cap)
{
	const struct bound_row *worst = NULL;
	uint64_t cost = 0, len, run;
	size_t i, count = 0;
	struct diag_finding *f;
	char w[200], d1[32], d2[32], d3[32];

	for (i = 0; i < in->nbound; i++) {
		const struct bound_row *r = &in->bound[i];

		len = tail ? r->tail_t1 - r->tail_t0 : r->startup_t1 - r->startup_t0;
		if (diag_pct(len, r->run_t1 - r->run_t0) < DIAG_PHASE_PCT)
			continue;
		count++;
		cost = tally_add_sat(cost, tail ? r->idle_tail : r->idle_startup, &(bool){false});
		if (!worst || len > (tail ? worst->tail_t1 - worst->tail_t0
					  : worst->startup_t1 - worst->startup_t0))
			worst = r;
	}
	if (!worst || !(f = diag_add(out, n, cap, tail ? "tail" : "start-up")))
		return 0;
	len = tail ? worst->tail_t1 - worst->tail_t0 : worst->startup_t1 - worst->startup_t0;
	run = worst->run_t1 - worst->run_t0;
	f->cost = cost;
	snprintf(f->figure, sizeof(f->figure),
		 "%s: %s %s the steps (%.1f%% of the process's %s), reported apart from them; "
		 "the GPU idle %s of it",
		 tail ? "tail" : "start-up", tally_fmt_ns(d1, sizeof(d1), len),
		 tail ? "after" : "before", diag_pct(len, run), tally_fmt_ns(d2, sizeof(d2), run),
		 tally_fmt_ns(d3, sizeof(d3), tail ? worst->idle_tail : worst->idle_startup));
	snprintf(f->proof, sizeof(f->proof),
		 "exact for its length (%s); its parts from the main thread's samples",
		 tail ? "from the last step's end to the last record"
		      : "from the session start or the first record to the first steady step");
	snprintf(f->where, sizeof(f->where), "%s, GPU %u; +%.3f s to +%.3f s",
		 diag_who(in, worst->section, w, sizeof(w)), worst->device,
		 diag_at_s(in, tail ? worst->tail_t0 : worst->startup_t0),
		 diag_at_s(in, tail ? worst->tail_t1 : worst->startup_t1));
	causes_text(in, worst, tail ? worst->tail_cause : worst->startup_cause, len,
		    tail ? &worst->tail_line : &worst->startup_line, f->why, sizeof(f->why));
	if (count > 1) {
		size_t used = strlen(f->figure);

		snprintf(f->figure + used, sizeof(f->figure) - used, "; and %zu more process(es)",
			 count - 1);
	}
	f->try_ = tail ? "keep the tail out of a measured run (tally record --duration, or "
			 "--capture-range cudaProfilerApi around the steps)"
		       : "measure the steps only (tally record --delay, or --capture-range "
			 "cudaProfilerApi); shorten start-up where it repeats: compilation caches, "
			 "persistent_workers, lazy imports";
	return 0;
}

int diag_rule_startup(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	return rule_phase(in, false, out, n, cap);
}

int diag_rule_tail(const struct diag_input *in, struct diag_finding *out, size_t *n, size_t cap)
{
	return rule_phase(in, true, out, n, cap);
}

void diag_idle_phases(const struct diag_input *in, unsigned section, uint32_t device, char *buf,
		      size_t len)
{
	char d1[32], d2[32], d3[32];
	size_t i;

	*buf = '\0';
	for (i = 0; i < in->nbound; i++) {
		const struct bound_row *r = &in->bound[i];

		if (r->section == section && r->device == device)
			snprintf(buf, len,
				 "; of it %s in start-up, %s in the steps, %s in the tail",
				 tally_fmt_ns(d1, sizeof(d1), r->idle_startup),
				 tally_fmt_ns(d2, sizeof(d2), r->idle_steps),
				 tally_fmt_ns(d3, sizeof(d3), r->idle_tail));
	}
}

void diag_steps_of(const struct diag_input *in, unsigned section, char *buf, size_t len)
{
	size_t i;

	*buf = '\0';
	for (i = 0; i < in->nbound; i++) {
		const struct bound_row *r = &in->bound[i];
		enum bound_class c = bound_verdict(r);

		if (r->section == section && r->step_ns) {
			snprintf(buf, len, "; its own steps: %s, %.1f%% of the step",
				 class_text[c].rule, diag_pct(r->ns[c], r->step_ns));
			return;
		}
	}
}
