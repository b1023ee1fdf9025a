/* SPDX-License-Identifier: MIT */
/*
 * Function names from ELF symbol tables (src/read/elfsyms.c), on a library of known layout
 * (tests/support/elfsyms-fixture.c: exported, local, exported, in that order) and its stripped
 * copy (.dynsym only), placed by the loader's own view of it (dladdr); then damaged files.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elfsyms.h"

struct layout {
	uint64_t before, local, after; /* file addresses of the three functions */
};

static uint64_t file_address(void *fn)
{
	Dl_info info;

	assert_non_null(fn);
	assert_true(dladdr(fn, &info) != 0);
	/* a shared library's first segment is at file address 0: the base is the load bias */
	return (uint64_t)((uintptr_t)fn - (uintptr_t)info.dli_fbase);
}

static struct layout place(void)
{
	void *h = dlopen(ELFSYMS_FIXTURE, RTLD_NOW | RTLD_LOCAL);
	void *(*local)(void);
	struct layout l;

	assert_non_null(h);
	*(void **)&local = dlsym(h, "elfsyms_local_address");
	l.before = file_address(dlsym(h, "elfsyms_exported_before"));
	l.local = file_address(local());
	l.after = file_address(dlsym(h, "elfsyms_exported_after"));
	/* the layout that makes the stripped case mean something: an exported function before */
	assert_true(l.before < l.local && l.local < l.after);
	return l;
}

static void test_full_table(void **state)
{
	struct layout l = place();
	struct elfsyms *e;

	(void)state;
	assert_int_equal(elfsyms_open(ELFSYMS_FIXTURE, &e), 0);
	assert_true(elfsyms_full(e));
	assert_string_equal(elfsyms_find(e, l.local), "local_after");
	assert_string_equal(elfsyms_find(e, l.local + 4), "local_after");
	assert_string_equal(elfsyms_find(e, l.before + 4), "elfsyms_exported_before");
	/* the function, not the untyped alias at its address */
	assert_string_equal(elfsyms_find(e, l.after), "elfsyms_exported_after");
	assert_string_equal(elfsyms_find(e, l.after + 2), "elfsyms_exported_after");
	assert_null(elfsyms_find(e, 0));
	assert_null(elfsyms_find(e, UINT64_MAX));
	elfsyms_close(e);
}

static void test_stripped(void **state)
{
	struct layout l = place();
	struct elfsyms *e;

	(void)state;
	assert_int_equal(elfsyms_open(ELFSYMS_STRIPPED, &e), 0);
	assert_false(elfsyms_full(e));
	/* the local function is not in .dynsym: unnamed, not its exported neighbour's name */
	assert_null(elfsyms_find(e, l.local + 4));
	assert_string_equal(elfsyms_find(e, l.before + 4), "elfsyms_exported_before");
	assert_string_equal(elfsyms_find(e, l.after + 2), "elfsyms_exported_after");
	elfsyms_close(e);
	/* through the per-process cache, twice */
	assert_null(elfsyms_lookup(ELFSYMS_STRIPPED, l.local + 4));
	assert_string_equal(elfsyms_lookup(ELFSYMS_STRIPPED, l.before), "elfsyms_exported_before");
	assert_string_equal(elfsyms_lookup(ELFSYMS_FIXTURE, l.local), "local_after");
	assert_string_equal(elfsyms_lookup(ELFSYMS_STRIPPED, l.after), "elfsyms_exported_after");
}

/* A copy of the fixture, cut to len bytes and with patch (8 bytes at off) applied when off >= 0. */
static char *damaged(const char *name, size_t len, long off, uint64_t patch)
{
	static char path[256];
	FILE *in = fopen(ELFSYMS_FIXTURE, "rb"), *out;
	char *buf = malloc(1 << 20);
	size_t n;

	assert_non_null(in);
	assert_non_null(buf);
	n = fread(buf, 1, 1 << 20, in);
	fclose(in);
	if (len < n)
		n = len;
	if (off >= 0 && (size_t)off + 8 <= n)
		memcpy(buf + off, &patch, 8);
	snprintf(path, sizeof(path), "%s/%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	out = fopen(path, "wb");
	assert_non_null(out);
	assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(out);
	free(buf);
	return path;
}

static void test_damaged(void **state)
{
	struct elfsyms *e = (struct elfsyms *)1;
	char *p;

	(void)state;
	assert_int_equal(elfsyms_open("/nonexistent/elfsyms", &e), -ENOENT);
	assert_null(e);
	assert_int_equal(elfsyms_open("/", &e), -ENOEXEC);
	p = damaged("elfsyms-empty", 0, -1, 0);
	assert_int_equal(elfsyms_open(p, &e), -ENOEXEC);
	unlink(p);
	p = damaged("elfsyms-cut", 64, -1, 0); /* the header only: sections beyond the end */
	assert_int_equal(elfsyms_open(p, &e), -ENOEXEC);
	unlink(p);
	p = damaged("elfsyms-shoff", SIZE_MAX, 0x28, UINT64_MAX - 8); /* e_shoff far past the end */
	assert_int_equal(elfsyms_open(p, &e), -ENOEXEC);
	unlink(p);
	p = damaged("elfsyms-text", SIZE_MAX, 0, 0x0a0a0a0a0a0a0a0aull); /* not ELF */
	assert_int_equal(elfsyms_open(p, &e), -ENOEXEC);
	unlink(p);
	assert_null(elfsyms_lookup("/nonexistent/elfsyms", 0x1000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_table),
	    cmocka_unit_test(test_stripped),
	    cmocka_unit_test(test_damaged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
