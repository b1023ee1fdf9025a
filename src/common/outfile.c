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
	    {S_IFREG, "a regular file"}, {S_IFLNK, "a symbolic link"}, {S_IFDIR, "a directory"},
	    {S_IFCHR, "a device"},	 {S_IFBLK, "a device"},	       {S_IFIFO, "a FIFO"},
	    {S_IFSOCK, "a socket"},
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((m & S_IFMT) == types[i].type)
			return types[i].name;
	return "not a regular file";
}

/* The inputs being read (outfile_protect); appended and removed from the end, as sets are
 * opened and closed. */
static struct protected_input {
	unsigned long long dev, ino;
	char *path;
} * protected;
static size_t nprotected, protected_cap;

int outfile_protect(const char *path, unsigned long long dev, unsigned long long ino)
{
	struct protected_input *p;

	if (nprotected == protected_cap) {
		size_t cap = protected_cap ? 2 * protected_cap : 16;

		p = realloc(protected, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		protected = p;
		protected_cap = cap;
	}
	p = &protected[nprotected];
	p->dev = dev;
	p->ino = ino;
	p->path = strdup(path);
	if (!p->path)
		return -ENOMEM;
	nprotected++;
	return 0;
}

void outfile_unprotect(unsigned long long dev, unsigned long long ino)
{
	size_t i;

	for (i = nprotected; i-- > 0;)
		if (protected[i].dev == dev && protected[i].ino == ino) {
			free(protected[i].path);
			protected[i] = protected[--nprotected];
			break;
		}
	if (!nprotected) {
		free(protected);
		protected = NULL;
		protected_cap = 0;
	}
}

/* The input st is, or NULL. */
static const char *protected_as(const struct stat *st)
{
	size_t i;

	for (i = 0; i < nprotected; i++)
		if (protected[i].dev == (unsigned long long)st->st_dev &&
		    protected[i].ino == (unsigned long long)st->st_ino)
			return protected[i].path;
	return NULL;
}

int outfile_check(const char *path, unsigned flags, char *err, size_t errlen)
{
	bool dir = flags & OUTFILE_DIRECTORY;
	const char *input;
	struct stat st;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: is %s; tally only ever writes %s", path,
			 file_type_name(st.st_mode),
			 dir ? "into a directory (csv)" : "over regular files");
		return -EPERM;
	}
	if ((input = protected_as(&st))) {
		snprintf(err, errlen,
			 "%s: is an input (read as %s); tally never writes over its input", path,
			 input);
		return -EINVAL;
	}
	if (!(flags & OUTFILE_FORCE)) {
		snprintf(err, errlen, "%s: exists (--force %s)", path,
			 dir ? "writes into it" : "replaces it");
		return -EEXIST;
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
