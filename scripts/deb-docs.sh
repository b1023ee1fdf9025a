#!/bin/sh
# The Debian package's own documents, made at build time (CMakeLists.txt, `make deb`):
#   scripts/deb-docs.sh SRC OUTDIR VERSION "MAINTAINER <ADDRESS>"
# writes OUTDIR/copyright (Debian's machine-readable format, from LICENSE and the vendored
# uPlot's licence: one copy of each text) and OUTDIR/changelog.Debian.gz (gzip -9n, dated by
# SOURCE_DATE_EPOCH, else the last commit, so that the same tree gives the same package), and
# OUTDIR/lintian-overrides (the one tag that is Debian's archive's business, said why).
set -eu
src=$1 out=$2 version=$3 maintainer=$4
mkdir -p "$out"

# a licence's text after its copyright line, as a DEP-5 paragraph (blank lines are " .")
body() { sed '1,/^Copyright/d' "$1" | sed '/./,$!d' | sed 's/^$/./; s/^/ /'; }
uplot=$(find "$src/src" -name uPlot.LICENSE | head -1)
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: tally"
	echo "Upstream-Contact: $maintainer"
	echo
	echo "Files: *"
	echo "Copyright: $(sed -n 's/^Copyright (c) //p' "$src/LICENSE")"
	echo "License: Expat"
	echo
	echo "Files: */vendor/uPlot*"
	echo "Copyright: $(sed -n 's/^Copyright (c) //p' "$uplot")"
	echo "License: Expat"
	echo "Comment: uPlot, embedded in tally's report page (tally report)."
	echo
	echo "License: Expat"
	body "$src/LICENSE"
} >"$out/copyright"

when=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
{
	echo "tally ($version) unstable; urgency=medium"
	echo
	echo "  * Upstream release $version: see /usr/share/doc/tally/README.md."
	echo
	echo " -- $maintainer  $(LC_ALL=C date -u -R -d "@$when")"
} | gzip -9n >"$out/changelog.Debian.gz"

{
	echo "# Debian's archive wants a first upload to close its ITP bug; this package is built by"
	echo "# tally's own make deb and not uploaded to the archive, so there is no such bug."
	echo "tally: initial-upload-closes-no-bugs [usr/share/doc/tally/changelog.Debian.gz:1]"
} >"$out/lintian-overrides"
