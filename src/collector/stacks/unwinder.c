/* SPDX-License-Identifier: MIT */
/*
 * Return addresses of the calling thread, with a per-thread cache for the launch loop's case.
 *
 * Unwinding interprets each frame's CFI (libgcc's _Unwind_Backtrace, which glibc's backtrace()
 * uses too): measured at 0.7-1 us per frame on the development VM, 6-45 us per launch.  But a
 * loop's launches come from the same call chain at the same stack depth, and on x86-64 a frame's
 * return address sits just below its CFA (canonical frame address).  So after a full unwind the
 * thread remembers where each return address was stored and what it was; at the next capture
 * from the same frame address, if every one of those stack slots still holds the same address,
 * the chain is the same and its addresses are reused (a read per frame instead of a CFI
 * interpretation).  Every 64th hit is unwound in full and compared anyway; one difference and the
 * thread never trusts its cache again.  Only chains on the thread's own stack are cached (a
 * coroutine's stack may be freed), so the slots read are always mapped.
 *
 * libgcc_s is looked up at run time (glibc loads it for backtrace() as well), so libtally.so keeps
 * linking libc, pthread and libdl only; without it, glibc's backtrace() is used, uncached.
 *
 * Small stacks (PTHREAD_STACK_MIN, 16 KiB): the cache and a walk's scratch are the thread's heap
 * block (threadmem.h), not thread-local storage (which a preloaded library takes from every
 * thread's stack) nor arrays on the stack, so a capture takes about 2 KiB of the thread's stack,
 * most of it libgcc's (measured: 1.5 KiB for _Unwind_Backtrace).  The signal handler's walk
 * (tally_unwind_from_signal) keeps nothing at all: it writes the frames it keeps and skips the
 * rest.
 */
#include "unwinder.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "threadmem.h"

#define VERIFY_EVERY 64
#define STACK_SPAN   (64u << 20) /* CFAs further than this above the capture: not one stack */

static struct {
	_Unwind_Reason_Code (*backtrace)(_Unwind_Trace_Fn, void *);
	_Unwind_Ptr (*get_ip)(struct _Unwind_Context *);
	_Unwind_Word (*get_cfa)(struct _Unwind_Context *);
} gcc;

/* A thread's: the cached chain, and a walk's frame addresses. */
struct unwind_cache {
	uintptr_t frame; /* the capture's frame address when the chain was unwound */
	int n, max;
	void *pcs[TALLY_UNWIND_MAX];
	uintptr_t cfas[TALLY_UNWIND_MAX];
	uintptr_t walk_cfas[TALLY_UNWIND_MAX];
	unsigned hits;
	bool untrusted; /* a verification found the cache wrong once */
};

static struct tally_thread_mem caches = TALLY_THREAD_MEM(sizeof(struct unwind_cache));

/* Read by signal handlers: initial-exec, so that no first access allocates. */
static _Thread_local bool in_unwind __attribute__((tls_model("initial-exec")));

void tally_unwind_init(void)
{
	void *warm[4];
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);

	(void)backtrace(warm, 4); /* makes glibc load libgcc_s now, outside any CUDA call */
	if (!h)
		h = dlopen("libgcc_s.so.1", RTLD_NOW);
	if (!h)
		return;
	*(void **)&gcc.backtrace = dlsym(h, "_Unwind_Backtrace");
	*(void **)&gcc.get_ip = dlsym(h, "_Unwind_GetIP");
	*(void **)&gcc.get_cfa = dlsym(h, "_Unwind_GetCFA");
	if (!gcc.get_ip || !gcc.get_cfa)
		gcc.backtrace = NULL;
}

struct walk {
	void **pcs;
	uint64_t *ips;	 /* instead of pcs: a signal's walk, into its sample */
	uintptr_t *cfas; /* NULL: not kept */
	int n, max;
	bool skipped; /* the first context is _Unwind_Backtrace's own; each context gives a frame's
			 CFA and its return address (_Unwind_GetIP), the next frame's pc */
	uintptr_t from; /* nonzero: keep frames from this pc on (a signal's interrupted one) */
};

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	_Unwind_Ptr ip = gcc.get_ip(ctx);

	if (!w->skipped) {
		w->skipped = true;
		return _URC_NO_REASON;
	}
	if (w->n >= w->max || !ip) /* the outermost frame says 0, as glibc's backtrace() knows */
		return _URC_END_OF_STACK;
	if (w->from && (uintptr_t)ip != w->from)
		return _URC_NO_REASON; /* the handler's frames, above the interrupted one */
	w->from = 0;
	if (w->ips)
		w->ips[w->n] = (uint64_t)ip;
	else
		w->pcs[w->n] = (void *)ip;
	if (w->cfas)
		w->cfas[w->n] = (uintptr_t)gcc.get_cfa(ctx);
	w->n++;
	return _URC_NO_REASON;
}

#if defined(__x86_64__)
/* Does every return address of the cached chain still sit where it was? */
static bool cache_holds(const struct unwind_cache *cache, uintptr_t frame, int max)
{
	int k;

	if (cache->untrusted || !cache->n || cache->frame != frame || cache->max != max)
		return false;
	/* frame k's return address (pcs[k]) is stored just below its CFA */
	for (k = 0; k < cache->n; k++)
		if (*(void *const *)(cache->cfas[k] - sizeof(void *)) != cache->pcs[k])
			return false;
	return true;
}

/* Only a chain that is one plain stack above the capture can be checked by reading it. */
static bool cacheable(uintptr_t frame, const uintptr_t *cfas, int n)
{
	int k;

	for (k = 0; k < n; k++)
		if (cfas[k] <= frame || cfas[k] - frame > STACK_SPAN ||
		    (k && cfas[k] <= cfas[k - 1]))
			return false;
	return n > 0;
}
#endif

/* After a full unwind: keep it, and when it was a check of a cache hit, compare. */
static void remember(struct unwind_cache *cache, uintptr_t frame, int max, const struct walk *w,
		     bool verifying)
{
#if defined(__x86_64__)
	if (verifying &&
	    (cache->n != w->n || memcmp(cache->pcs, w->pcs, (size_t)w->n * sizeof(void *))))
		cache->untrusted = true;
	if (cache->untrusted || !cacheable(frame, w->cfas, w->n)) {
		cache->n = 0;
		return;
	}
	cache->frame = frame;
	cache->max = max;
	cache->n = w->n;
	memcpy(cache->pcs, w->pcs, (size_t)w->n * sizeof(void *));
	memcpy(cache->cfas, w->cfas, (size_t)w->n * sizeof(uintptr_t));
#else
	(void)cache, (void)frame, (void)max, (void)w, (void)verifying;
#endif
}

/* The walk itself, marked for the timer's handler (which must not walk inside it).  Inlined
 * always: a frame of its own would be the first one the walk reports. */
static inline __attribute__((always_inline)) void walk(struct walk *w)
{
	in_unwind = true;
	atomic_signal_fence(memory_order_seq_cst);
	(void)gcc.backtrace(on_frame, w);
	atomic_signal_fence(memory_order_seq_cst);
	in_unwind = false;
}

__attribute__((noinline)) int tally_unwind(void **pcs, int max)
{
	uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
	struct unwind_cache *cache = tally_thread_mem(&caches);
	struct walk w = {pcs,
			 NULL,
			 cache ? cache->walk_cfas : NULL,
			 0,
			 max < TALLY_UNWIND_MAX ? max : TALLY_UNWIND_MAX,
			 false,
			 0};
	bool verifying = false;

	if (!gcc.backtrace)
		return backtrace(pcs, w.max);
	if (!cache) { /* no memory for the cache: an uncached walk */
		walk(&w);
		return w.n;
	}
#if defined(__x86_64__)
	if (cache_holds(cache, frame, w.max)) {
		if (++cache->hits % VERIFY_EVERY) {
			memcpy(pcs, cache->pcs, (size_t)cache->n * sizeof(void *));
			return cache->n;
		}
		verifying = true;
	}
#endif
	walk(&w);
	remember(cache, frame, w.max, &w, verifying);
	return w.n;
}

bool tally_unwind_busy(void)
{
	return in_unwind;
}

bool tally_unwind_signal_safe(void)
{
	/* libgcc (12+) looks unwind tables up with _dl_find_object where glibc has it (2.35+):
	 * lock-free.  Before that it walks dl_iterate_phdr, under the loader's lock, which the
	 * interrupted thread may hold. */
	return gcc.backtrace && dlsym(RTLD_DEFAULT, "_dl_find_object");
}

int tally_unwind_from_signal(uint64_t *pcs, int max, uintptr_t pc)
{
	struct walk w = {NULL,	pcs, NULL, 0, max < TALLY_UNWIND_MAX ? max : TALLY_UNWIND_MAX,
			 false, pc};

	if (!gcc.backtrace || !pc)
		return 0;
	(void)gcc.backtrace(on_frame, &w);
	return w.n;
}

unsigned tally_unwind_cache_hits(void)
{
	struct unwind_cache *cache = tally_thread_mem(&caches);

	return cache ? cache->hits : 0;
}
