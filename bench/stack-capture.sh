#!/bin/bash
# CPU cost of Python call stacks per launch (capture + interning), without a GPU: the stand-in
# CUPTI fires the launch callback as CUDA does.  Alternates runs with and without --python-stacks
# for ROUNDS rounds and prints medians (ns per launch) at three stack depths.
#   bench/stack-capture.sh [BUILD_DIR] [ROUNDS] [N]      (defaults: build, 5, 200000)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
N=${3:-200000}
HERE=$(cd "$(dirname "$0")" && pwd)
export TALLY_CUPTI_PATH=$B/tests/exitpath/libfakecupti.so
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for r in $(seq "$ROUNDS"); do
	for cfg in off on; do
		flag=""
		[ $cfg = on ] && flag=--python-stacks
		"$B/src/cli/tally" record -q --no-checks $flag -o "$T/%p.tally" -- \
			python3 "$HERE/stack-capture.py" "$N" 2>/dev/null >>"$T/$cfg"
		rm -f "$T"/*.tally
	done
done
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
echo "| Python frames | stacks off (ns/launch) | --python-stacks (ns/launch) | cost of the stack (ns) |"
echo "| --- | --- | --- | --- |"
for d in 1 10 30; do
	off=$(awk -v d=$d '$2 == d {print $4}' "$T/off" | median)
	on=$(awk -v d=$d '$2 == d {print $4}' "$T/on" | median)
	echo "| $d | $off | $on | $(echo "$on $off" | awk '{printf "%.1f", $1 - $2}') |"
done
