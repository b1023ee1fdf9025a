/* SPDX-License-Identifier: MIT */
/*
 * tally record [options] -- PROGRAM ARGS: run PROGRAM with the collector injected into it and
 * every process it starts, forward the signals sent to us, return its exit status, and end by
 * saying, for every file written, its size, record counts and verdict (docs/record.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "collect-env.h"
#include "doctor.h"
#include "forward.h"
#include "grow.h"
#include "json.h"
#include "outfile.h"
#include "pattern.h"
#include "record-run.h"
#include "symbolize.h"
#include "trace-set.h"
#include "units.h"
#include "writer.h"

struct record_opts {
	struct collect_opts c;
	bool quiet, json, skip_checks;
	const char *json_path; /* --json=FILE; plain --json goes to standard error */
	bool force;	       /* --force (or TALLY_FORCE): for the trace and --json=FILE alike */
};

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t told_to_stop; /* a signal that ends programs came to tally */

/* --json or --json=FILE ("-" or nothing: standard error) */
static int set_json(void *opts, const char *arg, char *err, size_t len)
{
	struct record_opts *o = opts;

	o->json = true;
	o->json_path = arg && *arg && strcmp(arg, "-") != 0 ? arg : NULL;
	return 0;
}

#define S struct record_opts
static const struct cli_option record_options[] = {
    CLI_BOOL(S, 'q', "quiet", quiet, "print nothing after the run but problems"),
    CLI_CALLBACK_OPTARG(0, "json", "FILE", set_json,
			"the closing summary as JSON, on standard error or into FILE (never\n"
			"into the program's standard output; docs/record.md); FILE is\n"
			"replaced only with --force, as the trace is"),
    CLI_BOOL(S, 0, "no-checks", skip_checks, "do not stop on the doctor's blocking findings"),
    CLI_GROUP(S, c, collect_options, "recording options (also for tally env)"),
    CLI_END,
};
#undef S

static const struct cli_command record_command = {
    .usage = "tally record [options] [--] PROGRAM [ARGS...]",
    .about = "Run PROGRAM and record what it does on the GPU: kernels, copies, memsets, CUDA\n"
	     "API calls and NVTX ranges, with the ledger that proves the trace complete.\n"
	     "Children (fork, exec, multiprocessing) are followed, each into its own file.\n"
	     "Before the run, the doctor's blocking checks (tally doctor) must pass.\n"
	     "Exit status: the program's own (128+N if it died of signal N); 1 a blocking\n"
	     "check failed; 2 usage error; 4 tally itself failed; 126/127 the program could\n"
	     "not be run.",
    .options = record_options,
    .no_operand = "no program given: tally record [options] -- PROGRAM [ARGS]",
    .flags = CLI_STOP_AT_OPERAND,
};

/* Signals sent to tally itself (Slurm, kill) go on to the program; the terminal's own ^C
 * (SI_KERNEL) already reaches the whole foreground group, so it is not sent twice.  A signal sent
 * to the whole group (kill -- -PGID) comes to both of us: the copy goes by sigqueue, marked
 * (forward.h), and the collector drops it when the program had the original. */
static void forward(int sig, siginfo_t *info, void *uc)
{
	int saved = errno; /* the interrupted waitpid looks at it */

	(void)uc;
	if (sig != SIGCONT && sig != SIGUSR1 && sig != SIGUSR2)
		told_to_stop = 1;
	if (child_pid > 0 && (info->si_code == SI_USER || info->si_code == SI_QUEUE) &&
	    info->si_pid != child_pid)
		(void)sigqueue(child_pid, sig, tally_forward_value(info->si_pid));
	errno = saved;
}

/* A signal ignored when tally started (nohup's SIGHUP, a background job's SIGINT) stays ignored,
 * for us and for the program, which inherits it: the program must end as it would untraced. */
static void install_forwarding(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
	struct sigaction sa, cur;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

/* The one trace name the pattern makes, or "" when it makes one per process (%p, %n). */
static int fixed_trace_name(const struct collect_opts *c, char *path, size_t len)
{
	struct tally_pattern_vars vars = {.pid = getpid()};
	char err[PATH_MAX + 128];

	path[0] = '\0';
	if (strstr(collect_output(c), "%p") || strstr(collect_output(c), "%n"))
		return 0;
	if (tally_pattern_expand(c->output_abs, &vars, path, len, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "--output: %s", err);
	return 0;
}

/* path made absolute (its directory resolved, as the trace's is), for comparing names. */
static void absolute(const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX + 1];
	const char *slash = strrchr(path, '/');

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "",
			     slash ? slash + 1 : path) >= len)
		snprintf(out, len, "%s", path);
}

/*
 * Refuse to run if a file the run would write is taken, the same way for the trace and for
 * --json=FILE: the one name the pattern makes (names with %p/%n never are) or FILE exists and
 * --force is not given, or is anything but a regular file (--force replaces a regular file
 * only: outfile.h); and FILE may not be the trace itself.
 */
static int record_check_overwrite(const struct record_opts *o)
{
	char path[PATH_MAX], json[PATH_MAX], trace[PATH_MAX], err[PATH_MAX + 128];
	bool force = collect_value(&o->c, TS_FORCE);
	int rc;

	if ((rc = fixed_trace_name(&o->c, path, sizeof(path))) != 0)
		return rc;
	if (path[0] && outfile_check(path, force ? OUTFILE_FORCE : 0, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "%s%s", cli_text(err),
				 force ? "" : "; or use a pattern with %p or %n");
	if (!o->json_path)
		return 0;
	absolute(o->json_path, json, sizeof(json));
	absolute(path, trace, sizeof(trace));
	if (path[0] && strcmp(json, trace) == 0)
		return cli_error(TALLY_EXIT_USAGE,
				 "--json=%s is the trace this run writes (-o): name another file",
				 cli_text(o->json_path));
	if (outfile_check(o->json_path, force ? OUTFILE_FORCE : 0, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "--json: %s", cli_text(err));
	return 0;
}

static void make_manifest(char *manifest, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(manifest, len, "%s/tally-manifest-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(manifest);
	if (fd < 0) {
		/* Without a manifest the summary is lost, not the recording: go on. */
		cli_warn("cannot create %s (%s): no summary at the end", manifest, strerror(errno));
		manifest[0] = '\0';
		return;
	}
	close(fd);
}

/* c NULL: untraced (tally control's baseline), the same program with nothing injected.  When
 * execvp fails, its errno goes up the close-on-exec pipe failed_fd: the parent then knows the
 * program never ran (an exit status of 127 could also be the program's own). */
static void child_exec(const struct collect_opts *c, const char *manifest, char **argv,
		       unsigned flags, int failed_fd)
{
	struct env_var vars[COLLECT_ENV_MAX];
	size_t n = c ? collect_env(c, vars, COLLECT_ENV_MAX) : 0, i;
	char pid[32];
	int err;

	for (i = 0; i < n; i++)
		setenv(vars[i].name, vars[i].value, 1);
	if (c && manifest[0])
		setenv("TALLY_MANIFEST", manifest, 1);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (c)
		setenv("TALLY_ROOT_PID", pid, 1);
	if (flags & RECORD_RUN_STDOUT_TO_STDERR)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	execvp(argv[0], argv);
	err = errno;
	fprintf(stderr, "tally record: cannot run %s: %s\n", cli_text(argv[0]), strerror(err));
	if (write(failed_fd, &err, sizeof(err)) < 0)
		err = errno; /* the exit status below still says it */
	_exit(err == ENOENT ? 127 : 126);
}

/* execvp's errno from the child, or 0 when the program was started (the pipe closed on exec). */
static int exec_failure(int fd)
{
	int err = 0;
	ssize_t n;

	while ((n = read(fd, &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(fd);
	return n == (ssize_t)sizeof(err) ? err : 0;
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return TALLY_EXIT_ERROR;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return TALLY_EXIT_ERROR;
}

/* ---- after the run: what was written --------------------------------------------------- */

static bool add_written(struct record_run *run, size_t *cap, long pid, const char *path)
{
	if (!tally_grow_in(&run->files, cap, run->nfiles + 1, sizeof(*run->files)))
		return false;
	snprintf(run->files[run->nfiles].path, sizeof(run->files[0].path), "%s", path);
	run->files[run->nfiles].pid = pid;
	run->files[run->nfiles++].ended = false;
	return true;
}

/* A "quiet PID NAME" line: a process that recorded nothing, counted by name. */
static void add_quiet(struct record_run *run, const char *name)
{
	size_t max = sizeof(run->quiet) / sizeof(run->quiet[0]), i;

	run->nquiet++;
	for (i = 0; i < run->nquiet_names && strcmp(run->quiet[i].name, name) != 0; i++)
		;
	if (i == run->nquiet_names) {
		i = run->nquiet_names < max - 1 ? run->nquiet_names : max - 1;
		if (i == run->nquiet_names)
			run->nquiet_names++;
		snprintf(run->quiet[i].name, sizeof(run->quiet[i].name), "%.15s",
			 i == max - 1 ? "others" : name);
	}
	run->quiet[i].count++;
}

/* Files named in the manifest ("start PID PATH" lines), however many (a job may fork
 * thousands), the "off PID WHY" refusals, counted and written to off_out, the "note PID
 * TEXT" lines, written there too, and the processes that recorded nothing ("quiet PID NAME"). */
static void read_manifest(const char *manifest, struct record_run *run, FILE *off_out)
{
	FILE *f = manifest[0] ? fopen(manifest, "r") : NULL;
	char line[PATH_MAX + 512];
	size_t cap = 0, i;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long pid;
		int at = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "start %ld %n", &pid, &at) == 1 && at) {
			if (!add_written(run, &cap, pid, line + at))
				fprintf(off_out, "  pid %ld: out of memory listing its file\n",
					pid);
		} else if (sscanf(line, "end %ld %n", &pid, &at) == 1) {
			for (i = 0; i < run->nfiles; i++)
				if (run->files[i].pid == pid)
					run->files[i].ended = true;
		} else if (sscanf(line, "off %ld %n", &pid, &at) == 1) {
			run->nrefused++;
			fprintf(off_out, "  pid %ld not recorded: %s\n", pid, line + at);
		} else if (sscanf(line, "note %ld %n", &pid, &at) == 1) {
			/* what the trace itself may never say (its descriptor lost) */
			fprintf(off_out, "  pid %ld: %s\n", pid, line + at);
		} else if (sscanf(line, "quiet %ld %n", &pid, &at) == 1 && at) {
			add_quiet(run, line + at);
		}
	}
	fclose(f);
}

static void print_counts(FILE *out, const struct tally_section *s)
{
	unsigned k;
	bool first = true;

	fprintf(out, "%" PRIu64 " records", s->records_total);
	for (k = 1; k < TALLY_KIND_MAX; k++) {
		if (!s->records[k])
			continue;
		fprintf(out, "%s%s %" PRIu64, first ? " (" : ", ", tally_kind_name(k),
			s->records[k]);
		first = false;
	}
	fputs(first ? "" : ")", out);
}

/* A full disk, in words: what the ledger says of it (the verdict's reasons say the rest). */
static bool disk_filled(const struct tally_section *s)
{
	return s->ledger.v[TALLY_C_WRITE_FAILURES] && s->ledger.v[TALLY_C_WRITE_ERRNO] == ENOSPC;
}

static void say_disk_filled(FILE *out, const char *path, const struct tally_section *s)
{
	const uint64_t *c = s->ledger.v;
	uint64_t origin = tally_section_origin(s), at = c[TALLY_C_WRITE_FIRST_FAILED_AT];

	if (!disk_filled(s))
		return;
	fprintf(out, "tally: the disk filled while recording %s: %" PRIu64 " bytes lost",
		cli_text(path), c[TALLY_C_BYTES_LOST]);
	if (at && origin && at >= origin)
		fprintf(out, " from +%.3f s", (double)(at - origin) / 1e9);
	fprintf(out, "; %s\n",
		s->has_final ? "its final ledger says what and when"
			     : "the file ends without its final ledger");
}

/* GPU metrics that were asked for and not recorded (refused, unsupported, busy, stopped): said
 * once per reason for the whole run, however many processes met it.  Another process sampling
 * a device is how it should be, and is not said. */
struct metric_said {
	char said[8][1536]; /* "why\n  fix: remedy" */
	size_t n;
};

static void say_gpu_metrics(const struct tally_section *s, struct metric_said *ms)
{
	size_t i, k;

	for (i = 0; ms && i < s->ngpu_metrics; i++) {
		const struct tally_gpu_metrics *g = &s->gpu_metrics[i];
		char line[1536];

		if (g->state == TALLY_GM_SAMPLED || g->state == TALLY_GM_ELSEWHERE)
			continue;
		snprintf(line, sizeof(line), "%s: %.700s%s%.600s",
			 tally_gpu_metrics_state_name(g->state), cli_text(g->why ? g->why : "?"),
			 g->remedy ? "\n  fix: " : "", g->remedy ? cli_text(g->remedy) : "");
		for (k = 0; k < ms->n && strcmp(ms->said[k], line) != 0; k++)
			;
		if (k == ms->n && ms->n < sizeof(ms->said) / sizeof(ms->said[0]))
			memcpy(ms->said[ms->n++], line, sizeof(line));
	}
}

static bool summarize_file(FILE *out, struct tally_json *j, const struct record_written *w,
			   struct metric_said *ms)
{
	struct cli_colors col = cli_colors_for(out);
	char err[512], size[32], *path = (char *)w->path;
	const struct tally_verdict *v;
	const struct tally_section *s;
	struct report_set set;
	bool complete;
	size_t i;

	if (report_set_read(&set, &path, 1, err, sizeof(err)) < 0 || !set.nsections) {
		if (j) {
			tally_json_object_begin(j);
			tally_json_field_string(j, "path", w->path);
			tally_json_field_string(j, "verdict", "UNREADABLE");
			tally_json_object_end(j);
		} else {
			fprintf(out, "  %s: unreadable: %s\n", cli_text(w->path),
				set.ninputs ? "no session" : cli_text(err));
		}
		report_set_close(&set);
		return false;
	}
	s = set.sections[0]->s;
	v = &set.sections[0]->verdict;
	say_gpu_metrics(s, ms);
	if (j) {
		tally_json_object_begin(j);
		tally_json_field_string(j, "path", w->path);
		tally_json_field_int(j, "pid", w->pid);
		tally_json_field_uint(j, "size", set.inputs[0].f->size);
		tally_json_field_uint(j, "records", s->records_total);
		tally_json_field_string(j, "verdict", v->complete ? "COMPLETE" : "INCOMPLETE");
		tally_json_field_bool(j, "disk_filled", disk_filled(s));
		tally_json_name(j, "reasons");
		tally_json_array_begin(j);
		for (i = 0; i < v->nreasons; i++)
			tally_json_string(j, v->reasons[i].text);
		tally_json_array_end(j);
		tally_json_object_end(j);
	} else {
		fprintf(out, "  %s: %s, ", cli_text(w->path),
			tally_fmt_bytes(size, sizeof(size), set.inputs[0].f->size));
		print_counts(out, s);
		fprintf(out, ", %s%s%s\n", v->complete ? col.green : col.red,
			v->complete ? "COMPLETE" : "INCOMPLETE", col.reset);
		for (i = 0; i < v->nreasons; i++)
			fprintf(out, "    - %s\n", cli_text(v->reasons[i].text));
		say_disk_filled(out, w->path, s);
	}
	complete = v->complete;
	report_set_close(&set);
	return complete;
}

/* Where --json goes: standard error, or FILE (replaced only if it is a regular file). */
static FILE *json_open(const struct record_opts *o, struct outfile *of)
{
	char err[PATH_MAX + 128];
	FILE *f;

	if (!o->json_path)
		return stderr;
	if (outfile_open(of, o->json_path, o->force ? OUTFILE_FORCE : 0, err, sizeof(err)) < 0) {
		cli_warn("--json: %s", err);
		return NULL;
	}
	f = fdopen(of->fd, "w");
	if (!f)
		outfile_abort(of);
	else
		of->fd = -1; /* f owns it */
	return f;
}

static void json_close(const struct record_opts *o, FILE *f, struct outfile *of)
{
	char err[PATH_MAX + 128];

	if (f == stderr)
		return;
	if (fclose(f) != 0 ||
	    outfile_commit(of, (o->force ? OUTFILE_FORCE : 0) | OUTFILE_KEEP_SIGNALS, err,
			   sizeof(err)) < 0)
		cli_warn("--json=%s: not written", o->json_path);
	outfile_abort(of);
}

/* --json: never into standard output, which is the program's. */
static void summarize_json(const struct record_opts *o, const struct record_run *run)
{
	struct outfile of = {.fd = -1};
	FILE *f = json_open(o, &of);
	struct tally_json j;
	size_t i;

	if (!f)
		return;
	tally_json_init(&j, f, true);
	tally_json_object_begin(&j);
	tally_json_field_int(&j, "exit_status", run->status);
	tally_json_field_uint(&j, "not_recorded", run->nrefused);
	tally_json_field_uint(&j, "recorded_nothing", run->nquiet);
	tally_json_name(&j, "files");
	tally_json_array_begin(&j);
	for (i = 0; i < run->nfiles; i++)
		summarize_file(f, &j, &run->files[i], NULL);
	tally_json_array_end(&j);
	tally_json_object_end(&j);
	tally_json_finish(&j);
	json_close(o, f, &of);
}

static void summarize(const struct record_opts *o, const struct record_run *run)
{
	struct metric_said ms = {.n = 0};
	FILE *out = stderr;
	size_t n = run->nfiles, i;

	if (o->json) {
		summarize_json(o, run);
		return;
	}
	if (o->quiet)
		out = fopen("/dev/null", "w");
	if (!out)
		return;
	fprintf(out, "tally: program exited with status %d\n", run->status);
	for (i = 0; i < run->noff; i++)
		fprintf(out, "%s", run->off[i]);
	/* The lines above already say why when processes refused: do not guess another reason. */
	if (!n && run->nrefused)
		fprintf(out, "tally: no file written (%zu process(es) not recorded, above)\n",
			run->nrefused);
	else if (!n && run->nquiet)
		fprintf(out,
			"tally: no file written: no process of the program recorded anything\n");
	else if (!n)
		fprintf(out, "tally: no file written: the program never initialised CUDA or used "
			     "NVTX (or was not a dynamically linked program)\n");
	else
		fprintf(out, "tally: %zu file(s) written:\n", n);
	for (i = 0; i < n; i++)
		summarize_file(out, NULL, &run->files[i], &ms);
	if (run->nquiet) {
		fprintf(out,
			"tally: %" PRIu64 " process(es) or exec'd image(s) recorded nothing and "
			"left no file:",
			run->nquiet);
		for (i = 0; i < run->nquiet_names; i++)
			fprintf(out, "%s %s %" PRIu64, i ? "," : "", cli_text(run->quiet[i].name),
				run->quiet[i].count);
		fprintf(out, "\n");
	}
	/* Said even with --quiet: metrics were asked for and are missing. */
	for (i = 0; i < ms.n; i++)
		fprintf(stderr, "tally: GPU metrics not recorded, %s\n", ms.said[i]);
	if (out != stderr)
		fclose(out);
}

/*
 * Before the run: the doctor's blocking checks (the collector missing, the output unwritable or
 * full, a driver that is there but does not work), so that a run does not end in an empty or lost
 * trace.  --no-checks goes on anyway.
 */
int record_preflight(const struct collect_opts *c)
{
	struct tally_doctor_opts d = {
	    .pattern = c->output_abs,
	    .collector = c->collector,
	    .flags = TALLY_DOCTOR_BLOCKING_ONLY,
	};
	struct tally_doctor_report rep;
	bool blocked;

	if (tally_doctor_run(&d, &rep) < 0)
		return cli_error(TALLY_EXIT_ERROR, "out of memory");
	blocked = tally_doctor_blocking(&rep, stderr);
	tally_doctor_report_fini(&rep);
	if (blocked)
		return cli_error(TALLY_EXIT_FAIL, "not recording: the trace would be empty or lost "
						  "(above); tally doctor says more, --no-checks "
						  "records anyway");
	return 0;
}

/* ---- one run, shared with tally control ----------------------------------------------- */

/* The manifest's lines into run: the files written, and the "off" refusals as text. */
static void collect_written(struct record_run *run, const char *manifest)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return;
	read_manifest(manifest, run, mem);
	fclose(mem);
	if (buf && *buf && (run->off = calloc(1, sizeof(*run->off)))) {
		run->off[0] = buf;
		run->noff = 1;
		buf = NULL;
	}
	free(buf);
}

/* A process that ended without its close (SIGKILL, a crash) leaves the room it kept beside its
 * trace for the final ledger (tally_room_keep): 64 KiB of nothing, removed here. */
static void remove_rooms_left(const struct record_run *run)
{
	char room[PATH_MAX];
	size_t i;

	for (i = 0; i < run->nfiles; i++)
		if (!run->files[i].ended && tally_room_path(run->files[i].path, room, sizeof(room)))
			(void)unlink(room);
}

int record_run_program(const struct collect_opts *c, char **argv, unsigned flags,
		       struct record_run *run)
{
	char manifest[PATH_MAX] = "";
	int failed[2];
	uint64_t t0;
	pid_t pid;

	memset(run, 0, sizeof(*run));
	if (pipe2(failed, O_CLOEXEC) < 0)
		return cli_error(TALLY_EXIT_ERROR, "pipe: %s", strerror(errno));
	if (c)
		make_manifest(manifest, sizeof(manifest));
	install_forwarding();
	fflush(NULL);
	t0 = cli_now_ns();
	pid = fork();
	if (pid < 0) {
		close(failed[0]);
		close(failed[1]);
		return cli_error(TALLY_EXIT_ERROR, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(failed[0]);
		child_exec(c, manifest, argv, flags, failed[1]);
	}
	close(failed[1]);
	child_pid = pid;
	run->exec_errno = exec_failure(failed[0]);
	run->status = wait_child(pid);
	run->wall_ns = cli_now_ns() - t0;
	child_pid = 0;
	if (manifest[0]) {
		collect_written(run, manifest);
		unlink(manifest);
	}
	remove_rooms_left(run);
	return 0;
}

void record_run_fini(struct record_run *run)
{
	size_t i;

	for (i = 0; i < run->noff; i++)
		free(run->off[i]);
	free(run->off);
	free(run->files);
	memset(run, 0, sizeof(*run));
}

/* ---- after the run: the native frames named on this machine ------------------------------ */

#define SYMBOLS_TIMEOUT_S 10

/* TALLY_SYMBOLS_TIMEOUT: seconds for naming every trace's native frames (0: none named). */
static uint64_t symbols_bound_ns(void)
{
	const char *v = getenv("TALLY_SYMBOLS_TIMEOUT");
	char *end = NULL;
	double s = v && *v ? strtod(v, &end) : SYMBOLS_TIMEOUT_S;

	if (v && *v && (*end || !(s >= 0 && s <= 3600))) {
		cli_warn("TALLY_SYMBOLS_TIMEOUT=%s is not a number of seconds from 0 to 3600: %d s",
			 cli_text(v), SYMBOLS_TIMEOUT_S);
		s = SYMBOLS_TIMEOUT_S;
	}
	return (uint64_t)(s * 1e9);
}

/* A trace is appended to only when its process is gone: it closed it, or it no longer exists. */
static bool process_gone(const struct record_written *w)
{
	return w->ended || (kill((pid_t)w->pid, 0) < 0 && errno == ESRCH);
}

/* Each trace's native frames named from the very files the program ran, into the trace, before a
 * machine with other builds reads it (docs/record.md, "Native frames' names"). */
static void name_native_frames(const struct collect_opts *c, const struct record_run *run)
{
	uint64_t bound = symbols_bound_ns(), deadline = cli_now_ns() + bound;
	struct report_symbolized res;
	char err[PATH_MAX + 128];
	size_t i;

	if (!collect_opts_native(c) || !bound)
		return;
	for (i = 0; i < run->nfiles; i++) {
		const char *path = run->files[i].path;
		bool gone = process_gone(&run->files[i]);

		if (!gone)
			snprintf(err, sizeof(err), "%s: its process is still running", path);
		if (!gone ||
		    report_symbolize_trace(path, deadline, bound, &told_to_stop, &res, err,
					   sizeof(err)) < 0 ||
		    (res.skipped && !res.no_frames))
			cli_warn("native frames not named: %s", cli_text(err));
		else if (!res.skipped && res.state != TALLY_SYMBOLS_COMPLETE)
			cli_warn(
			    "%s: %" PRIu64 " of %" PRIu64 " native frames named before %s; the "
			    "trace says so (TALLY_SYMBOLS_TIMEOUT gives more time)",
			    cli_text(path), res.named, res.frames,
			    res.state == TALLY_SYMBOLS_CUT ? "the time ran out" : "a signal came");
	}
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct record_run run;
	int first, rc;

	memset(&o, 0, sizeof(o));
	collect_opts_init(&o.c);
	if ((rc = cli_parse(&record_command, &o, argc, argv, &first)) != 0)
		return rc == CLI_HELP_SHOWN ? TALLY_EXIT_OK : rc;
	if ((rc = collect_opts_finish(&o.c)) != 0)
		return rc;
	o.force = collect_value(&o.c, TS_FORCE);
	if ((rc = record_check_overwrite(&o)) != 0)
		return rc;
	if (!o.skip_checks && (rc = record_preflight(&o.c)) != 0)
		return rc;
	rc = record_run_program(&o.c, argv + first, 0, &run);
	if (rc == 0) {
		name_native_frames(&o.c, &run);
		summarize(&o, &run);
		rc = run.status;
	}
	record_run_fini(&run);
	return rc;
}
