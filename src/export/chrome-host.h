/* SPDX-License-Identifier: MIT */
/*
 * The host in the Chrome trace (docs/export.md, "Host samples and blocking calls"): blocking calls
 * (OSRT) as slices on their thread, samples (CPU_SAMPLE) as stack samples in the legacy V8 CPU
 * profile events ("ph":"P": a "Profile", then "ProfileChunk"s of call-tree nodes, samples and
 * time deltas) that Perfetto's JSON importer and chrome://tracing read as callstack samples of
 * the thread.  chrome.c owns the file; this writes through the few calls below.
 */
#ifndef TALLY_EXPORT_CHROME_HOST_H
#define TALLY_EXPORT_CHROME_HOST_H

#include <stdint.h>

#include "obuf.h"
#include "trace-set.h"

struct chrome;
/* chrome.c: start an event (separator, brace), its output, its time origin, a section's pid. */
void chrome_event_begin(struct chrome *c);
struct obuf *chrome_obuf(struct chrome *c);
int64_t chrome_rel(const struct chrome *c, const struct report_section *rs, uint64_t t);
uint32_t chrome_host_pid(const struct chrome *c, const struct report_section *rs);

struct chrome_host;

struct chrome_host *chrome_host_new(void);
void chrome_host_free(struct chrome_host *h);
/* A batch of OSRT or CPU_SAMPLE records (others are ignored).  0, or -ENOMEM. */
int chrome_host_records(struct chrome_host *h, struct chrome *c, struct report_section *rs,
			const struct tally_record *r, size_t n);
/* The section has ended: its sampling state is dropped. */
void chrome_host_section_end(struct chrome_host *h);
/* The section's threads (THREADS entries) named on their tracks: after chrome.c's own names. */
void chrome_host_thread_names(struct chrome *c, const struct report_section *rs);

#endif
