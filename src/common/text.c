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

char *tally_text_printable(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, n;
	char *out = malloc(len * 4 + 1), *o = out; /* each byte at most "\xNN" */

	if (!out)
		return NULL;
	while (i < len) {
		n = tally_text_utf8_seq(p + i, len - i);
		/* C0 and DEL; C1 (U+0080..U+009F) arrives as C2 80..C2 9F. */
		if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7f)) ||
		    (n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)) {
			n = n ? n : 1;
			for (size_t k = 0; k < n; k++)
				o += sprintf(o, "\\x%02x", p[i + k]);
		} else {
			memcpy(o, p + i, n);
			o += n;
		}
		i += n;
	}
	*o = '\0';
	return out;
}
