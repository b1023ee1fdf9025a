/* SPDX-License-Identifier: MIT */
/*
 * Which file on this machine stands for a module of a trace (a MODULES entry): one of the
 * module's own build, or none.  See modfile.c.
 */
#ifndef TALLY_READ_MODFILE_H
#define TALLY_READ_MODFILE_H

#include "stacks.h"

enum modfile_verdict {
	MODFILE_NONE,	     /* no file to read: frames read module+0xoffset */
	MODFILE_SAME,	     /* a file of the module's build: its names are the program's */
	MODFILE_UNVERIFIED,  /* a file the trace cannot check (no build ID recorded): named, and
				said to be unverified */
	MODFILE_OTHER_BUILD, /* the files there are other builds: never named from them */
};

struct modfile {
	enum modfile_verdict verdict;
	const char *path; /* SAME, UNVERIFIED: the file to name frames from (owned by the cache) */
};

/*
 * The file for m, looked for once per (path, build ID) in the process: with a build ID, the first
 * of m's path, /usr/lib/debug/.build-id/xx/yyyy.debug, and under --symfs DIR (DIR/path,
 * DIR/usr/lib/debug/.build-id/..., DIR/NAME) whose build ID is m's.  Without one, a file under
 * --symfs DIR, else at the path, of m's size where the trace says it (a 1.4 writer); a file
 * with a build ID is then another build.
 */
struct modfile modfile_find(const struct tally_module *m);

#endif
