#!/bin/bash
# The cost of call stacks on the GPU, side by side in one run with the floor collector (a
# collector that only counts CUPTI's records): untraced, floor, tally with the floor's kinds
# (stacks off), and the same with stacks on (--python-stacks for the PyTorch add_ loop,
# --native-stacks for the launch loop; and --python-stacks on the launch loop, where there is no
# Python, to show it costs nothing).  Alternating runs, ROUNDS rounds, medians (min-max), us/op.
#
#   bench/stacks-overhead.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 5)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$B/gpu/workload
FLOOR=$B/bench/libtally_floor.so
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
KINDS=kernel,memcpy,memset,runtime
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/../tests/gpu/workload.cu" -lcuda || exit 1
fi

run() { # CONFIG KEY PROGRAM...: the KEY value (ns) the program prints
	local cfg=$1 key=$2; shift 2
	case $cfg in
	untraced) "$@" ;;
	floor) CUDA_INJECTION64_PATH=$FLOOR "$@" ;;
	off) "$TALLY" record -q --no-checks -t $KINDS -o "$T/%p.tally" -- "$@" ;;
	python) "$TALLY" record -q --no-checks -t $KINDS --python-stacks -o "$T/%p.tally" -- "$@" ;;
	native) "$TALLY" record -q --no-checks -t $KINDS --native-stacks -o "$T/%p.tally" -- "$@" ;;
	esac 2>/dev/null | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
minmax() { sort -n | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.3f-%.3f", mn, mx}'; }

bench() { # NAME KEY OPS "CONFIGS" PROGRAM...
	local name=$1 key=$2 ops=$3 cfgs=$4; shift 4
	for r in $(seq "$ROUNDS"); do
		for cfg in $cfgs; do
			ns=$(run $cfg "$key" "$@")
			[ -n "$ns" ] && echo "$ns $ops" | awk '{printf "%.4f\n", $1 / $2 / 1000}' >>"$T/$name.$cfg"
			rm -f "$T"/*.tally
		done
	done
	local f
	f=$(median <"$T/$name.floor")
	for cfg in $cfgs; do
		m=$(median <"$T/$name.$cfg")
		printf "| %s | %s | %s (%s) | %s |\n" "$name" "$cfg" "$m" "$(minmax <"$T/$name.$cfg")" \
			"$(echo "$m $f" | awk '{printf "%.3f", $1 / $2}')"
	done
}

echo "| workload | config | us per op, median (min-max) of $ROUNDS | / floor |"
echo "| --- | --- | --- | --- |"
bench "launch loop, 200k kernels" loop_ns 200000 "untraced floor off native python" "$W" --kernels 200000
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 50k ops" loop_ns 50000 "untraced floor off python" \
		$PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
fi
