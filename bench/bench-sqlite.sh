#!/bin/sh
# The SQLite export's rate: `tally export -f sqlite` of one trace of RECORDS records (the trace of
# bench-scale.sh's records series), RUNS times; prints each run's cpu-seconds (user + system) and
# peak RSS, then the least cpu-seconds and the rows per cpu-second it makes (every record is one
# activity row).  The least of several runs, because the machine may be shared.  Not a test.
#
# Usage: bench/bench-sqlite.sh [BUILD_DIR]
# Environment: RECORDS (default 10000000), RUNS (default 3), BENCH_DIR (default $TMPDIR or /tmp),
#   BENCH_KEEP=1 keeps the trace and the database, EXPORT_ARGS (say --index: the indexes too)
set -eu
B=${1:-build}
RECORDS=${RECORDS:-10000000}
RUNS=${RUNS:-3}
TALLY=$(realpath "$B/src/cli/tally")
TESTSRC=$(realpath "$B/tests/tally-testsrc")
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-sqlite.$$
TIME=/usr/bin/time
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-sqlite: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-sqlite: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
trap '[ "${BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT

t=$DIR/one$RECORDS.tally
"$TESTSRC" -o "$t" --kernels $((RECORDS / 2)) --names 64 --streams 4 --pool 4096 >/dev/null
echo "tally $("$TALLY" --version | cut -d' ' -f2-), $RECORDS records, export -f sqlite ${EXPORT_ARGS:-}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
best=
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	"$TIME" -f '%U %S %M %e' -o "$DIR/time" "$TALLY" export -q -f sqlite ${EXPORT_ARGS:-} --force -o "$DIR/one.sqlite" "$t"
	cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$DIR/time")
	wall=$(cut -d' ' -f4 "$DIR/time")
	echo "run $i: $cpu cpu-s (user $(cut -d' ' -f1 "$DIR/time"), sys $(cut -d' ' -f2 "$DIR/time")), $wall s wall, $(awk '{ printf "%.0f", $3 / 1024 }' "$DIR/time") MiB"
	best=$(echo "$cpu ${best:-$cpu}" | awk '{ print ($1 < $2) ? $1 : $2 }')
done
echo "least: $best cpu-s, $(echo "$RECORDS $best" | awk '{ printf "%.0f", $1 / $2 }') rows per cpu-second"
