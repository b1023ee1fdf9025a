/* SPDX-License-Identifier: MIT */
/* Output name patterns and the JSON writer (checked by a real JSON parser, jansson). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grow.h"
#include "hashmap.h"
#include "json.h"
#include "outfile.h"
#include "pattern.h"
#include "ranks.h"
#include "scratch.h"
#include "settings.h"
#include "text.h"

static const char *fake_env(const char *name)
{
	if (strcmp(name, "RANK") == 0)
		return "3";
	if (strcmp(name, "EVIL") == 0)
		return "../../etc/passwd";
	if (strcmp(name, "DOTS") == 0)
		return "..";
	if (strcmp(name, "JOB") == 0)
		return "train job #7";
	return NULL;
}

static const char *taken[8];

static bool fake_exists(const char *path, void *ctx)
{
	size_t i;

	(void)ctx;
	for (i = 0; taken[i]; i++)
		if (strcmp(taken[i], path) == 0)
			return true;
	return false;
}

static void expand_ok(const char *pattern, const char *want)
{
	struct tally_pattern_vars v = {
	    .pid = 4242, .host = "node-7", .getenv = fake_env, .exists = fake_exists};
	char out[256], err[128];

	assert_int_equal(tally_pattern_expand(pattern, &v, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, want);
}

static void test_pattern(void **state)
{
	struct tally_pattern_vars v = {
	    .pid = 1, .host = "h", .getenv = fake_env, .exists = fake_exists};
	char out[256], err[128], small[8];

	(void)state;
	expand_ok("trace", "trace.tally");
	expand_ok("run.%p.%h.tally", "run.4242.node-7.tally");
	expand_ok("/out/rank%q{RANK}", "/out/rank3.tally");
	expand_ok("100%%", "100%.tally");
	/* values from outside cannot climb out of the directory or add levels */
	expand_ok("/out/%q{EVIL}", "/out/_._.._etc_passwd.tally");
	expand_ok("/out/%q{DOTS}/x", "/out/_./x.tally");
	expand_ok("/out/%q{JOB}", "/out/train_job__7.tally");
	expand_ok("/out/%q{UNSET}x", "/out/x.tally");
	/* %n: the smallest number not taken */
	taken[0] = "t1.tally";
	taken[1] = "t2.tally";
	expand_ok("t%n", "t3.tally");
	taken[0] = NULL;
	/* errors name the bad part */
	assert_int_equal(tally_pattern_expand("x%z", &v, out, sizeof(out), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "%z"));
	assert_int_equal(tally_pattern_expand("%q{", &v, out, sizeof(out), err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(tally_pattern_expand("%q{}", &v, out, sizeof(out), err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(tally_pattern_expand("", &v, out, sizeof(out), err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    tally_pattern_expand("longer-than-8", &v, small, sizeof(small), err, sizeof(err)),
	    -ENAMETOOLONG);
	assert_int_equal(tally_pattern_expand("%q{UNSET}", &v, out, sizeof(out), err, sizeof(err)),
			 0);
	assert_int_equal(v.unset_vars, 1);
}

/* Every string, however hostile, comes out as JSON that a real parser reads back unchanged. */
static void test_json_escaping(void **state)
{
	static const char *const hostile[] = {
	    "plain",
	    "quote \" backslash \\ slash /",
	    "control \x01\x02\x1f\t\n\r\b\f del \x7f",
	    "void f<int, std::pair<char, \"x\">>(T&&)",
	    "utf8 ядро κέρνελ カーネル 🚀",
	};
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);
	struct tally_json j;
	json_error_t jerr;
	json_t *root;

	(void)state;
	tally_json_init(&j, out, true);
	tally_json_object_begin(&j);
	tally_json_name(&j, "names");
	tally_json_array_begin(&j);
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		tally_json_string(&j, hostile[i]);
	tally_json_string(&j, "invalid \xff\xfe utf8 \xc0\xaf overlong");
	tally_json_array_end(&j);
	tally_json_field_uint(&j, "big", UINT64_MAX);
	tally_json_field_double(&j, "nan", 0.0 / 0.0);
	tally_json_name(&j, "empty");
	tally_json_object_begin(&j);
	tally_json_object_end(&j);
	tally_json_object_end(&j);
	tally_json_finish(&j);
	fclose(out);
	root = json_loads(buf, JSON_DECODE_INT_AS_REAL, &jerr);
	if (!root)
		fail_msg("jansson: %s at line %d: %s", jerr.text, jerr.line, buf);
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		assert_string_equal(
		    json_string_value(json_array_get(json_object_get(root, "names"), i)),
		    hostile[i]);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(root, "names"), i)),
	    "invalid \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd\xef\xbf\xbd overlong");
	assert_true(json_is_null(json_object_get(root, "nan")));
	assert_int_equal(json_object_size(json_object_get(root, "empty")), 0);
	json_decref(root);
	free(buf);
}

/* The documented forms are taken; every form that would select nothing is refused. */
static void test_ranks_grammar(void **state)
{
	static const char *const good[] = {"0", "7", "0,4-7", "3-3", "1,2,10-12", "999999999"};
	static const char *const bad[] = {"",	 "0..3", "all", "5-1", "0 1", "1,,2",	   "-1",
					  "0x1", "1,",	 ",1",	"1-",  "2-a", "1000000000"};
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(tally_ranks_valid(good[i], err, sizeof(err)));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_false(tally_ranks_valid(bad[i], err, sizeof(err)));
		assert_true(err[0] != '\0');
	}
}

static void test_text_printable(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"plain text", "plain text"},
	    {"caf\xc3\xa9", "caf\xc3\xa9"},	 /* UTF-8 kept */
	    {"a\nb", "a\\x0ab"},		 /* a newline cannot start a fake line */
	    {"\x1b[8mhidden", "\\x1b[8mhidden"}, /* nor a terminal escape hide one */
	    {"\xc2\x9b"
	     "2J",
	     "\\xc2\\x9b2J"},			 /* C1 CSI, as UTF-8 */
	    {"bad \xff\xfe", "bad \\xff\\xfe"},	 /* not UTF-8 */
	    {"\xe0\x80\x80", "\\xe0\\x80\\x80"}, /* overlong */
	    {"\xed\xa0\x80", "\\xed\\xa0\\x80"}, /* a surrogate */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = tally_text_printable(cases[i].in);

		assert_string_equal(t, cases[i].out);
		free(t);
	}
}

static void test_text_utf8(void **state)
{
	size_t n;
	char *t;

	(void)state;
	assert_true(tally_text_is_utf8("caf\xc3\xa9 \xf0\x9f\x98\x80", 10));
	assert_false(tally_text_is_utf8("caf\xe9", 4));
	assert_false(tally_text_is_utf8("\xc3", 1)); /* cut inside a character */
	t = tally_text_utf8("a\xff"
			    "b\xc3",
			    4, &n);
	assert_string_equal(t, "a\xef\xbf\xbd"
			       "b\xef\xbf\xbd");
	assert_int_equal(n, 8);
	assert_true(tally_text_is_utf8(t, n));
	free(t);
}

/* The one UTF-8 validator (text.c, also behind the JSON writer), at the edges RFC 3629 draws. */
static void test_text_utf8_seq(void **state)
{
	static const struct {
		const char *s;
		size_t n, want;
	} cases[] = {
	    {"A", 1, 1},
	    {"\xc2\x80", 2, 2},		/* U+0080, the first of two bytes */
	    {"\xc1\xbf", 2, 0},		/* U+007F written long */
	    {"\xc0\x80", 2, 0},		/* NUL written long */
	    {"\xdf\xbf", 2, 2},		/* U+07FF */
	    {"\xe0\xa0\x80", 3, 3},	/* U+0800 */
	    {"\xe0\x9f\xbf", 3, 0},	/* U+07FF written long */
	    {"\xed\x9f\xbf", 3, 3},	/* U+D7FF, just below the surrogates */
	    {"\xed\xa0\x80", 3, 0},	/* U+D800, a surrogate */
	    {"\xed\xbf\xbf", 3, 0},	/* U+DFFF, a surrogate */
	    {"\xee\x80\x80", 3, 3},	/* U+E000 */
	    {"\xef\xbf\xbf", 3, 3},	/* U+FFFF */
	    {"\xf0\x90\x80\x80", 4, 4}, /* U+10000 */
	    {"\xf0\x8f\xbf\xbf", 4, 0}, /* U+FFFF written long */
	    {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF, the last */
	    {"\xf4\x90\x80\x80", 4, 0}, /* U+110000 */
	    {"\xf5\x80\x80\x80", 4, 0}, /* a lead byte no code point has */
	    {"\x80", 1, 0},		/* a continuation byte alone */
	    {"\xe2\x82\xac", 2, 0},	/* the euro sign, cut after two bytes */
	    {"\xe2\x28\xa1", 3, 0},	/* a second byte that is not a continuation */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(tally_text_utf8_seq((const unsigned char *)cases[i].s, cases[i].n),
				 cases[i].want);
}

static char *write_file(const char *dir, const char *name, const char *text)
{
	char *p;
	FILE *f;

	assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static char *read_file(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Only regular files are replaced, and only with OUTFILE_FORCE; the temporary file is renamed
 * over the target at commit, and removed on abort. */
/* Doubling from 16, every new element zeroed, the old ones kept; a size that would overflow is
 * refused with the array left as it was. */
static void test_grow(void **state)
{
	size_t cap = 0, i;
	uint32_t *v = NULL, *t;

	(void)state;
	v = tally_grow(v, &cap, 1, sizeof(*v));
	assert_non_null(v);
	assert_int_equal(cap, 16);
	for (i = 0; i < 16; i++)
		assert_int_equal(v[i], 0);
	for (i = 0; i < 16; i++)
		v[i] = (uint32_t)i + 1;
	assert_ptr_equal(tally_grow(v, &cap, 16, sizeof(*v)), v); /* fits: unchanged */
	v = tally_grow(v, &cap, 100, sizeof(*v));
	assert_non_null(v);
	assert_int_equal(cap, 128);
	for (i = 0; i < 128; i++)
		assert_int_equal(v[i], i < 16 ? i + 1 : 0);
	t = tally_grow(v, &cap, SIZE_MAX / 2, sizeof(*v));
	assert_null(t);
	assert_int_equal(cap, 128);
	assert_int_equal(v[15], 16);
	free(v);
	/* a push or a resize whose bytes would pass SIZE_MAX fails, never allocates short */
	{
		size_t n = (size_t)1
			   << (sizeof(size_t) * 8 - 4); /* 2^60, full: 2^61 x 32 overflows */
		void *a = NULL;

		assert_null(tally_array_push(&a, &n, 32));
		assert_null(a);
		assert_null(tally_resize(NULL, SIZE_MAX / 4 + 1, 8));
		n = 0;
		for (i = 0; i < 100; i++) {
			uint32_t *slot = tally_array_push(&a, &n, sizeof(*slot));

			assert_non_null(slot);
			*slot = (uint32_t)i;
		}
		assert_int_equal(n, 100);
		for (i = 0; i < 100; i++)
			assert_int_equal(((uint32_t *)a)[i], i);
		free(a);
	}
}

/* The one hash table: removal keeps every other key findable (backward shift), and keys the
 * caller keeps itself stay apart when their hashes are equal. */
static const char *const colliding[] = {"alpha", "beta", "gamma", "delta"};

static bool same_word(void *ctx, uint32_t value)
{
	return strcmp(colliding[value - 1], ctx) == 0;
}

static void test_hashmap(void **state)
{
	struct tally_map m = {0};
	uint64_t k;
	size_t i;

	(void)state;
	for (k = 0; k < 5000; k++)
		assert_int_equal(tally_map_put(&m, k << 21, k & 7, (uint32_t)k + 1), 0);
	for (k = 0; k < 5000; k += 2)
		assert_int_equal(tally_map_del(&m, k << 21, k & 7), k + 1);
	assert_int_equal(tally_map_del(&m, 0, 0), 0); /* gone already */
	for (k = 0; k < 5000; k++)
		assert_int_equal(tally_map_get(&m, k << 21, k & 7), k % 2 ? k + 1 : 0);
	assert_int_equal(m.n, 2500);
	tally_map_fini(&m);
	/* four words under one hash: each found as itself */
	for (i = 0; i < 4; i++)
		assert_int_equal(tally_map_add(&m, 42, (uint32_t)i + 1), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(tally_map_find(&m, 42, same_word, (void *)colliding[i]), i + 1);
	assert_int_equal(tally_map_find(&m, 42, same_word, "epsilon"), 0);
	assert_int_equal(tally_map_find(&m, 43, same_word, "alpha"), 0);
	tally_map_fini(&m);
}

/* A child that commits FILE (final or not), then gets SIGTERM: its wait status. */
static int commit_then_term(const char *path, unsigned flags)
{
	static const int stop[] = {SIGTERM, SIGINT};
	pid_t pid = fork();
	int status = -1;

	if (pid == 0) {
		struct outfile o;
		char err[256];

		signal(SIGTERM, SIG_DFL);
		outfile_hold_signals(stop, 2);
		if (outfile_open(&o, path, OUTFILE_FORCE, err, sizeof(err)) < 0 ||
		    write(o.fd, "whole", 5) != 5 ||
		    outfile_commit(&o, OUTFILE_FORCE | flags, err, sizeof(err)) < 0)
			_exit(3);
		raise(SIGTERM); /* as the command finishes */
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* After a commit a stop signal waits: exit 0 and the output whole; after one that keeps the
 * signals (a CSV file of many) it ends the process as ever. */
static void test_outfile_final(void **state)
{
	const char *dir = scratch_new();
	char *out;
	int st;

	(void)state;
	assert_true(asprintf(&out, "%s/final", dir) > 0);
	st = commit_then_term(out, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_string_equal(read_file(out), "whole");
	st = commit_then_term(out, OUTFILE_KEEP_SIGNALS);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGTERM);
	assert_string_equal(read_file(out), "whole");
	free(out);
}

static void test_outfile(void **state)
{
	const char *dir = scratch_new();
	char err[512], *victim, *link, *out, *fifo, *hard;
	struct stat sb;
	struct outfile o;
	DIR *d;
	struct dirent *e;
	int n = 0;

	(void)state;
	victim = write_file(dir, "victim", "precious");
	assert_true(asprintf(&link, "%s/link", dir) > 0);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(outfile_open(&o, link, OUTFILE_FORCE, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "symbolic link"));
	assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(outfile_open(&o, fifo, OUTFILE_FORCE, err, sizeof(err)), -EPERM);
	assert_int_equal(outfile_open(&o, victim, 0, err, sizeof(err)), -EEXIST);

	assert_true(asprintf(&out, "%s/out", dir) > 0);
	assert_int_equal(outfile_open(&o, out, 0, err, sizeof(err)), 0);
	assert_int_equal(write(o.fd, "new", 3), 3);
	assert_int_equal(access(out, F_OK), -1); /* not there until committed */
	assert_int_equal(outfile_commit(&o, 0, err, sizeof(err)), 0);
	assert_string_equal(read_file(out), "new");

	assert_int_equal(outfile_open(&o, victim, OUTFILE_FORCE, err, sizeof(err)), 0);
	assert_int_equal(write(o.fd, "replaced", 8), 8);
	outfile_abort(&o); /* a failed write leaves the old file */
	assert_string_equal(read_file(victim), "precious");

	/* an input is refused by what it is, whatever the name: here through a hard link */
	assert_int_equal(stat(out, &sb), 0);
	assert_true(asprintf(&hard, "%s/hard", dir) > 0);
	assert_int_equal(linkat(AT_FDCWD, out, AT_FDCWD, hard, 0), 0);
	assert_int_equal(outfile_protect(out, sb.st_dev, sb.st_ino), 0);
	assert_int_equal(outfile_check(hard, OUTFILE_FORCE, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is an input"));
	assert_int_equal(outfile_open(&o, out, OUTFILE_FORCE, err, sizeof(err)), -EINVAL);
	assert_int_equal(outfile_check(victim, OUTFILE_FORCE, err, sizeof(err)), 0);
	outfile_unprotect(sb.st_dev, sb.st_ino);
	assert_int_equal(outfile_check(hard, OUTFILE_FORCE, err, sizeof(err)), 0);
	assert_int_equal(unlink(hard), 0);
	/* a directory to write into: only with OUTFILE_DIRECTORY, and with --force when it exists
	 */
	assert_int_equal(outfile_check(dir, OUTFILE_FORCE, err, sizeof(err)), -EPERM);
	assert_int_equal(outfile_check(dir, OUTFILE_DIRECTORY, err, sizeof(err)), -EEXIST);
	assert_int_equal(outfile_check(dir, OUTFILE_DIRECTORY | OUTFILE_FORCE, err, sizeof(err)),
			 0);
	assert_int_equal(outfile_check(out, OUTFILE_DIRECTORY | OUTFILE_FORCE, err, sizeof(err)),
			 -EPERM);

	d = opendir(dir); /* victim, link, fifo, out: no temporary file left */
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 4);
	scratch_remove();
	free(victim), free(link), free(fifo), free(out), free(hard);
}

/* The option's text to the variable's text, and the variable read back as the collector reads
 * it: the same value, or both refuse. */
static void contract(enum tally_setting_id id, const char *arg)
{
	const struct tally_setting *r = &tally_settings[id];
	char own[32], why[512];
	const char *env_text, *read_text;
	uint64_t by_option, by_env;
	int opt_rc = tally_setting_option(id, arg, own, sizeof(own), &env_text, why, sizeof(why));

	if (opt_rc < 0) { /* refused with a reason; the variable refuses the same text */
		assert_true(why[0] != '\0');
		/* an empty variable is an unset one; a bare duration is in each side's own unit */
		if (*arg && (r->type != SETTING_DURATION || strpbrk(arg, "smun"))) {
			setenv(r->env, arg, 1);
			assert_int_equal(
			    tally_setting_get(id, &by_env, &read_text, why, sizeof(why)), -EINVAL);
			assert_non_null(strstr(why, r->env)); /* the collector names the variable */
		}
		return;
	}
	if (r->type == SETTING_FLAG) /* the option alone turns it on */
		by_option = 1;
	else
		assert_int_equal(tally_setting_parse(id, arg ? arg : r->bare, true, &by_option, why,
						     sizeof(why)),
				 0);
	setenv(r->env, env_text, 1);
	assert_int_equal(tally_setting_get(id, &by_env, &read_text, why, sizeof(why)), 0);
	assert_int_equal(by_env, by_option);
}

/* One table for tally record and the collector: every default is accepted and in range, every
 * option's value means the same in the variable, and the values issue 35 found accepted by one
 * side only are refused by both, before the program runs. */
static void test_settings(void **state)
{
	static const char *const probes[] = {
	    "0",    "1",   "-1",    "x",   "",	  "32", "129", "20000", "20001", "4096",
	    "4095", "2.5", "500ms", "1us", "64k", "4M", "1e3", "nan",	"0x10",	 " 5"};
	char why[512], buf[160];
	const char *text;
	uint64_t v;
	size_t i, k;

	(void)state;
	for (i = 0; i < TALLY_SETTING_COUNT; i++) {
		const struct tally_setting *r = &tally_settings[i];

		assert_non_null(r->env);
		assert_non_null(r->help);
		unsetenv(r->env);
		assert_int_equal(tally_setting_get(i, &v, &text, why, sizeof(why)), 0);
		if (r->type == SETTING_NUMBER || r->type == SETTING_DURATION ||
		    r->type == SETTING_SIZE)
			assert_true((v >= r->min && v <= r->max) || (r->def_text && v == 0));
		tally_setting_describe(i, buf, sizeof(buf));
		if (!r->option)
			continue;
		for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++)
			if (r->type != SETTING_TEXT || r->check) /* free text takes any */
				contract(i, probes[k]);
		if (r->type == SETTING_FLAG || r->bare) /* the option alone */
			contract(i, NULL);
		unsetenv(r->env);
	}
	/* accepted by one side only before */
	contract(TS_TRACE, "cuda-launch-driver");
	assert_int_equal(
	    tally_setting_parse(TS_TRACE, "cuda-launch-driver,nvtx", true, &v, why, sizeof(why)),
	    0);
	assert_int_equal(v, TRACE_LAUNCH_DRIVER | TRACE_NVTX);
	assert_int_equal(tally_setting_parse(TS_DEVICES, "x", true, &v, why, sizeof(why)), -EINVAL);
	assert_int_equal(tally_setting_parse(TS_STACK_DEPTH, "-1", true, &v, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(tally_setting_parse(TS_STACK_DEPTH, "200", false, &v, why, sizeof(why)),
			 -EINVAL); /* refused, not clamped */
	/* a signal no handler can catch, or the program's own faults */
	for (i = 0; i < 5; i++) {
		static const char *const sig[] = {"9", "19", "11", "7", "6"};

		assert_int_equal(
		    tally_setting_parse(TS_SAMPLE_SIGNAL, sig[i], false, &v, why, sizeof(why)),
		    -EINVAL);
		assert_non_null(strstr(why, "signal"));
	}
	assert_int_equal(tally_setting_parse(TS_SAMPLE_SIGNAL, "40", false, &v, why, sizeof(why)),
			 0);
	/* GPU metrics' devices: any number of entries (docs/collector.md) */
	strcpy(buf, "0");
	for (i = 1; i < 70; i++)
		strcat(buf, i % 2 ? ",1" : ",0");
	assert_int_equal(tally_setting_parse(TS_GPU_METRICS, buf, false, &v, why, sizeof(why)), 0);
	assert_int_equal(v, 3);
	/* -o - is refused: a trace is a file */
	assert_int_equal(tally_setting_parse(TS_OUTPUT, "-", true, &v, why, sizeof(why)), -EINVAL);
	/* durations: the option's bare unit and the variable's */
	assert_int_equal(
	    tally_setting_option(TS_DELAY, "2.5", buf, sizeof(buf), &text, why, sizeof(why)), 0);
	assert_string_equal(text, "2500");
	assert_int_equal(tally_setting_option(TS_OSRT_THRESHOLD, "1.5us", buf, sizeof(buf), &text,
					      why, sizeof(why)),
			 0);
	assert_string_equal(text, "1500");
	assert_int_equal(
	    tally_setting_option(TS_DELAY, "1.5us", buf, sizeof(buf), &text, why, sizeof(why)), 0);
	assert_string_equal(text, "1500ns"); /* not a whole number of ms: said in ns */
	unsetenv("TALLY_DELAY_MS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pattern),	  cmocka_unit_test(test_json_escaping),
	    cmocka_unit_test(test_ranks_grammar), cmocka_unit_test(test_text_printable),
	    cmocka_unit_test(test_text_utf8),	  cmocka_unit_test(test_text_utf8_seq),
	    cmocka_unit_test(test_outfile),	  cmocka_unit_test(test_outfile_final),
	    cmocka_unit_test(test_grow),	  cmocka_unit_test(test_settings),
	    cmocka_unit_test(test_hashmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
