#!/bin/bash
# What GPU metrics cost the program, side by side in one run: untraced, tally as it comes, and
# tally --gpu-metrics (10 kHz, the default set), on the launch loop and the PyTorch loop.  The
# runs alternate (untraced, tally, tally --gpu-metrics, then the next round) for ROUNDS rounds;
# each reports the time of its own loop only, so medians compare like with like.  The issue asks
# for metrics/tally <= 1.02.  Then the sampler's own account of its cost (the gpu-metrics-cost
# note of the last --gpu-metrics trace of each workload: decode, evaluation and its thread's CPU).
#
#   bench/metrics-overhead.sh [BUILD_DIR] [ROUNDS]     (defaults: build, 5; about 3 minutes)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$B/gpu/workload
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
T=$(mktemp -d)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

. "$HERE/../tests/lib.sh"
need_gpu
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/../tests/gpu/workload.cu" -lcuda || exit 1
fi

# run CONFIG KEY PROGRAM...: prints the KEY value (ns) the program reports
run() {
	local cfg=$1 key=$2; shift 2
	case $cfg in
	untraced) "$@" ;;
	tally) "$TALLY" record -q --no-checks -o "$T/t-%p.tally" -- "$@" ;;
	metrics) "$TALLY" record -q --no-checks --gpu-metrics -o "$T/m-%p.tally" -- "$@" ;;
	esac 2>/dev/null | grep -o "$key [0-9]*" | head -1 | awk '{print $2}'
}

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
minmax() { sort -n | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.3f-%.3f", mn, mx}'; }

# The sampler's own account, from the newest --gpu-metrics trace.
cost() {
	local f
	f=$(ls -t "$T"/m-*.tally 2>/dev/null | head -1)
	[ -n "$f" ] || return
	"$TALLY" check --json "$f" 2>/dev/null | $PY -c '
import json, sys
s = json.load(sys.stdin)["files"][0]["sections"][0]
c = s["ledger"]["counters"]
print("  %s: verdict %s, samples written %d, records %d" % (sys.argv[1], s["verdict"], c["metric_samples_written"], s["records_total"]))
for n in s.get("notes", []):
    if n["code"] == "gpu-metrics-cost": print("  %s: %s" % (sys.argv[1], n["text"]))' "$1"
}

bench() { # NAME KEY OPS PROGRAM...
	local name=$1 key=$2 ops=$3; shift 3
	for r in $(seq "$ROUNDS"); do
		for cfg in untraced tally metrics; do
			ns=$(run $cfg "$key" "$@")
			[ -n "$ns" ] && echo "$ns $ops" | awk '{printf "%.4f\n", $1 / $2 / 1000}' >>"$T/$name.$cfg"
		done
	done
	printf "| %-26s |" "$name"
	for cfg in untraced tally metrics; do
		printf " %s (%s) |" "$(median <"$T/$name.$cfg")" "$(minmax <"$T/$name.$cfg")"
	done
	t=$(median <"$T/$name.tally") m=$(median <"$T/$name.metrics")
	echo " $(echo "$m $t" | awk '{printf "%.3f", $1 / $2}') |"
	cost "$name" >>"$T/costs"
	rm -f "$T"/*.tally
}

echo "| workload (us per op, median (min-max) of $ROUNDS) | untraced | tally | tally --gpu-metrics | metrics/tally |"
echo "| --- | --- | --- | --- | --- |"
bench "launch loop, 500k kernels" loop_ns 500000 "$W" --kernels 500000
if $PY -c "import torch" 2>/dev/null; then
	bench "PyTorch add_, 200k ops" loop_ns 200000 $PY "$HERE/../tests/gpu/torch_loop.py" 200000 --no-nvtx
fi
cat "$T/costs" 2>/dev/null
rm -rf "$T"
