/* SPDX-License-Identifier: MIT */
/*
 * Logging inside someone else's process: silent unless TALLY_DEBUG is set (1: stderr, or a file
 * name), async-signal-safe (one write(2) of a line formatted on the stack), errno preserved.
 */
#ifndef TALLY_COLLECTOR_LOG_H
#define TALLY_COLLECTOR_LOG_H

void tally_log_init(void); /* reads TALLY_DEBUG; call once before logging */
void tally_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Always printed (stderr), for the few messages a user must see: a refused recording. */
void tally_log_user(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
