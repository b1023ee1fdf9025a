/* SPDX-License-Identifier: MIT */
/* The GPU_METRICS chunk; see gpumetrics.h and docs/format.md §13. */
#include "gpumetrics.h"

#include <stdlib.h>
#include <string.h>

/* key 9: scale:varint name unit label, each len-bytes, inside the entry's bytes */
static void put_metric(struct tally_buf *b, const struct tally_metric_desc *m)
{
	struct tally_buf e = {0};

	tally_buf_put_varint(&e, m->scale);
	tally_buf_put_str(&e, m->name);
	tally_buf_put_str(&e, m->unit);
	tally_buf_put_str(&e, m->label);
	if (e.failed)
		b->failed = true;
	else
		tally_kv_bytes(b, TALLY_GK_METRIC, e.data, e.len);
	tally_buf_fini(&e);
}

void tally_gpu_metrics_encode(struct tally_buf *b, const struct tally_gpu_metrics *g)
{
	size_t i;

	tally_kv_uint(b, TALLY_GK_DEVICE, g->device);
	if (g->has_uuid)
		tally_kv_bytes(b, TALLY_GK_UUID, g->uuid, sizeof(g->uuid));
	tally_kv_uint(b, TALLY_GK_STATE, g->state);
	tally_kv_str(b, TALLY_GK_CHIP, g->chip);
	if (g->state == TALLY_GM_SAMPLED || g->state == TALLY_GM_STOPPED) {
		tally_kv_uint(b, TALLY_GK_INTERVAL, g->interval);
		tally_kv_uint(b, TALLY_GK_TRIGGER, g->trigger);
		tally_kv_uint(b, TALLY_GK_HW_BUFFER, g->hw_buffer);
		tally_kv_uint(b, TALLY_GK_PASSES, g->passes);
	}
	for (i = 0; i < g->nmetrics && i < TALLY_GPU_METRICS_MAX; i++)
		put_metric(b, &g->metrics[i]);
	if (g->result)
		tally_kv_uint(b, TALLY_GK_RESULT, g->result);
	tally_kv_str(b, TALLY_GK_WHY, g->why);
	tally_kv_str(b, TALLY_GK_REMEDY, g->remedy);
	for (i = 0; i < g->nleft_out && i < TALLY_GPU_METRICS_MAX; i++)
		tally_kv_str(b, TALLY_GK_LEFT_OUT, g->left_out[i]);
	if (g->state != TALLY_GM_ELSEWHERE)
		return;
	tally_kv_uint(b, TALLY_GK_HOLDER_PID, g->holder_pid);
	tally_kv_str(b, TALLY_GK_HOLDER_HOST, g->holder_host);
	tally_kv_str(b, TALLY_GK_HOLDER_FILE, g->holder_file);
	if (g->has_holder_session)
		tally_kv_bytes(b, TALLY_GK_HOLDER_SESSION, g->holder_session,
			       sizeof(g->holder_session));
}

static char *dup_len(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* A string entry; a repeated key replaces the one before. */
static void set_str(char **dst, const struct tally_kv *kv)
{
	if (kv->type != TALLY_KV_BYTES)
		return;
	free(*dst);
	*dst = dup_len(kv->ptr, kv->len);
}

static char *cur_str(struct tally_cursor *c)
{
	uint64_t n = tally_cur_varint(c);
	const uint8_t *p = tally_cur_bytes(c, n);

	return p || n == 0 ? dup_len(p, (size_t)n) : NULL;
}

static bool take_metric(struct tally_gpu_metrics *g, const struct tally_kv *kv)
{
	struct tally_cursor c;
	struct tally_metric_desc m = {0};
	struct tally_metric_desc *grown;

	if (kv->type != TALLY_KV_BYTES)
		return false; /* and its ptr is NULL: no cursor over it */
	c = (struct tally_cursor){kv->ptr, kv->ptr + kv->len, false};
	m.scale = (unsigned)tally_cur_varint(&c);
	m.name = cur_str(&c);
	m.unit = cur_str(&c);
	m.label = cur_str(&c);
	grown = c.bad || !m.name || !m.unit || !m.label || m.scale > 18
		    ? NULL
		    : tally_array_push(&g->metrics, &g->nmetrics, sizeof(*g->metrics));
	if (!grown) {
		free(m.name);
		free(m.unit);
		free(m.label);
		return !c.bad && m.scale <= 18; /* out of memory is not damage */
	}
	*grown = m;
	return true;
}

static void take_left_out(struct tally_gpu_metrics *g, const struct tally_kv *kv)
{
	char **grown;

	if (kv->type != TALLY_KV_BYTES ||
	    !(grown = tally_array_push(&g->left_out, &g->nleft_out, sizeof(*grown))))
		return;
	if (!(*grown = dup_len(kv->ptr, kv->len)))
		g->nleft_out--; /* the slot stays, empty: the array's capacity is its own */
}

static void take_id(uint8_t dst[16], bool *has, const struct tally_kv *kv)
{
	if (kv->type == TALLY_KV_BYTES && kv->len == 16) {
		memcpy(dst, kv->ptr, 16);
		*has = true;
	}
}

static bool take(struct tally_gpu_metrics *g, const struct tally_kv *kv, uint64_t *unknown)
{
	switch (kv->key) {
	case TALLY_GK_DEVICE:
		g->device = (uint32_t)kv->u;
		break;
	case TALLY_GK_UUID:
		take_id(g->uuid, &g->has_uuid, kv);
		break;
	case TALLY_GK_STATE:
		g->state = (unsigned)kv->u;
		break;
	case TALLY_GK_CHIP:
		set_str(&g->chip, kv);
		break;
	case TALLY_GK_INTERVAL:
		g->interval = kv->u;
		break;
	case TALLY_GK_TRIGGER:
		g->trigger = (unsigned)kv->u;
		break;
	case TALLY_GK_HW_BUFFER:
		g->hw_buffer = kv->u;
		break;
	case TALLY_GK_PASSES:
		g->passes = (unsigned)kv->u;
		break;
	case TALLY_GK_METRIC:
		return g->nmetrics >= TALLY_GPU_METRICS_MAX || take_metric(g, kv);
	case TALLY_GK_RESULT:
		g->result = kv->u;
		break;
	case TALLY_GK_WHY:
		set_str(&g->why, kv);
		break;
	case TALLY_GK_REMEDY:
		set_str(&g->remedy, kv);
		break;
	case TALLY_GK_LEFT_OUT:
		if (g->nleft_out < TALLY_GPU_METRICS_MAX)
			take_left_out(g, kv);
		break;
	case TALLY_GK_HOLDER_PID:
		g->holder_pid = kv->u;
		break;
	case TALLY_GK_HOLDER_HOST:
		set_str(&g->holder_host, kv);
		break;
	case TALLY_GK_HOLDER_FILE:
		set_str(&g->holder_file, kv);
		break;
	case TALLY_GK_HOLDER_SESSION:
		take_id(g->holder_session, &g->has_holder_session, kv);
		break;
	default:
		(*unknown)++;
	}
	return true;
}

bool tally_gpu_metrics_decode(const uint8_t *p, size_t len, struct tally_gpu_metrics *g,
			      uint64_t *unknown_keys)
{
	struct tally_cursor c = {p, p + len, false};
	struct tally_kv kv;
	bool ok = true;

	memset(g, 0, sizeof(*g));
	/* An entry of an unknown type ends the payload, as in every key/value chunk. */
	while (ok && tally_kv_next(&c, &kv))
		ok = take(g, &kv, unknown_keys);
	return ok;
}

void tally_gpu_metrics_fini(struct tally_gpu_metrics *g)
{
	size_t i;

	for (i = 0; i < g->nmetrics; i++) {
		free(g->metrics[i].name);
		free(g->metrics[i].unit);
		free(g->metrics[i].label);
	}
	for (i = 0; i < g->nleft_out; i++)
		free(g->left_out[i]);
	free(g->metrics);
	free(g->left_out);
	free(g->chip);
	free(g->why);
	free(g->remedy);
	free(g->holder_host);
	free(g->holder_file);
	memset(g, 0, sizeof(*g));
}
