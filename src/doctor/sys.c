/* SPDX-License-Identifier: MIT */
/*
 * Everything the doctor reads goes through here: files under the root prefix, the environment
 * (the process's, or ROOT/.env under a fixture root), statvfs()/access() (or ROOT/.statfs), and
 * the mount table.  Nothing here writes to or changes anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "grow.h"
#include "internal.h"

#define ENV_FILE_MAX	(64 * 1024)
#define MOUNTINFO_MAX	(1024 * 1024)
#define STATFS_FILE_MAX (16 * 1024)

extern char **environ;

void doctor_path(const struct doctor_ctx *ctx, const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s%s", ctx->root, path);
}

int doctor_read(const struct doctor_ctx *ctx, const char *path, char *buf, size_t len)
{
	char full[PATH_MAX + 64];
	size_t got = 0;
	int fd, err = 0;

	doctor_path(ctx, path, full, sizeof(full));
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (len)
		buf[got] = '\0';
	return err ? err : (int)got;
}

bool doctor_exists(const struct doctor_ctx *ctx, const char *path)
{
	char full[PATH_MAX + 64];
	struct stat st;

	doctor_path(ctx, path, full, sizeof(full));
	return lstat(full, &st) == 0;
}

char *const *doctor_environ(const struct doctor_ctx *ctx)
{
	/*
	 * The process's own environment is read live, never cached: the GPU probe unsets and sets
	 * CUDA_INJECTION64_PATH around cuInit, and setenv() may move environ.
	 */
	return ctx->env ? ctx->env : environ;
}

const char *doctor_getenv(const struct doctor_ctx *ctx, const char *name)
{
	size_t n = strlen(name);
	char *const *e;

	for (e = doctor_environ(ctx); e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

const char *doctor_getenv_set(const struct doctor_ctx *ctx, const char *name)
{
	const char *v = doctor_getenv(ctx, name);

	return v && *v ? v : NULL;
}

const char *doctor_field(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0) {
			const char *v = p + klen, *end;

			while (*v == ' ' || *v == '\t')
				v++;
			end = strchr(v, '\n');
			if (!end)
				end = v + strlen(v);
			while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
				end--;
			snprintf(out, len, "%.*s", (int)(end - v), v);
			return out;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

void doctor_normpath(const char *cwd, const char *in, char *out, size_t len)
{
	char tmp[PATH_MAX * 2], *save = NULL, *tok;
	size_t o = 0;

	if (in[0] == '/')
		snprintf(tmp, sizeof(tmp), "%s", in);
	else
		snprintf(tmp, sizeof(tmp), "%s/%s", cwd, in);
	out[0] = '\0';
	for (tok = strtok_r(tmp, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			char *slash = strrchr(out, '/');

			o = slash ? (size_t)(slash - out) : 0;
			out[o] = '\0';
			continue;
		}
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "/%s", tok);
		if (o >= len) {
			o = len - 1;
			break;
		}
	}
	if (o == 0)
		snprintf(out, len, "/");
}

/* ROOT/.env: the whole environment of a fixture, one NAME=value a line ('#' starts a comment). */
static int load_env_file(struct doctor_ctx *ctx, const char *text)
{
	size_t n = 0, cap = 16;
	const char *p = text;
	char **env = calloc(cap, sizeof(*env));

	if (!env)
		return -ENOMEM;
	while (*p) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p) : strlen(p);

		if (l && p[0] != '#' && memchr(p, '=', l)) {
			if (n + 2 > cap) {
				char **bigger = tally_resize(env, 2 * cap, sizeof(*env));

				if (!bigger)
					goto free_env;
				env = bigger;
				cap *= 2;
			}
			env[n] = strndup(p, l);
			if (!env[n])
				goto free_env;
			env[++n] = NULL;
		}
		p += l + (end ? 1 : 0);
	}
	env[n] = NULL;
	ctx->env = env;
	ctx->env_owned = true;
	return 0;
free_env:
	while (n--)
		free(env[n]);
	free(env);
	return -ENOMEM;
}

static int init_env(struct doctor_ctx *ctx)
{
	char *text;
	int rc;

	ctx->env = NULL;
	if (ctx->opts->environ) {
		ctx->env = (char **)ctx->opts->environ;
		return 0;
	}
	if (!ctx->fixture)
		return 0;
	/* A fixture never sees the real environment: without .env its environment is empty. */
	text = malloc(ENV_FILE_MAX);
	if (!text)
		return -ENOMEM;
	if (doctor_read(ctx, "/.env", text, ENV_FILE_MAX) < 0)
		text[0] = '\0';
	rc = load_env_file(ctx, text);
	free(text);
	return rc;
}

int doctor_ctx_init(struct doctor_ctx *ctx, const struct tally_doctor_opts *opts)
{
	const char *root = opts->root;
	struct stat st;
	size_t l;

	memset(ctx, 0, sizeof(*ctx));
	ctx->opts = opts;
	snprintf(ctx->root, sizeof(ctx->root), "%s", root ? root : "");
	l = strlen(ctx->root);
	while (l > 0 && ctx->root[l - 1] == '/')
		ctx->root[--l] = '\0';
	/* "", "/" and "//" are all the real system: its paths are used as they are. */
	if (l) {
		if (stat(root, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		ctx->fixture = true;
	}
	if (init_env(ctx) < 0)
		return -ENOMEM;
	if (ctx->fixture) {
		const char *pwd = doctor_getenv_set(ctx, "PWD");

		snprintf(ctx->cwd, sizeof(ctx->cwd), "%s", pwd && pwd[0] == '/' ? pwd : "/");
	} else if (!getcwd(ctx->cwd, sizeof(ctx->cwd))) {
		snprintf(ctx->cwd, sizeof(ctx->cwd), "/");
	}
	return 0;
}

void doctor_ctx_fini(struct doctor_ctx *ctx)
{
	char **e;

	if (ctx->env_owned) {
		for (e = ctx->env; *e; e++)
			free(*e);
		free(ctx->env);
	}
	ctx->env = NULL;
	ctx->env_owned = false;
}

/* "64M", "1G", "123" (bytes); binary units. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'K':
	case 'k':
		return v << 10;
	case 'M':
		return v << 20;
	case 'G':
		return v << 30;
	case 'T':
		return v << 40;
	default:
		return v;
	}
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The longest entry of ROOT/.statfs covering path.  Returns false when none does. */
static bool fixture_statfs(const struct doctor_ctx *ctx, const char *path, struct doctor_fs *fs)
{
	char text[STATFS_FILE_MAX], best[1024] = "", *save = NULL, *line;
	size_t best_len = 0;

	if (doctor_read(ctx, "/.statfs", text, sizeof(text)) < 0)
		return false;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char dir[PATH_MAX];

		if (line[0] == '#' || sscanf(line, "%4095s", dir) != 1 || !path_under(path, dir))
			continue;
		if (strlen(dir) >= best_len) {
			best_len = strlen(dir);
			snprintf(best, sizeof(best), "%s", line);
		}
	}
	if (!best_len)
		return false;
	save = NULL;
	strtok_r(best, " \t", &save); /* the path */
	fs->writable = true;
	fs->free_files = UINT64_MAX;
	for (line = strtok_r(NULL, " \t", &save); line; line = strtok_r(NULL, " \t", &save)) {
		if (strncmp(line, "free=", 5) == 0)
			fs->free_bytes = parse_size(line + 5);
		else if (strncmp(line, "total=", 6) == 0)
			fs->total_bytes = parse_size(line + 6);
		else if (strncmp(line, "files=", 6) == 0)
			fs->free_files = parse_size(line + 6);
		else if (strcmp(line, "ro") == 0)
			fs->readonly = true;
		else if (strcmp(line, "unwritable") == 0)
			fs->writable = false;
	}
	fs->writable &= !fs->readonly;
	fs->source = ".statfs";
	return true;
}

int doctor_statfs(const struct doctor_ctx *ctx, const char *path, struct doctor_fs *fs)
{
	char full[PATH_MAX + 64];
	struct statvfs sv;
	struct stat st;

	memset(fs, 0, sizeof(*fs));
	doctor_path(ctx, path, full, sizeof(full));
	if (stat(full, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	fs->exists = true;
	fs->is_dir = S_ISDIR(st.st_mode);
	if (ctx->fixture && fixture_statfs(ctx, path, fs))
		return 0;
	if (statvfs(full, &sv) < 0)
		return -errno;
	fs->free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	fs->total_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	/* Some filesystems (btrfs, many FUSE ones) report no inode counts at all. */
	fs->free_files = sv.f_files ? (uint64_t)sv.f_favail : UINT64_MAX;
	fs->readonly = sv.f_flag & ST_RDONLY;
	fs->writable = !fs->readonly && access(full, W_OK | X_OK) == 0;
	fs->source = "statvfs";
	return 0;
}

bool doctor_mount_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	const char *p = opts;

	while ((p = strstr(p, opt))) {
		if ((p == opts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0' || p[n] == '='))
			return true;
		p += n;
	}
	return false;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/*
 * One mountinfo line: ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER.
 * Returns false for a line that does not have that shape.
 */
static bool parse_mount_line(char *line, struct doctor_mount *m)
{
	char *f[64], *save = NULL, *tok;
	int n = 0, dash = -1, i;

	for (tok = strtok_r(line, " ", &save); tok && n < 64; tok = strtok_r(NULL, " ", &save))
		f[n++] = tok;
	for (i = 6; i < n; i++)
		if (strcmp(f[i], "-") == 0) {
			dash = i;
			break;
		}
	if (n < 7 || dash < 0 || dash + 2 >= n || f[4][0] != '/')
		return false;
	unescape(f[3]);
	unescape(f[4]);
	snprintf(m->point, sizeof(m->point), "%s", f[4]);
	snprintf(m->opts, sizeof(m->opts), "%s", f[5]);
	snprintf(m->fstype, sizeof(m->fstype), "%s", f[dash + 1]);
	snprintf(m->source, sizeof(m->source), "%s", f[dash + 2]);
	snprintf(m->super_opts, sizeof(m->super_opts), "%s", dash + 3 < n ? f[dash + 3] : "");
	m->is_bind = strcmp(f[3], "/") != 0;
	return true;
}

int doctor_mount_of(const struct doctor_ctx *ctx, const char *path, struct doctor_mount *m)
{
	char *text = malloc(MOUNTINFO_MAX), *save = NULL, *line;
	size_t best = 0;
	bool any = false, found = false;
	int rc;

	if (!text)
		return -ENOMEM;
	rc = doctor_read(ctx, "/proc/self/mountinfo", text, MOUNTINFO_MAX);
	if (rc < 0)
		goto free_text;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct doctor_mount cur = {0};

		if (!parse_mount_line(line, &cur))
			continue;
		any = true;
		/* Later lines are mounted over earlier ones at the same point: >= keeps the last.
		 */
		if (path_under(path, cur.point) && strlen(cur.point) >= best) {
			best = strlen(cur.point);
			*m = cur;
			found = true;
		}
	}
	rc = found ? 0 : any ? -ENXIO : -EINVAL;
free_text:
	free(text);
	return rc;
}
