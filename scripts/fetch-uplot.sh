#!/bin/sh
# Re-fetches the vendored uPlot (the page's charts) at its pinned version from npm and checks it
# against src/page/html/vendor/SHA256SUMS.  Not part of the build: the minified file and its
# licence are committed, so building and CI need no network.  To move to another version: change
# VERSION, run with --update, look at the diff, and commit the three files with SHA256SUMS.
# Usage: scripts/fetch-uplot.sh [--update]
set -eu
VERSION=1.6.32
cd "$(dirname "$0")/../src/page/html/vendor"
command -v npm >/dev/null 2>&1 || { echo "fetch-uplot: needs npm" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null && tar xzf "uplot-$VERSION.tgz")
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp"/
cp "$tmp/package/LICENSE" "$tmp/uPlot.LICENSE"
if [ "${1:-}" = "--update" ]; then
	cp "$tmp/uPlot.iife.min.js" "$tmp/uPlot.min.css" "$tmp/uPlot.LICENSE" .
	sha256sum uPlot.iife.min.js uPlot.min.css uPlot.LICENSE >SHA256SUMS
	echo "fetch-uplot: uPlot $VERSION vendored; the page's footer and html.c name the version"
else
	(cd "$tmp" && sha256sum -c "$OLDPWD/SHA256SUMS") && echo "fetch-uplot: the vendored files are uPlot $VERSION from npm"
fi
