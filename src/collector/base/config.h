/* SPDX-License-Identifier: MIT */
/*
 * The collector's configuration, read only from environment variables (docs/collector.md lists
 * them; `tally record` and `tally env` set them).  Parsed once at session start.
 */
/*
 * The room base/ (config.c, log.c, ownthread.c, libc.c, sigreal.c, driver.c): what every room of
 * the collector may use, using none of them: the settings from the environment, logging, tally's
 * own threads, libc's functions and signal calls behind the interposed ones, the CUDA driver the
 * program loaded.
 */
#ifndef TALLY_COLLECTOR_CONFIG_H
#define TALLY_COLLECTOR_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "settings.h"

/* Every setting of common/settings.h, read from the environment through its row there. */
struct tally_config {
	char output[PATH_MAX]; /* pattern (%p %h %n %q{VAR}) */
	unsigned trace;	       /* enum tally_trace_bits */
	size_t buffer_size;
	unsigned pool_buffers;
	uint64_t slice_ns;
	uint64_t delay_ns, duration_ns;
	bool capture_profiler_api; /* record only between cudaProfilerStart and Stop */
	uint64_t device_mask;	   /* bit per device id; 0: all */
	char ranks[256];	   /* record only these ranks; "" all */
	bool force;		   /* overwrite an existing file */
	char manifest[PATH_MAX];   /* where each session appends its file name and verdict */
	uint64_t flush_timeout_ns; /* watchdog for CUPTI's flush */
	size_t device_buffer_size;
	unsigned device_buffer_pool_limit;
	long root_pid;		   /* the process `tally record` started; 0 unknown */
	uint64_t slow_consumer_ns; /* tests only: the consumer sleeps this long per record */
	unsigned python_stacks;	   /* TALLY_PYTHON_STACKS: Python stack of each launching call */
	bool python_stacks_gil;	   /* TALLY_PYTHON_STACKS=gil: only from threads holding the GIL */
	bool native_stacks;	   /* TALLY_NATIVE_STACKS: return addresses of each launch */
	unsigned stack_depth;	   /* TALLY_STACK_DEPTH: frames kept per stack */
	/* host sampling and blocking calls (docs/collector.md, "Host sampling") */
	unsigned sample;	    /* TALLY_SAMPLE: TALLY_SAMPLE_BIT_PYTHON | _NATIVE */
	unsigned sample_rate;	    /* TALLY_SAMPLE_RATE: Hz */
	bool sample_fallback;	    /* TALLY_SAMPLE_FALLBACK: the timer even where perf works */
	int sample_signal;	    /* TALLY_SAMPLE_SIGNAL: the timer's signal; 0: pick one */
	uint64_t sample_stall_ns;   /* TALLY_SAMPLE_STALL_MS: a gap this long is a stall */
	uint64_t osrt_threshold_ns; /* TALLY_OSRT_THRESHOLD_NS: shorter calls are not kept */
	uint64_t test_sample_ring;  /* TALLY_TEST_SAMPLE_RING: tests: slots of the signal ring */
	bool test_torn;		    /* TALLY_TEST_TORN: tests: every Python sample reads torn */
	/* GPU metrics (pmsampler.h) */
	bool gpu_metrics;		/* TALLY_GPU_METRICS is set: sample them */
	uint64_t gpu_metrics_devices;	/* its CUDA ordinals; 0: all */
	unsigned gpu_metrics_hz;	/* TALLY_GPU_METRICS_FREQUENCY */
	char gpu_metrics_set[4096];	/* TALLY_GPU_METRICS_SET: "default" or metric names */
	uint64_t gpu_metrics_buffer;	/* TALLY_GPU_METRICS_BUFFER: hardware buffer bytes; 0 */
	uint64_t gpu_metrics_decode_ns; /* TALLY_GPU_METRICS_DECODE_MS; 0: by the rate */
	uint64_t bench_toggle_ns;	/* TALLY_BENCH_TOGGLE_MS: metrics, samples off at times */
};

/* Does the configuration ask for anything that records from the program's first instruction
 * (host sampling, blocking calls)?  Such a session starts when libtally.so loads. */
bool tally_config_from_start(const struct tally_config *c);

/* Parse the environment, every setting through its row (settings.h); returns 0, or -EINVAL
 * with why naming the variable and value. */
int tally_config_load(struct tally_config *c, char *why, size_t len);

/* Are GPU metrics asked for (TALLY_GPU_METRICS)?  Read before the configuration is loaded. */
bool tally_config_gpu_metrics_asked(void);

/* Is this process's rank (SLURM_PROCID, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK) in list? */
bool tally_rank_selected(const char *list, char *rank_var, size_t len);

#endif
