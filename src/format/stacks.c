/* SPDX-License-Identifier: MIT */
/* FRAMES, STACKS, MODULES and SYMBOLS payloads; see stacks.h and docs/format.md §12. */
#include "stacks.h"
#include "tally-format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE_IDS	(1u << 24) /* more is damage: the collector caps its tables far below */
#define MAX_STACK_DEPTH 4096
#define FRAME_MIN_BYTES 5 /* type, line, pc and two empty names: a varint each */

static void put_bytes(struct tally_buf *b, const char *s, size_t len)
{
	tally_buf_put_varint(b, len);
	tally_buf_put(b, s, len);
}

static uint32_t pending_add(struct tally_pending_table *t)
{
	if (!t->next_id)
		t->next_id = 1;
	t->count++;
	return t->next_id++;
}

uint32_t tally_frame_put(struct tally_pending_table *t, unsigned type, uint32_t line, uint64_t pc,
			 const char *file, size_t file_len, const char *func, size_t func_len)
{
	tally_buf_put_varint(&t->entries, type);
	tally_buf_put_varint(&t->entries, line);
	tally_buf_put_varint(&t->entries, pc);
	put_bytes(&t->entries, file ? file : "", file ? file_len : 0);
	put_bytes(&t->entries, func ? func : "", func ? func_len : 0);
	return pending_add(t);
}

uint32_t tally_stack_put(struct tally_pending_table *t, const uint32_t *frames, uint32_t n)
{
	uint32_t i;

	tally_buf_put_varint(&t->entries, n);
	for (i = 0; i < n; i++)
		tally_buf_put_varint(&t->entries, frames[i]);
	return pending_add(t);
}

/*
 * From 1.4 the path's bytes go on past a NUL with what the writer knows of the file, as key/value
 * entries: a path holds no NUL, so a 1.2 or 1.3 reader, which takes the bytes as a C string,
 * reads the path and nothing more.
 */
void tally_module_put(struct tally_buf *b, uint64_t base, uint64_t lo, uint64_t hi,
		      const char *path, const struct tally_module_facts *facts)
{
	size_t n = strlen(path), id = facts && facts->build_id ? facts->build_id_len : 0, more = 0;

	if (facts) {
		more = 1 + (id ? 2 + tally_varint_len(id) + id : 0);
		more += facts->file_size ? 2 + tally_varint_len(facts->file_size) : 0;
	}
	tally_buf_put_varint(b, base);
	tally_buf_put_varint(b, lo);
	tally_buf_put_varint(b, hi);
	tally_buf_put_varint(b, n + more);
	tally_buf_put(b, path, n);
	if (!facts)
		return;
	tally_buf_put_u8(b, 0);
	if (id)
		tally_kv_bytes(b, TALLY_MK_BUILD_ID, facts->build_id, id);
	if (facts->file_size)
		tally_kv_uint(b, TALLY_MK_FILE_SIZE, facts->file_size);
}

bool tally_pending_take(struct tally_pending_table *t, struct tally_buf *payload)
{
	if (!t->count)
		return false;
	tally_buf_put_varint(payload, t->next_id - t->count);
	tally_buf_put_varint(payload, t->count);
	tally_buf_put(payload, t->entries.data, t->entries.len);
	tally_buf_reset(&t->entries);
	t->count = 0;
	return !payload->failed;
}

void tally_pending_fini(struct tally_pending_table *t)
{
	tally_buf_fini(&t->entries);
	memset(t, 0, sizeof(*t));
}

/* ---- reader ---------------------------------------------------------------------------- */

static char *take_string(struct tally_cursor *c)
{
	uint64_t len = tally_cur_varint(c);
	const uint8_t *p = tally_cur_bytes(c, len);
	char *s;

	if (!p)
		return NULL;
	s = malloc(len + 1);
	if (s) {
		memcpy(s, p, len);
		s[len] = 0;
	}
	return s;
}

/*
 * Grow a table indexed by id to hold ids below need; new entries zeroed.  Each new id is paid for
 * from *budget at entry_min bytes, the least an entry of its kind takes in a payload: every id
 * below need was defined by some chunk of this file (or lost with it), so ids the file's bytes
 * could not hold are damage, and memory stays proportional to the file however many sections
 * claim large first ids.
 */
static bool table_grow(void **table, uint32_t *n, uint64_t need, size_t elem, unsigned entry_min,
		       uint64_t *budget)
{
	void *t;

	if (need <= *n)
		return true;
	if (need > MAX_TABLE_IDS || (need - *n) > *budget / entry_min)
		return false;
	t = tally_resize(*table, (size_t)need, elem);
	if (!t)
		return false;
	memset((char *)t + (size_t)*n * elem, 0, (need - *n) * elem);
	*table = t;
	*budget -= (need - *n) * entry_min;
	*n = (uint32_t)need;
	return true;
}

static bool table_header(struct tally_cursor *c, uint64_t *first, uint64_t *count, size_t len)
{
	*first = tally_cur_varint(c);
	*count = tally_cur_varint(c);
	/* first is bounded before first + count is formed: a huge first wrapped the sum small, and
	 * the table looked big enough for ids past its end (UBSan, found by fuzz-reader) */
	return !c->bad && *first != 0 && *first <= MAX_TABLE_IDS && *count <= len;
}

static void frame_free(struct tally_frame *f)
{
	free(f->file);
	free(f->func);
	memset(f, 0, sizeof(*f));
}

bool tally_frames_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t first, count, i;

	if (!table_header(&c, &first, &count, len / FRAME_MIN_BYTES) ||
	    !table_grow((void **)&t->frames, &t->nframes, first + count, sizeof(*t->frames),
			FRAME_MIN_BYTES, budget))
		return false;
	for (i = 0; i < count; i++) {
		struct tally_frame *f = &t->frames[first + i];

		frame_free(f);
		f->type = (uint8_t)tally_cur_varint(&c);
		f->line = (uint32_t)tally_cur_varint(&c);
		f->pc = tally_cur_varint(&c);
		f->file = take_string(&c);
		f->func = take_string(&c);
		if (c.bad || !f->file || !f->func) {
			frame_free(f);
			return false;
		}
	}
	return c.p == c.end;
}

bool tally_stacks_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len,
			uint64_t *budget)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t first, count, i, j;

	if (!table_header(&c, &first, &count, len) ||
	    !table_grow((void **)&t->stacks, &t->nstacks, first + count, sizeof(*t->stacks), 1,
			budget))
		return false;
	for (i = 0; i < count; i++) {
		struct tally_stack *s = &t->stacks[first + i];
		uint64_t n = tally_cur_varint(&c);

		free(s->frames);
		memset(s, 0, sizeof(*s));
		if (c.bad || n > MAX_STACK_DEPTH || n > len)
			return false;
		s->frames = calloc(n ? n : 1, sizeof(*s->frames));
		if (!s->frames)
			return false;
		for (j = 0; j < n; j++)
			s->frames[j] = (uint32_t)tally_cur_varint(&c);
		s->nframes = (uint32_t)n;
		if (c.bad)
			return false;
	}
	return c.p == c.end;
}

/* ---- the address map: which module wins where --------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_lo(const void *a, const void *b, void *modules)
{
	const struct tally_module *m = modules;
	uint64_t x = m[*(const uint32_t *)a].lo, y = m[*(const uint32_t *)b].lo;

	return x < y ? -1 : x > y;
}

/* A max-heap of module indices: the latest module among those that have begun. */
static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	for (; i && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
	uint32_t v = h[--*n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/*
 * Every module's bounds, in order, cut the address space into segments that each module covers
 * whole or not at all; one sweep with a heap of the modules begun so far gives each segment its
 * latest module.  O(n log n) for n modules (at most TALLY_MODULES_MAX).
 */
static bool map_modules(struct tally_stack_tables *t)
{
	size_t n = t->nmodules, np = 0, i, j, next = 0, nh = 0;
	uint64_t *at = malloc(2 * n * sizeof(*at));
	uint32_t *win = malloc(2 * n * sizeof(*win)), *order = malloc(n * sizeof(*order));
	uint32_t *heap = malloc(n * sizeof(*heap));
	bool ok = at && win && order && heap;

	for (i = 0; ok && i < n; i++) {
		at[np++] = t->modules[i].lo;
		at[np++] = t->modules[i].hi;
		order[i] = (uint32_t)i;
	}
	if (ok) {
		qsort(at, np, sizeof(*at), cmp_u64);
		for (i = j = 0; i < np; i++) /* unique */
			if (!j || at[j - 1] != at[i])
				at[j++] = at[i];
		np = j;
		qsort_r(order, n, sizeof(*order), cmp_lo, t->modules);
	}
	for (i = 0; ok && i < np; i++) {
		while (next < n && t->modules[order[next]].lo <= at[i])
			heap_push(heap, &nh, order[next++]);
		while (nh && t->modules[heap[0]].hi <= at[i])
			heap_pop(heap, &nh);
		win[i] = nh ? heap[0] + 1 : 0;
	}
	free(order);
	free(heap);
	free(t->seg_at);
	free(t->seg_module);
	t->seg_at = ok ? at : NULL;
	t->seg_module = ok ? win : NULL;
	t->nsegs = ok ? np : 0;
	if (!ok) {
		free(at);
		free(win);
	}
	return ok;
}

/* What a 1.4 writer put after the path's NUL (an unknown key is skipped, an unknown type ends
 * the entries, as everywhere in §5). */
static void module_facts(struct tally_module *m, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_kv kv;

	m->described = true;
	while (tally_kv_next(&c, &kv))
		if (kv.key == TALLY_MK_BUILD_ID && kv.type == TALLY_KV_BYTES && kv.len >= 2 &&
		    kv.len <= TALLY_BUILD_ID_MAX) {
			memcpy(m->build_id, kv.ptr, kv.len);
			m->build_id_len = (uint8_t)kv.len;
		} else if (kv.key == TALLY_MK_FILE_SIZE && kv.type == TALLY_KV_UINT) {
			m->file_size = kv.u;
		}
}

bool tally_modules_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};

	while (c.p < c.end && !c.bad) {
		struct tally_module m;
		struct tally_module *grown;
		const uint8_t *bytes, *nul;
		uint64_t n;

		memset(&m, 0, sizeof(m));
		m.base = tally_cur_varint(&c);
		m.lo = tally_cur_varint(&c);
		m.hi = tally_cur_varint(&c);
		n = tally_cur_varint(&c);
		bytes = tally_cur_bytes(&c, n);
		if (c.bad || !bytes || !(m.path = malloc(n + 1)))
			return false;
		memcpy(m.path, bytes, n);
		m.path[n] = 0;
		nul = memchr(bytes, 0, n);
		if (nul)
			module_facts(&m, nul + 1, (size_t)(bytes + n - nul - 1));
		/* the collector describes at most TALLY_MODULES_MAX per section; lookups walk them
		 */
		grown = t->nmodules < TALLY_MODULES_MAX
			    ? tally_array_push(&t->modules, &t->nmodules, sizeof(*grown))
			    : NULL;
		if (!grown) {
			free(m.path);
			return false;
		}
		*grown = m;
	}
	return map_modules(t) && !c.bad;
}

/* ---- SYMBOLS ---------------------------------------------------------------------------- */

#define SYMBOL_MIN_BYTES 5 /* id delta, flags, line and two empty names: a varint each */

void tally_symbol_put(struct tally_buf *entries, uint32_t *prev, uint32_t frame, unsigned flags,
		      uint32_t line, const char *func, const char *file)
{
	tally_buf_put_varint(entries, frame - *prev);
	tally_buf_put_varint(entries, flags);
	tally_buf_put_varint(entries, line);
	tally_buf_put_str(entries, func);
	tally_buf_put_str(entries, file);
	*prev = frame;
}

void tally_symbols_payload(struct tally_buf *payload, uint32_t count,
			   const struct tally_buf *entries, const struct tally_symbols_info *info)
{
	size_t start = payload->len;
	uint8_t len[4];
	uint32_t n;

	tally_buf_put_varint(payload, count);
	tally_buf_put(payload, entries->data, entries->len);
	if (info->has_session_id)
		tally_kv_bytes(payload, TALLY_YK_SESSION_ID, info->session_id,
			       sizeof(info->session_id));
	tally_kv_uint(payload, TALLY_YK_STATE, info->state);
	tally_kv_uint(payload, TALLY_YK_FRAMES, info->frames);
	tally_kv_uint(payload, TALLY_YK_NAMED, info->named);
	tally_kv_uint(payload, TALLY_YK_SPENT_NS, info->spent_ns);
	tally_kv_uint(payload, TALLY_YK_BOUND_NS, info->bound_ns);
	tally_kv_uint(payload, TALLY_YK_OTHER_BUILD, info->other_build);
	tally_kv_uint(payload, TALLY_YK_NO_FILE, info->no_file);
	if (info->how[0])
		tally_kv_str(payload, TALLY_YK_HOW, info->how);
	n = (uint32_t)(payload->len - start + sizeof(len));
	len[0] = (uint8_t)n;
	len[1] = (uint8_t)(n >> 8);
	len[2] = (uint8_t)(n >> 16);
	len[3] = (uint8_t)(n >> 24);
	tally_buf_put(payload, len, sizeof(len));
}

void tally_symbols_encode(struct tally_buf *payload, const struct tally_stack_tables *t)
{
	struct tally_buf entries = {0};
	uint32_t prev = 0;
	size_t i;

	for (i = 0; i < t->nsymbols; i++)
		tally_symbol_put(&entries, &prev, t->symbols[i].frame, t->symbols[i].flags,
				 t->symbols[i].line, t->symbols[i].func, t->symbols[i].file);
	tally_symbols_payload(payload, (uint32_t)t->nsymbols, &entries, &t->symbols_info);
	payload->failed |= entries.failed;
	tally_buf_fini(&entries);
}

static void symbols_info(struct tally_symbols_info *info, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_kv kv;

	memset(info, 0, sizeof(*info));
	info->present = true;
	while (tally_kv_next(&c, &kv)) {
		uint64_t *const at[] = {
		    [TALLY_YK_FRAMES] = &info->frames,
		    [TALLY_YK_NAMED] = &info->named,
		    [TALLY_YK_SPENT_NS] = &info->spent_ns,
		    [TALLY_YK_BOUND_NS] = &info->bound_ns,
		    [TALLY_YK_OTHER_BUILD] = &info->other_build,
		    [TALLY_YK_NO_FILE] = &info->no_file,
		};

		if (kv.key == TALLY_YK_SESSION_ID && kv.type == TALLY_KV_BYTES &&
		    kv.len == sizeof(info->session_id)) {
			memcpy(info->session_id, kv.ptr, kv.len);
			info->has_session_id = true;
		} else if (kv.key == TALLY_YK_STATE && kv.type == TALLY_KV_UINT) {
			info->state = (unsigned)kv.u;
		} else if (kv.key == TALLY_YK_HOW && kv.type == TALLY_KV_BYTES) {
			snprintf(info->how, sizeof(info->how), "%.*s", (int)kv.len, kv.ptr);
		} else if (kv.key < sizeof(at) / sizeof(at[0]) && at[kv.key] &&
			   kv.type == TALLY_KV_UINT) {
			*at[kv.key] = kv.u;
		}
	}
}

void tally_symbols_clear(struct tally_stack_tables *t)
{
	size_t i;

	for (i = 0; i < t->nsymbols; i++) {
		free(t->symbols[i].func);
		free(t->symbols[i].file);
	}
	free(t->symbols);
	t->symbols = NULL;
	t->nsymbols = 0;
	memset(&t->symbols_info, 0, sizeof(t->symbols_info));
}

/* Entries in increasing frame order (each delta at least 1), at most one per SYMBOL_MIN_BYTES of
 * payload: memory stays a small multiple of the chunk. */
bool tally_symbols_parse(struct tally_stack_tables *t, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	uint64_t count, i, frame = 0;
	uint32_t self;

	tally_symbols_clear(t);
	if (len < 5)
		return false;
	self = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 | (uint32_t)p[len - 2] << 16 |
	       (uint32_t)p[len - 1] << 24;
	c.end -= 4;
	count = tally_cur_varint(&c);
	if (self != len || c.bad || count > len / SYMBOL_MIN_BYTES ||
	    !(t->symbols = calloc(count ? count : 1, sizeof(*t->symbols))))
		return false;
	for (i = 0; i < count; i++) {
		struct tally_symbol *y = &t->symbols[i];
		uint64_t delta = tally_cur_varint(&c);

		frame += delta > MAX_TABLE_IDS ? MAX_TABLE_IDS + 1 : delta; /* no wrap past 2^64 */
		y->flags = (uint8_t)tally_cur_varint(&c);
		y->line = (uint32_t)tally_cur_varint(&c);
		y->func = take_string(&c);
		y->file = take_string(&c);
		t->nsymbols = i + 1;
		if (c.bad || !delta || frame > MAX_TABLE_IDS || !y->func || !y->file) {
			tally_symbols_clear(t);
			return false;
		}
		y->frame = (uint32_t)frame;
	}
	symbols_info(&t->symbols_info, c.p, (size_t)(c.end - c.p));
	return true;
}

void tally_stack_tables_fini(struct tally_stack_tables *t)
{
	uint32_t i;
	size_t m;

	for (i = 0; i < t->nframes; i++)
		frame_free(&t->frames[i]);
	for (i = 0; i < t->nstacks; i++)
		free(t->stacks[i].frames);
	for (m = 0; m < t->nmodules; m++)
		free(t->modules[m].path);
	free(t->frames);
	free(t->stacks);
	free(t->modules);
	free(t->seg_at);
	free(t->seg_module);
	tally_symbols_clear(t);
	memset(t, 0, sizeof(*t));
}

const struct tally_stack *tally_stack_get(const struct tally_stack_tables *t, uint32_t id)
{
	return id && id < t->nstacks && t->stacks[id].frames ? &t->stacks[id] : NULL;
}

const struct tally_frame *tally_frame_get(const struct tally_stack_tables *t, uint32_t id)
{
	return id && id < t->nframes && t->frames[id].type ? &t->frames[id] : NULL;
}

/* The latest module covering pc: a later MODULES chunk (after a dlclose/dlopen) wins.  A binary
 * search of the address map, so that a frame costs the same however many modules there are. */
const struct tally_module *tally_module_of(const struct tally_stack_tables *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nsegs;

	if (!t->nsegs || pc < t->seg_at[0])
		return NULL;
	while (hi - lo > 1) { /* the last boundary at or below pc */
		size_t mid = lo + (hi - lo) / 2;

		if (t->seg_at[mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return t->seg_module[lo] ? &t->modules[t->seg_module[lo] - 1] : NULL;
}

const struct tally_symbol *tally_symbol_of(const struct tally_stack_tables *t, uint32_t frame_id)
{
	size_t lo = 0, hi = t->nsymbols;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->symbols[mid].frame < frame_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nsymbols && t->symbols[lo].frame == frame_id ? &t->symbols[lo] : NULL;
}
