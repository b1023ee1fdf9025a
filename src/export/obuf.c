/* SPDX-License-Identifier: MIT */
/* The exporters' write buffer; see obuf.h. */
#include "obuf.h"

#include <errno.h>
#include <stdlib.h>

#include "json.h"

const char obuf_digits2[200] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

int obuf_init(struct obuf *o, FILE *f)
{
	memset(o, 0, sizeof(*o));
	o->buf = malloc(OBUF_SIZE + OBUF_SLACK);
	if (!o->buf)
		return -ENOMEM;
	o->f = f;
	o->p = o->buf;
	o->end = o->buf + OBUF_SIZE;
	return 0;
}

int obuf_flush(struct obuf *o)
{
	size_t n = (size_t)(o->p - o->buf);

	if (n && !o->err && fwrite(o->buf, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
	o->written += n;
	o->p = o->buf;
	return o->err ? -o->err : 0;
}

void obuf_fini(struct obuf *o)
{
	free(o->buf);
	o->buf = o->p = o->end = NULL;
}

/* tally_json_escape knows every corner of JSON strings (control characters, invalid UTF-8);
 * names are escaped once each through it, then copied per event. */
char *obuf_json_escaped(const char *s, size_t *len)
{
	char *out = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&out, &n);

	if (!m)
		return NULL;
	tally_json_escape(m, s, strlen(s));
	if (fclose(m) != 0) {
		free(out);
		return NULL;
	}
	*len = n;
	return out;
}
