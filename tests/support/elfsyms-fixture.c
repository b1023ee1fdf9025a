/* SPDX-License-Identifier: MIT */
/*
 * A library of known layout for tests/unit/test-elfsyms.c, built with -fno-toplevel-reorder so
 * that its functions lie in this order: an exported function, a local one (absent from .dynsym
 * once stripped), another exported one; and at the last one's address an untyped alias of the same
 * size, which must not take the function's name.
 */
__attribute__((noinline)) int elfsyms_exported_before(int x)
{
	volatile int v = x;

	return v * 3 + 1;
}

__attribute__((noinline)) static int local_after(int x)
{
	volatile int v = x;

	return v * 5 + 2;
}

__attribute__((noinline)) int elfsyms_exported_after(int x)
{
	return local_after(x) + 1;
}

__asm__(".globl elfsyms_alias_notype\n"
	".set elfsyms_alias_notype, elfsyms_exported_after\n"
	".type elfsyms_alias_notype, @notype\n"
	".size elfsyms_alias_notype, 9\n");

/* The local function's address, for the test to place it (dladdr gives the library's base). */
void *elfsyms_local_address(void)
{
	return (void *)local_after;
}
