#!/bin/bash
# The cost of host sampling and blocking calls on the GPU, side by side in one run: untraced,
# tally as it comes (cuda,nvtx), and the same with --sample python, --sample native and
# --trace cuda,nvtx,osrt (all at the default 1 kHz and 1 us threshold), on the launch loop (200k
# tiny kernels from one C thread) and the PyTorch add_ loop (50k ops).  The runs alternate
# (untraced, default, python, native, osrt, then the next round) for ROUNDS rounds; each reports
# the time of its own loop only, so medians compare like with like.  The last columns are each
# configuration over tally's default (the goal: 1.05 or less): the ratio of the medians, and in
# brackets the median over the rounds of each round's own ratio (runs of one round are next to
# each other in time, so a machine that drifts between rounds, as the GPU machine's shared CPUs
# do by 10-20%, moves both alike).
#
#   bench/sampling-overhead.sh [BUILD_DIR] [ROUNDS]       (defaults: build, 5; about 3 minutes)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$B/gpu/workload
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
CONFIGS="untraced default python native osrt"
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/../tests/gpu/workload.cu" -lcuda || exit 1
fi

run() { # CONFIG KEY PROGRAM...: the KEY value (ns) the program prints
	local cfg=$1 key=$2
	shift 2
	local rec=("$TALLY" record -q --no-checks -o "$T/%p.tally")
	case $cfg in
	untraced) "$@" ;;
	default) "${rec[@]}" -- "$@" ;;
	python) "${rec[@]}" --sample python -- "$@" ;;
	native) "${rec[@]}" --sample native -- "$@" ;;
	osrt) "${rec[@]}" --trace cuda,nvtx,osrt -- "$@" ;;
	esac 2>/dev/null | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}

# paired FILE DEFAULT_FILE: the median over the rounds both have of FILE's time over DEFAULT's
paired() {
	awk 'NR == FNR {d[$1] = $2; next} ($1 in d) && d[$1] > 0 {print $2 / d[$1]}' "$2" "$1" | median
}
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
minmax() { sort -n | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.3f-%.3f", mn, mx}'; }

bench() { # NAME KEY OPS PROGRAM...
	local name=$1 key=$2 ops=$3
	shift 3
	for r in $(seq "$ROUNDS"); do
		for cfg in $CONFIGS; do
			ns=$(run "$cfg" "$key" "$@")
			[ -n "$ns" ] && echo "$ns $ops" | awk '{printf "%.4f\n", $1 / $2 / 1000}' >>"$T/$name.$cfg" &&
				echo "$r $ns" >>"$T/$name.$cfg.round"
		done
		rm -f "$T"/*.tally
	done
	printf "| %-26s |" "$name"
	for cfg in $CONFIGS; do
		printf " %s (%s) |" "$(median <"$T/$name.$cfg")" "$(minmax <"$T/$name.$cfg")"
	done
	d=$(median <"$T/$name.default")
	for cfg in python native osrt; do
		printf " %s (%s) |" "$(echo "$(median <"$T/$name.$cfg") $d" | awk '{printf "%.3f", $1 / $2}')" \
			"$(paired "$T/$name.$cfg.round" "$T/$name.default.round")"
	done
	echo
}

echo "| workload (us per op, median (min-max) of $ROUNDS) | untraced | tally default | --sample python | --sample native | --trace ...,osrt | python/default (paired) | native/default (paired) | osrt/default (paired) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
bench "launch loop, 200k kernels" loop_ns 200000 "$W" --kernels 200000
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 50k ops" loop_ns 50000 $PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
fi
# which native mechanism ran, and what the samples and calls cost in the file
"$TALLY" record -q --no-checks --sample native -o "$T/n.tally" -- "$W" --kernels 20000 >/dev/null 2>&1
"$TALLY" check "$T/n.tally" | grep -E "sampling|samples taken"
