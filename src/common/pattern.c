/* SPDX-License-Identifier: MIT */
/* Output name patterns; see pattern.h. */
#include "pattern.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUFFIX	".tally"
#define MAX_SEQ 100000

struct out_buf {
	char *p;
	size_t len, cap;
	bool overflow;
};

static void out_put(struct out_buf *o, const char *s, size_t n)
{
	if (o->len + n >= o->cap) {
		o->overflow = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static bool safe_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* Append a value from outside (environment, host name), sanitised. */
static void out_put_value(struct out_buf *o, const char *v)
{
	size_t i;

	for (i = 0; v[i]; i++) {
		char c = safe_byte((unsigned char)v[i]) && !(i == 0 && v[i] == '.') ? v[i] : '_';

		out_put(o, &c, 1);
	}
}

static void set_err(char *err, size_t errlen, const char *msg, const char *at)
{
	if (err && errlen)
		snprintf(err, errlen, "%s at \"%.40s\"", msg, at);
}

static const char *plain_getenv(const char *name)
{
	return getenv(name);
}

static bool default_exists(const char *path, void *ctx)
{
	(void)ctx;
	return access(path, F_OK) == 0;
}

/* One pass with %n as seq; *has_seq says whether %n occurred. */
static int expand_once(const char *pat, struct tally_pattern_vars *v, unsigned long seq,
		       struct out_buf *o, bool *has_seq, char *err, size_t errlen)
{
	const char *(*get)(const char *) = v->getenv ? v->getenv : plain_getenv;
	char num[32], host[256];
	const char *p;

	for (p = pat; *p; p++) {
		if (*p != '%') {
			out_put(o, p, 1);
			continue;
		}
		switch (p[1]) {
		case '%':
			out_put(o, "%", 1);
			break;
		case 'p':
			snprintf(num, sizeof(num), "%ld", (long)v->pid);
			out_put(o, num, strlen(num));
			break;
		case 'n':
			*has_seq = true;
			snprintf(num, sizeof(num), "%lu", seq);
			out_put(o, num, strlen(num));
			break;
		case 'h':
			if (v->host) {
				out_put_value(o, v->host);
			} else {
				if (gethostname(host, sizeof(host)) < 0)
					strcpy(host, "unknown-host");
				host[sizeof(host) - 1] = '\0';
				out_put_value(o, host);
			}
			break;
		case 'q': {
			const char *close;
			char name[128];
			const char *val;

			if (p[2] != '{' || !(close = strchr(p + 3, '}')) || close == p + 3 ||
			    (size_t)(close - (p + 3)) >= sizeof(name)) {
				set_err(err, errlen,
					"%q needs a variable name in braces, as %q{RANK}", p);
				return -EINVAL;
			}
			memcpy(name, p + 3, (size_t)(close - (p + 3)));
			name[close - (p + 3)] = '\0';
			val = get(name);
			if (!val)
				v->unset_vars++;
			else
				out_put_value(o, val);
			p = close - 1;
			break;
		}
		default:
			set_err(err, errlen, "unknown pattern (use %p %h %n %q{VAR} %%)", p);
			return -EINVAL;
		}
		p++;
	}
	return 0;
}

int tally_pattern_expand(const char *pattern, struct tally_pattern_vars *vars, char *out,
			 size_t outlen, char *err, size_t errlen)
{
	bool (*exists)(const char *, void *) = vars->exists ? vars->exists : default_exists;
	unsigned long seq;

	if (!pattern || !*pattern) {
		set_err(err, errlen, "empty output name", "");
		return -EINVAL;
	}
	vars->unset_vars = 0;
	for (seq = 1; seq <= MAX_SEQ; seq++) {
		struct out_buf o = {out, 0, outlen, false};
		bool has_seq = false;
		size_t slen = strlen(SUFFIX);
		int rc;

		if (outlen)
			out[0] = '\0';
		rc = expand_once(pattern, vars, seq, &o, &has_seq, err, errlen);
		if (rc < 0)
			return rc;
		if (o.len < slen || strcmp(out + o.len - slen, SUFFIX) != 0)
			out_put(&o, SUFFIX, slen);
		if (o.overflow) {
			set_err(err, errlen, "output name too long", pattern);
			return -ENAMETOOLONG;
		}
		if (!has_seq || !exists(out, vars->ctx))
			return 0;
		vars->unset_vars = 0;
	}
	set_err(err, errlen, "no free name for %n", pattern);
	return -EEXIST;
}
