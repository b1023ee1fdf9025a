/* SPDX-License-Identifier: MIT */
/* Internals of tally compare: the reading of one side (compare-side.c) and the analysis. */
#ifndef TALLY_COMPARE_COMPARE_INT_H
#define TALLY_COMPARE_COMPARE_INT_H

#include "compare.h"
#include "hashmap.h"
#include "stats.h"

/* Names of both sides in one table, so that a key id means the same on both. */
struct cmp_keys {
	char **name;
	unsigned *kind;
	size_t n, cap;
	struct tally_map index; /* a name's hash -> its key + 1 */
};

long cmp_key_intern(struct cmp_keys *k, const char *name, unsigned kind);
void cmp_keys_free(struct cmp_keys *k);

/* A GPU record as compare keeps it: 24 bytes. */
struct cmp_event {
	uint64_t start; /* aligned */
	uint32_t dur;	/* ns, saturated at 4.29 s */
	uint32_t key;
	uint32_t stream; /* index into the side's streams */
	uint32_t corr;
};

struct cmp_ival {
	uint64_t t0, t1;
};

struct cmp_stream_id {
	unsigned process;
	uint32_t device, context, stream;
};

struct cmp_launch {
	uint32_t corr;
	uint64_t t;
};

/* Per section: names resolved once, launch times (for ranges), the selected intervals. */
struct cmp_sec {
	uint32_t *key_of_name; /* name id -> key + 1 */
	uint32_t nnames;
	/* (correlation id, aligned launch start) pairs, ranges only: a list sorted once after the
	 * read rather than an array indexed by id, since a crafted file's ids are not bounded by
	 * its size and a dense array would be */
	struct cmp_launch *launch;
	size_t nlaunch, launch_cap;
	struct cmp_ival *ivals;
	size_t nivals, cap;
	size_t ev_begin, ev_end; /* its events in cmp_side.ev (after the cut), others between */
};

struct cmp_model_fig {
	uint64_t n;
	double median;
};

struct cmp_side {
	struct report_set set;
	struct cmp_keys *keys;
	const struct compare_opts *o;
	struct cmp_event *ev;
	size_t nev, cap;
	struct cmp_sec *secs;
	size_t nsecs;
	struct cmp_stream_id *streams;
	size_t nstreams, scap, last_stream;
	struct tally_map stream_map; /* stream id -> index + 1 */
	uint64_t untimed;
	bool failed;
	struct stats *st;	      /* the same pass through the model: what bounds the steps */
	struct report_scan_ops model; /* its calls */
	/* the model's count and median of each key over the whole run (stats' groups); n 0: none */
	struct cmp_model_fig *fig;
	size_t nfig;
	/* summaries (tally stats --partial): their distributions, per key, as sketches */
	bool summaries;
	struct tally_sketch *sk;
	size_t nsk;
};

/* The index + 1 of a stream of the side, 0 if it has none such. */
static inline uint32_t cmp_stream_find(const struct cmp_side *sd, const struct cmp_stream_id *id)
{
	return tally_map_get(&sd->stream_map, tally_key32(id->process, id->device),
			     tally_key32(id->context, id->stream));
}

/* Read a side: open, one pass, then cut the stretch and judge its losses into info. */
/* Read a side (and through the model, what bounds its steps into *b).  0 or -errno. */
int cmp_side_read(struct cmp_side *sd, char *const *paths, size_t n, char *err, size_t errlen,
		  struct compare_bottleneck *b);
int cmp_side_stretch(struct cmp_side *sd, struct compare_side_info *info, char *err, size_t errlen);
void cmp_side_free(struct cmp_side *sd);

/* Side s's count and p50 of key k made the model's own where it has them, and the call again. */
void cmp_key_model(struct compare_key *k, size_t key, const struct cmp_side sd[2],
		   const struct compare_opts *o);
void cmp_key_fill(struct compare_key *k, const uint32_t *const d[2], const size_t n[2],
		  const struct compare_opts *o);

#endif
