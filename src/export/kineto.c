/* SPDX-License-Identifier: MIT */
/*
 * Kineto's trace JSON (docs/export.md), the shape torch.profiler writes and Holistic Trace
 * Analysis (HTA) and PyTorch's tools read: a directory with one file per rank, rank-N.json.
 *
 * - GPU work on pid = device, tid = stream, with args.device, args.stream, args.context,
 *   args.correlation and "External id": HTA takes an event with a stream for GPU work;
 *   categories kernel, gpu_memcpy and gpu_memset, copies named as Kineto names them ("Memcpy
 *   HtoD (Pageable -> Device)": HTA reads the kind from the first 11 characters);
 * - API calls on the process's threads, cuda_runtime and cuda_driver, with args.correlation
 *   (HTA joins a launch to its kernel by it) and args.cbid; an ac2g flow from each launch to the
 *   work it launched; NVTX ranges as user_annotation on their thread, and their projection onto
 *   the GPU as Kineto makes it (kineto-annot.h): a gpu_user_annotation of the same name on each
 *   stream where work launched inside the range ran, from its first start to its last end, both
 *   with the range's "External id" (numbers of their own, above 2^52, apart from correlations);
 * - distributedInfo (rank, world_size from the job) at the top of each file, where HTA finds the
 *   rank; deviceProperties, and the verdict and loss of the file's sections at the end ("tally"),
 *   loss windows also as tally_loss slices on the process (never on a stream: HTA would count
 *   them as work).
 *
 * Times are whole microseconds, as HTA wants them: it rounds fractional ones (start up, end
 * down), which makes a kernel shorter than a microsecond last a negative time and breaks its
 * temporal breakdown.  tally rounds both ends to the nearest microsecond instead: the order of
 * every start and end is kept, so work that did not overlap still does not, and no duration is
 * negative.  Synchronization records, host samples, GPU metrics and memory counters have no
 * Kineto shape HTA reads; the Chrome export carries them.
 *
 * The traces' sections go to files by rank: RANK (or the job's other rank variable) names the
 * file; a process with none goes with the process it was forked from when that one is read too,
 * else gets a file of its own, numbered after the highest rank.  Several sections in one file
 * (fork children, several processes of one rank) keep their correlation ids apart by adding the
 * section's place in the file times 2^32.  One file is open at a time; a section read after
 * another of a different file reopens its file to append.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "esc.h"
#include "export.h"
#include "grow.h"
#include "json.h"
#include "kineto-annot.h"
#include "obuf.h"
#include "outfile.h"

#define HEADER_RESERVE 256 /* bytes at the top for schemaVersion and distributedInfo */
#define NO_RANK	       INT64_MIN
/* user annotations' External ids: this plus the section's correlation base plus the range's
 * number in its section, apart from every correlation id and exact as a JSON double */
#define ANNOTATION_IDS (1ull << 52)

struct kfile {
	int64_t rank; /* the job's; NO_RANK until numbered at the end */
	struct outfile out;
	FILE *f;	    /* while it is the open one */
	bool any;	    /* an event written (the separator) */
	unsigned sections;  /* sections put in it so far */
	unsigned first;	    /* index of its first section (its name) */
	unsigned last;	    /* its last section so far: the chain goes on through ksec.next */
	int64_t world_size; /* from the job, -1 unknown */
	uint64_t events;    /* written into it */
	bool gpu;	    /* a kernel, copy or memset among them */
};

struct ksec {
	uint32_t file;	    /* index in files */
	uint32_t pid;	    /* the process's own pid */
	uint64_t corr_base; /* added to correlation ids */
	unsigned next;	    /* the next section of its file, UINT_MAX none */
	struct esc_names names;
	bool seen; /* on_section ran */
};

struct kineto {
	struct obuf ob;
	char *dir;
	bool force;
	struct kfile *files;
	size_t nfiles, files_cap;
	struct ksec *secs;
	size_t nsecs, secs_cap;
	struct tally_map by_rank; /* rank + 1 -> file index + 1 */
	const struct report_set *set;
	int64_t open; /* index of the file open now, -1 none */
	uint64_t events;
	struct kanno
	    anno;   /* the section's ranges, launches and GPU work, for gpu_user_annotation */
	bool nomem; /* kanno ran out of memory */
	char *err;
	size_t errlen;
};

/* ---- files ------------------------------------------------------------------------------- */

static int switch_to(struct kineto *k, uint32_t fi)
{
	struct kfile *f = &k->files[fi];
	int fd;

	if (k->open == (int64_t)fi)
		return 0;
	if (k->open >= 0) {
		struct kfile *o = &k->files[k->open];

		if (obuf_flush(&k->ob) < 0 || fclose(o->f) != 0) {
			o->f = NULL;
			k->open = -1;
			return -(k->ob.err ? k->ob.err : errno);
		}
		o->f = NULL;
		k->open = -1;
	}
	fd = open(f->out.tmp, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || !(f->f = fdopen(fd, "a"))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(k->err, k->errlen, "%s: %s", f->out.tmp, strerror(e));
		return -e;
	}
	k->ob.f = f->f;
	k->open = fi;
	return 0;
}

static int64_t var_number(const char *var)
{
	const char *eq = var ? strchr(var, '=') : NULL;
	char *end;
	long long v;

	if (!eq)
		return NO_RANK;
	v = strtoll(eq + 1, &end, 10);
	return end != eq + 1 && *end == '\0' && v >= 0 ? v : NO_RANK;
}

/* A new file: its temporary file made, the space for its header kept. */
static int new_file(struct kineto *k, int64_t rank, unsigned first, uint32_t *index)
{
	char path[4200];
	struct kfile *f;
	int rc;

	if (!tally_grow_in(&k->files, &k->files_cap, k->nfiles + 1, sizeof(*k->files)))
		return -ENOMEM;
	f = &k->files[k->nfiles];
	memset(f, 0, sizeof(*f));
	f->rank = rank;
	f->first = first;
	f->world_size = -1;
	/* a process with no rank is named when the ranks are all known; until then by section */
	if (rank != NO_RANK)
		snprintf(path, sizeof(path), "%s/rank-%" PRId64 ".json", k->dir, rank);
	else
		snprintf(path, sizeof(path), "%s/unranked-%u.json", k->dir, first);
	rc = outfile_open(&f->out, path, OUTFILE_FORCE, k->err, k->errlen);
	if (rc < 0)
		return rc;
	f->f = fdopen(f->out.fd, "w");
	if (!f->f) {
		rc = -errno;
		outfile_abort(&f->out);
		return rc;
	}
	f->out.fd = -1;
	*index = (uint32_t)k->nfiles++;
	/* the header's room, filled at the end; then the events */
	if (fprintf(f->f, "%*s\n\"traceEvents\": [", HEADER_RESERVE, "") < 0 || fclose(f->f) != 0) {
		f->f = NULL;
		return -EIO;
	}
	f->f = NULL;
	return 0;
}

/* ---- sections ---------------------------------------------------------------------------- */

static struct ksec *ksec(struct kineto *k, const struct report_section *rs)
{
	return rs->index < k->nsecs && k->secs[rs->index].seen ? &k->secs[rs->index] : NULL;
}

/* The file of the process rs was forked from, when it is read too and has one. */
static int parent_file(struct kineto *k, const struct report_set *set,
		       const struct report_section *rs)
{
	uint64_t w0, w1;
	uint32_t found;

	if (!rs->s->has_parent)
		return -1;
	memcpy(&w0, rs->s->parent_id, 8);
	memcpy(&w1, rs->s->parent_id + 8, 8);
	found = tally_map_get(&set->sessions, w0, w1);
	if (!found || found - 1 >= k->nsecs || !k->secs[found - 1].seen)
		return -1;
	return (int)k->secs[found - 1].file;
}

static int on_section(void *ctx, struct report_section *rs)
{
	struct kineto *k = ctx;
	int64_t rank = var_number(rs->s->rank);
	uint32_t fi = 0, found;
	struct ksec *ks;
	int parent, rc;

	if (!tally_grow_in(&k->secs, &k->secs_cap, (size_t)rs->index + 1, sizeof(*k->secs)))
		return -ENOMEM;
	if (rs->index >= k->nsecs)
		k->nsecs = rs->index + 1;
	found = rank != NO_RANK ? tally_map_get(&k->by_rank, (uint64_t)rank + 1, 0) : 0;
	parent = rank == NO_RANK ? parent_file(k, k->set, rs) : -1;
	if (found) {
		fi = found - 1;
	} else if (parent >= 0) {
		fi = (uint32_t)parent;
	} else {
		rc = new_file(k, rank, rs->index, &fi);
		if (rc < 0)
			return rc;
		if (rank != NO_RANK &&
		    tally_map_put(&k->by_rank, (uint64_t)rank + 1, 0, fi + 1) < 0)
			return -ENOMEM;
	}
	ks = &k->secs[rs->index];
	memset(ks, 0, sizeof(*ks));
	ks->seen = true;
	ks->file = fi;
	ks->pid = (uint32_t)rs->s->pid;
	ks->corr_base = (uint64_t)k->files[fi].sections << 32;
	ks->next = UINT_MAX;
	if (k->files[fi].sections++)
		k->secs[k->files[fi].last].next = rs->index;
	k->files[fi].last = rs->index;
	if (k->files[fi].world_size < 0)
		k->files[fi].world_size =
		    var_number(rs->s->world_size) == NO_RANK ? -1 : var_number(rs->s->world_size);
	return switch_to(k, fi);
}

/* ---- events ------------------------------------------------------------------------------ */

static void begin(struct kineto *k, struct kfile *f)
{
	obuf_room(&k->ob);
	if (f->any)
		obuf_lit(&k->ob, ",\n{");
	else
		obuf_lit(&k->ob, "\n{");
	f->any = true;
	f->events++;
	k->events++;
}

/* Whole microseconds, to the nearest: monotonic, so order and non-overlap are kept. */
static uint64_t us(const struct report_section *rs, uint64_t t)
{
	return (report_time(rs, t) + 500) / 1000;
}

/* {"ph":"X","cat":CAT,"name":NAME,"pid":P,"tid":T,"ts":..,"dur":.. (no closing brace) */
static void slice(struct kineto *k, struct kfile *f, const char *cat, const struct esc *name,
		  uint64_t pid, uint64_t tid, const struct report_section *rs,
		  const struct tally_record *r)
{
	struct obuf *o = &k->ob;
	uint64_t ts = us(rs, r->start), te = us(rs, r->end > r->start ? r->end : r->start);

	begin(k, f);
	obuf_lit(o, "\"ph\":\"X\",\"cat\":\"");
	obuf_str(o, cat);
	obuf_lit(o, "\",\"name\":\"");
	obuf_put(o, name->s, name->len);
	obuf_room(o);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, tid);
	obuf_lit(o, ",\"ts\":");
	obuf_u64(o, ts);
	obuf_lit(o, ",\"dur\":");
	obuf_u64(o, te - ts);
}

static void flow(struct kineto *k, struct kfile *f, char ph, uint64_t id, uint64_t pid,
		 uint64_t tid, uint64_t ts)
{
	struct obuf *o = &k->ob;

	begin(k, f);
	obuf_lit(o, "\"ph\":\"");
	obuf_c(o, ph);
	obuf_lit(o, "\",\"id\":");
	obuf_u64(o, id);
	obuf_lit(o, ",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, tid);
	obuf_lit(o, ",\"ts\":");
	obuf_u64(o, ts);
	obuf_lit(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"");
	if (ph == 'f')
		obuf_lit(o, ",\"bp\":\"e\"");
	obuf_c(o, '}');
}

/* GPU work's args: ,"args":{"External id":C,"device":D,"context":X,"stream":S,"correlation":C */
static void gpu_args(struct obuf *o, const struct tally_record *r, uint64_t corr)
{
	obuf_lit(o, ",\"args\":{\"External id\":");
	obuf_u64(o, corr);
	obuf_lit(o, ",\"device\":");
	obuf_u64(o, r->device_id);
	obuf_lit(o, ",\"context\":");
	obuf_u64(o, r->context_id);
	obuf_lit(o, ",\"stream\":");
	obuf_u64(o, r->stream_id);
	obuf_lit(o, ",\"correlation\":");
	obuf_u64(o, corr);
}

/* GPU work with a correlation id, for the projection of the range it was launched in. */
static void keep_gpu(struct kineto *k, const struct tally_record *r)
{
	if (r->correlation_id && kanno_gpu(&k->anno, r->correlation_id, r->device_id, r->stream_id,
					   r->start, r->end) < 0)
		k->nomem = true;
}

static void kernel(struct kineto *k, struct report_section *rs, struct ksec *ks,
		   const struct tally_record *r)
{
	struct kfile *f = &k->files[ks->file];
	struct obuf *o = &k->ob;
	uint64_t corr = ks->corr_base + r->correlation_id;

	slice(k, f, "kernel", esc_name(&ks->names, rs, r->name_id, true), r->device_id,
	      r->stream_id, rs, r);
	f->gpu = true;
	gpu_args(o, r, corr);
	obuf_lit(o, ",\"registers per thread\":");
	obuf_u64(o, r->registers);
	obuf_lit(o, ",\"shared memory\":");
	obuf_u64(o, (uint64_t)r->static_smem + r->dynamic_smem);
	obuf_lit(o, ",\"grid\":[");
	obuf_i64(o, r->grid[0]);
	obuf_c(o, ',');
	obuf_i64(o, r->grid[1]);
	obuf_c(o, ',');
	obuf_i64(o, r->grid[2]);
	obuf_lit(o, "],\"block\":[");
	obuf_i64(o, r->block[0]);
	obuf_c(o, ',');
	obuf_i64(o, r->block[1]);
	obuf_c(o, ',');
	obuf_i64(o, r->block[2]);
	obuf_lit(o, "]}}");
	if (r->correlation_id)
		flow(k, f, 'f', corr, r->device_id, r->stream_id, us(rs, r->start));
	keep_gpu(k, r);
}

/* Kineto's names of CUpti_ActivityMemcpyKind */
static const char *const copy_kinds[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					 "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};

static void memop(struct kineto *k, struct report_section *rs, struct ksec *ks,
		  const struct tally_record *r)
{
	struct kfile *f = &k->files[ks->file];
	struct obuf *o = &k->ob;
	uint64_t corr = ks->corr_base + r->correlation_id;
	bool set = r->kind == TALLY_KIND_MEMSET;
	char text[96];
	struct esc name = {.s = text, .len = 0};
	uint64_t ns = r->end > r->start ? r->end - r->start : 0;

	if (set)
		snprintf(text, sizeof(text), "Memset (%s)", report_mem_kind_label(r->subkind));
	else
		snprintf(text, sizeof(text), "Memcpy %s (%s -> %s)",
			 r->subkind < sizeof(copy_kinds) / sizeof(copy_kinds[0])
			     ? copy_kinds[r->subkind]
			     : "Unknown",
			 report_mem_kind_label(r->src_kind), report_mem_kind_label(r->dst_kind));
	name.len = (uint32_t)strlen(text); /* no character of these needs escaping */
	slice(k, f, set ? "gpu_memset" : "gpu_memcpy", &name, r->device_id, r->stream_id, rs, r);
	f->gpu = true;
	gpu_args(o, r, corr);
	obuf_lit(o, ",\"bytes\":");
	obuf_u64(o, r->bytes);
	if (ns) { /* bytes per ns are GB/s */
		char bw[40];

		snprintf(bw, sizeof(bw), ",\"memory bandwidth (GB/s)\":%.6g",
			 (double)r->bytes / ns);
		obuf_str(o, bw);
	}
	obuf_lit(o, "}}");
	if (r->correlation_id)
		flow(k, f, 'f', corr, r->device_id, r->stream_id, us(rs, r->start));
	keep_gpu(k, r);
}

static void api(struct kineto *k, struct report_section *rs, struct ksec *ks,
		const struct tally_record *r)
{
	struct kfile *f = &k->files[ks->file];
	struct obuf *o = &k->ob;
	uint64_t corr = ks->corr_base + r->correlation_id;

	slice(k, f, r->kind == TALLY_KIND_DRIVER ? "cuda_driver" : "cuda_runtime",
	      esc_name(&ks->names, rs, r->name_id, false), ks->pid, r->thread_id, rs, r);
	obuf_lit(o, ",\"args\":{\"External id\":");
	obuf_u64(o, corr);
	obuf_lit(o, ",\"cbid\":");
	obuf_u64(o, r->cbid);
	obuf_lit(o, ",\"correlation\":");
	obuf_u64(o, corr);
	obuf_lit(o, "}}");
	if ((r->flags & TALLY_REC_LAUNCH) && r->correlation_id)
		flow(k, f, 's', corr, ks->pid, r->thread_id, us(rs, r->start));
	if (r->correlation_id &&
	    kanno_launch(&k->anno, r->thread_id, r->start, r->correlation_id) < 0)
		k->nomem = true;
}

/* ,"args":{"External id":N}} of range number i of the section */
static void annotation_id(struct kineto *k, const struct ksec *ks, uint64_t i)
{
	obuf_lit(&k->ob, ",\"args\":{\"External id\":");
	obuf_u64(&k->ob, ANNOTATION_IDS + ks->corr_base + i);
	obuf_lit(&k->ob, "}}");
}

static void annotation(struct kineto *k, struct report_section *rs, struct ksec *ks,
		       const struct tally_record *r)
{
	uint64_t i = k->anno.nranges;

	if (kanno_range(&k->anno, r->thread_id, r->start, r->end, r->name_id) < 0) {
		k->nomem = true;
		return;
	}
	slice(k, &k->files[ks->file], "user_annotation",
	      esc_name(&ks->names, rs, r->name_id, false), ks->pid, r->thread_id, rs, r);
	annotation_id(k, ks, i);
}

/* At the section's end: each range's work on each stream, as a gpu_user_annotation there (no
 * args.stream: HTA would take it for GPU work). */
static int gpu_annotations(struct kineto *k, struct report_section *rs, struct ksec *ks)
{
	const struct kanno_span *sp;
	size_t n, i;

	if (k->nomem || kanno_spans(&k->anno, &sp, &n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct tally_record r = {.start = sp[i].start, .end = sp[i].end};

		slice(k, &k->files[ks->file], "gpu_user_annotation",
		      esc_name(&ks->names, rs, sp[i].name_id, false), sp[i].device, sp[i].stream,
		      rs, &r);
		annotation_id(k, ks, sp[i].range);
	}
	kanno_reset(&k->anno);
	return 0;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct kineto *k = ctx;
	struct ksec *ks = ksec(k, rs);
	size_t i;
	int rc;

	if (!ks)
		return 0;
	rc = switch_to(k, ks->file);
	if (rc < 0)
		return rc;
	if (k->nomem)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (r[i].flags & TALLY_REC_BAD_TIME) /* timing lost: nothing to place */
			continue;
		switch (r[i].kind) {
		case TALLY_KIND_KERNEL:
			kernel(k, rs, ks, &r[i]);
			break;
		case TALLY_KIND_MEMCPY:
		case TALLY_KIND_MEMSET:
			memop(k, rs, ks, &r[i]);
			break;
		case TALLY_KIND_RUNTIME:
		case TALLY_KIND_DRIVER:
			api(k, rs, ks, &r[i]);
			break;
		case TALLY_KIND_NVTX_RANGE:
			if (!(r[i].flags & TALLY_REC_DEPTH_LOST))
				annotation(k, rs, ks, &r[i]);
			break;
		default:
			break;
		}
	}
	return k->ob.err ? -k->ob.err : 0;
}

/* A loss window as a slice on the process (no stream: not GPU work to HTA). */
static void loss_slice(struct kineto *k, struct report_section *rs, struct ksec *ks, uint64_t t0,
		       uint64_t t1, const char *what)
{
	struct tally_record r = {.start = t0, .end = t1 > t0 ? t1 : t0};
	char name[200];
	struct esc e;
	size_t len;

	snprintf(name, sizeof(name), "DATA LOST: %s", what);
	e.s = obuf_json_escaped(name, &len);
	if (!e.s)
		return;
	e.len = (uint32_t)len;
	slice(k, &k->files[ks->file], "tally_loss", &e, ks->pid, 0, rs, &r);
	obuf_c(&k->ob, '}');
	free(e.s);
}

static int on_section_end(void *ctx, struct report_section *rs)
{
	struct kineto *k = ctx;
	struct ksec *ks = ksec(k, rs);
	const struct tally_section *s = rs->s;
	size_t i;
	int rc;

	if (!ks)
		return 0;
	rc = switch_to(k, ks->file);
	if (rc < 0)
		return rc;
	for (i = 0; i < s->nwindows; i++) {
		const struct tally_counter_info *ci = tally_counter_info(s->windows[i].counter);

		loss_slice(k, rs, ks, s->windows[i].t_begin, s->windows[i].t_end,
			   ci ? ci->name : "loss");
	}
	if (!s->has_final) {
		uint64_t from = s->ledgers ? s->ledger.t_end : s->start_cupti;
		uint64_t to = rs->last_time ? rs->last_time - (uint64_t)rs->offset : from;

		if (from)
			loss_slice(k, rs, ks, from, to,
				   "trace not closed, nothing after this is known");
	}
	rc = gpu_annotations(k, rs, ks);
	esc_names_free(&ks->names);
	if (rc < 0)
		return rc;
	return k->ob.err ? -k->ob.err : 0;
}

/* ---- the end: metadata, names, commit ---------------------------------------------------- */

/* The devices of s not written yet (taken: a bit per device id below 64). */
static void device_props(struct tally_json *j, uint64_t *taken, const struct tally_section *s)
{
	size_t i;

	for (i = 0; i < s->ndevices; i++) {
		const struct tally_device *d = &s->devices[i];

		if (d->id < 64 && (*taken >> d->id & 1))
			continue;
		if (d->id < 64)
			*taken |= 1ull << d->id;
		tally_json_object_begin(j);
		tally_json_field_uint(j, "id", d->id);
		tally_json_field_string(j, "name", d->name ? d->name : "");
		tally_json_field_uint(j, "totalGlobalMem", d->global_mem);
		tally_json_field_uint(j, "computeMajor", d->cc_major);
		tally_json_field_uint(j, "computeMinor", d->cc_minor);
		tally_json_field_uint(j, "numSms", d->sm_count);
		tally_json_object_end(j);
	}
}

/* After the events: deviceProperties, the trace's name, the verdict and tally's loss. */
static int trailer(struct kineto *k, struct report_set *set, uint32_t fi)
{
	struct kfile *f = &k->files[fi];
	uint64_t taken = 0;
	struct tally_json j;
	char label[300];
	bool complete = true;
	size_t i;

	if (obuf_flush(&k->ob) < 0)
		return k->ob.err ? -k->ob.err : -EIO;
	fputs("\n],\n\"deviceProperties\": ", f->f);
	tally_json_init(&j, f->f, false);
	tally_json_array_begin(&j);
	for (i = f->first; i < set->nsections && i < k->nsecs; i = k->secs[i].next) {
		device_props(&j, &taken, set->sections[i]->s);
		complete &= set->sections[i]->verdict.complete;
	}
	tally_json_array_end(&j);
	report_section_label(set->sections[f->first], label, sizeof(label));
	fputs(",\n\"traceName\": ", f->f);
	tally_json_init(&j, f->f, false);
	tally_json_string(&j, label);
	fputs(",\n\"displayTimeUnit\": \"ms\",\n\"tally\": ", f->f);
	/* this file's sections only: a file per rank must not cost the whole job's loss */
	tally_json_init(&j, f->f, false);
	tally_json_object_begin(&j);
	tally_json_field_string(&j, "tally_verdict", complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_name(&j, "sections");
	tally_json_array_begin(&j);
	for (i = f->first; i < set->nsections && i < k->nsecs; i = k->secs[i].next)
		report_loss_section_json(&j, set->sections[i]);
	tally_json_array_end(&j);
	tally_json_object_end(&j);
	fputs("}\n", f->f);
	return ferror(f->f) ? -EIO : 0;
}

/* {"schemaVersion": 1, "distributedInfo": {"rank": N, "world_size": W}, in the room kept (the
 * file is closed: its appending descriptor would put it at the end). */
static int header(struct kfile *f)
{
	char buf[HEADER_RESERVE + 1];
	int n, fd, rc = 0;

	if (f->world_size > 0)
		n = snprintf(buf, sizeof(buf),
			     "{\"schemaVersion\": 1,\n\"distributedInfo\": {\"rank\": %" PRId64
			     ", \"world_size\": %" PRId64 "},",
			     f->rank, f->world_size);
	else
		n = snprintf(buf, sizeof(buf),
			     "{\"schemaVersion\": 1,\n\"distributedInfo\": {\"rank\": %" PRId64
			     "},",
			     f->rank);
	memset(buf + n, ' ', HEADER_RESERVE - (size_t)n);
	fd = open(f->out.tmp, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, buf, HEADER_RESERVE, 0) != HEADER_RESERVE)
		rc = -(errno ? errno : EIO);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* With --force, rank-*.json files an earlier export left that this one did not write: HTA
 * would read them as ranks of this run. */
static void remove_stale(struct kineto *k)
{
	DIR *d = opendir(k->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long long r;
		size_t len = strlen(e->d_name);
		struct stat st;

		if (strncmp(e->d_name, "rank-", 5) != 0 || len < 11 ||
		    strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		r = strtoll(e->d_name + 5, &end, 10);
		if (end != e->d_name + len - 5 || tally_map_get(&k->by_rank, (uint64_t)r + 1, 0))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* A process with no rank and no GPU work beside ranked ones (torchrun's launcher, a job
 * script's shell): HTA would read its file as one more rank of the job, so it is not written
 * and the export says so. */
static int leave_out(struct kineto *k, uint32_t fi, struct export_stats *st)
{
	struct kfile *f = &k->files[fi];
	int rc = switch_to(k, fi); /* what is buffered for it goes to its temporary file */

	if (f->f && fclose(f->f) != 0 && rc == 0)
		rc = -errno;
	f->f = NULL;
	k->open = -1;
	outfile_abort(&f->out);
	k->events -= f->events;
	st->processes_left_out += f->sections;
	st->events_left_out += f->events;
	return rc;
}

static int kineto_finish(void *state, struct report_set *set, struct export_stats *st, char *err,
			 size_t errlen)
{
	struct kineto *k = state;
	int64_t next = 0;
	size_t i;
	int rc = 0;

	for (i = 0; i < k->nfiles; i++)
		if (k->files[i].rank != NO_RANK && k->files[i].rank >= next)
			next = k->files[i].rank + 1;
	for (i = 0; i < k->nfiles && rc == 0; i++) {
		struct kfile *f = &k->files[i];

		if (f->rank == NO_RANK && next > 0 && !f->gpu) {
			rc = leave_out(k, (uint32_t)i, st);
			continue;
		}
		if (f->rank == NO_RANK) { /* numbered after the highest rank */
			char path[4200], *p;

			f->rank = next++;
			snprintf(path, sizeof(path), "%s/rank-%" PRId64 ".json", k->dir, f->rank);
			if (!(p = strdup(path)))
				return -ENOMEM;
			free(f->out.path);
			f->out.path = p;
			if (tally_map_put(&k->by_rank, (uint64_t)f->rank + 1, 0, (uint32_t)i + 1) <
			    0)
				return -ENOMEM;
		}
		rc = switch_to(k, (uint32_t)i);
		if (rc == 0)
			rc = trailer(k, set, (uint32_t)i);
		if (f->f && fclose(f->f) != 0 && rc == 0)
			rc = -errno;
		f->f = NULL;
		k->open = -1;
		if (rc == 0)
			rc = header(f);
		if (rc == 0 && outfile_commit(&f->out, OUTFILE_FORCE, err, errlen) < 0)
			return -EIO;
		if (rc < 0)
			snprintf(err, errlen, "%s: write failed: %s", f->out.path, strerror(-rc));
	}
	if (rc == 0 && k->force)
		remove_stale(k);
	st->events = k->events;
	return rc;
}

/* ---- open / close ------------------------------------------------------------------------ */

/* The directory: new, or there with --force (a link to one is refused, nothing followed). */
static int kineto_check(const struct export_opts *o, char *err, size_t errlen)
{
	return outfile_check(o->output, OUTFILE_DIRECTORY | (o->force ? OUTFILE_FORCE : 0), err,
			     errlen);
}

static int kineto_open(void **state, struct report_set *set, const struct export_opts *o, char *err,
		       size_t errlen)
{
	struct kineto *k;
	struct stat st;
	int rc = kineto_check(o, err, errlen);

	if (rc < 0)
		return rc;
	if (lstat(o->output, &st) < 0 && mkdir(o->output, 0777) < 0) {
		snprintf(err, errlen, "%s: %s", o->output, strerror(errno));
		return -errno;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->dir = strdup(o->output)) || obuf_init(&k->ob, NULL) < 0) {
		if (k)
			free(k->dir);
		free(k);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	k->force = o->force;
	k->open = -1;
	k->err = err;
	k->errlen = errlen;
	k->set = set;
	*state = k;
	return 0;
}

static void kineto_destroy(void *state, bool failed)
{
	struct kineto *k = state;
	size_t i;

	(void)failed; /* whatever was not committed is only a temporary file */
	if (!k)
		return;
	for (i = 0; i < k->nfiles; i++) {
		if (k->files[i].f)
			fclose(k->files[i].f);
		outfile_abort(&k->files[i].out);
	}
	for (i = 0; i < k->nsecs; i++)
		esc_names_free(&k->secs[i].names);
	obuf_fini(&k->ob);
	kanno_free(&k->anno);
	tally_map_fini(&k->by_rank);
	free(k->files);
	free(k->secs);
	free(k->dir);
	free(k);
}

static const struct report_scan_ops kineto_scan = {
    .section = on_section,
    .records = on_records,
    .section_end = on_section_end,
};

const struct exporter export_kineto = {
    .name = "kineto",
    .what = "a directory of Kineto JSON, one file per rank, for HTA and PyTorch's tools",
    .check = kineto_check,
    .open = kineto_open,
    .scan = &kineto_scan,
    .finish = kineto_finish,
    .destroy = kineto_destroy,
};
