/* SPDX-License-Identifier: MIT */
/*
 * What every report says first: whether the traces are COMPLETE and, if not, what was lost,
 * where (time windows) and what to change.  A reader of a summary table must never take a gap
 * for idle time or a short count for the truth.
 */
#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "text.h"
#include "trace-set.h"

#define MAX_WINDOWS_SHOWN 8

/* Seconds of t after the section's start (for "when" lines). */
static double report_rel_s(const struct report_section *rs, uint64_t t)
{
	const struct tally_section *s = rs->s;
	uint64_t t0 = tally_section_origin(s);

	if (!t0)
		t0 = t;

	return ((double)t - (double)t0) / 1e9;
}

static void text_windows(FILE *out, const char *prefix, const struct report_section *rs,
			 unsigned counter)
{
	const struct tally_section *s = rs->s;
	size_t i, shown = 0, total = 0;

	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];

		if (w->counter != counter)
			continue;
		if (total++ >= MAX_WINDOWS_SHOWN)
			continue;
		shown++;
		fprintf(out, "%s      lost in %+.3f s .. %+.3f s: %" PRIu64 "\n", prefix,
			report_rel_s(rs, w->t_begin), report_rel_s(rs, w->t_end), w->count);
	}
	if (total > shown)
		fprintf(out, "%s      ... %zu more window(s) (--format json lists all)\n", prefix,
			total - shown);
}

static void text_section(FILE *out, const char *prefix, const struct report_section *rs)
{
	const struct tally_verdict *v = &rs->verdict;
	char label[300];
	size_t i;

	fprintf(out, "%s  %s [%u] %s: %s\n", prefix, tally_text_shown(rs->in->path), rs->s->index,
		report_section_label(rs, label, sizeof(label)),
		v->complete ? "COMPLETE" : "INCOMPLETE");
	for (i = 0; i < v->nreasons; i++) {
		const struct tally_reason *r = &v->reasons[i];

		fprintf(out, "%s    - %s\n", prefix, tally_text_shown(r->text));
		if (r->code == TALLY_R_LOSS)
			text_windows(out, prefix, rs, r->counter);
		if (r->hint[0])
			fprintf(out, "%s      fix: %s\n", prefix, r->hint);
	}
}

void report_loss_text(FILE *out, const struct report_set *set, const char *prefix)
{
	size_t i, complete = 0;

	fprintf(out, "%stally: %zu file(s), %zu section(s), %" PRIu64 " records: %s\n", prefix,
		set->ninputs, set->nsections, set->records,
		set->complete ? "COMPLETE"
			      : "INCOMPLETE - data was lost; a gap is not idle time, a count is "
				"a lower bound");
	if (set->complete)
		return;
	for (i = 0; i < set->ninputs; i++)
		if (set->inputs[i].f->nsections == 0)
			fprintf(out, "%s  %s: no readable section (nothing in it could be read)\n",
				prefix, tally_text_shown(set->inputs[i].path));
	for (i = 0; i < set->nsections; i++) {
		if (set->sections[i]->verdict.complete)
			complete++;
		else
			text_section(out, prefix, set->sections[i]);
	}
	if (complete)
		fprintf(out, "%s  %zu other section(s) COMPLETE\n", prefix, complete);
}

static void json_windows(struct tally_json *j, const struct report_section *rs, unsigned counter)
{
	const struct tally_section *s = rs->s;
	size_t i;

	tally_json_name(j, "windows");
	tally_json_array_begin(j);
	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];

		if (w->counter != counter)
			continue;
		tally_json_object_begin(j);
		tally_json_field_uint(j, "begin_ns", report_time(rs, w->t_begin));
		tally_json_field_uint(j, "end_ns", report_time(rs, w->t_end));
		tally_json_field_double(j, "begin_s", report_rel_s(rs, w->t_begin));
		tally_json_field_double(j, "end_s", report_rel_s(rs, w->t_end));
		tally_json_field_uint(j, "count", w->count);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

void report_drops_fields(struct tally_json *j, const struct tally_drops *d)
{
	tally_json_field_string(j, "source", tally_drop_source_name(d->source));
	tally_json_field_uint(j, "context", d->context);
	tally_json_field_uint(j, "device", d->device);
	tally_json_field_uint(j, "stream", d->stream);
	tally_json_field_uint(j, d->source == TALLY_DROPS_SEEN ? "gpu_records" : "dropped",
			      d->count);
}

void report_drops_array(struct tally_json *j, const struct tally_section *s)
{
	size_t i;

	tally_json_array_begin(j);
	for (i = 0; i < s->ndrops; i++) {
		tally_json_object_begin(j);
		report_drops_fields(j, &s->drops[i]);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

void report_verdict_json(struct tally_json *j, const struct report_section *rs)
{
	const struct tally_verdict *v = &rs->verdict;
	size_t i;

	tally_json_field_int(j, "clock_offset_ns", rs->offset);
	tally_json_field_string(j, "verdict", v->complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_name(j, "reasons");
	tally_json_array_begin(j);
	for (i = 0; i < v->nreasons; i++) {
		const struct tally_reason *r = &v->reasons[i];
		const struct tally_counter_info *ci = tally_counter_info(r->counter);

		tally_json_object_begin(j);
		tally_json_field_string(j, "code", tally_reason_code_name(r->code));
		if (r->code == TALLY_R_LOSS && ci)
			tally_json_field_string(j, "counter", ci->name);
		tally_json_field_uint(j, "count", r->count);
		tally_json_field_string(j, "text", r->text);
		tally_json_field_string(j, "hint", r->hint);
		if (r->code == TALLY_R_LOSS)
			json_windows(j, rs, r->counter);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

void report_loss_section_json(struct tally_json *j, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;

	tally_json_object_begin(j);
	tally_json_field_uint(j, "section", rs->index);
	tally_json_field_uint(j, "file_section", s->index);
	tally_json_field_uint(j, "pid", s->pid);
	tally_json_field_string(j, "host", s->host);
	tally_json_field_string(j, "rank", s->rank);
	tally_json_field_uint(j, "records", s->records_total);
	report_verdict_json(j, rs);
	tally_json_name(j, "drops");
	report_drops_array(j, s);
	tally_json_object_end(j);
}

void report_loss_json(struct tally_json *j, const struct report_set *set)
{
	size_t i, k;

	tally_json_field_string(j, "verdict", set->complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_field_uint(j, "records", set->records);
	tally_json_name(j, "inputs");
	tally_json_array_begin(j);
	for (i = 0; i < set->ninputs; i++) {
		const struct report_input *in = &set->inputs[i];

		tally_json_object_begin(j);
		tally_json_field_string(j, "path", in->path);
		tally_json_field_uint(j, "size", in->f->size);
		tally_json_name(j, "damage");
		tally_json_array_begin(j);
		for (k = 0; k < in->f->ndamage; k++) {
			const struct tally_damage *d = &in->f->damage[k];

			tally_json_object_begin(j);
			tally_json_field_string(j, "kind", tally_damage_kind_name(d->kind));
			tally_json_field_uint(j, "offset", d->offset);
			tally_json_field_uint(j, "end", d->end);
			tally_json_object_end(j);
		}
		tally_json_array_end(j);
		tally_json_name(j, "sections");
		tally_json_array_begin(j);
		for (k = 0; k < set->nsections; k++)
			if (set->sections[k]->in == in)
				report_loss_section_json(j, set->sections[k]);
		tally_json_array_end(j);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

void report_warn_damage(const struct report_set *set, FILE *out, const char *prog)
{
	size_t i, k;

	for (i = 0; i < set->ninputs; i++) {
		const struct tally_file *f = set->inputs[i].f;

		for (k = 0; k < f->ndamage; k++) {
			const struct tally_damage *d = &f->damage[k];

			if (d->kind == TALLY_DAMAGE_SEQ_GAP)
				fprintf(
				    out,
				    "%s: warning: %s: %u chunk(s) missing before offset %" PRIu64
				    "\n",
				    prog, tally_text_shown(set->inputs[i].path), d->missing,
				    d->offset);
			else
				fprintf(out,
					"%s: warning: %s: %s at offset %" PRIu64 " (bytes %" PRIu64
					"-%" PRIu64 " unreadable)\n",
					prog, tally_text_shown(set->inputs[i].path),
					tally_damage_kind_name(d->kind), d->offset, d->offset,
					d->end);
		}
		if (f->nsections == 0)
			fprintf(out, "%s: warning: %s: no readable section\n", prog,
				tally_text_shown(set->inputs[i].path));
	}
	for (i = 0; i < set->nduplicates; i++) {
		const struct report_section *d = set->duplicates[i];
		char label[300];

		fprintf(out,
			"%s: warning: %s: section %u (%s) repeats a session already read from %s: "
			"counted once\n",
			prog, tally_text_shown(d->in->path), d->s->index,
			report_section_label(d, label, sizeof(label)),
			tally_text_shown(d->duplicate_of->in->path));
	}
}
