/* SPDX-License-Identifier: MIT */
/*
 * Function names from an ELF file's symbol table: .symtab where the file has one (every function,
 * local ones included), else .dynsym (the exported ones: what a stripped distribution library
 * keeps).  This is how native frames get names where libdw is absent (most container images, the
 * GPU machines): no file:line, which needs DWARF, but the function.
 *
 * A return address is named by the function that holds it, by the symbol's start and size, not by
 * the nearest symbol before it: in a stripped library a local function (glibc's
 * __libc_start_call_main) is missing from .dynsym, and the nearest exported symbol before it is
 * some unrelated function that ended long before.  Such an address stays unnamed (module+offset).
 * Where several symbols start at one address (aliases), a function beats an untyped label, a
 * global name a weak one, a weak one a local one.  A symbol of size 0 (hand-written assembly)
 * names an address only when it is the nearest before it, no sized symbol starts there, and the
 * address is in the same section.
 * A stripped file whose separate debug file is installed (Debian's *-dbg packages, found by its
 * build ID under /usr/lib/debug/.build-id/, as gdb and libdw find it) is named from that file's
 * .symtab.
 *
 * The file is read with bounded reads: every offset and size is checked against the file's size,
 * so a damaged or hostile file costs at most its own size in memory.
 */
#include "elfsyms.h"
#include "buildid.h"
#include "grow.h"
#include "pathmap.h"
#include "trace-set.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOOK_BACK  8 /* earlier start addresses tried for a symbol that encloses the address */
#define DEBUG_ROOT "/usr/lib/debug/.build-id/"
#define NOTES_MAX  4096 /* a note section longer than this holds no build ID worth reading */

struct sym {
	uint64_t start, size; /* a symbol of size 0: up to the end of its section */
	uint32_t name;	      /* offset in strtab */
	uint8_t rank;	      /* higher is preferred among symbols that start at one address */
	uint8_t sized;	      /* its own size, not its section's rest */
};

struct elfsyms {
	char *strtab;
	size_t strsz;
	struct sym *syms;
	size_t n;
	int full;
};

/* count * size bytes at off, when they lie inside a file of file_size bytes; NULL otherwise. */
static void *read_at(int fd, uint64_t off, uint64_t count, uint64_t size, uint64_t file_size)
{
	uint64_t len;
	char *p;

	if (size && count > file_size / size)
		return NULL;
	len = count * size;
	if (off > file_size || len > file_size - off)
		return NULL;
	p = malloc(len + 1); /* + 1: room for a terminating NUL, and never malloc(0) */
	if (!p)
		return NULL;
	if (len && pread(fd, p, len, (off_t)off) != (ssize_t)len) {
		free(p);
		return NULL;
	}
	p[len] = 0;
	return p;
}

static uint8_t rank_of(const Elf64_Sym *s)
{
	static const uint8_t by_bind[] = {[STB_LOCAL] = 0, [STB_GLOBAL] = 2, [STB_WEAK] = 1};
	unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);

	return (uint8_t)((s->st_size ? 8 : 0) +
			 (type == STT_FUNC || type == STT_GNU_IFUNC ? 4 : 0) +
			 (bind < sizeof(by_bind) ? by_bind[bind] : 0));
}

/* Functions, and sized untyped labels in code; no data, no section or file symbols. */
static int is_code(const Elf64_Sym *s, const Elf64_Shdr *sh, unsigned nsh)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	if (!s->st_name || !s->st_value || s->st_shndx == SHN_UNDEF || s->st_shndx >= nsh)
		return 0;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return 1;
	return type == STT_NOTYPE && s->st_size && (sh[s->st_shndx].sh_flags & SHF_EXECINSTR);
}

static int by_start_then_rank(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (int)y->rank - (int)x->rank;
}

/* The symbol table to read: .symtab, else .dynsym; its index, or -1. */
static int pick_table(const Elf64_Shdr *sh, unsigned nsh, int *full)
{
	static const uint32_t order[] = {SHT_SYMTAB, SHT_DYNSYM};
	unsigned k, i;

	for (k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (i = 0; i < nsh; i++)
			if (sh[i].sh_type == order[k] && sh[i].sh_entsize == sizeof(Elf64_Sym) &&
			    sh[i].sh_link < nsh && sh[sh[i].sh_link].sh_type == SHT_STRTAB) {
				*full = order[k] == SHT_SYMTAB;
				return (int)i;
			}
	return -1;
}

/* The GNU build ID in the file's notes: its SHT_NOTE sections, or where the file has no section
 * headers, its PT_NOTE segments.  Its length, or 0 when it has none. */
static size_t file_build_id(int fd, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, uint64_t file_size,
			    uint8_t id[TALLY_BUILD_ID_MAX])
{
	Elf64_Phdr *ph = NULL;
	size_t n = 0;
	unsigned i;

	for (i = 0; sh && i < eh->e_shnum && !n; i++) {
		unsigned char *notes;

		if (sh[i].sh_type != SHT_NOTE || sh[i].sh_size > NOTES_MAX ||
		    !(notes = read_at(fd, sh[i].sh_offset, sh[i].sh_size, 1, file_size)))
			continue;
		n = tally_build_id_parse(notes, sh[i].sh_size, id);
		free(notes);
	}
	if (n || sh || eh->e_phentsize != sizeof(*ph) ||
	    !(ph = read_at(fd, eh->e_phoff, eh->e_phnum, sizeof(*ph), file_size)))
		return n;
	for (i = 0; i < eh->e_phnum && !n; i++) {
		unsigned char *notes;

		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > NOTES_MAX ||
		    !(notes = read_at(fd, ph[i].p_offset, ph[i].p_filesz, 1, file_size)))
			continue;
		n = tally_build_id_parse(notes, ph[i].p_filesz, id);
		free(notes);
	}
	free(ph);
	return n;
}

void elfsyms_debug_path(const uint8_t *id, size_t len, char *out, size_t out_len)
{
	char hex[2 * TALLY_BUILD_ID_MAX + 1];

	tally_build_id_hex(id, len, hex);
	snprintf(out, out_len, DEBUG_ROOT "%.2s/%s.debug", hex, hex + 2);
}

/* The separate debug file of a stripped file, by the build ID in its notes; "" when it has none. */
static void debug_file(int fd, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, uint64_t file_size,
		       char *out, size_t len)
{
	uint8_t id[TALLY_BUILD_ID_MAX];
	size_t n = file_build_id(fd, eh, sh, file_size, id);

	out[0] = 0;
	if (n)
		elfsyms_debug_path(id, n, out, len);
}

static bool elf_header(int fd, Elf64_Ehdr *eh)
{
	return pread(fd, eh, sizeof(*eh), 0) == (ssize_t)sizeof(*eh) &&
	       memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
}

int elfsyms_build_id(const char *path, uint8_t id[TALLY_BUILD_ID_MAX], uint64_t *size)
{
	int fd = module_file_open(path), rc = -ENOEXEC;
	Elf64_Shdr *sh = NULL;
	Elf64_Ehdr eh;
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && elf_header(fd, &eh)) {
		*size = (uint64_t)st.st_size;
		if (eh.e_shnum && eh.e_shentsize == sizeof(*sh))
			sh = read_at(fd, eh.e_shoff, eh.e_shnum, sizeof(*sh), *size);
		rc = (int)file_build_id(fd, &eh, sh, *size, id);
		free(sh);
	}
	close(fd);
	return rc;
}

static int load(int fd, uint64_t file_size, struct elfsyms *e, char *debug, size_t debug_len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *syms = NULL;
	uint64_t count, i;
	int t, rc = -ENOEXEC;

	if (!elf_header(fd, &eh) || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0)
		return -ENOEXEC;
	sh = read_at(fd, eh.e_shoff, eh.e_shnum, sizeof(*sh), file_size);
	if (!sh)
		return -ENOEXEC;
	t = pick_table(sh, eh.e_shnum, &e->full);
	if (!e->full)
		debug_file(fd, &eh, sh, file_size, debug, debug_len);
	if (t < 0) {
		rc = -ENOENT;
		goto out;
	}
	count = sh[t].sh_size / sizeof(Elf64_Sym);
	syms = read_at(fd, sh[t].sh_offset, count, sizeof(*syms), file_size);
	e->strtab =
	    read_at(fd, sh[sh[t].sh_link].sh_offset, sh[sh[t].sh_link].sh_size, 1, file_size);
	e->strsz = sh[sh[t].sh_link].sh_size;
	e->syms = calloc(count ? count : 1, sizeof(*e->syms));
	if (!syms || !e->strtab || !e->syms)
		goto out;
	for (i = 0; i < count; i++) {
		const Elf64_Sym *y = &syms[i];
		const Elf64_Shdr *in = &sh[y->st_shndx < eh.e_shnum ? y->st_shndx : 0];
		uint64_t size = y->st_size;

		if (!is_code(y, sh, eh.e_shnum) || y->st_name >= e->strsz)
			continue;
		if (!size && y->st_value - in->sh_addr < in->sh_size)
			size = in->sh_addr + in->sh_size - y->st_value;
		e->syms[e->n++] =
		    (struct sym){y->st_value, size, y->st_name, rank_of(y), y->st_size != 0};
	}
	qsort(e->syms, e->n, sizeof(*e->syms), by_start_then_rank);
	rc = e->n ? 0 : -ENOENT;
out:
	free(syms);
	free(sh);
	return rc;
}

static bool module_file(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_size <= REPORT_MODULE_MAX_BYTES;
}

int module_file_open(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) < 0)
		return -errno;
	if (!module_file(&st))
		return -ENOEXEC;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !module_file(&st)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

static int open_one(const char *path, struct elfsyms **out, char *debug, size_t debug_len)
{
	struct elfsyms *e = calloc(1, sizeof(*e));
	struct stat st;
	int fd, rc;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	fd = module_file_open(path);
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		free(e);
		return rc;
	}
	rc = load(fd, (uint64_t)st.st_size, e, debug, debug_len);
	close(fd);
	if (rc < 0) {
		elfsyms_close(e);
		return rc;
	}
	*out = e;
	return 0;
}

int elfsyms_open(const char *path, struct elfsyms **out)
{
	char debug[sizeof(DEBUG_ROOT) + 2 * TALLY_BUILD_ID_MAX + 16] = "", unused[sizeof(debug)];
	struct elfsyms *d = NULL;
	int rc = open_one(path, out, debug, sizeof(debug));

	/* stripped: the debug file's .symtab names the local functions too */
	if (debug[0] && open_one(debug, &d, unused, sizeof(unused)) == 0 && d->full) {
		elfsyms_close(*out);
		*out = d;
		return 0;
	}
	elfsyms_close(d);
	return rc;
}

static int holds(const struct sym *s, uint64_t vaddr)
{
	return s->size && vaddr - s->start < s->size;
}

const char *elfsyms_find(const struct elfsyms *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e ? e->n : 0, first, k;

	/* hi: the first symbol that starts after vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (hi == 0)
		return NULL;
	/* the symbols starting at the nearest address before vaddr, best ranked first */
	for (first = hi - 1; first > 0 && e->syms[first - 1].start == e->syms[hi - 1].start;
	     first--)
		;
	for (k = first; k < hi; k++)
		if (holds(&e->syms[k], vaddr))
			return e->strtab + e->syms[k].name;
	/* a function ended before vaddr: only a sized one that started earlier and encloses it */
	for (k = first; k > 0 && first - k < LOOK_BACK; k--)
		if (e->syms[k - 1].sized && holds(&e->syms[k - 1], vaddr))
			return e->strtab + e->syms[k - 1].name;
	return NULL;
}

int elfsyms_full(const struct elfsyms *e)
{
	return e && e->full;
}

void elfsyms_close(struct elfsyms *e)
{
	if (!e)
		return;
	free(e->strtab);
	free(e->syms);
	free(e);
}

/* ---- one table per file, for the process ---------------------------------------------- */

static struct {
	char *path;
	struct elfsyms *e; /* NULL: the file could not be read */
} * cache;
static size_t ncache, last;

static const char *cache_key(const void *ctx, size_t i)
{
	(void)ctx;
	return cache[i].path;
}

static struct pathmap cache_index = {.key = cache_key};

const char *elfsyms_lookup(const char *path, uint64_t vaddr)
{
	size_t i = last < ncache && strcmp(cache[last].path, path) == 0
		       ? last
		       : pathmap_find(&cache_index, path);
	void *grown;

	if (i == SIZE_MAX) {
		char *copy = strdup(path);

		grown = copy ? tally_array_push(&cache, &ncache, sizeof(*cache)) : NULL;
		if (!grown) {
			free(copy);
			return NULL;
		}
		i = ncache - 1;
		cache[i].path = copy;
		(void)elfsyms_open(path, &cache[i].e);
		(void)pathmap_add(&cache_index, i);
	}
	last = i;
	return cache[i].e ? elfsyms_find(cache[i].e, vaddr) : NULL;
}
