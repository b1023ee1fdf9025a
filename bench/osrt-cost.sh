#!/bin/sh
# The blocking-call interposers' cost on calls that do not block (bench/osrt-cost.c), in ns per
# call, side by side: untraced, libtally.so preloaded with recording off (what every tally
# recording pays: the interposers are always there), and --trace osrt on (1 us threshold).
# clock_ns is one clock_gettime(CLOCK_MONOTONIC): a timed call reads it twice (a VM without a
# vDSO clock pays a system call each).  Alternating runs, ROUNDS rounds, medians.  Needs no GPU.
#
#   bench/osrt-cost.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 7)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-7}
LIB=$B/src/collector/libtally.so
P=$B/bench/osrt-cost
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for r in $(seq "$ROUNDS"); do
	"$P" >>"$T/untraced"
	LD_PRELOAD=$LIB "$P" >>"$T/preloaded"
	LD_PRELOAD=$LIB TALLY_TRACE=osrt TALLY_OUTPUT="$T/o-%p.tally" "$P" >>"$T/osrt"
	rm -f "$T"/o-*.tally
done
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
echo "| ns per call (median of $ROUNDS) | untraced | libtally.so preloaded, osrt off | --trace osrt |"
echo "| --- | --- | --- | --- |"
for k in clock_ns mutex_ns read_ns poll_ns; do
	printf "| %s |" "$k"
	for c in untraced preloaded osrt; do
		printf " %s |" "$(sed -n "s/^$k //p" "$T/$c" | median)"
	done
	echo
done
