/* SPDX-License-Identifier: MIT */
/*
 * What a sampled thread waits on, from its stack (docs/diagnosis.md, "The critical path"): a
 * queue, pipe or socket of the data it needs (a consumer waiting for its producer: a DataLoader's
 * next batch), or a wait by design (a thread whose job is to wait: multiprocessing's queue feeder,
 * the DataLoader's pin-memory loop, an idle worker waiting for its next index, a pool's handler
 * threads).  A thread waiting by design is never the cause of anything: it waits because there is
 * nothing to do.  The patterns are a table (wait_patterns[] in waits.c), matched against each
 * frame's label ("func (file:line)", "func (module)"), so a native frame of a blocking call counts
 * as a Python one does.
 *
 * A stack's answer is looked up once per section and stack id (a cache that grows to the
 * section's stack table, a byte an entry).
 */
#ifndef TALLY_STATS_WAITS_H
#define TALLY_STATS_WAITS_H

#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"
#include "trace-set.h"

enum wait_kind {
	WAIT_OTHER = 0, /* nothing the table knows: a lock, a sleep, an event, the program's own */
	WAIT_DATA,	/* a queue, pipe or socket read: the data it needs comes from elsewhere */
	WAIT_BY_DESIGN, /* a thread whose job is to wait (a feeder, a pin-memory loop ...) */
};

struct wait_cache {
	unsigned section; /* the section the cache is of */
	uint8_t *kind;	  /* by stack id: 1 + enum wait_kind, 0 not looked up */
	uint32_t n;
};

/* What the frames of stack (of rs) say it waits on; WAIT_OTHER for no stack. */
enum wait_kind wait_kind_of(struct wait_cache *c, struct report_section *rs, uint32_t stack);
void wait_cache_fini(struct wait_cache *c);

/*
 * The line a stack stands for: its innermost frame of the program's own (report_user_frame) and
 * the next frame of the program's own further out (its caller in the program; 0 when none),
 * packed (frame << 32 | caller); 0 for no stack.  Frames of one label are one frame (the first
 * id seen of it), so a line is one key however many frame entries name it.  Looked up once per
 * section and stack id.
 */
struct line_cache {
	unsigned section;
	uint64_t *line; /* by stack id: line + 1, 0 not looked up */
	uint32_t n;
	struct tally_map canon; /* a frame label's hash -> the first frame id of that label + 1 */
};
uint64_t host_line_of(struct line_cache *c, struct report_section *rs, uint32_t stack);
void line_cache_fini(struct line_cache *c);
/* "burn (/work/loop.py:5) <- Samples.__getitem__ (/work/loop.py:9)" into buf. */
const char *host_line_label(struct report_section *rs, uint64_t line, char *buf, size_t len);

/* A blocking call (TALLY_OSRT_*) that reads a queue, pipe or socket: read, recv*, poll, select,
 * epoll. */
bool wait_call_is_data(uint32_t osrt_call);

/* A thread name of a thread that waits by design (CUDA's event handler "cuda-EvtHandlr"). */
bool wait_thread_by_design(const char *name);

#endif
