/* SPDX-License-Identifier: MIT */
/* What a sampled thread waits on; see waits.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hash.h"
#include "tally-format.h"
#include "waits.h"

/*
 * The frames that say what a wait is, matched against a frame's label.  A label holds a pattern
 * when it begins with `func` (NULL: any function; the label's function runs to " (" or " [") and
 * holds `file` (NULL: any).  By-design patterns are the loops of threads whose job is to wait;
 * data patterns the reads of queues, pipes and sockets, in Python and in libc.
 */
struct wait_pattern {
	enum wait_kind kind;
	const char *func, *file;
};

static const struct wait_pattern wait_patterns[] = {
    /* threads that wait by design */
    {WAIT_BY_DESIGN, "Queue._feed", "/multiprocessing/queues.py"},
    {WAIT_BY_DESIGN, "_pin_memory_loop", "/torch/utils/data/_utils/pin_memory.py"},
    {WAIT_BY_DESIGN, "_worker_loop", "/torch/utils/data/_utils/worker.py"},
    {WAIT_BY_DESIGN, "Pool._handle_workers", "/multiprocessing/pool.py"},
    {WAIT_BY_DESIGN, "Pool._handle_tasks", "/multiprocessing/pool.py"},
    {WAIT_BY_DESIGN, "Pool._handle_results", "/multiprocessing/pool.py"},
    {WAIT_BY_DESIGN, "worker", "/multiprocessing/pool.py"},
    {WAIT_BY_DESIGN, "_ResourceSharer._serve", "/multiprocessing/resource_sharer.py"},
    {WAIT_BY_DESIGN, "_worker", "/concurrent/futures/thread.py"},
    /* a queue, pipe or socket read: the data comes from elsewhere */
    {WAIT_DATA, NULL, "/torch/utils/data/dataloader.py"},
    {WAIT_DATA, NULL, "/multiprocessing/queues.py"},
    {WAIT_DATA, NULL, "/multiprocessing/connection.py"},
    {WAIT_DATA, NULL, "/queue.py"},
    {WAIT_DATA, NULL, "/selectors.py"},
    {WAIT_DATA, NULL, "/socket.py"},
    {WAIT_DATA, NULL, "/ssl.py"},
    {WAIT_DATA, "read", NULL},
    {WAIT_DATA, "__libc_read", NULL},
    {WAIT_DATA, "__read_nocancel", NULL},
    {WAIT_DATA, "recv", NULL},
    {WAIT_DATA, "__libc_recv", NULL},
    {WAIT_DATA, "recvmsg", NULL},
    {WAIT_DATA, "__libc_recvmsg", NULL},
    {WAIT_DATA, "recvfrom", NULL},
    {WAIT_DATA, "poll", NULL},
    {WAIT_DATA, "__poll", NULL},
    {WAIT_DATA, "__GI___poll", NULL},
    {WAIT_DATA, "ppoll", NULL},
    {WAIT_DATA, "select", NULL},
    {WAIT_DATA, "__select", NULL},
    {WAIT_DATA, "pselect", NULL},
    {WAIT_DATA, "epoll_wait", NULL},
    {WAIT_DATA, "epoll_pwait", NULL},
};

/* The function part of a label: up to " (" or " [" (an unverified name). */
static size_t func_len(const char *label)
{
	const char *p = strstr(label, " (");
	const char *q = strstr(label, " [");
	size_t n = p ? (size_t)(p - label) : strlen(label);

	return q && (size_t)(q - label) < n ? (size_t)(q - label) : n;
}

static bool holds(const struct wait_pattern *w, const char *label, bool python)
{
	size_t n = func_len(label);

	if (w->func && (strlen(w->func) != n || strncmp(label, w->func, n) != 0))
		return false;
	if (w->file) /* a file: only Python frames name one (a native frame names its module) */
		return python && strstr(label + n, w->file) != NULL;
	return !python; /* a bare function name is libc's */
}

/* The first pattern a frame holds, or WAIT_OTHER. */
static enum wait_kind frame_kind(struct report_section *rs, uint32_t frame_id)
{
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame_id);
	const char *label = report_frame_label(rs, frame_id);
	bool python = f && f->type == TALLY_FRAME_PYTHON;
	size_t i;

	for (i = 0; i < sizeof(wait_patterns) / sizeof(wait_patterns[0]); i++)
		if (holds(&wait_patterns[i], label, python))
			return wait_patterns[i].kind;
	return WAIT_OTHER;
}

/*
 * The frames from the innermost to the first Python frame of the program's own (a wait inside
 * the program's own code, a sleep in a worker's __getitem__, is the program's): a by-design loop
 * among them makes the wait by design, whatever it reads; else a read of a queue, pipe or socket
 * makes it a wait for data.
 */
static enum wait_kind stack_kind(struct report_section *rs, uint32_t stack)
{
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, stack);
	enum wait_kind kind = WAIT_OTHER;
	uint32_t i;

	for (i = 0; st && i < st->nframes; i++) {
		const struct tally_frame *f = tally_frame_get(&rs->s->stacks, st->frames[i]);
		enum wait_kind k;

		if (f && f->type == TALLY_FRAME_PYTHON &&
		    !report_frame_is_library(rs, st->frames[i]))
			break;
		k = frame_kind(rs, st->frames[i]);
		if (k == WAIT_BY_DESIGN)
			return k;
		if (k == WAIT_DATA)
			kind = k;
	}
	return kind;
}

enum wait_kind wait_kind_of(struct wait_cache *c, struct report_section *rs, uint32_t stack)
{
	size_t cap;
	enum wait_kind k;

	if (!stack)
		return WAIT_OTHER;
	if (c->section != rs->index) {
		if (c->kind)
			memset(c->kind, 0, c->n);
		c->section = rs->index;
	}
	if (stack >= rs->s->stacks.nstacks) /* a wild id: not cached */
		return stack_kind(rs, stack);
	cap = c->n;
	if (!tally_grow_in((void **)&c->kind, &cap, (size_t)stack + 1, 1))
		return stack_kind(rs, stack);
	c->n = (uint32_t)cap;
	if (!c->kind[stack])
		c->kind[stack] = (uint8_t)(1 + stack_kind(rs, stack));
	k = (enum wait_kind)(c->kind[stack] - 1);
	return k;
}

void wait_cache_fini(struct wait_cache *c)
{
	free(c->kind);
	c->kind = NULL;
	c->n = 0;
}

static bool python_user(struct report_section *rs, uint32_t frame)
{
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame);

	return f && f->type == TALLY_FRAME_PYTHON && !report_frame_is_library(rs, frame);
}

/* The first frame id of frame's label (waits.h); frame itself when memory ran out. */
static uint32_t canon(struct line_cache *c, struct report_section *rs, uint32_t frame)
{
	uint64_t h = tally_hash_str(report_frame_label(rs, frame));
	uint32_t v;

	if ((v = tally_map_get(&c->canon, h, 0)))
		return v - 1;
	(void)tally_map_put(&c->canon, h, 0, frame + 1);
	return frame;
}

/* The line of a stack (waits.h), not cached: in a stack with Python frames, the program's own
 * Python frames (a mixed stack's native frames of the interpreter or of libtorch are no line of
 * the program's); else the innermost frame of the program's own, whatever its kind. */
static uint64_t line_of(struct line_cache *c, struct report_section *rs, uint32_t stack)
{
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, stack);
	uint32_t user = 0, i, at = 0;

	if (!st)
		return 0;
	for (i = 0; i < st->nframes && !user; i++)
		if (python_user(rs, st->frames[i]))
			user = st->frames[i], at = i;
	if (!user) { /* no Python frame of the program's: its innermost frame of any kind */
		user = report_user_frame(rs, stack);
		for (at = 0; at < st->nframes && st->frames[at] != user; at++)
			;
	}
	if (!user)
		return 0;
	for (i = at + 1; i < st->nframes; i++)
		if (python_user(rs, st->frames[i]))
			return (uint64_t)canon(c, rs, user) << 32 | canon(c, rs, st->frames[i]);
	return (uint64_t)canon(c, rs, user) << 32;
}

uint64_t host_line_of(struct line_cache *c, struct report_section *rs, uint32_t stack)
{
	size_t cap;

	if (!stack)
		return 0;
	if (c->section != rs->index || !c->line) {
		if (c->line)
			memset(c->line, 0, c->n * sizeof(*c->line));
		tally_map_fini(&c->canon);
		memset(&c->canon, 0, sizeof(c->canon));
		c->section = rs->index;
	}
	if (stack >= rs->s->stacks.nstacks)
		return line_of(c, rs, stack);
	cap = c->n;
	if (!tally_grow_in((void **)&c->line, &cap, (size_t)stack + 1, sizeof(*c->line)))
		return line_of(c, rs, stack);
	c->n = (uint32_t)cap;
	if (!c->line[stack])
		c->line[stack] = line_of(c, rs, stack) + 1;
	return c->line[stack] - 1;
}

void line_cache_fini(struct line_cache *c)
{
	free(c->line);
	tally_map_fini(&c->canon);
	memset(c, 0, sizeof(*c));
}

const char *host_line_label(struct report_section *rs, uint64_t line, char *buf, size_t len)
{
	uint32_t frame = (uint32_t)(line >> 32), caller = (uint32_t)line;
	size_t n;

	if (!frame) {
		snprintf(buf, len, "[no stack]");
		return buf;
	}
	n = (size_t)snprintf(buf, len, "%s", report_frame_label(rs, frame));
	if (caller && n < len)
		snprintf(buf + n, len - n, " <- %s", report_frame_label(rs, caller));
	return buf;
}

bool wait_call_is_data(uint32_t call)
{
	switch (call) {
	case TALLY_OSRT_POLL:
	case TALLY_OSRT_PPOLL:
	case TALLY_OSRT_SELECT:
	case TALLY_OSRT_PSELECT:
	case TALLY_OSRT_EPOLL_WAIT:
	case TALLY_OSRT_EPOLL_PWAIT:
	case TALLY_OSRT_READ:
	case TALLY_OSRT_RECV:
	case TALLY_OSRT_RECVFROM:
	case TALLY_OSRT_RECVMSG:
		return true;
	default:
		return false;
	}
}

bool wait_thread_by_design(const char *name)
{
	static const char *const prefixes[] = {"cuda-EvtHandlr", "cuda-evtHandlr"};
	size_t i;

	for (i = 0; name && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}
