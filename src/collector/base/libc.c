/* SPDX-License-Identifier: MIT */
/* libc's functions behind the ones libtally.so defines too; see libc.h. */
#include "libc.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>

/* The next definition of name, found once (at load; at its first call, if that comes earlier:
 * dlsym is thread-safe, and two threads that both look find the same function). */
#define NEXT(name)                                                                                 \
	({                                                                                         \
		__typeof__(&name) f_ = atomic_load_explicit(&next_##name, memory_order_relaxed);   \
		if (!f_) {                                                                         \
			*(void **)&f_ = dlsym(RTLD_NEXT, #name);                                   \
			atomic_store_explicit(&next_##name, f_, memory_order_relaxed);             \
		}                                                                                  \
		f_;                                                                                \
	})

#define LIBC_DEFINE(ret, name, params, args)                                                       \
	static __typeof__(&name) _Atomic next_##name;                                              \
	ret libc_##name params                                                                     \
	{                                                                                          \
		return NEXT(name) args;                                                            \
	}
LIBC_FUNCTIONS(LIBC_DEFINE)
#undef LIBC_DEFINE

static __typeof__(&syscall) _Atomic next_syscall;

long libc_syscall(long number, ...)
{
	typedef long (*syscall6)(long, long, long, long, long, long, long);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, number);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	return ((syscall6)NEXT(syscall))(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void libc_init(void)
{
#define LIBC_FIND(ret, name, params, args) (void)NEXT(name);
	LIBC_FUNCTIONS(LIBC_FIND)
#undef LIBC_FIND
	(void)NEXT(syscall);
}
