/* SPDX-License-Identifier: MIT */
/*
 * NVTX capture of our own.  A probe on the H200 saw CUPTI's NVTX path (NVTX_INJECTION64_PATH at
 * libcupti, MARKER kind) give no records for torch.cuda.nvtx.range_push/pop, and CUDA 13.0's
 * libcupti has a reported crash in nvtxNameOsThreadA (NVIDIA/NVTX#125).  So libtally.so is the
 * NVTX injection itself: `tally record` sets NVTX_INJECTION64_PATH to it, and the NVTX loader
 * calls InitializeInjectionNvtx2 below, where we fill the core callback tables.
 *
 * Events are made on the application's threads: each thread keeps its push/pop stack and a buffer
 * of finished events, which goes to the pipeline's consumer when full, when the thread ends, and
 * at the closing flush.  Names are copied into the buffer (the caller may free its string the
 * moment the call returns); the consumer interns them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "clock.h"
#include "grow.h"
#include "libc.h"
#include "log.h"
#include "nvtx.h"
#include "pipeline.h"

#define NVTX_BUFFER_SIZE (64u << 10)
/* Names are kept up to TALLY_NVTX_TEXT_MAX bytes; one byte more is carried to emit(), so that it
 * knows the name was longer and says so in the record (TALLY_REC_TEXT_TRUNCATED). */
#define NAME_MAX_LEN (TALLY_NVTX_TEXT_MAX + 1)
#define EV_TRUNCATED 2 /* struct tally_nvtx_event flags: the name was cut */

struct open_range {
	uint64_t start;
	uint32_t name_off, name_len; /* in the thread's arena */
	const char *domain;
	uint32_t color, category;
	uint64_t payload;
};

struct nvtx_thread {
	struct nvtx_thread *next; /* registry, under registry_lock */
	/* 0 free, 1 taken: by the owner while it appends, by the flusher while it steals the
	 * buffer.  Acquire on taking, release on giving back: the buffer moves with it. */
	_Atomic int busy;
	uint8_t *buf;
	size_t used;
	uint32_t tid;
	struct open_range *stack;
	unsigned depth;
	size_t cap;
	char *arena;
	size_t arena_used, arena_cap;
};

struct nvtx_domain {
	char *name;
};

/* Ranges opened with nvtxRangeStart (ended by id, maybe on another thread). */
struct started_range {
	struct started_range *next;
	nvtxRangeId_t id;
	uint64_t start;
	uint32_t tid, color, category;
	uint64_t payload;
	const char *domain;
	char name[];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_thread *registry;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct nvtx_thread *self;
static pthread_mutex_t started_lock = PTHREAD_MUTEX_INITIALIZER;
static struct started_range *started;
static _Atomic uint64_t next_range_id = 1;
static _Atomic bool nvtx_on;

static void hand_over(uint8_t *buf, size_t used)
{
	if (!buf)
		return;
	if (!used || tally_pipeline_nvtx_buffer(buf, used) < 0)
		free(buf); /* counted by the pipeline when it refuses */
}

static void thread_gone(void *arg)
{
	struct nvtx_thread *t = arg, **pp;
	int expected = 0;

	while (!atomic_compare_exchange_weak_explicit(&t->busy, &expected, 1, memory_order_acquire,
						      memory_order_relaxed))
		expected = 0;
	hand_over(t->buf, t->used);
	libc_pthread_mutex_lock(&registry_lock);
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	free(t->stack);
	free(t->arena);
	free(t);
}

static void make_key(void)
{
	pthread_key_create(&thread_key, thread_gone);
}

static struct nvtx_thread *thread_state(void)
{
	struct nvtx_thread *t = self;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	/* CUPTI's API records name threads by pthread_self(), cut to 32 bits: use the same, so
	 * ranges and the calls inside them land on one track. */
	t->tid = (uint32_t)(uintptr_t)pthread_self();
	pthread_once(&key_once, make_key);
	pthread_setspecific(thread_key, t);
	libc_pthread_mutex_lock(&registry_lock);
	t->next = registry;
	registry = t;
	pthread_mutex_unlock(&registry_lock);
	self = t;
	return t;
}

/* Append one event to this thread's buffer (taking the buffer from a flusher if need be). */
static void emit(struct nvtx_thread *t, unsigned kind, uint64_t start, uint64_t end,
		 const char *name, size_t name_len, const char *domain, uint32_t color,
		 uint32_t category, uint64_t payload, uint8_t flags)
{
	size_t dlen = domain ? strlen(domain) : 0, size;
	struct tally_nvtx_event ev;
	int expected = 0;

	if (name_len > TALLY_NVTX_TEXT_MAX) {
		/* Cut where a character starts, so the text stays UTF-8. */
		for (name_len = TALLY_NVTX_TEXT_MAX;
		     name_len && ((unsigned char)name[name_len] & 0xc0) == 0x80; name_len--)
			;
		flags |= EV_TRUNCATED;
	}
	if (dlen > 255)
		dlen = 255;
	size = (sizeof(ev) + name_len + dlen + 7) & ~(size_t)7;
	while (!atomic_compare_exchange_weak_explicit(&t->busy, &expected, 1, memory_order_acquire,
						      memory_order_relaxed))
		expected = 0;
	if (t->buf && t->used + size > NVTX_BUFFER_SIZE) {
		hand_over(t->buf, t->used);
		t->buf = NULL;
	}
	if (!t->buf) {
		t->buf = malloc(NVTX_BUFFER_SIZE);
		t->used = 0;
	}
	if (t->buf) {
		memset(&ev, 0, sizeof(ev));
		ev.size = (uint16_t)size;
		ev.kind = (uint8_t)kind;
		ev.flags = flags;
		ev.tid = t->tid;
		ev.start = start;
		ev.end = end;
		ev.payload = payload;
		ev.color = color;
		ev.category = category;
		ev.name_len = (uint16_t)name_len;
		ev.domain_len = (uint16_t)dlen;
		memcpy(t->buf + t->used, &ev, sizeof(ev));
		if (name_len)
			memcpy(t->buf + t->used + sizeof(ev), name, name_len);
		if (dlen)
			memcpy(t->buf + t->used + sizeof(ev) + name_len, domain, dlen);
		t->used += size;
	} else {
		tally_pipeline_nvtx_dropped(1);
	}
	atomic_store_explicit(&t->busy, 0, memory_order_release);
}

/* The message of an event, as UTF-8 bytes; wide strings are converted into scratch. */
static const char *message_text(const nvtxEventAttributes_t *a, char *scratch, size_t len,
				size_t *out_len)
{
	const char *s = NULL;

	if (!a) {
		*out_len = 0;
		return "";
	}
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		s = a->message.ascii;
	else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
		s = (const char *)a->message.registered;
	else if (a->messageType == NVTX_MESSAGE_TYPE_UNICODE && a->message.unicode) {
		mbstate_t st;
		const wchar_t *w = a->message.unicode;
		size_t n;

		memset(&st, 0, sizeof(st));
		n = wcsrtombs(scratch, &w, len - 1, &st);
		scratch[n == (size_t)-1 ? 0 : n] = '\0';
		s = scratch;
	}
	if (!s)
		s = "";
	*out_len = strlen(s);
	return s;
}

static uint64_t payload_of(const nvtxEventAttributes_t *a)
{
	return a && a->payloadType ? a->payload.ullValue : 0;
}

static uint32_t color_of(const nvtxEventAttributes_t *a)
{
	return a && a->colorType == NVTX_COLOR_ARGB ? a->color : 0;
}

static bool active(void)
{
	/* The pipeline runs while this process records (a fork child has none until it starts
	 * its own session; after the close there is none either). */
	return atomic_load_explicit(&nvtx_on, memory_order_relaxed) && tally_pipeline_running();
}

/* ---- push/pop ---------------------------------------------------------------------------- */

static int push(const char *domain, const nvtxEventAttributes_t *a, const char *text, size_t len)
{
	struct nvtx_thread *t;
	struct open_range *r;

	if (!active() || !(t = thread_state()))
		return -1;
	if (!tally_grow_in(&t->stack, &t->cap, (size_t)t->depth + 1, sizeof(*t->stack)))
		return -1;
	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	if (!tally_grow_in(&t->arena, &t->arena_cap, t->arena_used + len, 1))
		return -1;
	r = &t->stack[t->depth];
	memcpy(t->arena + t->arena_used, text, len);
	r->name_off = (uint32_t)t->arena_used;
	r->name_len = (uint32_t)len;
	t->arena_used += len;
	r->domain = domain;
	r->color = color_of(a);
	r->category = a ? a->category : 0;
	r->payload = payload_of(a);
	r->start = tally_realtime_ns();
	return (int)t->depth++;
}

static int pop(void)
{
	struct nvtx_thread *t;
	struct open_range *r;
	uint64_t end = tally_realtime_ns();

	if (!active() || !(t = thread_state()))
		return -1;
	if (!t->depth) { /* a pop with no push: keep it visible, flagged */
		emit(t, TALLY_KIND_NVTX_RANGE, end, end, "", 0, NULL, 0, 0, 0, 1);
		return -1;
	}
	r = &t->stack[--t->depth];
	emit(t, TALLY_KIND_NVTX_RANGE, r->start, end, t->arena + r->name_off, r->name_len,
	     r->domain, r->color, r->category, r->payload, 0);
	t->arena_used = r->name_off;
	return (int)t->depth;
}

static int NVTX_API push_a(const char *msg)
{
	return push(NULL, NULL, msg ? msg : "", msg ? strlen(msg) : 0);
}

static int NVTX_API push_w(const wchar_t *msg)
{
	nvtxEventAttributes_t a = {.messageType = NVTX_MESSAGE_TYPE_UNICODE};
	char scratch[1024];
	size_t len;
	const char *s;

	a.message.unicode = msg;
	s = message_text(&a, scratch, sizeof(scratch), &len);
	return push(NULL, NULL, s, len);
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	return push(NULL, a, s, len);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	return push(d ? ((struct nvtx_domain *)d)->name : NULL, a, s, len);
}

static int NVTX_API pop_cb(void)
{
	return pop();
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	(void)d;
	return pop();
}

/* ---- marks ------------------------------------------------------------------------------- */

static void mark(const char *domain, const nvtxEventAttributes_t *a, const char *s, size_t len)
{
	struct nvtx_thread *t;
	uint64_t now = tally_realtime_ns();

	if (!active() || !(t = thread_state()))
		return;
	emit(t, TALLY_KIND_NVTX_MARK, now, now, s, len, domain, color_of(a), a ? a->category : 0,
	     payload_of(a), 0);
}

static void NVTX_API mark_a(const char *msg)
{
	mark(NULL, NULL, msg ? msg : "", msg ? strlen(msg) : 0);
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	mark(NULL, a, s, len);
}

static void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	mark(d ? ((struct nvtx_domain *)d)->name : NULL, a, s, len);
}

/* ---- start/end (by id, across threads) ----------------------------------------------------- */

static nvtxRangeId_t range_start(const char *domain, const nvtxEventAttributes_t *a, const char *s,
				 size_t len)
{
	struct started_range *r;
	struct nvtx_thread *t;

	if (!active() || !(t = thread_state()))
		return 0;
	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return 0;
	memcpy(r->name, s, len);
	r->name[len] = '\0';
	r->id = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
	r->tid = t->tid;
	r->domain = domain;
	r->color = color_of(a);
	r->category = a ? a->category : 0;
	r->payload = payload_of(a);
	r->start = tally_realtime_ns();
	libc_pthread_mutex_lock(&started_lock);
	r->next = started;
	started = r;
	pthread_mutex_unlock(&started_lock);
	return r->id;
}

static void range_end(nvtxRangeId_t id)
{
	struct started_range *r = NULL, **pp;
	uint64_t end = tally_realtime_ns();
	struct nvtx_thread *t;

	if (!active() || !(t = thread_state()))
		return;
	libc_pthread_mutex_lock(&started_lock);
	for (pp = &started; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			r = *pp;
			*pp = r->next;
			break;
		}
	pthread_mutex_unlock(&started_lock);
	if (!r)
		return;
	/* Shown on the thread that started it, where the range began. */
	emit(t, TALLY_KIND_NVTX_RANGE, r->start, end, r->name, strlen(r->name), r->domain, r->color,
	     r->category, r->payload, 0);
	free(r);
}

static nvtxRangeId_t NVTX_API start_a(const char *msg)
{
	return range_start(NULL, NULL, msg ? msg : "", msg ? strlen(msg) : 0);
}

static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	return range_start(NULL, a, s, len);
}

static nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char scratch[1024];
	size_t len;
	const char *s = message_text(a, scratch, sizeof(scratch), &len);

	return range_start(d ? ((struct nvtx_domain *)d)->name : NULL, a, s, len);
}

static void NVTX_API end_cb(nvtxRangeId_t id)
{
	range_end(id);
}

static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	range_end(id);
}

/* ---- domains and registered strings --------------------------------------------------------- */

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
	struct nvtx_domain *d = calloc(1, sizeof(*d));

	if (d)
		d->name = strdup(name ? name : "");
	return (nvtxDomainHandle_t)d;
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
	/* Open ranges may still point at the name: keep it for the life of the process. */
	(void)d;
}

static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)strdup(s ? s : "");
}

static nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t d, const wchar_t *w)
{
	char buf[1024];
	mbstate_t st;
	size_t n;

	(void)d;
	memset(&st, 0, sizeof(st));
	n = wcsrtombs(buf, &w, sizeof(buf) - 1, &st);
	buf[n == (size_t)-1 ? 0 : n] = '\0';
	return (nvtxStringHandle_t)strdup(buf);
}

/* ---- registration --------------------------------------------------------------------------- */

static void set_slot(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
	if (id < size && table[id])
		*table[id] = fn;
}

static int register_core(const NvtxExportTableCallbacks *etc)
{
	NvtxFunctionTable t = NULL;
	unsigned n = 0;

	if (!etc->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
		return -1;
	set_slot(t, n, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)mark_ex);
	set_slot(t, n, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a);
	set_slot(t, n, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex);
	set_slot(t, n, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
	set_slot(t, n, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end_cb);
	set_slot(t, n, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
	set_slot(t, n, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
	set_slot(t, n, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
	set_slot(t, n, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop_cb);
	return 0;
}

static int register_core2(const NvtxExportTableCallbacks *etc)
{
	NvtxFunctionTable t = NULL;
	unsigned n = 0;

	if (!etc->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) || !t)
		return -1;
	set_slot(t, n, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)domain_mark_ex);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)domain_start_ex);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)domain_end);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)domain_push_ex);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)domain_pop);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringA,
		 (NvtxFunctionPointer)register_string_a);
	set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringW,
		 (NvtxFunctionPointer)register_string_w);
	set_slot(t, n, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create_a);
	set_slot(t, n, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)domain_destroy);
	return 0;
}

int nvtx_capture_register(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *etc;

	etc = get_table ? get_table(NVTX_ETID_CALLBACKS) : NULL;
	if (!etc || register_core(etc) < 0) {
		tally_pipeline_note(TALLY_NOTE_WARNING, "nvtx-off",
				    "the NVTX library offered no callback table");
		return 0;
	}
	(void)register_core2(etc);
	atomic_store_explicit(&nvtx_on, true, memory_order_release);
	tally_log("NVTX capture on");
	return 1;
}

/* At the closing flush: every thread's finished events.  Ranges still open are not events yet. */
void nvtx_flush_all(void)
{
	struct nvtx_thread *t;

	libc_pthread_mutex_lock(&registry_lock);
	for (t = registry; t; t = t->next) {
		int expected = 0;
		uint8_t *buf;
		size_t used;

		while (!atomic_compare_exchange_weak_explicit(
		    &t->busy, &expected, 1, memory_order_acquire, memory_order_relaxed))
			expected = 0;
		buf = t->buf;
		used = t->used;
		t->buf = NULL;
		t->used = 0;
		atomic_store_explicit(&t->busy, 0, memory_order_release);
		hand_over(buf, used);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* Held across fork so the child's copies are consistent; the child renews them (nvtx_forget). */
void nvtx_before_fork(void)
{
	libc_pthread_mutex_lock(&registry_lock);
	libc_pthread_mutex_lock(&started_lock);
}

void nvtx_after_fork_parent(void)
{
	pthread_mutex_unlock(&started_lock);
	pthread_mutex_unlock(&registry_lock);
}

void nvtx_forget(void)
{
	/* A fork child keeps only the calling thread; the registry's other entries are gone
	 * threads.  Drop the list (leaking the copies) and start again.  The locks were taken by
	 * this thread in nvtx_before_fork. */
	pthread_mutex_unlock(&started_lock);
	pthread_mutex_unlock(&registry_lock);
	registry = NULL;
	self = NULL;
	started = NULL;
}
