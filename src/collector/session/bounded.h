/* SPDX-License-Identifier: MIT */
/* A call that may hang (CUPTI's flush), made on a helper thread and waited for at most a while. */
#ifndef TALLY_COLLECTOR_BOUNDED_H
#define TALLY_COLLECTOR_BOUNDED_H

#include <stdbool.h>
#include <stdint.h>

/* Run fn in a helper thread and wait at most timeout_ns; false if it did not return in time. */
bool run_bounded(void (*fn)(void *), void *arg, uint64_t timeout_ns);

#endif
