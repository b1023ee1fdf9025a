/* SPDX-License-Identifier: MIT */
/*
 * tally check FILE...: read each trace to its end, print its ledger, its damage and the verdict.
 * Exit 0 only when every section of every file is COMPLETE (docs/check.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"
#include "summary.h"
#include "tally-format.h"
#include "trace-set.h"
#include "units.h"

struct check_opts {
	bool json, verbose, quiet;
};

static const struct cli_option check_options[] = {
    CLI_BOOL(struct check_opts, 0, "json", json,
	     "machine-readable output (schema in docs/check.md)"),
    CLI_BOOL(struct check_opts, 'v', "verbose", verbose,
	     "also list every chunk: offset, type, length, sequence number"),
    CLI_BOOL(struct check_opts, 'q', "quiet", quiet, "print only one verdict line per file"),
    CLI_END,
};

static const struct cli_command check_command = {
    .usage = "tally check [--json] [-v|-q] FILE|DIR...",
    .about = "Read each trace to its end and judge it: COMPLETE only when the ledger proves\n"
	     "nothing was lost. Exit 0: all COMPLETE; 1: some INCOMPLETE; 2: usage;\n"
	     "3: a file could not be read at all.",
    .options = check_options,
    .no_operand = "no trace given; usage: tally check FILE|DIR...",
    .flags = CLI_STOP_AT_OPERAND,
};

static const char *chunk_type_name(unsigned type)
{
	static const char *const names[TALLY_CHUNK_TYPE_MAX] = {
	    "?",
	    "SESSION",
	    "STRINGS",
	    "RECORDS",
	    "LEDGER",
	    "DEVICE",
	    "CLOCK",
	    "NOTE",
	    "LOSS",
	    "FRAMES",
	    "STACKS",
	    "MODULES",
	    [TALLY_CHUNK_DROPS] = "DROPS",
	    [TALLY_CHUNK_THREADS] = "THREADS",
	    [TALLY_CHUNK_GPU_METRICS] = "GPU_METRICS",
	    [TALLY_CHUNK_SYMBOLS] = "SYMBOLS",
	};

	return type < TALLY_CHUNK_TYPE_MAX && names[type] ? names[type] : "unknown";
}

static int print_chunk(void *ctx, struct report_section *rs, const struct tally_chunk_info *c,
		       const uint8_t *payload)
{
	(void)ctx, (void)rs, (void)payload;
	printf("  chunk %-6" PRIu32 " @%-10" PRIu64 " %-8s len %-8" PRIu32 "%s\n", c->seq,
	       c->offset, chunk_type_name(c->type), c->len,
	       c->flags & TALLY_CHUNK_FLAG_FINAL ? " FINAL" : "");
	return 0;
}

/* Seconds since the section started, for windows: "+1.250s". */
static double rel_s(const struct tally_section *s, uint64_t t)
{
	uint64_t t0 = tally_section_origin(s);

	if (!t0)
		t0 = t;

	return ((double)t - (double)t0) / 1e9;
}

static void print_windows(const struct tally_section *s, unsigned counter)
{
	size_t i, shown = 0;

	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];

		if (w->counter != counter)
			continue;
		if (shown++ == 8) {
			printf("      ... more windows (tally check --json lists all)\n");
			break;
		}
		printf("      when: %+.3f s .. %+.3f s: %" PRIu64 "\n", rel_s(s, w->t_begin),
		       rel_s(s, w->t_end), w->count);
	}
}

static void print_records(const struct tally_section *s)
{
	unsigned k;
	bool first = true;

	printf("%" PRIu64 " records", s->records_total);
	for (k = 1; k < TALLY_KIND_MAX; k++) {
		if (!s->records[k])
			continue;
		printf("%s%s %" PRIu64, first ? " (" : ", ", tally_kind_name(k), s->records[k]);
		first = false;
	}
	printf("%s\n", first ? "" : ")");
}

/* Where the trace was written and whether room was kept for its final ledger (format 1.3). */
static void print_output_fs(const struct tally_section *s)
{
	char size[32];

	if (!s->output_fs)
		return;
	if (s->close_reserve)
		printf(
		    "  output    on %s, %s kept for the final ledger (a full disk still gets it)\n",
		    cli_text(s->output_fs), tally_fmt_bytes(size, sizeof(size), s->close_reserve));
	else
		printf(
		    "  output    on %s, which kept no room for the final ledger (%s): a full disk "
		    "may leave none\n",
		    cli_text(s->output_fs),
		    s->close_reserve_errno ? strerror((int)s->close_reserve_errno) : "refused");
}

static void print_session(const struct tally_file *f, const struct tally_section *s)
{
	char when[64] = "unknown time", dur[32];
	time_t t = (time_t)(s->start_realtime / 1000000000ull);
	struct tm tm;
	char driver[24] = "unknown";

	if (s->start_realtime && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("  session   pid %" PRIu64 " on %s%s%s%s, %s, source %s\n", s->pid,
	       s->host ? cli_text(s->host) : "?", s->rank ? " (" : "",
	       s->rank ? cli_text(s->rank) : "", s->rank ? ")" : "",
	       s->writer ? cli_text(s->writer) : "unknown writer",
	       s->source ? cli_text(s->source) : "?");
	if (s->cmdline)
		printf("  command   %s\n", cli_text(s->cmdline));
	if (s->job || s->job_step || s->run_id || s->world_size) /* format 1.3 */
		printf("  job       %s%s%s%s%s%s%s\n", s->job ? cli_text(s->job) : "",
		       s->job && s->job_step ? " " : "", s->job_step ? cli_text(s->job_step) : "",
		       (s->job || s->job_step) && s->run_id ? " " : "",
		       s->run_id ? cli_text(s->run_id) : "",
		       (s->job || s->job_step || s->run_id) && s->world_size ? " " : "",
		       s->world_size ? cli_text(s->world_size) : "");
	printf("  recorded  %s", when);
	if (s->t_min != UINT64_MAX && s->t_max > s->t_min)
		printf(", records span %s", tally_fmt_ns(dur, sizeof(dur), s->t_max - s->t_min));
	if (s->ndevices)
		printf(", %zu device(s): %s", s->ndevices,
		       s->devices[0].name ? cli_text(s->devices[0].name) : "?");
	/* 0: the process had no driver to ask, or an older collector could not find it */
	if (s->driver_version)
		snprintf(driver, sizeof(driver), "%" PRIu64, s->driver_version);
	printf("\n  versions  CUDA driver %s, CUPTI API %" PRIu64 ", file format %u.%u\n", driver,
	       s->cupti_version, f->format_major, f->format_minor);
	print_output_fs(s);
	printf("  contents  ");
	print_records(s);
	if (s->summary) /* tally stats --partial: the records themselves are not here */
		printf("  summary   of %s: the records are counted, not kept (docs/stats.md, "
		       "\"Summaries\")\n",
		       s->facts && s->facts->trace ? cli_text(s->facts->trace) : "a trace");
}

/* The signal that was to end the process: which, when, from whom, and how long the close took. */
static void print_signal(const struct tally_section *s)
{
	const uint64_t *v = s->ledger.v;
	const char *abbrev =
	    v[TALLY_C_SIGNAL_RECEIVED] < 65 ? sigabbrev_np((int)v[TALLY_C_SIGNAL_RECEIVED]) : NULL;
	char buf[32];

	if (!v[TALLY_C_SIGNAL_RECEIVED])
		return;
	printf("    signal SIG%s at +%.3f s from %s %" PRIu64 ", %" PRIu64 " received",
	       abbrev ? abbrev : "?", (double)v[TALLY_C_SIGNAL_AT] / 1e9,
	       v[TALLY_C_SIGNAL_SENDER] ? "pid" : "the kernel", v[TALLY_C_SIGNAL_SENDER],
	       v[TALLY_C_SIGNALS_RECEIVED]);
	if (s->has_final)
		printf("; trace closed %s after it",
		       tally_fmt_ns(buf, sizeof(buf), v[TALLY_C_SIGNAL_TO_CLOSE]));
	printf("\n");
}

static void print_ledger(const struct tally_section *s)
{
	const uint64_t *v = s->ledger.v;
	char buf[32];

	if (!s->ledgers) {
		printf("  ledger    none\n");
		return;
	}
	printf("  ledger    %s, slice %" PRIu64 ", %" PRIu64 " snapshot(s)\n",
	       s->has_final ? "final" : "NOT final", s->ledger.slice, s->ledgers);
	printf("    buffers requested %" PRIu64 ", delivered %" PRIu64 ", refused %" PRIu64
	       ", returned %" PRIu64 ", pool high-water %" PRIu64 "/%" PRIu64 " of %s\n",
	       v[TALLY_C_BUFFERS_REQUESTED], v[TALLY_C_BUFFERS_DELIVERED],
	       v[TALLY_C_BUFFERS_REFUSED], v[TALLY_C_BUFFERS_RETURNED], v[TALLY_C_POOL_HIGH_WATER],
	       v[TALLY_C_POOL_CAPACITY], tally_fmt_bytes(buf, sizeof(buf), v[TALLY_C_BUFFER_SIZE]));
	printf("    records parsed %" PRIu64 ", dropped by CUPTI %" PRIu64
	       ", bad timestamps %" PRIu64 ", unmatched launches %" PRIu64
	       ", unmatched GPU records %" PRIu64 "\n",
	       v[TALLY_C_RECORDS_PARSED], v[TALLY_C_DROPPED_CUPTI], v[TALLY_C_BAD_TIME],
	       v[TALLY_C_UNMATCHED_API], v[TALLY_C_UNMATCHED_GPU]);
	printf("    written %s in %" PRIu64 " chunks, write failures %" PRIu64 ", lost %" PRIu64
	       " bytes\n",
	       tally_fmt_bytes(buf, sizeof(buf), v[TALLY_C_BYTES_WRITTEN]),
	       v[TALLY_C_CHUNKS_WRITTEN], v[TALLY_C_WRITE_FAILURES], v[TALLY_C_BYTES_LOST]);
	if (s->has_final)
		printf(
		    "    closing flush by %s, %s, %s, %" PRIu64 " records delivered by it\n",
		    tally_flush_path_name((unsigned)v[TALLY_C_FLUSH_PATH]),
		    tally_fmt_ns(buf, sizeof(buf), v[TALLY_C_FLUSH_END] - v[TALLY_C_FLUSH_START]),
		    v[TALLY_C_FLUSH_COMPLETED] ? "completed" : "NOT completed",
		    v[TALLY_C_FLUSH_RECORDS]);
	print_signal(s);
}

/* "python,native", "python", "native", "none". */
static const char *sample_asked(uint64_t bits)
{
	static const char *const names[] = {"none", "python", "native", "python,native"};

	return names[bits & (TALLY_SAMPLE_BIT_PYTHON | TALLY_SAMPLE_BIT_NATIVE)];
}

/* Distinct threads the THREADS chunks name. */
static size_t distinct_threads(const struct tally_section *s)
{
	size_t n = 0;

	free((void *)tally_section_threads(s, &n));
	return n;
}

/* Host sampling and blocking calls (format 1.3): what was asked, how it ran, every count. */
static void print_sampling(const struct tally_section *s)
{
	const uint64_t *v = s->ledger.v;
	char buf[32];

	if (s->sample || v[TALLY_C_SAMPLES_TAKEN] || s->records[TALLY_KIND_CPU_SAMPLE]) {
		printf("  sampling  %s at %" PRIu64 " Hz", sample_asked(s->sample), s->sample_rate);
		if (s->sample_mechanism)
			printf("; native by %s", cli_text(s->sample_mechanism));
		if (s->sample_signal)
			printf("; signal %" PRIu64, s->sample_signal);
		printf("; %zu thread(s) named\n", distinct_threads(s));
		printf("    samples taken %" PRIu64 ", written %" PRIu64 ", dropped %" PRIu64
		       ", torn %" PRIu64 ", stalls %" PRIu64 ", ticks missed %" PRIu64
		       ", overruns %" PRIu64 ", skipped %" PRIu64 "\n",
		       v[TALLY_C_SAMPLES_TAKEN], v[TALLY_C_BY_KIND + TALLY_KIND_CPU_SAMPLE],
		       v[TALLY_C_SAMPLES_DROPPED], v[TALLY_C_SAMPLES_TORN],
		       v[TALLY_C_SAMPLE_STALLS], v[TALLY_C_SAMPLE_TICKS_MISSED],
		       v[TALLY_C_SAMPLE_OVERRUNS], v[TALLY_C_SAMPLES_SKIPPED]);
	}
	if (s->osrt_threshold || s->records[TALLY_KIND_OSRT] || v[TALLY_C_OSRT_DROPPED])
		printf("  osrt      blocking calls of %s or longer: %" PRIu64 " written, %" PRIu64
		       " dropped\n",
		       tally_fmt_ns(buf, sizeof(buf), s->osrt_threshold),
		       v[TALLY_C_BY_KIND + TALLY_KIND_OSRT], v[TALLY_C_OSRT_DROPPED]);
}

static void json_sampling(struct tally_json *j, const struct tally_section *s)
{
	size_t i, n = 0;
	const struct tally_thread **threads = tally_section_threads(s, &n);

	tally_json_name(j, "sampling");
	tally_json_object_begin(j);
	tally_json_field_string(j, "asked", sample_asked(s->sample));
	tally_json_field_uint(j, "rate_hz", s->sample_rate);
	tally_json_field_string(j, "mechanism", s->sample_mechanism);
	tally_json_field_uint(j, "signal", s->sample_signal);
	tally_json_field_uint(j, "osrt_threshold_ns", s->osrt_threshold);
	tally_json_name(j, "threads");
	tally_json_array_begin(j);
	for (i = 0; i < n; i++) {
		const struct tally_thread *t = threads[i];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "tid", t->tid);
		tally_json_field_uint(j, "pthread_id", t->pthread_id);
		tally_json_field_string(j, "name", t->name);
		tally_json_field_bool(j, "main", t->flags & TALLY_THREADF_MAIN);
		tally_json_field_bool(j, "python", t->flags & TALLY_THREADF_PYTHON);
		tally_json_field_bool(j, "tally", t->flags & TALLY_THREADF_TALLY);
		tally_json_field_bool(j, "exited", t->flags & TALLY_THREADF_EXITED);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_object_end(j);
	free((void *)threads);
}

/* How tally record named the native frames (SYMBOLS, format 1.4): "complete", "cut", "stopped". */
static const char *symbols_state(unsigned state)
{
	static const char *const names[] = {[TALLY_SYMBOLS_COMPLETE] = "complete",
					    [TALLY_SYMBOLS_CUT] = "cut",
					    [TALLY_SYMBOLS_STOPPED] = "stopped"};

	return state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "unknown";
}

static void print_symbols(const struct tally_section *s)
{
	const struct tally_symbols_info *y = &s->stacks.symbols_info;
	char spent[32], bound[32];

	if (!y->present)
		return;
	printf("  symbols   native frames named when recorded: %" PRIu64 " of %" PRIu64
	       " (%s, in %s of %s), %s%s",
	       y->named, y->frames, y->how[0] ? cli_text(y->how) : "?",
	       tally_fmt_ns(spent, sizeof(spent), y->spent_ns),
	       tally_fmt_ns(bound, sizeof(bound), y->bound_ns), symbols_state(y->state),
	       y->state == TALLY_SYMBOLS_CUT	   ? ": the time ran out"
	       : y->state == TALLY_SYMBOLS_STOPPED ? ": tally record was stopped"
						   : "");
	printf("; modules of another build by then %" PRIu64 ", without a file %" PRIu64 "\n",
	       y->other_build, y->no_file);
}

static void json_symbols(struct tally_json *j, const struct tally_section *s)
{
	const struct tally_symbols_info *y = &s->stacks.symbols_info;

	tally_json_name(j, "symbols");
	if (!y->present) {
		tally_json_null(j);
		return;
	}
	tally_json_object_begin(j);
	tally_json_field_string(j, "state", symbols_state(y->state));
	tally_json_field_uint(j, "frames", y->frames);
	tally_json_field_uint(j, "named", y->named);
	tally_json_field_uint(j, "spent_ns", y->spent_ns);
	tally_json_field_uint(j, "bound_ns", y->bound_ns);
	tally_json_field_uint(j, "modules_other_build", y->other_build);
	tally_json_field_uint(j, "modules_without_file", y->no_file);
	tally_json_field_string(j, "how", y->how);
	tally_json_object_end(j);
}

/* CUPTI's drops by the queue it counted them in, and each context tied to its device. */
static void print_drops(const struct tally_section *s)
{
	size_t i;

	if (!s->ndrops) {
		if (s->ledger.v[TALLY_C_DROPPED_CUPTI])
			printf("  drops     by context: not recorded (written before format 1.2, "
			       "or the "
			       "trace was not closed)\n");
		return;
	}
	printf("  drops     by queue, as CUPTI counts them (the kind of a dropped record is never "
	       "reported):\n");
	for (i = 0; i < s->ndrops; i++) {
		const struct tally_drops *d = &s->drops[i];

		if (d->source == TALLY_DROPS_GLOBAL)
			printf("    global queue: %" PRIu64
			       " dropped; context, stream and kind not "
			       "reported by CUPTI\n",
			       d->count);
		else if (d->source == TALLY_DROPS_CONTEXT)
			printf("    context %" PRIu32 " on device %" PRIu32 ", stream %" PRIu32
			       ": %" PRIu64 " dropped from its own queue\n",
			       d->context, d->device, d->stream, d->count);
		else if (d->source == TALLY_DROPS_SEEN)
			printf("    context %" PRIu32 " on device %" PRIu32 ": %" PRIu64
			       " GPU records taken in\n",
			       d->context, d->device, d->count);
		else
			printf("    %s: %" PRIu64 "\n", tally_drop_source_name(d->source),
			       d->count);
	}
}

static void json_drops(struct tally_json *j, const struct tally_section *s)
{
	tally_json_name(j, "drops");
	tally_json_object_begin(j);
	tally_json_field_bool(j, "recorded", s->ndrops > 0);
	tally_json_field_string(j, "kind", "not reported by CUPTI");
	tally_json_name(j, "entries");
	report_drops_array(j, s);
	tally_json_object_end(j);
}

/* GPU metrics (format 1.3): what was asked, what was sampled, and why a device was not. */
static void print_metric_device(const struct tally_gpu_metrics *g)
{
	size_t i;

	printf("    device %" PRIu32 "%s%s%s: %s", g->device, g->chip ? " (" : "",
	       g->chip ? cli_text(g->chip) : "", g->chip ? ")" : "",
	       tally_gpu_metrics_state_name(g->state));
	if (g->nmetrics)
		printf(", %zu metric(s) every %" PRIu64 " %s", g->nmetrics, g->interval,
		       g->trigger == TALLY_GM_TRIGGER_TIME ? "ns" : "SYS clock cycles");
	if (g->state == TALLY_GM_ELSEWHERE)
		printf(" by pid %" PRIu64 " on %s, in %s", g->holder_pid,
		       g->holder_host ? cli_text(g->holder_host) : "?",
		       g->holder_file ? cli_text(g->holder_file) : "?");
	if (g->result)
		printf(" (CUPTI error %" PRIu64 ")", g->result);
	printf("\n");
	if (g->why)
		printf("      %s\n", cli_text(g->why));
	if (g->remedy)
		printf("      fix: %s\n", cli_text(g->remedy));
	for (i = 0; i < g->nleft_out; i++)
		printf("      left out %s\n", cli_text(g->left_out[i]));
}

static void print_gpu_metrics(const struct tally_section *s)
{
	const uint64_t *v = s->ledger.v;
	char buf[32];
	size_t i;

	if (!s->gpu_metrics_asked && !s->ngpu_metrics && !v[TALLY_C_METRIC_DECODED])
		return;
	printf("  metrics   asked for devices %s, %" PRIu64 " Hz, set %s; %" PRIu64
	       " device(s) sampled here\n",
	       s->gpu_metrics_asked ? cli_text(s->gpu_metrics_asked) : "?", s->gpu_metrics_hz,
	       s->gpu_metrics_set ? cli_text(s->gpu_metrics_set) : "?", v[TALLY_C_METRIC_DEVICES]);
	printf("    samples decoded %" PRIu64 ", written %" PRIu64 ", skipped %" PRIu64
	       ", dropped %" PRIu64 ", overflows %" PRIu64 ", gaps %" PRIu64
	       " (%s), merged %" PRIu64 ", sampler failures %" PRIu64 "\n",
	       v[TALLY_C_METRIC_DECODED], v[TALLY_C_METRIC_WRITTEN], v[TALLY_C_METRIC_SKIPPED],
	       v[TALLY_C_METRIC_DROPPED], v[TALLY_C_METRIC_OVERFLOWS], v[TALLY_C_METRIC_GAPS],
	       tally_fmt_ns(buf, sizeof(buf), v[TALLY_C_METRIC_GAP_NS]), v[TALLY_C_METRIC_MERGED],
	       v[TALLY_C_METRIC_FAILURES]);
	for (i = 0; i < s->ngpu_metrics; i++)
		print_metric_device(&s->gpu_metrics[i]);
}

static void print_verdict(const struct tally_section *s, const struct tally_verdict *v)
{
	struct cli_colors c = cli_colors_for(stdout);
	size_t i;

	printf("  verdict   %s%s%s\n", v->complete ? c.green : c.red,
	       v->complete ? "COMPLETE" : "INCOMPLETE", c.reset);
	for (i = 0; i < v->nreasons; i++) {
		const struct tally_reason *r = &v->reasons[i];

		printf("    - %s\n", cli_text(r->text));
		if (r->code == TALLY_R_LOSS)
			print_windows(s, r->counter);
		if (r->hint[0])
			printf("      fix: %s\n", cli_text(r->hint));
	}
	for (i = 0; i < s->nnotes; i++)
		printf("  note      [%s] %s\n", s->notes[i].code ? cli_text(s->notes[i].code) : "?",
		       s->notes[i].text ? cli_text(s->notes[i].text) : "");
	if (s->unknown_chunks || s->unknown_keys || s->unknown_columns ||
	    s->ledger.unknown_counters)
		printf("  skipped   %" PRIu64 " unknown chunk(s), %" PRIu64 " key(s), %" PRIu64
		       " column(s), %u counter(s): a newer tally wrote this file\n",
		       s->unknown_chunks, s->unknown_keys, s->unknown_columns,
		       s->ledger.unknown_counters);
}

static bool check_text(const struct report_set *set, const struct check_opts *o)
{
	const struct tally_file *f = set->inputs[0].f;
	bool all = f->nsections > 0;
	size_t i;

	if (!o->quiet) {
		char sz[32];

		printf("%s: %s, %" PRIu64 " chunks, %zu section(s), intact to byte %" PRIu64 "\n",
		       cli_text(f->path), tally_fmt_bytes(sz, sizeof(sz), f->size), f->chunks,
		       f->nsections, f->intact_end);
		if (!f->nsections)
			printf("  verdict   INCOMPLETE\n    - no session in the file\n");
	}
	for (i = 0; i < set->nsections; i++) {
		const struct report_section *rs = set->sections[i];
		const struct tally_section *s = rs->s;

		all &= rs->verdict.complete;
		if (o->quiet) {
			printf("%s[%zu]: %s\n", cli_text(f->path), i,
			       rs->verdict.complete ? "COMPLETE" : "INCOMPLETE");
		} else {
			print_session(f, s);
			print_ledger(s);
			print_sampling(s);
			print_symbols(s);
			print_drops(s);
			print_gpu_metrics(s);
			print_verdict(s, &rs->verdict);
		}
	}
	return all;
}

/* --json: the schema documented in docs/check.md */

static void json_unreadable(struct tally_json *j, const char *path, const char *err)
{
	tally_json_object_begin(j);
	tally_json_field_string(j, "path", path);
	tally_json_field_bool(j, "readable", false);
	tally_json_field_string(j, "error", err);
	tally_json_field_string(j, "verdict", "UNREADABLE");
	tally_json_object_end(j);
}

static void json_hex(struct tally_json *j, const char *name, const uint8_t *p, size_t n)
{
	char hex[2 * 16 + 1];
	size_t i;

	for (i = 0; i < n && i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", p[i]);
	tally_json_field_string(j, name, hex);
}

static void json_devices(struct tally_json *j, const struct tally_section *s)
{
	size_t i;

	tally_json_name(j, "devices");
	tally_json_array_begin(j);
	for (i = 0; i < s->ndevices; i++) {
		const struct tally_device *d = &s->devices[i];

		tally_json_object_begin(j);
		tally_json_field_uint(j, "id", d->id);
		tally_json_field_string(j, "name", d->name);
		if (d->has_uuid)
			json_hex(j, "uuid", d->uuid, 16);
		tally_json_field_uint(j, "cc_major", d->cc_major);
		tally_json_field_uint(j, "cc_minor", d->cc_minor);
		tally_json_field_uint(j, "global_mem", d->global_mem);
		tally_json_field_uint(j, "sm_count", d->sm_count);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
}

static void json_metric_device(struct tally_json *j, const struct tally_gpu_metrics *g)
{
	size_t i;

	tally_json_object_begin(j);
	tally_json_field_uint(j, "device", g->device);
	if (g->has_uuid)
		json_hex(j, "uuid", g->uuid, 16);
	tally_json_field_string(j, "state", tally_gpu_metrics_state_name(g->state));
	tally_json_field_string(j, "chip", g->chip);
	tally_json_field_uint(j, "interval", g->interval);
	tally_json_field_string(j, "trigger",
				g->trigger == TALLY_GM_TRIGGER_TIME ? "ns" : "sysclk");
	tally_json_field_uint(j, "hw_buffer", g->hw_buffer);
	tally_json_field_uint(j, "passes", g->passes);
	tally_json_name(j, "metrics");
	tally_json_array_begin(j);
	for (i = 0; i < g->nmetrics; i++) {
		tally_json_object_begin(j);
		tally_json_field_string(j, "name", g->metrics[i].name);
		tally_json_field_string(j, "unit", g->metrics[i].unit);
		tally_json_field_string(j, "label", g->metrics[i].label);
		tally_json_field_uint(j, "scale", g->metrics[i].scale);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_name(j, "left_out");
	tally_json_array_begin(j);
	for (i = 0; i < g->nleft_out; i++)
		tally_json_string(j, g->left_out[i]);
	tally_json_array_end(j);
	tally_json_field_uint(j, "result", g->result);
	tally_json_field_string(j, "why", g->why);
	tally_json_field_string(j, "remedy", g->remedy);
	if (g->state == TALLY_GM_ELSEWHERE) {
		tally_json_field_uint(j, "holder_pid", g->holder_pid);
		tally_json_field_string(j, "holder_host", g->holder_host);
		tally_json_field_string(j, "holder_file", g->holder_file);
		if (g->has_holder_session)
			json_hex(j, "holder_session_id", g->holder_session, 16);
	}
	tally_json_object_end(j);
}

static void json_gpu_metrics(struct tally_json *j, const struct tally_section *s)
{
	size_t i;

	tally_json_name(j, "gpu_metrics");
	tally_json_object_begin(j);
	tally_json_field_string(j, "asked", s->gpu_metrics_asked);
	tally_json_field_uint(j, "hz", s->gpu_metrics_hz);
	tally_json_field_string(j, "set", s->gpu_metrics_set);
	tally_json_name(j, "devices");
	tally_json_array_begin(j);
	for (i = 0; i < s->ngpu_metrics; i++)
		json_metric_device(j, &s->gpu_metrics[i]);
	tally_json_array_end(j);
	tally_json_object_end(j);
}

static void json_ledger(struct tally_json *j, const struct tally_section *s)
{
	unsigned id;

	tally_json_name(j, "ledger");
	tally_json_object_begin(j);
	tally_json_field_bool(j, "final", s->has_final);
	tally_json_field_uint(j, "snapshots", s->ledgers);
	tally_json_field_uint(j, "slice", s->ledger.slice);
	tally_json_field_uint(j, "t_end_ns", s->ledger.t_end);
	tally_json_name(j, "counters");
	tally_json_object_begin(j);
	for (id = 1; id < TALLY_C_MAX; id++) {
		const struct tally_counter_info *ci = tally_counter_info(id);

		if (ci)
			tally_json_field_uint(j, ci->name, s->ledger.v[id]);
	}
	tally_json_object_end(j);
	tally_json_field_string(j, "flush_path",
				tally_flush_path_name((unsigned)s->ledger.v[TALLY_C_FLUSH_PATH]));
	tally_json_object_end(j);
}

static void json_section(struct tally_json *j, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	unsigned k;
	size_t i;

	tally_json_object_begin(j);
	tally_json_field_uint(j, "offset", s->offset);
	tally_json_field_uint(j, "pid", s->pid);
	tally_json_field_uint(j, "ppid", s->ppid);
	tally_json_field_string(j, "host", s->host);
	tally_json_field_string(j, "rank", s->rank);
	tally_json_field_string(j, "job", s->job); /* format 1.3 keys 40-43; null when absent */
	tally_json_field_string(j, "job_step", s->job_step);
	tally_json_field_string(j, "run_id", s->run_id);
	tally_json_field_string(j, "world_size", s->world_size);
	tally_json_field_string(j, "cmdline", s->cmdline);
	tally_json_field_string(j, "writer", s->writer);
	tally_json_field_string(j, "source", s->source);
	tally_json_field_uint(j, "driver_version", s->driver_version);
	tally_json_field_uint(j, "cupti_version", s->cupti_version);
	tally_json_field_uint(j, "start_realtime_ns", s->start_realtime);
	tally_json_field_uint(j, "start_ns", s->start_cupti);
	if (s->has_session_id)
		json_hex(j, "session_id", s->session_id, 16);
	if (s->has_parent)
		json_hex(j, "parent_id", s->parent_id, 16);
	if (s->output_fs) { /* 1.3 */
		tally_json_field_string(j, "output_fs", s->output_fs);
		tally_json_field_uint(j, "close_reserve", s->close_reserve);
		tally_json_field_uint(j, "close_reserve_errno", s->close_reserve_errno);
	}
	json_devices(j, s);
	tally_json_name(j, "records");
	tally_json_object_begin(j);
	for (k = 1; k < TALLY_KIND_MAX; k++)
		if (tally_kind_known(k))
			tally_json_field_uint(j, tally_kind_name(k), s->records[k]);
	tally_json_object_end(j);
	tally_json_field_uint(j, "records_total", s->records_total);
	json_ledger(j, s);
	json_drops(j, s);
	json_sampling(j, s);
	json_symbols(j, s);
	json_gpu_metrics(j, s);
	report_verdict_json(j, rs); /* read/'s, as every report writes it */
	tally_json_name(j, "notes");
	tally_json_array_begin(j);
	for (i = 0; i < s->nnotes; i++) {
		tally_json_object_begin(j);
		tally_json_field_string(j, "code", s->notes[i].code);
		tally_json_field_string(j, "text", s->notes[i].text);
		tally_json_field_uint(j, "severity", s->notes[i].severity);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_name(j, "skipped");
	tally_json_object_begin(j);
	tally_json_field_uint(j, "chunks", s->unknown_chunks);
	tally_json_field_uint(j, "keys", s->unknown_keys);
	tally_json_field_uint(j, "columns", s->unknown_columns);
	tally_json_field_uint(j, "counters", s->ledger.unknown_counters);
	tally_json_object_end(j);
	tally_json_object_end(j);
}

static bool check_json_file(struct tally_json *j, const struct report_set *set)
{
	const struct tally_file *f = set->inputs[0].f;
	bool all = f->nsections > 0;
	size_t i;

	tally_json_object_begin(j);
	tally_json_field_string(j, "path", f->path);
	tally_json_field_bool(j, "readable", true);
	tally_json_field_uint(j, "size", f->size);
	tally_json_field_uint(j, "intact_end", f->intact_end);
	tally_json_field_uint(j, "chunks", f->chunks);
	tally_json_name(j, "damage");
	tally_json_array_begin(j);
	for (i = 0; i < f->ndamage; i++) {
		tally_json_object_begin(j);
		tally_json_field_string(j, "kind", tally_damage_kind_name(f->damage[i].kind));
		tally_json_field_uint(j, "offset", f->damage[i].offset);
		tally_json_field_uint(j, "end", f->damage[i].end);
		tally_json_field_uint(j, "missing_chunks", f->damage[i].missing);
		tally_json_object_end(j);
	}
	tally_json_array_end(j);
	tally_json_name(j, "sections");
	tally_json_array_begin(j);
	for (i = 0; i < set->nsections; i++) {
		all &= set->sections[i]->verdict.complete;
		json_section(j, set->sections[i]);
	}
	tally_json_array_end(j);
	tally_json_field_string(j, "verdict", all ? "COMPLETE" : "INCOMPLETE");
	tally_json_object_end(j);
	return all;
}

/* One file, read through read/ as every command reads traces (trace-set.h): on its own, so that
 * a file that cannot be read does not stop the others; its sections aligned among themselves. */
static int check_one(char *path, const struct check_opts *o, struct tally_json *j, bool *complete)
{
	struct cli_progress progress;
	struct report_scan_ops ops = {
	    .chunk = o->verbose && !o->json ? print_chunk : NULL,
	    .progress = cli_progress_callback,
	    .pctx = &progress,
	};
	struct report_set set;
	char err[512];
	int rc;

	rc = report_set_open(&set, &path, 1, err, sizeof(err));
	if (rc == 0) {
		if (o->verbose && !o->json)
			printf("%s:\n", cli_text(path));
		cli_progress_begin(&progress, path);
		rc = report_scan(&set, &ops, err, sizeof(err));
		cli_progress_end(&progress);
	}
	if (rc != 0) {
		if (j)
			json_unreadable(j, path, err);
		else
			cli_error(TALLY_EXIT_UNREADABLE, "%s", cli_text(err));
		report_set_close(&set);
		return TALLY_EXIT_UNREADABLE;
	}
	*complete = j ? check_json_file(j, &set) : check_text(&set, o);
	report_set_close(&set);
	return 0;
}

/* A file, or a directory's *.tally files (as every reader takes them). */
static int check_path(char *path, const struct check_opts *o, struct tally_json *j, bool *all)
{
	char **files, err[600];
	size_t n, i;
	int rc = 0;

	if (report_paths_expand(&path, 1, &files, &n, err, sizeof(err)) < 0) {
		if (j)
			json_unreadable(j, path, err);
		else
			cli_error(TALLY_EXIT_UNREADABLE, "%s", cli_text(err));
		*all = false;
		return TALLY_EXIT_UNREADABLE;
	}
	for (i = 0; i < n; i++) {
		bool complete = false;

		if (check_one(files[i], o, j, &complete) != 0)
			rc = TALLY_EXIT_UNREADABLE;
		*all &= complete;
	}
	report_paths_free(files, n);
	return rc;
}

int cmd_check(int argc, char **argv)
{
	struct check_opts o = {0};
	struct tally_json j;
	bool all = true, unreadable = false;
	int first, i, rc;

	if ((rc = cli_parse(&check_command, &o, argc, argv, &first)) != 0)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	if (o.json) {
		tally_json_init(&j, stdout, true);
		tally_json_object_begin(&j);
		tally_json_name(&j, "files");
		tally_json_array_begin(&j);
	}
	for (i = first; i < argc; i++)
		if (check_path(argv[i], &o, o.json ? &j : NULL, &all) != 0)
			unreadable = true;
	if (o.json) {
		tally_json_array_end(&j);
		tally_json_field_string(&j, "verdict", all ? "COMPLETE" : "INCOMPLETE");
		tally_json_object_end(&j);
		tally_json_finish(&j);
	}
	return unreadable ? TALLY_EXIT_UNREADABLE : all ? TALLY_EXIT_OK : TALLY_EXIT_FAIL;
}
