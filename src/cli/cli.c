/* SPDX-License-Identifier: MIT */
/* Shared CLI helpers; see cli.h. */
#include "cli.h"
#include "clock.h"
#include "outfile.h"
#include "table.h"
#include "text.h"
#include "trace-set.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *tally_progname = "tally";

/* The message, whatever its arguments hold (a path from a directory, a name from a trace), under
 * the one escaping rule of text.h: one line, nothing a terminal would obey. */
static void put_message(const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fputs(msg ? tally_text_shown(msg) : "[out of memory]", stderr);
	fputc('\n', stderr);
	free(msg);
}

/* What to do when a file could not be opened for want of descriptors: the limit, and the fix. */
static void descriptors_hint(const char *fmt, va_list ap)
{
	struct rlimit rl;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!strstr(msg, strerror(EMFILE)) && !strstr(msg, strerror(ENFILE)))
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 0;
	fprintf(
	    stderr,
	    "%s:   this process may have %llu files open at once (RLIMIT_NOFILE, ulimit -n), and "
	    "tally reads with a few at a time: raise the limit (ulimit -n 1024), or give fewer "
	    "inputs to one command\n",
	    tally_progname, (unsigned long long)rl.rlim_cur);
}

int cli_error(int code, const char *fmt, ...)
{
	struct cli_colors c = cli_colors_for(stderr);
	va_list ap;

	fprintf(stderr, "%s: %serror:%s ", tally_progname, c.red, c.reset);
	va_start(ap, fmt);
	put_message(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	descriptors_hint(fmt, ap);
	va_end(ap);
	return code;
}

static void remove_outputs(int sig)
{
	outfile_remove_temporaries();
	raise(sig); /* SA_RESETHAND: the default action now, as if tally had not been here */
}

void cli_remove_outputs_on_signal(void)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};
	struct sigaction sa, cur;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = remove_outputs;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) /* one ignored (nohup) stays so */
		if (sigaction(sigs[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	/* once a command's output is renamed into place, they wait: it finishes, exit 0 */
	outfile_hold_signals(sigs, sizeof(sigs) / sizeof(sigs[0]));
}

void cli_warn(const char *fmt, ...)
{
	struct cli_colors c = cli_colors_for(stderr);
	va_list ap;

	fprintf(stderr, "%s: %swarning:%s ", tally_progname, c.yellow, c.reset);
	va_start(ap, fmt);
	put_message(fmt, ap);
	va_end(ap);
}

const char *const cli_report_formats[] = {
    [REPORT_FMT_TABLE] = "table", [REPORT_FMT_CSV] = "csv", [REPORT_FMT_JSON] = "json", NULL};

struct cli_colors cli_colors_for(FILE *stream)
{
	static const struct cli_colors none = {"", "", "", "", "", ""};
	static const struct cli_colors ansi = {"\033[31m", "\033[32m", "\033[33m",
					       "\033[1m",  "\033[2m",  "\033[0m"};
	const char *term = getenv("TERM");

	if (getenv("NO_COLOR") || !isatty(fileno(stream)) || (term && strcmp(term, "dumb") == 0))
		return none;
	return ansi;
}

uint64_t cli_now_ns(void)
{
	return tally_monotonic_ns();
}

void cli_progress_begin(struct cli_progress *p, const char *what)
{
	memset(p, 0, sizeof(*p));
	p->what = what;
	p->start_ns = cli_now_ns();
	p->enabled = isatty(STDERR_FILENO) && !getenv("TALLY_NO_PROGRESS");
}

static void cli_progress_update(struct cli_progress *p, uint64_t done, uint64_t total)
{
	uint64_t now;

	if (!p->enabled)
		return;
	now = cli_now_ns();
	/* Nothing for the first second, then at most ten updates a second. */
	if (now - p->start_ns < 1000000000ull || now - p->last_ns < 100000000ull)
		return;
	p->last_ns = now;
	p->shown = true;
	if (total)
		fprintf(stderr, "\r%s: %3.0f%%", p->what, 100.0 * (double)done / (double)total);
	else
		fprintf(stderr, "\r%s: %llu", p->what, (unsigned long long)done);
	fflush(stderr);
}

void cli_progress_callback(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress_update(ctx, done, total);
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = false;
}

/* The directory tally runs from (/proc/self/exe's), into exe; false when it cannot be known. */
static bool exe_dir(char *exe, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);
	char *slash;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	return true;
}

int cli_find_collector(char *out, size_t len)
{
	static const char *const rel[] = {
	    "../lib/tally/libtally.so",
	    "../collector/libtally.so", /* build tree */
	    "libtally.so",
	};
	const char *env = getenv("TALLY_COLLECTOR");
	char exe[4096];
	size_t i;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -ENOENT;
	}
	if (!exe_dir(exe, sizeof(exe)))
		return -ENOENT;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		snprintf(out, len, "%s", path);
		if (access(path, R_OK) == 0) {
			if (!realpath(path, out))
				snprintf(out, len, "%s", path);
			return 0;
		}
	}
	return -ENOENT;
}

int cli_docs_dir(char *out, size_t len)
{
	char exe[4096], path[4200], real[PATH_MAX];

	if (!exe_dir(exe, sizeof(exe)))
		return -ENOENT;
	/* BINDIR/../share/doc/tally/docs: the bundle's; /usr/share/doc/tally/docs in the .deb */
	snprintf(path, sizeof(path), "%s/../share/doc/tally/docs", exe);
	if (!realpath(path, real))
		return -ENOENT;
	snprintf(out, len, "%s", real);
	return 0;
}

void cli_warn_demangle_refused(void)
{
	uint64_t n = report_demangle_refused(), cut = report_texts_cut();

	if (cut)
		cli_warn("%" PRIu64 " name(s) or message(s) longer than %u bytes are cut there "
			 "(ending in \"[N bytes cut]\"), so that the output stays a small multiple "
			 "of the trace",
			 cut, REPORT_TEXT_MAX);
	if (n)
		cli_warn("%" PRIu64
			 " kernel name(s) are shown mangled: demangled they would exceed "
			 "%u KiB (or the mangled name exceeds %u KiB), as crafted names can",
			 n, REPORT_DEMANGLE_MAX_OUT >> 10, REPORT_DEMANGLE_MAX_IN >> 10);
}

void cli_warn_symbolizer_missing(void)
{
	const char *why = report_symbolizer_missing();
	struct report_symbols_said said;

	report_symbols_say(&said);
	if (why)
		cli_warn(
		    "native frames are named from the ELF symbol tables, without file:line (or "
		    "module+0xoffset where no symbol holds them): %s; install libdw1 (elfutils) "
		    "or put a libdw.so.1 on LD_LIBRARY_PATH",
		    why);
	if (said.frames_other_build)
		cli_warn(
		    "%" PRIu64 " native frame(s) read \"module+0xoffset (build differs)\": the "
		    "files here are other builds than the ones recorded, and tally never names "
		    "a frame from another build; give --symfs DIR with copies of the recording "
		    "machine's files, or record with a tally that names frames when the program "
		    "ends (docs/stats.md, \"Native frames\")",
		    said.frames_other_build);
	if (said.frames_unverified)
		cli_warn(
		    "%" PRIu64 " native frame(s) are named from files the trace has no build ID "
		    "to check against (a trace of format 1.3 or older, or a module built without "
		    "one): marked \"unverified\", they are right only if the files here are the "
		    "recorded builds",
		    said.frames_unverified);
	if (said.sections_cut)
		cli_warn("%" PRIu64
			 " trace(s) had their native frames named only in part when they "
			 "were recorded (time ran out, or tally record was stopped): the rest are "
			 "named from files here, where their build ID matches",
			 said.sections_cut);
}

int cli_set_symfs(void *opts, const char *arg, char *err, size_t len)
{
	struct stat st;

	(void)opts;
	if (stat(arg, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, len, "%s: not a directory", cli_text(arg));
		return -EINVAL;
	}
	report_symfs_set(arg);
	return 0;
}

int cli_output_check(const char *path, unsigned flags)
{
	char err[2 * PATH_MAX + 128];

	if (!path || strcmp(path, "-") == 0)
		return 0;
	if (outfile_check(path, flags, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_USAGE, "%s", cli_text(err));
	return 0;
}

int cli_inputs_hold(struct report_set *held, char *const *paths, size_t npaths)
{
	char err[PATH_MAX + 128];

	if (report_set_open(held, paths, npaths, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_UNREADABLE, "%s", cli_text(err));
	return 0;
}

void cli_inputs_release(struct report_set *held)
{
	report_set_close(held);
}

int cli_output_open(struct cli_output *o, const char *path, bool force)
{
	char err[PATH_MAX + 128];
	int rc;

	memset(o, 0, sizeof(*o));
	o->of.fd = -1;
	o->f = stdout;
	o->path = path && strcmp(path, "-") != 0 ? path : NULL;
	o->flags = force ? OUTFILE_FORCE : 0;
	if (!o->path)
		return 0;
	if ((rc = cli_output_check(path, o->flags)) != 0)
		return rc;
	if (outfile_open(&o->of, path, o->flags, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_ERROR, "%s", err);
	o->f = fdopen(o->of.fd, "w");
	if (!o->f) {
		outfile_abort(&o->of);
		return cli_error(TALLY_EXIT_ERROR, "%s: %s", path, strerror(errno));
	}
	o->of.fd = -1; /* o->f owns it */
	return 0;
}

int cli_output_close(struct cli_output *o, int write_rc)
{
	char err[PATH_MAX + 128];

	if (o->path && fclose(o->f) != 0 && write_rc == 0)
		write_rc = -errno;
	if (write_rc < 0) {
		if (o->path)
			outfile_abort(&o->of);
		return cli_error(TALLY_EXIT_ERROR, "%s: write failed: %s",
				 o->path ? o->path : "standard output", strerror(-write_rc));
	}
	if (o->path && outfile_commit(&o->of, o->flags, err, sizeof(err)) < 0)
		return cli_error(TALLY_EXIT_ERROR, "%s", err);
	return 0;
}
