/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's Python frames without the GIL, read in place.
 *
 * PyTorch (and most C extensions) release the GIL before they call into CUDA: its generated
 * bindings run every op under pybind11::gil_scoped_release.  At the launch the thread holds no
 * GIL, so the public frame API (which takes references and, from 3.11, creates frame objects)
 * cannot be used.  But the thread's own frames cannot change while it is inside that C call:
 * they are its own, and it is busy in CUDA.  So, as py-spy and austin do from outside the
 * process, the collector reads them in place: PyGILState_GetThisThreadState() (public, no GIL
 * needed) gives the thread state, and from it the chain of interpreter frames, each with its code
 * object and instruction pointer.  Nothing is written, nothing allocated, no reference count is
 * touched.
 *
 * The layouts are CPython's internal ones, per version (3.11 checked against its headers; 3.12
 * and 3.13 from theirs).  Before the first use the layout is validated with reads that cannot
 * crash (write() of the address into a pipe returns EFAULT for a bad one): the thread state's
 * frame chain must lead to objects whose type is PyCode_Type, with PyUnicode_Type names.  If it
 * does not, this path stays off and only threads holding the GIL get stacks (pystack.c).
 */
#include "pyframes.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacks.h"

struct layout {
	int minor;
	int ts_frame;	  /* offset in PyThreadState of cframe (3.11, 3.12) or current_frame */
	int cframe_frame; /* offset in _PyCFrame of current_frame; -1: none (3.13) */
	int fr_code;	  /* _PyInterpreterFrame: f_code / f_executable */
	int fr_previous;  /* ... previous */
	int fr_instr;	  /* ... prev_instr (3.11; later versions use the public GetLasti) */
	int fr_owner;	  /* ... owner */
	int owner_cstack; /* FRAME_OWNED_BY_CSTACK (entry shims, not Python's); -1 none */
	int co_filename;  /* PyCodeObject */
	int co_qualname;
	int co_code;	/* co_code_adaptive: the instructions (3.11) */
	int ascii_size; /* sizeof(PyASCIIObject): where compact ASCII text starts */
	int utf8;	/* PyCompactUnicodeObject.utf8 */
};

/* Candidates in order; validation moves to the next of the same version when one fails (3.13's
 * thread state gained eval_breaker during its development: 72 with it, 64 without). */
static const struct layout layouts[] = {
    {11, 56, 8, 32, 48, 56, 69, -1, 112, 128, 184, 48, 56},
    {12, 56, 0, 0, 8, -1, 70, 3, 112, 128, -1, 40, 48},
    {13, 72, -1, 0, 8, -1, 70, 3, 112, 128, -1, 40, 48},
    {13, 64, -1, 0, 8, -1, 70, 3, 112, 128, -1, 40, 48},
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

static struct {
	const struct layout *l; /* written only before state becomes 1 (then read-only) */
	void *(*this_thread_state)(void);
	int (*frame_lasti)(void *frame); /* PyUnstable_InterpreterFrame_GetLasti, 3.12+ */
	int (*addr2line)(void *code, int byte_offset);
	const void *code_type, *unicode_type;
	int probe[2];		/* the pipe the validation reads through */
	_Atomic int state;	/* 0 not yet validated, 1 valid, -1 off */
	_Atomic unsigned tries; /* validations attempted with no frame to check */
	int skew; /* tests: TALLY_TEST_PYFRAMES_SKEW moves the thread state's frame field (a wrong
		     layout must be refused, not crash) */
} pf;

#define LOAD(p, off, type) (*(type const *)((const char *)(p) + (off)))

int tally_pyframes_init(void)
{
	const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	const char *skew = getenv("TALLY_TEST_PYFRAMES_SKEW");
	int major = 0, minor = 0;
	size_t i;

	pf.skew = skew ? atoi(skew) : 0;
	if (!version || sscanf(version(), "%d.%d", &major, &minor) != 2 || major != 3)
		return -ENOTSUP;
	for (i = NLAYOUTS; i-- > 0;)
		if (layouts[i].minor == minor)
			pf.l = &layouts[i]; /* the first candidate of this version */
	*(void **)&pf.this_thread_state = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	*(void **)&pf.frame_lasti = dlsym(RTLD_DEFAULT, "PyUnstable_InterpreterFrame_GetLasti");
	*(void **)&pf.addr2line = dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	pf.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	pf.unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	if (!pf.l || !pf.this_thread_state || !pf.addr2line || !pf.code_type || !pf.unicode_type ||
	    (pf.l->fr_instr < 0 && !pf.frame_lasti) ||
	    pipe2(pf.probe, O_CLOEXEC | O_NONBLOCK) < 0) {
		atomic_store(&pf.state, -1);
		return -ENOTSUP;
	}
	return 0;
}

/* ---- validation: reads that report a bad address instead of faulting --------------------- */

static bool safe_read(const void *addr, void *out, size_t n)
{
	ssize_t w = write(pf.probe[1], addr, n);

	if (w != (ssize_t)n) {
		if (w > 0)
			(void)!read(pf.probe[0], out, (size_t)w);
		return false;
	}
	return read(pf.probe[0], out, n) == (ssize_t)n;
}

static bool safe_ptr(const void *base, int off, const void **out)
{
	return base && safe_read((const char *)base + off, out, sizeof(*out));
}

static bool safe_typed(const void *obj, const void *type)
{
	const void *t = NULL;

	return safe_ptr(obj, 8, &t) && t == type; /* ob_type follows ob_refcnt */
}

static const void *safe_first_frame(const void *ts)
{
	const void *p = NULL;

	if (!safe_ptr(ts, pf.l->ts_frame + pf.skew, &p) || !p)
		return NULL;
	if (pf.l->cframe_frame >= 0 && !safe_ptr(p, pf.l->cframe_frame, &p))
		return NULL;
	return p;
}

/* 1 valid, -1 not, 0 nothing to check yet (no Python frame on this thread). */
static int validate(const void *ts)
{
	const void *frame = safe_first_frame(ts), *code, *s;
	int frames = 0;
	char owner;

	for (; frame && frames < 64; frames++) {
		if (!safe_ptr(frame, pf.l->fr_code, &code) ||
		    !safe_read((const char *)frame + pf.l->fr_owner, &owner, 1) || owner < 0 ||
		    owner > 3)
			return -1;
		if (owner != pf.l->owner_cstack &&
		    (!safe_typed(code, pf.code_type) || !safe_ptr(code, pf.l->co_filename, &s) ||
		     !safe_typed(s, pf.unicode_type) || !safe_ptr(code, pf.l->co_qualname, &s) ||
		     !safe_typed(s, pf.unicode_type)))
			return -1;
		if (!safe_ptr(frame, pf.l->fr_previous, &frame))
			return -1;
	}
	return frames ? 1 : 0;
}

/* ---- the walk ----------------------------------------------------------------------------- */

static const void *first_frame(const void *ts)
{
	const void *p = LOAD(ts, pf.l->ts_frame + pf.skew, const void *);

	if (p && pf.l->cframe_frame >= 0)
		p = LOAD(p, pf.l->cframe_frame, const void *);
	return p;
}

/* Byte offset of the frame's current instruction in its code. */
static int32_t instruction(const void *frame, const void *code)
{
	if (pf.frame_lasti)
		return pf.frame_lasti((void *)frame);
	return (int32_t)(LOAD(frame, pf.l->fr_instr, const char *) -
			 ((const char *)code + pf.l->co_code));
}

/* The next candidate layout of the same version, or NULL. */
static const struct layout *next_candidate(const struct layout *l)
{
	return l + 1 < layouts + NLAYOUTS && l[1].minor == l->minor ? l + 1 : NULL;
}

/* Validated once, by the first thread that gets here (the others find no stack meanwhile). */
static bool ready(const void *ts)
{
	static _Atomic bool busy;
	bool idle = false;
	int v;

	if (atomic_load(&pf.state) != 0)
		return atomic_load(&pf.state) == 1;
	if (atomic_fetch_add(&pf.tries, 1) >= 1000 ||
	    !atomic_compare_exchange_strong(&busy, &idle, true))
		return false;
	while ((v = validate(ts)) < 0 && (pf.l = next_candidate(pf.l)))
		;
	if (v)
		atomic_store(&pf.state, pf.l ? v : -1);
	atomic_store(&busy, false);
	return atomic_load(&pf.state) == 1;
}

unsigned tally_pyframes_capture(struct raw_frame *out, unsigned max)
{
	const void *ts, *frame, *code;
	unsigned n = 0;

	if (!pf.l || atomic_load_explicit(&pf.state, memory_order_relaxed) < 0 ||
	    !(ts = pf.this_thread_state()) || !ready(ts))
		return 0;
	for (frame = first_frame(ts); frame && n < max;
	     frame = LOAD(frame, pf.l->fr_previous, const void *)) {
		code = LOAD(frame, pf.l->fr_code, const void *);
		if (LOAD(frame, pf.l->fr_owner, char) == pf.l->owner_cstack ||
		    LOAD(code, 8, const void *) != pf.code_type)
			continue;
		out[n].key = (uint64_t)(uintptr_t)code;
		out[n].line = (uint32_t)instruction(frame, code);
		out[n].type = TALLY_FRAME_PYTHON;
		/* a freed code object's address reused by another: its names differ */
		out[n].aux = (uint64_t)(uintptr_t)LOAD(code, pf.l->co_filename, const void *) ^
			     (uint64_t)(uintptr_t)LOAD(code, pf.l->co_qualname, const void *) << 1;
		n++;
	}
	return n;
}

/* A str's UTF-8 text where it is there to read (compact ASCII, or a cached UTF-8 form). */
static void copy_str(const void *s, char *out, size_t len)
{
	uint32_t state = LOAD(s, 32, uint32_t); /* after ob_refcnt, ob_type, length, hash */
	bool compact = state >> 5 & 1, ascii = state >> 6 & 1;
	const char *text = NULL;

	if (compact && ascii)
		text = (const char *)s + pf.l->ascii_size;
	else if (compact)
		text = LOAD(s, pf.l->utf8, const char *);
	snprintf(out, len, "%s", text ? text : "<non-ASCII name>");
}

bool tally_pyframes_name(uint64_t key, uint32_t *line, char *file, size_t file_len, char *func,
			 size_t func_len)
{
	const void *code = (const void *)(uintptr_t)key;

	/* read-only: the line table is immutable, and PyCode_Addr2Line only walks it */
	*line = (uint32_t)pf.addr2line((void *)code, (int)*line);
	copy_str(LOAD(code, pf.l->co_filename, const void *), file, file_len);
	copy_str(LOAD(code, pf.l->co_qualname, const void *), func, func_len);
	return true;
}
