/* SPDX-License-Identifier: MIT */
/* Column codec; see codec.h and docs/format.md §7. */
#include "codec.h"

#include <errno.h>
#include <stdlib.h>

/* Where each column lives in struct tally_record; DURATION is derived (end - start). */
struct column_desc {
	uint16_t offset;
	uint8_t size; /* 4 or 8 */
};

#define COL(field)                                                                                 \
	{                                                                                          \
		offsetof(struct tally_record, field), sizeof(((struct tally_record *)0)->field)    \
	}

static const struct column_desc columns[TALLY_COL_MAX] = {
    [TALLY_COL_START] = COL(start),
    [TALLY_COL_DURATION] = COL(end),
    [TALLY_COL_CORRELATION] = COL(correlation_id),
    [TALLY_COL_NAME] = COL(name_id),
    [TALLY_COL_DEVICE] = COL(device_id),
    [TALLY_COL_CONTEXT] = COL(context_id),
    [TALLY_COL_STREAM] = COL(stream_id),
    [TALLY_COL_PROCESS] = COL(process_id),
    [TALLY_COL_THREAD] = COL(thread_id),
    [TALLY_COL_BYTES] = COL(bytes),
    [TALLY_COL_FLAGS] = COL(flags),
    [TALLY_COL_CBID] = COL(cbid),
    [TALLY_COL_SUBKIND] = COL(subkind),
    [TALLY_COL_SRC_KIND] = COL(src_kind),
    [TALLY_COL_DST_KIND] = COL(dst_kind),
    [TALLY_COL_SRC_DEVICE] = COL(src_device),
    [TALLY_COL_DST_DEVICE] = COL(dst_device),
    [TALLY_COL_GRID_X] = COL(grid[0]),
    [TALLY_COL_GRID_Y] = COL(grid[1]),
    [TALLY_COL_GRID_Z] = COL(grid[2]),
    [TALLY_COL_BLOCK_X] = COL(block[0]),
    [TALLY_COL_BLOCK_Y] = COL(block[1]),
    [TALLY_COL_BLOCK_Z] = COL(block[2]),
    [TALLY_COL_REGISTERS] = COL(registers),
    [TALLY_COL_STATIC_SMEM] = COL(static_smem),
    [TALLY_COL_DYNAMIC_SMEM] = COL(dynamic_smem),
    [TALLY_COL_GRAPH_ID] = COL(graph_id),
    [TALLY_COL_GRAPH_NODE_ID] = COL(graph_node_id),
    [TALLY_COL_VALUE] = COL(value),
    [TALLY_COL_DOMAIN] = COL(domain_id),
    [TALLY_COL_COLOR] = COL(color),
    [TALLY_COL_CATEGORY] = COL(category),
    [TALLY_COL_STACK] = COL(stack_id),
    [TALLY_COL_ADDRESS] = COL(address),
    [TALLY_COL_METRIC_VALUE] = COL(metric_value),
};

/* An id below TALLY_COL_MAX that this build leaves unassigned (another branch of the format's
 * history may use it): skipped on decode, never encoded. */
static bool column_known(unsigned col)
{
	return col > 0 && col < TALLY_COL_MAX && columns[col].size;
}

void tally_codec_fini(struct tally_codec *c)
{
	free(c->values);
	c->values = NULL;
	c->cap = 0;
}

static int codec_reserve(struct tally_codec *c, size_t n)
{
	uint64_t *v;

	if (n <= c->cap)
		return 0;
	v = tally_resize(c->values, n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->values = v;
	c->cap = n;
	return 0;
}

/* The value of column col in record r. */
static inline uint64_t column_value(const struct column_desc *d, unsigned col,
				    const struct tally_record *r)
{
	const uint8_t *p = (const uint8_t *)r + d->offset;
	uint64_t v8;
	uint32_t v4;

	if (col == TALLY_COL_DURATION)
		return r->end - r->start;
	if (d->size == 8) {
		memcpy(&v8, p, 8);
		return v8;
	}
	memcpy(&v4, p, 4);
	return v4;
}

/* false when a value does not fit its field: a 32-bit id (stream, device, stack ...) or count
 * past 2^32 would be cut and counted under another id, so the chunk is damage instead. */
static bool column_scatter(unsigned col, struct tally_record *recs, size_t n, const uint64_t *v)
{
	const struct column_desc *d = &columns[col];
	uint8_t *base = (uint8_t *)recs + d->offset;
	size_t i;

	if (col == TALLY_COL_DURATION) {
		/* START is decoded before DURATION (columns go out in id order, see encode). */
		for (i = 0; i < n; i++)
			recs[i].end =
			    v[i]; /* fixed up in tally_records_decode once START is known */
	} else if (d->size == 8) {
		for (i = 0; i < n; i++, base += sizeof(*recs))
			memcpy(base, &v[i], 8);
	} else {
		for (i = 0; i < n; i++, base += sizeof(*recs)) {
			uint32_t x = (uint32_t)v[i];

			if (v[i] > UINT32_MAX)
				return false;
			memcpy(base, &x, 4);
		}
	}
	return true;
}

/*
 * Gather column col of recs into v and measure, in the same pass, the sizes of its DELTA and
 * DELTA_RLE forms; *all_same when every value equals v[0].  One pass over the records per column
 * keeps the encoder within the speed budget (bench/bench-pipeline).
 */
static void column_gather_measure(unsigned col, const struct tally_record *recs, size_t n,
				  uint64_t *v, size_t *delta_len, size_t *rle_len, bool *all_same)
{
	const struct column_desc *d = &columns[col];
	uint64_t prev = 0, run_delta = 0, first = column_value(d, col, &recs[0]);
	size_t dl = 0, rl = 0, run = 0, i;
	bool same = true;

	for (i = 0; i < n; i++) {
		uint64_t x = column_value(d, col, &recs[i]);
		uint64_t delta = x - prev;

		v[i] = x;
		dl += tally_varint_len(tally_zigzag((int64_t)delta));
		if (run && delta == run_delta) {
			run++;
		} else {
			if (run)
				rl += tally_varint_len(tally_zigzag((int64_t)run_delta)) +
				      tally_varint_len(run);
			run_delta = delta;
			run = 1;
		}
		same &= x == first;
		prev = x;
	}
	if (run)
		rl += tally_varint_len(tally_zigzag((int64_t)run_delta)) + tally_varint_len(run);
	*delta_len = dl;
	*rle_len = rl;
	*all_same = same;
}

static void column_put_delta(struct tally_buf *out, const uint64_t *v, size_t n)
{
	uint64_t prev = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		tally_buf_put_varint(out, tally_zigzag((int64_t)(v[i] - prev)));
		prev = v[i];
	}
}

static void column_put_rle(struct tally_buf *out, const uint64_t *v, size_t n)
{
	uint64_t prev = 0, run_delta = 0;
	size_t run = 0, i;

	for (i = 0; i < n; i++) {
		uint64_t d = v[i] - prev;

		if (run && d == run_delta) {
			run++;
		} else {
			if (run) {
				tally_buf_put_varint(out, tally_zigzag((int64_t)run_delta));
				tally_buf_put_varint(out, run);
			}
			run_delta = d;
			run = 1;
		}
		prev = v[i];
	}
	if (run) {
		tally_buf_put_varint(out, tally_zigzag((int64_t)run_delta));
		tally_buf_put_varint(out, run);
	}
}

/* force_delta: DELTA even where another form is smaller (a byte a row at least). */
static void column_encode(struct tally_buf *out, unsigned col, const struct tally_record *recs,
			  uint64_t *v, size_t n, bool force_delta)
{
	size_t delta_len, rle_len, len;
	bool all_same;
	uint8_t enc;

	column_gather_measure(col, recs, n, v, &delta_len, &rle_len, &all_same);
	if (force_delta) {
		enc = TALLY_ENC_DELTA;
		len = delta_len;
	} else if (all_same) {
		if (v[0] == 0)
			return; /* an absent column is zero in every row */
		enc = TALLY_ENC_CONST;
		len = tally_varint_len(tally_zigzag((int64_t)v[0]));
	} else if (rle_len < delta_len) {
		enc = TALLY_ENC_DELTA_RLE;
		len = rle_len;
	} else {
		enc = TALLY_ENC_DELTA;
		len = delta_len;
	}
	tally_buf_put_varint(out, col);
	tally_buf_put_u8(out, enc);
	tally_buf_put_varint(out, len);
	if (enc == TALLY_ENC_CONST)
		tally_buf_put_varint(out, tally_zigzag((int64_t)v[0]));
	else if (enc == TALLY_ENC_DELTA_RLE)
		column_put_rle(out, v, n);
	else
		column_put_delta(out, v, n);
}

uint64_t tally_kind_columns(unsigned kind)
{
#define C(x) (1ull << TALLY_COL_##x)
	const uint64_t common = C(START) | C(DURATION) | C(FLAGS);
	const uint64_t gpu = common | C(CORRELATION) | C(DEVICE) | C(CONTEXT) | C(STREAM) |
			     C(SUBKIND) | C(GRAPH_ID) | C(GRAPH_NODE_ID) | C(STACK);

	switch (kind) {
	case TALLY_KIND_KERNEL:
		return gpu | C(NAME) | C(GRID_X) | C(GRID_Y) | C(GRID_Z) | C(BLOCK_X) | C(BLOCK_Y) |
		       C(BLOCK_Z) | C(REGISTERS) | C(STATIC_SMEM) | C(DYNAMIC_SMEM);
	case TALLY_KIND_MEMCPY:
		return gpu | C(BYTES) | C(SRC_KIND) | C(DST_KIND) | C(SRC_DEVICE) | C(DST_DEVICE);
	case TALLY_KIND_MEMSET:
		return gpu | C(BYTES) | C(VALUE);
	case TALLY_KIND_RUNTIME:
	case TALLY_KIND_DRIVER:
		return common | C(CORRELATION) | C(NAME) | C(PROCESS) | C(THREAD) | C(CBID) |
		       C(VALUE) | C(STACK);
	case TALLY_KIND_SYNC:
		return common | C(CORRELATION) | C(CONTEXT) | C(STREAM) | C(SUBKIND) | C(VALUE);
	case TALLY_KIND_NVTX_RANGE:
	case TALLY_KIND_NVTX_MARK:
		return common | C(NAME) | C(PROCESS) | C(THREAD) | C(SUBKIND) | C(VALUE) |
		       C(DOMAIN) | C(COLOR) | C(CATEGORY);
	case TALLY_KIND_OVERHEAD:
		return common | C(CORRELATION) | C(PROCESS) | C(THREAD) | C(SUBKIND);
	case TALLY_KIND_MEMORY:
		return common | C(CORRELATION) | C(DEVICE) | C(CONTEXT) | C(STREAM) | C(PROCESS) |
		       C(BYTES) | C(SUBKIND) | C(SRC_KIND) | C(ADDRESS) | C(STACK);
	case TALLY_KIND_CPU_SAMPLE:
		return common | C(PROCESS) | C(THREAD) | C(SUBKIND) | C(VALUE) | C(STACK);
	case TALLY_KIND_OSRT:
		return common | C(NAME) | C(PROCESS) | C(THREAD) | C(CBID) | C(SUBKIND) | C(VALUE) |
		       C(ADDRESS) | C(STACK);
	case TALLY_KIND_GPU_METRIC:
		return C(START) | C(DURATION) | C(CORRELATION) | C(NAME) | C(DEVICE) | C(SUBKIND) |
		       C(VALUE) | C(METRIC_VALUE);
	default:
		return TALLY_COLUMNS_ALL;
	}
#undef C
}

static void records_encode_columns(struct tally_codec *c, struct tally_buf *out, unsigned kind,
				   const struct tally_record *recs, size_t n, uint64_t column_mask,
				   bool dense)
{
	size_t ncols_at, before;
	unsigned col, ncols = 0;

	tally_buf_put_varint(out, kind);
	tally_buf_put_varint(out, n);
	/* ncols is not known until absent columns are skipped: reserve one byte (< 128 columns). */
	ncols_at = out->len;
	tally_buf_put_u8(out, 0);
	for (col = 1; col < TALLY_COL_MAX; col++) {
		if (!column_known(col) ||
		    (!(column_mask >> col & 1) && !(dense && col == TALLY_COL_START)))
			continue;
		before = out->len;
		column_encode(out, col, recs, c->values, n, dense && col == TALLY_COL_START);
		ncols += out->len != before;
	}
	if (!out->failed)
		out->data[ncols_at] = (uint8_t)ncols;
}

int tally_records_encode(struct tally_codec *c, struct tally_buf *out, unsigned kind,
			 const struct tally_record *recs, size_t n, uint64_t column_mask)
{
	size_t begin = out->len;

	if (n > TALLY_RECORDS_MAX)
		return -E2BIG;
	if (codec_reserve(c, n) < 0)
		return -ENOMEM;
	records_encode_columns(c, out, kind, recs, n, column_mask, false);
	/* Too many rows for the bytes (regular clocks compress to nothing): readers would refuse
	 * it, so spend a byte a row on START (docs/format.md §7). */
	if (!out->failed && (out->len - begin) * TALLY_ROWS_PER_BYTE < n) {
		out->len = begin;
		records_encode_columns(c, out, kind, recs, n, column_mask, true);
	}
	return out->failed ? -ENOMEM : 0;
}

static bool column_decode(struct tally_cursor *cur, uint8_t enc, uint64_t *v, size_t n)
{
	uint64_t prev = 0;
	size_t i = 0;

	switch (enc) {
	case TALLY_ENC_CONST:
		prev = (uint64_t)tally_unzigzag(tally_cur_varint(cur));
		for (; i < n; i++)
			v[i] = prev;
		break;
	case TALLY_ENC_DELTA:
		for (; i < n && !cur->bad; i++) {
			prev += (uint64_t)tally_unzigzag(tally_cur_varint(cur));
			v[i] = prev;
		}
		break;
	case TALLY_ENC_DELTA_RLE:
		while (i < n && !cur->bad) {
			uint64_t d = (uint64_t)tally_unzigzag(tally_cur_varint(cur));
			uint64_t run = tally_cur_varint(cur);

			if (run == 0 || run > n - i)
				return false;
			for (; run; run--, i++) {
				prev += d;
				v[i] = prev;
			}
		}
		break;
	default:
		return false;
	}
	return !cur->bad && cur->p == cur->end && i == n;
}

static int records_reserve(struct tally_record **recs, size_t *cap, size_t n)
{
	struct tally_record *r;

	if (n <= *cap)
		return 0;
	r = tally_resize(*recs, n, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*recs = r;
	*cap = n;
	return 0;
}

long tally_records_decode(struct tally_codec *c, const uint8_t *payload, size_t len,
			  unsigned *ret_kind, struct tally_record **recs, size_t *recs_cap)
{
	struct tally_cursor cur = {payload, payload + len, false};
	uint64_t kind, n, ncols, i;
	bool has_duration = false;

	kind = tally_cur_varint(&cur);
	n = tally_cur_varint(&cur);
	ncols = tally_cur_varint(&cur);
	/* Before any allocation: n rows must fit what these bytes can hold. */
	if (cur.bad || kind > UINT32_MAX || n > TALLY_RECORDS_MAX ||
	    n > (uint64_t)len * TALLY_ROWS_PER_BYTE || ncols > 4096 || ncols > len)
		return -EINVAL;
	if (codec_reserve(c, n ? n : 1) < 0 || records_reserve(recs, recs_cap, n ? n : 1) < 0)
		return -ENOMEM;
	memset(*recs, 0, n * sizeof(**recs));
	for (i = 0; i < ncols; i++) {
		uint64_t col = tally_cur_varint(&cur);
		uint8_t enc = tally_cur_u8(&cur);
		uint64_t clen = tally_cur_varint(&cur);
		const uint8_t *cp = tally_cur_bytes(&cur, clen);
		struct tally_cursor cc;

		if (cur.bad || !cp)
			return -EINVAL;
		cc = (struct tally_cursor){cp, cp + clen, false};
		if (!column_known((unsigned)(col < TALLY_COL_MAX ? col : 0))) {
			c->unknown_columns++;
			continue;
		}
		if (!column_decode(&cc, enc, c->values, n))
			return -EINVAL;
		if (!column_scatter((unsigned)col, *recs, n, c->values))
			return -EINVAL;
		has_duration |= col == TALLY_COL_DURATION;
	}
	if (cur.p != cur.end)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		(*recs)[i].kind = (uint32_t)kind;
		(*recs)[i].end =
		    has_duration ? (*recs)[i].start + (*recs)[i].end : (*recs)[i].start;
	}
	*ret_kind = (unsigned)kind;
	return (long)n;
}

int tally_records_append_unknown(struct tally_buf *out, size_t begin, const uint8_t *payload,
				 size_t len)
{
	struct tally_cursor cur = {payload, payload + len, false};
	struct tally_cursor enc = {out->data + begin, out->data + out->len, false};
	uint64_t ncols, i;
	size_t ncols_at;
	int copied = 0;

	(void)tally_cur_varint(&cur); /* kind */
	(void)tally_cur_varint(&cur); /* rows */
	ncols = tally_cur_varint(&cur);
	(void)tally_cur_varint(&enc);
	(void)tally_cur_varint(&enc);
	ncols_at = (size_t)(enc.p - out->data);
	if (cur.bad || enc.bad || ncols_at >= out->len)
		return -EINVAL;
	for (i = 0; i < ncols; i++) {
		uint64_t col = tally_cur_varint(&cur);
		const uint8_t *from = cur.p;
		uint8_t e = tally_cur_u8(&cur);
		uint64_t clen = tally_cur_varint(&cur);

		(void)e;
		(void)tally_cur_bytes(&cur, clen);
		if (cur.bad)
			return -EINVAL;
		if (col == 0 || column_known((unsigned)(col < TALLY_COL_MAX ? col : 0)) ||
		    out->data[ncols_at] >= 127)
			continue;
		tally_buf_put_varint(out, col);
		tally_buf_put(out, from, (size_t)(cur.p - from));
		out->data[ncols_at]++;
		copied++;
	}
	return out->failed ? -ENOMEM : copied;
}
