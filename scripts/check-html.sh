#!/bin/sh
# The report page's own check (src/page/html/), run by scripts/test.sh: JavaScript syntax (node
# --check, when node is there), the rules that keep hostile names out of the HTML (no innerHTML
# and friends), nothing that would end or break the <script>/<style> elements the files are
# pasted into, the markers html.c replaces, no network, the vendored uPlot's pinned version and
# checksums, and plain formatting (tabs, no trailing blanks, lines of at most 150 columns).
set -eu
cd "$(dirname "$0")/../src/page/html"
fail=0
bad() { echo "check-html: $*" >&2; fail=1; }
own="report.js report.css page.html"

if command -v node >/dev/null 2>&1; then
	node --check report.js || bad "report.js: syntax error"
else
	echo "check-html: node not found: JavaScript syntax left to the browser test"
fi
# names from traces reach the page as text only
grep -n -E 'innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function' report.js &&
	bad "report.js: HTML from strings (use textContent)"
# pasted inside <script> and <style>: these would end the element or open a comment state
for f in report.js report.css vendor/uPlot.iife.min.js vendor/uPlot.min.css vendor/uPlot.LICENSE; do
	grep -q -i -E '</(script|style)|<!--' "$f" && bad "$f: holds </script>, </style> or <!--"
done
for m in CSS DATA JS; do
	[ "$(grep -c "@@$m@@" page.html)" = 1 ] || bad "page.html: marker @@$m@@ must appear once"
done
[ "$(grep -o '@@[A-Z]*@@' page.html | wc -l)" = 3 ] || bad "page.html: unknown @@MARKER@@"
grep -n -i -E '(src|href)="?(https?:)?//' page.html && bad "page.html: loads from the network"
# the vendored library: the version pinned in scripts/fetch-uplot.sh, unchanged
version=$(sed -n 's/^VERSION=//p' ../../../scripts/fetch-uplot.sh)
head -c 80 vendor/uPlot.iife.min.js | grep -q "(v$version)" || bad "vendor/uPlot.iife.min.js is not uPlot $version"
grep -q "uPlot $version" ../html.c || bad "html.c does not name uPlot $version"
grep -q "uPlot $version" report.js || bad "report.js does not name uPlot $version"
(cd vendor && sha256sum --quiet -c SHA256SUMS) || bad "vendor/: files differ from SHA256SUMS"
# formatting of our own files
for f in $own; do
	grep -n -E '[[:blank:]]+$' "$f" && bad "$f: trailing blanks"
	grep -n -E '^ +[^ *]' "$f" && bad "$f: indent with tabs"
	awk -v f="$f" 'length($0) > 150 { printf "%s:%d: %d columns\n", f, NR, length($0); n++ } END { exit n > 0 }' "$f" ||
		bad "$f: lines over 150 columns"
done
[ "$fail" = 0 ] && echo "check-html: report page OK"
exit "$fail"
