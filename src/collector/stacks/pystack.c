/* SPDX-License-Identifier: MIT */
/*
 * The Python stack of the calling thread, through CPython's public C API found in the process at
 * run time (no build-time dependency; CPython 3.9 to 3.13).  It only reads: it never takes the
 * GIL (a thread that does not hold it gets no stack), never runs Python code, and leaves the
 * interpreter's error state as it found it.
 *
 * The walk is PyEval_GetFrame, then PyFrame_GetCode / PyFrame_GetLineNumber / PyFrame_GetBack
 * per frame (3.9+).  A frame's key is its code object; names are read once, when a (code, line)
 * is first seen, and the table keeps a reference to the code object so that its address is never
 * reused for another while the session lives.
 */
#include "pystack.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "pyframes.h"
#include "stacks.h"

typedef void PyObject;

static struct {
	int (*IsInitialized)(void);
	int (*GILState_Check)(void);
	void *(*ThreadState_Unchecked)(void); /* _PyThreadState_UncheckedGet / ..GetUnchecked */
	PyObject *(*GetFrame)(void);	      /* borrowed */
	PyObject *(*FrameGetCode)(PyObject *);
	PyObject *(*FrameGetBack)(PyObject *);
	int (*FrameGetLineNumber)(PyObject *);
	int (*FrameGetLasti)(PyObject *);      /* 3.11+ */
	int (*CodeAddr2Line)(PyObject *, int); /* 3.10+ */
	PyObject *(*GetAttrString)(PyObject *, const char *);
	const char *(*AsUTF8)(PyObject *);
	void (*IncRef)(PyObject *);
	void (*DecRef)(PyObject *);
	void (*ErrFetch)(PyObject **, PyObject **, PyObject **);
	void (*ErrRestore)(PyObject *, PyObject *, PyObject *);
	void (*ErrClear)(void);
} py;

static bool bound;

#define BIND(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

bool tally_pystack_init(bool gil_only)
{
	if (bound)
		return true;
	/* Py_IsInitialized first: a program without CPython stops here and pays nothing. */
	if (!BIND(IsInitialized, "Py_IsInitialized"))
		return false;
	if (!BIND(ThreadState_Unchecked, "PyThreadState_GetUnchecked"))
		BIND(ThreadState_Unchecked, "_PyThreadState_UncheckedGet");
	bound = BIND(GILState_Check, "PyGILState_Check") && BIND(GetFrame, "PyEval_GetFrame") &&
		BIND(FrameGetCode, "PyFrame_GetCode") && BIND(FrameGetBack, "PyFrame_GetBack") &&
		BIND(FrameGetLineNumber, "PyFrame_GetLineNumber") &&
		BIND(GetAttrString, "PyObject_GetAttrString") && BIND(AsUTF8, "PyUnicode_AsUTF8") &&
		BIND(IncRef, "Py_IncRef") && BIND(DecRef, "Py_DecRef") &&
		BIND(ErrFetch, "PyErr_Fetch") && BIND(ErrRestore, "PyErr_Restore") &&
		BIND(ErrClear, "PyErr_Clear");
	/* Where both exist a frame is keyed by its instruction offset, and the line looked up once
	 * per new (code, offset): PyFrame_GetLineNumber scans the code's line table on every call,
	 * which was 44% of a launch's capture on CPython 3.11. */
	if (bound && BIND(FrameGetLasti, "PyFrame_GetLasti"))
		BIND(CodeAddr2Line, "PyCode_Addr2Line");
	if (!py.CodeAddr2Line)
		py.FrameGetLasti = NULL;
	if (bound && !gil_only)
		(void)tally_pyframes_init();
	return bound;
}

/* Does this thread hold the GIL of a running interpreter?  PyGILState_Check answers 1 when its
 * check is off (sub-interpreters), so a current thread state is required as well. */
static bool holds_gil(void)
{
	if (!py.IsInitialized())
		return false;
	if (py.ThreadState_Unchecked && !py.ThreadState_Unchecked())
		return false;
	return py.GILState_Check() == 1;
}

/* Through the public API: only with the GIL held. */
static unsigned capture_with_gil(struct raw_frame *out, unsigned max)
{
	PyObject *frame, *back;
	unsigned n = 0;

	if (!holds_gil())
		return 0;
	frame = py.GetFrame();
	if (!frame)
		return 0;
	py.IncRef(frame);
	while (frame && n < max) {
		PyObject *code = py.FrameGetCode(frame);

		/* The code object stays alive after the DecRef: the live frame holds it. */
		out[n].key = (uint64_t)(uintptr_t)code;
		out[n].line = py.FrameGetLasti ? (uint32_t)py.FrameGetLasti(frame)
					       : (uint32_t)py.FrameGetLineNumber(frame);
		out[n].type = TALLY_FRAME_PYTHON;
		out[n].aux = 0;
		py.DecRef(code);
		n++;
		back = py.FrameGetBack(frame);
		py.DecRef(frame);
		frame = back;
	}
	if (frame)
		py.DecRef(frame);
	return n;
}

/* A str attribute of obj copied into out; false (error cleared) if there is none. */
static bool copy_attr(PyObject *obj, const char *attr, char *out, size_t len)
{
	PyObject *v = py.GetAttrString(obj, attr);
	const char *s = v ? py.AsUTF8(v) : NULL;

	if (s)
		snprintf(out, len, "%s", s);
	else
		py.ErrClear();
	if (v)
		py.DecRef(v);
	return s != NULL;
}

/* frame_namer for Python frames (GIL held: called from inside a capture's interning). */
static bool tally_pystack_name(uint64_t key, uint32_t *line, char *file, size_t file_len,
			       char *func, size_t func_len)
{
	PyObject *code = (PyObject *)(uintptr_t)key, *type, *value, *tb;
	bool ok;

	if (py.FrameGetLasti) /* the capture gave an instruction offset */
		*line = (uint32_t)py.CodeAddr2Line(code, (int)*line);
	/* Called with the GIL held, inside the capture's CUDA call: keep any pending exception. */
	py.ErrFetch(&type, &value, &tb);
	ok = copy_attr(code, "co_filename", file, file_len);
	/* co_qualname (3.11+) says Class.method; co_name is all older versions have. */
	if (!copy_attr(code, "co_qualname", func, func_len))
		ok &= copy_attr(code, "co_name", func, func_len);
	py.ErrRestore(type, value, tb);
	py.IncRef(code); /* held for the session: the key's address stays this code object's */
	return ok;
}

unsigned tally_pystack_capture(struct raw_frame *out, unsigned max, frame_namer *namer)
{
	unsigned n;

	if (!bound)
		return 0;
	/* In place first: it needs no GIL, and PyTorch's ops release it before they launch. */
	n = tally_pyframes_capture(out, max);
	if (n) {
		*namer = tally_pyframes_name;
		return n;
	}
	*namer = tally_pystack_name;
	return capture_with_gil(out, max);
}
