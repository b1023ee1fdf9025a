#!/bin/sh
# How fast and how small `tally compare` (and `tally stats -r gpu_gaps`) are on two traces made by
# the CPU test source through the real pipeline: wall seconds and peak RSS (GNU time).  Not a
# test: it prints a table.
#
# Usage: bench/bench-compare.sh [BUILD_DIR] [KERNELS] [ROUNDS]
#   BUILD_DIR  a build tree (default build/)
#   KERNELS    kernel launches per trace; each is two records (API call + kernel), so the default
#              5000000 makes two 10-million-record traces
#   ROUNDS     runs of each measurement (default 3); medians with min-max are reported
# Environment: BENCH_DIR (where the traces go; default $TMPDIR or /tmp), BENCH_KEEP=1 keeps them.
#
# Target (issue 9): two 10 M-record traces compared in seconds, memory bounded: 24 bytes per GPU
# record per side while reading, about 36 at the sort.
set -eu
B=${1:-build}
KERNELS=${2:-5000000}
ROUNDS=${3:-3}
TALLY=$B/src/cli/tally
TESTSRC=$B/tests/tally-testsrc
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-compare.$$
TIME=/usr/bin/time
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-compare: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-compare: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
trap '[ "${BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT

# Two runs of the same program: same kernel sequence, durations drawn anew (another seed).  The
# pool is large so that nothing is dropped: the comparison must be usable, or it would stop early.
printf 'making two traces of %s kernel launches (%s records each)... ' "$KERNELS" "$((2 * KERNELS))"
"$TESTSRC" -o "$DIR/a.tally" --kernels "$KERNELS" --names 64 --pool 2048 --seed 1 >/dev/null
"$TESTSRC" -o "$DIR/b.tally" --kernels "$KERNELS" --names 64 --pool 2048 --seed 2 >/dev/null
echo "$(stat -c %s "$DIR/a.tally") + $(stat -c %s "$DIR/b.tally") bytes"

measure() { # prints "wall_s user_s sys_s maxrss_kb"; compare's own exit status (0/1) is fine
	"$TIME" -f '%e %U %S %M' -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || [ $? -le 1 ] ||
		{ cat "$DIR/err" >&2; exit 1; }
	cat "$DIR/time"
}

stat_col() { # median, min and max of column $1 of the lines on stdin
	sort -n -k"$1","$1" | awk -v c="$1" '{ v[NR] = $c } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s %s %s\n", m, v[1], v[NR] }'
}

: >"$DIR/cmp"
: >"$DIR/gaps"
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	measure "$TALLY" compare "$DIR/a.tally" "$DIR/b.tally" >>"$DIR/cmp"
	measure "$TALLY" stats -r gpu_gaps "$DIR/a.tally" >>"$DIR/gaps"
	i=$((i + 1))
done

row() { # label file
	echo "$(stat_col 1 <"$2") $(stat_col 2 <"$2") $(stat_col 4 <"$2")" | awk -v l="$1" '{
		printf "| %-40s | %6.2f (%.2f-%.2f) | %6.2f | %8.1f |\n", l, $1, $2, $3, $4, $7 / 1024 }'
}

echo
echo "tally $("$TALLY" --version | cut -d' ' -f2-), $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "two traces of $((2 * KERNELS)) records ($KERNELS kernels) each; $ROUNDS rounds; wall seconds as median (min-max)"
echo
echo "| what                                     | wall s (min-max)   | user s | RSS MiB  |"
echo "| ---------------------------------------- | ------------------ | ------ | -------- |"
row "tally compare A B (whole run)" "$DIR/cmp"
row "tally stats -r gpu_gaps A" "$DIR/gaps"
