/* SPDX-License-Identifier: MIT */
/*
 * Output name patterns, as nsys has them: %p pid, %h host, %n the smallest positive number that
 * makes a name not yet taken, %q{VAR} an environment variable, %% a percent sign.  ".tally" is
 * appended when the name does not end in it.
 *
 * Values from the environment and the host name are sanitised: every byte outside [A-Za-z0-9._-]
 * becomes '_', and a leading '.' does too, so no value can add a directory level or climb out of
 * the directory the pattern names ("..", "/", "~").  Used by `tally record`, `tally doctor -o`
 * and the collector (a fork child expands its own name), so it allocates nothing.
 */
#ifndef TALLY_COMMON_PATTERN_H
#define TALLY_COMMON_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tally_pattern_vars {
	pid_t pid;
	const char *host;			 /* NULL: gethostname() */
	const char *(*getenv)(const char *name); /* NULL: getenv() */
	/* Is path taken?  NULL: access(path, F_OK) == 0.  Used by %n. */
	bool (*exists)(const char *path, void *ctx);
	void *ctx;
	unsigned unset_vars; /* out: how many %q{VAR} named an unset variable */
};

/*
 * Expand pattern into out.  Returns 0, -EINVAL for a malformed pattern (err says which part),
 * -ENAMETOOLONG if out is too small, -EEXIST if %n found no free name.
 */
int tally_pattern_expand(const char *pattern, struct tally_pattern_vars *vars, char *out,
			 size_t outlen, char *err, size_t errlen);

#endif
