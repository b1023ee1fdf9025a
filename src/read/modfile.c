/* SPDX-License-Identifier: MIT */
/*
 * A native frame is named from a file on the reading machine, and a trace is read on other
 * machines as a rule (records from a cluster, read on a laptop): the file at the module's path
 * there is often another build (another libc), whose symbol table puts other functions at the
 * recorded offsets.  Names from it would be wrong and look right.  So a file is used only when
 * it is the module's build: its GNU build ID is the one the collector read from the module in
 * memory (MODULES, format 1.4).  The places looked in are perf's and gdb's: the path, the
 * separate debug file under /usr/lib/debug/.build-id/, and a directory the user names (--symfs
 * DIR, perf's meaning: DIR/path; here also DIR's debug tree and DIR/NAME, for a flat directory
 * of copied files).
 *
 * A module without a build ID cannot be checked.  An older trace's (1.3 and before) keeps the
 * old way, the file at the path, its names said to be unverified; a 1.4 trace's module that had
 * none is matched by its file's size, also unverified, and a file that has a build ID is
 * another build.  --symfs DIR comes first there: a file the user named beats one that happens
 * to be at the path.
 */
#include "modfile.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfsyms.h"
#include "grow.h"
#include "pathmap.h"
#include "trace-set.h"

#define CANDIDATES 5

struct chosen {
	char *key;  /* path, build ID and size: what the choice depends on */
	char *path; /* the file chosen; NULL for NONE and OTHER_BUILD */
	enum modfile_verdict verdict;
};

static struct chosen *chosen;
static size_t nchosen, chosen_cap;
static const char *symfs;

void report_symfs_set(const char *dir)
{
	symfs = dir && *dir ? dir : NULL;
}

static const char *chosen_key(const void *ctx, size_t i)
{
	(void)ctx;
	return chosen[i].key;
}

static struct pathmap chosen_index = {.key = chosen_key};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The places a file of m may be, most direct first; each a malloc'd path (n of them). */
static size_t candidates(const struct tally_module *m, char *out[CANDIDATES])
{
	char debug[64 + 2 * TALLY_BUILD_ID_MAX];
	size_t n = 0;
	bool checked = m->build_id_len > 0;

	if (checked)
		elfsyms_debug_path(m->build_id, m->build_id_len, debug, sizeof(debug));
	if (checked || !symfs)
		out[n++] = strdup(m->path);
	if (checked)
		out[n++] = strdup(debug);
	if (symfs) {
		size_t len = strlen(symfs) + strlen(m->path) + sizeof(debug) + 2;

		if ((out[n] = malloc(len)) != NULL)
			snprintf(out[n++], len, "%s/%s", symfs, m->path);
		if (checked && (out[n] = malloc(len)) != NULL)
			snprintf(out[n++], len, "%s%s", symfs, debug);
		if ((out[n] = malloc(len)) != NULL)
			snprintf(out[n++], len, "%s/%s", symfs, base_name(m->path));
	}
	if (!checked && symfs)
		out[n++] = strdup(m->path); /* after DIR's: the user named DIR for a reason */
	return n;
}

/* What the file at path is for m. */
static enum modfile_verdict judge(const struct tally_module *m, const char *path)
{
	uint8_t id[TALLY_BUILD_ID_MAX];
	uint64_t size = 0;
	int n = elfsyms_build_id(path, id, &size);

	if (n < 0)
		return MODFILE_NONE;
	if (m->build_id_len)
		return (size_t)n == m->build_id_len && memcmp(id, m->build_id, (size_t)n) == 0
			   ? MODFILE_SAME
			   : MODFILE_OTHER_BUILD;
	if (!m->described) /* an older writer's: nothing to check against */
		return MODFILE_UNVERIFIED;
	return n > 0 || (m->file_size && size != m->file_size) ? MODFILE_OTHER_BUILD
							       : MODFILE_UNVERIFIED;
}

static void choose(const struct tally_module *m, struct chosen *c)
{
	char *paths[CANDIDATES] = {NULL};
	size_t n = candidates(m, paths), i;
	bool other = false;

	c->verdict = MODFILE_NONE;
	for (i = 0; i < n && !c->path; i++) {
		enum modfile_verdict v = paths[i] ? judge(m, paths[i]) : MODFILE_NONE;

		other |= v == MODFILE_OTHER_BUILD;
		if (v == MODFILE_SAME || v == MODFILE_UNVERIFIED) {
			c->verdict = v;
			c->path = paths[i];
			paths[i] = NULL;
		}
	}
	if (!c->path && other)
		c->verdict = MODFILE_OTHER_BUILD;
	for (i = 0; i < n; i++)
		free(paths[i]);
}

struct modfile modfile_find(const struct tally_module *m)
{
	char hex[2 * TALLY_BUILD_ID_MAX + 1], *key;
	struct modfile r = {MODFILE_NONE, NULL};
	size_t len = strlen(m->path) + sizeof(hex) + 48, i;

	tally_build_id_hex(m->build_id, m->build_id_len, hex);
	if (!(key = malloc(len)))
		return r;
	snprintf(key, len, "%d:%s:%llu:%s", m->described, hex, (unsigned long long)m->file_size,
		 m->path);
	i = pathmap_find(&chosen_index, key);
	if (i != SIZE_MAX) {
		free(key);
		return (struct modfile){chosen[i].verdict, chosen[i].path};
	}
	if (!tally_grow_in((void **)&chosen, &chosen_cap, nchosen + 1, sizeof(*chosen))) {
		free(key);
		return r;
	}
	i = nchosen++;
	chosen[i] = (struct chosen){.key = key};
	choose(m, &chosen[i]);
	(void)pathmap_add(&chosen_index, i);
	return (struct modfile){chosen[i].verdict, chosen[i].path};
}
