/* SPDX-License-Identifier: MIT */
/* Safe output files; see outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"
#include "hashmap.h"

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

/*
 * The inputs being read (outfile_protect), found by (device, inode) in a hash table: a directory
 * of thousands of ranks costs O(1) per file to protect, to let go and to check.  A file protected
 * twice (named twice) counts its protections; an entry whose count drops to 0 stays in the table
 * (no output is refused for it) until nothing is protected, when all of it is let go.
 */
static struct protected_input {
	unsigned long long dev, ino;
	char *path;
	size_t refs;
} * protected;
static size_t nprotected, protected_cap, protected_live;
static struct tally_map protected_at; /* (dev, ino) -> index + 1 */

static struct protected_input *protected_find(unsigned long long dev, unsigned long long ino)
{
	uint32_t at = tally_map_get(&protected_at, dev, ino);

	return at ? &protected[at - 1] : NULL;
}

int outfile_protect(const char *path, unsigned long long dev, unsigned long long ino)
{
	struct protected_input *p = protected_find(dev, ino);

	if (p && p->refs) {
		p->refs++;
		protected_live++;
		return 0;
	}
	if (!p) {
		if (nprotected == UINT32_MAX - 1)
			return -ENOMEM;
		if (!tally_grow_in(&protected, &protected_cap, nprotected + 1, sizeof(*protected)))
			return -ENOMEM;
		if (tally_map_put(&protected_at, dev, ino, (uint32_t)nprotected + 1) < 0)
			return -ENOMEM;
		p = &protected[nprotected++];
		*p = (struct protected_input){.dev = dev, .ino = ino};
	}
	p->path = strdup(path);
	if (!p->path)
		return -ENOMEM;
	p->refs = 1;
	protected_live++;
	return 0;
}

void outfile_unprotect(unsigned long long dev, unsigned long long ino)
{
	struct protected_input *p = protected_find(dev, ino);
	size_t i;

	if (!p || !p->refs)
		return;
	if (--p->refs == 0) {
		free(p->path);
		p->path = NULL;
	}
	if (--protected_live)
		return;
	for (i = 0; i < nprotected; i++)
		free(protected[i].path);
	free(protected);
	protected = NULL;
	nprotected = protected_cap = 0;
	tally_map_fini(&protected_at);
}

/* The input st is, or NULL. */
static const char *protected_as(const struct stat *st)
{
	const struct protected_input *p =
	    protected_find((unsigned long long)st->st_dev, (unsigned long long)st->st_ino);

	return p && p->refs ? p->path : NULL;
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

/*
 * The temporary files being written, for outfile_remove_temporaries() in a signal handler: a fixed
 * table of pointers (a CSV export writes a dozen files at once, a merge or a page one), each set
 * once its file exists and cleared before its name is freed.
 */
#define LIVE_MAX 64
static char *volatile live[LIVE_MAX];

static void live_set(char *tmp, char *to)
{
	size_t i;

	for (i = 0; i < LIVE_MAX; i++)
		if (live[i] == tmp) {
			live[i] = to;
			return;
		}
}

void outfile_remove_temporaries(void)
{
	size_t i;

	for (i = 0; i < LIVE_MAX; i++) {
		char *t = live[i];

		if (t)
			unlink(t);
	}
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
	live_set(NULL, o->tmp);
	mask = umask(0);
	umask(mask);
	(void)fchmod(o->fd, 0666 & ~mask);
	return 0;
}

static sigset_t held;

void outfile_hold_signals(const int *sigs, size_t n)
{
	size_t i;

	sigemptyset(&held);
	for (i = 0; i < n; i++)
		sigaddset(&held, sigs[i]);
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
	if (rc == 0 && !(flags & OUTFILE_KEEP_SIGNALS))
		sigprocmask(SIG_BLOCK, &held, NULL);
	if (rc == 0 && rename(o->tmp, o->path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
	}
	if (rc == 0) {
		live_set(o->tmp, NULL);
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
	live_set(o->tmp, NULL);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}
