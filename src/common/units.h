/* SPDX-License-Identifier: MIT */
/*
 * Durations and sizes for people, with one rule for every command: a duration in the largest unit
 * it reaches (ns, us, ms, s), three decimals past ns ("890 ns", "56.700 us", "1.234 ms",
 * "2.301 s"); a size in the largest binary unit it reaches (B, KiB ... PiB), whole when it is
 * whole, else one decimal ("512 B", "64 KiB", "1.5 MiB").
 */
#ifndef TALLY_COMMON_UNITS_H
#define TALLY_COMMON_UNITS_H

#include <stddef.h>
#include <stdint.h>

const char *tally_fmt_ns(char *buf, size_t len, uint64_t ns);
const char *tally_fmt_bytes(char *buf, size_t len, uint64_t bytes);

#endif
