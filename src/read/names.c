/* SPDX-License-Identifier: MIT */
/*
 * Names as people read them: kernel names demangled (nsys shows them demangled by default), base
 * names (nsys's shortName), lost strings made visible, and the labels of CUDA's enums.
 *
 * Demangling uses libiberty's callback demangler (the code behind __cxa_demangle and c++filt),
 * linked statically, with a bound on the output: a name built from nested template
 * back-references demangles to gigabytes in exponential time, so past REPORT_DEMANGLE_MAX_OUT
 * bytes the demangler is left through longjmp and the mangled name is shown instead.  In callback
 * mode libiberty keeps all its state on the stack, so leaving it that way frees everything.
 */
#include <libiberty/demangle.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "trace-set.h"

struct report_names {
	uint32_t cap;
	char **raw; /* "[string N lost]" for lost ids, a long one cut; else NULL (the section's) */
	uint8_t *measured; /* per id: its length was checked against REPORT_TEXT_MAX */
	char **demangled;  /* per id; NULL until asked */
	char **base;
};

static uint64_t demangle_refused; /* names kept mangled because they were too big */
static uint64_t texts_cut;	  /* strings cut at REPORT_TEXT_MAX */

uint64_t report_demangle_refused(void)
{
	return demangle_refused;
}

uint64_t report_texts_cut(void)
{
	return texts_cut;
}

char *report_text_cut(const char *s, size_t max)
{
	size_t len = strlen(s), keep = max > 64 ? max - 64 : max;
	char *out;

	if (len <= max)
		return strdup(s);
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--; /* not inside a UTF-8 sequence */
	if (asprintf(&out, "%.*s\xe2\x80\xa6[%zu bytes cut]", (int)keep, s, len - keep) < 0)
		return NULL;
	return out;
}

/* s cut to REPORT_TEXT_MAX bytes, counted. */
static char *cut_text(const char *s)
{
	char *out = report_text_cut(s, REPORT_TEXT_MAX);

	texts_cut += out != NULL;
	return out;
}

struct demangle_out {
	char *buf;
	size_t len;
	jmp_buf too_big;
};

static void demangle_put(const char *s, size_t n, void *opaque)
{
	struct demangle_out *o = opaque;

	if (o->len + n >= REPORT_DEMANGLE_MAX_OUT)
		longjmp(o->too_big, 1);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static char *demangle_bounded(const char *mangled)
{
	struct demangle_out o = {.buf = malloc(REPORT_DEMANGLE_MAX_OUT)};
	char *out;

	if (!o.buf)
		return NULL;
	if (setjmp(o.too_big)) {
		demangle_refused++;
		free(o.buf);
		return NULL;
	}
	/* DMGL_PARAMS | DMGL_TYPES: what __cxa_demangle asks for, so names read the same. */
	if (!cplus_demangle_v3_callback(mangled, DMGL_PARAMS | DMGL_TYPES, demangle_put, &o)) {
		free(o.buf);
		return NULL;
	}
	o.buf[o.len] = '\0';
	out = tally_resize(o.buf, o.len + 1, 1);
	return out ? out : o.buf;
}

char *report_demangle(const char *mangled)
{
	if (!mangled || strncmp(mangled, "_Z", 2) != 0)
		return NULL;
	/* libiberty sizes stack arrays by the input: a bound keeps them well inside a stack. */
	if (strlen(mangled) > REPORT_DEMANGLE_MAX_IN) {
		demangle_refused++;
		return NULL;
	}
	return demangle_bounded(mangled);
}

/*
 * "void ns::foo<int, (anonymous namespace)::X>(float *, int)" -> "foo".  The parameter list is the
 * first '(' outside template brackets that is not "(anonymous namespace)"; before it, template
 * arguments are dropped, then everything up to the last "::" or space (the return type).  A name
 * with no parameter list (extern "C" kernels) is its own base name.
 */
char *report_base_name(const char *name)
{
	size_t n = strlen(name), i, end = n, begin = 0;
	int angle = 0;

	for (i = 0; i < n; i++) {
		if (name[i] == '<')
			angle++;
		else if (name[i] == '>' && angle > 0)
			angle--;
		else if (name[i] == '(' && angle == 0 &&
			 strncmp(name + i, "(anonymous namespace)", 21) != 0) {
			end = i;
			break;
		}
	}
	if (end == n)
		return strdup(name);
	/* drop trailing template arguments: foo<int> -> foo */
	if (end > 0 && name[end - 1] == '>') {
		int depth = 0;

		for (i = end; i-- > 0;) {
			if (name[i] == '>')
				depth++;
			else if (name[i] == '<' && --depth == 0)
				break;
		}
		if (depth == 0 && i < end)
			end = i;
	}
	angle = 0;
	for (i = 0; i < end; i++) {
		if (name[i] == '<')
			angle++;
		else if (name[i] == '>' && angle > 0)
			angle--;
		else if (angle == 0 && name[i] == ' ')
			begin = i + 1;
		else if (angle == 0 && name[i] == ':' && name[i + 1] == ':')
			begin = i + 2;
	}
	if (begin >= end)
		begin = 0;
	return strndup(name + begin, end - begin);
}

/* Grow one per-id array to cap entries, zeroing the new ones. */
static bool grow_ids(char ***a, uint32_t old, uint32_t cap)
{
	char **t = tally_resize(*a, cap, sizeof(char *));

	if (!t)
		return false;
	memset(t + old, 0, (cap - old) * sizeof(char *));
	*a = t;
	return true;
}

static bool names_grow(struct report_names **np, uint32_t id)
{
	struct report_names *n = *np;
	uint32_t cap;

	if (!n) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return false;
		*np = n;
	}
	if (id < n->cap)
		return true;
	cap = n->cap ? n->cap : 64;
	while (cap <= id)
		cap *= 2;
	/* A failure leaves some arrays longer than cap: harmless, cap stays the smallest. */
	if (!grow_ids(&n->raw, n->cap, cap) || !grow_ids(&n->demangled, n->cap, cap) ||
	    !grow_ids(&n->base, n->cap, cap))
		return false;
	{
		uint8_t *m = tally_resize(n->measured, cap, 1);

		if (!m)
			return false;
		memset(m + n->cap, 0, cap - n->cap);
		n->measured = m;
	}
	n->cap = cap;
	return true;
}

/* s, or its cut copy when it is longer than REPORT_TEXT_MAX (measured once per id). */
static const char *bounded_string(struct report_section *rs, uint32_t id, const char *s)
{
	struct report_names *n;
	size_t len;

	if (!names_grow(&rs->names, id))
		return s;
	n = rs->names;
	if (!n->measured[id]) {
		n->measured[id] = 1;
		len = strlen(s);
		if (len > REPORT_TEXT_MAX)
			n->raw[id] = cut_text(s);
	}
	return n->raw[id] ? n->raw[id] : s;
}

const char *report_string(struct report_section *rs, uint32_t id)
{
	const char *s = tally_section_string(rs->s, id);
	char *lost;

	if (s)
		return bounded_string(rs, id, s);
	if (id == 0)
		return "";
	/* Ids past the table were never defined here (a lost tail, or damage): no per-id cache,
	 * so that a wild id cannot make one huge. */
	if (id >= rs->s->nstrings || !names_grow(&rs->names, id))
		return "[string lost]";
	if (!rs->names->raw[id] && asprintf(&lost, "[string %u lost]", id) >= 0)
		rs->names->raw[id] = lost;
	return rs->names->raw[id] ? rs->names->raw[id] : "[string lost]";
}

const char *report_kernel_name(struct report_section *rs, uint32_t id, enum report_name_mode m)
{
	const char *raw;
	struct report_names *n;

	if (id == 0)
		return "[unnamed kernel]";
	raw = report_string(rs, id);
	if (m == REPORT_NAME_MANGLED || id >= rs->s->nstrings || !names_grow(&rs->names, id))
		return raw;
	n = rs->names;
	if (!n->demangled[id]) {
		char *d = report_demangle(raw);

		if (d && strlen(d) > REPORT_TEXT_MAX) {
			char *c = cut_text(d);

			free(d);
			d = c;
		}
		n->demangled[id] = d ? d : strdup(raw);
		if (!n->demangled[id])
			return raw;
	}
	if (m == REPORT_NAME_DEMANGLED)
		return n->demangled[id];
	if (!n->base[id])
		n->base[id] = report_base_name(n->demangled[id]);
	return n->base[id] ? n->base[id] : n->demangled[id];
}

void report_names_free(struct report_names *n)
{
	uint32_t i;

	if (!n)
		return;
	for (i = 0; i < n->cap; i++) {
		free(n->raw[i]);
		free(n->demangled[i]);
		free(n->base[i]);
	}
	free(n->raw);
	free(n->measured);
	free(n->demangled);
	free(n->base);
	free(n);
}

/* CUpti_ActivityMemcpyKind, in nsys's words ("[CUDA memcpy Host-to-Device]"). */
const char *report_memcpy_kind_label(unsigned k)
{
	static const char *const labels[] = {
	    "Unknown",
	    "Host-to-Device",
	    "Device-to-Host",
	    "Host-to-Array",
	    "Array-to-Host",
	    "Array-to-Array",
	    "Array-to-Device",
	    "Device-to-Array",
	    "Device-to-Device",
	    "Host-to-Host",
	    "Peer-to-Peer",
	    "UVM Host-to-Device",
	    "UVM Device-to-Host",
	    "UVM Device-to-Device",
	};

	return k < sizeof(labels) / sizeof(labels[0]) ? labels[k] : "Unknown";
}

/* CUpti_ActivityMemoryKind */
const char *report_mem_kind_label(unsigned k)
{
	static const char *const labels[] = {
	    "Unknown", "Pageable", "Pinned",	    "Device",
	    "Array",   "Managed",  "Device Static", "Managed Static",
	};

	return k < sizeof(labels) / sizeof(labels[0]) ? labels[k] : "Unknown";
}

/* CUpti_ActivitySynchronizationType */
const char *report_sync_type_label(unsigned t)
{
	static const char *const labels[] = {
	    "Unknown", "Event sync", "Stream wait event", "Stream sync", "Context sync",
	};

	return t < sizeof(labels) / sizeof(labels[0]) ? labels[t] : "Unknown";
}
