/* SPDX-License-Identifier: MIT */
/* tally compare's output: a table, CSV (the same rows) or JSON (docs/compare.md has the schema). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "compare.h"
#include "json.h"
#include "table.h"
#include "text.h"

static const char *stretch_name(const struct compare_opts *o)
{
	static const char *const names[] = {"whole run", "NVTX range", "capture range"};

	return names[o->stretch];
}

/* ---- rows -------------------------------------------------------------------------------- */

static const struct report_col key_cols[] = {
    {"Count A", COL_U64},
    {"Count B", COL_U64},
    {"p50 A (ns)", COL_F1},
    {"p50 B (ns)", COL_F1},
    {"Shift (% of p50 A)", COL_F1},
    {"p90 A (ns)", COL_U64},
    {"p90 B (ns)", COL_U64},
    {"p99 A (ns)", COL_U64},
    {"p99 B (ns)", COL_U64},
    {"KS D", COL_F3},
    {"KS crit", COL_F3},
    {"Call", COL_STR},
    {"Name", COL_STR},
};

static void key_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct compare_key *k = &((const struct compare_result *)ctx)->keys[row];
	const uint64_t u[] = {k->n[0],	 k->n[1],   0,	       0,	 0,
			      k->p90[0], k->p90[1], k->p99[0], k->p99[1]};

	if (col == 2 || col == 3) {
		*c = (struct report_cell){.t = CELL_DBL, .d = k->p50[col - 2]};
	} else if (col < 9 && col != 4) {
		*c = (struct report_cell){.t = CELL_U64, .u = u[col]};
	} else if (col == 4) {
		*c = (struct report_cell){.t = isfinite(k->shift) ? CELL_DBL : CELL_EMPTY,
					  .d = 100 * k->shift};
	} else if (col == 9 || col == 10) {
		*c = (struct report_cell){.t = CELL_DBL, .d = col == 9 ? k->ks_d : k->ks_crit};
	} else {
		c->t = CELL_STR;
		c->s = col == 12 ? k->name : k->differs ? k->why : "same";
	}
}

static const struct report_col stream_cols[] = {
    {"Process", COL_U64},	   {"Device", COL_U64},	       {"Context", COL_U64},
    {"Stream", COL_U64},	   {"GPU ops A", COL_U64},     {"GPU ops B", COL_U64},
    {"First divergence", COL_STR}, {"Edit distance", COL_STR}, {"Call", COL_STR},
};

struct stream_ctx {
	const struct compare_result *r;
	char buf[2][32];
};

static void stream_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	struct stream_ctx *sc = (struct stream_ctx *)ctx;
	const struct compare_stream *s = &sc->r->streams[row];
	const uint64_t u[] = {s->process, s->device, s->context, s->stream, s->len[0], s->len[1]};

	if (col < 6) {
		*c = (struct report_cell){.t = CELL_U64, .u = u[col]};
		return;
	}
	c->t = CELL_STR;
	if (col == 6) {
		snprintf(sc->buf[0], sizeof(sc->buf[0]), "%" PRId64, s->first_divergence);
		c->s = s->first_divergence < 0 ? "none" : sc->buf[0];
	} else if (col == 7) {
		snprintf(sc->buf[1], sizeof(sc->buf[1]), "%s%" PRIu64, s->edits_capped ? "> " : "",
			 s->edits_capped ? s->edits - 1 : s->edits);
		c->s = sc->buf[1];
	} else {
		c->s = s->first_divergence < 0 ? "same" : "differs";
	}
}

static const struct report_col loss_cols[] = {
    {"A", COL_U64},
    {"B", COL_U64},
    {"Counter", COL_STR},
};

static void loss_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	const struct compare_result *r = ctx;
	const struct tally_counter_info *ci = tally_counter_info(tally_loss_counters[row]);

	if (col < 2)
		*c = (struct report_cell){.t = CELL_U64, .u = r->side[col].loss[row]};
	else
		*c = (struct report_cell){.t = CELL_STR, .s = ci ? ci->name : "?"};
}

static const struct report_col drop_cols[] = {
    {"Side", COL_STR},	 {"Process", COL_U64}, {"Queue", COL_STR}, {"Context", COL_U64},
    {"Device", COL_U64}, {"Stream", COL_U64},  {"Count", COL_U64}, {"Meaning", COL_STR},
};

static const struct compare_ctx_drops *drop_at(const struct compare_result *r, size_t row,
					       unsigned *side)
{
	*side = row >= r->side[0].nctx_drops;
	return &r->side[*side].ctx_drops[row - (*side ? r->side[0].nctx_drops : 0)];
}

static void drop_cell(const void *ctx, size_t row, size_t col, struct report_cell *c)
{
	unsigned side;
	const struct compare_ctx_drops *d = drop_at(ctx, row, &side);
	const struct tally_drops *q = &d->drops;
	const uint64_t u[] = {0, d->process, 0, q->context, q->device, q->stream, q->count};

	if (col == 0)
		*c = (struct report_cell){.t = CELL_STR, .s = side ? "B" : "A"};
	else if (col == 2)
		*c = (struct report_cell){.t = CELL_STR, .s = tally_drop_source_name(q->source)};
	else if (col == 7)
		*c = (struct report_cell){.t = CELL_STR, .s = tally_drop_source_meaning(q->source)};
	else
		*c = (struct report_cell){.t = CELL_U64, .u = u[col]};
}

/* ---- the header --------------------------------------------------------------------------- */

static void text_side(FILE *out, const struct compare_result *r, unsigned s)
{
	const struct compare_side_info *in = &r->side[s];
	size_t i;

	fprintf(out, "  %c  %s: %zu file(s), %zu process(es), %s\n", 'A' + s,
		tally_text_shown(r->label[s]), in->files, in->processes,
		in->complete ? "COMPLETE" : "INCOMPLETE");
	for (i = 0; i < in->nreasons; i++)
		fprintf(out, "       - %s\n", tally_text_shown(in->reasons[i]));
	fprintf(out, "     %" PRIu64 " GPU records in the stretch", in->gpu_records);
	if (in->intervals)
		fprintf(out, " (%" PRIu64 " interval(s))", in->intervals);
	if (in->untimed)
		fprintf(out, ", %" PRIu64 " without timestamps (left out)", in->untimed);
	fprintf(out, "; timing %s%s\n",
		in->timing_usable ? "usable" : "UNUSABLE: ", tally_text_shown(in->why));
}

static double step_pct(const struct compare_bottleneck *b, unsigned k)
{
	return b->step_ns ? 100.0 * (double)b->ns[k] / (double)b->step_ns : 0;
}

/* "A data-bound 62.0% of the step (median step 45.1 ms)" */
static void text_verdict(FILE *out, const struct compare_bottleneck *b, char side)
{
	if (!b->known) {
		fprintf(out, "%c: no steps", side);
		return;
	}
	fprintf(out, "%c: %s-bound, %.1f%% of the step (median step %.3f ms, %" PRIu64 " steps)",
		side, bound_class_name(b->verdict), step_pct(b, b->verdict),
		(double)b->median_step / 1e6, b->steps);
}

/* Which bottleneck moved: each side's verdict of its steps, and every class's share A -> B. */
static void text_bottleneck(FILE *out, const struct compare_result *r)
{
	const struct compare_bottleneck *a = &r->bottleneck[0], *b = &r->bottleneck[1];
	unsigned k;

	fprintf(out, "  steps    ");
	text_verdict(out, a, 'A');
	fprintf(out, "; ");
	text_verdict(out, b, 'B');
	if (a->known && b->known)
		fprintf(out,
			a->verdict == b->verdict ? ": the same bottleneck\n"
						 : ": the bottleneck moved from %s to %s\n",
			bound_class_name(a->verdict), bound_class_name(b->verdict));
	else
		fprintf(out, "\n");
	if (!a->known || !b->known)
		return;
	fprintf(out, "           %% of the step, A -> B:");
	for (k = 0; k < BOUND_CLASSES; k++)
		if (step_pct(a, k) >= 0.5 || step_pct(b, k) >= 0.5)
			fprintf(out, " %s %.1f -> %.1f", bound_class_name(k), step_pct(a, k),
				step_pct(b, k));
	fprintf(out, "\n");
}

static const char sketched_note[] =
    "summaries compared: p50/p90/p99 from quantile sketches (each within 0.39%), KS D on their "
    "buckets; the order per stream is not compared (summaries keep no sequence)";

static void text_header(FILE *out, const struct compare_result *r)
{
	const struct compare_opts *o = &r->opts;

	fprintf(out, "tally compare: %s\n",
		r->verdict == COMPARE_SAME	? "SAME"
		: r->verdict == COMPARE_DIFFERS ? "DIFFERS"
						: "UNUSABLE for timing");
	text_side(out, r, 0);
	text_side(out, r, 1);
	fprintf(out, "  stretch  %s", stretch_name(o));
	if (o->stretch == COMPARE_RANGE && o->range_k)
		fprintf(out, " \"%s\", occurrence %u in each process",
			tally_text_shown(o->range_name), o->range_k);
	else if (o->stretch == COMPARE_RANGE)
		fprintf(out, " \"%s\", every occurrence", tally_text_shown(o->range_name));
	fprintf(out,
		"\n  rule     differs: a count that differs, or KS D above its critical value "
		"(alpha %g) and a p50 or p90 shift over %.0f%%\n",
		o->alpha, 100 * o->min_effect);
	fprintf(out, "  result   %zu of %zu name(s) differ, %zu of %zu stream(s) differ in order\n",
		r->keys_differ, r->nkeys, r->streams_differ, r->nstreams);
	if (r->verdict == COMPARE_UNUSABLE)
		fprintf(out, "  note     records were lost in the stretch: durations and order "
			     "below are not evidence\n");
	if (r->sketched)
		fprintf(out, "  note     %s\n", sketched_note);
	text_bottleneck(out, r);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_side(struct tally_json *j, const struct compare_result *r, unsigned s)
{
	const struct compare_side_info *in = &r->side[s];
	size_t i;

	tally_json_object_begin(j);
	tally_json_field_string(j, "paths", r->label[s]);
	tally_json_field_uint(j, "files", in->files);
	tally_json_field_uint(j, "processes", in->processes);
	tally_json_field_string(j, "verdict", in->complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_name(j, "reasons");
	tally_json_array_begin(j);
	for (i = 0; i < in->nreasons; i++)
		tally_json_string(j, in->reasons[i]);
	tally_json_array_end(j);
	tally_json_field_bool(j, "timing_usable", in->timing_usable);
	tally_json_field_string(j, "unusable_because", in->why);
	tally_json_field_uint(j, "gpu_records", in->gpu_records);
	tally_json_field_uint(j, "untimed", in->untimed);
	tally_json_field_uint(j, "intervals", in->intervals);
	tally_json_name(j, "loss");
	tally_json_object_begin(j);
	for (i = 0; i < tally_loss_counters_count && i < 64; i++) {
		const struct tally_counter_info *ci = tally_counter_info(tally_loss_counters[i]);

		tally_json_field_uint(j, ci ? ci->name : "?", in->loss[i]);
	}
	tally_json_object_end(j);
	tally_json_name(j, "drops");
	tally_json_array_begin(j);
	for (i = 0; i < in->nctx_drops; i++) {
		const struct compare_ctx_drops *d = &in->ctx_drops[i];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "process", d->process);
		report_drops_fields(j, &d->drops);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_object_end(j);
}

static void json_key(struct tally_json *j, const struct compare_key *k)
{
	static const char *const side_names[] = {"a", "b"};
	unsigned s;

	tally_json_object_begin(j);
	tally_json_field_string(j, "name", k->name);
	tally_json_field_string(j, "kind", tally_kind_name(k->kind));
	for (s = 0; s < 2; s++) {
		tally_json_name(j, side_names[s]);
		tally_json_object_begin(j);
		tally_json_field_uint(j, "count", k->n[s]);
		tally_json_field_double(j, "p50_ns", k->p50[s]);
		tally_json_field_uint(j, "p90_ns", k->p90[s]);
		tally_json_field_uint(j, "p99_ns", k->p99[s]);
		tally_json_object_end(j);
	}
	if (isfinite(k->shift))
		tally_json_field_double(j, "shift", k->shift);
	else
		tally_json_name(j, "shift"), tally_json_null(j);
	tally_json_field_double(j, "ks_d", k->ks_d);
	tally_json_field_double(j, "ks_critical", k->ks_crit);
	tally_json_field_string(j, "call", k->differs ? "differs" : "same");
	if (k->why)
		tally_json_field_string(j, "why", k->why);
	tally_json_object_end(j);
}

static void json_stream(struct tally_json *j, const struct compare_stream *s)
{
	tally_json_object_begin(j);
	tally_json_field_uint(j, "process", s->process);
	tally_json_field_uint(j, "device", s->device);
	tally_json_field_uint(j, "context", s->context);
	tally_json_field_uint(j, "stream", s->stream);
	tally_json_field_uint(j, "gpu_ops_a", s->len[0]);
	tally_json_field_uint(j, "gpu_ops_b", s->len[1]);
	tally_json_field_int(j, "first_divergence", s->first_divergence);
	tally_json_field_uint(j, "edit_distance", s->edits);
	tally_json_field_bool(j, "edit_distance_capped", s->edits_capped);
	tally_json_field_string(j, "call", s->first_divergence < 0 ? "same" : "differs");
	tally_json_object_end(j);
}

/* "bottleneck": {"a": {...}, "b": {...}, "moved": bool}: each side's steps' verdict and shares. */
static void json_bottleneck(struct tally_json *j, const struct compare_result *r)
{
	unsigned s, k;

	tally_json_name(j, "bottleneck");
	tally_json_object_begin(j);
	for (s = 0; s < 2; s++) {
		const struct compare_bottleneck *b = &r->bottleneck[s];

		tally_json_name(j, s ? "b" : "a");
		if (!b->known) {
			tally_json_null(j);
			continue;
		}
		tally_json_object_begin(j);
		tally_json_field_string(j, "verdict", bound_class_name(b->verdict));
		tally_json_field_uint(j, "steps", b->steps);
		tally_json_field_uint(j, "median_step_ns", b->median_step);
		tally_json_name(j, "share_of_step");
		tally_json_object_begin(j);
		for (k = 0; k < BOUND_CLASSES; k++)
			tally_json_field_double(j, bound_class_name(k), step_pct(b, k));
		tally_json_object_end(j);
		tally_json_object_end(j);
	}
	if (r->bottleneck[0].known && r->bottleneck[1].known)
		tally_json_field_bool(j, "moved",
				      r->bottleneck[0].verdict != r->bottleneck[1].verdict);
	tally_json_object_end(j);
}

static void write_json(FILE *out, const struct compare_result *r)
{
	const struct compare_opts *o = &r->opts;
	struct tally_json j;
	size_t i;

	tally_json_init(&j, out, true);
	tally_json_object_begin(&j);
	tally_json_field_string(&j, "verdict", compare_verdict_name(r->verdict));
	tally_json_name(&j, "stretch");
	tally_json_object_begin(&j);
	tally_json_field_string(&j, "kind", stretch_name(o));
	if (o->range_name)
		tally_json_field_string(&j, "range", o->range_name);
	tally_json_field_uint(&j, "occurrence", o->range_k);
	tally_json_object_end(&j);
	tally_json_field_double(&j, "alpha", o->alpha);
	tally_json_field_double(&j, "min_effect", o->min_effect);
	tally_json_field_uint(&j, "max_edits", o->max_edits);
	tally_json_field_bool(&j, "sketched", r->sketched);
	tally_json_name(&j, "a");
	json_side(&j, r, 0);
	tally_json_name(&j, "b");
	json_side(&j, r, 1);
	json_bottleneck(&j, r);
	tally_json_name(&j, "names");
	tally_json_array_begin(&j);
	for (i = 0; i < r->nkeys; i++)
		json_key(&j, &r->keys[i]);
	tally_json_array_end(&j);
	tally_json_name(&j, "streams");
	tally_json_array_begin(&j);
	for (i = 0; i < r->nstreams; i++)
		json_stream(&j, &r->streams[i]);
	tally_json_array_end(&j);
	tally_json_object_end(&j);
	tally_json_finish(&j);
}

int compare_write(const struct compare_result *r, FILE *out, enum report_format fmt)
{
	struct stream_ctx sc = {.r = r};
	const struct report_view views[] = {
	    {"compare_names", "Durations per kernel name and copy kind", key_cols,
	     sizeof(key_cols) / sizeof(key_cols[0]), r->nkeys, key_cell, r,
	     "no GPU record in the stretch on either side", NULL, false, 0},
	    {"compare_order", "Kernel order per stream", stream_cols,
	     sizeof(stream_cols) / sizeof(stream_cols[0]), r->nstreams, stream_cell, &sc,
	     r->sketched ? "not compared: summaries keep no sequence" : "no stream", NULL, false,
	     0},
	    {"compare_loss", "Loss counters side by side", loss_cols,
	     sizeof(loss_cols) / sizeof(loss_cols[0]), tally_loss_counters_count, loss_cell, r, "",
	     NULL, false, 0},
	    {"compare_drops", "CUPTI drops by queue, contexts by device", drop_cols,
	     sizeof(drop_cols) / sizeof(drop_cols[0]),
	     r->side[0].nctx_drops + r->side[1].nctx_drops, drop_cell, r,
	     "no DROPS chunk in either trace (none lost, or written before format 1.2)", NULL,
	     false, 0},
	};
	size_t i;

	if (fmt == REPORT_FMT_JSON) {
		write_json(out, r);
	} else {
		if (fmt == REPORT_FMT_TABLE)
			text_header(out, r);
		else
			fprintf(out, "# tally compare: %s\n", compare_verdict_name(r->verdict));
		if (fmt == REPORT_FMT_CSV && r->sketched)
			fprintf(out, "# %s\n", sketched_note);
		for (i = 0; i < sizeof(views) / sizeof(views[0]); i++)
			report_view_write(out, &views[i], fmt, NULL);
	}
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
