/* SPDX-License-Identifier: MIT */
/*
 * tool.injection: the environment that loads tally's collector into a program (what `tally env`
 * prints, or a container image's ENV) must name a file that loads: there, an ELF shared object,
 * exporting InitializeInjection (the entry point CUDA calls).  A name alone proves nothing: a
 * `tally env` run on a host whose bundle sits elsewhere than in the container names a path that
 * does not exist there, and every process then prints a preload error and records nothing.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* The most of a symbol or string table read: a bound on a hostile file, not a need. */
#define ELF_SCAN_MAX (64u << 20)

/* Read exactly len bytes at off (0 or -errno; -ENOEXEC past the end). */
static int read_at(int fd, void *buf, size_t len, uint64_t off, uint64_t size)
{
	if (off > size || len > size - off)
		return -ENOEXEC;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

/* Does the ELF64 shared object on fd define name in its dynamic symbols?  1, 0, or -errno. */
static int exports(int fd, uint64_t size, const Elf64_Ehdr *eh, const char *name)
{
	Elf64_Shdr sh, str;
	size_t i, nlen = strlen(name);
	int rc;

	for (i = 0; i < eh->e_shnum; i++) {
		uint64_t k, n;
		char *names;

		rc =
		    read_at(fd, &sh, sizeof(sh), eh->e_shoff + i * (uint64_t)eh->e_shentsize, size);
		if (rc < 0)
			return rc;
		if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize != sizeof(Elf64_Sym) ||
		    sh.sh_link >= eh->e_shnum)
			continue;
		rc = read_at(fd, &str, sizeof(str),
			     eh->e_shoff + sh.sh_link * (uint64_t)eh->e_shentsize, size);
		if (rc < 0)
			return rc;
		if (str.sh_size > ELF_SCAN_MAX || sh.sh_size > ELF_SCAN_MAX)
			return -EFBIG;
		names = malloc(str.sh_size + 1);
		if (!names)
			return -ENOMEM;
		rc = read_at(fd, names, str.sh_size, str.sh_offset, size);
		names[rc == 0 ? str.sh_size : 0] = '\0';
		n = sh.sh_size / sizeof(Elf64_Sym);
		for (k = 0; rc == 0 && k < n; k++) {
			Elf64_Sym s;

			rc = read_at(fd, &s, sizeof(s), sh.sh_offset + k * sizeof(s), size);
			if (rc == 0 && s.st_shndx != SHN_UNDEF && s.st_name < str.sh_size &&
			    ELF64_ST_BIND(s.st_info) != STB_LOCAL &&
			    strncmp(names + s.st_name, name, nlen + 1) == 0) {
				free(names);
				return 1;
			}
		}
		free(names);
		return rc < 0 ? rc : 0;
	}
	return 0;
}

/* What is wrong with path as tally's collector, in words; "" when nothing is. */
static void judge(const struct doctor_ctx *ctx, const char *path, char *why, size_t len)
{
	char real[PATH_MAX + 64];
	Elf64_Ehdr eh;
	struct stat st;
	int fd, rc;

	why[0] = '\0';
	doctor_path(ctx, path, real, sizeof(real));
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s is not a regular file", path);
	} else if (read_at(fd, &eh, sizeof(eh), 0, (uint64_t)st.st_size) < 0 ||
		   memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		snprintf(why, len, "%s is not a 64-bit ELF file", path);
	} else if (eh.e_type != ET_DYN) {
		snprintf(why, len, "%s is an ELF file but not a shared object", path);
	} else if ((rc = exports(fd, (uint64_t)st.st_size, &eh, "InitializeInjection")) <= 0) {
		if (rc == 0)
			snprintf(why, len,
				 "%s does not export InitializeInjection: it is not tally's "
				 "collector",
				 path);
		else
			snprintf(why, len, "%s: its symbols cannot be read: %s", path,
				 strerror(-rc));
	}
	close(fd);
}

void check_tool_injection(struct doctor_ctx *ctx, struct tally_doctor_finding *f)
{
	static const char *const vars[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
					   "LD_PRELOAD"};
	char why[PATH_MAX + 128], one[PATH_MAX];
	size_t i, checked = 0;

	finding_source(f, "$CUDA_INJECTION64_PATH, $NVTX_INJECTION64_PATH, $LD_PRELOAD: each "
			  "path naming libtally, opened (ELF header, dynamic symbols)");
	finding_why(f, "CUDA loads the collector from these paths in every process: a path that "
		       "does not exist here, or a file that is not the collector, records nothing "
		       "(and LD_PRELOAD makes every process print a loader error)");
	finding_fix(f, "make the path the collector's where the program runs: `tally env "
		       "--prefix DIR` writes it for tally installed in DIR there (a container's "
		       "/opt/tally), or run the program under `tally record`, which sets its own");
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = doctor_getenv_set(ctx, vars[i]), *p = v;

		/* LD_PRELOAD is a list (colons or spaces); the others are one path */
		while (p && *p) {
			size_t n = i == 2 ? strcspn(p, ": ") : strlen(p);

			snprintf(one, sizeof(one), "%.*s", (int)n, p);
			p += n + (p[n] != '\0');
			if (!strstr(one, "libtally"))
				continue;
			checked++;
			judge(ctx, one, why, sizeof(why));
			if (why[0]) {
				finding_set(f, TALLY_DOCTOR_FAIL, "%s=%s: %s", vars[i], v, why);
				return;
			}
		}
	}
	if (!checked)
		finding_set(
		    f, TALLY_DOCTOR_SKIP,
		    "no injection variable names libtally here (tally record sets its own)");
	else
		finding_set(f, TALLY_DOCTOR_OK,
			    "%zu path(s) naming libtally: each an ELF shared object exporting "
			    "InitializeInjection",
			    checked);
}
