/* SPDX-License-Identifier: MIT */
/*
 * CSV export (docs/export.md): a directory with one file per record kind (kernel.csv,
 * memcpy.csv, ...; only kinds that occur), every record in it, plus the files that say what the
 * data is worth: sessions.csv, verdict.csv, loss_windows.csv, ledger.csv, damage.csv and
 * drops.csv.  Times
 * are nanoseconds on the aligned timeline; records whose timing was lost are kept, with empty
 * times and timing_lost = 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "export.h"
#include "outfile.h"
#include "path.h"
#include "table.h"

struct csv;
typedef void (*csv_row_fn)(struct csv *c, FILE *f, struct report_section *rs,
			   const struct tally_record *r);

struct csv_kind {
	const char *file;
	const char *header;
	csv_row_fn row;
};

struct csv {
	char *dir;
	FILE *files[TALLY_KIND_MAX];
	struct outfile outs[TALLY_KIND_MAX]; /* where files[k] goes once complete */
	uint64_t rows;
	char *err; /* the caller's, from open */
	size_t errlen;
};

static void times(FILE *f, struct report_section *rs, const struct tally_record *r)
{
	if (r->flags & TALLY_REC_BAD_TIME)
		fputs(",,", f);
	else
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64, report_time(rs, r->start),
			report_time(rs, r->end), r->end - r->start);
}

static void str(FILE *f, const char *s)
{
	fputc(',', f);
	report_csv_field(f, s);
}

static uint64_t pid_of(const struct report_section *rs, const struct tally_record *r)
{
	return r->process_id ? r->process_id : rs->s->pid;
}

static void kernel_row(struct csv *c, FILE *f, struct report_section *rs,
		       const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",", rs->index, rs->s->pid);
	times(f, rs, r);
	fprintf(f, ",%u,%u,%u,%u", r->correlation_id, r->device_id, r->context_id, r->stream_id);
	str(f, report_kernel_name(rs, r->name_id, REPORT_NAME_DEMANGLED));
	str(f, report_kernel_name(rs, r->name_id, REPORT_NAME_BASE));
	str(f, report_kernel_name(rs, r->name_id, REPORT_NAME_MANGLED));
	fprintf(f, ",%d,%d,%d,%d,%d,%d,%u,%u,%u,%u,%u,%" PRIu64 ",%d\n", r->grid[0], r->grid[1],
		r->grid[2], r->block[0], r->block[1], r->block[2], r->registers, r->static_smem,
		r->dynamic_smem, r->subkind, r->graph_id, r->graph_node_id,
		!!(r->flags & TALLY_REC_BAD_TIME));
}

static void memcpy_row(struct csv *c, FILE *f, struct report_section *rs,
		       const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",", rs->index, rs->s->pid);
	times(f, rs, r);
	fprintf(f, ",%u,%u,%u,%u,%" PRIu64, r->correlation_id, r->device_id, r->context_id,
		r->stream_id, r->bytes);
	str(f, report_memcpy_kind_label(r->subkind));
	str(f, report_mem_kind_label(r->src_kind));
	str(f, report_mem_kind_label(r->dst_kind));
	fprintf(f, ",%u,%u,%d,%u,%" PRIu64 ",%d\n", r->src_device, r->dst_device,
		!!(r->flags & TALLY_REC_ASYNC), r->graph_id, r->graph_node_id,
		!!(r->flags & TALLY_REC_BAD_TIME));
}

static void memset_row(struct csv *c, FILE *f, struct report_section *rs,
		       const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",", rs->index, rs->s->pid);
	times(f, rs, r);
	fprintf(f, ",%u,%u,%u,%u,%" PRIu64 ",%u", r->correlation_id, r->device_id, r->context_id,
		r->stream_id, r->bytes, r->value);
	str(f, report_mem_kind_label(r->subkind));
	fprintf(f, ",%d,%u,%" PRIu64 ",%d\n", !!(r->flags & TALLY_REC_ASYNC), r->graph_id,
		r->graph_node_id, !!(r->flags & TALLY_REC_BAD_TIME));
}

static void api_row(struct csv *c, FILE *f, struct report_section *rs, const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",%u,", rs->index, pid_of(rs, r), r->thread_id);
	times(f, rs, r);
	fprintf(f, ",%u", r->correlation_id);
	str(f, report_string(rs, r->name_id));
	fprintf(f, ",%u,%d,%d,%d\n", r->cbid, (int32_t)r->value, !!(r->flags & TALLY_REC_LAUNCH),
		!!(r->flags & TALLY_REC_BAD_TIME));
}

static void sync_row(struct csv *c, FILE *f, struct report_section *rs,
		     const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",", rs->index, rs->s->pid);
	times(f, rs, r);
	fprintf(f, ",%u,%u,%u", r->correlation_id, r->context_id, r->stream_id);
	str(f, report_sync_type_label(r->subkind));
	fprintf(f, ",%u,%d\n", r->value, !!(r->flags & TALLY_REC_BAD_TIME));
}

static void nvtx_range_row(struct csv *c, FILE *f, struct report_section *rs,
			   const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",%u,", rs->index, pid_of(rs, r), r->thread_id);
	times(f, rs, r);
	str(f, report_string(rs, r->name_id));
	str(f, r->domain_id ? report_string(rs, r->domain_id) : "");
	str(f, r->subkind ? "StartEnd" : "PushPop");
	fprintf(f, ",%u,%u,%u,%d\n", r->color, r->category, r->value,
		!!(r->flags & TALLY_REC_DEPTH_LOST));
}

static void nvtx_mark_row(struct csv *c, FILE *f, struct report_section *rs,
			  const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",%u,%" PRIu64, rs->index, pid_of(rs, r), r->thread_id,
		report_time(rs, r->start));
	str(f, report_string(rs, r->name_id));
	str(f, r->domain_id ? report_string(rs, r->domain_id) : "");
	fprintf(f, ",%u,%u,%u\n", r->color, r->category, r->value);
}

static void overhead_row(struct csv *c, FILE *f, struct report_section *rs,
			 const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",%u,", rs->index, pid_of(rs, r), r->thread_id);
	times(f, rs, r);
	fprintf(f, ",%u,%u\n", r->subkind, r->correlation_id);
}

/* CUDA's allocations and frees (format 1.2), one row each; bytes in use is their running sum. */
static void memory_row(struct csv *c, FILE *f, struct report_section *rs,
		       const struct tally_record *r)
{
	(void)c;
	fprintf(f, "%u,%" PRIu64 ",%" PRIu64 ",%u,%u,%u,%u,%" PRIu64 ",%" PRIu64, rs->index,
		pid_of(rs, r), report_time(rs, r->start), r->correlation_id, r->device_id,
		r->context_id, r->stream_id, r->address, r->bytes);
	str(f, r->subkind == TALLY_MEM_ALLOC	 ? "alloc"
	       : r->subkind == TALLY_MEM_RELEASE ? "free"
						 : "other");
	str(f, report_mem_kind_label(r->src_kind));
	fprintf(f, ",%d\n", !!(r->flags & TALLY_REC_ASYNC));
}

/* A GPU metric of a device over one sample (format 1.3): its value in its unit, exactly as
 * recorded (value / 10^scale), and the sample's flags. */
static void gpu_metric_row(struct csv *c, FILE *f, struct report_section *rs,
			   const struct tally_record *r)
{
	const struct report_metric *m = report_metric(rs, r);
	char value[REPORT_METRIC_TEXT];

	(void)c;
	fprintf(f, "%u,%" PRIu64 ",", rs->index, rs->s->pid);
	times(f, rs, r);
	fprintf(f, ",%u,%u", r->device_id, r->correlation_id);
	str(f, m ? m->name : report_string(rs, r->name_id));
	str(f, m ? m->label : "");
	str(f, m ? m->unit : "");
	fprintf(f, ",%s,%d,%d\n", report_metric_text(r, value), !!(r->value & TALLY_METRIC_MERGED),
		!!(r->value & TALLY_METRIC_AFTER_GAP));
}

static const struct csv_kind kinds[TALLY_KIND_MAX] = {
    [TALLY_KIND_KERNEL] = {"kernel.csv",
			   "section,pid,start,end,duration,correlation,device,context,stream,name,"
			   "base_name,mangled_name,grid_x,grid_y,grid_z,block_x,block_y,block_z,"
			   "registers,static_smem,dynamic_smem,launch_type,graph_id,graph_node_id,"
			   "timing_lost",
			   kernel_row},
    [TALLY_KIND_MEMCPY] = {"memcpy.csv",
			   "section,pid,start,end,duration,correlation,device,context,stream,bytes,"
			   "copy_kind,src_kind,dst_kind,src_device,dst_device,async,graph_id,"
			   "graph_node_id,timing_lost",
			   memcpy_row},
    [TALLY_KIND_MEMSET] = {"memset.csv",
			   "section,pid,start,end,duration,correlation,device,context,stream,bytes,"
			   "value,memory_kind,async,graph_id,graph_node_id,timing_lost",
			   memset_row},
    [TALLY_KIND_RUNTIME] =
	{"runtime.csv",
	 "section,pid,tid,start,end,duration,correlation,name,cbid,result,launch,"
	 "timing_lost",
	 api_row},
    [TALLY_KIND_DRIVER] = {"driver.csv",
			   "section,pid,tid,start,end,duration,correlation,name,cbid,result,launch,"
			   "timing_lost",
			   api_row},
    [TALLY_KIND_SYNC] =
	{"sync.csv",
	 "section,pid,start,end,duration,correlation,context,stream,sync_type,event,"
	 "timing_lost",
	 sync_row},
    [TALLY_KIND_NVTX_RANGE] =
	{"nvtx_range.csv",
	 "section,pid,tid,start,end,duration,name,domain,style,color,category,"
	 "payload,push_lost",
	 nvtx_range_row},
    [TALLY_KIND_NVTX_MARK] = {"nvtx_mark.csv",
			      "section,pid,tid,time,name,domain,color,category,payload",
			      nvtx_mark_row},
    [TALLY_KIND_OVERHEAD] = {"overhead.csv",
			     "section,pid,tid,start,end,duration,overhead_kind,correlation",
			     overhead_row},
    [TALLY_KIND_MEMORY] = {"memory.csv",
			   "section,pid,time,correlation,device,context,stream,address,bytes,"
			   "operation,memory_kind,async",
			   memory_row},
    [TALLY_KIND_GPU_METRIC] =
	{"gpu_metric.csv",
	 "section,pid,start,end,duration,device,sample,metric,label,unit,value,"
	 "merged,after_gap",
	 gpu_metric_row},
};

/* A CSV file of the directory, written under a temporary name until close_file() renames it. */
static FILE *open_csv(struct csv *c, struct outfile *out, const char *name, const char *header)
{
	char *path = tally_path_join(c->dir, name);
	FILE *f;

	if (!path) {
		snprintf(c->err, c->errlen, "%s: %s", c->dir, strerror(ENOMEM));
		return NULL;
	}
	/* The directory is new, or --force was given: a regular file of the name is replaced. */
	if (outfile_open(out, path, OUTFILE_FORCE, c->err, c->errlen) < 0) {
		free(path);
		return NULL;
	}
	f = fdopen(out->fd, "w");
	if (!f) {
		snprintf(c->err, c->errlen, "%s: %s", path, strerror(errno));
		free(path);
		outfile_abort(out);
		return NULL;
	}
	free(path);
	out->fd = -1; /* f owns it now */
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	fprintf(f, "%s\n", header);
	return f;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct csv *c = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned k = r[i].kind;

		if (k >= TALLY_KIND_MAX || !kinds[k].row)
			continue;
		if (!c->files[k] &&
		    !(c->files[k] = open_csv(c, &c->outs[k], kinds[k].file, kinds[k].header)))
			return -EIO;
		kinds[k].row(c, c->files[k], rs, &r[i]);
		c->rows++;
	}
	return 0;
}

static const struct report_scan_ops csv_scan = {
    .records = on_records,
};

/* ---- the files about the data -------------------------------------------------------------- */

static void write_sessions(FILE *f, const struct report_set *set)
{
	size_t i;

	for (i = 0; i < set->nsections; i++) {
		const struct report_section *rs = set->sections[i];
		const struct tally_section *s = rs->s;

		fprintf(f, "%u", rs->index);
		str(f, rs->in->path);
		fprintf(f, ",%u,%" PRIu64 ",%" PRIu64, s->index, s->pid, s->ppid);
		str(f, s->host ? s->host : "");
		str(f, s->rank ? s->rank : "");
		str(f, s->cmdline ? s->cmdline : "");
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRIu64, s->start_realtime,
			s->start_cupti, rs->offset, s->records_total);
		str(f, rs->verdict.complete ? "COMPLETE" : "INCOMPLETE");
		fputc('\n', f);
	}
}

static void write_verdict(FILE *f, const struct report_set *set)
{
	size_t i, k;

	for (i = 0; i < set->nsections; i++) {
		const struct report_section *rs = set->sections[i];

		if (rs->verdict.complete)
			fprintf(f, "%u,COMPLETE,,,,,\n", rs->index);
		for (k = 0; k < rs->verdict.nreasons; k++) {
			const struct tally_reason *r = &rs->verdict.reasons[k];
			const struct tally_counter_info *ci = tally_counter_info(r->counter);

			fprintf(f, "%u,INCOMPLETE", rs->index);
			str(f, tally_reason_code_name(r->code));
			str(f, r->code == TALLY_R_LOSS && ci ? ci->name : "");
			fprintf(f, ",%" PRIu64, r->count);
			str(f, r->text);
			str(f, r->hint);
			fputc('\n', f);
		}
	}
}

static void write_windows(FILE *f, const struct report_set *set)
{
	size_t i, k;

	for (i = 0; i < set->nsections; i++) {
		const struct report_section *rs = set->sections[i];

		for (k = 0; k < rs->s->nwindows; k++) {
			const struct tally_window *w = &rs->s->windows[k];
			const struct tally_counter_info *ci = tally_counter_info(w->counter);

			fprintf(f, "%u,%" PRIu64 ",%" PRIu64 ",%u", rs->index,
				report_time(rs, w->t_begin), report_time(rs, w->t_end), w->counter);
			str(f, ci ? ci->name : "");
			fprintf(f, ",%" PRIu64 "\n", w->count);
		}
	}
}

static void write_drops(FILE *f, const struct report_set *set)
{
	size_t i, k;

	for (i = 0; i < set->nsections; i++) {
		const struct tally_section *s = set->sections[i]->s;

		for (k = 0; k < s->ndrops; k++) {
			const struct tally_drops *d = &s->drops[k];

			fprintf(f, "%u", set->sections[i]->index);
			str(f, tally_drop_source_name(d->source));
			fprintf(f, ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu64, d->context,
				d->device, d->stream, d->count);
			str(f, tally_drop_source_meaning(d->source));
			fputc('\n', f);
		}
	}
}

static void write_ledger(FILE *f, const struct report_set *set)
{
	size_t i;
	unsigned id;

	for (i = 0; i < set->nsections; i++)
		for (id = 1; id < TALLY_C_MAX; id++) {
			const struct tally_counter_info *ci = tally_counter_info(id);

			if (!ci)
				continue;
			fprintf(f, "%u,%u", set->sections[i]->index, id);
			str(f, ci->name);
			fprintf(f, ",%" PRIu64 ",%s\n", set->sections[i]->s->ledger.v[id],
				ci->cls == TALLY_CC_LOSS ? "loss" : "info");
		}
}

static void write_damage(FILE *f, const struct report_set *set)
{
	size_t i, k;

	for (i = 0; i < set->ninputs; i++)
		for (k = 0; k < set->inputs[i].f->ndamage; k++) {
			const struct tally_damage *d = &set->inputs[i].f->damage[k];

			report_csv_field(f, set->inputs[i].path);
			fprintf(f, ",%s,%" PRIu64 ",%" PRIu64 ",%u\n",
				tally_damage_kind_name(d->kind), d->offset, d->end, d->missing);
		}
}

static const struct {
	const char *file, *header;
	void (*write)(FILE *f, const struct report_set *set);
} about[] = {
    {"sessions.csv",
     "section,file,file_section,pid,ppid,host,rank,cmdline,start_realtime,start_cupti,"
     "clock_offset,records,verdict",
     write_sessions},
    {"verdict.csv", "section,verdict,code,counter,count,text,hint", write_verdict},
    {"loss_windows.csv", "section,start,end,counter_id,counter,count", write_windows},
    {"ledger.csv", "section,counter_id,counter,value,class", write_ledger},
    {"damage.csv", "file,kind,offset,end,missing_chunks", write_damage},
    {"drops.csv", "section,source,context,device,stream,count,meaning", write_drops},
};

static int close_file(struct csv *c, FILE *f, struct outfile *out)
{
	if (ferror(f) | fclose(f)) {
		if (!c->err[0])
			snprintf(c->err, c->errlen, "%s: write failed: %s", c->dir,
				 strerror(errno ? errno : EIO));
		outfile_abort(out);
		return -EIO;
	}
	return outfile_commit(out, OUTFILE_FORCE | OUTFILE_KEEP_SIGNALS, c->err, c->errlen) < 0
		   ? -EIO
		   : 0;
}

static int csv_finish(void *state, struct report_set *set, struct export_stats *out, char *err,
		      size_t errlen)
{
	struct csv *c = state;
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(about) / sizeof(about[0]); i++) {
		struct outfile of;
		FILE *f = open_csv(c, &of, about[i].file, about[i].header);

		if (!f) {
			rc = -EIO;
			break;
		}
		about[i].write(f, set);
		if (close_file(c, f, &of) < 0)
			rc = -EIO;
	}
	for (i = 0; i < TALLY_KIND_MAX; i++)
		if (c->files[i]) {
			if (close_file(c, c->files[i], &c->outs[i]) < 0)
				rc = -EIO;
			c->files[i] = NULL;
		}
	(void)err;
	(void)errlen; /* failures wrote c->err, which is err */
	out->events = c->rows;
	return rc;
}

/* One file of the directory: replaced only when it is a regular file and not an input. */
static int check_file(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return outfile_check(path, OUTFILE_FORCE, err, errlen);
}

/* The directory (new, or there with --force), and every file this exporter may write in it. */
static int csv_check(const struct export_opts *o, char *err, size_t errlen)
{
	int rc = outfile_check(o->output, OUTFILE_DIRECTORY | (o->force ? OUTFILE_FORCE : 0), err,
			       errlen);
	size_t i;

	for (i = 0; rc == 0 && i < TALLY_KIND_MAX; i++)
		if (kinds[i].file)
			rc = check_file(o->output, kinds[i].file, err, errlen);
	for (i = 0; rc == 0 && i < sizeof(about) / sizeof(about[0]); i++)
		rc = check_file(o->output, about[i].file, err, errlen);
	return rc;
}

static int csv_open(void **state, struct report_set *set, const struct export_opts *o, char *err,
		    size_t errlen)
{
	struct csv *c;
	struct stat st;
	int rc;

	(void)set;
	/* a directory, new or (with --force) there: a link to one is refused, nothing is followed
	 */
	rc = csv_check(o, err, errlen);
	if (rc < 0)
		return rc;
	if (lstat(o->output, &st) < 0 && mkdir(o->output, 0777) < 0) {
		snprintf(err, errlen, "%s: %s", o->output, strerror(errno));
		return -errno;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->dir = strdup(o->output))) {
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->err = err;
	c->errlen = errlen;
	*state = c;
	return 0;
}

static void csv_destroy(void *state, bool failed)
{
	struct csv *c = state;
	size_t i;

	(void)failed; /* a partial directory stays: its files say how far the export got */
	if (!c)
		return;
	for (i = 0; i < TALLY_KIND_MAX; i++)
		if (c->files[i]) {
			fclose(c->files[i]);
			outfile_abort(&c->outs[i]);
		}
	free(c->dir);
	free(c);
}

const struct exporter export_csv = {
    .name = "csv",
    .what = "a directory of CSV files, one per record kind, plus the verdict and loss",
    .check = csv_check,
    .open = csv_open,
    .scan = &csv_scan,
    .finish = csv_finish,
    .destroy = csv_destroy,
};
