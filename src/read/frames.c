/* SPDX-License-Identifier: MIT */
/*
 * Call stacks for people: a frame as "function (file:line)", a stack as its frames joined, and the
 * innermost *user* frame of a stack (the first that is not Python's library, a site-package, or
 * CUDA's, CUPTI's, tally's or the C library's own code).
 *
 * Native frames are named, in order of preference: as tally record named them on the recording
 * machine after the program ended (the section's SYMBOLS chunk, format 1.4), with the files the
 * program ran; else here, from a file of the module's own build (modfile.c: its build ID checked
 * against the one recorded, never a name from another build; an older trace, which recorded no
 * build ID, is named from the file at the path, each such name marked "unverified"); else
 * "module+0xoffset", with "(build differs)" where the files here are other builds.
 *
 * Here, elfutils' libdw opens the module's file and names the address from the symbol table
 * (.symtab or .dynsym) and, where the module has DWARF line tables (or a separate debug file
 * under /usr/lib/debug), its source file and line.  libdw was picked over libbacktrace because it
 * symbolizes any ELF file offline, by path, with separate debug files; libbacktrace describes the
 * running process only.  libdw is dlopened at the first native frame, so tally itself needs
 * nothing but glibc wherever it is installed (the bundle and the .deb, docs/install.md).  Without
 * libdw (at build time, or libdw.so.1 at run time) a native frame is named from the module's own
 * ELF symbol table (elfsyms.c), without file:line; one that no symbol holds reads
 * "module+0xoffset", which `addr2line -e module` resolves by hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "grow.h"
#include "modfile.h"
#include "pathmap.h"
#include "stacks.h"
#include "symbolize.h"
#include "trace-set.h"

#ifdef TALLY_HAVE_LIBDW
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#endif

#define LABEL_MAX	1024
#define STACK_LABEL_MAX 8192

struct report_frames {
	char **frame_label; /* by frame id */
	uint32_t nframe;
	char **stack_label; /* by stack id */
	uint32_t nstack;
	uint32_t *user_frame; /* by stack id: frame id + 1, 0 not computed */
	uint32_t nuser;
	uint8_t *frame_class; /* by frame id: FRAME_USER or FRAME_LIBRARY, 0 not computed */
	uint32_t nclass;
	bool said_cut; /* the section's naming at record time was cut short: counted once */
};

enum { FRAME_USER = 1, FRAME_LIBRARY = 2 };

static struct report_frames *frames_of(struct report_section *rs)
{
	if (!rs->frames)
		rs->frames = calloc(1, sizeof(*rs->frames));
	return rs->frames;
}

static bool grow(void **arr, uint32_t *n, uint32_t id, size_t elem)
{
	uint32_t cap = *n ? *n : 64;
	void *t;

	if (id < *n)
		return true;
	while (cap <= id && cap < (1u << 26))
		cap *= 2;
	if (cap <= id || !(t = tally_resize(*arr, cap, elem)))
		return false;
	memset((char *)t + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
	*arr = t;
	*n = cap;
	return true;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- native symbolization --------------------------------------------------------------- */

#ifdef TALLY_HAVE_LIBDW
struct dw_module {
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;
};
static struct dw_module *dw_cache;
static size_t dw_n;

/* libdw's functions, from libdw.so.1 opened at the first use; ok false when it is not there. */
static struct {
	bool tried, ok;
	__typeof__(dwfl_begin) *begin;
	__typeof__(dwfl_report_offline) *report_offline;
	__typeof__(dwfl_report_end) *report_end;
	__typeof__(dwfl_module_getelf) *module_getelf;
	__typeof__(dwfl_module_addrname) *module_addrname;
	__typeof__(dwfl_module_getsrc) *module_getsrc;
	__typeof__(dwfl_lineinfo) *lineinfo;
	__typeof__(dwfl_module_addrdie) *module_addrdie;
	__typeof__(dwarf_getscopes) *getscopes;
	__typeof__(dwarf_tag) *tag;
	__typeof__(dwarf_attr) *attr;
	__typeof__(dwarf_formudata) *formudata;
	__typeof__(dwarf_formstring) *formstring;
	__typeof__(dwarf_getsrcfiles) *getsrcfiles;
	__typeof__(dwarf_filesrc) *filesrc;
} dw;
static char dw_error[256]; /* why libdw could not be used, for report_symbolizer_missing() */
static char *debuginfo_path;
static Dwfl_Callbacks dw_callbacks = {.debuginfo_path = &debuginfo_path};

static bool dw_load(void)
{
	static const char *const names[] = {
	    "dwfl_begin",
	    "dwfl_report_offline",
	    "dwfl_report_end",
	    "dwfl_module_getelf",
	    "dwfl_module_addrname",
	    "dwfl_module_getsrc",
	    "dwfl_lineinfo",
	    "dwfl_build_id_find_elf",
	    "dwfl_standard_find_debuginfo",
	    "dwfl_offline_section_address",
	    "dwfl_module_addrdie",
	    "dwarf_getscopes",
	    "dwarf_tag",
	    "dwarf_attr",
	    "dwarf_formudata",
	    "dwarf_formstring",
	    "dwarf_getsrcfiles",
	    "dwarf_filesrc",
	};
	void **const slots[] = {
	    (void **)&dw.begin,
	    (void **)&dw.report_offline,
	    (void **)&dw.report_end,
	    (void **)&dw.module_getelf,
	    (void **)&dw.module_addrname,
	    (void **)&dw.module_getsrc,
	    (void **)&dw.lineinfo,
	    (void **)&dw_callbacks.find_elf,
	    (void **)&dw_callbacks.find_debuginfo,
	    (void **)&dw_callbacks.section_address,
	    (void **)&dw.module_addrdie,
	    (void **)&dw.getscopes,
	    (void **)&dw.tag,
	    (void **)&dw.attr,
	    (void **)&dw.formudata,
	    (void **)&dw.formstring,
	    (void **)&dw.getsrcfiles,
	    (void **)&dw.filesrc,
	};
	void *h;
	size_t i;

	if (dw.tried)
		return dw.ok;
	dw.tried = true;
	/* By SONAME alone, so that LD_LIBRARY_PATH (a copy of libdw beside tally) is searched. */
	h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();

		snprintf(dw_error, sizeof(dw_error), "%s", why ? why : "libdw.so.1 not found");
		return false;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*slots[i] = dlsym(h, names[i]))) {
			snprintf(dw_error, sizeof(dw_error), "libdw.so.1 has no %s", names[i]);
			return false;
		}
	dw.ok = true;
	return dw.ok;
}

static const char *dw_key(const void *ctx, size_t i)
{
	(void)ctx;
	return dw_cache[i].path;
}

static struct pathmap dw_index = {.key = dw_key};

static Dwfl_Module *dw_open(const char *path)
{
	size_t found = pathmap_find(&dw_index, path);
	struct dw_module *t, *m;
	char *copy;
	int fd;

	if (found != SIZE_MAX)
		return dw_cache[found].mod;
	if (!(copy = strdup(path)))
		return NULL;
	if (!(t = tally_array_push(&dw_cache, &dw_n, sizeof(*t)))) {
		free(copy);
		return NULL;
	}
	m = t;
	*m = (struct dw_module){.path = copy};
	(void)pathmap_add(&dw_index, dw_n - 1);
	fd = module_file_open(path); /* refused: remembered as one that cannot be read */
	if (fd < 0)
		return NULL;
	m->dwfl = dw.begin(&dw_callbacks);
	/* libdw takes the descriptor when it succeeds; it leaves it to us when it fails */
	m->mod = m->dwfl ? dw.report_offline(m->dwfl, path, path, fd) : NULL;
	if (!m->mod)
		close(fd);
	if (m->dwfl)
		dw.report_end(m->dwfl, NULL, NULL);
	return m->mod;
}
#endif

/* GCC's clones keep their origin's name with a suffix (solver_step.constprop.0, or mangled
 * _ZL11solver_stepi.constprop.0): the length of the name the programmer wrote.  Itanium mangling
 * has no dots, so the suffix goes before demangling, which would write it as " [clone ...]". */
static size_t without_clone_suffix(const char *sym)
{
	static const char *const clones[] = {".constprop.", ".isra.",	   ".part.", ".cold",
					     ".lto_priv.",  ".localalias", ".clone."};
	size_t len = strlen(sym), i;

	for (i = 0; i < sizeof(clones) / sizeof(clones[0]); i++) {
		const char *at = strstr(sym, clones[i]);

		if (at && at > sym && (size_t)(at - sym) < len)
			len = (size_t)(at - sym);
	}
	return len;
}

/* The symbol's name as the programmer wrote it: demangled, without a clone's suffix (a suffix
 * this list does not know demangles to a trailing " [clone .x]", dropped whole).  Caller frees. */
static char *plain_name(const char *sym)
{
	char *raw = strndup(sym, without_clone_suffix(sym)), *d, *clone;

	if (!raw)
		return NULL;
	d = report_demangle(raw);
	if (d) {
		free(raw);
		raw = d;
	}
	clone = strstr(raw, " [clone ");
	if (clone)
		*clone = 0;
	return raw;
}

/* The function holding addr from the module's ELF symbol table (elfsyms.c): where libdw is
 * absent. */
static bool elf_resolve(const char *path, uint64_t addr, struct report_native_name *n)
{
	const char *sym = elfsyms_lookup(path, addr);

	if (!sym)
		return false;
	snprintf(n->sym, sizeof(n->sym), "%s", sym);
	return true;
}

#ifdef TALLY_HAVE_LIBDW

/* The file of a CU's file table entry; relative names (as the compiler was given them) below
 * the CU's compilation directory, as the line table's names are. */
static void cu_file(Dwarf_Die *cu, Dwarf_Word fidx, char *out, size_t len)
{
	Dwarf_Attribute at;
	Dwarf_Files *files;
	size_t nfiles;
	const char *f = NULL, *dir;

	if (dw.getsrcfiles(cu, &files, &nfiles) == 0 && fidx < nfiles)
		f = dw.filesrc(files, fidx, NULL, NULL);
	if (!f)
		return;
	dir = f[0] == '/' ? NULL : dw.formstring(dw.attr(cu, DW_AT_comp_dir, &at));
	if (dir)
		snprintf(out, len, "%s/%s", dir, f);
	else
		snprintf(out, len, "%s", f);
}

/* The line of an address in the function its symbol names.  Where code was inlined there (nvcc's
 * host stub of a __global__ function is inlined at each <<<>>>), the line table gives the inlined
 * function's line: the outermost inlined call's site is the line in the symbol's own function.
 * file (len bytes) and lineno are left as they are where nothing was inlined. */
static void call_site(Dwfl_Module *mod, GElf_Addr a, char *file, size_t len, int *lineno)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dw.module_addrdie(mod, a, &bias), *scopes = NULL, *outer = NULL;
	Dwarf_Attribute at;
	Dwarf_Word fidx, line;
	int n, i;

	n = cu ? dw.getscopes(cu, a - bias, &scopes) : 0;
	for (i = 0; i < n; i++)
		if (dw.tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			outer = &scopes[i];
	if (outer && dw.formudata(dw.attr(outer, DW_AT_call_file, &at), &fidx) == 0 &&
	    dw.formudata(dw.attr(outer, DW_AT_call_line, &at), &line) == 0 && line > 0) {
		cu_file(cu, fidx, file, len);
		*lineno = (int)line;
	}
	free(scopes);
}

/* The symbol holding addr and, where the module has line tables, its file and line; false when
 * the module or the symbol is unknown. */
static bool dw_resolve(const char *path, uint64_t addr, struct report_native_name *n)
{
	Dwfl_Module *mod = dw_load() ? dw_open(path) : NULL;
	GElf_Addr bias = 0, a;
	const char *sym, *file = NULL;
	Dwfl_Line *line;
	int lineno = 0;

	if (!mod)
		return false;
	/* dwfl_report_offline places the module at its ELF addresses (plus its own bias). */
	(void)dw.module_getelf(mod, &bias);
	a = addr + bias;
	sym = dw.module_addrname(mod, a);
	if (!sym)
		return false;
	snprintf(n->sym, sizeof(n->sym), "%s", sym);
	line = dw.module_getsrc(mod, a);
	if (line && (file = dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL)) != NULL) {
		snprintf(n->file, sizeof(n->file), "%s", file);
		call_site(mod, a, n->file, sizeof(n->file), &lineno);
		n->line = lineno > 0 ? (uint32_t)lineno : 0;
	}
	return true;
}
#endif

static const char *unsymbolized_why;
static struct report_symbols_said said;

bool report_native_name(const struct tally_module *m, uint64_t addr, struct report_native_name *n)
{
	struct modfile file = modfile_find(m);

	memset(n, 0, sizeof(*n));
	n->verdict = file.verdict;
	if (!file.path)
		return false;
	n->unverified = file.verdict == MODFILE_UNVERIFIED;
#ifdef TALLY_HAVE_LIBDW
	if (dw_resolve(file.path, addr, n))
		return true;
	if (!dw.ok)
		unsymbolized_why = dw_error;
#else
	unsymbolized_why = "tally was built without libdw (elfutils)";
#endif
	memset(n->file, 0, sizeof(n->file));
	n->line = 0;
	return elf_resolve(file.path, addr, n);
}

/* "func (file:line)" or "func (module)"; "func [unverified] (...)" for a name from a file the
 * trace could not check (the location stays last: reports cut its line off to group by
 * function). */
#define UNVERIFIED " [unverified]"

static void name_label(const char *sym, const char *file, uint32_t line, const char *module,
		       bool unverified, char *out, size_t len)
{
	char *name = plain_name(sym);
	const char *mark = unverified ? UNVERIFIED : "";

	if (file && *file)
		snprintf(out, len, "%s%s (%s:%u)", name ? name : sym, mark, file, line);
	else
		snprintf(out, len, "%s%s (%s)", name ? name : sym, mark, module);
	free(name);
}

static void native_label(struct report_section *rs, uint32_t frame_id, const struct tally_frame *f,
			 char *out, size_t len)
{
	const struct tally_stack_tables *t = &rs->s->stacks;
	const struct tally_module *m = tally_module_of(t, f->pc);
	const struct tally_symbol *y = tally_symbol_of(t, frame_id);
	struct report_frames *fr = frames_of(rs);
	/* A return address points after the call: look up the call instruction itself.  A
	 * sample's innermost frame (format 1.3) is the instruction itself. */
	unsigned back = f->type == TALLY_FRAME_NATIVE_PC ? 0 : 1;
	uint64_t addr = m ? f->pc - m->base - back : f->pc;
	struct report_native_name n;

	if (t->symbols_info.present && t->symbols_info.state != TALLY_SYMBOLS_COMPLETE && fr &&
	    !fr->said_cut) {
		fr->said_cut = true;
		said.sections_cut++;
	}
	if (y && *y->func) { /* named where it was recorded */
		name_label(y->func, y->file, y->line, m ? base_name(m->path) : "?",
			   y->flags & TALLY_SYMF_UNVERIFIED, out, len);
		return;
	}
	if (!m) {
		snprintf(out, len, "[0x%llx]", (unsigned long long)f->pc);
		return;
	}
	if (report_native_name(m, addr, &n)) {
		said.frames_unverified += n.unverified;
		name_label(n.sym, n.file, n.line, base_name(m->path), n.unverified, out, len);
		return;
	}
	said.frames_other_build += n.verdict == MODFILE_OTHER_BUILD;
	snprintf(out, len, "%s+0x%llx%s", base_name(m->path), (unsigned long long)addr + back,
		 n.verdict == MODFILE_OTHER_BUILD ? " (build differs)" : "");
}

const char *report_symbolizer_missing(void)
{
	return unsymbolized_why;
}

void report_symbols_say(struct report_symbols_said *out)
{
	*out = said;
}

/* ---- labels ----------------------------------------------------------------------------- */

const char *report_frame_label(struct report_section *rs, uint32_t frame_id)
{
	struct report_frames *fr = frames_of(rs);
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame_id);
	char buf[LABEL_MAX];

	if (!f)
		return "[frame lost]";
	if (!fr || !grow((void **)&fr->frame_label, &fr->nframe, frame_id, sizeof(char *)))
		return "[out of memory]";
	if (fr->frame_label[frame_id])
		return fr->frame_label[frame_id];
	if (f->type == TALLY_FRAME_PYTHON)
		snprintf(buf, sizeof(buf), "%s (%s:%u)", *f->func ? f->func : "?", f->file,
			 f->line);
	else
		native_label(rs, frame_id, f, buf, sizeof(buf));
	fr->frame_label[frame_id] = strdup(buf);
	return fr->frame_label[frame_id] ? fr->frame_label[frame_id] : "[out of memory]";
}

const char *report_stack_label(struct report_section *rs, uint32_t stack_id)
{
	struct report_frames *fr = frames_of(rs);
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, stack_id);
	char buf[STACK_LABEL_MAX];
	size_t used = 0;
	uint32_t i;

	if (!st)
		return stack_id ? "[stack lost]" : "[no stack]";
	if (!fr || !grow((void **)&fr->stack_label, &fr->nstack, stack_id, sizeof(char *)))
		return "[out of memory]";
	if (fr->stack_label[stack_id])
		return fr->stack_label[stack_id];
	buf[0] = 0;
	for (i = 0; i < st->nframes && used + 1 < sizeof(buf); i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? " <- " : "",
					 report_frame_label(rs, st->frames[i]));
	fr->stack_label[stack_id] = strdup(buf);
	return fr->stack_label[stack_id] ? fr->stack_label[stack_id] : "[out of memory]";
}

/* Native frames that are CUDA's however they are linked: nvcc's launch stubs (compiled into the
 * program, from its .cudafe1.stub.c), the runtime's inline helpers and templates (cuda_runtime.h,
 * crt/device_functions.h's __cudaLaunchKernel_helper, where the program was built without
 * optimization), and a static libcudart's entry points and internals (cudart::, __cudart<N>). */
static bool is_cuda_glue(const char *label)
{
	static const char *const name_prefix[] = {"__device_stub_", "cudaLaunch",
						  "cudart::", "__cuda"};
	static const char *const file_part[] = {
	    ".cudafe1.stub.c", "/cuda_runtime.h:", "/cuda_runtime_api.h:", "/include/crt/"};
	size_t i;

	for (i = 0; i < sizeof(name_prefix) / sizeof(name_prefix[0]); i++)
		if (strncmp(label, name_prefix[i], strlen(name_prefix[i])) == 0)
			return true;
	for (i = 0; i < sizeof(file_part) / sizeof(file_part[0]); i++)
		if (strstr(label, file_part[i]))
			return true;
	return false;
}

/* Whether label is the host side of the kernel whose nvcc stub stub_label is: the function
 * nvcc defines under the kernel's own name (tiny(int*), at the kernel's line), which calls
 * __device_stub__Z4tinyPi.  Optimized, it is inlined or a tail call; built -O0 it is a frame of
 * its own between the stub and the <<<>>>, and is CUDA's, not the program's. */
static bool is_kernel_host_side(const char *stub_label, const char *label)
{
	const char *mangled = stub_label + strlen("__device_stub_");
	char *raw, *demangled;
	const char *name;
	bool same;

	if (strncmp(stub_label, "__device_stub_", strlen("__device_stub_")) != 0)
		return false;
	raw = strndup(mangled, strcspn(mangled, "( "));
	demangled = raw ? report_demangle(raw) : NULL;
	name = demangled ? demangled : raw;
	same = name && strncmp(label, name, strlen(name)) == 0 &&
	       (strncmp(label + strlen(name), " (", 2) == 0 ||
		strncmp(label + strlen(name), UNVERIFIED " (", strlen(UNVERIFIED) + 2) == 0);
	free(demangled);
	free(raw);
	return same;
}

/* Library code: the frame says where the call came from, not why. */
static bool library_frame(struct report_section *rs, uint32_t frame_id, const struct tally_frame *f)
{
	static const char *const py_lib[] = {"/site-packages/", "/dist-packages/", "/lib/python",
					     "<frozen"};
	static const char *const native_lib[] = {"libcuda",  "libcupti",  "libtally", "libc.so",
						 "libc-",    "libstdc++", "ld-linux", "libpthread",
						 "libnvrtc", "libgcc_s"};
	const struct tally_module *m;
	size_t i;

	if (f->type == TALLY_FRAME_PYTHON) {
		for (i = 0; i < sizeof(py_lib) / sizeof(py_lib[0]); i++)
			if (strstr(f->file, py_lib[i]))
				return true;
		return false;
	}
	m = tally_module_of(&rs->s->stacks, f->pc);
	if (m && strstr(base_name(m->path), "cupti")) /* CUPTI, or a stand-in for it */
		return true;
	for (i = 0; m && i < sizeof(native_lib) / sizeof(native_lib[0]); i++)
		if (strncmp(base_name(m->path), native_lib[i], strlen(native_lib[i])) == 0)
			return true;
	return is_cuda_glue(report_frame_label(rs, frame_id));
}

/* library_frame, once per frame: a stack's frames are shared by many stacks, and the module
 * lookup behind a native one walks the section's module map. */
static bool is_library_frame(struct report_section *rs, uint32_t frame_id,
			     const struct tally_frame *f)
{
	struct report_frames *fr = frames_of(rs);
	bool lib;

	if (fr && grow((void **)&fr->frame_class, &fr->nclass, frame_id, 1) &&
	    fr->frame_class[frame_id])
		return fr->frame_class[frame_id] == FRAME_LIBRARY;
	lib = library_frame(rs, frame_id, f);
	if (fr && frame_id < fr->nclass)
		fr->frame_class[frame_id] = lib ? FRAME_LIBRARY : FRAME_USER;
	return lib;
}

bool report_frame_is_library(struct report_section *rs, uint32_t frame_id)
{
	const struct tally_frame *f = tally_frame_get(&rs->s->stacks, frame_id);

	return !f || is_library_frame(rs, frame_id, f);
}

uint32_t report_user_frame(struct report_section *rs, uint32_t stack_id)
{
	struct report_frames *fr = frames_of(rs);
	const struct tally_stack *st = tally_stack_get(&rs->s->stacks, stack_id);
	uint32_t i, pick;

	if (!st || !st->nframes)
		return 0;
	if (fr && grow((void **)&fr->user_frame, &fr->nuser, stack_id, sizeof(uint32_t)) &&
	    fr->user_frame[stack_id])
		return fr->user_frame[stack_id] - 1;
	pick = st->frames[0]; /* all library: the innermost says the most */
	for (i = 0; i < st->nframes; i++) {
		const struct tally_frame *f = tally_frame_get(&rs->s->stacks, st->frames[i]);

		if (f && !is_library_frame(rs, st->frames[i], f) &&
		    !(i > 0 && is_kernel_host_side(report_frame_label(rs, st->frames[i - 1]),
						   report_frame_label(rs, st->frames[i])))) {
			pick = st->frames[i];
			break;
		}
	}
	if (fr && stack_id < fr->nuser)
		fr->user_frame[stack_id] = pick + 1;
	return pick;
}

void report_frames_free(struct report_frames *fr)
{
	uint32_t i;

	if (!fr)
		return;
	for (i = 0; i < fr->nframe; i++)
		free(fr->frame_label[i]);
	for (i = 0; i < fr->nstack; i++)
		free(fr->stack_label[i]);
	free(fr->frame_label);
	free(fr->stack_label);
	free(fr->user_frame);
	free(fr->frame_class);
	free(fr);
}
