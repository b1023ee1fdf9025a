/* SPDX-License-Identifier: MIT */
/*
 * Native stacks: libgcc_s's _Unwind_Backtrace (as glibc's backtrace()), which unwinds with the
 * .eh_frame tables, cached per thread for a loop's repeated chain (unwinder.c).  A frame-pointer
 * walk would be cheaper, but libcuda, libcudart, libtorch and most distribution code are built
 * without frame pointers, so it would stop (or wander) at the first such frame; the unwind tables
 * are there because C++ exceptions need them.  Unwinding is safe here: the capture runs inside a
 * CUDA API call on an ordinary thread, not in a signal handler, and glibc >= 2.35 finds unwind
 * tables without the loader's lock
 * (_dl_find_object).  Its one unsafe moment, loading libgcc_s on first use, happens in init.
 *
 * Nothing is symbolized in the process: the file gets return addresses and, from the consumer
 * thread, the module map (dl_iterate_phdr) they are read against (tally's report side), with
 * each module's GNU build ID, read from its notes where the loader mapped them, and its file's
 * size: a reader names a frame only from a file of the same build (docs/format.md §12).
 *
 * A launch's stack starts in tally's callback, called by CUPTI, called by the driver: those frames
 * (7 of CUPTI's and a few of libcuda's on CUDA 13) say nothing about the program and would take
 * the room of its own frames, so the run of them at the top is left out.
 */
#include "nativestack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "grow.h"
#include "stacks.h"
#include "threadmem.h"
#include "unwinder.h"

#define MAX_CAPTURE    TALLY_UNWIND_MAX
#define SELF_FRAMES    8  /* tally's frames above the capture, and a sanitizer's interceptor */
#define FOREIGN_FRAMES 32 /* CUPTI's and the driver's frames between tally's and the program's */
#define MAX_FOREIGN    4

struct module_range {
	uint64_t base, lo, hi;
};

static struct module_range self;		 /* libtally's own code: its frames are left out */
static struct module_range foreign[MAX_FOREIGN]; /* CUPTI, the driver: left out at the top */
static unsigned nforeign;
static struct module_range *known;
static size_t nknown;

static void object_range(const struct dl_phdr_info *info, struct module_range *r)
{
	int i;

	r->base = info->dlpi_addr;
	r->lo = UINT64_MAX;
	r->hi = 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (lo < r->lo)
			r->lo = lo;
		if (lo + ph->p_memsz > r->hi)
			r->hi = lo + ph->p_memsz;
	}
}

struct find {
	uint64_t here;
	struct module_range *out;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	struct module_range r;

	(void)size;
	object_range(info, &r);
	if (f->here >= r.lo && f->here < r.hi) {
		*f->out = r;
		return 1;
	}
	return 0;
}

static bool in_range(const struct module_range *r, const void *pc)
{
	return (uint64_t)(uintptr_t)pc >= r->lo && (uint64_t)(uintptr_t)pc < r->hi;
}

void tally_nativestack_init(const void *const *addrs, unsigned n)
{
	struct find f = {(uint64_t)(uintptr_t)tally_nativestack_init, &self};
	unsigned i;

	tally_unwind_init();
	(void)dl_iterate_phdr(find_module, &f);
	for (i = 0; i < n && nforeign < MAX_FOREIGN; i++) {
		f = (struct find){(uint64_t)(uintptr_t)addrs[i], &foreign[nforeign]};
		if (addrs[i] && !in_range(&self, addrs[i]) && dl_iterate_phdr(find_module, &f))
			nforeign++;
	}
}

static bool in_self(const void *pc)
{
	return in_range(&self, pc);
}

static bool in_foreign(const void *pc)
{
	unsigned i;

	for (i = 0; i < nforeign; i++)
		if (in_range(&foreign[i], pc))
			return true;
	return false;
}

/* A capture's return addresses: the thread's heap block, not its stack (threadmem.h). */
static struct tally_thread_mem scratch = TALLY_THREAD_MEM(MAX_CAPTURE * sizeof(void *));

unsigned tally_nativestack_capture(struct raw_frame *out, unsigned max)
{
	void **pcs = tally_thread_mem(&scratch);
	/* Unwinding costs per frame (CFI interpreted each time): no deeper than what is kept, plus
	 * tally's own few frames and CUPTI's and the driver's at the top. */
	unsigned top = SELF_FRAMES + (nforeign ? FOREIGN_FRAMES : 0);
	int want = (int)(max + top < MAX_CAPTURE ? max + top : MAX_CAPTURE);
	int got = pcs ? tally_unwind(pcs, want) : 0, i, first = 0;
	unsigned n = 0;

	/* Start past tally's own frames (the CUPTI callback); a sanitizer's backtrace interceptor
	 * may come before them. */
	for (i = 0; i < got && i < SELF_FRAMES; i++)
		if (in_self(pcs[i]))
			first = i + 1;
	while (first < got && in_foreign(pcs[first]))
		first++;
	for (i = first; i < got && n < max; i++, n++) {
		out[n].key = (uint64_t)(uintptr_t)pcs[i];
		out[n].line = 0;
		out[n].type = TALLY_FRAME_NATIVE;
		out[n].aux = 0;
	}
	return n;
}

static bool is_known(uint64_t pc)
{
	size_t i;

	for (i = 0; i < nknown; i++)
		if (pc >= known[i].lo && pc < known[i].hi)
			return true;
	return false;
}

static bool same_module(const struct module_range *r)
{
	size_t i;

	for (i = 0; i < nknown; i++)
		if (known[i].base == r->base && known[i].lo == r->lo)
			return true;
	return false;
}

/* Whether [vaddr, vaddr + len) lies in a readable PT_LOAD segment's file bytes: memory the loader
 * mapped for the object, so that reading it cannot fault. */
static bool mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && vaddr >= ph->p_vaddr &&
		    len <= ph->p_filesz && vaddr - ph->p_vaddr <= ph->p_filesz - len)
			return true;
	}
	return false;
}

/* The object's GNU build ID, from its PT_NOTE segments in memory (the loader mapped them with the
 * first PT_LOAD): no file is opened, nothing allocated.  Its length, or 0 when it has none. */
static size_t build_id_of(const struct dl_phdr_info *info, uint8_t id[TALLY_BUILD_ID_MAX])
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		size_t n;

		if (ph->p_type != PT_NOTE || !mapped(info, ph->p_vaddr, ph->p_filesz))
			continue;
		n = tally_build_id_parse((const void *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr),
					 ph->p_filesz, id);
		if (n)
			return n;
	}
	return 0;
}

static int describe_new(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tally_buf *out = arg;
	struct module_range r, *grown;
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;
	uint8_t id[TALLY_BUILD_ID_MAX];
	struct tally_module_facts facts = {.build_id = id};
	struct stat st;
	ssize_t len;

	(void)size;
	object_range(info, &r);
	if (r.hi <= r.lo || same_module(&r) || nknown >= TALLY_MODULES_MAX)
		return 0;
	grown = tally_array_push(&known, &nknown, sizeof(*known));
	if (!grown)
		return 1;
	*grown = r;
	facts.build_id_len = build_id_of(info, id);
	if (!path || !*path) { /* the main program: its file even when it was replaced or removed */
		len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[len > 0 ? len : 0] = 0;
		/* replaced (an install renames a new build over it): the kernel says "PATH
		 * (deleted)"; the path is the program's, and the build ID says which build ran */
		if (len > 10 && strcmp(exe + len - 10, " (deleted)") == 0)
			exe[len - 10] = 0;
		path = exe;
		if (stat("/proc/self/exe", &st) == 0)
			facts.file_size = (uint64_t)st.st_size;
	} else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		facts.file_size = (uint64_t)st.st_size;
	}
	tally_module_put(out, r.base, r.lo, r.hi, path, &facts);
	return 0;
}

void tally_nativestack_modules_for(uint64_t pc, struct tally_buf *out)
{
	if (is_known(pc))
		return;
	(void)dl_iterate_phdr(describe_new, out);
}

void tally_nativestack_forget_modules(void)
{
	free(known);
	known = NULL;
	nknown = 0;
}
