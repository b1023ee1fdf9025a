/* SPDX-License-Identifier: MIT */
/*
 * Correlation check: every API call that launches GPU work should meet its GPU record (same
 * correlation id), and every GPU record its call.  What is left unmatched at close is silent loss
 * that no CUPTI counter shows.
 *
 * CUPTI's correlation ids are small, dense and increasing, so the tracker keeps three bitmaps per
 * page of 4096 ids (any API call, launching call, GPU record) in a two-level table, plus the time
 * range each page covers (for the loss windows).  One graph launch may have many GPU records with
 * its id; bits make that free.  Pages that are fully matched and quiet are freed as the run goes
 * on, so memory follows what is still in flight, not the length of the run.
 */
#ifndef TALLY_COLLECTOR_CORR_H
#define TALLY_COLLECTOR_CORR_H

#include <stdbool.h>
#include <stdint.h>

#define CORR_PAGE_IDS	4096
#define CORR_PAGE_WORDS (CORR_PAGE_IDS / 64)
#define CORR_DIR_SIZE	1024 /* ids >> 22 */
#define CORR_TABLE_SIZE 1024 /* (ids >> 12) & 1023 */

struct corr_page {
	uint64_t api[CORR_PAGE_WORDS];
	uint64_t launch[CORR_PAGE_WORDS];
	uint64_t gpu[CORR_PAGE_WORDS];
	uint64_t t_first, t_last;
	bool touched;	/* changed since the last sweep */
	unsigned quiet; /* sweeps without change */
};

/* The latest one-sided entries (a launch with no GPU record yet, or the reverse), with their
 * times, so that at close those cut by a window's edge can be told from those lost. */
#define CORR_RECENT 65536

struct corr_recent {
	uint32_t id;
	uint32_t gpu; /* 1: a GPU record waiting for its call; 0: a call waiting for its record */
	uint64_t ts;
};

struct tally_corr {
	struct corr_page **dir[CORR_DIR_SIZE];
	uint32_t max_id;
	uint64_t pages, pages_freed;
	bool failed; /* out of memory: some ids were not tracked (counted as not checkable) */
	struct corr_recent *recent; /* ring of CORR_RECENT, allocated on first use */
	uint32_t recent_next;
};

/* Is an unmatched entry at time ts explained by a window edge (not loss)? */
typedef bool (*corr_edge_fn)(void *ctx, uint64_t ts);

void tally_corr_init(struct tally_corr *c);
void tally_corr_fini(struct tally_corr *c);

void tally_corr_api(struct tally_corr *c, uint32_t id, bool launches, uint64_t ts);
void tally_corr_gpu(struct tally_corr *c, uint32_t id, uint64_t ts);

/* Free pages that are fully matched, quiet for two sweeps and well behind the newest id. */
void tally_corr_sweep(struct tally_corr *c);

/*
 * Count what is unmatched; for each page with any, call window(ctx, t_first, t_last, launches,
 * gpu).  GPU records count as unmatched only when check_gpu (API tracing was on).  Entries whose
 * time at_edge() accepts (a launch in flight while the window opened or closed) are counted in
 * cut_at_edges instead.
 */
void tally_corr_finish(struct tally_corr *c, bool check_gpu,
		       void (*window)(void *ctx, uint64_t t0, uint64_t t1, uint64_t launches,
				      uint64_t gpu),
		       corr_edge_fn at_edge, void *ctx, uint64_t *unmatched_launches,
		       uint64_t *unmatched_gpu, uint64_t *cut_at_edges);

/* The same counts without taking anything out (an exec that may fail, and the recording go on):
 * one-sided entries from `since` on are in flight (cut), the rest unmatched. */
void tally_corr_count(const struct tally_corr *c, bool check_gpu, uint64_t since, uint64_t *cut,
		      uint64_t *unmatched_launches, uint64_t *unmatched_gpu);

#endif
