/* SPDX-License-Identifier: MIT */
/*
 * tally report's page: one self-contained HTML file (docs/report.md).  The page's own files
 * (src/page/html/) are compiled in; the data goes in as JSON inside <script type=
 * "application/json"> blocks, written through a filter that escapes '<' and U+2028/U+2029, so a
 * kernel name holding "</script>" cannot end the block: names from traces are hostile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jobs.h"
#include "json.h"
#include "metricsum.h"
#include "outfile.h"
#include "page.h"
#include "stats.h"
#include "timeline.h"

extern const unsigned char tally_html_page_html[], tally_html_report_css[], tally_html_report_js[],
    tally_html_vendor_uPlot_min_css[], tally_html_vendor_uPlot_iife_min_js[],
    tally_html_vendor_uPlot_LICENSE[];
extern const size_t tally_html_page_html_len, tally_html_report_css_len, tally_html_report_js_len,
    tally_html_vendor_uPlot_min_css_len, tally_html_vendor_uPlot_iife_min_js_len,
    tally_html_vendor_uPlot_LICENSE_len;

/* ---- a FILE that makes JSON safe inside a <script> element ---------------------------------- */

struct script_filter {
	FILE *out;
	unsigned held; /* bytes of a possible U+2028/2029 (E2 80 ..) held back */
};

static int put(struct script_filter *f, const char *s, size_t n)
{
	return fwrite(s, 1, n, f->out) == n ? 0 : -1;
}

/* '<' only occurs inside JSON strings, so "\u003c" is always the same string to JSON.parse. */
static int filter_byte(struct script_filter *f, unsigned char c)
{
	static const char held_bytes[] = "\xE2\x80";

	if (f->held == 2 && (c == 0xA8 || c == 0xA9)) {
		f->held = 0;
		return put(f, c == 0xA8 ? "\\u2028" : "\\u2029", 6);
	}
	if ((f->held == 0 && c == 0xE2) || (f->held == 1 && c == 0x80)) {
		f->held++;
		return 0;
	}
	if (f->held && put(f, held_bytes, f->held) < 0)
		return -1;
	f->held = 0;
	if (c == 0xE2) {
		f->held = 1;
		return 0;
	}
	return c == '<' ? put(f, "\\u003c", 6) : put(f, (const char *)&c, 1);
}

static ssize_t filter_write(void *cookie, const char *buf, size_t size)
{
	struct script_filter *f = cookie;
	size_t i;

	for (i = 0; i < size; i++)
		if (filter_byte(f, (unsigned char)buf[i]) < 0)
			return -1;
	return (ssize_t)size;
}

static int filter_close(void *cookie)
{
	struct script_filter *f = cookie;
	int rc = f->held ? put(f, "\xE2\x80", f->held) : 0;

	f->held = 0;
	return rc;
}

static FILE *script_filter_open(struct script_filter *f, FILE *out)
{
	cookie_io_functions_t io = {.write = filter_write, .close = filter_close};

	f->out = out;
	f->held = 0;
	return fopencookie(f, "w", io);
}

/* ---- two scan consumers at once ------------------------------------------------------------- */

struct tee {
	struct report_scan_ops a, b;
};

#define TEE_CALL(t, fn, ...)                                                                       \
	do {                                                                                       \
		int rc_ = (t)->a.fn ? (t)->a.fn((t)->a.ctx, __VA_ARGS__) : 0;                      \
		if (rc_ == 0 && (t)->b.fn)                                                         \
			rc_ = (t)->b.fn((t)->b.ctx, __VA_ARGS__);                                  \
		return rc_;                                                                        \
	} while (0)

static int tee_section(void *ctx, struct report_section *rs)
{
	TEE_CALL((struct tee *)ctx, section, rs);
}

static int tee_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	TEE_CALL((struct tee *)ctx, records, rs, r, n);
}

static int tee_ledger(void *ctx, struct report_section *rs, const struct tally_ledger *l)
{
	TEE_CALL((struct tee *)ctx, ledger, rs, l);
}

static int tee_section_end(void *ctx, struct report_section *rs)
{
	TEE_CALL((struct tee *)ctx, section_end, rs);
}

static void tee_ops(struct tee *t, struct report_scan_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->ctx = t;
	ops->section = tee_section;
	ops->records = tee_records;
	ops->ledger = tee_ledger;
	ops->section_end = tee_section_end;
}

/* ---- the passes ----------------------------------------------------------------------------- */

struct html_job {
	const struct report_html_opts *o;
	struct report_set set;
	struct stats *st;
	struct timeline *tl;
	struct report_html_result *res;
};

/* What the page shows besides the default reports: every analysis, the stacks, the memory, and
 * why the GPU was idle (each gap explained, next to the gaps). */
static const char *const page_reports[] = {
    "cuda_kern_stack_sum",
    "cuda_gpu_mem_usage",
    "gpu_time_breakdown",
    "comm_compute_overlap",
    "kern_rank_spread",
    "rank_steps",
    "cuda_launch_stats",
    "gpu_queue_depth",
    "diagnosis",
    "gpu_idle_why",
    "gpu_idle_breakdown",
    "gpu_metrics_sum",
    "gpu_gaps",
};

/* Pass 1: every summary report of tally stats, and the timeline's span and ledger. */
static int pass1(struct html_job *job, struct report_scan_ops *progress, char *err, size_t errlen)
{
	struct stats_request req = {0};
	struct report_scan_ops ops;
	struct tee t;
	unsigned r;
	int rc;

	for (r = 0; r < report_defs_count; r++)
		if (report_defs[r].by_default)
			req.reports |= 1ull << r;
	for (r = 0; r < sizeof(page_reports) / sizeof(page_reports[0]); r++)
		req.reports |= 1ull << report_find(page_reports[r]);
	req.reports |= 1ull << report_find("step_bound"); /* the diagnosis's bars of the steps */
	req.range =
	    job->o->range; /* the rest as tally stats' defaults: the page's figures are its */
	job->st = stats_new(&req);
	job->tl = timeline_new(job->o->buckets, job->o->exact_budget);
	if (!job->st || !job->tl)
		return -ENOMEM;
	stats_scan_ops(job->st, &t.a);
	timeline_pass1_ops(job->tl, &t.b, job->set.ninputs);
	tee_ops(&t, &ops);
	ops.progress = progress->progress;
	ops.pctx = progress->pctx;
	rc = report_scan(&job->set, &ops, err, errlen);
	if (rc == 0)
		rc = stats_finish(job->st, &job->set);
	if (rc == 0)
		rc = timeline_prepare(job->tl, &job->set, stats_time_base(job->st));
	if (rc == 0 && gm_records(stats_gpu_metrics(job->st))) /* curves only where metrics are */
		rc = timeline_metrics_prepare(job->tl);
	return rc;
}

/* Pass 2 reads the files again (a fresh set: a set is scanned once) now the span is known. */
static int pass2(struct html_job *job, char *const *paths, size_t npaths,
		 struct report_scan_ops *progress, char *err, size_t errlen)
{
	struct report_set again;
	struct report_scan_ops ops;
	int rc = report_set_open(&again, paths, npaths, err, errlen);

	if (rc < 0)
		return rc;
	again.align = job->set.align;
	report_set_find_base(&again);
	timeline_pass2_ops(job->tl, &ops);
	ops.progress = progress->progress;
	ops.pctx = progress->pctx;
	rc = report_scan(&again, &ops, err, errlen);
	if (rc == 0)
		timeline_choose_exact(job->tl);
	if (rc == 0)
		rc = timeline_metrics_finish(job->tl);
	report_set_close(&again);
	return rc;
}

/* ---- the page --------------------------------------------------------------------------- */

static void write_asset(FILE *out, const unsigned char *p, size_t n)
{
	fwrite(p, 1, n, out);
}

static int write_json_block(FILE *out, const char *id, struct html_job *job, bool timeline)
{
	struct script_filter f;
	struct tally_json j;
	FILE *safe;
	int rc;

	fprintf(out, "<script type=\"application/json\" id=\"%s\">", id);
	safe = script_filter_open(&f, out);
	if (!safe)
		return -errno;
	if (timeline) {
		tally_json_init(&j, safe, false);
		timeline_write_json(job->tl, &job->set, job->st, &j);
	} else {
		(void)stats_write(job->st, &job->set, safe, REPORT_FMT_JSON);
	}
	rc = ferror(safe) ? -EIO : 0;
	if (fclose(safe) != 0)
		rc = -EIO;
	fputs("</script>\n", out);
	return rc;
}

static int write_marker(FILE *out, const char *marker, struct html_job *job)
{
	if (strcmp(marker, "CSS") == 0) {
		write_asset(out, tally_html_vendor_uPlot_min_css,
			    tally_html_vendor_uPlot_min_css_len);
		write_asset(out, tally_html_report_css, tally_html_report_css_len);
	} else if (strcmp(marker, "DATA") == 0) {
		int rc = write_json_block(out, "tally-stats", job, false);

		return rc ? rc : write_json_block(out, "tally-timeline", job, true);
	} else if (strcmp(marker, "JS") == 0) {
		fputs("<script>/*! uPlot 1.6.32, shipped under its licence:\n", out);
		write_asset(out, tally_html_vendor_uPlot_LICENSE,
			    tally_html_vendor_uPlot_LICENSE_len);
		fputs("*/\n", out);
		write_asset(out, tally_html_vendor_uPlot_iife_min_js,
			    tally_html_vendor_uPlot_iife_min_js_len);
		fputs("</script>\n<script>\n", out);
		write_asset(out, tally_html_report_js, tally_html_report_js_len);
		fputs("</script>\n", out);
	}
	return 0;
}

/* The template with each @@NAME@@ marker replaced by what write_marker() writes for it. */
static int write_page(FILE *out, struct html_job *job)
{
	const char *p = (const char *)tally_html_page_html;
	const char *end = p + tally_html_page_html_len;
	int rc = 0;

	while (p < end && rc == 0) {
		const char *m = strstr(p, "@@"), *close;
		char name[16];

		if (!m || !(close = strstr(m + 2, "@@")) ||
		    (size_t)(close - m - 2) >= sizeof(name)) {
			fwrite(p, 1, (size_t)(end - p), out);
			break;
		}
		fwrite(p, 1, (size_t)(m - p), out);
		memcpy(name, m + 2, (size_t)(close - m - 2));
		name[close - m - 2] = '\0';
		rc = write_marker(out, name, job);
		p = close + 2;
	}
	return rc ? rc : ferror(out) ? -EIO : 0;
}

/* The page goes to a temporary file beside the target, renamed over it when whole (outfile.h). */
static int open_output(const struct report_html_opts *o, struct outfile *of, FILE **out, char *err,
		       size_t errlen)
{
	int rc = outfile_open(of, o->output, o->force ? OUTFILE_FORCE : 0, err, errlen);

	if (rc < 0)
		return rc;
	*out = fdopen(of->fd, "w");
	if (!*out) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", o->output, strerror(errno));
		outfile_abort(of);
		return rc;
	}
	of->fd = -1; /* *out owns it */
	return 0;
}

static void fill_result(struct html_job *job, struct report_html_result *res)
{
	size_t i;

	res->records = job->set.records;
	res->complete = job->set.complete;
	res->lanes = job->tl ? job->tl->nlanes : 0;
	res->exact_events = 0;
	for (i = 0; job->tl && i < job->tl->nevents; i++)
		res->exact_events += timeline_window_exact(job->tl, job->tl->events[i].window);
}

/* "-o -": the page on standard output, as every command's "-" means. */
static int write_stdout(struct html_job *job, char *err, size_t errlen)
{
	int rc = write_page(stdout, job);

	if (fflush(stdout) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		snprintf(err, errlen, "standard output: write failed: %s", strerror(-rc));
	return rc;
}

static int write_output(struct html_job *job, char *err, size_t errlen)
{
	struct outfile of = {.fd = -1};
	struct stat sb;
	FILE *out;
	int rc;

	if (strcmp(job->o->output, "-") == 0)
		return write_stdout(job, err, errlen);
	rc = open_output(job->o, &of, &out, err, errlen);
	if (rc < 0)
		return rc;
	rc = write_page(out, job);
	if (fclose(out) != 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "%s: write failed: %s", job->o->output, strerror(-rc));
		outfile_abort(&of);
		return rc;
	}
	rc = outfile_commit(&of, job->o->force ? OUTFILE_FORCE : 0, err, errlen);
	if (rc == 0 && stat(job->o->output, &sb) == 0)
		job->res->bytes = (uint64_t)sb.st_size;
	return rc;
}

/* Traces of several jobs are not drawn as the ranks of one: err lists the jobs. */
static bool refuse_mixed(struct html_job *job, char *err, size_t errlen)
{
	const struct report_jobs *jobs = stats_jobs(job->st);
	FILE *f;

	if (jobs->njobs < 2)
		return false;
	f = fmemopen(err, errlen, "w");
	if (!f) {
		snprintf(err, errlen, "the traces are of %zu different jobs", jobs->njobs);
		return true;
	}
	fprintf(f,
		"the traces are of %zu different jobs, not the ranks of one (give the traces of "
		"one job, or --mixed-jobs to draw them together anyway):\n",
		jobs->njobs);
	report_jobs_print(jobs, f, "  ");
	fclose(f);
	err[errlen - 1] = '\0';
	if (*err && err[strlen(err) - 1] == '\n')
		err[strlen(err) - 1] = '\0';
	return true;
}

int report_html(char *const *paths, size_t npaths, const struct report_html_opts *o,
		void (*progress)(void *ctx, uint64_t done, uint64_t total), void *pctx,
		struct report_html_result *res, char *err, size_t errlen)
{
	struct html_job job = {.o = o, .res = res};
	struct report_scan_ops prog = {.progress = progress, .pctx = pctx};
	int rc;

	memset(res, 0, sizeof(*res));
	rc = report_set_open(&job.set, paths, npaths, err, errlen);
	if (rc < 0) {
		res->input_failed = true;
		return rc;
	}
	report_set_find_base(&job.set);
	rc = pass1(&job, &prog, err, errlen);
	if (rc == 0 && !o->mixed_jobs && refuse_mixed(&job, err, errlen)) {
		res->mixed_jobs = true;
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = pass2(&job, paths, npaths, &prog, err, errlen);
	if (rc < 0 && !res->mixed_jobs && (job.set.read_failed || rc != -ENOMEM))
		res->input_failed = true;
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (rc == 0) {
		fill_result(&job, res);
		rc = write_output(&job, err, errlen);
	}
	timeline_free(job.tl);
	stats_free(job.st);
	report_set_close(&job.set);
	return rc;
}
