/* SPDX-License-Identifier: MIT */
/* A scratch directory for a unit test program (scratch.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scratch.h"

static char dir[256];

static int make(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tally-%s-XXXXXX", program_invocation_short_name);
	return mkdtemp(dir) ? 0 : -errno;
}

/* chmod first: a test may leave a directory it made unreadable (the doctor's do). */
static int remove_all(void)
{
	char cmd[sizeof(dir) * 2 + 64];

	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
	return system(cmd) == 0 ? 0 : -1;
}

const char *scratch_new(void)
{
	int rc = make();

	if (rc < 0)
		fail_msg("cannot make %s: %s", dir, strerror(-rc));
	return dir;
}

void scratch_remove(void)
{
	if (remove_all() < 0)
		fail_msg("cannot remove %s", dir);
}

const char *scratch_path(const char *name)
{
	static char paths[8][sizeof(dir) + 256];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

int scratch_setup(void **state)
{
	(void)state;
	return make();
}

int scratch_teardown(void **state)
{
	(void)state;
	return remove_all();
}
