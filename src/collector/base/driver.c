/* SPDX-License-Identifier: MIT */
/*
 * The CUDA driver, as the program loaded it.  libcudart (shared or static) and PyTorch open
 * libcuda.so.1 with dlopen(RTLD_LOCAL), so its symbols are not in the global scope and
 * dlsym(RTLD_DEFAULT, "cuDriverGetVersion") finds nothing; dlopen with RTLD_NOLOAD returns the
 * copy already loaded (by its SONAME) without loading anything.  The global scope is asked too,
 * for a program linked with -lcuda.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stddef.h>

void *tally_driver_sym(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
	void *sym = h ? dlsym(h, name) : NULL;

	/* NOLOAD took a reference; the program's own keeps the library (and sym) loaded */
	if (h)
		dlclose(h);
	return sym ? sym : dlsym(RTLD_DEFAULT, name);
}
