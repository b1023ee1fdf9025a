/* SPDX-License-Identifier: MIT */
/*
 * Host samples and blocking calls in the Chrome trace; see chrome-host.h.
 *
 * A profile session per thread track and kind of sample (Python, native): its "Profile" event
 * gives the start time, then each batch of records becomes one "ProfileChunk" per session, with
 * the call-tree nodes not defined before (parents first: a stack is walked from its outermost
 * frame), the samples (leaf node ids) and the time deltas.  The importer keys a session by its id
 * and pid, adds up the deltas from the start time, and reads Profile before the chunks of its id
 * in file order (it does not sort them), so the Profile is written first.  Deltas are whole
 * microseconds: each is rounded against the running total, so a sample is never more than half a
 * microsecond from its recorded time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "chrome-host.h"
#include "grow.h"
#include "hashmap.h"
#include "stacks.h"

#define TORN_FRAME  0xffffffffu /* the node of samples whose frames changed while read */
#define EMPTY_FRAME 0xfffffffeu /* the node of samples on a stack of no frame */

struct psession {
	uint64_t id;	/* the profile id: section, track, kind */
	uint32_t track; /* tid of the events */
	uint8_t python;
	int64_t start_ns, emitted_us; /* relative ns of the Profile; deltas written so far */
	uint32_t *leaf;		      /* stack id -> leaf node id, 0 unknown */
	uint32_t nleaf;
	struct tally_map node_of; /* (parent node, frame id) -> node id */
	size_t nnodes;
	struct tally_buf nodes, samples, deltas; /* the chunk being made */
	uint32_t pending;			 /* samples in it */
};

struct chrome_host {
	struct psession *s;
	size_t n, cap;
	unsigned section;
	struct tally_map by_track; /* (track, python) -> s index + 1 */
	uint32_t *pending;	   /* sessions with samples in their chunk */
	size_t npending, pcap;
};

void chrome_event_begin(struct chrome_stream *s)
{
	obuf_room(&s->ob);
	if (s->first) {
		obuf_lit(&s->ob, "\n{");
		s->first = false;
	} else {
		obuf_lit(&s->ob, ",\n{");
	}
	s->events++;
}

struct chrome_host *chrome_host_new(void)
{
	return calloc(1, sizeof(struct chrome_host));
}

static void drop_sessions(struct chrome_host *h)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		free(h->s[i].leaf);
		tally_map_fini(&h->s[i].node_of);
		tally_buf_fini(&h->s[i].nodes);
		tally_buf_fini(&h->s[i].samples);
		tally_buf_fini(&h->s[i].deltas);
	}
	h->n = 0;
	h->npending = 0;
	tally_map_fini(&h->by_track);
}

void chrome_host_free(struct chrome_host *h)
{
	if (!h)
		return;
	drop_sessions(h);
	free(h->s);
	free(h->pending);
	free(h);
}

void chrome_host_section_end(struct chrome_host *h)
{
	drop_sessions(h);
}

/* The track (tid) of a kernel thread id of rs: the thread's CUPTI id where THREADS ties them, so
 * that its API calls, blocking calls and samples share one track. */
static uint32_t chrome_host_track(const struct report_section *rs, uint32_t tid)
{
	const struct tally_thread *t = tally_section_thread(rs->s, tid);

	return t && t->pthread_id ? (uint32_t)t->pthread_id : tid;
}

/* ---- text helpers ------------------------------------------------------------------------- */

static void buf_str(struct tally_buf *b, const char *s)
{
	tally_buf_put(b, s, strlen(s));
}

static void buf_u64(struct tally_buf *b, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);

	tally_buf_put(b, tmp, (size_t)n);
}

static void buf_i64(struct tally_buf *b, int64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);

	tally_buf_put(b, tmp, (size_t)n);
}

static void buf_json(struct tally_buf *b, const char *s)
{
	size_t len;
	char *e = obuf_json_escaped(s, &len);

	if (e)
		tally_buf_put(b, e, len);
	free(e);
}

/* ---- blocking calls ------------------------------------------------------------------------ */

static void osrt_slice(struct chrome_stream *c, struct report_section *rs,
		       const struct tally_record *r)
{
	struct obuf *o = &c->ob;
	const char *name = tally_osrt_call_name(r->cbid);
	size_t len;
	char *esc = obuf_json_escaped(name ? name : report_string(rs, r->name_id), &len);

	chrome_event_begin(c);
	obuf_lit(o, "\"ph\":\"X\",\"cat\":\"osrt\",\"name\":\"");
	if (esc)
		obuf_put(o, esc, len);
	free(esc);
	obuf_room(o);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, c->pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, chrome_host_track(rs, r->thread_id));
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, chrome_rel(c, rs, r->start));
	obuf_lit(o, ",\"dur\":");
	obuf_us(o, (int64_t)(r->end - r->start));
	obuf_lit(o, ",\"args\":{\"result\":");
	obuf_i64(o, (int32_t)r->value);
	obuf_lit(o, ",\"errno\":");
	obuf_u64(o, r->subkind);
	obuf_lit(o, ",\"object\":");
	obuf_u64(o, r->address);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, r->thread_id);
	obuf_lit(o, "}}");
}

/* ---- samples ------------------------------------------------------------------------------- */

static struct psession *session_of(struct chrome_host *h, const struct report_section *rs,
				   uint32_t track, bool python)
{
	struct psession *p;
	uint32_t k = tally_map_get(&h->by_track, track, python);

	if (k)
		return &h->s[k - 1];
	if (!tally_grow_in(&h->s, &h->cap, h->n + 1, sizeof(*h->s)) ||
	    tally_map_put(&h->by_track, track, python, (uint32_t)h->n + 1) < 0)
		return NULL;
	p = &h->s[h->n++];
	memset(p, 0, sizeof(*p));
	/* unique per export: section, track and kind (the importer keys it with the pid) */
	p->id = (uint64_t)(rs->index & 0xfffff) << 40 | (uint64_t)track << 1 | python;
	p->track = track;
	p->python = python;
	p->start_ns = -1;
	return p;
}

/* The node for frame under parent (0: a root), defined in the pending chunk if new. */
static uint32_t node(struct psession *p, struct report_section *rs, uint32_t parent, uint32_t frame)
{
	uint32_t found = tally_map_get(&p->node_of, parent, frame);

	if (found)
		return found;
	if (p->nnodes >= UINT32_MAX - 1 ||
	    tally_map_put(&p->node_of, parent, frame, (uint32_t)p->nnodes + 1) < 0)
		return 0;
	p->nnodes++;
	if (p->nodes.len)
		tally_buf_put_u8(&p->nodes, ',');
	buf_str(&p->nodes, "{\"id\":");
	buf_u64(&p->nodes, p->nnodes);
	if (parent) {
		buf_str(&p->nodes, ",\"parent\":");
		buf_u64(&p->nodes, parent);
	}
	buf_str(&p->nodes, ",\"callFrame\":{\"functionName\":\"");
	buf_json(&p->nodes, frame == TORN_FRAME	   ? "[torn: the frames changed while read]"
			    : frame == EMPTY_FRAME ? "[no frames]"
						   : report_frame_label(rs, frame));
	buf_str(&p->nodes, "\",\"url\":\"\"}}");
	return (uint32_t)p->nnodes;
}

/* The leaf node of a stack: its frames walked from the outermost, each defined once. */
static uint32_t leaf_of(struct psession *p, struct report_section *rs, uint32_t stack, bool torn)
{
	const struct tally_stack *st = torn ? NULL : tally_stack_get(&rs->s->stacks, stack);
	uint32_t parent = 0, i;

	if (!st || !st->nframes) /* torn, lost, or a stack of no frame: a node of its own */
		return node(p, rs, 0, torn ? TORN_FRAME : st ? EMPTY_FRAME : 0);
	if (stack < p->nleaf && p->leaf[stack])
		return p->leaf[stack];
	for (i = st->nframes; i-- > 0 && (parent = node(p, rs, parent, st->frames[i])) != 0;)
		;
	if (parent && stack >= p->nleaf) {
		uint32_t cap = p->nleaf ? p->nleaf : 64, *t;

		while (cap <= stack)
			cap *= 2;
		if ((t = tally_resize(p->leaf, cap, sizeof(*t)))) {
			memset(t + p->nleaf, 0, (cap - p->nleaf) * sizeof(*t));
			p->leaf = t;
			p->nleaf = cap;
		}
	}
	if (stack < p->nleaf)
		p->leaf[stack] = parent;
	return parent;
}

static void profile_start(struct chrome_stream *c, struct report_section *rs, struct psession *p,
			  int64_t t)
{
	struct obuf *o = &c->ob;

	p->start_ns = t;
	chrome_event_begin(c);
	obuf_lit(o, "\"ph\":\"P\",\"cat\":\"tally_samples\",\"name\":\"Profile\",\"id\":\"0x");
	obuf_room(o);
	{
		char hex[24];

		snprintf(hex, sizeof(hex), "%" PRIx64, p->id);
		obuf_str(o, hex);
	}
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, c->pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, p->track);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, t);
	obuf_lit(o, ",\"args\":{\"data\":{\"startTime\":");
	obuf_i64(o, t / 1000);
	obuf_lit(o, "}}}");
	p->emitted_us = t / 1000;
}

static int add_sample(struct chrome_host *h, struct chrome_stream *c, struct report_section *rs,
		      const struct tally_record *r)
{
	bool python = r->subkind == TALLY_SAMPLE_PYTHON;
	struct psession *p = session_of(h, rs, chrome_host_track(rs, r->thread_id), python);
	int64_t t = chrome_rel(c, rs, r->start), us;
	uint32_t leaf;

	if (!p)
		return -ENOMEM;
	if (p->start_ns < 0)
		profile_start(c, rs, p, t);
	leaf = leaf_of(p, rs, r->stack_id, (r->flags & TALLY_REC_TORN) != 0);
	if (!leaf)
		return -ENOMEM;
	us = (t + 500) / 1000; /* this sample's time, to the nearest microsecond */
	if (!p->pending) {
		if (!tally_grow_in((void **)&h->pending, &h->pcap, h->npending + 1,
				   sizeof(*h->pending)))
			return -ENOMEM;
		h->pending[h->npending++] = (uint32_t)(p - h->s);
	} else {
		tally_buf_put_u8(&p->samples, ',');
		tally_buf_put_u8(&p->deltas, ',');
	}
	buf_u64(&p->samples, leaf);
	buf_i64(&p->deltas, us - p->emitted_us);
	p->emitted_us = us;
	p->pending++;
	return 0;
}

static void chunk(struct chrome_stream *c, struct report_section *rs, struct psession *p)
{
	struct obuf *o = &c->ob;
	char hex[24];

	if (!p->pending)
		return;
	snprintf(hex, sizeof(hex), "%" PRIx64, p->id);
	chrome_event_begin(c);
	obuf_lit(o, "\"ph\":\"P\",\"cat\":\"tally_samples\",\"name\":\"ProfileChunk\",\"id\":\"0x");
	obuf_str(o, hex);
	obuf_lit(o, "\",\"pid\":");
	obuf_u64(o, c->pid);
	obuf_lit(o, ",\"tid\":");
	obuf_u64(o, p->track);
	obuf_lit(o, ",\"ts\":");
	obuf_us(o, p->start_ns);
	obuf_lit(o, ",\"args\":{\"data\":{\"cpuProfile\":{\"nodes\":[");
	obuf_put(o, (const char *)p->nodes.data, p->nodes.len);
	obuf_lit(o, "],\"samples\":[");
	obuf_put(o, (const char *)p->samples.data, p->samples.len);
	obuf_lit(o, "]},\"timeDeltas\":[");
	obuf_put(o, (const char *)p->deltas.data, p->deltas.len);
	obuf_lit(o, "]}}}");
	tally_buf_reset(&p->nodes);
	tally_buf_reset(&p->samples);
	tally_buf_reset(&p->deltas);
	p->pending = 0;
}

static int by_index(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int chrome_host_records(struct chrome_host *h, struct chrome_stream *c, struct report_section *rs,
			const struct tally_record *r, size_t n)
{
	size_t i;

	if (!n || (r[0].kind != TALLY_KIND_OSRT && r[0].kind != TALLY_KIND_CPU_SAMPLE))
		return 0;
	if (h->n && h->section != rs->index)
		drop_sessions(h);
	h->section = rs->index;
	for (i = 0; i < n; i++) {
		if ((r[i].flags & TALLY_REC_BAD_TIME) || r[i].kind != r[0].kind)
			continue;
		if (r[i].kind == TALLY_KIND_OSRT)
			osrt_slice(c, rs, &r[i]);
		else if (add_sample(h, c, rs, &r[i]) < 0)
			return -ENOMEM;
	}
	if (h->npending > 1) /* in the order the sessions were made */
		qsort(h->pending, h->npending, sizeof(*h->pending), by_index);
	for (i = 0; i < h->npending; i++)
		chunk(c, rs, &h->s[h->pending[i]]);
	h->npending = 0;
	return 0;
}

void chrome_host_thread_names(struct chrome_stream *c, const struct report_section *rs)
{
	const struct tally_section *s = rs->s;
	struct obuf *o = &c->ob;
	size_t i;

	for (i = 0; i < s->nthreads; i++) {
		const struct tally_thread *t = &s->threads[i];
		char name[96];
		size_t len;
		char *esc;

		if (tally_section_thread(s, t->tid) != t)
			continue; /* a later entry of the same thread says more */
		snprintf(name, sizeof(name), "%s (tid %" PRIu32 ")",
			 t->name[0] ? t->name : "thread", t->tid);
		esc = obuf_json_escaped(name, &len);
		if (!esc)
			continue;
		chrome_event_begin(c);
		obuf_lit(o, "\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
		obuf_u64(o, c->pid);
		obuf_lit(o, ",\"tid\":");
		obuf_u64(o, chrome_host_track(rs, t->tid));
		obuf_lit(o, ",\"args\":{\"name\":\"");
		obuf_put(o, esc, len);
		obuf_room(o);
		obuf_lit(o, "\"}}");
		free(esc);
	}
}
