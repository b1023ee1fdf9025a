/* SPDX-License-Identifier: MIT */
/* Durations and sizes for people; see units.h. */
#include "units.h"

#include <stdio.h>

const char *tally_fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		uint64_t ns;
		const char *name;
	} units[] = {{1000000000ull, "s"}, {1000000ull, "ms"}, {1000ull, "us"}};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns >= units[i].ns) {
			snprintf(buf, len, "%.3f %s", (double)ns / (double)units[i].ns,
				 units[i].name);
			return buf;
		}
	snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

const char *tally_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes / 1024;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, units[u]);
	return buf;
}
