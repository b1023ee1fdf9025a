#!/bin/sh
# Memory of the readers that keep something per record (stats -r all, report) on one trace of
# many records, made by the CPU test source: peak RSS and time, as GNU time measures them, and
# their bytes per record.  docs/scaling.md ("Fifty million records") has the figures; the
# readers spill what they keep per record past a budget (src/common/spill.h), so their memory
# stops growing with the records.  Not a test: a table.
#
# Usage: bench/bench-records.sh [BUILD_DIR]
# Environment:
#   RECORDS   record counts (default "50000000"; each is RECORDS/2 kernels and their launches,
#             64 names, 4 streams: about 6 bytes a record, 300 MB of trace at 50 M)
#   COMMANDS  default "stats-all report"; also "stats" (the default reports), "gaps"
#   BENCH_DIR where the traces and the spills go (default $TMPDIR or /tmp; the spills go to
#             TMPDIR: give one with room for 100 bytes a record); BENCH_KEEP=1 keeps the traces
set -eu
B=${1:-build}
RECORDS=${RECORDS:-50000000}
COMMANDS=${COMMANDS:-"stats-all report"}
TALLY=$(realpath "$B/src/cli/tally")
TESTSRC=$(realpath "$B/tests/tally-testsrc")
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-records
TIME=/usr/bin/time
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-records: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-records: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
[ "${BENCH_KEEP:-}" ] || trap 'rm -rf "$DIR"' EXIT

echo "tally $("$TALLY" --version | cut -d' ' -f2-), $(nproc) CPU(s), TALLY_JOBS=${TALLY_JOBS:-default}," \
	"TMPDIR=${TMPDIR:-/tmp}; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| records | command | exit | cpu s (user + sys) | wall s | peak RSS MiB | RSS bytes per record | output bytes |"
echo "| ------- | ------- | ---- | ------------------ | ------ | ------------ | -------------------- | ------------ |"
for r in $RECORDS; do
	t=$DIR/one$r.tally
	[ -s "$t" ] || "$TESTSRC" -o "$t" --kernels $((r / 2)) --names 64 --streams 4 --pool 4096 >/dev/null
	for cmd in $COMMANDS; do
		case $cmd in
		stats-all) set -- "$TALLY" stats -r all -o "$DIR/out" --force "$t" ;;
		stats) set -- "$TALLY" stats -o "$DIR/out" --force "$t" ;;
		gaps) set -- "$TALLY" stats -r gpu_gaps -o "$DIR/out" --force "$t" ;;
		report) set -- "$TALLY" report -q -o "$DIR/out" --force "$t" ;;
		esac
		# an exit status 1 (INCOMPLETE) is still a measurement
		"$TIME" -f '%x %U %S %e %M' -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || true
		out=$(stat -c %s "$DIR/out" 2>/dev/null || echo 0)
		tail -n1 "$DIR/time" | awk -v r="$r" -v c="$cmd" -v o="$out" '{
			printf "| %s | %s | %d | %.1f | %.1f | %.0f | %.1f | %s |\n", r, c, $1, $2 + $3,
				$4, $5 / 1024, $5 * 1024 / r, o }'
		[ -s "$DIR/err" ] && sed 's/^/    /' "$DIR/err" | head -3
		rm -f "$DIR/out"
	done
	echo "|  | ($r records: $(stat -c %s "$t") bytes of trace) | | | | | | |"
	[ "${BENCH_KEEP:-}" ] || rm -f "$t"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
