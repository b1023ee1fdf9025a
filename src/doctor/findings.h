/* SPDX-License-Identifier: MIT */
/*
 * What a check says (findings.c): the lowest layer of the doctor, so that every check calls down
 * to it and doctor.c only runs the table.  Not installed; doctor.h is the interface.
 */
#ifndef TALLY_DOCTOR_FINDINGS_H
#define TALLY_DOCTOR_FINDINGS_H

#include "doctor.h"

/* finding text; printf-style, truncates silently (the fields are for people) */
void finding_set(struct tally_doctor_finding *f, enum tally_doctor_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void finding_source(struct tally_doctor_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void finding_why(struct tally_doctor_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void finding_fix(struct tally_doctor_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "SKIP" or "WARN" for a file that could not be used, with the reason in value. */
void finding_unreadable(struct tally_doctor_finding *f, const char *path, int err);

#endif
