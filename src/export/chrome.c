/* SPDX-License-Identifier: MIT */
/*
 * Chrome trace event JSON (docs/export.md), for Perfetto UI and chrome://tracing:
 *
 * - one process per GPU of each traced process ("GPU 0 (NVIDIA H200)"), one thread per stream
 *   (Perfetto draws no overlapping slices on one track, and a stream runs one thing at a time);
 * - the traced process itself, with its API calls and NVTX ranges on their threads;
 * - a flow arrow from each launching call to the GPU work it launched (correlation id);
 * - counters from the ledger snapshots, CUDA memory in use per device, and each stream's
 *   launches outstanding (gpu_queue_depth's curve: the mean per time bucket);
 * - GPU metrics as counter tracks of each device's process, one per metric ("SM Active %"), a value
 *   per sample from the sample's start (samples tile their span; a stretch with none is a loss
 *   window, on the DATA LOST track);
 * - every window where data was lost as a slice named "DATA LOST: ..." on a track of its own in
 *   each of those processes, so that a gap is never read as an idle GPU.
 *
 * Events stream out as records are read (Chrome's format does not need them sorted); names are
 * escaped once per string and copied after.  ts and dur are microseconds with three decimals,
 * relative to the earliest session start (a double holds them exactly; absolute nanoseconds since
 * 1970 would not survive a JSON parser).  The verdict goes into "otherData", at the top of the file
 * when the output can be rewritten in place, else at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chrome-host.h"
#include "depth.h"
#include "esc.h"
#include "export.h"
#include "gaps.h"
#include "grow.h"
#include "hashmap.h"
#include "json.h"
#include "launch.h"
#include "memusage.h"
#include "obuf.h"
#include "outfile.h"

#define HEADER_RESERVE	16384	    /* bytes kept at the top for otherData */
#define DEVICE_PID_BASE 1000000000u /* GPU processes: base + section * 1000 + device */
#define HOST_PID_STEP	100000000u  /* a second section with the same pid moves up by this */
#define LOSS_TID	999999999u  /* the "tally: DATA LOST" track in each process */
#define SYNC_TID_BASE	1500000000u /* synchronization, one track per stream */
#define OVERHEAD_TID	1999999999u /* CUPTI's own overhead */
/* Overlapping work on one stream (programmatic dependent launch, or clocks that disagree):
 * Perfetto's JSON importer drops a slice that overlaps another on its track without nesting, and
 * its flow arrows with it, so each overlap goes on a sub-track of the stream: lane L of stream S
 * is thread LANE_TID_BASE + (L - 1) * 10000000 + S % 10000000. */
#define LANE_TID_BASE 1700000000u
#define MAX_LANES     8u
#define QUEUE_BUCKETS 4096u /* the queue-depth curve of each stream: this many steps at most */

struct u64set {
	uint64_t *v; /* in the order they came */
	size_t cap, n;
	struct tally_map at; /* key -> index in v + 1 */
};

struct csec {
	uint32_t host_pid;
	struct esc_names names; /* escaped once per string id */
	struct u64set tracks;	/* tagged: device track, host thread, sync stream */
	bool counters_named;
	struct stream_lanes *lanes; /* per GPU stream track: where each lane's last slice ends */
	size_t nlanes, lanes_cap, last_lanes;
	struct tally_map lanes_map;   /* device << 32 | stream -> index in lanes + 1 */
	uint64_t loss_end[MAX_LANES]; /* the same for the DATA LOST track (windows may overlap) */
	unsigned loss_lanes;
	struct esc *metric_name, *metric_unit; /* by report_metric index: escaped once */
	struct step *steps;		       /* by the same index, with --metric-step */
	uint32_t nmetrics;
};

/* --metric-step: the open step of a metric of a device, its samples' value x ns and ns. */
struct step {
	uint64_t index;
	double vw, w;
	uint32_t pid;
	bool open;
};

struct stream_lanes {
	uint64_t key; /* device << 32 | stream */
	uint64_t end[MAX_LANES];
	unsigned n;
};

enum track_tag {
	TAG_STREAM = 1, /* device << 32 | stream */
	TAG_THREAD = 2, /* thread id */
	TAG_SYNC = 3,	/* stream */
	TAG_DEVICE = 4, /* device (its process) */
	TAG_OVERHEAD = 5,
	TAG_LANE = 6, /* lane << 48 | device (16 bits) << 32 | stream */
};

struct chrome {
	struct chrome_stream st; /* the events (chrome-host.h): its obuf, origin, count */
	FILE *f;
	char *path;
	struct outfile out; /* the temporary file f writes, renamed over path at the end */
	unsigned out_flags;
	bool to_stdout, seekable, wrote_base;
	uint64_t untimed;
	struct csec *secs;
	size_t nsecs, secs_cap;
	struct tally_map pids_taken;  /* host pids given to sections so far */
	struct report_gpu_gaps *gaps; /* unproven gaps go on the loss track */
	size_t gaps_drawn;
	struct mem_usage mem;	   /* CUDA memory counters, written at the end in time order */
	struct queues *queues;	   /* launches outstanding per stream, written at the end */
	struct launches *launches; /* joins each launch to its GPU work, for the queues */
	struct chrome_host *host;  /* samples and blocking calls (chrome-host.c) */
	uint64_t metric_step;	   /* --metric-step, ns; 0: each sample */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static bool set_add(struct u64set *s, uint64_t key)
{
	if (tally_map_get(&s->at, key, 0))
		return true;
	if (s->n >= UINT32_MAX - 1 || !tally_grow_in(&s->v, &s->cap, s->n + 1, sizeof(*s->v)) ||
	    tally_map_put(&s->at, key, 0, (uint32_t)s->n + 1) < 0)
		return false;
	s->v[s->n++] = key;
	return true;
}

static uint64_t tag(enum track_tag t, uint64_t x)
{
	return (uint64_t)t << 56 | x;
}

static uint32_t device_pid(const struct report_section *rs, uint32_t device)
{
	return DEVICE_PID_BASE + (rs->index % 1000000u) * 1000u + device % 1000u;
}

static struct csec *csec(struct chrome *c, const struct report_section *rs)
{
	return rs->index < c->nsecs ? &c->secs[rs->index] : NULL;
}

/* The escaped form of string id (cached); kernel names demangled first. */
static const struct esc *escaped(struct report_section *rs, struct csec *cs, uint32_t id,
				 bool kernel)
{
	return esc_name(&cs->names, rs, id, kernel);
}

/* Start an event: separator, then the opening brace. */
static void begin(struct chrome *c)
{
	chrome_event_begin(&c->st);
}

/* Time since the earliest moment of the inputs (chrome_rel). */
static uint64_t rel(const struct chrome *c, const struct report_section *rs, uint64_t t)
{
	return chrome_rel(&c->st, rs, t);
}

static uint32_t host_pid(const struct chrome *c, const struct report_section *rs)
{
	return rs->index < c->nsecs ? c->secs[rs->index].host_pid : 0;
}

/* "ph":"X" ... "pid":P,"tid":T,"ts":..,"dur":.. (without the closing brace) */
static void slice_head(struct chrome *c, const char *cat, size_t catlen, const struct esc *name,
		       uint32_t pid, uint64_t tid, uint64_t ts, uint64_t dur)
{
	struct obuf *o = &c->st.ob;

	begin(c);
	obuf_lit(o, "\"ph\":\"X\",\"cat\":\"");
	obuf_put(o, cat, catlen);
	obuf_lit(o, "\",\"name\":\"");
	obuf_put(o, name->s, name->len);
	obuf_room(o);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, tid);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, ts);
	obuf_lit(o, ",\"dur\":");
	obuf_us(o, dur);
}

static void flow(struct chrome *c, char ph, const struct report_section *rs, uint32_t corr,
		 uint32_t pid, uint64_t tid, uint64_t ts)
{
	struct obuf *o = &c->st.ob;

	begin(c);
	obuf_lit(o, "\"ph\":\"");
	obuf_c(o, ph);
	obuf_lit(o, "\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":");
	obuf_u64(o, (uint64_t)rs->index << 32 | corr);
	if (ph == 'f')
		obuf_lit(o, ",\"bp\":\"e\"");
	obuf_lit(o, ",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, tid);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, ts);
	obuf_c(o, '}');
}

/* ---- records ------------------------------------------------------------------------------ */

/*
 * The first lane in which [start, end) follows everything placed before (each lane keeps the
 * latest end it has seen, so nothing in it can overlap, whatever the order of arrival); a new
 * lane if none, the last one once there are max.
 */
static unsigned lane_fit(uint64_t *ends, unsigned *n, uint64_t start, uint64_t end)
{
	unsigned lane;

	for (lane = 0; lane < *n && ends[lane] > start; lane++)
		;
	if (lane == MAX_LANES)
		lane = MAX_LANES - 1;
	else if (lane == *n)
		(*n)++;
	if (end > ends[lane])
		ends[lane] = end;
	return lane;
}

static struct stream_lanes *lanes_of(struct csec *cs, uint64_t key)
{
	uint32_t found;

	/* records come in runs on one stream: the last one first, then the hash */
	if (cs->last_lanes < cs->nlanes && cs->lanes[cs->last_lanes].key == key)
		return &cs->lanes[cs->last_lanes];
	found = tally_map_get(&cs->lanes_map, key, 0);
	if (found)
		return &cs->lanes[cs->last_lanes = found - 1];
	if (!tally_grow_in(&cs->lanes, &cs->lanes_cap, cs->nlanes + 1, sizeof(*cs->lanes)))
		return NULL;
	if (tally_map_put(&cs->lanes_map, key, 0, (uint32_t)cs->nlanes + 1) < 0)
		return NULL;
	cs->lanes[cs->nlanes] = (struct stream_lanes){.key = key};
	cs->last_lanes = cs->nlanes;
	return &cs->lanes[cs->nlanes++];
}

/*
 * The track (tid) for GPU work on r's stream: the stream's own while the work follows what came
 * before on it, else the first sub-track it does not overlap on.  Records come in CUPTI's order,
 * about in time order per stream, so first fit by arrival is enough.
 */
static uint32_t stream_track(struct csec *cs, const struct tally_record *r)
{
	uint64_t key = (uint64_t)r->device_id << 32 | r->stream_id;
	struct stream_lanes *l = lanes_of(cs, key);
	unsigned lane;

	if (!l)
		return r->stream_id;
	lane = lane_fit(l->end, &l->n, r->start, r->end);
	if (lane == 0)
		return r->stream_id;
	set_add(&cs->tracks,
		tag(TAG_LANE,
		    (uint64_t)lane << 48 | (uint64_t)(r->device_id & 0xffff) << 32 | r->stream_id));
	return LANE_TID_BASE + (lane - 1) * 10000000u + r->stream_id % 10000000u;
}

static void kernel(struct chrome *c, struct report_section *rs, struct csec *cs,
		   const struct tally_record *r)
{
	struct obuf *o = &c->st.ob;
	uint32_t pid = device_pid(rs, r->device_id);
	uint64_t ts = rel(c, rs, r->start);
	uint32_t tid = stream_track(cs, r);

	slice_head(c, "kernel", 6, escaped(rs, cs, r->name_id, true), pid, tid, ts,
		   r->end - r->start);
	obuf_lit(o, ",\"args\":{\"correlation\":");
	obuf_u64(o, r->correlation_id);
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
	obuf_lit(o, "],\"registers\":");
	obuf_u64(o, r->registers);
	obuf_lit(o, ",\"shared_static\":");
	obuf_u64(o, r->static_smem);
	obuf_lit(o, ",\"shared_dynamic\":");
	obuf_u64(o, r->dynamic_smem);
	obuf_lit(o, "}}");
	set_add(&cs->tracks, tag(TAG_STREAM, (uint64_t)r->device_id << 32 | r->stream_id));
	set_add(&cs->tracks, tag(TAG_DEVICE, r->device_id));
	if (r->correlation_id)
		flow(c, 'f', rs, r->correlation_id, pid, tid, ts);
}

static void memop(struct chrome *c, struct report_section *rs, struct csec *cs,
		  const struct tally_record *r)
{
	static struct esc names[16];
	struct obuf *o = &c->st.ob;
	uint32_t pid = device_pid(rs, r->device_id);
	uint64_t ts = rel(c, rs, r->start);
	unsigned k = r->kind == TALLY_KIND_MEMSET ? 15 : (r->subkind < 15 ? r->subkind : 0);
	uint32_t tid = stream_track(cs, r);

	if (!names[k].s) { /* "[CUDA memcpy Host-to-Device]": no character needs escaping */
		static char store[16][48];

		if (k == 15)
			snprintf(store[k], sizeof(store[k]), "[CUDA memset]");
		else
			snprintf(store[k], sizeof(store[k]), "[CUDA memcpy %s]",
				 report_memcpy_kind_label(k));
		names[k] = (struct esc){.s = store[k], .len = (uint32_t)strlen(store[k])};
	}
	slice_head(c, r->kind == TALLY_KIND_MEMSET ? "memset" : "memcpy", 6, &names[k], pid, tid,
		   ts, r->end - r->start);
	obuf_lit(o, ",\"args\":{\"correlation\":");
	obuf_u64(o, r->correlation_id);
	obuf_lit(o, ",\"bytes\":");
	obuf_u64(o, r->bytes);
	if (r->kind == TALLY_KIND_MEMCPY) {
		obuf_lit(o, ",\"src\":\"");
		obuf_str(o, report_mem_kind_label(r->src_kind));
		obuf_lit(o, "\",\"dst\":\"");
		obuf_str(o, report_mem_kind_label(r->dst_kind));
		obuf_c(o, '"');
	} else {
		obuf_lit(o, ",\"value\":");
		obuf_u64(o, r->value);
	}
	obuf_lit(o, "}}");
	set_add(&cs->tracks, tag(TAG_STREAM, (uint64_t)r->device_id << 32 | r->stream_id));
	set_add(&cs->tracks, tag(TAG_DEVICE, r->device_id));
	if (r->correlation_id)
		flow(c, 'f', rs, r->correlation_id, pid, tid, ts);
}

/* The launch's call stack as an arg: Perfetto shows args in the slice's details (it ignores
 * the JSON format's stackFrames/sf), one line per frame, innermost first. */
static void stack_arg(struct chrome *c, struct report_section *rs, uint32_t stack_id)
{
	const char *label = report_stack_label(rs, stack_id);
	size_t len;
	char *esc;

	obuf_lit(&c->st.ob, ",\"stack\":\"");
	esc = obuf_json_escaped(label, &len);
	if (esc)
		obuf_put(&c->st.ob, esc, len);
	free(esc);
	obuf_lit(&c->st.ob, "\",\"launched_from\":\"");
	esc = obuf_json_escaped(report_frame_label(rs, report_user_frame(rs, stack_id)), &len);
	if (esc)
		obuf_put(&c->st.ob, esc, len);
	free(esc);
	obuf_c(&c->st.ob, '"');
}

static void api(struct chrome *c, struct report_section *rs, struct csec *cs,
		const struct tally_record *r)
{
	struct obuf *o = &c->st.ob;
	uint64_t ts = rel(c, rs, r->start);
	bool driver = r->kind == TALLY_KIND_DRIVER;

	slice_head(c, driver ? "cuda_driver" : "cuda_runtime", driver ? 11 : 12,
		   escaped(rs, cs, r->name_id, false), cs->host_pid, r->thread_id, ts,
		   r->end - r->start);
	obuf_lit(o, ",\"args\":{\"correlation\":");
	obuf_u64(o, r->correlation_id);
	obuf_lit(o, ",\"result\":");
	obuf_i64(o, (int32_t)r->value);
	if (r->stack_id)
		stack_arg(c, rs, r->stack_id);
	obuf_lit(o, "}}");
	set_add(&cs->tracks, tag(TAG_THREAD, r->thread_id));
	if ((r->flags & TALLY_REC_LAUNCH) && r->correlation_id)
		flow(c, 's', rs, r->correlation_id, cs->host_pid, r->thread_id, ts);
}

static void sync_rec(struct chrome *c, struct report_section *rs, struct csec *cs,
		     const struct tally_record *r)
{
	struct obuf *o = &c->st.ob;
	struct esc name;

	name.s = (char *)report_sync_type_label(r->subkind);
	name.len = (uint32_t)strlen(name.s);
	slice_head(c, "sync", 4, &name, cs->host_pid, SYNC_TID_BASE + r->stream_id % 100000000u,
		   rel(c, rs, r->start), r->end - r->start);
	obuf_lit(o, ",\"args\":{\"correlation\":");
	obuf_u64(o, r->correlation_id);
	obuf_lit(o, ",\"context\":");
	obuf_u64(o, r->context_id);
	obuf_lit(o, ",\"stream\":");
	obuf_u64(o, r->stream_id);
	obuf_lit(o, "}}");
	set_add(&cs->tracks, tag(TAG_SYNC, r->stream_id % 100000000u));
}

static void nvtx(struct chrome *c, struct report_section *rs, struct csec *cs,
		 const struct tally_record *r)
{
	struct obuf *o = &c->st.ob;
	const struct esc *name = escaped(rs, cs, r->name_id, false);

	if (r->kind == TALLY_KIND_NVTX_RANGE && !(r->flags & TALLY_REC_DEPTH_LOST)) {
		slice_head(c, "nvtx", 4, name, cs->host_pid, r->thread_id, rel(c, rs, r->start),
			   r->end - r->start);
	} else { /* marks, and a pop whose push was lost: instants */
		begin(c);
		obuf_lit(o, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":\"");
		if (r->flags & TALLY_REC_DEPTH_LOST)
			obuf_lit(o, "NVTX pop without its push");
		else
			obuf_put(o, name->s, name->len);
		obuf_room(o);
		obuf_lit(o, "\",\"pid\":");
		obuf_u64(o, cs->host_pid);
		obuf_lit(o, ",\"tid\":");
		obuf_u64(o, r->thread_id);
		obuf_lit(o, ",\"ts\":");
		obuf_us(o, rel(c, rs, r->start));
	}
	if (r->domain_id) {
		const struct esc *d = escaped(rs, cs, r->domain_id, false);

		obuf_lit(o, ",\"args\":{\"domain\":\"");
		obuf_put(o, d->s, d->len);
		obuf_room(o);
		obuf_lit(o, "\"}");
	}
	obuf_c(o, '}');
	set_add(&cs->tracks, tag(TAG_THREAD, r->thread_id));
}

static void overhead(struct chrome *c, struct report_section *rs, struct csec *cs,
		     const struct tally_record *r)
{
	static const struct esc name = {.s = "CUPTI overhead", .len = 14};

	slice_head(c, "cupti_overhead", 14, &name, cs->host_pid, OVERHEAD_TID, rel(c, rs, r->start),
		   r->end - r->start);
	obuf_lit(&c->st.ob, ",\"args\":{\"kind\":");
	obuf_u64(&c->st.ob, r->subkind);
	obuf_lit(&c->st.ob, "}}");
	set_add(&cs->tracks, tag(TAG_OVERHEAD, 0));
}

/* The escaped label and unit of a metric, made the first time it comes. */
static bool metric_names(struct csec *cs, const struct report_metric *m)
{
	struct esc *n, *u;
	struct step *st;
	uint32_t cap = cs->nmetrics;
	size_t len;

	if (m->index < cs->nmetrics && cs->metric_name[m->index].s)
		return true;
	if (m->index >= cs->nmetrics) {
		cap = m->index + 16;
		n = tally_resize(cs->metric_name, cap, sizeof(*n));
		if (n)
			cs->metric_name = n;
		u = n ? tally_resize(cs->metric_unit, cap, sizeof(*u)) : NULL;
		if (u)
			cs->metric_unit = u;
		st = u ? tally_resize(cs->steps, cap, sizeof(*st)) : NULL;
		if (!st)
			return false;
		cs->steps = st;
		memset(n + cs->nmetrics, 0, (cap - cs->nmetrics) * sizeof(*n));
		memset(u + cs->nmetrics, 0, (cap - cs->nmetrics) * sizeof(*u));
		memset(st + cs->nmetrics, 0, (cap - cs->nmetrics) * sizeof(*st));
		cs->nmetrics = cap;
	}
	/* Perfetto names a counter track "name arg": the unit makes it "SM Active %" */
	cs->metric_unit[m->index].s = obuf_json_escaped(*m->unit ? m->unit : "value", &len);
	cs->metric_unit[m->index].len = (uint32_t)len;
	cs->metric_name[m->index].s = obuf_json_escaped(m->label, &len);
	cs->metric_name[m->index].len = (uint32_t)len;
	return cs->metric_name[m->index].s && cs->metric_unit[m->index].s;
}

/* A counter event up to its value: {"ph":"C","name":"SM Active","pid":P,"ts":T,"args":{"%": */
static void metric_head(struct chrome *c, const struct csec *cs, uint32_t index, uint32_t pid,
			int64_t ts)
{
	struct obuf *o = &c->st.ob;

	begin(c);
	obuf_lit(o, "\"ph\":\"C\",\"name\":\"");
	obuf_put(o, cs->metric_name[index].s, cs->metric_name[index].len);
	obuf_room(o);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, ts);
	obuf_lit(o, ",\"args\":{\"");
	obuf_put(o, cs->metric_unit[index].s, cs->metric_unit[index].len);
	obuf_room(o);
	obuf_lit(o, "\":");
}

/* The mean of a metric's samples over one step, at the step's start. */
static void step_out(struct chrome *c, const struct csec *cs, uint32_t index)
{
	struct step *st = &cs->steps[index];
	char num[32];

	if (!st->open)
		return;
	metric_head(c, cs, index, st->pid, (int64_t)(st->index * c->metric_step));
	snprintf(num, sizeof(num), "%.9g", st->w > 0 ? st->vw / st->w : 0.0);
	obuf_str(&c->st.ob, num);
	obuf_lit(&c->st.ob, "}}");
	st->open = false;
}

/* Every open step of a section, when it ends. */
static void steps_out(struct chrome *c, const struct csec *cs)
{
	uint32_t i;

	for (i = 0; i < cs->nmetrics; i++)
		if (cs->steps[i].open)
			step_out(c, cs, i);
}

/* A GPU metric sample: the value the device's counter track holds from the sample's start, or
 * (--metric-step) its share of its step's mean. */
static int metric(struct chrome *c, struct report_section *rs, struct csec *cs,
		  const struct tally_record *r)
{
	const struct report_metric *m = report_metric(rs, r);
	uint32_t pid = device_pid(rs, r->device_id);
	int64_t ts = rel(c, rs, r->start);
	struct step *st;
	double d;

	if (!m || !metric_names(cs, m))
		return -ENOMEM;
	if (!set_add(&cs->tracks, tag(TAG_DEVICE, r->device_id)))
		return -ENOMEM;
	if (!c->metric_step) {
		char value[REPORT_METRIC_TEXT];

		metric_head(c, cs, m->index, pid, ts);
		obuf_str(&c->st.ob, report_metric_text(r, value));
		obuf_lit(&c->st.ob, "}}");
		return 0;
	}
	st = &cs->steps[m->index];
	if (st->open && st->index != (uint64_t)(ts > 0 ? ts : 0) / c->metric_step)
		step_out(c, cs, m->index);
	d = r->end > r->start ? (double)(r->end - r->start) : 1;
	if (!st->open)
		*st = (struct step){(uint64_t)(ts > 0 ? ts : 0) / c->metric_step, 0, 0, pid, true};
	st->vw += report_metric_value(r) * d;
	st->w += d;
	return 0;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct chrome *c = ctx;
	struct csec *cs = csec(c, rs);
	size_t i;

	if (!cs || report_gpu_gaps_add(c->gaps, rs, r, n) < 0 ||
	    launches_add(c->launches, rs, r, n) < 0)
		return -ENOMEM;
	if (n && (r[0].kind == TALLY_KIND_OSRT || r[0].kind == TALLY_KIND_CPU_SAMPLE)) {
		if (!c->st.base)
			c->st.base = report_time(rs, r[0].start);
		c->st.pid = host_pid(c, rs);
		return chrome_host_records(c->host, &c->st, rs, r, n) < 0 ? -ENOMEM : -c->st.ob.err;
	}
	for (i = 0; i < n; i++) {
		if (r[i].flags & TALLY_REC_BAD_TIME) { /* timing lost: nothing to place */
			c->untimed++;
			continue;
		}
		if (!c->st.base) /* no session start known: the first record is the origin */
			c->st.base = report_time(rs, r[i].start);
		switch (r[i].kind) {
		case TALLY_KIND_KERNEL:
			kernel(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_MEMCPY:
		case TALLY_KIND_MEMSET:
			memop(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_RUNTIME:
		case TALLY_KIND_DRIVER:
			api(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_SYNC:
			sync_rec(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_NVTX_RANGE:
		case TALLY_KIND_NVTX_MARK:
			nvtx(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_OVERHEAD:
			overhead(c, rs, cs, &r[i]);
			break;
		case TALLY_KIND_MEMORY:
			mem_usage_add(&c->mem, rs, &r[i]);
			break;
		case TALLY_KIND_GPU_METRIC:
			if (metric(c, rs, cs, &r[i]) < 0)
				return -ENOMEM;
			break;
		default:
			break;
		}
	}
	return c->st.ob.err ? -c->st.ob.err : 0;
}

/* ---- sections, the ledger, loss ----------------------------------------------------------- */

static int on_section(void *ctx, struct report_section *rs)
{
	struct chrome *c = ctx;
	uint32_t pid;

	if (!tally_grow_in(&c->secs, &c->secs_cap, (size_t)rs->index + 1, sizeof(*c->secs)))
		return -ENOMEM;
	memset(&c->secs[rs->index], 0, sizeof(*c->secs));
	queues_section(c->queues, rs);
	c->nsecs = rs->index + 1;
	/* the real pid where it is unique, so that it matches what other tools show */
	pid = (uint32_t)(rs->s->pid % HOST_PID_STEP);
	while (tally_map_get(&c->pids_taken, pid, 0))
		pid += HOST_PID_STEP;
	if (tally_map_put(&c->pids_taken, pid, 0, 1) < 0)
		return -ENOMEM;
	c->secs[rs->index].host_pid = pid;
	return 0;
}

static void counter(struct chrome *c, uint32_t pid, const char *name, uint64_t ts)
{
	struct obuf *o = &c->st.ob;

	begin(c);
	obuf_lit(o, "\"ph\":\"C\",\"name\":\"");
	obuf_str(o, name);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, pid);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, ts);
	obuf_lit(o, ",\"args\":{");
}

/* Each ledger snapshot: records taken in, and every loss counter (cumulative, as stored). */
static int on_ledger(void *ctx, struct report_section *rs, const struct tally_ledger *l)
{
	struct chrome *c = ctx;
	struct csec *cs = csec(c, rs);
	struct obuf *o = &c->st.ob;
	uint64_t ts = rel(c, rs, l->t_end);
	unsigned i;

	if (!cs || !c->st.base)
		return 0; /* before any timed record there is no timeline to put it on */
	counter(c, cs->host_pid, "tally: records", ts);
	obuf_lit(o, "\"parsed\":");
	obuf_u64(o, l->v[TALLY_C_RECORDS_PARSED]);
	obuf_lit(o, ",\"gpu\":");
	obuf_u64(o, l->v[TALLY_C_GPU_RECORDS]);
	obuf_lit(o, "}}");
	counter(c, cs->host_pid, "tally: records lost", ts);
	for (i = 0; i < tally_loss_counters_count; i++) {
		unsigned id = tally_loss_counters[i];

		obuf_room(o);
		if (i)
			obuf_c(o, ',');
		obuf_c(o, '"');
		obuf_str(o, tally_counter_info(id)->name);
		obuf_lit(o, "\":");
		obuf_u64(o, l->v[id]);
	}
	obuf_lit(o, "}}");
	return 0;
}

/* One "DATA LOST" slice (or instant, when the window has no width) on every track of rs. */
static void loss_slice(struct chrome *c, struct report_section *rs, struct csec *cs, uint64_t t0,
		       uint64_t t1, const char *what, uint64_t count, const char *hint)
{
	char name[200], *esc_name, *esc_hint;
	size_t nlen, hlen, i;
	uint32_t pids[65], tid;
	size_t npids = 0;

	if (count)
		snprintf(name, sizeof(name), "DATA LOST: %s (%" PRIu64 ")", what, count);
	else
		snprintf(name, sizeof(name), "DATA LOST: %s", what);
	esc_name = obuf_json_escaped(name, &nlen);
	esc_hint = obuf_json_escaped(hint ? hint : "", &hlen);
	if (!esc_name || !esc_hint)
		goto free_names;
	tid = LOSS_TID - lane_fit(cs->loss_end, &cs->loss_lanes, t0, t1);
	pids[npids++] = cs->host_pid;
	for (i = 0; i < cs->tracks.n && npids < 65; i++)
		if (cs->tracks.v[i] >> 56 == TAG_DEVICE)
			pids[npids++] = device_pid(rs, (uint32_t)(cs->tracks.v[i] & 0xffffffff));
	for (i = 0; i < npids; i++) {
		struct esc e = {.s = esc_name, .len = (uint32_t)nlen};

		slice_head(c, "tally_loss", 10, &e, pids[i], tid, rel(c, rs, t0),
			   t1 > t0 ? t1 - t0 : 0);
		obuf_lit(&c->st.ob, ",\"args\":{\"lost\":");
		obuf_u64(&c->st.ob, count);
		obuf_lit(&c->st.ob, ",\"fix\":\"");
		obuf_put(&c->st.ob, esc_hint, hlen);
		obuf_room(&c->st.ob);
		obuf_lit(&c->st.ob, "\"}}");
	}
free_names:
	free(esc_name);
	free(esc_hint);
}

static const char *counter_hint(unsigned counter)
{
	const struct tally_counter_info *ci = tally_counter_info(counter);

	return ci ? ci->what : "";
}

/* A device's gap that the ledger cannot prove idle: on the loss track, so that nobody reads the
 * empty stretch of the timeline as idle time. */
static int draw_unproven_gaps(struct chrome *c, struct report_section *rs, struct csec *cs)
{
	const struct report_gap *g;
	size_t n, i;

	if (report_gpu_gaps_section(c->gaps, rs) < 0)
		return -ENOMEM;
	g = report_gpu_gaps_list(c->gaps, &n);
	for (i = c->gaps_drawn; i < n; i++) {
		char what[320]; /* gaps.h's why and the words around it */

		if (!g[i].unproven || g[i].stream != REPORT_GAP_ALL_STREAMS)
			continue;
		snprintf(what, sizeof(what), "GPU gap on device %" PRIu32 " not proven idle: %s",
			 g[i].device, g[i].why);
		loss_slice(c, rs, cs, g[i].t0 - (uint64_t)rs->offset,
			   g[i].t1 - (uint64_t)rs->offset, what, 0,
			   "records may have been lost here: the hole is not idle time");
	}
	c->gaps_drawn = n;
	return 0;
}

static int on_section_end(void *ctx, struct report_section *rs)
{
	struct chrome *c = ctx;
	struct csec *cs = csec(c, rs);
	const struct tally_section *s = rs->s;
	size_t i;

	if (!cs)
		return 0;
	steps_out(c, cs);
	chrome_host_section_end(c->host);
	if (draw_unproven_gaps(c, rs, cs) < 0 || launches_section_end(c->launches, rs) < 0)
		return -ENOMEM;
	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];
		const struct tally_counter_info *ci = tally_counter_info(w->counter);

		loss_slice(c, rs, cs, w->t_begin, w->t_end, ci ? ci->name : "loss", w->count,
			   counter_hint(w->counter));
	}
	if (!s->has_final) {
		uint64_t from = s->ledgers ? s->ledger.t_end : s->start_cupti;
		uint64_t to = rs->last_time ? rs->last_time - (uint64_t)rs->offset : from;

		if (from)
			loss_slice(c, rs, cs, from, to > from ? to : from,
				   "trace not closed, nothing after this is known", 0,
				   "the process ended without tally's closing flush (killed?)");
	}
	return c->st.ob.err ? -c->st.ob.err : 0;
}

static int on_damage(void *ctx, struct report_input *in, struct report_section *rs,
		     const struct tally_damage *d)
{
	struct chrome *c = ctx;
	struct csec *cs = rs ? csec(c, rs) : NULL;
	uint64_t at;
	char what[160];

	(void)in;
	if (!cs || !c->st.base)
		return 0;
	if (d->kind == TALLY_DAMAGE_SEQ_GAP)
		snprintf(what, sizeof(what), "%u chunk(s) missing before byte %" PRIu64, d->missing,
			 d->offset);
	else
		snprintf(what, sizeof(what), "%s bytes %" PRIu64 "-%" PRIu64 " of the file",
			 tally_damage_kind_name(d->kind), d->offset, d->end);
	/* placed at the last time read before it: what it held came after */
	at = rs->last_time ? rs->last_time - (uint64_t)rs->offset : rs->s->start_cupti;
	loss_slice(c, rs, cs, at, at, what, 0,
		   "the file was damaged after it was written: the records there are missing");
	return 0;
}

/* ---- metadata and the verdict ------------------------------------------------------------- */

static void meta(struct chrome *c, const char *what, uint32_t pid, uint64_t tid, bool has_tid,
		 const char *key, const char *value, int64_t num)
{
	struct obuf *o = &c->st.ob;
	size_t len;
	char *e = value ? obuf_json_escaped(value, &len) : NULL;

	begin(c);
	obuf_lit(o, "\"ph\":\"M\",\"name\":\"");
	obuf_str(o, what);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, pid);
	if (has_tid) {
		obuf_lit(o, ",\"tid\":");
		obuf_u64(o, tid);
	}
	obuf_lit(o, ",\"args\":{\"");
	obuf_str(o, key);
	obuf_lit(o, "\":");
	if (value && e) {
		obuf_c(o, '"');
		obuf_put(o, e, len);
		obuf_room(o);
		obuf_c(o, '"');
	} else {
		obuf_i64(o, num);
	}
	obuf_lit(o, "}}");
	free(e);
}

static const char *device_name(const struct tally_section *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->ndevices; i++)
		if (s->devices[i].id == id && s->devices[i].name)
			return s->devices[i].name;
	return NULL;
}

/* The DATA LOST track of a process, and its sub-tracks where loss windows overlap. */
static void loss_track_names(struct chrome *c, const struct csec *cs, uint32_t pid)
{
	char name[64];
	unsigned lane;

	for (lane = 0; lane < (cs->loss_lanes ? cs->loss_lanes : 1); lane++) {
		if (lane)
			snprintf(name, sizeof(name), "tally: DATA LOST (%u)", lane + 1);
		meta(c, "thread_name", pid, LOSS_TID - lane, true, "name",
		     lane ? name : "tally: DATA LOST", 0);
		meta(c, "thread_sort_index", pid, LOSS_TID - lane, true, "sort_index", NULL,
		     -1 - (int64_t)lane);
	}
}

static void section_meta(struct chrome *c, const struct report_set *set,
			 const struct report_section *rs, const struct csec *cs)
{
	char label[300], name[600];
	size_t i;

	report_section_label(rs, label, sizeof(label));
	if (set->nsections > 1) { /* two processes may share a pid and host: number them */
		size_t n = strlen(label);

		snprintf(label + n, sizeof(label) - n, " [%u]", rs->index);
	}
	snprintf(name, sizeof(name), "%s%s", rs->verdict.complete ? "" : "[INCOMPLETE] ", label);
	meta(c, "process_name", cs->host_pid, 0, false, "name", name, 0);
	meta(c, "process_sort_index", cs->host_pid, 0, false, "sort_index", NULL,
	     (int64_t)rs->index * 100);
	loss_track_names(c, cs, cs->host_pid);
	for (i = 0; i < cs->tracks.n; i++) {
		uint64_t k = cs->tracks.v[i], x = k & 0xffffffffull;
		uint32_t dev = (uint32_t)(k >> 32 & 0xffffff), pid;
		const char *dn;

		switch (k >> 56) {
		case TAG_DEVICE:
			pid = device_pid(rs, (uint32_t)x);
			dn = device_name(rs->s, (uint32_t)x);
			snprintf(name, sizeof(name), "%sGPU %u (%s)%s%s",
				 rs->verdict.complete ? "" : "[INCOMPLETE] ", (uint32_t)x,
				 dn ? dn : "unknown device", set->nsections > 1 ? " - " : "",
				 set->nsections > 1 ? label : "");
			meta(c, "process_name", pid, 0, false, "name", name, 0);
			meta(c, "process_sort_index", pid, 0, false, "sort_index", NULL,
			     (int64_t)rs->index * 100 + 1 + (int64_t)x);
			loss_track_names(c, cs, pid);
			break;
		case TAG_STREAM:
			snprintf(name, sizeof(name), "stream %u", (uint32_t)x);
			meta(c, "thread_name", device_pid(rs, dev), x, true, "name", name, 0);
			break;
		case TAG_THREAD:
			snprintf(name, sizeof(name), "thread %u", (uint32_t)x);
			meta(c, "thread_name", cs->host_pid, x, true, "name", name, 0);
			break;
		case TAG_SYNC:
			snprintf(name, sizeof(name), "CUDA sync: stream %u", (uint32_t)x);
			meta(c, "thread_name", cs->host_pid, SYNC_TID_BASE + x, true, "name", name,
			     0);
			break;
		case TAG_LANE:
			snprintf(name, sizeof(name), "stream %u (overlapping work %u)", (uint32_t)x,
				 (unsigned)(k >> 48 & 0xff));
			meta(c, "thread_name", device_pid(rs, (uint32_t)(k >> 32 & 0xffff)),
			     LANE_TID_BASE + (uint32_t)((k >> 48 & 0xff) - 1) * 10000000u +
				 (uint32_t)x % 10000000u,
			     true, "name", name, 0);
			break;
		case TAG_OVERHEAD:
			meta(c, "thread_name", cs->host_pid, OVERHEAD_TID, true, "name",
			     "CUPTI overhead", 0);
			break;
		}
	}
}

/* The otherData object: verdict first, then where data was lost (compact JSON). */
static char *other_data(struct chrome *c, const struct report_set *set, size_t *len)
{
	struct tally_json j;
	char *out = NULL;
	FILE *m = open_memstream(&out, len);

	if (!m)
		return NULL;
	tally_json_init(&j, m, false);
	tally_json_object_begin(&j);
	tally_json_field_string(&j, "tally_verdict", set->complete ? "COMPLETE" : "INCOMPLETE");
	tally_json_field_uint(&j, "tally_time_base_ns", c->st.base);
	tally_json_field_uint(&j, "tally_untimed_records", c->untimed);
	tally_json_name(&j, "tally");
	tally_json_object_begin(&j);
	report_loss_json(&j, set);
	tally_json_object_end(&j);
	tally_json_object_end(&j);
	if (fclose(m) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Fill the space kept at the top with otherData (or, if it is too long, a pointer to the end). */
static int write_header(struct chrome *c, const char *od, size_t len, bool *fits)
{
	char buf[HEADER_RESERVE];
	int n;

	*fits = len <= HEADER_RESERVE;
	if (*fits) {
		memcpy(buf, od, len);
		memset(buf + len, ' ', HEADER_RESERVE - len);
	} else {
		n = snprintf(buf, sizeof(buf),
			     "{\"tally_verdict\":\"%s\",\"tally_note\":\"details are at the end of "
			     "the file, under tally_report\"}",
			     strstr(od, "\"tally_verdict\":\"COMPLETE\"") ? "COMPLETE"
									  : "INCOMPLETE");
		memset(buf + n, ' ', HEADER_RESERVE - (size_t)n);
	}
	if (fflush(c->f) != 0 || pwrite(fileno(c->f), buf, HEADER_RESERVE, 13) != HEADER_RESERVE)
		return -errno;
	return 0;
}

/* A counter track per device ("CUDA memory"), one series per memory kind: bytes in use. */
static void mem_counter(struct chrome *c, const struct report_set *set, const struct mem_event *e)
{
	struct report_section *rs = e->sec < set->nsections ? set->sections[e->sec] : NULL;
	struct csec *cs = rs ? csec(c, rs) : NULL;

	if (!cs)
		return;
	counter(c, device_pid(rs, e->device), "CUDA memory (bytes)", e->t - c->st.base);
	obuf_c(&c->st.ob, '"');
	obuf_str(&c->st.ob, report_mem_kind_label(e->kind));
	obuf_lit(&c->st.ob, "\":");
	obuf_u64(&c->st.ob, e->in_use);
	obuf_lit(&c->st.ob, "}}");
	set_add(&cs->tracks, tag(TAG_DEVICE, e->device));
}

/*
 * A counter track per stream in its device's process: the launches outstanding on it, a value
 * where the time-weighted mean of a bucket changes (a counter holds until the next), then 0
 * after the last.  Only changes are written: a stream's values cost what its launches do, not
 * the buckets of the whole run.
 */
static void queue_counters(struct chrome *c, const struct report_set *set, const struct qseries *q)
{
	struct report_section *rs = q->section < set->nsections ? set->sections[q->section] : NULL;
	struct csec *cs = rs ? csec(c, rs) : NULL;
	int64_t prev = -1;
	char name[64];
	uint32_t b;

	if (!cs || q->n <= q->lo)
		return;
	snprintf(name, sizeof(name), "launches outstanding, stream %" PRIu32, q->stream);
	for (b = q->lo; b <= q->n; b++) {
		uint64_t t = q->origin + b * q->width;
		/* three decimals: the mean in thousandths, written as obuf_us writes ns as us */
		int64_t v = b < q->n ? (int64_t)(q->mean[b - q->lo] * 1000.0 + 0.5) : 0;

		if (t < c->st.base || v == prev)
			continue;
		prev = v;
		counter(c, device_pid(rs, q->device), name, (int64_t)(t - c->st.base));
		obuf_lit(&c->st.ob, "\"launches\":");
		obuf_us(&c->st.ob, v);
		obuf_lit(&c->st.ob, "}}");
	}
	set_add(&cs->tracks, tag(TAG_DEVICE, q->device));
}

static int chrome_finish(void *state, struct report_set *set, struct export_stats *st, char *err,
			 size_t errlen)
{
	struct chrome *c = state;
	size_t i, len = 0;
	char *od;
	bool fits = false;
	int rc;

	if (mem_usage_finish(&c->mem) < 0)
		return -ENOMEM;
	for (i = 0; i < c->mem.n; i++)
		mem_counter(c, set, &c->mem.ev[i]);
	if (queues_finish(c->queues) < 0)
		return -ENOMEM;
	{
		size_t nq;
		const struct qseries *q = queues_list(c->queues, &nq);

		for (i = 0; i < nq; i++)
			queue_counters(c, set, &q[i]);
	}
	for (i = 0; i < set->nsections && i < c->nsecs; i++) {
		section_meta(c, set, set->sections[i], &c->secs[i]);
		c->st.pid = host_pid(c, set->sections[i]);
		chrome_host_thread_names(&c->st, set->sections[i]);
	}
	od = other_data(c, set, &len);
	if (!od)
		return -ENOMEM;
	obuf_lit(&c->st.ob, "\n],\n\"displayTimeUnit\":\"ns\"");
	if (c->seekable)
		fits = len <= HEADER_RESERVE;
	if (!fits) {
		obuf_str(&c->st.ob, c->seekable ? ",\n\"tally_report\":" : ",\n\"otherData\":");
		obuf_put(&c->st.ob, od, len);
	}
	obuf_lit(&c->st.ob, "}\n");
	rc = obuf_flush(&c->st.ob);
	if (rc == 0 && c->seekable)
		rc = write_header(c, od, len, &fits);
	if (rc == 0 && fflush(c->f) != 0)
		rc = -errno;
	if (!c->to_stdout) {
		if (fclose(c->f) != 0 && rc == 0)
			rc = -errno;
		c->f = NULL;
		if (rc == 0 && outfile_commit(&c->out, c->out_flags, err, errlen) < 0) {
			free(od);
			return -EIO;
		}
	}
	free(od);
	st->events = c->st.events;
	st->bytes = c->st.ob.written;
	if (rc < 0)
		snprintf(err, errlen, "%s: write failed: %s", c->path, strerror(-rc));
	return rc;
}

/* ---- open / close ------------------------------------------------------------------------- */

static int chrome_open(void **state, struct report_set *set, const struct export_opts *o, char *err,
		       size_t errlen)
{
	struct chrome *c = calloc(1, sizeof(*c));
	struct stat sb;
	int rc = -ENOMEM;

	if (!c)
		goto fail;
	c->path = strdup(o->output);
	c->to_stdout = strcmp(o->output, "-") == 0;
	if (!c->path)
		goto free_chrome;
	c->out.fd = -1;
	c->out_flags = o->force ? OUTFILE_FORCE : 0;
	if (!c->to_stdout) {
		rc = outfile_open(&c->out, o->output, c->out_flags, err, errlen);
		if (rc < 0)
			goto free_path;
		c->f = fdopen(c->out.fd, "w");
		if (!c->f) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", o->output, strerror(errno));
			outfile_abort(&c->out);
			goto free_path;
		}
		c->out.fd = -1; /* c->f owns it */
	} else {
		c->f = stdout;
	}
	c->seekable = !c->to_stdout && fstat(fileno(c->f), &sb) == 0 && S_ISREG(sb.st_mode);
	if (obuf_init(&c->st.ob, c->f) < 0 || !(c->gaps = report_gpu_gaps_new(NULL)) ||
	    !(c->host = chrome_host_new()) || !(c->queues = queues_new(QUEUE_BUCKETS)) ||
	    !(c->launches = launches_new(c->queues, false)))
		goto close_file;
	c->st.first = true;
	c->metric_step = o->metric_step_ns;
	/* ts counts from the earliest moment of the inputs, so that none is negative */
	c->st.base = report_set_earliest(set);
	if (!c->st.base)
		c->st.base = set->base;
	if (c->seekable) { /* {"otherData":<reserved>,"traceEvents":[ */
		obuf_lit(&c->st.ob, "{\"otherData\":");
		for (int i = 0; i < HEADER_RESERVE; i += 64)
			obuf_lit(
			    &c->st.ob,
			    "                                                                ");
		obuf_lit(&c->st.ob, ",\n\"traceEvents\":[");
	} else {
		obuf_lit(&c->st.ob, "{\"traceEvents\":[");
	}
	*state = c;
	return 0;
close_file:
	if (!c->to_stdout) {
		fclose(c->f);
		outfile_abort(&c->out);
	}
free_path:
	free(c->path);
free_chrome:
	free(c);
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

static void chrome_destroy(void *state, bool failed)
{
	struct chrome *c = state;
	size_t i;
	uint32_t k;

	if (!c)
		return;
	mem_usage_fini(&c->mem);
	launches_free(c->launches);
	queues_free(c->queues);
	obuf_fini(&c->st.ob);
	if (!c->to_stdout && c->f)
		fclose(c->f);
	(void)failed; /* whatever was not committed is only a temporary file */
	if (!c->to_stdout)
		outfile_abort(&c->out);
	for (i = 0; i < c->nsecs; i++) {
		esc_names_free(&c->secs[i].names);
		for (k = 0; k < c->secs[i].nmetrics; k++) {
			free(c->secs[i].metric_name[k].s);
			free(c->secs[i].metric_unit[k].s);
		}
		free(c->secs[i].metric_name);
		free(c->secs[i].metric_unit);
		free(c->secs[i].steps);
		free(c->secs[i].lanes);
		tally_map_fini(&c->secs[i].lanes_map);
		free(c->secs[i].tracks.v);
		tally_map_fini(&c->secs[i].tracks.at);
	}
	free(c->secs);
	tally_map_fini(&c->pids_taken);
	free(c->path);
	report_gpu_gaps_free(c->gaps);
	chrome_host_free(c->host);
	free(c);
}

static const struct report_scan_ops chrome_scan = {
    .section = on_section,
    .records = on_records,
    .ledger = on_ledger,
    .damage = on_damage,
    .section_end = on_section_end,
};

const struct exporter export_chrome = {
    .name = "chrome",
    .what = "Chrome trace event JSON, for Perfetto UI and chrome://tracing",
    .open = chrome_open,
    .scan = &chrome_scan,
    .finish = chrome_finish,
    .destroy = chrome_destroy,
};
