#!/bin/sh
# elf-check.sh FILE...: each file needs only glibc's libraries, at most GLIBC_2.34, and carries
# no run path into the build machine.  Prints one line per file; exit 1 if any fails (or none given).
# The ceiling: glibc 2.34 (Ubuntu 22.04, RHEL 9, Debian 12) is the oldest tally supports.
set -u
. "$(dirname "$0")/../lib.sh"
allowed=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 "
ceiling=2.34
for f in "$@"; do
	bad=""
	for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case "$allowed" in *" $lib "*) ;; *) bad="$bad needs $lib;" ;; esac
	done
	top=$(readelf -W --version-info "$f" | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/.*GLIBC_//' |
		sort -uV | tail -1)
	[ -n "$top" ] || bad="$bad no GLIBC version needs (not a glibc binary?);"
	[ "$(printf '%s\n%s\n' "$top" "$ceiling" | sort -V | tail -1)" = "$ceiling" ] ||
		bad="$bad needs GLIBC_$top > $ceiling;"
	path=$(readelf -d "$f" | sed -n 's/.*(R.*PATH).*\[\(.*\)\]/\1/p')
	case "$path" in "" | '$ORIGIN'*) ;; *) bad="$bad run path $path;" ;; esac
	if [ -n "$bad" ]; then
		bad "$f:$bad"
	else
		ok "$f: GLIBC_$top at most, needs $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
	fi
done
finish
