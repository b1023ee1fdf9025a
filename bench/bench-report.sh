#!/bin/sh
# How fast tally reads traces for people: `tally stats` (records per second, one core) and
# `tally export --format chrome` (events per second), with peak memory, on a trace made by the CPU
# test source through the real pipeline.  Not a test: it prints a table.
#
# Usage: bench/bench-report.sh [BUILD_DIR] [KERNELS] [ROUNDS]
#   BUILD_DIR  a build tree (default build/)
#   KERNELS    kernel launches in the trace; each is two records (API call + kernel), so the
#              default 5000000 makes 10 million records
#   ROUNDS     runs of each measurement (default 5); medians with min-max are reported
# Environment: BENCH_DIR (where the trace and the JSON go; default $TMPDIR or /tmp; the JSON of
# 10 million records is about 3 GB), BENCH_KEEP=1 keeps the trace.
#
# Targets (issue 5): stats >= 10 M records/s on one core; Chrome export >= 2 M events/s; memory
# bounded (streaming; only the medians' values are kept, 8 bytes per summarised record).
set -eu
B=${1:-build}
KERNELS=${2:-5000000}
ROUNDS=${3:-5}
TALLY=$B/src/cli/tally
TESTSRC=$B/tests/tally-testsrc
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-report.$$
TIME=/usr/bin/time
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-report: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-report: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
trap '[ "${BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT
TRACE=$DIR/bench.tally

# The pool is large so that the test source (which produces far faster than a GPU) drops nothing:
# the trace must be COMPLETE, or stats would be measured on less than asked for.
printf 'making a trace of %s kernel launches (%s records)... ' "$KERNELS" "$((2 * KERNELS))"
t0=$(date +%s.%N)
"$TESTSRC" -o "$TRACE" --kernels "$KERNELS" --names 64 --pool 2048 >/dev/null
t1=$(date +%s.%N)
size=$(stat -c %s "$TRACE")
printf '%.1f s, %s bytes (%.1f bytes/record)\n' "$(echo "$t1 - $t0" | bc)" "$size" \
	"$(echo "$size / (2 * $KERNELS)" | bc -l)"
# tally check's exit status is the verdict (0 COMPLETE, 1 INCOMPLETE): "INCOMPLETE" holds "COMPLETE"
"$TALLY" check -q "$TRACE" >/dev/null || { echo "bench-report: the trace is not COMPLETE" >&2; exit 1; }
records=$("$TALLY" stats -f json -r cuda_api_sum "$TRACE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')

# one run: prints "wall_s user_s sys_s maxrss_kb"
measure() {
	"$TIME" -f '%e %U %S %M' -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || { cat "$DIR/err" >&2; exit 1; }
	cat "$DIR/time"
}

# median, min and max of column $1 of the lines on stdin
stat_col() {
	sort -n -k"$1","$1" | awk -v c="$1" '{ v[NR] = $c } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", m, v[1], v[NR] }'
}

: >"$DIR/stats" ; : >"$DIR/chrome" ; : >"$DIR/null"
events=0
i=0
# alternate the measurements, round by round, so that a noisy neighbour hits all of them alike
while [ "$i" -lt "$ROUNDS" ]; do
	measure "$TALLY" stats "$TRACE" >>"$DIR/stats"
	measure "$TALLY" export -f chrome --force -o "$DIR/bench.json" "$TRACE" >>"$DIR/chrome"
	events=$(sed -n 's/.* -> \([0-9]*\) events.*/\1/p' "$DIR/err")
	rm -f "$DIR/bench.json"
	measure "$TALLY" export -f chrome --force -o /dev/null "$TRACE" >>"$DIR/null"
	i=$((i + 1))
done

row() { # label file count unit
	set -- "$1" "$2" "$3" "$4" "$(stat_col 1 <"$2")" "$(stat_col 2 <"$2")" "$(stat_col 4 <"$2")"
	# $5 wall: med min max; $6 user; $7 rss
	echo "$5 $6 $7" | awk -v l="$1" -v n="$3" -v u="$4" '{
		printf "| %-34s | %6.2f (%.2f-%.2f) | %6.2f | %8.2f M %s/s (%.2f-%.2f) | %7.1f |\n",
			l, $1, $2, $3, $4, n / $1 / 1e6, u, n / $3 / 1e6, n / $2 / 1e6, $7 / 1024 }'
}

echo
echo "tally $("$TALLY" --version | cut -d' ' -f2-), $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "trace: $records records, $size bytes; $ROUNDS rounds; wall seconds as median (min-max)"
echo
echo "| what                               | wall s (min-max)   | user s | rate, median (range)              | RSS MiB |"
echo "| ---------------------------------- | ------------------ | ------ | --------------------------------- | ------- |"
row "tally stats (default reports)" "$DIR/stats" "$records" "records"
row "tally export -f chrome (to a file)" "$DIR/chrome" "$events" "events"
row "tally export -f chrome (/dev/null)" "$DIR/null" "$events" "events"
echo
echo "chrome: $events events for $records records (a slice per record, a flow start and end per launch)"
