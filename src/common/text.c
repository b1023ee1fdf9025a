/* SPDX-License-Identifier: MIT */
/* Safe text; see text.h. */
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tally_text_utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool tally_text_is_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (!(n = tally_text_utf8_seq(p + i, len - i)))
			return false;
		i += n;
	}
	return true;
}

char *tally_text_utf8(const char *s, size_t len, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(len * 3 + 1), *o = out; /* each bad byte: 3 bytes of U+FFFD */
	size_t i = 0, n;

	if (!out)
		return NULL;
	while (i < len) {
		n = tally_text_utf8_seq(p + i, len - i);
		if (n) {
			memcpy(o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	if (out_len)
		*out_len = (size_t)(o - out);
	return out;
}

uint32_t tally_text_code_point(const unsigned char *s, size_t n)
{
	static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = s[0] & lead_mask[n];
	size_t i;

	for (i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

bool tally_text_is_control(const unsigned char *s, size_t n)
{
	static const struct {
		uint32_t lo, hi;
	} controls[] = {
	    {0x00, 0x1f},     {0x7f, 0x9f},	/* C0; DEL and C1 */
	    {0x61c, 0x61c},   {0x200e, 0x200f}, /* Arabic letter mark; LRM, RLM */
	    {0x2028, 0x202e}, {0x2066, 0x2069}, /* separators, embeddings, overrides; isolates */
	};
	uint32_t cp = tally_text_code_point(s, n);
	size_t i;

	for (i = 0; i < sizeof(controls) / sizeof(controls[0]); i++)
		if (cp >= controls[i].lo && cp <= controls[i].hi)
			return true;
	return false;
}

/* One step of the printable form: the sequence at p (n bytes, 0 for an invalid byte) is written
 * as *bytes bytes taking *cols columns; true when it is escaped. */
static bool printable_step(const unsigned char *p, size_t left, size_t *n, size_t *bytes,
			   size_t *cols)
{
	size_t len = tally_text_utf8_seq(p, left);
	bool escape = len == 0 || tally_text_is_control(p, len);

	*n = len ? len : 1;
	*bytes = escape ? 4 * *n : *n;
	*cols = escape ? 4 * *n : 1;
	return escape;
}

size_t tally_text_printable_to(const char *s, size_t max_cols, char *out, size_t outlen, bool *cut)
{
	static const char ellipsis[] = "\xe2\x80\xa6"; /* U+2026, one column */
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i, n, bytes, w, cols = 0, used = 0;
	size_t max_cols_kept = max_cols, max_bytes = outlen - 1;

	/* Does all of it fit?  Else keep room for the ellipsis. */
	for (i = 0; i < len; i += n) {
		printable_step(p + i, len - i, &n, &bytes, &w);
		cols += w;
		used += bytes;
	}
	*cut = cols > max_cols || used > max_bytes;
	if (*cut) {
		max_cols_kept = max_cols ? max_cols - 1 : 0;
		max_bytes = outlen - sizeof(ellipsis);
	}
	cols = used = 0;
	for (i = 0; i < len; i += n) {
		bool escape = printable_step(p + i, len - i, &n, &bytes, &w);

		if (cols + w > max_cols_kept || used + bytes > max_bytes)
			break;
		if (escape)
			for (size_t k = 0; k < n; k++)
				used += (size_t)snprintf(out + used, outlen - used, "\\x%02x",
							 p[i + k]);
		else
			memcpy(out + used, p + i, n), used += n;
		cols += w;
	}
	if (*cut && max_cols) {
		memcpy(out + used, ellipsis, sizeof(ellipsis) - 1);
		used += sizeof(ellipsis) - 1;
		cols++;
	}
	out[used] = '\0';
	return cols;
}

const char *tally_text_shown(const char *s)
{
	/* A ring, so that one printf may hold several; each entry lives until reused. */
	static char *ring[16];
	static unsigned next;
	char *t;

	if (!s)
		return NULL;
	t = tally_text_printable(s);
	if (!t)
		return "[out of memory]";
	free(ring[next]);
	ring[next] = t;
	next = (next + 1) % 16;
	return t;
}

char *tally_text_printable(const char *s)
{
	size_t len = strlen(s), cap = len * 4 + 4; /* each byte at most "\xNN" */
	char *out = malloc(cap);
	bool cut;

	if (out)
		tally_text_printable_to(s, SIZE_MAX, out, cap, &cut);
	return out;
}
