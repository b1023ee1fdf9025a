#!/bin/sh
# What tally report costs on a big trace: the time and peak memory to write the page, its size,
# and how long headless Chromium takes to open it (the page's own figure: milliseconds from
# navigation to the end of its drawing, data-tally-ms; and the browser's wall time for
# --dump-dom, start-up included).  Not a test: it prints a table.
#
# Usage: bench/bench-html-report.sh [BUILD_DIR] [KERNELS] [ROUNDS]
#   BUILD_DIR  a build tree (default build/)
#   KERNELS    kernel launches in the trace made by the CPU test source; each is two records (API
#              call + kernel), so the default 5000000 makes 10 million records
#   ROUNDS     runs of each measurement (default 3); medians with min-max are reported
# Environment: BENCH_DIR (default $TMPDIR or /tmp), BENCH_KEEP=1 keeps the trace and the page,
# BENCH_TRACE=FILE uses that trace instead of making one.
set -eu
B=${1:-build}
KERNELS=${2:-5000000}
ROUNDS=${3:-3}
TALLY=$B/src/cli/tally
TESTSRC=$B/tests/tally-testsrc
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-html.$$
TIME=/usr/bin/time
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-html-report: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-html-report: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
trap '[ "${BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT
TRACE=${BENCH_TRACE:-$DIR/bench.tally}
PAGE=$DIR/bench.html

if [ -z "${BENCH_TRACE:-}" ]; then
	printf 'making a trace of %s kernel launches (%s records)... ' "$KERNELS" "$((2 * KERNELS))"
	# a large pool: the test source produces far faster than a GPU and must drop nothing
	"$TESTSRC" -o "$TRACE" --kernels "$KERNELS" --names 64 --pool 2048 >/dev/null
	echo done
fi
size=$(stat -c %s "$TRACE")

median() { # column: median min max of the lines on stdin
	sort -n -k"$1","$1" | awk -v c="$1" '{ v[NR] = $c } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", m, v[1], v[NR] }'
}

: >"$DIR/gen"
: >"$DIR/load"
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	"$TIME" -f '%e %M' -o "$DIR/time" "$TALLY" report -q --force -o "$PAGE" "$TRACE" 2>"$DIR/err" ||
		{ cat "$DIR/err" >&2; exit 1; }
	cat "$DIR/time" >>"$DIR/gen"
	if [ -n "$CHROME" ]; then
		t0=$(date +%s.%N)
		timeout 300 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
			--user-data-dir="$DIR/profile" --window-size=1400,1000 --dump-dom "file://$PAGE" \
			2>/dev/null >"$DIR/dom"
		t1=$(date +%s.%N)
		ms=$(sed -n 's/.*data-tally-ms="\([0-9]*\)".*/\1/p' "$DIR/dom" | head -1)
		errors=$(sed -n 's/.*<pre id="tally-errors"[^>]*>\([^<]*\)<.*/\1/p' "$DIR/dom" | head -1)
		[ -z "$errors" ] || echo "bench-html-report: the page reported errors: $errors" >&2
		echo "${ms:-0} $(echo "$t1 - $t0" | bc)" >>"$DIR/load"
	fi
	i=$((i + 1))
done
records=$("$TALLY" check -q "$TRACE" >/dev/null 2>&1; "$TALLY" report --force -o "$PAGE" "$TRACE" 2>&1 |
	sed -n 's/.*: \([0-9]*\) records -> .*/\1/p')
page=$(stat -c %s "$PAGE")
set -- $(median 1 <"$DIR/gen") $(median 2 <"$DIR/gen")

echo
echo "tally $("$TALLY" --version | cut -d' ' -f2-), $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "trace: $records records, $size bytes; $ROUNDS rounds; median (min-max)"
echo
printf '| %-40s | %s |\n' "what" "value"
printf '| %-40s | %s |\n' "----" "-----"
printf '| %-40s | %.2f s (%.2f-%.2f), %.1f M records/s |\n' "tally report: wall time" "$1" "$2" "$3" \
	"$(echo "$records / $1 / 1000000" | bc -l)"
printf '| %-40s | %.0f MiB (%.0f-%.0f) |\n' "tally report: peak RSS" "$(echo "$4 / 1024" | bc -l)" \
	"$(echo "$5 / 1024" | bc -l)" "$(echo "$6 / 1024" | bc -l)"
printf '| %-40s | %.1f MiB (%d bytes) |\n' "page size" "$(echo "$page / 1048576" | bc -l)" "$page"
if [ -s "$DIR/load" ]; then
	set -- $(median 1 <"$DIR/load") $(median 2 <"$DIR/load")
	printf '| %-40s | %s ms (%s-%s) |\n' "Chromium: page drawn (data-tally-ms)" "$1" "$2" "$3"
	printf '| %-40s | %.2f s (%.2f-%.2f) |\n' "Chromium --dump-dom wall, start-up incl." "$4" "$5" "$6"
else
	echo "(no chromium: load time not measured)"
fi
