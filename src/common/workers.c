/* SPDX-License-Identifier: MIT */
/* The readers' thread count; see workers.h. */
#include "workers.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

unsigned tally_workers(void)
{
	const char *env = getenv("TALLY_JOBS");
	unsigned long n = 0;
	cpu_set_t set;

	if (env && *env) {
		char *end;

		n = strtoul(env, &end, 10);
		if (*end || n == 0)
			n = 0; /* not a number: as if unset */
	}
	if (!n && sched_getaffinity(0, sizeof(set), &set) == 0)
		n = (unsigned long)CPU_COUNT(&set);
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		n = c > 0 ? (unsigned long)c : 1;
	}
	return n > TALLY_WORKERS_MAX ? TALLY_WORKERS_MAX : (unsigned)n;
}
