/* SPDX-License-Identifier: MIT */
/* Interned call stacks; see stacktab.h. */
#include "stacktab.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "libc.h"
#include "stacks.h"
#include "tally-format.h"
#include "threadmem.h"

#define FRAME_MAX   (1u << 16) /* distinct frames; a big model has a few thousand */
#define FRAME_SLOTS (2 * FRAME_MAX)
#define STACK_MAX   (1u << 16)
#define STACK_SLOTS (2 * STACK_MAX)
/* Correlation ids in flight between a call and its records' conversion: CUPTI hands buffers
 * over within seconds, and a million launches is far more than a pool of buffers holds. */
#define RING_SIZE    (1u << 20)
#define CACHE_DEPTH  128
#define NAME_MAX_LEN 512

struct frame_slot {
	uint64_t key, aux;
	uint32_t line, type, id;
};

struct stack_slot {
	uint64_t hash;
	uint32_t id, n;
	size_t off; /* into arena */
};

struct stacktab {
	pthread_mutex_t lock;
	struct frame_slot *frames;
	uint32_t nframes;
	struct stack_slot *stacks;
	uint32_t nstacks;
	uint32_t *arena; /* frame ids of every stack, back to back */
	size_t arena_len, arena_cap;
	struct tally_pending_table pending_frames, pending_stacks;
	uint64_t *new_pcs; /* native frames not yet described by a MODULES entry */
	size_t new_pcs_len, new_pcs_cap;
	_Atomic uint64_t *ring;
};

static struct stacktab tab = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Atomic bool ready;
static _Atomic unsigned generation; /* bumped by every reset: invalidates the thread caches */
static _Atomic uint64_t lost;

/* The last stack each thread interned: a loop's launches repeat it, and skip the lock.  The
 * thread's heap block (threadmem.h), with the frame ids of an intern: a launching thread's stack
 * may be as small as PTHREAD_STACK_MIN. */
struct last_stack {
	unsigned gen, n;
	uint32_t id;
	struct raw_frame frames[CACHE_DEPTH];
	uint32_t ids[CACHE_DEPTH];
};

static struct tally_thread_mem lasts = TALLY_THREAD_MEM(sizeof(struct last_stack));

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static void tables_free(void)
{
	free(tab.frames);
	free(tab.stacks);
	free(tab.arena);
	free(tab.new_pcs);
	free((void *)tab.ring);
	tally_pending_fini(&tab.pending_frames);
	tally_pending_fini(&tab.pending_stacks);
	tab.frames = NULL;
	tab.stacks = NULL;
	tab.arena = NULL;
	tab.new_pcs = NULL;
	tab.ring = NULL;
	tab.nframes = tab.nstacks = 0;
	tab.arena_len = tab.arena_cap = tab.new_pcs_len = tab.new_pcs_cap = 0;
}

int tally_stacktab_reset(void)
{
	atomic_store(&ready, false);
	/* A fork child's copy of the lock may be held by a thread that does not exist there. */
	pthread_mutex_init(&tab.lock, NULL);
	tables_free();
	atomic_store(&lost, 0);
	atomic_fetch_add(&generation, 1);
	tab.frames = calloc(FRAME_SLOTS, sizeof(*tab.frames));
	tab.stacks = calloc(STACK_SLOTS, sizeof(*tab.stacks));
	tab.ring = calloc(RING_SIZE, sizeof(*tab.ring));
	if (!tab.frames || !tab.stacks || !tab.ring) {
		tables_free();
		return -ENOMEM;
	}
	atomic_store(&ready, true);
	return 0;
}

bool tally_stacktab_ready(void)
{
	return atomic_load_explicit(&ready, memory_order_acquire);
}

static bool remember_pc(uint64_t pc)
{
	if (!tally_grow_in(&tab.new_pcs, &tab.new_pcs_cap, tab.new_pcs_len + 1,
			   sizeof(*tab.new_pcs)))
		return false;
	tab.new_pcs[tab.new_pcs_len++] = pc;
	return true;
}

/* A new frame's entry in the pending FRAMES table; its id. */
static uint32_t frame_add(const struct raw_frame *f, frame_namer namer)
{
	char file[NAME_MAX_LEN] = "", func[NAME_MAX_LEN] = "";
	uint32_t line = f->line;

	if (tally_frame_is_native(f->type)) {
		if (!remember_pc(f->key))
			return 0;
		return tally_frame_put(&tab.pending_frames, f->type, 0, f->key, NULL, 0, NULL, 0);
	}
	if (namer && !namer(f->key, &line, file, sizeof(file), func, sizeof(func)))
		file[0] = func[0] = 0;
	return tally_frame_put(&tab.pending_frames, f->type, line, 0, file, strlen(file), func,
			       strlen(func));
}

static uint32_t frame_id(const struct raw_frame *f, frame_namer namer)
{
	uint64_t h = mix(mix(mix(f->key, f->line), f->type), f->aux);
	uint32_t i;

	for (i = (uint32_t)h & (FRAME_SLOTS - 1); tab.frames[i].id; i = (i + 1) & (FRAME_SLOTS - 1))
		if (tab.frames[i].key == f->key && tab.frames[i].line == f->line &&
		    tab.frames[i].type == f->type && tab.frames[i].aux == f->aux)
			return tab.frames[i].id;
	if (tab.nframes >= FRAME_MAX)
		return 0;
	tab.frames[i] = (struct frame_slot){f->key, f->aux, f->line, f->type, frame_add(f, namer)};
	if (!tab.frames[i].id)
		return 0;
	tab.nframes++;
	return tab.frames[i].id;
}

static bool arena_reserve(unsigned n)
{
	return tally_grow_in(&tab.arena, &tab.arena_cap, tab.arena_len + n, sizeof(*tab.arena));
}

static uint32_t stack_id(const uint32_t *ids, unsigned n)
{
	uint64_t h = n;
	uint32_t i;
	unsigned k;

	for (k = 0; k < n; k++)
		h = mix(h, ids[k]);
	for (i = (uint32_t)h & (STACK_SLOTS - 1); tab.stacks[i].id; i = (i + 1) & (STACK_SLOTS - 1))
		if (tab.stacks[i].hash == h && tab.stacks[i].n == n &&
		    memcmp(tab.arena + tab.stacks[i].off, ids, n * sizeof(*ids)) == 0)
			return tab.stacks[i].id;
	if (tab.nstacks >= STACK_MAX || !arena_reserve(n))
		return 0;
	memcpy(tab.arena + tab.arena_len, ids, n * sizeof(*ids));
	tab.stacks[i] =
	    (struct stack_slot){h, tally_stack_put(&tab.pending_stacks, ids, n), n, tab.arena_len};
	tab.arena_len += n;
	tab.nstacks++;
	return tab.stacks[i].id;
}

static bool cache_hit(const struct last_stack *last, const struct raw_frame *frames, unsigned n,
		      unsigned gen)
{
	return last->id && last->gen == gen && last->n == n &&
	       memcmp(last->frames, frames, n * sizeof(*frames)) == 0;
}

uint32_t tally_stacktab_intern(const struct raw_frame *frames, unsigned n, frame_namer namer)
{
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed), k;
	struct last_stack *last;
	uint32_t id = 0;

	if (!n || !tally_stacktab_ready())
		return 0;
	if (!(last = tally_thread_mem(&lasts))) {
		atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
		return 0;
	}
	if (n > CACHE_DEPTH)
		n = CACHE_DEPTH;
	if (cache_hit(last, frames, n, gen))
		return last->id;
	libc_pthread_mutex_lock(&tab.lock);
	for (k = 0; k < n && (last->ids[k] = frame_id(&frames[k], namer)); k++)
		;
	if (k == n)
		id = stack_id(last->ids, n);
	pthread_mutex_unlock(&tab.lock);
	if (!id) {
		atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
		return 0;
	}
	last->gen = gen;
	last->n = n;
	last->id = id;
	memcpy(last->frames, frames, n * sizeof(*frames));
	return id;
}

void tally_stacktab_note(uint32_t correlation_id, uint32_t stack_id)
{
	if (!stack_id || !tally_stacktab_ready())
		return;
	atomic_store_explicit(&tab.ring[correlation_id & (RING_SIZE - 1)],
			      (uint64_t)correlation_id << 32 | stack_id, memory_order_relaxed);
}

uint32_t tally_stacktab_lookup(uint32_t correlation_id)
{
	uint64_t v;

	if (!correlation_id || !tally_stacktab_ready())
		return 0;
	v = atomic_load_explicit(&tab.ring[correlation_id & (RING_SIZE - 1)], memory_order_relaxed);
	return (uint32_t)(v >> 32) == correlation_id ? (uint32_t)v : 0;
}

void tally_stacktab_take(struct tally_buf *frames, struct tally_buf *stacks,
			 struct tally_buf *modules,
			 void (*modules_for)(uint64_t pc, struct tally_buf *out))
{
	uint64_t *pcs;
	size_t n, i;

	if (!tally_stacktab_ready())
		return;
	libc_pthread_mutex_lock(&tab.lock);
	(void)tally_pending_take(&tab.pending_frames, frames);
	(void)tally_pending_take(&tab.pending_stacks, stacks);
	pcs = tab.new_pcs;
	n = tab.new_pcs_len;
	tab.new_pcs = NULL;
	tab.new_pcs_len = tab.new_pcs_cap = 0;
	pthread_mutex_unlock(&tab.lock);
	/* Outside the lock: describing modules takes the dynamic loader's lock, which a thread
	 * inside dlopen (a library constructor that launches) holds while it waits for ours. */
	for (i = 0; modules_for && i < n; i++)
		modules_for(pcs[i], modules);
	free(pcs);
}

uint64_t tally_stacktab_lost(void)
{
	return atomic_load_explicit(&lost, memory_order_relaxed);
}
