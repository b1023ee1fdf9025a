/* SPDX-License-Identifier: MIT */
/*
 * Text that came from a trace, made safe for where it goes.  A trace may be crafted: its command
 * line can hold a newline and a fake "verdict COMPLETE", or ESC[8m to hide the real one, and
 * its strings need not be UTF-8 at all.
 */
#ifndef TALLY_COMMON_TEXT_H
#define TALLY_COMMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * For a terminal or a text report: control bytes (C0, DEL, and C1 written as UTF-8) and bytes
 * that are not valid UTF-8 become \xNN; everything else is kept.  malloc'd; NULL on ENOMEM.
 */
char *tally_text_printable(const char *s);

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes, n > 0), or 0 if it is not one: an
 * overlong form, a surrogate, a value past U+10FFFF, a bad or missing continuation byte.  The one
 * validator behind the functions below and the JSON writer's escaping (json.c).
 */
size_t tally_text_utf8_seq(const unsigned char *s, size_t n);

/* Is s[0..len) valid UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF)? */
bool tally_text_is_utf8(const char *s, size_t len);

/*
 * s[0..len) as valid UTF-8: each byte of an invalid sequence becomes U+FFFD.  malloc'd and
 * NUL-terminated (*out_len its length); NULL on ENOMEM.
 */
char *tally_text_utf8(const char *s, size_t len, size_t *out_len);

#endif
