#!/bin/bash
# Breaks in the GPU-metric samples on the device (issue 35 item 6, issue 36's recordings): each
# break (a sample that starts more than an interval after the one before ended, counter
# metric_gaps) with its cause as the sampler found it (the GPU's own, a late decode whose image was
# full, an overflow, a stop, a context's end: docs/collector.md, "Breaks") and what the trace
# says around it (tests/gpu/metric_breaks.py: the samples on either side, the step, the CUDA and
# blocking calls that overlap it), so that a break is explained or its cause is found.
#   1. the PyTorch step loop "mixed" (tests/gpu/step_loops.py: DataLoader workers forked at
#      start-up, a pin-memory thread, .item() then host work each step) recorded as issue 36's
#      were, --sample python,native --trace cuda,nvtx,osrt --gpu-metrics, at each rate of
#      METRIC_BREAKS_HZ (default "10000 1000"); skipped without PyTorch;
#   2. METRIC_BREAKS_TERMS (default 3) runs of the C launch loop (tests/gpu/workload.cu --forever)
#      under tally record --gpu-metrics (and METRIC_BREAKS_TERM_OPTS), each stopped by a SIGTERM
#      to tally record at its own moment, 2.5 to 4.1 s in (as the H100's runs that ended with
#      one break were).
# A case passes when its trace is COMPLETE, or when every break in it is the GPU's own (the
# samples on either side came out of the hardware in order and tally left nothing out: the
# loss is explained and not tally's); a SIGTERM run must also end by the signal (143).
# Everything lands in OUT (the traces, their sqlite exports, each analysis); about 75 s, most
# of it PyTorch's start-up (nvcc builds the workload first when BUILD_DIR/gpu/ lacks it).
#   tests/gpu/metric-breaks.sh [BUILD_DIR] [OUT_DIR]     PYTHON=... (a python with torch for the
#                                                         loop; python3 reads the traces)
# Exits 77 (skipped) where there is no GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-breaks-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
W=$B/gpu/workload
PY=${PYTHON:-python3}
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/workload.cu" -lcuda || { bad "cannot build workload"; finish; }
fi

# judge NAME TRACE [STATUS WANT]: the analysis of TRACE into OUT/NAME.txt and here; ok when the
# trace is COMPLETE or its breaks are all the GPU's own (and the status is WANT)
judge() {
	"$TALLY" check --json "$2" >"$2.json" 2>/dev/null
	"$TALLY" export -q -f sqlite --force -o "$2.sqlite" "$2" 2>/dev/null
	if python3 "$HERE/metric_breaks.py" "$2.json" "$2.sqlite" "$1" >"$OUT/$1.txt" 2>&1 &&
		[ "${3:-0}" = "${4:-0}" ]; then
		ok "$1: $(head -1 "$OUT/$1.txt")"
	else
		bad "$1: $(head -1 "$OUT/$1.txt") (status ${3:-?})"
	fi
	sed 1d "$OUT/$1.txt"
}

for hz in ${METRIC_BREAKS_HZ:-10000 1000}; do
	if ! "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
		skipped "mixed step loop at $hz Hz: no PyTorch with CUDA for $PY"
		continue
	fi
	d=$OUT/mixed-$hz
	mkdir -p "$d"
	"$TALLY" record -q --sample python,native --trace cuda,nvtx,osrt --gpu-metrics \
		--gpu-metrics-frequency "$hz" -o "$d/%p.tally" -- \
		"$PY" "$HERE/step_loops.py" mixed "$d/truth.json" --steps 30 >"$d/stdout" 2>"$d/stderr"
	f=$(ls "$d"/*.tally 2>/dev/null | head -1)
	if [ -z "$f" ]; then
		bad "mixed-$hz: no trace ($(tail -2 "$d/stderr"))"
		continue
	fi
	judge "mixed-$hz" "$f"
done

for i in $(seq 1 "${METRIC_BREAKS_TERMS:-3}"); do
	d=$OUT/term$i
	mkdir -p "$d"
	# shellcheck disable=SC2086 # the extra options are words on purpose
	"$TALLY" record -q --gpu-metrics ${METRIC_BREAKS_TERM_OPTS:-} -o "$d/%p.tally" -- "$W" \
		--forever >"$d/stdout" 2>"$d/stderr" &
	tp=$!
	wait_ms=$((1700 + 800 * i))
	sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
	kill -TERM $tp
	wait $tp
	status=$?
	f=$(ls "$d"/*.tally 2>/dev/null | head -1)
	if [ -z "$f" ]; then
		bad "term$i: no trace ($(tail -2 "$d/stderr"))"
		continue
	fi
	echo "term$i: SIGTERM at $wait_ms ms"
	judge "term$i" "$f" "$status" 143
done
echo "traces and analyses in $OUT"
finish
