/* SPDX-License-Identifier: MIT */
/* Paths as people give them: a directory typed with a trailing slash (tab completion adds one)
 * must not show as "runs//x.tally" in what tally prints and writes. */
#include "path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tally_path_join(const char *dir, const char *name)
{
	size_t len = strlen(dir);
	char *out;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (asprintf(&out, "%.*s%s%s", (int)len, dir, len && dir[len - 1] == '/' ? "" : "/", name) <
	    0)
		return NULL;
	return out;
}
