/* SPDX-License-Identifier: MIT */
/* The verdict rules of docs/ledger.md. */
#include "verdict.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"

static struct tally_reason *add_reason(struct tally_verdict *v, enum tally_reason_code code,
				       unsigned counter, uint64_t count)
{
	struct tally_reason *r = tally_array_push(&v->reasons, &v->nreasons, sizeof(*r));

	if (!r)
		return NULL;
	r->code = code;
	r->counter = counter;
	r->count = count;
	return r;
}

static void say(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

/* What to change, per loss counter. */
static const char *loss_hint(unsigned counter)
{
	switch (counter) {
	case TALLY_C_DROPPED_CUPTI:
		return "give CUPTI more buffer space (TALLY_BUFFER_SIZE, TALLY_POOL_BUFFERS), "
		       "trace "
		       "fewer kinds (--trace), or a shorter window (--duration)";
	case TALLY_C_BAD_TIME:
		return "the GPU's device buffers ran out: raise TALLY_DEVICE_BUFFER_POOL_LIMIT or "
		       "TALLY_DEVICE_BUFFER_SIZE, or record a shorter window";
	case TALLY_C_UNKNOWN_KIND:
	case TALLY_C_PARSE_FAILURES:
		return "this tally does not decode all of what CUPTI produced: use a tally built "
		       "for this CUDA version, or trace fewer kinds";
	case TALLY_C_UNMATCHED_API:
		return "GPU records never arrived for these calls: the program may have ended "
		       "before CUDA delivered them (see flush_path), or device buffers overflowed";
	case TALLY_C_UNMATCHED_GPU:
		return "the calls that launched this work were not recorded: trace the runtime "
		       "and driver API (--trace cuda) from the start of the program";
	case TALLY_C_WRITE_FAILURES:
	case TALLY_C_CHUNKS_LOST:
	case TALLY_C_RECORDS_LOST_WRITE:
	case TALLY_C_BYTES_LOST:
		return "the output could not take the data: free space or write elsewhere "
		       "(tally doctor -o PATTERN checks the place)";
	case TALLY_C_WATCHDOG_FIRED:
		return "CUPTI's flush hung and was abandoned: records still inside CUPTI were lost";
	case TALLY_C_DROPPED_INPROCESS:
		return "tally's consumer fell behind: raise TALLY_POOL_BUFFERS";
	case TALLY_C_SAMPLES_DROPPED:
		return "samples came faster than tally wrote them: lower the rate (--sample-rate), "
		       "sample fewer kinds (--sample python or native), or raise "
		       "TALLY_POOL_BUFFERS";
	case TALLY_C_SAMPLE_STALLS:
		return "the sampler did not get the CPU (an overloaded machine), or the kernel "
		       "throttled sampling: samples are missing in these windows, not time idle";
	case TALLY_C_OSRT_DROPPED:
		return "blocking calls came faster than tally wrote them: raise --osrt-threshold";
	case TALLY_C_METRIC_GAPS:
	case TALLY_C_METRIC_OVERFLOWS:
		return "the GPU metrics are unproven in these windows (not idle, not busy): sample "
		       "less often (--gpu-metrics-frequency) or fewer metrics (--gpu-metrics-set)";
	case TALLY_C_METRIC_DROPPED:
		return "tally could not keep these metric samples (see the notes): the metrics are "
		       "unproven in these windows";
	case TALLY_C_METRIC_FAILURES:
		return "metric sampling stopped early (the notes say on which device and why): the "
		       "metrics are unproven from then on; the other records are not affected";
	case TALLY_C_MERGE_DAMAGED:
		return "an input of tally merge was damaged (see the notes): tally check it, "
		       "and merge an intact copy if there is one";
	case TALLY_C_BUFFERS_UNQUEUED:
		return "the pipeline's queue had no room for a CUPTI buffer (a fault of tally's: "
		       "report it); its records were not parsed";
	default:
		return "";
	}
}

/* Seconds from the section's origin to t (CUPTI ns); 0 when either is unknown. */
static double rel_s(const struct tally_section *s, uint64_t t)
{
	uint64_t origin = tally_section_origin(s);

	return t && origin && t >= origin ? (double)(t - origin) / 1e9 : 0;
}

/* "the disk filled (ENOSPC) from +12.000 s to +14.000 s: ...": what failed, and when (1.3). */
static void write_failed_hint(const struct tally_section *s, struct tally_reason *r)
{
	const uint64_t *c = s->ledger.v;
	char when[96] = "";

	if (c[TALLY_C_WRITE_FIRST_FAILED_AT])
		snprintf(when, sizeof(when), " from +%.3f s to +%.3f s",
			 rel_s(s, c[TALLY_C_WRITE_FIRST_FAILED_AT]),
			 rel_s(s, c[TALLY_C_WRITE_LAST_FAILED_AT]));
	if (c[TALLY_C_FD_LOST_WRITES])
		say(r->hint, sizeof(r->hint),
		    "the program closed tally's descriptor of the trace%s and it could not be "
		    "opened "
		    "again (%s): %llu bytes lost",
		    when,
		    c[TALLY_C_WRITE_ERRNO] == ESTALE   ? "its path named another file"
		    : c[TALLY_C_WRITE_ERRNO] == ENOENT ? "removed or renamed"
						       : strerror((int)c[TALLY_C_WRITE_ERRNO]),
		    (unsigned long long)c[TALLY_C_BYTES_LOST]);
	else if (c[TALLY_C_WRITE_ERRNO] == ENOSPC)
		say(r->hint, sizeof(r->hint),
		    "the disk filled (ENOSPC)%s, %llu bytes lost%s: record where there is room",
		    when, (unsigned long long)c[TALLY_C_BYTES_LOST],
		    c[TALLY_C_CLOSE_RESERVE_USED] ? " (the room kept for the close took the final "
						    "ledger)"
						  : "");
	else
		say(r->hint, sizeof(r->hint), "writes failed%s with errno %llu (%s): %s", when,
		    (unsigned long long)c[TALLY_C_WRITE_ERRNO],
		    strerror((int)c[TALLY_C_WRITE_ERRNO]), loss_hint(TALLY_C_WRITE_FAILURES));
}

/* The metric breaks by cause (counters 95, 96; docs/ledger.md), in the hint's 200 characters. */
static void metric_gaps_hint(const struct tally_section *s, struct tally_reason *r)
{
	const uint64_t *c = s->ledger.v;
	uint64_t hw = c[TALLY_C_METRIC_GAPS_HARDWARE], late = c[TALLY_C_METRIC_GAPS_LATE];
	uint64_t other =
	    c[TALLY_C_METRIC_GAPS] > hw + late ? c[TALLY_C_METRIC_GAPS] - hw - late : 0;
	char part[3][96] = {"", "", ""};

	if (!hw && !late) {
		say(r->hint, sizeof(r->hint), "%s", loss_hint(TALLY_C_METRIC_GAPS));
		return;
	}
	if (hw)
		say(part[0], sizeof(part[0]),
		    "%llu the GPU's own (no sample taken; tally left none out), ",
		    (unsigned long long)hw);
	if (late)
		say(part[1], sizeof(part[1]),
		    "%llu a late decode (the sampler lacked CPU: lower --gpu-metrics-frequency), ",
		    (unsigned long long)late);
	if (other)
		say(part[2], sizeof(part[2]), "%llu an overflow, stop or context's end, ",
		    (unsigned long long)other);
	say(r->hint, sizeof(r->hint), "metrics unproven there: %s%s%ssee note gpu-metrics-breaks",
	    part[0], part[1], part[2]);
}

static void reason_loss(struct tally_verdict *v, const struct tally_section *s, unsigned id)
{
	const struct tally_counter_info *ci = tally_counter_info(id);
	struct tally_reason *r = add_reason(v, TALLY_R_LOSS, id, s->ledger.v[id]);
	size_t i, nwin = 0;

	if (!r)
		return;
	for (i = 0; i < s->nwindows; i++)
		nwin += s->windows[i].counter == id;
	say(r->text, sizeof(r->text), "%s: %llu %s%s", ci->name,
	    (unsigned long long)s->ledger.v[id], ci->what, nwin ? "" : " (no time window known)");
	if (id == TALLY_C_WRITE_FAILURES && s->ledger.v[TALLY_C_WRITE_ERRNO])
		write_failed_hint(s, r);
	else if (id == TALLY_C_SAMPLE_STALLS && s->ledger.v[TALLY_C_FDS_REOPENED])
		say(r->hint, sizeof(r->hint),
		    "the program closed tally's descriptors (%llu times; the notes say which and "
		    "when) and sampling stopped until tally opened them again, or the sampler did "
		    "not get the CPU",
		    (unsigned long long)s->ledger.v[TALLY_C_FDS_REOPENED]);
	else if (id == TALLY_C_METRIC_GAPS)
		metric_gaps_hint(s, r);
	else
		say(r->hint, sizeof(r->hint), "%s", loss_hint(id));
}

static const char *damage_hint(enum tally_damage_kind k)
{
	switch (k) {
	case TALLY_DAMAGE_TRUNCATED:
		return "the file ends mid-chunk: the writer was killed or the disk filled";
	case TALLY_DAMAGE_PARTIAL:
		return "a chunk cut short with intact chunks after it: a write that failed part "
		       "way (a full disk, an I/O error), or damage after writing";
	default:
		return "the file was damaged after it was written (storage or copy)";
	}
}

static void check_damage(const struct tally_file *f, const struct tally_section *s,
			 struct tally_verdict *v)
{
	size_t i;

	for (i = 0; i < f->ndamage; i++) {
		const struct tally_damage *d = &f->damage[i];
		struct tally_reason *r;

		if (d->section != (int)s->index && !(d->section < 0 && s->index == 0))
			continue;
		r = add_reason(v, TALLY_R_DAMAGED, 0, d->end - d->offset);
		if (!r)
			return;
		if (d->kind == TALLY_DAMAGE_SEQ_GAP && s->ledger.v[TALLY_C_CHUNKS_LOST]) {
			say(r->text, sizeof(r->text), "%u chunk(s) missing before offset %llu",
			    d->missing, (unsigned long long)d->offset);
			say(r->hint, sizeof(r->hint),
			    "chunks the writer could not write (the ledger counts %llu "
			    "chunks_lost): "
			    "see write_failures",
			    (unsigned long long)s->ledger.v[TALLY_C_CHUNKS_LOST]);
			continue;
		}
		if (d->kind == TALLY_DAMAGE_SEQ_GAP)
			say(r->text, sizeof(r->text), "%u chunk(s) missing before offset %llu",
			    d->missing, (unsigned long long)d->offset);
		else
			say(r->text, sizeof(r->text), "%s: bytes %llu-%llu of %s unreadable",
			    tally_damage_kind_name(d->kind), (unsigned long long)d->offset,
			    (unsigned long long)d->end, f->path);
		say(r->hint, sizeof(r->hint), "%s", damage_hint(d->kind));
	}
}

/* "SIGTERM", or "signal 40" for one without a name. */
static void signal_name(char *dst, size_t len, uint64_t sig)
{
	const char *abbrev = sig < 65 ? sigabbrev_np((int)sig) : NULL;

	if (abbrev)
		say(dst, len, "SIG%s", abbrev);
	else
		say(dst, len, "signal %llu", (unsigned long long)sig);
}

/* A signal was to end the process and the close never finished: say which, when, and what
 * gives the close the time it needs. */
static void not_closed_after_signal(const struct tally_section *s, struct tally_reason *r)
{
	const uint64_t *c = s->ledger.v;
	char name[32];

	signal_name(name, sizeof(name), c[TALLY_C_SIGNAL_RECEIVED]);
	say(r->text, sizeof(r->text),
	    "%s at +%.1f s; the close did not finish before the process was killed (%llu "
	    "signal(s) in all; the last ledger is slice %llu)",
	    name, (double)c[TALLY_C_SIGNAL_AT] / 1e9,
	    (unsigned long long)c[TALLY_C_SIGNALS_RECEIVED], (unsigned long long)s->ledger.slice);
	say(r->hint, sizeof(r->hint),
	    "give the close more time before SIGKILL: raise Slurm's KillWait, signal earlier "
	    "(sbatch --signal=TERM@120), or keep the backlog small (fewer --trace kinds)");
}

/*
 * Why a section did not close.  A full disk stops the ledger too, so the last ledger that made
 * it names ENOSPC only when earlier writes already failed; otherwise all three stay possible.
 */
static void close_hint(const struct tally_section *s, struct tally_reason *r)
{
	uint64_t err = s->ledger.v[TALLY_C_WRITE_ERRNO];

	if (s->ledger.v[TALLY_C_FD_LOST_WRITES])
		say(r->hint, sizeof(r->hint),
		    "the program closed tally's descriptor of the trace and it could not be opened "
		    "again (%s): nothing more reached it",
		    err ? strerror((int)err) : "?");
	else if (s->ledger.v[TALLY_C_WRITE_FAILURES] && err == ENOSPC)
		say(r->hint, sizeof(r->hint),
		    "the disk filled: writes failed with ENOSPC (No space left on device) before "
		    "the end; record to a file system with room (tally doctor checks free space)");
	else if (s->ledger.v[TALLY_C_WRITE_FAILURES] && err)
		say(r->hint, sizeof(r->hint), "writes were failing (%s) before the end",
		    strerror((int)err));
	else if (s->output_fs && !s->close_reserve)
		say(r->hint, sizeof(r->hint),
		    "killed (SIGKILL, OOM), crashed, or the disk filled: no room could be kept for "
		    "the closing ledger on this %s file system (%s), so a full disk leaves no "
		    "ledger to say so: check free space; a shorter TALLY_SLICE_MS bounds what such "
		    "an end loses",
		    s->output_fs,
		    s->close_reserve_errno ? strerror((int)s->close_reserve_errno) : "refused");
	else
		say(r->hint, sizeof(r->hint),
		    "killed (SIGKILL, OOM), crashed, or the disk filled (ENOSPC leaves no ledger "
		    "to say so: check free space): a shorter TALLY_SLICE_MS bounds what such an "
		    "end loses");
}

static void check_close(const struct tally_section *s, struct tally_verdict *v)
{
	struct tally_reason *r;

	if (s->implicit && (r = add_reason(v, TALLY_R_NO_SESSION, 0, 0)))
		say(r->text, sizeof(r->text), "the session header is lost: process facts unknown");
	if (s->has_final)
		return;
	r = add_reason(v, TALLY_R_NOT_CLOSED, 0, 0);
	if (!r)
		return;
	if (s->ledger.v[TALLY_C_SIGNAL_RECEIVED]) {
		not_closed_after_signal(s, r);
		return;
	}
	if (s->ledgers)
		say(r->text, sizeof(r->text),
		    "no final ledger: the process ended without tally's closing flush; records "
		    "after t=%llu ns (the last ledger, slice %llu) are missing",
		    (unsigned long long)s->ledger.t_end, (unsigned long long)s->ledger.slice);
	else
		say(r->text, sizeof(r->text),
		    "no ledger at all: the process ended before tally's first time slice");
	close_hint(s, r);
}

static void check_buffers(const struct tally_section *s, struct tally_verdict *v)
{
	const uint64_t *c = s->ledger.v;
	uint64_t handed = c[TALLY_C_BUFFERS_REQUESTED] - c[TALLY_C_BUFFERS_REFUSED];
	struct tally_reason *r;

	/* a buffer still empty at close came back with nothing: it is not owed */
	handed = handed > c[TALLY_C_BUFFERS_EMPTY_AT_CLOSE]
		     ? handed - c[TALLY_C_BUFFERS_EMPTY_AT_CLOSE]
		     : 0;
	if (!s->has_final || c[TALLY_C_BUFFERS_STRANDED] || handed <= c[TALLY_C_BUFFERS_DELIVERED])
		return;
	r = add_reason(v, TALLY_R_STRANDED, TALLY_C_BUFFERS_DELIVERED,
		       handed - c[TALLY_C_BUFFERS_DELIVERED]);
	if (r)
		say(r->text, sizeof(r->text), "%llu buffer(s) handed to CUPTI never came back",
		    (unsigned long long)(handed - c[TALLY_C_BUFFERS_DELIVERED]));
}

static void check_records(const struct tally_section *s, struct tally_verdict *v)
{
	const uint64_t *c = s->ledger.v;
	uint64_t written = 0, k;
	struct tally_reason *r;

	if (c[TALLY_C_LAUNCH_CALLS] && !c[TALLY_C_GPU_RECORDS] &&
	    (r = add_reason(v, TALLY_R_NO_GPU_RECORDS, 0, c[TALLY_C_LAUNCH_CALLS]))) {
		say(r->text, sizeof(r->text),
		    "%llu calls launched GPU work but not one GPU record arrived",
		    (unsigned long long)c[TALLY_C_LAUNCH_CALLS]);
		say(r->hint, sizeof(r->hint),
		    "CUPTI delivered no kernel records: another profiler "
		    "may hold CUPTI (see notes), or run tally doctor");
	}
	if (!s->has_final)
		return;
	for (k = 1; k < TALLY_KIND_MAX; k++)
		written += c[TALLY_C_BY_KIND + k];
	if (written > s->records_total + c[TALLY_C_RECORDS_LOST_WRITE] &&
	    (r = add_reason(v, TALLY_R_MISSING_RECORDS, 0,
			    written - s->records_total - c[TALLY_C_RECORDS_LOST_WRITE])))
		say(r->text, sizeof(r->text),
		    "the ledger counts %llu records written, the file "
		    "holds %llu",
		    (unsigned long long)written, (unsigned long long)s->records_total);
}

/* A summary's section: the verdict judged on the trace it was made from, as it recorded it. */
static void summary_verdict(const struct tally_section *s, struct tally_verdict *v)
{
	struct tally_reason *r;
	size_t i;

	if (!s->facts) {
		if ((r = add_reason(v, TALLY_R_DAMAGED, 0, 0))) {
			say(r->text, sizeof(r->text),
			    "a summary section without its SUMMARY facts: what its trace held is "
			    "unknown");
			say(r->hint, sizeof(r->hint), "make the summary again from the trace");
		}
		return;
	}
	for (i = 0; i < s->facts->nreasons; i++) {
		const struct tally_summary_reason *sr = &s->facts->reasons[i];

		if (!(r = add_reason(v, (enum tally_reason_code)sr->code, sr->counter, sr->count)))
			return;
		say(r->text, sizeof(r->text), "%s", sr->text);
		say(r->hint, sizeof(r->hint), "%s", sr->hint);
	}
	/* judged INCOMPLETE with no reason given: still INCOMPLETE, and that is the reason */
	if (!s->facts->complete && !s->facts->nreasons &&
	    (r = add_reason(v, TALLY_R_DAMAGED, 0, 0))) {
		say(r->text, sizeof(r->text),
		    "the summary says its trace was INCOMPLETE but gives no reason");
		say(r->hint, sizeof(r->hint),
		    "read the trace itself (tally check), or make the summary again from it");
	}
}

int tally_verdict_compute(const struct tally_file *f, const struct tally_section *s,
			  struct tally_verdict *v)
{
	unsigned i;

	memset(v, 0, sizeof(*v));
	if (s->summary) {
		summary_verdict(s, v);
		check_damage(f, s, v);
		v->complete = v->nreasons == 0;
		return 0;
	}
	check_close(s, v);
	check_damage(f, s, v);
	for (i = 0; i < tally_loss_counters_count; i++)
		if (s->ledger.v[tally_loss_counters[i]])
			reason_loss(v, s, tally_loss_counters[i]);
	check_buffers(s, v);
	check_records(s, v);
	v->complete = v->nreasons == 0;
	return 0;
}

void tally_verdict_fini(struct tally_verdict *v)
{
	free(v->reasons);
	memset(v, 0, sizeof(*v));
}

bool tally_files_complete(struct tally_file *const *files, size_t nfiles)
{
	size_t i, j;

	for (i = 0; i < nfiles; i++) {
		if (files[i]->nsections == 0)
			return false;
		for (j = 0; j < files[i]->nsections; j++) {
			struct tally_verdict v;
			bool ok;

			tally_verdict_compute(files[i], files[i]->sections[j], &v);
			ok = v.complete;
			tally_verdict_fini(&v);
			if (!ok)
				return false;
		}
	}
	return true;
}

const char *tally_reason_code_name(enum tally_reason_code c)
{
	switch (c) {
	case TALLY_R_NOT_CLOSED:
		return "not-closed";
	case TALLY_R_DAMAGED:
		return "damaged";
	case TALLY_R_LOSS:
		return "loss";
	case TALLY_R_STRANDED:
		return "buffers-stranded";
	case TALLY_R_NO_GPU_RECORDS:
		return "no-gpu-records";
	case TALLY_R_MISSING_RECORDS:
		return "missing-records";
	case TALLY_R_NO_SESSION:
		return "no-session";
	}
	return "unknown";
}
