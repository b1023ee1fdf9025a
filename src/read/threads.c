/* SPDX-License-Identifier: MIT */
/*
 * One identity of a thread in every output: its name and kernel tid, as the trace's THREADS chunk
 * says them.  CUDA API and NVTX records carry CUPTI's thread id (pthread_self() cut to 32 bits),
 * host samples and blocking calls the kernel tid; THREADS ties the two, so a launching thread and
 * its samples are one thread, "MainThread (tid 2001)", wherever either is named.
 */
#include <inttypes.h>
#include <stdio.h>

#include "trace-set.h"

const struct tally_thread *report_thread_of_cupti(const struct report_section *rs, uint32_t cupti)
{
	const struct tally_section *s = rs->s;
	size_t i;

	for (i = s->nthreads; i-- > 0;) /* the latest entry of the thread that has the id */
		if (s->threads[i].pthread_id && (uint32_t)s->threads[i].pthread_id == cupti)
			return tally_section_thread(s, s->threads[i].tid);
	return NULL;
}

const char *report_thread_label(const struct report_section *rs, uint32_t id, bool cupti, char *buf,
				size_t len)
{
	const struct tally_thread *t =
	    cupti ? report_thread_of_cupti(rs, id) : tally_section_thread(rs->s, id);

	if (!t && cupti)
		snprintf(buf, len, "CUPTI thread %" PRIu32, id);
	else if (t && t->name && t->name[0])
		snprintf(buf, len, "%s (tid %" PRIu32 ")", t->name, t->tid);
	else
		snprintf(buf, len, "tid %" PRIu32, t ? t->tid : id);
	return buf;
}
