/* SPDX-License-Identifier: MIT */
/*
 * The settings that cross the seam between `tally record`/`tally env` and the collector: one
 * row per setting, the one place its environment variable, its option, its type, its range, its
 * default and its help are written.  The command parses an option through its row and writes
 * the variable; the collector reads the variable through the same row, so a value one side
 * accepts the other accepts, and means the same.
 *
 * The value of a setting is a number: a whole number (NUMBER), nanoseconds (DURATION), bytes
 * (SIZE), the bits of the names given (NAMES), the index of the word given (FLAG: 0 off, 1 on),
 * or what a text's own check makes of it (TEXT: the device mask of TALLY_DEVICES).  A TEXT
 * setting is used as its text too (the output pattern, the rank list).
 *
 * Syntax, the same for the option and the variable:
 *   NUMBER    decimal digits                        --sample-rate 500, TALLY_SAMPLE_RATE=500
 *   DURATION  a decimal number, and ns, us, ms or s  --delay 2.5, TALLY_DELAY_MS=2500, =2.5s
 *             (a bare number is the option's unit, seconds for --delay, or the variable's,
 *             milliseconds for TALLY_DELAY_MS: each row says)
 *   SIZE      digits, and k, M or G (KiB, MiB, GiB)  --buffer-size 4M, TALLY_BUFFER_SIZE=4M
 *   NAMES     names of the row's list, with commas   --trace cuda,osrt
 *   FLAG      the option takes no argument; the variable is one word of the row's list (0 or
 *             1 unless the row says)
 *   TEXT      the row's check says
 * An empty variable is an unset one.
 */
#ifndef TALLY_COMMON_SETTINGS_H
#define TALLY_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What --trace / TALLY_TRACE can name, beyond the record kinds themselves. */
enum tally_trace_bits {
	TRACE_KERNEL = 1u << 0,
	TRACE_MEMCPY = 1u << 1,
	TRACE_MEMSET = 1u << 2,
	TRACE_RUNTIME = 1u << 3,
	TRACE_DRIVER = 1u << 4,
	TRACE_SYNC = 1u << 5,
	TRACE_NVTX = 1u << 6,
	TRACE_OVERHEAD = 1u << 7,
	TRACE_LAUNCH_DRIVER = 1u << 8, /* only the driver calls that launch work (cuLaunch...) */
	TRACE_MEMORY = 1u << 9,	       /* device memory allocations and releases */
	TRACE_OSRT = 1u << 10,	       /* blocking calls (format 1.3): not CUPTI's */
	TRACE_CUDA =
	    TRACE_KERNEL | TRACE_MEMCPY | TRACE_MEMSET | TRACE_RUNTIME | TRACE_LAUNCH_DRIVER,
};

/* What --sample / TALLY_SAMPLE names (the trace's TALLY_SAMPLE_BIT_*, format 1.3). */
enum { SAMPLE_PYTHON = 1u << 0, SAMPLE_NATIVE = 1u << 1 };

/* TALLY_PYTHON_STACKS's words: off, on, on only for threads holding the GIL. */
enum { PYTHON_STACKS_OFF, PYTHON_STACKS_ON, PYTHON_STACKS_GIL };

enum tally_setting_id {
	/* with an option of `tally record` and `tally env`, in the order --help shows them */
	TS_OUTPUT,
	TS_TRACE,
	TS_SAMPLE,
	TS_SAMPLE_RATE,
	TS_OSRT_THRESHOLD,
	TS_PYTHON_STACKS,
	TS_NATIVE_STACKS,
	TS_STACK_DEPTH,
	TS_DELAY,
	TS_DURATION,
	TS_CAPTURE_RANGE,
	TS_DEVICES,
	TS_RANKS,
	TS_BUFFER_SIZE,
	TS_POOL_BUFFERS,
	TS_SLICE,
	TS_GPU_METRICS,
	TS_GPU_METRICS_HZ,
	TS_GPU_METRICS_SET,
	TS_FORCE,
	/* the environment only */
	TS_SAMPLE_FALLBACK,
	TS_SAMPLE_SIGNAL,
	TS_SAMPLE_STALL,
	TS_FLUSH_TIMEOUT,
	TS_DEVICE_BUFFER_SIZE,
	TS_DEVICE_BUFFER_POOL_LIMIT,
	TS_GPU_METRICS_BUFFER,
	TS_GPU_METRICS_DECODE,
	TS_BENCH_TOGGLE,
	TS_MANIFEST,
	TS_ROOT_PID,
	TS_TEST_SLOW_CONSUMER,
	TS_TEST_SAMPLE_RING,
	TS_TEST_TORN,
	TALLY_SETTING_COUNT
};

enum tally_setting_type {
	SETTING_NUMBER,
	SETTING_DURATION,
	SETTING_SIZE,
	SETTING_NAMES,
	SETTING_FLAG,
	SETTING_TEXT
};

struct tally_setting_name {
	const char *name;
	uint64_t bits;
};

struct tally_setting {
	const char *env;    /* "TALLY_SAMPLE_RATE" */
	const char *option; /* "sample-rate"; NULL: the environment only */
	char short_name;    /* 'o', or 0 */
	const char *arg;    /* the option's argument in --help ("HZ"); NULL: a flag */
	enum tally_setting_type type;
	uint64_t min, max;    /* NUMBER, DURATION (ns), SIZE: the range; TEXT: max its length */
	uint64_t def;	      /* the value when not set (NAMES, TEXT: def_text's) */
	const char *def_text; /* NAMES, TEXT: the default as written; others:
			       * what the default means, for --help ("none") */
	uint64_t env_unit, option_unit;		/* DURATION: a bare number's unit in ns */
	const struct tally_setting_name *names; /* NAMES, FLAG: NULL-ended */
	const char *bare;			/* an option whose argument may be left out: then
						 * this ("--gpu-metrics" is "all") */
	/* TEXT: 0 and *value, or -EINVAL with why */
	int (*check)(const char *text, uint64_t *value, char *why, size_t len);
	const char *help; /* what it does; the default and range are added from the row */
};

extern const struct tally_setting tally_settings[TALLY_SETTING_COUNT];

/*
 * text as the setting takes it: 0 and *value, or -EINVAL with why (which names the value, not
 * the setting: the caller says "--devices: " or "TALLY_DEVICES=x: " before it).  option: text
 * came with the option (a bare DURATION is the option's unit), else from the variable.
 */
int tally_setting_parse(enum tally_setting_id id, const char *text, bool option, uint64_t *value,
			char *why, size_t len);

/*
 * The variable as the collector reads it: *value (the default when unset or empty) and *text
 * (the variable's text, or def_text; NULL for a number not set).  0, or -EINVAL with why naming
 * the variable and its value.
 */
int tally_setting_get(enum tally_setting_id id, uint64_t *value, const char **text, char *why,
		      size_t len);

/*
 * An option's argument (NULL: the option was given without one) as the text to put in the
 * variable: the argument itself (NAMES, TEXT), or the value written in the variable's unit into
 * own (numbers, flags).  0 and *out, or -EINVAL with why.
 */
int tally_setting_option(enum tally_setting_id id, const char *arg, char *own, size_t own_len,
			 const char **out, char *why, size_t len);

/* TALLY_OUTPUT (or -o) as a pattern: "DIR/" is the default name in DIR (into buf), anything
 * else itself. */
const char *tally_output_pattern(const char *given, char *buf, size_t len);

/* For --help: " (default 1000, from 1 to 20000)", " (default none)" or "". */
const char *tally_setting_describe(enum tally_setting_id id, char *buf, size_t len);

/* "2.5", "500ms", "20us", "10ns", "3s": nanoseconds, a bare number in bare_unit ns.  Decimal
 * digits only (no nan, inf, hex, sign or blank).  0, or -EINVAL. */
int tally_parse_duration(const char *s, uint64_t bare_unit, uint64_t *out);
/* "4096", "64k", "4M", "1GiB": bytes.  0, or -EINVAL. */
int tally_parse_size(const char *s, uint64_t *out);

#endif
