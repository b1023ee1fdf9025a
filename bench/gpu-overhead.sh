#!/bin/bash
# Overhead on the GPU, side by side in one run: untraced, the floor (a collector that only counts
# CUPTI's records, with CUPTI's kernel, memcpy, memset and runtime kinds), tally as it comes
# (cuda,nvtx: the same kinds plus the driver API's launch calls and NVTX), and tally with exactly
# the floor's kinds.  Workloads: a launch loop, CUDA graph replay and a PyTorch loop.  The runs
# alternate (untraced, floor, tally, tally-rt, then the next round) for ROUNDS rounds, and each
# reports the time of its own loop only (no process start, no import), so medians compare like
# with like; the ratios are of the medians and, in brackets, the rounds' own (bench/gpu-lib.sh).
#
#   bench/gpu-overhead.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 5)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
FLOOR=$B/bench/libtally_floor.so
. "$HERE/gpu-lib.sh"

# run CONFIG KEY PROGRAM...: prints the KEY value (ns) the program reports
run() {
	local cfg=$1 key=$2; shift 2
	case $cfg in
	untraced) "$@" ;;
	floor) CUDA_INJECTION64_PATH=$FLOOR "$@" ;;
	tally) "$TALLY" record -q --no-checks -o "$T/%p.tally" -- "$@" ;;
	# the floor's kinds exactly (no driver-API launch calls, no NVTX): tally's own cost
	tally-rt) "$TALLY" record -q --no-checks -t kernel,memcpy,memset,runtime -o "$T/%p.tally" -- "$@" ;;
	esac | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}

bench() { # NAME KEY OPS PROGRAM...
	local name=$1 cfg
	rounds "$name" "$2" "$3" "untraced floor tally tally-rt" "${@:4}"
	printf "| %-28s |" "$name"
	for cfg in untraced floor tally tally-rt; do
		printf " %s |" "$(cell "$name" $cfg)"
	done
	echo " $(over "$name" tally floor) | $(over "$name" tally-rt floor) |"
}

echo "| workload (us per op, median (min-max) of $ROUNDS) | untraced | floor | tally (default: cuda,nvtx) | tally -t kernel,memcpy,memset,runtime | tally/floor (paired) | tally-rt/floor (paired) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
bench "launch loop, 200k kernels" loop_ns 200000 "$W" --kernels 200000
bench "graph replay, 500k kernels" graph_loop_ns 500000 "$W" --kernels 0 --graph 1000:500
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 50k ops" loop_ns 50000 $PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
fi
