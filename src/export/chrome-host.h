/* SPDX-License-Identifier: MIT */
/*
 * The host in the Chrome trace (docs/export.md, "Host samples and blocking calls"): blocking calls
 * (OSRT) as slices on their thread, samples (CPU_SAMPLE) as stack samples in the legacy V8 CPU
 * profile events ("ph":"P": a "Profile", then "ProfileChunk"s of call-tree nodes, samples and
 * time deltas) that Perfetto's JSON importer and chrome://tracing read as callstack samples of
 * the thread.  chrome.c owns the file and the event stream, and calls this: a lower file, that
never calls back.
 */
#ifndef TALLY_EXPORT_CHROME_HOST_H
#define TALLY_EXPORT_CHROME_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "obuf.h"
#include "trace-set.h"

/*
 * The JSON event stream both halves write: chrome.c owns it and hands it down with each call
 * (this file never calls chrome.c).
 */
struct chrome_stream {
	struct obuf ob;
	bool first;	 /* no event written yet */
	uint64_t events; /* written so far */
	uint64_t base;	 /* the time origin, ns on the aligned timeline */
	uint32_t pid;	 /* the pid of the section being written (chrome.c sets it before a call) */
};

/* Start an event: its separator and brace. */
void chrome_event_begin(struct chrome_stream *s);

/* Time since the origin: never negative, and past 2^63 ns still right. */
static inline uint64_t chrome_rel(const struct chrome_stream *s, const struct report_section *rs,
				  uint64_t t)
{
	return report_time(rs, t) - s->base;
}

struct chrome_host;

struct chrome_host *chrome_host_new(void);
void chrome_host_free(struct chrome_host *h);
/* A batch of OSRT or CPU_SAMPLE records (others are ignored).  0, or -ENOMEM. */
int chrome_host_records(struct chrome_host *h, struct chrome_stream *c, struct report_section *rs,
			const struct tally_record *r, size_t n);
/* The section has ended: its sampling state is dropped. */
void chrome_host_section_end(struct chrome_host *h);
/* The section's threads (THREADS entries) named on their tracks: after chrome.c's own names. */
void chrome_host_thread_names(struct chrome_stream *c, const struct report_section *rs);

#endif
