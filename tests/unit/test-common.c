/* SPDX-License-Identifier: MIT */
/* Output name patterns and the JSON writer (checked by a real JSON parser, jansson). */
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

#include "json.h"
#include "pattern.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pattern),
	    cmocka_unit_test(test_json_escaping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
