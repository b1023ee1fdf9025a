#!/bin/bash
# The cost of call stacks on the GPU, side by side in one run with the floor collector (a
# collector that only counts CUPTI's records): untraced, floor, tally with the floor's kinds
# (stacks off), and the same with stacks on (--python-stacks for the PyTorch add_ loop,
# --native-stacks for the launch loop; and --python-stacks on the launch loop, where there is no
# Python, to show it costs nothing).  Alternating runs, ROUNDS rounds, medians (min-max), us/op;
# ratios of the medians and, in brackets, the rounds' own (bench/gpu-lib.sh).
#
#   bench/stacks-overhead.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 5)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
FLOOR=$B/bench/libtally_floor.so
KINDS=kernel,memcpy,memset,runtime
. "$HERE/gpu-lib.sh"

run() { # CONFIG KEY PROGRAM...: the KEY value (ns) the program prints
	local cfg=$1 key=$2; shift 2
	case $cfg in
	untraced) "$@" ;;
	floor) CUDA_INJECTION64_PATH=$FLOOR "$@" ;;
	off) "$TALLY" record -q --no-checks -t $KINDS -o "$T/%p.tally" -- "$@" ;;
	python) "$TALLY" record -q --no-checks -t $KINDS --python-stacks -o "$T/%p.tally" -- "$@" ;;
	native) "$TALLY" record -q --no-checks -t $KINDS --native-stacks -o "$T/%p.tally" -- "$@" ;;
	esac | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}

bench() { # NAME KEY OPS "CONFIGS" PROGRAM...
	local name=$1 cfgs=$4 cfg
	rounds "$name" "$2" "$3" "$cfgs" "${@:5}"
	for cfg in $cfgs; do
		printf "| %s | %s | %s | %s |\n" "$name" "$cfg" "$(cell "$name" $cfg)" "$(over "$name" $cfg floor)"
	done
}

echo "| workload | config | us per op, median (min-max) of $ROUNDS | / floor (paired) |"
echo "| --- | --- | --- | --- |"
bench "launch loop, 200k kernels" loop_ns 200000 "untraced floor off native python" "$W" --kernels 200000
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 50k ops" loop_ns 50000 "untraced floor off python" \
		$PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
fi
