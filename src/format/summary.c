/* SPDX-License-Identifier: MIT */
/* The SECTION part of a summary's SUMMARY chunk; see summary.h and docs/format.md §13. */
#include "summary.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "reader.h"

void tally_summary_facts_free(struct tally_summary_facts *f)
{
	if (!f)
		return;
	free(f->reasons);
	free(f->top_kernel);
	free(f->trace);
	free(f);
}

static uint64_t shifted(uint64_t t, int64_t offset)
{
	return t ? t + (uint64_t)offset : 0;
}

static void encode_records(struct tally_buf *out, const struct tally_section *s)
{
	struct tally_buf b = {0};
	unsigned k;

	for (k = 0; k < TALLY_KIND_MAX; k++)
		if (s->records[k]) {
			tally_buf_put_varint(&b, k);
			tally_buf_put_varint(&b, s->records[k]);
		}
	tally_kv_bytes(out, TALLY_SUMK_RECORDS, b.data, b.len);
	tally_buf_fini(&b);
}

static void encode_reasons(struct tally_buf *out, const struct tally_summary_facts *f)
{
	struct tally_buf b = {0};
	size_t i;

	for (i = 0; i < f->nreasons; i++) {
		const struct tally_summary_reason *r = &f->reasons[i];

		tally_buf_reset(&b);
		tally_buf_put_varint(&b, r->code);
		tally_buf_put_varint(&b, r->counter);
		tally_buf_put_varint(&b, r->count);
		tally_buf_put_str(&b, r->text);
		tally_buf_put_str(&b, r->hint);
		tally_kv_bytes(out, TALLY_SUMK_REASON, b.data, b.len);
	}
	tally_buf_fini(&b);
}

static void encode_windows(struct tally_buf *out, const struct tally_section *s, int64_t offset)
{
	struct tally_buf b = {0};
	size_t i;

	for (i = 0; i < s->nwindows; i++) {
		const struct tally_window *w = &s->windows[i];

		tally_buf_reset(&b);
		tally_buf_put_varint(&b, shifted(w->t_begin, offset));
		tally_buf_put_varint(&b, shifted(w->t_end, offset));
		tally_buf_put_varint(&b, w->counter);
		tally_buf_put_varint(&b, w->count);
		tally_kv_bytes(out, TALLY_SUMK_WINDOW, b.data, b.len);
	}
	tally_buf_fini(&b);
}

void tally_summary_section_encode(struct tally_buf *out, const struct tally_section *s,
				  int64_t offset, const struct tally_summary_facts *f)
{
	struct tally_buf b = {0};

	tally_buf_put_varint(out, TALLY_SUMMARY_SECTION);
	encode_records(out, s);
	if (s->t_min != UINT64_MAX && s->t_max) {
		tally_kv_uint(out, TALLY_SUMK_T_MIN, shifted(s->t_min, offset));
		tally_kv_uint(out, TALLY_SUMK_T_MAX, shifted(s->t_max, offset));
	}
	tally_kv_uint(out, TALLY_SUMK_COMPLETE, f->complete);
	encode_reasons(out, f);
	encode_windows(out, s, offset);
	if (s->ledgers) {
		struct tally_ledger l = s->ledger;

		l.t_begin = shifted(l.t_begin, offset);
		l.t_end = shifted(l.t_end, offset);
		tally_ledger_encode(&b, &l);
		tally_kv_bytes(out, TALLY_SUMK_LEDGER, b.data, b.len);
		tally_kv_uint(out, TALLY_SUMK_LEDGER_FINAL, s->has_final);
		tally_kv_uint(out, TALLY_SUMK_LEDGERS, s->ledgers);
	}
	tally_kv_uint(out, TALLY_SUMK_GPU_BUSY, f->gpu_busy_ns);
	tally_kv_uint(out, TALLY_SUMK_KERNEL_NS, f->kernel_ns);
	tally_kv_uint(out, TALLY_SUMK_NCCL_NS, f->nccl_ns);
	if (f->top_kernel)
		tally_kv_str(out, TALLY_SUMK_TOP_KERNEL, f->top_kernel);
	tally_kv_uint(out, TALLY_SUMK_TOP_KERNEL_NS, f->top_kernel_ns);
	if (f->trace)
		tally_kv_str(out, TALLY_SUMK_TRACE, f->trace);
	tally_kv_uint(out, TALLY_SUMK_UNTIMED, f->untimed);
	tally_buf_fini(&b);
}

/* ---- parsing --------------------------------------------------------------------------------- */

static char *get_text(struct tally_cursor *c, char *dst, size_t cap)
{
	uint64_t n = tally_cur_varint(c);
	const uint8_t *p = tally_cur_bytes(c, n);
	size_t k = n < cap ? (size_t)n : cap - 1;

	if (!p)
		return NULL;
	memcpy(dst, p, k);
	dst[k] = '\0';
	return dst;
}

static char *dup_kv(const struct tally_kv *kv)
{
	char *s = malloc(kv->len + 1);

	if (s) {
		memcpy(s, kv->ptr, kv->len);
		s[kv->len] = '\0';
	}
	return s;
}

static bool parse_records(struct tally_section *s, const struct tally_kv *kv)
{
	struct tally_cursor c = {kv->ptr, kv->ptr + kv->len, false};

	while (!c.bad && c.p < c.end) {
		uint64_t k = tally_cur_varint(&c), n = tally_cur_varint(&c);

		if (c.bad)
			return false;
		if (k < TALLY_KIND_MAX)
			s->records[k] += n;
		s->records_total += n;
	}
	return true;
}

static bool parse_reason(struct tally_summary_facts *f, const struct tally_kv *kv)
{
	struct tally_cursor c = {kv->ptr, kv->ptr + kv->len, false};
	struct tally_summary_reason r = {0}, *v;

	r.code = (unsigned)tally_cur_varint(&c);
	r.counter = (unsigned)tally_cur_varint(&c);
	r.count = tally_cur_varint(&c);
	if (!get_text(&c, r.text, sizeof(r.text)) || !get_text(&c, r.hint, sizeof(r.hint)) || c.bad)
		return false;
	/* a reason is 5 bytes at least: their number is bounded by the chunk */
	v = tally_array_push(&f->reasons, &f->nreasons, sizeof(*v));
	if (!v)
		return false;
	*v = r;
	return true;
}

static bool parse_window(struct tally_section *s, const struct tally_kv *kv)
{
	struct tally_cursor c = {kv->ptr, kv->ptr + kv->len, false};
	struct tally_window w, *v;

	w.t_begin = tally_cur_varint(&c);
	w.t_end = tally_cur_varint(&c);
	w.counter = (unsigned)tally_cur_varint(&c);
	w.count = tally_cur_varint(&c);
	if (c.bad)
		return false;
	/* grown as the reader grows it: the same array takes the LOSS chunks' windows too */
	if (!(v = tally_array_push(&s->windows, &s->nwindows, sizeof(*v))))
		return false;
	*v = w;
	if (w.counter < TALLY_C_MAX)
		s->explicit_windows[w.counter / 64] |= 1ull << w.counter % 64;
	return true;
}

static bool parse_uint(struct tally_section *s, struct tally_summary_facts *f,
		       const struct tally_kv *kv)
{
	switch (kv->key) {
	case TALLY_SUMK_T_MIN:
		s->t_min = kv->u;
		break;
	case TALLY_SUMK_T_MAX:
		s->t_max = kv->u;
		break;
	case TALLY_SUMK_COMPLETE:
		f->complete = kv->u != 0;
		break;
	case TALLY_SUMK_LEDGER_FINAL:
		s->has_final = kv->u != 0;
		s->ledger.final = s->has_final;
		break;
	case TALLY_SUMK_LEDGERS:
		s->ledgers = kv->u;
		break;
	case TALLY_SUMK_GPU_BUSY:
		f->gpu_busy_ns = kv->u;
		break;
	case TALLY_SUMK_KERNEL_NS:
		f->kernel_ns = kv->u;
		break;
	case TALLY_SUMK_NCCL_NS:
		f->nccl_ns = kv->u;
		break;
	case TALLY_SUMK_TOP_KERNEL_NS:
		f->top_kernel_ns = kv->u;
		break;
	case TALLY_SUMK_UNTIMED:
		f->untimed = kv->u;
		break;
	}
	return true;
}

static bool parse_bytes(struct tally_section *s, struct tally_summary_facts *f,
			const struct tally_kv *kv)
{
	switch (kv->key) {
	case TALLY_SUMK_RECORDS:
		return parse_records(s, kv);
	case TALLY_SUMK_REASON:
		return parse_reason(f, kv);
	case TALLY_SUMK_WINDOW:
		return parse_window(s, kv);
	case TALLY_SUMK_LEDGER:
		if (!tally_ledger_decode(kv->ptr, kv->len, s->has_final, &s->ledger))
			return false;
		s->ledgers = s->ledgers ? s->ledgers : 1;
		return true;
	case TALLY_SUMK_TOP_KERNEL:
		free(f->top_kernel);
		return (f->top_kernel = dup_kv(kv)) != NULL;
	case TALLY_SUMK_TRACE:
		free(f->trace);
		return (f->trace = dup_kv(kv)) != NULL;
	}
	return true;
}

bool tally_summary_section_parse(struct tally_section *s, const uint8_t *p, size_t len)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_summary_facts *f;
	struct tally_kv kv;
	bool ok = true;

	if (s->facts) /* one SECTION part per section: a second is damage */
		return false;
	f = calloc(1, sizeof(*f));
	if (!f)
		return false;
	while (ok && tally_kv_next(&c, &kv))
		ok = kv.type == TALLY_KV_BYTES ? parse_bytes(s, f, &kv) : parse_uint(s, f, &kv);
	s->facts = f;
	return ok && !c.bad;
}
