#!/bin/sh
# libtally.so goes into other people's processes: it may need nothing but libc (libdl, libpthread
# and libm are in it since glibc 2.34) and, in sanitizer builds, the sanitizer's runtime.  It is
# linked with -z defs, so a symbol declared but defined nowhere fails the build; this checks the
# result: what it needs, that every symbol it takes from outside is glibc's, and that the loader
# resolves them all (`ldd -r` names any it cannot).  CUPTI is bound at run time (dlsym), never here.
# Usage: test-symbols.sh LIBTALLY
set -u
LIB=$1
. "$(dirname "$0")/../lib.sh"
SAN='lib(asan|ubsan|tsan|stdc\+\+|gcc_s)\.so'

needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
other=$(echo "$needed" | grep -Ev "^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|libm\.so\.6|ld-linux-x86-64\.so\.2)$" | grep -Ev "^$SAN" | grep .)
[ -z "$other" ] && ok "needs only libc (and the sanitizer's runtime): $(echo $needed)" || bad "needs $other"

# Undefined, strong symbols must be versioned glibc ones (weak ones are the toolchain's optional
# hooks: __gmon_start__, _ITM_*).  A sanitizer build adds its own (__asan_*, __tsan_*, __ubsan_*).
san=$(ldd "$LIB" | awk '/lib(asan|tsan|ubsan)\.so/ { print $3 }')
nm -D --defined-only $san </dev/null 2>/dev/null | awk '{ print $3 }' | sort -u >"${TMPDIR:-/tmp}/san-syms.$$"
strays=$(nm -D --undefined-only "$LIB" | awk '$1 == "U" { print $2 }' | grep -v '@GLIBC_' |
	grep -Fvx -f "${TMPDIR:-/tmp}/san-syms.$$" | grep .)
rm -f "${TMPDIR:-/tmp}/san-syms.$$"
[ -z "$strays" ] && ok "every undefined symbol is glibc's" || bad "undefined, not glibc's: $strays"

unresolved=$(ldd -r "$LIB" 2>&1 | grep -i "undefined symbol")
[ -z "$unresolved" ] && ok "ldd -r resolves everything" || bad "$unresolved"

# The exports: the entry points and the interposed functions, nothing of the internals.
internal=$(nm -D --defined-only "$LIB" | awk '$2 == "T" { print $3 }' | grep -E '^(session_|control_|cupti_tracer|tally_|nvtx_|signals_|exitpath_|run_bounded|die_by_signal|libc_sigaction)')
[ -z "$internal" ] && ok "no internal symbol exported" || bad "exported: $internal"
# tally's own calls never go through the names it exports (libc.h): under LD_PRELOAD a call of
# read() or pthread_mutex_lock() by libtally.so itself would bind to its own interposer, so a
# contended lock of tally's would be recorded as the program blocking.  No dynamic relocation of
# libtally.so may name a symbol it defines and exports.
nm -D --defined-only "$LIB" | awk '{ print $3 }' | sed 's/@.*//' | sort -u >"${TMPDIR:-/tmp}/exports.$$"
self=$(readelf -rW "$LIB" | awk 'NF >= 5 && $5 ~ /^[A-Za-z_]/ { sub(/@.*/, "", $5); print $5 }' |
	sort -u | grep -Fx -f "${TMPDIR:-/tmp}/exports.$$" | tr '\n' ' ')
rm -f "${TMPDIR:-/tmp}/exports.$$"
[ -z "$self" ] && ok "no call of libtally.so's own binds to a name it exports (the interposers)" ||
	bad "libtally.so's own calls bind to its exported names: $self"
finish
