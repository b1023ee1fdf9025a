/* SPDX-License-Identifier: MIT */
/*
 * What a check says: its status and the four texts of a finding, printf-style.  Below every other
 * file of the doctor: the checks call down to it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "findings.h"

static void vset(char *dst, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(dst, len, fmt, ap);
}

void finding_set(struct tally_doctor_finding *f, enum tally_doctor_status st, const char *fmt, ...)
{
	va_list ap;

	f->status = st;
	va_start(ap, fmt);
	vset(f->value, sizeof(f->value), fmt, ap);
	va_end(ap);
}

void finding_source(struct tally_doctor_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(f->source, sizeof(f->source), fmt, ap);
	va_end(ap);
}

void finding_why(struct tally_doctor_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

void finding_fix(struct tally_doctor_finding *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(f->remedy, sizeof(f->remedy), fmt, ap);
	va_end(ap);
}

void finding_unreadable(struct tally_doctor_finding *f, const char *path, int err)
{
	finding_source(f, "%s", path);
	if (err == 0)
		finding_set(f, TALLY_DOCTOR_WARN, "%s is empty", path);
	else if (err == -ENOENT)
		finding_set(f, TALLY_DOCTOR_SKIP, "%s does not exist here", path);
	else
		finding_set(f, TALLY_DOCTOR_SKIP, "cannot read %s: %s", path, strerror(-err));
}
