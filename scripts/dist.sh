#!/bin/sh
# The relocatable bundle (`make dist`): scripts/dist.sh BUILD OUTDIR [--with-cupti]
# Installs BUILD into a fresh tree and packs OUTDIR/tally-VERSION-linux-x86_64.tar.gz
# (tally-VERSION-linux-x86_64-with-cupti.tar.gz with --with-cupti), each unpacking to a directory
# of its own name, so that both can sit side by side:
#   bin/tally, lib/tally/libtally.so, share/doc/tally/{README.md,LICENSE,docs,examples},
#   share/man/man1/tally*.1.gz
# and with --with-cupti the toolkit's libcupti.so.MAJOR beside the collector, with the licence
# text that came with it.  tally finds lib/tally/ from its own path (/proc/self/exe) and the
# collector finds the bundled CUPTI from its own (dladdr), so the tree works wherever it is
# unpacked or mounted.  Prints the archive's path.
set -eu
build=$1 out=$2 cupti=${3:-}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
name=tally-$version-linux-$(uname -m)${cupti:+-with-cupti}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
cmake --install "$build" --prefix "$root" --strip >/dev/null
cmake --install "$build" --prefix "$root" --component bundle >/dev/null # LICENSE
rm -rf "$root/lib/tally/"*.a "$root/include" 2>/dev/null || true

if [ "$cupti" = --with-cupti ]; then
	cuda=${CUDA_HOME:-/usr/local/cuda}
	lib=$(ls "$cuda"/lib64/libcupti.so.[0-9]* "$cuda"/extras/CUPTI/lib64/libcupti.so.[0-9]* 2>/dev/null |
		grep -E 'libcupti\.so\.[0-9]+$' | head -1) || true
	[ -n "$lib" ] || { echo "dist: no libcupti.so.N under $cuda" >&2; exit 1; }
	# CUPTI is on the toolkit's redistributable list (its EULA, Attachment A): the licence goes
	# with the library.  The pip-layout toolkit keeps it in the CUPTI wheel's dist-info.
	licence=$(ls "$cuda"/dist-info/nvidia_cuda_cupti-*/licenses/License.txt "$cuda"/EULA.txt \
		"$cuda"/extras/CUPTI/doc/*icense* 2>/dev/null | head -1) || true
	[ -n "$licence" ] || { echo "dist: no CUPTI licence text under $cuda: not shipping CUPTI without it" >&2; exit 1; }
	cp -L "$lib" "$root/lib/tally/"
	mkdir -p "$root/share/doc/tally/cupti"
	cp "$licence" "$root/share/doc/tally/cupti/LICENSE.txt"
	echo "$(basename "$lib") from $lib; licence from $licence" >"$root/share/doc/tally/cupti/SOURCE"
fi
mkdir -p "$out"
archive=$out/$name.tar.gz
tar -C "$stage" --owner=0 --group=0 -czf "$archive" "$name"
echo "$archive"
