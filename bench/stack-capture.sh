#!/bin/bash
# CPU cost of call stacks per launch (capture + interning), without a GPU: the stand-in CUPTI
# fires the launch callback as CUDA does.  Python (a python3 loop, --python-stacks) and native
# (a C loop, --native-stacks), each alternating runs with and without stacks for ROUNDS rounds;
# medians (ns per launch) at three stack depths (frames of the program's own, below the launch).
#   bench/stack-capture.sh [BUILD_DIR] [ROUNDS] [N]      (defaults: build, 5, 200000)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
N=${3:-200000}
HERE=$(cd "$(dirname "$0")" && pwd)
export TALLY_CUPTI_PATH=$B/tests/exitpath/libfakecupti.so
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
one() { # NAME FLAG PROGRAM...: ROUNDS alternating runs into $T/NAME.off and $T/NAME.on
	local name=$1 flag=$2; shift 2
	for r in $(seq "$ROUNDS"); do
		"$B/src/cli/tally" record -q --no-checks -o "$T/%p.tally" -- "$@" 2>/dev/null >>"$T/$name.off"
		"$B/src/cli/tally" record -q --no-checks $flag -o "$T/%p.tally" -- "$@" 2>/dev/null >>"$T/$name.on"
		rm -f "$T"/*.tally
	done
}
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }
table() { # NAME
	for d in 1 10 30; do
		off=$(awk -v d=$d '$2 == d {print $4}' "$T/$1.off" | median)
		on=$(awk -v d=$d '$2 == d {print $4}' "$T/$1.on" | median)
		echo "| $1 | $d | $off | $on | $(echo "$on $off" | awk '{printf "%.1f", $1 - $2}') |"
	done
}
one python --python-stacks python3 "$HERE/stack-capture.py" "$N"
one native --native-stacks "$B/tests/exitpath/fakenative" loop "$N"
echo "| stacks | frames below the launch | off (ns/launch) | on (ns/launch) | cost of the stack (ns) |"
echo "| --- | --- | --- | --- | --- |"
table python
table native
