/* SPDX-License-Identifier: MIT */
/* Escaped strings of a section, made once; see esc.h. */
#include "esc.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "obuf.h"

/* text cut to ESC_ROW_MAX bytes, escaped. */
static struct esc *cut_name(const char *text)
{
	struct esc *e = calloc(1, sizeof(*e));
	char *cut = report_text_cut(text, ESC_ROW_MAX);
	size_t len;

	if (e && cut && (e->s = obuf_json_escaped(cut, &len)))
		e->len = (uint32_t)len;
	free(cut);
	if (e && !e->s) {
		free(e);
		e = NULL;
	}
	return e;
}

static void esc_fini(struct esc *e)
{
	if (e->cut)
		free(e->cut->s);
	free(e->cut);
	free(e->s);
}

const struct esc *esc_name(struct esc_names *n, struct report_section *rs, uint32_t id, bool kernel)
{
	static const struct esc none = {.s = "", .len = 0};
	struct esc **tab = kernel ? &n->kern : &n->raw;
	uint32_t *count = kernel ? &n->nkern : &n->nraw;
	const char *text;
	size_t len;

	if (id >= rs->s->nstrings && id) { /* never defined: no per-id slot for a wild id */
		static const struct esc lost = {.s = "[string lost]", .len = 13};

		return &lost;
	}
	if (id >= *count) {
		uint32_t cap = *count ? *count : 64;
		struct esc *t;

		while (cap <= id)
			cap *= 2;
		t = tally_resize(*tab, cap, sizeof(*t));
		if (!t)
			return &none;
		memset(t + *count, 0, (cap - *count) * sizeof(*t));
		*tab = t;
		*count = cap;
	}
	if (!(*tab)[id].s) {
		text = kernel ? report_kernel_name(rs, id, REPORT_NAME_DEMANGLED)
			      : report_string(rs, id);
		(*tab)[id].s = obuf_json_escaped(text, &len);
		if (!(*tab)[id].s)
			return &none;
		(*tab)[id].len = (uint32_t)len;
		if (strlen(text) > ESC_ROW_MAX && !((*tab)[id].cut = cut_name(text)))
			return &none;
	}
	if ((*tab)[id].cut && (*tab)[id].written)
		return (*tab)[id].cut;
	(*tab)[id].written = true;
	return &(*tab)[id];
}

void esc_names_free(struct esc_names *n)
{
	uint32_t k;

	for (k = 0; k < n->nraw; k++)
		esc_fini(&n->raw[k]);
	for (k = 0; k < n->nkern; k++)
		esc_fini(&n->kern[k]);
	free(n->raw);
	free(n->kern);
	memset(n, 0, sizeof(*n));
}
