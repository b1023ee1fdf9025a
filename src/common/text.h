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
#include <stdint.h>

/*
 * The one rule for text from a trace (or any text tally did not write itself) that a person's
 * terminal may receive: a character that would drive the terminal rather than be shown is never
 * written as it is.  Those are the C0 controls (ESC, BEL, BS, CR, LF, ...), DEL, the C1 controls
 * U+0080..U+009F (0x9B is CSI) as UTF-8 or as a raw byte, the bidirectional marks, embeddings,
 * overrides and isolates (U+061C, U+200E, U+200F, U+202A..U+202E such as U+202E, U+2066..U+2069)
 * and the line and paragraph separators (U+2028, U+2029); and bytes that are not valid UTF-8.
 *
 * Is the valid UTF-8 sequence s[0..n) (as tally_text_utf8_seq measured it) such a character?
 */
bool tally_text_is_control(const unsigned char *s, size_t n);

/* The code point of the valid UTF-8 sequence s[0..n). */
uint32_t tally_text_code_point(const unsigned char *s, size_t n);

/*
 * For a terminal or a text report: each byte of a control character (above) or of an invalid
 * sequence becomes \xNN; everything else is kept.  malloc'd; NULL on ENOMEM.
 */
char *tally_text_printable(const char *s);

/* tally_text_printable into a ring of 16: for printing, several in one printf; each result lives
 * until 16 more calls ("[out of memory]" when it could not be made).  NULL stays NULL.  The CLI's
 * one thread only. */
const char *tally_text_shown(const char *s);

/*
 * The same into out (outlen bytes, at least 8; always NUL-terminated), keeping at most max_cols
 * display columns (a code point is one, \xNN four) and what fits in out: a text cut there ends
 * in U+2026 "..." (one column, within max_cols) and *cut is set.  Returns the columns written.
 */
size_t tally_text_printable_to(const char *s, size_t max_cols, char *out, size_t outlen, bool *cut);

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
