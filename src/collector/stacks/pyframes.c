/* SPDX-License-Identifier: MIT */
/*
 * Python frames without the GIL, read in place.
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
 * The sampler reads *other* threads' frames the same way, while those threads run: a chain read
 * during a call or a return may be half old, half new, and may point at memory that was just
 * freed (a data-stack chunk is munmap'd when a thread returns out of it).  So from the sampler
 * every byte is read through saferead.h (process_vm_readv on ourselves: a bad address is an
 * error, never a fault), every frame's code object must be a code object, and the chain is
 * accepted only if the thread's innermost frame is the same before and after the walk; anything
 * else is a torn sample, counted and written without a stack.  (A return and a call to the same
 * depth between the two reads is not seen: the stack read is then one of the two the thread
 * had.)  Lines are computed from the code's location table with checked reads too, since the
 * code object may be freed meanwhile.
 *
 * The layouts are CPython's internal ones, per version (3.11 checked against its headers; 3.12
 * and 3.13 from theirs).  Before the first use the layout is validated with checked reads: the
 * thread state's frame chain must lead to objects whose type is PyCode_Type, with PyUnicode_Type
 * names.  If it does not, this path stays off and only threads holding the GIL get stacks
 * (pystack.c), and the sampler has no Python samples.
 */
#include "pyframes.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "saferead.h"
#include "stacks.h"

struct layout {
	int minor;
	int ts_frame;	  /* offset in PyThreadState of cframe (3.11, 3.12) or current_frame */
	int cframe_frame; /* offset in _PyCFrame of current_frame; -1: none (3.13) */
	int fr_code;	  /* _PyInterpreterFrame: f_code / f_executable */
	int fr_previous;  /* ... previous */
	int fr_instr;	  /* ... prev_instr (3.11, 3.12) / instr_ptr (3.13) */
	int fr_owner;	  /* ... owner */
	int owner_cstack; /* FRAME_OWNED_BY_CSTACK (entry shims, not Python's); -1 none */
	int co_filename;  /* PyCodeObject */
	int co_qualname;
	int co_code;	    /* co_code_adaptive: the instructions */
	int co_firstlineno; /* int */
	int co_linetable;   /* bytes: the location table */
	int ascii_size;	    /* sizeof(PyASCIIObject): where compact ASCII text starts */
	int utf8;	    /* PyCompactUnicodeObject.utf8 */
};

/* Candidates in order; validation moves to the next of the same version when one fails (3.13's
 * thread state gained eval_breaker during its development: 72 with it, 64 without). */
static const struct layout layouts[] = {
    {11, 56, 8, 32, 48, 56, 69, -1, 112, 128, 184, 72, 136, 48, 56},
    {12, 56, 0, 0, 8, 56, 70, 3, 112, 128, 192, 68, 136, 40, 48},
    {13, 72, -1, 0, 8, 56, 70, 3, 112, 128, 200, 68, 136, 40, 48},
    {13, 64, -1, 0, 8, 56, 70, 3, 112, 128, 200, 68, 136, 40, 48},
};
#define NLAYOUTS    (sizeof(layouts) / sizeof(layouts[0]))
#define FRAME_BLOCK 72	/* bytes of a frame read from outside: every field above */
#define CODE_BLOCK  144 /* bytes of a code object read from outside: up to co_linetable */
#define TS_SCAN	    1024
#define MAX_HOPS    4096
/* calibrate() reads the main thread's outermost frame, which may not have begun (no instruction
 * yet) or may be torn at the first try: it is tried again, at most this many times */
#define CALIBRATE_TRIES 1000
/* The sampler reads another thread's chain as it changes: a layout is given up only after its
 * validation failed on this many calls in a row (each a sampler tick apart, 8 reads each), so
 * that a burst of torn reads (imports under a loaded machine) does not refuse a right one. */
#define REFUSE_AFTER 64
#define TABLE_MAX    65536 /* a location table longer than this is not believed */

static struct {
	const struct layout *l; /* written only before state becomes 1 (then read-only) */
	void *(*this_thread_state)(void);
	int (*frame_lasti)(void *frame); /* PyUnstable_InterpreterFrame_GetLasti, 3.12+ */
	int (*addr2line)(void *code, int byte_offset);
	const void *code_type, *unicode_type, *bytes_type;
	_Atomic int state;	/* 0 not yet validated, 1 valid, -1 off */
	_Atomic unsigned tries; /* validations attempted with no frame to check */
	int skew; /* tests: TALLY_TEST_PYFRAMES_SKEW moves the thread state's frame field (a wrong
		     layout must be refused, not crash) */
	/* from outside (the sampler): set once by tally_pyframes_outside_init */
	int (*is_initialized)(void);
	void *(*interp_main)(void);
	void *(*thread_head)(void *interp);
	int code_off;		    /* co_code_adaptive */
	int fr_instr;		    /* the frame's instruction pointer */
	int firstlineno, linetable; /* co_firstlineno, co_linetable */
	int tid_off, pthread_off;   /* PyThreadState: native_thread_id, thread_id */
	bool lines;		    /* the location table reader agreed with CPython's */
	_Atomic int outside;	    /* 0 not yet, 1 ready, -1 never */
	unsigned outside_tries;
	unsigned outside_failures; /* validations failed in a row for this layout (REFUSE_AFTER) */
	unsigned calibrations;	   /* calibrate() calls so far (tally_pyframes_lines_retry) */
} pf;

static _Atomic bool busy; /* one validation at a time */

#define LOAD(p, off, type) (*(type const *)((const char *)(p) + (off)))

/* The interpreter's version from Py_Version (3.11 and later: PY_VERSION_HEX as a constant), not
 * Py_GetVersion(), which formats into a static buffer that the interpreter's own start-up may be
 * writing at the same moment: read half-written it refused a right CPython (1 run in some tens
 * under a loaded CI, 3.12 and 3.13). */
static bool python_version(int *major, int *minor)
{
	const unsigned long *v = dlsym(RTLD_DEFAULT, "Py_Version");

	if (!v)
		return false;
	*major = (int)(*v >> 24 & 0xff);
	*minor = (int)(*v >> 16 & 0xff);
	return true;
}

int tally_pyframes_init(void)
{
	const char *skew = getenv("TALLY_TEST_PYFRAMES_SKEW");
	int major = 0, minor = 0;
	size_t i;

	if (pf.l)
		return 0;
	pf.skew = skew ? atoi(skew) : 0;
	if (!python_version(&major, &minor) || major != 3)
		return -ENOTSUP;
	*(void **)&pf.this_thread_state = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	*(void **)&pf.frame_lasti = dlsym(RTLD_DEFAULT, "PyUnstable_InterpreterFrame_GetLasti");
	*(void **)&pf.addr2line = dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	pf.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	pf.unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	pf.bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
	for (i = NLAYOUTS; i-- > 0;)
		if (layouts[i].minor == minor)
			pf.l = &layouts[i]; /* the first candidate of this version */
	if (!pf.l || !pf.this_thread_state || !pf.addr2line || !pf.code_type || !pf.unicode_type ||
	    (minor > 11 && !pf.frame_lasti)) {
		pf.l = NULL;
		atomic_store(&pf.state, -1);
		return -ENOTSUP;
	}
	pf.code_off = pf.l->co_code;
	pf.fr_instr = pf.l->fr_instr;
	pf.firstlineno = pf.l->co_firstlineno;
	pf.linetable = pf.l->co_linetable;
	return 0;
}

/* ---- validation: reads that report a bad address instead of faulting --------------------- */

static bool safe_typed(const void *obj, const void *type)
{
	const void *t = NULL;

	return tally_safe_ptr(obj, 8, &t) && t == type; /* ob_type follows ob_refcnt */
}

static const void *safe_first_frame(const void *ts)
{
	const void *p = NULL;

	if (!tally_safe_ptr(ts, pf.l->ts_frame + pf.skew, &p) || !p)
		return NULL;
	if (pf.l->cframe_frame >= 0 && !tally_safe_ptr(p, pf.l->cframe_frame, &p))
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
		if (!tally_safe_ptr(frame, pf.l->fr_code, &code) ||
		    !tally_safe_read((const char *)frame + pf.l->fr_owner, &owner, 1) ||
		    owner < 0 || owner > 3)
			return -1;
		if (owner != pf.l->owner_cstack && (!safe_typed(code, pf.code_type) ||
						    !tally_safe_ptr(code, pf.l->co_filename, &s) ||
						    !safe_typed(s, pf.unicode_type) ||
						    !tally_safe_ptr(code, pf.l->co_qualname, &s) ||
						    !safe_typed(s, pf.unicode_type)))
			return -1;
		if (!tally_safe_ptr(frame, pf.l->fr_previous, &frame))
			return -1;
	}
	return frames ? 1 : 0;
}

/* The next candidate layout of the same version, or NULL. */
static const struct layout *next_candidate(const struct layout *l)
{
	return l + 1 < layouts + NLAYOUTS && l[1].minor == l->minor ? l + 1 : NULL;
}

/* ---- the calling thread's own frames ----------------------------------------------------- */

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

/* Validated once, by the first thread that gets here (the others find no stack meanwhile). */
static bool ready(const void *ts)
{
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

/* A code object's names, as the frame key's aux: a freed code object's address reused by
 * another has other names (the same value whichever reader computed it). */
static uint64_t names_aux(const void *filename, const void *qualname)
{
	return (uint64_t)(uintptr_t)filename ^ (uint64_t)(uintptr_t)qualname << 1;
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
		out[n].aux = names_aux(LOAD(code, pf.l->co_filename, const void *),
				       LOAD(code, pf.l->co_qualname, const void *));
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

/* ---- other threads, from the sampler ------------------------------------------------------ */

/* The location table (3.11+, CPython's Objects/locations.md): entries of (first byte: bit 7
 * set, code in bits 3-6, length - 1 in code units in bits 0-2) and their extra bytes; the line
 * changes by a signed varint (codes 13, 14), by 0, 1 or 2 (codes 10-12), not at all (0-9), and
 * code 15 has no line.  Returns the line of byte offset lasti, or -1. */
static int signed_varint(const uint8_t *p, const uint8_t *end)
{
	unsigned val = 0, shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift > 28)
			return 0;
		b = *p++;
		val |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return val & 1 ? -(int)(val >> 1) : (int)(val >> 1);
}

static int line_of(const uint8_t *t, size_t n, int line, int lasti)
{
	const uint8_t *p = t, *end = t + n;
	int addr = 0;

	while (p < end) {
		unsigned code = (*p >> 3) & 15, units = (*p & 7) + 1u;

		if (!(*p & 128))
			return -1; /* not an entry's first byte: not a location table */
		if (code == 13 || code == 14)
			line += signed_varint(p + 1, end);
		else if (code >= 10 && code <= 12)
			line += (int)code - 10;
		if (lasti >= addr && lasti < addr + (int)(2 * units))
			return code == 15 ? -1 : line;
		addr += (int)(2 * units);
		do
			p++;
		while (p < end && !(*p & 128));
	}
	return -1;
}

struct code_fields {
	const void *filename, *qualname, *linetable;
	int firstlineno;
	uint64_t units; /* ob_size: code units */
};

/* A code object's fields from its first CODE_BLOCK bytes; false if it is not a code object. */
static bool code_fields(const uint8_t *blk, struct code_fields *c)
{
	const void *type;

	memcpy(&type, blk + 8, sizeof(type));
	if (type != pf.code_type)
		return false;
	memcpy(&c->units, blk + 16, sizeof(c->units));
	memcpy(&c->filename, blk + pf.l->co_filename, sizeof(c->filename));
	memcpy(&c->qualname, blk + pf.l->co_qualname, sizeof(c->qualname));
	memcpy(&c->linetable, blk + pf.linetable, sizeof(c->linetable));
	memcpy(&c->firstlineno, blk + pf.firstlineno, sizeof(c->firstlineno));
	return c->units < (1u << 24);
}

/* The line of lasti in the code whose fields are c; -1 if it cannot be read. */
static int safe_line(const struct code_fields *c, int lasti)
{
	uint8_t head[32], *t;
	const void *type;
	int64_t size;
	int line;

	if (!tally_safe_read(c->linetable, head, sizeof(head)))
		return -1;
	memcpy(&type, head + 8, sizeof(type));
	memcpy(&size, head + 16, sizeof(size)); /* PyBytesObject: ob_size, then hash, then bytes */
	if (type != pf.bytes_type || size <= 0 || size > TABLE_MAX || !(t = malloc((size_t)size)))
		return -1;
	line = tally_safe_read((const char *)c->linetable + 32, t, (size_t)size)
		   ? line_of(t, (size_t)size, c->firstlineno, lasti)
		   : -1;
	free(t);
	return line;
}

/* A str's text, read with checked reads: compact ASCII, or a cached UTF-8 form. */
static bool safe_str(const void *s, char *out, size_t len)
{
	uint8_t head[64];
	const void *type, *text;
	uint32_t state;
	int64_t n;

	out[0] = 0;
	if (!tally_safe_read(s, head, (size_t)pf.l->utf8 + 8))
		return false;
	memcpy(&type, head + 8, sizeof(type));
	memcpy(&n, head + 16, sizeof(n));
	memcpy(&state, head + 32, sizeof(state));
	if (type != pf.unicode_type || n < 0 || !(state >> 5 & 1))
		return false;
	if (state >> 6 & 1) {
		text = (const char *)s + pf.l->ascii_size;
	} else {
		memcpy(&text, head + pf.l->utf8, sizeof(text));
		memcpy(&n, head + pf.l->utf8 - 8, sizeof(n)); /* utf8_length */
		if (!text) {
			snprintf(out, len, "<non-ASCII name>");
			return true;
		}
	}
	if ((size_t)n >= len)
		n = (int64_t)len - 1;
	if (!tally_safe_read(text, out, (size_t)n))
		return false;
	out[n] = 0;
	return true;
}

bool tally_pyframes_name_outside(uint64_t key, uint32_t *line, char *file, size_t file_len,
				 char *func, size_t func_len)
{
	uint8_t blk[CODE_BLOCK];
	struct code_fields c;
	int l;

	if (!tally_safe_read((const void *)(uintptr_t)key, blk, sizeof(blk)) ||
	    !code_fields(blk, &c)) {
		*line = 0;
		return false;
	}
	l = pf.lines ? safe_line(&c, (int)*line) : -1;
	*line = l > 0 ? (uint32_t)l : 0;
	return safe_str(c.filename, file, file_len) && safe_str(c.qualname, func, func_len);
}

/* The frame a sampled walk starts from: the thread state's innermost frame. */
static bool outer_top(const void *ts, const void **top)
{
	*top = NULL;
	if (!tally_safe_ptr(ts, pf.l->ts_frame, top))
		return false;
	if (*top && pf.l->cframe_frame >= 0)
		return tally_safe_ptr(*top, pf.l->cframe_frame, top);
	return true;
}

int tally_pyframes_sample(const void *ts, struct raw_frame *out, unsigned max)
{
	const void *top, *again, *frame, *code = NULL;
	uint8_t fb[FRAME_BLOCK], cb[CODE_BLOCK];
	struct code_fields c;
	unsigned n = 0, hops;

	if (atomic_load_explicit(&pf.outside, memory_order_acquire) != 1 || !outer_top(ts, &top))
		return -1;
	if (top && !tally_safe_read(top, fb, sizeof(fb)))
		return -1;
	for (frame = top, hops = 0; frame && hops < MAX_HOPS; hops++) {
		const void *prev, *ip;
		char owner = (char)fb[pf.l->fr_owner];
		int64_t lasti;

		memcpy(&code, fb + pf.l->fr_code, sizeof(code));
		memcpy(&prev, fb + pf.l->fr_previous, sizeof(prev));
		memcpy(&ip, fb + pf.fr_instr, sizeof(ip));
		if (owner < 0 || owner > 3)
			return -1;
		/* this frame's code and the next frame in one read */
		if (prev && owner != pf.l->owner_cstack && n < max) {
			if (!tally_safe_read2(code, cb, sizeof(cb), prev, fb, sizeof(fb)))
				return -1;
		} else if (owner != pf.l->owner_cstack && n < max) {
			if (!tally_safe_read(code, cb, sizeof(cb)))
				return -1;
		} else if (prev && !tally_safe_read(prev, fb, sizeof(fb))) {
			return -1;
		}
		if (owner != pf.l->owner_cstack && n < max) {
			if (!code_fields(cb, &c))
				return -1;
			lasti = (const char *)ip - ((const char *)code + pf.code_off);
			if (lasti < 0 || lasti > (int64_t)(2 * c.units))
				lasti = 0; /* a frame that has not started: its first line */
			out[n].key = (uint64_t)(uintptr_t)code;
			out[n].line = (uint32_t)lasti;
			out[n].type = TALLY_FRAME_PYTHON;
			out[n].aux = names_aux(c.filename, c.qualname);
			n++;
		}
		if (n == max)
			break;
		frame = prev;
	}
	if (hops == MAX_HOPS || !outer_top(ts, &again) || again != top)
		return -1;
	return (int)n;
}

/* ---- finding the way in from outside ------------------------------------------------------- */

static bool bind_outside(void)
{
	*(void **)&pf.is_initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	*(void **)&pf.interp_main = dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
	if (!pf.interp_main)
		*(void **)&pf.interp_main = dlsym(RTLD_DEFAULT, "PyInterpreterState_Head");
	*(void **)&pf.thread_head = dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
	return pf.is_initialized && pf.interp_main && pf.thread_head && pf.bytes_type;
}

/* The main thread's state: the one holding (main_pthread, pid) as thread_id, native_thread_id;
 * sets the two offsets. */
static const void *find_main(unsigned long main_pthread)
{
	const void *ts = pf.thread_head(pf.interp_main());
	uint64_t words[TS_SCAN / 8];
	unsigned hops, i;

	for (hops = 0; ts && hops < 256; hops++) {
		if (!tally_safe_read(ts, words, sizeof(words)))
			return NULL;
		for (i = 3; i + 1 < TS_SCAN / 8; i++)
			if (words[i] == main_pthread && words[i + 1] == (uint64_t)getpid()) {
				pf.pthread_off = (int)(8 * i);
				pf.tid_off = (int)(8 * (i + 1));
				return ts;
			}
		ts = (const void *)(uintptr_t)words[1]; /* next */
	}
	return NULL;
}

/* The outermost frame of a thread (it lives as long as the thread runs Python), and its code. */
static const void *outermost(const void *ts, const void **code)
{
	const void *frame = safe_first_frame(ts), *prev = NULL, *last = NULL;
	unsigned hops;

	for (hops = 0; frame && hops < MAX_HOPS; hops++) {
		char owner;

		if (!tally_safe_read((const char *)frame + pf.l->fr_owner, &owner, 1) ||
		    !tally_safe_ptr(frame, pf.l->fr_previous, &prev))
			return NULL;
		if (owner != pf.l->owner_cstack)
			last = frame;
		frame = prev;
	}
	return last && tally_safe_ptr(last, pf.l->fr_code, code) && safe_typed(*code, pf.code_type)
		   ? last
		   : NULL;
}

/* The first int in code bytes [lo, hi) that is want, the table's offset first; -1 if none. */
static int find_int(const uint8_t *blk, int lo, int hi, int table, int want)
{
	int v, off;

	memcpy(&v, blk + table, sizeof(v));
	if (v == want)
		return table;
	for (off = lo; off + 4 <= hi; off += 4) {
		memcpy(&v, blk + off, sizeof(v));
		if (v == want)
			return off;
	}
	return -1;
}

/* Does the bytes object at a code's offset off read as its location table: the same lines
 * as PyCode_Addr2Line at the frame's offset and at the code's first and last instructions? */
static bool is_linetable(const void *code, const uint8_t *blk, int off, int lasti, int units)
{
	struct code_fields c;
	int probe[3] = {lasti, 0, 2 * units - 2}, i;

	if (!code_fields(blk, &c))
		return false;
	memcpy(&c.linetable, blk + off, sizeof(c.linetable));
	if (!safe_typed(c.linetable, pf.bytes_type))
		return false;
	for (i = 0; i < 3; i++)
		if (probe[i] >= 0 &&
		    safe_line(&c, probe[i]) != pf.addr2line((void *)code, probe[i]))
			return false;
	return true;
}

/*
 * The fields the sampler reads beyond what validate() checked, found from CPython's own answers
 * for the main thread's outermost frame (it and its code live as long as the program), so that a
 * wrong guess of this file's table costs lines, never a wrong answer: the frame's instruction
 * pointer (the one pointer field that points into its code object), the instructions' offset in
 * the code (from PyUnstable_InterpreterFrame_GetLasti, 3.12+), co_firstlineno (what
 * PyCode_Addr2Line answers for offset -1) and co_linetable (the bytes field that reads as the
 * same lines).  Without all of them sampled frames have line 0.
 */
static void calibrate(const void *ts)
{
	const void *code = NULL, *frame = outermost(ts, &code), *ip = NULL;
	uint8_t fb[FRAME_BLOCK], cb[CODE_BLOCK];
	int off, lasti = -1, lt = -1;
	uint64_t units;

	pf.lines = false;
	if (!frame || !tally_safe_read(frame, fb, sizeof(fb)) ||
	    !tally_safe_read(code, cb, sizeof(cb)))
		return;
	memcpy(&units, cb + 16, sizeof(units));
	for (off = 40; off + 8 <= FRAME_BLOCK && !ip; off += 8) { /* the instruction pointer */
		const char *p;

		memcpy(&p, fb + off, sizeof(p));
		if (p > (const char *)code && p < (const char *)code + 1024 + 2 * units)
			ip = p, pf.fr_instr = off;
	}
	if (!ip)
		return;
	if (pf.frame_lasti) {
		lasti = pf.frame_lasti((void *)frame);
		off = (int)((const char *)ip - (const char *)code) - lasti;
		if (off > 0 && off < 1024)
			pf.code_off = off;
	}
	lasti = (int)((const char *)ip - ((const char *)code + pf.code_off));
	pf.firstlineno = find_int(cb, 48, 96, pf.l->co_firstlineno, pf.addr2line((void *)code, -1));
	if (pf.firstlineno < 0 || lasti < 0)
		return;
	if (is_linetable(code, cb, pf.l->co_linetable, lasti, (int)units))
		lt = pf.l->co_linetable;
	for (off = 96; lt < 0 && off + 8 <= CODE_BLOCK; off += 8)
		if (is_linetable(code, cb, off, lasti, (int)units))
			lt = off;
	pf.linetable = lt;
	pf.lines = lt >= 0;
}

static int outside_locked(unsigned long main_pthread, char *why, size_t len)
{
	const void *ts;
	int v = 0, i;

	if (!pf.is_initialized() || !pf.interp_main())
		return -EAGAIN;
	ts = find_main(main_pthread);
	if (!ts)
		return -EAGAIN; /* not yet a Python thread state for it */
	while (atomic_load(&pf.state) != 1) {
		/* the main thread runs on: a failed read may be a torn one, so try a few times */
		for (i = 0; i < 8 && (v = validate(ts)) < 0; i++)
			;
		if (v == 0)
			return -EAGAIN;
		if (v == 1) {
			atomic_store(&pf.state, 1);
			break;
		}
		if (++pf.outside_failures < REFUSE_AFTER)
			return -EAGAIN; /* perhaps torn: read again at the next tick */
		pf.outside_failures = 0;
		if (!(pf.l = next_candidate(pf.l))) {
			atomic_store(&pf.state, -1);
			snprintf(why, len, "this CPython's frame layout is not one tally knows");
			return -ENOTSUP;
		}
	}
	calibrate(ts);
	return 0;
}

int tally_pyframes_outside_init(unsigned long main_pthread, char *why, size_t len)
{
	bool idle = false;
	int rc;

	if (atomic_load(&pf.outside))
		return atomic_load(&pf.outside) == 1 ? 0 : -ENOTSUP;
	if (!pf.l || atomic_load(&pf.state) < 0 || !bind_outside()) {
		snprintf(why, len, "no CPython 3.11 to 3.13 with a frame layout tally knows");
		atomic_store(&pf.outside, -1);
		return -ENOTSUP;
	}
	if (!atomic_compare_exchange_strong(&busy, &idle, true))
		return -EAGAIN;
	rc = outside_locked(main_pthread, why, len);
	atomic_store(&busy, false);
	if (rc == -EAGAIN && ++pf.outside_tries > 100000) {
		snprintf(why, len, "the main thread never showed a Python frame to check");
		rc = -ENOTSUP;
	}
	if (rc != -EAGAIN)
		atomic_store_explicit(&pf.outside, rc == 0 ? 1 : -1, memory_order_release);
	return rc;
}

void tally_pyframes_lines_retry(unsigned long main_pthread)
{
	bool idle = false;
	const void *ts;

	if (pf.lines || pf.calibrations >= CALIBRATE_TRIES ||
	    atomic_load_explicit(&pf.outside, memory_order_acquire) != 1)
		return;
	if (!atomic_compare_exchange_strong(&busy, &idle, true))
		return;
	pf.calibrations++;
	if ((ts = find_main(main_pthread)))
		calibrate(ts);
	atomic_store(&busy, false);
}

unsigned tally_pyframes_threads(struct py_thread *out, unsigned max)
{
	const void *interp, *ts;
	uint64_t words[TS_SCAN / 8];
	unsigned n = 0, hops;

	if (atomic_load_explicit(&pf.outside, memory_order_acquire) != 1 || !pf.is_initialized() ||
	    !(interp = pf.interp_main()))
		return 0;
	ts = pf.thread_head((void *)interp);
	for (hops = 0; ts && n < max && hops < 1024; hops++) {
		size_t need = (size_t)pf.tid_off + 8;

		if (!tally_safe_read(ts, words, need) ||
		    (const void *)(uintptr_t)words[2] != interp) /* ->interp */
			break;
		out[n].tstate = ts;
		out[n].pthread_id = (unsigned long)words[pf.pthread_off / 8];
		out[n].tid = (pid_t)words[pf.tid_off / 8];
		n++;
		ts = (const void *)(uintptr_t)words[1];
	}
	return n;
}
