#!/bin/bash
# The cost of host sampling and blocking calls on the GPU, side by side in one run: untraced,
# tally as it comes (cuda,nvtx), and the same with --sample python, --sample native and
# --trace cuda,nvtx,osrt (all at the default 1 kHz and 1 us threshold), on the launch loop (200k
# tiny kernels from one C thread) and the PyTorch add_ loop (50k ops).  The runs alternate
# (untraced, default, python, native, osrt, default again, then the next round) for ROUNDS
# rounds; each reports the time of its own loop only, so medians compare like with like.  The
# last columns are each configuration over tally's default (the goal: 1.05 or less), as the
# ratio of the medians and, in brackets, the median of the rounds' own ratios; "again" is the
# default over itself, what the measurement moves with nothing changed (see bench/gpu-lib.sh).
#
#   bench/sampling-overhead.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 5; about 4 minutes)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/gpu-lib.sh"
CONFIGS="untraced default python native osrt again"

run() { # CONFIG KEY PROGRAM...: the KEY value (ns) the program prints
	local cfg=$1 key=$2
	shift 2
	local rec=("$TALLY" record -q --no-checks -o "$T/%p.tally")
	case $cfg in
	untraced) "$@" ;;
	default | again) "${rec[@]}" -- "$@" ;;
	python) "${rec[@]}" --sample python -- "$@" ;;
	native) "${rec[@]}" --sample native -- "$@" ;;
	osrt) "${rec[@]}" --trace cuda,nvtx,osrt -- "$@" ;;
	esac | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}

bench() { # NAME KEY OPS PROGRAM...
	local name=$1 cfg
	rounds "$name" "$2" "$3" "$CONFIGS" "${@:4}"
	printf "| %-26s |" "$name"
	for cfg in untraced default python native osrt; do
		printf " %s |" "$(cell "$name" $cfg)"
	done
	for cfg in python native osrt again; do
		printf " %s |" "$(over "$name" $cfg default)"
	done
	echo
}

echo "| workload (us per op, median (min-max) of $ROUNDS) | untraced | tally default | --sample python | --sample native | --trace ...,osrt | python/default (paired) | native/default (paired) | osrt/default (paired) | again/default (paired) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
bench "launch loop, 200k kernels" loop_ns 200000 "$W" --kernels 200000
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 50k ops" loop_ns 50000 $PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
fi
# which native mechanism ran, and what the samples and calls cost in the file
"$TALLY" record -q --no-checks --sample native -o "$T/n.tally" -- "$W" --kernels 20000 >/dev/null 2>&1
"$TALLY" check "$T/n.tally" | grep -E "sampling|samples taken"
