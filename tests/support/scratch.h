/* SPDX-License-Identifier: MIT */
/*
 * A scratch directory for a unit test program, under /tmp, named after the program
 * (/tmp/tally-test-html-XXXXXX), and paths inside it.  cmocka fixtures: a failure to make or
 * remove it fails the test.
 */
#ifndef TALLY_TESTS_SCRATCH_H
#define TALLY_TESTS_SCRATCH_H

/* Make a new scratch directory (the previous one is forgotten, not removed); its path. */
const char *scratch_new(void);
/* Remove the scratch directory and all in it, even what was made unreadable. */
void scratch_remove(void);
/*
 * "DIR/name" in the scratch directory.  The result lives until eight more calls: keep a copy
 * for longer.
 */
const char *scratch_path(const char *name);

/* cmocka group setup and teardown: scratch_new() before the first test, scratch_remove() after. */
int scratch_setup(void **state);
int scratch_teardown(void **state);

#endif
