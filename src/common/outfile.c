/* SPDX-License-Identifier: MIT */
/* Safe output files; see outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_type_name(mode_t m)
{
	static const struct {
		mode_t type;
		const char *name;
	} types[] = {
	    {S_IFLNK, "a symbolic link"}, {S_IFDIR, "a directory"}, {S_IFCHR, "a device"},
	    {S_IFBLK, "a device"},	  {S_IFIFO, "a FIFO"},	    {S_IFSOCK, "a socket"},
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((m & S_IFMT) == types[i].type)
			return types[i].name;
	return "not a regular file";
}

int outfile_check(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: is %s; tally only ever replaces regular files", path,
			 file_type_name(st.st_mode));
		return -EPERM;
	}
	if (!(flags & OUTFILE_FORCE)) {
		snprintf(err, errlen, "%s: exists (--force replaces it)", path);
		return -EEXIST;
	}
	return 0;
}

int outfile_not_input(const char *path, char *const *inputs, size_t n, char *err, size_t errlen)
{
	struct stat out, in;
	size_t i;

	if (stat(path, &out) < 0)
		return 0;
	for (i = 0; i < n; i++)
		if (stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev &&
		    in.st_ino == out.st_ino) {
			snprintf(err, errlen,
				 "%s: is also an input; tally never writes over its input", path);
			return -EINVAL;
		}
	return 0;
}

/* "dir/.base.tally-tmp-XXXXXX" beside path. */
static char *temp_name(const char *path)
{
	char *a = strdup(path), *b = strdup(path), *t = NULL;

	if (a && b && asprintf(&t, "%s/.%s.tally-tmp-XXXXXX", dirname(a), basename(b)) < 0)
		t = NULL;
	free(a);
	free(b);
	return t;
}

int outfile_open(struct outfile *o, const char *path, unsigned flags, char *err, size_t errlen)
{
	mode_t mask;
	int rc;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	rc = outfile_check(path, flags, err, errlen);
	if (rc < 0)
		return rc;
	o->path = strdup(path);
	o->tmp = temp_name(path);
	if (!o->path || !o->tmp) {
		outfile_abort(o);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC); /* O_EXCL: never follows a link */
	if (o->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		outfile_abort(o);
		return rc;
	}
	mask = umask(0);
	umask(mask);
	(void)fchmod(o->fd, 0666 & ~mask);
	return 0;
}

int outfile_commit(struct outfile *o, unsigned flags, char *err, size_t errlen)
{
	int rc = 0;

	if (o->fd >= 0 && close(o->fd) < 0)
		rc = -errno;
	o->fd = -1;
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", o->path, strerror(-rc));
	/* Again, just before: the target may have changed while we wrote. */
	if (rc == 0)
		rc = outfile_check(o->path, flags, err, errlen);
	if (rc == 0 && rename(o->tmp, o->path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
	}
	if (rc == 0) {
		free(o->tmp);
		o->tmp = NULL;
	}
	outfile_abort(o);
	return rc;
}

void outfile_abort(struct outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}
