/* SPDX-License-Identifier: MIT */
/*
 * Perfetto's own trace format (docs/export.md): a stream of TracePackets, protobuf-encoded by
 * Debian's protobuf-c from the schema subset in perfetto-trace.proto.  A trace too big for JSON
 * (317 bytes a record; browsers stop at a few hundred MB) is here a few tens of bytes a record,
 * written as it is read: every packet goes out when its record comes in, nothing is held but the
 * tracks and names seen so far.
 *
 * The layout follows the Chrome JSON export's: per process a track (pid, the label) with child
 * tracks for each thread's CUDA API calls, driver calls and NVTX ranges, for synchronization, CUPTI
 * overhead and "tally: DATA LOST"; per device a process-like track with a child track per stream.
 * Slices on one track must nest, and GPU work on one stream may overlap (programmatic dependent
 * launch, clocks that disagree), so each family of tracks has overlap lanes, as in chrome.c.
 * Every record is a begin and an end packet on one sequence; names and categories are interned
 * on it (InternedData), once each.  Times are the aligned ns of the records (CLOCK_REALTIME):
 * protobuf's unsigned timestamps need no origin shift.  Each section ends with an instant on its
 * process track that gives its verdict; CUDA memory in use is a counter track per device and
 * memory kind, written at the end in time order (as in chrome.c).  The host, as in chrome-host.c:
 * each thread's blocking calls on a track of their own; its samples as PerfSamples (pid, tid and
 * an interned call stack: Perfetto's perf_sample table and its flame graphs), the frames as
 * functions of two mappings, "python" and "native"; and each GPU metric of a device as a counter
 * track under it, a value at each sample's start (the JSON's counters).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "grow.h"
#include "hashmap.h"
#include "memusage.h"
#include "outfile.h"
#include "perfetto-trace.pb-c.h"
#include "stacks.h"
#include "text.h"

#define SEQUENCE_ID	      1
#define SEQ_STATE_CLEARED     1 /* TracePacket.SequenceFlags */
#define SEQ_NEEDS_STATE	      2
#define MAX_LANES	      8
#define DEVICE_PID_BASE	      1000000000 /* as chrome.c: base + section * 1000 + device */
#define DUPLICATE_PID_BASE    1900000000 /* a second section with the same pid: base + section */
#define PERFETTO_WRITE_BUFFER (1u << 20)

/* Families of tracks: each its lanes (lane 0 its own track, 1.. for overlapping work). */
enum family {
	F_PROCESS = 1, /* the host process (no lanes) */
	F_DEVICE,      /* a device's process-like track (no lanes) */
	F_STREAM,      /* a = device, b = stream */
	F_RUNTIME,     /* a = thread */
	F_DRIVER,
	F_NVTX,
	F_SYNC, /* b = stream */
	F_OVERHEAD,
	F_LOSS,
	F_MEMORY, /* counter: a = device, b = memory kind */
	F_OSRT,	  /* a = thread (its kernel tid) */
	F_METRIC, /* counter: a = device, b = the section's metric index */
};

#define MAPPING_PYTHON 1 /* the two mappings of the samples' frames */
#define MAPPING_NATIVE 2
#define CPU_MODE_USER  2	   /* Profiling.CpuMode */
#define FRAME_TORN     0xfffffffeu /* the frame of a sample whose Python frames changed */
#define FRAME_EMPTY    0xfffffffdu /* the frame of a sample on a stack of no frame */

struct lanes {
	uint64_t end[MAX_LANES]; /* where each lane's last slice ends */
	unsigned n;
};

struct pfsec {
	int32_t host_pid;
	struct lanes *lanes;
	size_t nlanes, lanes_cap;
	struct tally_map lane_of; /* (family, a, b) -> index in lanes + 1 */
	uint64_t t_last;	  /* latest end of its records, for its verdict's instant */
};

struct pf {
	FILE *f;
	char *path;
	struct outfile out;
	unsigned out_flags;
	bool to_stdout, began;
	uint8_t *buf; /* one packed packet */
	size_t cap;
	struct tally_map names; /* (hash, length) of a name -> iid */
	char **name;		/* name[iid - 1], for collisions */
	size_t nnames;
	struct tally_map tracks; /* track uuids described so far */
	struct tally_map pids;	 /* host pids given out */
	struct pfsec *secs;
	size_t nsecs, secs_cap;
	struct mem_usage mem;
	struct tally_map frames;     /* (section, frame id) -> frame iid */
	struct tally_map callstacks; /* (section, stack id << 1 | torn) -> callstack iid */
	uint64_t next_frame, next_callstack;
	bool mappings_sent;
	uint64_t packets, slices, counters, samples;
	int err; /* the first write error (errno) */
};

/* ---- packets ------------------------------------------------------------------------------ */

static void write_packet(struct pf *p, Perfetto__Protos__TracePacket *pkt)
{
	size_t len, hdr;
	uint8_t tag[11];

	pkt->has_trusted_packet_sequence_id = 1;
	pkt->trusted_packet_sequence_id = SEQUENCE_ID;
	pkt->has_sequence_flags = 1;
	pkt->sequence_flags = p->began ? SEQ_NEEDS_STATE : SEQ_STATE_CLEARED | SEQ_NEEDS_STATE;
	p->began = true;
	len = protobuf_c_message_get_packed_size(&pkt->base);
	if (!tally_grow_in(&p->buf, &p->cap, len, 1)) {
		p->err = p->err ? p->err : ENOMEM;
		return;
	}
	protobuf_c_message_pack(&pkt->base, p->buf);
	/* Trace.packet, field 1, length-delimited: the file is a Trace written packet by packet */
	tag[0] = 0x0a;
	for (hdr = 1; len >> (7 * (hdr - 1)) >= 0x80; hdr++)
		tag[hdr] = (uint8_t)(len >> (7 * (hdr - 1)) | 0x80);
	tag[hdr] = (uint8_t)(len >> (7 * (hdr - 1)));
	if (fwrite(tag, 1, hdr + 1, p->f) != hdr + 1 || fwrite(p->buf, 1, len, p->f) != len)
		p->err = p->err ? p->err : errno ? errno : EIO;
	p->packets++;
}

/* s as valid UTF-8 (protobuf strings must be): malloc'd, NULL on ENOMEM. */
static char *utf8(const char *s)
{
	size_t n;

	return tally_text_utf8(s ? s : "", strlen(s ? s : ""), &n);
}

/* Interned strings live in one of three tables of InternedData (iids are unique across them). */
enum space { S_NAME, S_CATEGORY, S_ANNOTATION, S_FUNCTION };

/*
 * The iid of name in its table (interned once per trace: there is one sequence), 0 on ENOMEM;
 * *fresh is set to its entry when this packet must carry it.
 */
static uint64_t intern(struct pf *p, enum space space, const char *name,
		       Perfetto__Protos__EventName *fresh, bool *is_fresh)
{
	char *s = utf8(name), **t;
	size_t len = s ? strlen(s) : 0;
	uint64_t h = s ? tally_hash_bytes(s, len) : 0, k1 = (uint64_t)space << 56 | len;
	uint32_t found;

	*is_fresh = false;
	if (!s)
		return 0;
	found = tally_map_get(&p->names, h, k1);
	if (found && strcmp(p->name[found - 1], s) == 0) {
		free(s);
		return found;
	}
	if (!(t = tally_array_push(&p->name, &p->nnames, sizeof(*t)))) {
		free(s);
		return 0;
	}
	*t = s;
	/* a different name of the same hash is interned again, under its own iid */
	if (!found && tally_map_put(&p->names, h, k1, (uint32_t)p->nnames) < 0)
		return 0;
	perfetto__protos__event_name__init(fresh);
	fresh->has_iid = 1;
	fresh->iid = p->nnames;
	fresh->name = s;
	*is_fresh = true;
	return p->nnames;
}

/* ---- tracks ------------------------------------------------------------------------------- */

static uint64_t track_uuid(uint32_t sec, enum family fam, uint32_t a, uint32_t b, unsigned lane)
{
	uint64_t u =
	    tally_hash_pair(tally_key32(sec, (uint32_t)fam << 8 | lane), tally_key32(a, b));

	return u ? u : 1; /* 0 is the implicit global track */
}

static int32_t device_pid(uint32_t sec, uint32_t device)
{
	return DEVICE_PID_BASE + (int32_t)(sec % 900000u) * 1000 + (int32_t)(device % 1000u);
}

/* Describe a track, once. */
static void describe(struct pf *p, uint64_t uuid, uint64_t parent, const char *name, int32_t pid,
		     bool counter)
{
	Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	char *s;

	if (tally_map_get(&p->tracks, uuid, 0))
		return;
	if (tally_map_put(&p->tracks, uuid, 0, 1) < 0 || !(s = utf8(name))) {
		p->err = p->err ? p->err : ENOMEM;
		return;
	}
	td.has_uuid = 1;
	td.uuid = uuid;
	if (parent) {
		td.has_parent_uuid = 1;
		td.parent_uuid = parent;
		td.name = s;
	} else { /* a process */
		pd.has_pid = 1;
		pd.pid = pid;
		pd.process_name = s;
		td.process = &pd;
	}
	if (counter) {
		/* bytes for CUDA memory; a metric's unit is in its name ("SM Active (%)") */
		cd.has_unit = strncmp(name, "CUDA memory", 11) == 0;
		cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
		td.counter = &cd;
	}
	pkt.track_descriptor = &td;
	write_packet(p, &pkt);
	free(s);
}

static struct pfsec *pfsec(struct pf *p, const struct report_section *rs)
{
	return rs->index < p->nsecs ? &p->secs[rs->index] : NULL;
}

static const char *device_name(const struct tally_section *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->ndevices; i++)
		if (s->devices[i].id == id && s->devices[i].name)
			return s->devices[i].name;
	return "unknown device";
}

/* A device's process-like track, described on first use. */
static uint64_t device_track(struct pf *p, const struct report_section *rs, uint32_t device)
{
	uint64_t uuid = track_uuid(rs->index, F_DEVICE, device, 0, 0);
	char dev[300];

	if (!tally_map_get(&p->tracks, uuid, 0)) {
		snprintf(dev, sizeof(dev), "GPU %u (%s) - pid %" PRIu64, device,
			 device_name(rs->s, device), rs->s->pid);
		describe(p, uuid, 0, dev, device_pid(rs->index, device), false);
	}
	return uuid;
}

/* The track of a family's lane: its parent, then itself, described on first use. */
static uint64_t lane_track(struct pf *p, const struct report_section *rs, enum family fam,
			   uint32_t a, uint32_t b, unsigned lane)
{
	const struct pfsec *x = pfsec(p, rs);
	uint64_t uuid = track_uuid(rs->index, fam, a, b, lane), parent;
	char name[160], more[40] = "";

	if (tally_map_get(&p->tracks, uuid, 0))
		return uuid;
	if (lane)
		snprintf(more, sizeof(more), " (overlapping %u)", lane + 1);
	if (fam == F_STREAM || fam == F_MEMORY || fam == F_METRIC) {
		parent = device_track(p, rs, a);
	} else {
		parent = track_uuid(rs->index, F_PROCESS, 0, 0, 0);
	}
	switch (fam) {
	case F_STREAM:
		snprintf(name, sizeof(name), "stream %u%s", b, more);
		break;
	case F_RUNTIME:
	case F_DRIVER:
	case F_NVTX:
		snprintf(name, sizeof(name), "thread %u %s%s", a,
			 fam == F_RUNTIME  ? "CUDA API"
			 : fam == F_DRIVER ? "CUDA driver"
					   : "NVTX",
			 more);
		break;
	case F_SYNC:
		snprintf(name, sizeof(name), "CUDA sync: stream %u%s", b, more);
		break;
	case F_OVERHEAD:
		snprintf(name, sizeof(name), "CUPTI overhead%s", more);
		break;
	case F_LOSS:
		snprintf(name, sizeof(name), "tally: DATA LOST%s", more);
		break;
	case F_MEMORY:
		snprintf(name, sizeof(name), "CUDA memory: %s (bytes)", report_mem_kind_label(b));
		break;
	case F_OSRT:
		snprintf(name, sizeof(name), "thread %u blocking calls%s", a, more);
		break;
	default:
		snprintf(name, sizeof(name), "track");
	}
	describe(p, uuid, parent, name, x ? x->host_pid : 0, fam == F_MEMORY || fam == F_METRIC);
	return uuid;
}

/*
 * The first lane of (fam, a, b) in which [start, end) follows everything placed before (a lane
 * keeps the latest end it has seen: nothing in it overlaps, whatever the order of arrival); a
 * new lane if none, the last one once there are MAX_LANES.  A slice ending as the next begins
 * shares a lane: the end packet comes first in the file, so it is sorted first.
 */
static unsigned fit(struct pf *p, const struct report_section *rs, enum family fam, uint32_t a,
		    uint32_t b, uint64_t start, uint64_t end)
{
	struct pfsec *x = pfsec(p, rs);
	uint64_t k0 = tally_key32((uint32_t)fam, a), k1 = b;
	uint32_t found;
	struct lanes *l;
	unsigned lane;

	if (!x)
		return 0;
	found = tally_map_get(&x->lane_of, k0, k1);
	if (!found) {
		if (!tally_grow_in(&x->lanes, &x->lanes_cap, x->nlanes + 1, sizeof(*x->lanes)))
			return 0;
		if (tally_map_put(&x->lane_of, k0, k1, (uint32_t)x->nlanes + 1) < 0)
			return 0;
		memset(&x->lanes[x->nlanes++], 0, sizeof(*l));
		found = (uint32_t)x->nlanes;
	}
	l = &x->lanes[found - 1];
	for (lane = 0; lane < l->n && l->end[lane] > start; lane++)
		;
	if (lane == MAX_LANES)
		lane = MAX_LANES - 1;
	else if (lane == l->n)
		l->n++;
	if (end > l->end[lane])
		l->end[lane] = end;
	return lane;
}

/* One slice: a begin packet (name interned there if new) and an end packet; flow, when not 0,
 * ties it to the other slices of that flow (a launch and the GPU work it made). */
static void slice(struct pf *p, uint64_t track, uint64_t t0, uint64_t t1, const char *name,
		  const char *category, uint64_t corr, uint64_t flow)
{
	Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__DebugAnnotation da = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	Perfetto__Protos__DebugAnnotation *das[1] = {&da};
	Perfetto__Protos__EventName fresh[3], *names[3];
	Perfetto__Protos__EventCategory cat = PERFETTO__PROTOS__EVENT_CATEGORY__INIT, *cats[1];
	Perfetto__Protos__DebugAnnotationName dan = PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
	Perfetto__Protos__DebugAnnotationName *dans[1] = {&dan};
	uint64_t cat_iid;
	bool is_new;
	size_t n = 0;

	ev.has_name_iid = 1;
	ev.name_iid = intern(p, S_NAME, name, &fresh[0], &is_new);
	if (is_new)
		names[n++] = &fresh[0];
	cat_iid = intern(p, S_CATEGORY, category, &fresh[2], &is_new);
	if (is_new) { /* the same iid, declared as a category */
		cat.has_iid = 1;
		cat.iid = cat_iid;
		cat.name = fresh[2].name;
		cats[0] = &cat;
		in.n_event_categories = 1;
		in.event_categories = cats;
	}
	ev.n_category_iids = 1;
	ev.category_iids = &cat_iid;
	if (corr) {
		uint64_t key = intern(p, S_ANNOTATION, "correlation_id", &fresh[1], &is_new);

		if (is_new) {
			dan.has_iid = 1;
			dan.iid = key;
			dan.name = fresh[1].name;
			in.n_debug_annotation_names = 1;
			in.debug_annotation_names = dans;
		}
		da.has_name_iid = 1;
		da.name_iid = key;
		da.has_uint_value = 1;
		da.uint_value = corr;
		ev.n_debug_annotations = 1;
		ev.debug_annotations = das;
	}
	if (n) {
		in.n_event_names = n;
		in.event_names = names;
	}
	if (in.n_event_names || in.n_event_categories || in.n_debug_annotation_names)
		pkt.interned_data = &in;
	if (flow) {
		ev.n_flow_ids = 1;
		ev.flow_ids = &flow;
	}
	ev.has_type = 1;
	ev.type = t1 > t0 ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
			  : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	ev.has_track_uuid = 1;
	ev.track_uuid = track;
	pkt.has_timestamp = 1;
	pkt.timestamp = t0;
	pkt.track_event = &ev;
	write_packet(p, &pkt);
	p->slices++;
	if (t1 <= t0)
		return;
	perfetto__protos__track_event__init(&ev);
	ev.has_type = 1;
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
	ev.has_track_uuid = 1;
	ev.track_uuid = track;
	perfetto__protos__trace_packet__init(&pkt);
	pkt.has_timestamp = 1;
	pkt.timestamp = t1;
	pkt.track_event = &ev;
	write_packet(p, &pkt);
}

/* ---- the host: blocking calls, samples; GPU metrics ---------------------------------------- */

/* A thread's blocking calls: slices on a track of their own beside its CUDA API calls. */
static void osrt_call(struct pf *p, struct report_section *rs, const struct tally_record *r)
{
	uint64_t t0 = report_time(rs, r->start), t1 = report_time(rs, r->end);
	const char *call = tally_osrt_call_name(r->cbid);
	unsigned lane;

	if (t1 < t0)
		t1 = t0;
	lane = fit(p, rs, F_OSRT, r->thread_id, 0, t0, t1);
	slice(p, lane_track(p, rs, F_OSRT, r->thread_id, 0, lane), t0, t1,
	      call ? call : report_string(rs, r->name_id), "osrt", 0, 0);
}

/* A metric's counter track under its device: "SM Active (%)". */
static uint64_t metric_track(struct pf *p, const struct report_section *rs,
			     const struct report_metric *m)
{
	uint64_t uuid = track_uuid(rs->index, F_METRIC, m->device, m->index, 0);
	const struct pfsec *x = pfsec(p, rs);
	char name[300];

	if (!tally_map_get(&p->tracks, uuid, 0)) {
		uint64_t parent = device_track(p, rs, m->device);

		snprintf(name, sizeof(name), "%s (%s)", m->label, *m->unit ? m->unit : "value");
		describe(p, uuid, parent, name, x ? x->host_pid : 0, true);
	}
	return uuid;
}

/* A GPU metric sample: the value its counter holds from the sample's start. */
static void metric_sample(struct pf *p, struct report_section *rs, const struct tally_record *r)
{
	Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	const struct report_metric *m = report_metric(rs, r);

	if (!m) {
		p->err = p->err ? p->err : ENOMEM;
		return;
	}
	ev.has_type = 1;
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	ev.has_track_uuid = 1;
	ev.track_uuid = metric_track(p, rs, m);
	ev.has_double_counter_value = 1;
	ev.double_counter_value = report_metric_value(r);
	pkt.has_timestamp = 1;
	pkt.timestamp = report_time(rs, r->start);
	pkt.track_event = &ev;
	write_packet(p, &pkt);
	p->counters++;
}

/* What one sample's packet interns: the functions, frames and call stack it is the first to
 * name (a stack's frames at most, and its own call stack). */
struct fresh {
	Perfetto__Protos__InternedString *fn, **fnp;
	Perfetto__Protos__Frame *fr, **frp;
	size_t nfn, nfr;
	Perfetto__Protos__Callstack cs, *csp;
	uint64_t *ids;
};

/* The iid of a frame of rs (or of FRAME_TORN, FRAME_EMPTY), made fresh the first time. */
static uint64_t frame_iid(struct pf *p, struct report_section *rs, uint32_t frame, struct fresh *f)
{
	uint32_t found = tally_map_get(&p->frames, rs->index, frame);
	const struct tally_frame *fr =
	    frame < FRAME_EMPTY ? tally_frame_get(&rs->s->stacks, frame) : NULL;
	Perfetto__Protos__EventName name;
	Perfetto__Protos__Frame *out;
	bool is_new;
	uint64_t fn;

	if (found)
		return found;
	fn = intern(p, S_FUNCTION,
		    frame == FRAME_TORN	   ? "[torn: the frames changed while read]"
		    : frame == FRAME_EMPTY ? "[no frames]"
					   : report_frame_label(rs, frame),
		    &name, &is_new);
	if (!fn || p->next_frame >= UINT32_MAX ||
	    tally_map_put(&p->frames, rs->index, frame, (uint32_t)(p->next_frame + 1)) < 0)
		return 0;
	if (is_new) {
		perfetto__protos__interned_string__init(&f->fn[f->nfn]);
		f->fn[f->nfn].has_iid = 1;
		f->fn[f->nfn].iid = fn;
		f->fn[f->nfn].has_str = 1;
		f->fn[f->nfn].str.data = (uint8_t *)name.name;
		f->fn[f->nfn].str.len = strlen(name.name);
		f->fnp[f->nfn] = &f->fn[f->nfn];
		f->nfn++;
	}
	out = &f->fr[f->nfr];
	perfetto__protos__frame__init(out);
	out->has_iid = out->has_function_name_id = out->has_mapping_id = 1;
	out->iid = ++p->next_frame;
	out->function_name_id = fn;
	out->mapping_id = fr && tally_frame_is_native(fr->type) ? MAPPING_NATIVE : MAPPING_PYTHON;
	if (fr && tally_frame_is_native(fr->type)) {
		out->has_rel_pc = 1;
		out->rel_pc = fr->pc;
	}
	f->frp[f->nfr++] = out;
	return out->iid;
}

/* The call stack of a sample, interned: its frames the outermost first. */
static uint64_t callstack_iid(struct pf *p, struct report_section *rs, uint32_t stack, bool torn,
			      struct fresh *f)
{
	const struct tally_stack *st = torn ? NULL : tally_stack_get(&rs->s->stacks, stack);
	uint64_t key = (uint64_t)stack << 1 | torn;
	uint32_t found = tally_map_get(&p->callstacks, rs->index, key), n, i;
	uint32_t lone = torn ? FRAME_TORN
			: st ? FRAME_EMPTY
			     : 0; /* a stack lost: frame 0's label */

	if (found)
		return found;
	n = st && st->nframes ? st->nframes : 1;
	f->fn = calloc(n, sizeof(*f->fn));
	f->fnp = calloc(n, sizeof(*f->fnp));
	f->fr = calloc(n, sizeof(*f->fr));
	f->frp = calloc(n, sizeof(*f->frp));
	f->ids = calloc(n, sizeof(*f->ids));
	if (!f->fn || !f->fnp || !f->fr || !f->frp || !f->ids)
		return 0;
	for (i = 0; i < n; i++)
		if (!(f->ids[i] =
			  frame_iid(p, rs, st && st->nframes ? st->frames[n - 1 - i] : lone, f)))
			return 0;
	if (p->next_callstack >= UINT32_MAX ||
	    tally_map_put(&p->callstacks, rs->index, key, (uint32_t)(p->next_callstack + 1)) < 0)
		return 0;
	perfetto__protos__callstack__init(&f->cs);
	f->cs.has_iid = 1;
	f->cs.iid = ++p->next_callstack;
	f->cs.n_frame_ids = n;
	f->cs.frame_ids = f->ids;
	f->csp = &f->cs;
	return f->cs.iid;
}

static void fresh_fini(struct fresh *f)
{
	free(f->fn);
	free(f->fnp);
	free(f->fr);
	free(f->frp);
	free(f->ids);
}

/* The two mappings of the frames, in the first sample's packet. */
static void mappings(struct pf *p, Perfetto__Protos__InternedData *in,
		     Perfetto__Protos__InternedString *path,
		     Perfetto__Protos__InternedString **pathp, Perfetto__Protos__Mapping *map,
		     Perfetto__Protos__Mapping **mapp, uint64_t *ids)
{
	static const char *const names[2] = {"python", "native"};
	unsigned k;

	if (p->mappings_sent)
		return;
	p->mappings_sent = true;
	for (k = 0; k < 2; k++) {
		perfetto__protos__interned_string__init(&path[k]);
		path[k].has_iid = path[k].has_str = 1;
		path[k].iid = k + 1;
		path[k].str.data = (uint8_t *)names[k];
		path[k].str.len = strlen(names[k]);
		pathp[k] = &path[k];
		perfetto__protos__mapping__init(&map[k]);
		map[k].has_iid = 1;
		map[k].iid = k == 0 ? MAPPING_PYTHON : MAPPING_NATIVE;
		ids[k] = k + 1;
		map[k].n_path_string_ids = 1;
		map[k].path_string_ids = &ids[k];
		mapp[k] = &map[k];
	}
	in->n_mapping_paths = in->n_mappings = 2;
	in->mapping_paths = pathp;
	in->mappings = mapp;
}

/* A host sample: a PerfSample of the thread, its call stack interned in the same packet. */
static void host_sample(struct pf *p, struct report_section *rs, const struct tally_record *r)
{
	Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__PerfSample ps = PERFETTO__PROTOS__PERF_SAMPLE__INIT;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__InternedString path[2], *pathp[2];
	Perfetto__Protos__Mapping map[2], *mapp[2];
	const struct pfsec *x = pfsec(p, rs);
	struct fresh f = {0};
	uint64_t ids[2];

	ps.callstack_iid = callstack_iid(p, rs, r->stack_id, (r->flags & TALLY_REC_TORN) != 0, &f);
	if (!ps.callstack_iid) {
		fresh_fini(&f);
		p->err = p->err ? p->err : ENOMEM;
		return;
	}
	mappings(p, &in, path, pathp, map, mapp, ids);
	in.n_function_names = f.nfn;
	in.function_names = f.fnp;
	in.n_frames = f.nfr;
	in.frames = f.frp;
	if (f.csp) {
		in.n_callstacks = 1;
		in.callstacks = &f.csp;
	}
	if (in.n_mappings || in.n_frames || in.n_callstacks || in.n_function_names)
		pkt.interned_data = &in;
	ps.has_callstack_iid = ps.has_pid = ps.has_tid = ps.has_cpu = ps.has_cpu_mode = 1;
	ps.pid = x ? (uint32_t)x->host_pid : 0;
	ps.tid = r->thread_id;
	ps.cpu_mode = CPU_MODE_USER;
	pkt.has_timestamp = 1;
	pkt.timestamp = report_time(rs, r->start);
	pkt.perf_sample = &ps;
	write_packet(p, &pkt);
	fresh_fini(&f);
	p->samples++;
}

/* ---- records ------------------------------------------------------------------------------ */

static const char *record_name(struct report_section *rs, const struct tally_record *r, char *buf,
			       size_t len)
{
	switch (r->kind) {
	case TALLY_KIND_KERNEL:
		return report_kernel_name(rs, r->name_id, REPORT_NAME_DEMANGLED);
	case TALLY_KIND_MEMCPY:
		snprintf(buf, len, "[CUDA memcpy %s]", report_memcpy_kind_label(r->subkind));
		return buf;
	case TALLY_KIND_MEMSET:
		return "[CUDA memset]";
	case TALLY_KIND_SYNC:
		snprintf(buf, len, "%s", report_sync_type_label(r->subkind));
		return buf;
	case TALLY_KIND_OVERHEAD:
		return "CUPTI overhead";
	default:
		return report_string(rs, r->name_id);
	}
}

/* Where a kind of record goes: its family and its two keys; 0 for none. */
static enum family family_of(const struct tally_record *r, uint32_t *a, uint32_t *b)
{
	*a = *b = 0;
	switch (r->kind) {
	case TALLY_KIND_KERNEL:
	case TALLY_KIND_MEMCPY:
	case TALLY_KIND_MEMSET:
		*a = r->device_id;
		*b = r->stream_id;
		return F_STREAM;
	case TALLY_KIND_RUNTIME:
		*a = r->thread_id;
		return F_RUNTIME;
	case TALLY_KIND_DRIVER:
		*a = r->thread_id;
		return F_DRIVER;
	case TALLY_KIND_NVTX_RANGE:
	case TALLY_KIND_NVTX_MARK:
		*a = r->thread_id;
		return F_NVTX;
	case TALLY_KIND_SYNC:
		*b = r->stream_id;
		return F_SYNC;
	case TALLY_KIND_OVERHEAD:
		return F_OVERHEAD;
	default:
		return 0;
	}
}

static void one_record(struct pf *p, struct report_section *rs, const struct tally_record *r)
{
	uint64_t t0 = report_time(rs, r->start), t1 = report_time(rs, r->end);
	enum family fam;
	uint32_t a, b;
	unsigned lane;
	uint64_t flow;
	char buf[80];

	if (r->kind == TALLY_KIND_MEMORY) {
		mem_usage_add(&p->mem, rs, r);
		return;
	}
	if (r->flags & TALLY_REC_BAD_TIME)
		return;
	switch (r->kind) { /* the host and the metrics, as the JSON export carries them */
	case TALLY_KIND_OSRT:
		osrt_call(p, rs, r);
		return;
	case TALLY_KIND_CPU_SAMPLE:
		host_sample(p, rs, r);
		return;
	case TALLY_KIND_GPU_METRIC:
		metric_sample(p, rs, r);
		return;
	}
	if (!(fam = family_of(r, &a, &b)))
		return;
	if (r->kind == TALLY_KIND_NVTX_MARK || t1 < t0)
		t1 = t0; /* an instant; a span running backwards is damage: an instant too */
	lane = fit(p, rs, fam, a, b, t0, t1);
	/* a launch and its GPU work share a correlation id: one flow joins them */
	flow = r->correlation_id && (fam == F_STREAM || fam == F_RUNTIME || fam == F_DRIVER)
		   ? tally_hash_pair(rs->index, r->correlation_id)
		   : 0;
	slice(p, lane_track(p, rs, fam, a, b, lane), t0, t1, record_name(rs, r, buf, sizeof(buf)),
	      tally_kind_name(r->kind), r->correlation_id, flow);
	if (pfsec(p, rs) && t1 > pfsec(p, rs)->t_last)
		pfsec(p, rs)->t_last = t1;
}

static int on_records(void *ctx, struct report_section *rs, const struct tally_record *r, size_t n)
{
	struct pf *p = ctx;
	size_t i;

	for (i = 0; i < n && !p->err; i++)
		one_record(p, rs, &r[i]);
	return p->err ? -p->err : 0;
}

/* A section's process track, its pid the real one where it is unique (others' tools show it). */
static int on_section(void *ctx, struct report_section *rs)
{
	struct pf *p = ctx;
	struct pfsec *x;
	char label[300], name[340];

	if (!tally_grow_in(&p->secs, &p->secs_cap, (size_t)rs->index + 1, sizeof(*p->secs)))
		return -ENOMEM;
	x = &p->secs[rs->index];
	memset(x, 0, sizeof(*x));
	p->nsecs = rs->index + 1;
	x->host_pid = (int32_t)(rs->s->pid & 0x7fffffff);
	if (tally_map_get(&p->pids, (uint64_t)x->host_pid, 0) || x->host_pid >= DEVICE_PID_BASE ||
	    x->host_pid <= 0)
		x->host_pid = DUPLICATE_PID_BASE + (int32_t)(rs->index % 200000000u);
	if (tally_map_put(&p->pids, (uint64_t)x->host_pid, 0, 1) < 0)
		return -ENOMEM;
	report_section_label(rs, label, sizeof(label));
	snprintf(name, sizeof(name), "%s [%u]", label, rs->index);
	describe(p, track_uuid(rs->index, F_PROCESS, 0, 0, 0), 0, name, x->host_pid, false);
	return p->err ? -p->err : 0;
}

/* Loss windows (their own track), and the verdict: an instant at the section's last moment. */
static void section_end_events(struct pf *p, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	uint64_t at = pfsec(p, rs) ? pfsec(p, rs)->t_last : 0;
	char name[300];
	size_t i;

	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];
		const struct tally_counter_info *ci = tally_counter_info(w->counter);
		uint64_t t0 = report_time(rs, w->t_begin), t1 = report_time(rs, w->t_end);
		unsigned lane = fit(p, rs, F_LOSS, 0, 0, t0, t1 > t0 ? t1 : t0);

		snprintf(name, sizeof(name), "DATA LOST: %s (%" PRIu64 ")", ci ? ci->name : "loss",
			 w->count);
		slice(p, lane_track(p, rs, F_LOSS, 0, 0, lane), t0, t1 > t0 ? t1 : t0, name,
		      "tally_loss", 0, 0);
		at = t1 > at ? t1 : at;
	}
	if (!at)
		at = tally_section_origin(s) ? report_time(rs, tally_section_origin(s)) : 0;
	snprintf(name, sizeof(name), "tally: %s%s%s",
		 rs->verdict.complete ? "COMPLETE" : "INCOMPLETE", rs->verdict.nreasons ? ": " : "",
		 rs->verdict.nreasons ? rs->verdict.reasons[0].text : "");
	slice(p, track_uuid(rs->index, F_PROCESS, 0, 0, 0), at, at, name, "tally_verdict", 0, 0);
}

static void mem_counter(struct pf *p, const struct report_set *set, const struct mem_event *e)
{
	Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	struct report_section *rs = e->sec < set->nsections ? set->sections[e->sec] : NULL;

	if (!rs)
		return;
	ev.has_type = 1;
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	ev.has_track_uuid = 1;
	ev.track_uuid = lane_track(p, rs, F_MEMORY, e->device, e->kind, 0);
	ev.has_counter_value = 1;
	ev.counter_value = (int64_t)(e->in_use > INT64_MAX ? INT64_MAX : e->in_use);
	pkt.has_timestamp = 1;
	pkt.timestamp = e->t;
	pkt.track_event = &ev;
	write_packet(p, &pkt);
	p->counters++;
}

static const struct report_scan_ops pf_scan = {
    .section = on_section,
    .records = on_records,
};

static int pf_finish(void *state, struct report_set *set, struct export_stats *st, char *err,
		     size_t errlen)
{
	struct pf *p = state;
	size_t i;
	int rc = 0;

	for (i = 0; i < set->nsections && i < p->nsecs && !p->err; i++)
		section_end_events(p, set->sections[i]);
	if (!p->err && mem_usage_finish(&p->mem) < 0)
		p->err = ENOMEM;
	for (i = 0; i < p->mem.n && !p->err; i++)
		mem_counter(p, set, &p->mem.ev[i]);
	if (fflush(p->f) != 0 && !p->err)
		p->err = errno ? errno : EIO;
	st->events = p->slices + p->counters + p->samples;
	if (!p->to_stdout) {
		long pos = ftell(p->f);

		st->bytes = pos > 0 ? (uint64_t)pos : 0;
		if (fclose(p->f) != 0 && !p->err)
			p->err = errno ? errno : EIO;
		p->f = NULL;
	}
	if (p->err) {
		snprintf(err, errlen, "%s: write failed: %s", p->path, strerror(p->err));
		return -p->err;
	}
	if (!p->to_stdout)
		rc = outfile_commit(&p->out, p->out_flags, err, errlen);
	return rc;
}

static void pf_destroy(void *state, bool failed)
{
	struct pf *p = state;
	size_t i;

	if (!p)
		return;
	if (p->f && !p->to_stdout)
		fclose(p->f);
	(void)failed; /* an output not committed is only a temporary file */
	outfile_abort(&p->out);
	for (i = 0; i < p->nsecs; i++) {
		free(p->secs[i].lanes);
		tally_map_fini(&p->secs[i].lane_of);
	}
	for (i = 0; i < p->nnames; i++)
		free(p->name[i]);
	free(p->name);
	free(p->secs);
	free(p->buf);
	free(p->path);
	tally_map_fini(&p->names);
	tally_map_fini(&p->frames);
	tally_map_fini(&p->callstacks);
	tally_map_fini(&p->tracks);
	tally_map_fini(&p->pids);
	mem_usage_fini(&p->mem);
	free(p);
}

static int pf_open(void **state, struct report_set *set, const struct export_opts *o, char *err,
		   size_t errlen)
{
	struct pf *p = calloc(1, sizeof(*p));
	int rc;

	(void)set;
	if (!p || !(p->path = strdup(o->output))) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->out.fd = -1;
	p->to_stdout = strcmp(o->output, "-") == 0;
	p->out_flags = o->force ? OUTFILE_FORCE : 0;
	if (p->to_stdout) {
		p->f = stdout;
	} else {
		rc = outfile_open(&p->out, o->output, p->out_flags, err, errlen);
		if (rc == 0 && !(p->f = fdopen(p->out.fd, "w"))) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", o->output, strerror(errno));
		}
		if (rc < 0) {
			pf_destroy(p, true);
			return rc;
		}
		p->out.fd = -1; /* p->f owns it */
		setvbuf(p->f, NULL, _IOFBF, PERFETTO_WRITE_BUFFER);
	}
	*state = p;
	return 0;
}

const struct exporter export_perfetto = {
    .name = "perfetto",
    .what = "Perfetto's protobuf trace (TrackEvent): opens in ui.perfetto.dev and trace_processor, "
	    "a fraction of the JSON's size (docs/export.md)",
    .open = pf_open,
    .scan = &pf_scan,
    .finish = pf_finish,
    .destroy = pf_destroy,
};
