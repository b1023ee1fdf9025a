/* SPDX-License-Identifier: MIT */
/*
 * tally-testsrc: write a trace from the CPU test source, through the real pipeline, with the
 * workload and faults given on the command line.  Used by tests/data/regenerate.sh (the sample
 * trace), by the CLI tests, and by bench/.  See tally-testsrc --help.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testsrc.h"

struct opts {
	const char *output;
	struct testsrc_workload w;
	unsigned threads;
	struct tally_pipeline_config cfg;
	bool in_flight, kill, starve;
	struct fault_sink fault;
	bool use_fault;
	struct testsrc_host host; /* --host N: host samples and blocking calls (format 1.3) */
	bool loop;		  /* --loop: a training loop (testsrc_loop_run) */
	struct testsrc_loop l;
	const char *worker_out; /* --loop-worker-out: a printf pattern of the workers' files */
};

struct worker {
	pthread_t thread;
	struct testsrc_emitter e;
	const struct opts *o;
	unsigned index;
};

static void usage(FILE *out)
{
	fputs(
	    "usage: tally-testsrc -o FILE [workload] [faults] [pipeline]\n"
	    "workload (per thread): --kernels N --driver-kernels N --memcpys N --memsets N\n"
	    "  --syncs N --ranges N --marks N --names N --devices N --seed N --threads N\n"
	    "  --rate RECORDS_PER_S --t0 NS --stacks N (launch c from Python stack c % N)\n"
	    "  --mem-allocs N (N device allocations, then their releases)\n"
	    "  --host N (host sampling, format 1.3: N samples per thread of three threads, N/10\n"
	    "  blocking calls; testsrc.h says what) --host-torn-every K --host-dropped N\n"
	    "  --host-starved (the launching thread waits for a loader that is on the CPU)\n"
	    "  --host-starved-rare (as --host-starved, the loader on the CPU 1 sample in 20)\n"
	    "faults: --bad-time-every N --orphan-launches N --orphan-gpu N --unknown-kind N\n"
	    "  --invalid-tail --in-flight (a buffer still in CUPTI at stop) --kill (end with\n"
	    "  no closing flush, like SIGKILL) --starve (no consumer until the end)\n"
	    "  --slow-walk-ns N --write-fail-after BYTES --write-errno EIO|ENOSPC|0 (0: short\n"
	    "  writes) --write-fail-count N\n"
	    "pipeline: --pool N --buffer-size BYTES --slice-ms N --batch N\n"
	    "shapes: --streams N --range-every N (NVTX range \"iter\" around every N launches)\n"
	    "  --scale NAME_INDEX:FACTOR (that kernel name lasts FACTOR times longer)\n"
	    "  --swap-at K (launches K and K+1 swap names) --idle-at K:MS[:DROPS] (before\n"
	    "  launch K the GPU idles MS ms; CUPTI drops DROPS records halfway; the clock is\n"
	    "  then paced to real time; repeatable)\n"
	    "steps (exact times, for the analyses): --steps N --step-kernels K --kernel-us U\n"
	    "  --launch-us L --copy-us C --comm-us M --comm-at-us A --sleep-us S --gap-us G\n"
	    "  --jitter-us J --mem-mb MB (see testsrc_run_steps in testsrc.h)\n"
	    "  --realtime-shift-s S (the session says it started S seconds later)\n"
	    "loops (the step verdicts, testsrc_loop_run in testsrc.h): --loop --loop-steps N\n"
	    "  --loop-kernels K --loop-kernel-us U --loop-launch-us L --loop-data-us D\n"
	    "  --loop-host-us H --loop-comm-us C --loop-startup-ms S --loop-tail-ms T --loop-sync\n"
	    "  --loop-no-ranges --loop-osrt --loop-workers N --loop-worker-out PREFIX "
	    "(PREFIXk.tally)\n"
	    "  --loop-call-stacks (loss.item()'s call carries its stack, as with --python-stacks)\n"
	    "environment: RANK=N records the session as rank N (RANK=N), as the collector does\n",
	    out);
}

enum {
	O_KERNELS = 256,
	O_DRIVER,
	O_MEMCPYS,
	O_MEMSETS,
	O_SYNCS,
	O_RANGES,
	O_MARKS,
	O_NAMES,
	O_DEVICES,
	O_SEED,
	O_THREADS,
	O_RATE,
	O_T0,
	O_BADTIME,
	O_ORPH_L,
	O_ORPH_G,
	O_UNKNOWN,
	O_INVALID,
	O_INFLIGHT,
	O_KILL,
	O_STARVE,
	O_SLOW,
	O_FAIL_AFTER,
	O_FAIL_ERRNO,
	O_FAIL_COUNT,
	O_POOL,
	O_BUFSZ,
	O_SLICE,
	O_BATCH,
	O_STREAMS,
	O_RANGE_EVERY,
	O_SCALE,
	O_SWAP,
	O_IDLE,
	O_STACKS,
	O_MEM,
	O_STEPS,
	O_STEP_KERNELS,
	O_KERNEL_US,
	O_LAUNCH_US,
	O_COPY_US,
	O_COMM_US,
	O_COMM_AT_US,
	O_SLEEP_US,
	O_GAP_US,
	O_JITTER_US,
	O_MEM_MB,
	O_SHIFT,
	O_HOST,
	O_HOST_TORN,
	O_HOST_DROPPED,
	O_HOST_STARVED,
	O_HOST_STARVED_RARE,
	O_LOOP,
	O_LOOP_STEPS,
	O_LOOP_KERNELS,
	O_LOOP_KERNEL_US,
	O_LOOP_LAUNCH_US,
	O_LOOP_DATA_US,
	O_LOOP_HOST_US,
	O_LOOP_COMM_US,
	O_LOOP_STARTUP_MS,
	O_LOOP_TAIL_MS,
	O_LOOP_SYNC,
	O_LOOP_NO_RANGES,
	O_LOOP_OSRT,
	O_LOOP_WORKERS,
	O_LOOP_WORKER_OUT,
	O_LOOP_CALL_STACKS,
};

static const struct option longopts[] = {
    {"kernels", 1, NULL, O_KERNELS},
    {"driver-kernels", 1, NULL, O_DRIVER},
    {"memcpys", 1, NULL, O_MEMCPYS},
    {"memsets", 1, NULL, O_MEMSETS},
    {"syncs", 1, NULL, O_SYNCS},
    {"ranges", 1, NULL, O_RANGES},
    {"marks", 1, NULL, O_MARKS},
    {"names", 1, NULL, O_NAMES},
    {"devices", 1, NULL, O_DEVICES},
    {"seed", 1, NULL, O_SEED},
    {"threads", 1, NULL, O_THREADS},
    {"rate", 1, NULL, O_RATE},
    {"t0", 1, NULL, O_T0},
    {"bad-time-every", 1, NULL, O_BADTIME},
    {"orphan-launches", 1, NULL, O_ORPH_L},
    {"orphan-gpu", 1, NULL, O_ORPH_G},
    {"unknown-kind", 1, NULL, O_UNKNOWN},
    {"invalid-tail", 0, NULL, O_INVALID},
    {"in-flight", 0, NULL, O_INFLIGHT},
    {"kill", 0, NULL, O_KILL},
    {"starve", 0, NULL, O_STARVE},
    {"slow-walk-ns", 1, NULL, O_SLOW},
    {"write-fail-after", 1, NULL, O_FAIL_AFTER},
    {"write-errno", 1, NULL, O_FAIL_ERRNO},
    {"write-fail-count", 1, NULL, O_FAIL_COUNT},
    {"pool", 1, NULL, O_POOL},
    {"buffer-size", 1, NULL, O_BUFSZ},
    {"slice-ms", 1, NULL, O_SLICE},
    {"batch", 1, NULL, O_BATCH},
    {"streams", 1, NULL, O_STREAMS},
    {"range-every", 1, NULL, O_RANGE_EVERY},
    {"scale", 1, NULL, O_SCALE},
    {"swap-at", 1, NULL, O_SWAP},
    {"idle-at", 1, NULL, O_IDLE},
    {"stacks", 1, NULL, O_STACKS},
    {"mem-allocs", 1, NULL, O_MEM},
    {"steps", 1, NULL, O_STEPS},
    {"step-kernels", 1, NULL, O_STEP_KERNELS},
    {"kernel-us", 1, NULL, O_KERNEL_US},
    {"launch-us", 1, NULL, O_LAUNCH_US},
    {"copy-us", 1, NULL, O_COPY_US},
    {"comm-us", 1, NULL, O_COMM_US},
    {"comm-at-us", 1, NULL, O_COMM_AT_US},
    {"sleep-us", 1, NULL, O_SLEEP_US},
    {"gap-us", 1, NULL, O_GAP_US},
    {"jitter-us", 1, NULL, O_JITTER_US},
    {"mem-mb", 1, NULL, O_MEM_MB},
    {"realtime-shift-s", 1, NULL, O_SHIFT},
    {"host", 1, NULL, O_HOST},
    {"host-torn-every", 1, NULL, O_HOST_TORN},
    {"host-dropped", 1, NULL, O_HOST_DROPPED},
    {"host-starved", 0, NULL, O_HOST_STARVED},
    {"host-starved-rare", 0, NULL, O_HOST_STARVED_RARE},
    {"loop", 0, NULL, O_LOOP},
    {"loop-steps", 1, NULL, O_LOOP_STEPS},
    {"loop-kernels", 1, NULL, O_LOOP_KERNELS},
    {"loop-kernel-us", 1, NULL, O_LOOP_KERNEL_US},
    {"loop-launch-us", 1, NULL, O_LOOP_LAUNCH_US},
    {"loop-data-us", 1, NULL, O_LOOP_DATA_US},
    {"loop-host-us", 1, NULL, O_LOOP_HOST_US},
    {"loop-comm-us", 1, NULL, O_LOOP_COMM_US},
    {"loop-startup-ms", 1, NULL, O_LOOP_STARTUP_MS},
    {"loop-tail-ms", 1, NULL, O_LOOP_TAIL_MS},
    {"loop-sync", 0, NULL, O_LOOP_SYNC},
    {"loop-no-ranges", 0, NULL, O_LOOP_NO_RANGES},
    {"loop-osrt", 0, NULL, O_LOOP_OSRT},
    {"loop-workers", 1, NULL, O_LOOP_WORKERS},
    {"loop-worker-out", 1, NULL, O_LOOP_WORKER_OUT},
    {"loop-call-stacks", 0, NULL, O_LOOP_CALL_STACKS},
    {"output", 1, NULL, 'o'},
    {"help", 0, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_errno(const char *s)
{
	if (strcmp(s, "EIO") == 0)
		return EIO;
	if (strcmp(s, "ENOSPC") == 0)
		return ENOSPC;
	return atoi(s);
}

/* The steps of the analyses' tests (times in us, kept in ns); 0 if c is not one of them. */
static int parse_steps(struct opts *o, int c, const char *arg)
{
	struct testsrc_steps *s = &o->w.st;
	uint64_t ns = arg ? (uint64_t)(strtod(arg, NULL) * 1000.0 + 0.5) : 0;
	uint64_t *const us[] = {[O_KERNEL_US - O_KERNEL_US] = &s->kernel_ns,
				[O_LAUNCH_US - O_KERNEL_US] = &s->launch_ns,
				[O_COPY_US - O_KERNEL_US] = &s->copy_ns,
				[O_COMM_US - O_KERNEL_US] = &s->comm_ns,
				[O_COMM_AT_US - O_KERNEL_US] = &s->comm_at_ns,
				[O_SLEEP_US - O_KERNEL_US] = &s->sleep_ns,
				[O_GAP_US - O_KERNEL_US] = &s->gap_ns,
				[O_JITTER_US - O_KERNEL_US] = &s->jitter_ns};

	if (c == O_STEPS)
		s->steps = (unsigned)strtoul(arg, NULL, 0);
	else if (c == O_STEP_KERNELS)
		s->kernels = (unsigned)strtoul(arg, NULL, 0);
	else if (c == O_MEM_MB)
		s->mem_bytes = strtoull(arg, NULL, 0) << 20;
	else if (c == O_SHIFT)
		testsrc_realtime_shift_ns = (int64_t)(strtod(arg, NULL) * 1e9);
	else if (c >= O_KERNEL_US && c <= O_JITTER_US)
		*us[c - O_KERNEL_US] = ns;
	else
		return 0;
	return 1;
}

/* The loops of the step verdicts (testsrc_loop_run); 0 if c is not one of them. */
static int parse_loop(struct opts *o, int c, const char *arg)
{
	struct testsrc_loop *l = &o->l;
	uint64_t us = arg ? (uint64_t)(strtod(arg, NULL) * 1000.0 + 0.5) : 0;

	switch (c) {
	case O_LOOP:
		o->loop = true;
		o->cfg.stacks = true;
		return 1;
	case O_LOOP_STEPS:
		l->steps = (unsigned)strtoul(arg, NULL, 0);
		return 1;
	case O_LOOP_KERNELS:
		l->kernels = (unsigned)strtoul(arg, NULL, 0);
		return 1;
	case O_LOOP_WORKERS:
		l->workers = (unsigned)strtoul(arg, NULL, 0);
		return l->workers <= 2 ? 1 : -1;
	case O_LOOP_KERNEL_US:
		l->kernel_ns = us;
		return 1;
	case O_LOOP_LAUNCH_US:
		l->launch_ns = us;
		return 1;
	case O_LOOP_DATA_US:
		l->data_ns = us;
		return 1;
	case O_LOOP_HOST_US:
		l->host_ns = us;
		return 1;
	case O_LOOP_COMM_US:
		l->comm_ns = us;
		return 1;
	case O_LOOP_STARTUP_MS:
		l->startup_ns = us * 1000;
		return 1;
	case O_LOOP_TAIL_MS:
		l->tail_ns = us * 1000;
		return 1;
	case O_LOOP_SYNC:
		l->sync = true;
		return 1;
	case O_LOOP_NO_RANGES:
		l->no_ranges = true;
		return 1;
	case O_LOOP_OSRT:
		l->osrt = true;
		return 1;
	case O_LOOP_WORKER_OUT:
		o->worker_out = arg;
		return 1;
	case O_LOOP_CALL_STACKS:
		l->call_stacks = true;
		return 1;
	default:
		return 0;
	}
}

/* The shapes tally compare and gpu_gaps are tested with; 0 if c is not one of them. */
static int parse_shape(struct opts *o, int c, const char *arg, unsigned long long v)
{
	struct testsrc_idle *d = &o->w.idle[o->w.nidle];

	switch (c) {
	case O_STREAMS:
		o->w.streams = (unsigned)v;
		return 1;
	case O_RANGE_EVERY:
		o->w.range_every = (unsigned)v;
		return 1;
	case O_SCALE:
		o->w.scale_name = (unsigned)v + 1;
		return sscanf(arg, "%*u:%lf", &o->w.scale) == 1 ? 1 : -1;
	case O_SWAP:
		o->w.swap_at = (unsigned)v;
		return v ? 1 : -1;
	case O_IDLE:
		if (o->w.nidle == sizeof(o->w.idle) / sizeof(o->w.idle[0]))
			return -1;
		o->w.nidle++;
		return sscanf(arg, "%u:%u:%u", &d->at, &d->ms, &d->drops) >= 2 ? 1 : -1;
	default:
		return 0;
	}
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		unsigned long long v = optarg ? strtoull(optarg, NULL, 0) : 0;
		int shape = parse_shape(o, c, optarg, v);

		if (!shape)
			shape = parse_steps(o, c, optarg);
		if (!shape)
			shape = parse_loop(o, c, optarg);
		if (shape < 0) {
			usage(stderr);
			return -1;
		}
		if (shape)
			continue;
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case O_KERNELS:
			o->w.kernels = (unsigned)v;
			break;
		case O_DRIVER:
			o->w.driver_kernels = (unsigned)v;
			break;
		case O_MEMCPYS:
			o->w.memcpys = (unsigned)v;
			break;
		case O_MEMSETS:
			o->w.memsets = (unsigned)v;
			break;
		case O_SYNCS:
			o->w.syncs = (unsigned)v;
			break;
		case O_RANGES:
			o->w.ranges = (unsigned)v;
			break;
		case O_MARKS:
			o->w.marks = (unsigned)v;
			break;
		case O_NAMES:
			o->w.kernel_names = (unsigned)v;
			break;
		case O_DEVICES:
			o->w.device_records = (unsigned)v;
			break;
		case O_SEED:
			o->w.seed = (uint32_t)v;
			break;
		case O_THREADS:
			o->threads = (unsigned)v;
			break;
		case O_RATE:
			o->w.rate = v;
			break;
		case O_T0:
			o->w.t0 = v;
			break;
		case O_BADTIME:
			o->w.bad_time_every = (unsigned)v;
			break;
		case O_ORPH_L:
			o->w.orphan_launches = (unsigned)v;
			break;
		case O_ORPH_G:
			o->w.orphan_gpu = (unsigned)v;
			break;
		case O_UNKNOWN:
			o->w.unknown_kind = (unsigned)v;
			break;
		case O_INVALID:
			o->w.invalid_tail = true;
			break;
		case O_INFLIGHT:
			o->in_flight = true;
			break;
		case O_KILL:
			o->kill = true;
			break;
		case O_STARVE:
			o->starve = true;
			break;
		case O_SLOW:
			atomic_store(&testsrc_walk_delay_ns, v);
			break;
		case O_FAIL_AFTER:
			o->fault.fail_after = v;
			o->use_fault = true;
			break;
		case O_FAIL_ERRNO:
			o->fault.fail_errno = parse_errno(optarg);
			break;
		case O_FAIL_COUNT:
			o->fault.fail_count = v;
			break;
		case O_POOL:
			o->cfg.pool_buffers = (unsigned)v;
			break;
		case O_BUFSZ:
			o->cfg.buffer_size = (size_t)v;
			break;
		case O_SLICE:
			o->cfg.slice_ns = v * 1000000ull;
			break;
		case O_BATCH:
			o->cfg.batch_records = (unsigned)v;
			break;
		case O_STACKS:
			o->w.stacks = (unsigned)v;
			o->cfg.stacks = v > 0;
			break;
		case O_MEM:
			o->w.mem_allocs = (unsigned)v;
			break;
		case O_HOST:
			o->host.samples = (unsigned)v;
			o->host.calls = (unsigned)v / 10;
			o->cfg.stacks |= v > 0;
			break;
		case O_HOST_TORN:
			o->host.torn_every = (unsigned)v;
			break;
		case O_HOST_DROPPED:
			o->host.dropped_samples = (unsigned)v;
			break;
		case O_HOST_STARVED:
			o->host.starved = STARVED_FILL;
			break;
		case O_HOST_STARVED_RARE:
			o->host.starved = STARVED_RARE;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (!o->output) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct testsrc_workload w = wk->o->w;

	w.seed += wk->index;
	if (w.st.steps)
		testsrc_run_steps(&wk->e, &w, 5000000 + wk->index * 10000000u);
	testsrc_run(&wk->e, &w, 1 + wk->index * 10000000u);
	/* --in-flight: the first thread's last buffer stays with "CUPTI" at stop. */
	if (!(wk->o->in_flight && wk->index == 0))
		testsrc_flush(&wk->e);
	return NULL;
}

static uint64_t kinds_mask(const struct testsrc_workload *w)
{
	return 1u << TALLY_KIND_KERNEL | 1u << TALLY_KIND_MEMCPY | 1u << TALLY_KIND_MEMSET |
	       1u << TALLY_KIND_RUNTIME | (w->driver_kernels ? 1u << TALLY_KIND_DRIVER : 0) |
	       (w->syncs ? 1u << TALLY_KIND_SYNC : 0) |
	       (w->ranges || w->marks ? 1u << TALLY_KIND_NVTX_RANGE | 1u << TALLY_KIND_NVTX_MARK
				      : 0) |
	       (w->mem_allocs || w->st.mem_bytes ? 1u << TALLY_KIND_MEMORY : 0) |
	       (w->st.steps ? 1u << TALLY_KIND_NVTX_RANGE | 1u << TALLY_KIND_NVTX_MARK : 0);
}

static uint64_t host_kinds(const struct testsrc_host *h)
{
	return h->samples ? 1u << TALLY_KIND_CPU_SAMPLE | 1u << TALLY_KIND_OSRT : 0;
}

static int run(struct opts *o, int fd)
{
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct worker *wk;
	uint64_t t_start;
	unsigned i;
	int rc;

	if (o->use_fault) {
		o->fault.fd = fd;
		sink = (struct tally_sink){fault_sink_write, &o->fault, NULL, NULL};
	}
	o->cfg.consumer_thread = !o->starve;
	if (o->w.t0)
		testsrc_clock_start(o->w.t0);
	testsrc_session(&session, kinds_mask(&o->w) | host_kinds(&o->host));
	if (o->host.samples)
		testsrc_host_session(&session);
	rc = tally_pipeline_start(&o->cfg, &testsrc_source, &sink, &session);
	tally_buf_fini(&session);
	if (rc < 0) {
		fprintf(stderr, "tally-testsrc: pipeline start: %s\n", strerror(-rc));
		return 1;
	}
	/* with --t0 the samples start there too, as the records do: not after however long the
	 * pipeline took to start on a loaded machine (which moved them against the gaps) */
	t_start = o->w.t0 ? o->w.t0 : testsrc_now();
	wk = calloc(o->threads, sizeof(*wk));
	for (i = 0; i < o->threads; i++) {
		wk[i].o = o;
		wk[i].index = i;
		testsrc_emitter_init(&wk[i].e, 1000 + i, NULL, NULL);
		pthread_create(&wk[i].thread, NULL, worker_main, &wk[i]);
	}
	for (i = 0; i < o->threads; i++)
		pthread_join(wk[i].thread, NULL);
	free(wk);
	if (o->host.samples)
		testsrc_host_run(&o->host, t_start);
	if (o->kill) {
		tally_pipeline_tick(); /* what the periodic flush had written; then nothing */
		_exit(0);
	}
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	tally_pipeline_stop(&rep);
	printf("records %llu, bytes %llu, flush %llu ns, ledger %s\n",
	       (unsigned long long)rep.records, (unsigned long long)rep.bytes_written,
	       (unsigned long long)rep.flush_ns, rep.complete ? "clean" : "shows loss");
	return 0;
}

/* A worker of --loop, a fork child: its own trace of its samples, then it ends. */
static void loop_worker(struct opts *o, unsigned k, uint64_t t0)
{
	char path[4096];
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct tally_sink sink;
	int fd;

	snprintf(path, sizeof(path), "%s%u.tally", o->worker_out, k);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(1);
	sink = (struct tally_sink){tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	testsrc_session(&session, 1u << TALLY_KIND_CPU_SAMPLE | 1u << TALLY_KIND_OSRT);
	testsrc_host_session(&session);
	if (tally_pipeline_start(&o->cfg, &testsrc_source, &sink, &session) < 0)
		_exit(1);
	tally_buf_fini(&session);
	testsrc_loop_worker(&o->l, t0, k);
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	tally_pipeline_stop(&rep);
	close(fd);
	_exit(0);
}

/* --loop: the workers forked first (one clock: started before the fork), then the launcher. */
static int run_loop(struct opts *o, int fd)
{
	struct tally_sink sink = {tally_fd_write, (void *)(intptr_t)fd, NULL, NULL};
	struct tally_buf session = {0};
	struct tally_stop_report rep;
	struct testsrc_emitter e;
	uint64_t t0;
	unsigned k;
	pid_t pids[2];

	testsrc_clock_start(o->w.t0 ? o->w.t0 : testsrc_now());
	t0 = testsrc_now();
	if (o->l.workers && !o->worker_out) {
		fprintf(stderr, "tally-testsrc: --loop-workers needs --loop-worker-out\n");
		return 2;
	}
	for (k = 0; k < o->l.workers; k++) {
		fflush(NULL);
		if ((pids[k] = fork()) == 0)
			loop_worker(o, k, t0);
	}
	testsrc_session(&session, 1u << TALLY_KIND_KERNEL | 1u << TALLY_KIND_MEMCPY |
				      1u << TALLY_KIND_RUNTIME | 1u << TALLY_KIND_NVTX_RANGE |
				      1u << TALLY_KIND_NVTX_MARK | 1u << TALLY_KIND_CPU_SAMPLE |
				      1u << TALLY_KIND_OSRT);
	testsrc_host_session(&session);
	if (tally_pipeline_start(&o->cfg, &testsrc_source, &sink, &session) < 0) {
		fprintf(stderr, "tally-testsrc: pipeline start failed\n");
		return 1;
	}
	tally_buf_fini(&session);
	testsrc_emitter_init(&e, 1000, NULL, NULL);
	testsrc_loop_run(&e, &o->l, t0);
	testsrc_flush(&e);
	tally_pipeline_flush_begin(TALLY_FLUSH_API, 0);
	tally_pipeline_stop(&rep);
	for (k = 0; k < o->l.workers; k++)
		waitpid(pids[k], NULL, 0);
	printf("records %llu, ledger %s\n", (unsigned long long)rep.records,
	       rep.complete ? "clean" : "shows loss");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.threads = 1, .w = {.kernel_names = 4, .seed = 1}};
	int fd, rc;

	tally_pipeline_config_default(&o.cfg);
	o.fault.fail_after = UINT64_MAX;
	o.fault.fail_errno = EIO;
	o.fault.fail_count = UINT64_MAX;
	o.fault.short_max = 100;
	if (parse(argc, argv, &o) < 0)
		return 2;
	fd = open(o.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "tally-testsrc: %s: %s\n", o.output, strerror(errno));
		return 1;
	}
	rc = o.loop ? run_loop(&o, fd) : run(&o, fd);
	close(fd);
	return rc;
}
