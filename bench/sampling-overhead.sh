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
# Runs land up to 30-50% apart on a shared machine whatever the option, more than the goal, so
# the cost of sampling is also measured within one run: WITHIN longer runs of each workload with
# TALLY_BENCH_TOGGLE_MS (bench/gpu-lib.sh), the sampling on in about half the 300 ms
# intervals of the same process and off in the rest: --sample python, --sample native (perf events here, or the
# timer where perf is refused), the timer fallback forced (TALLY_SAMPLE_FALLBACK) and --sample
# python,native (mixed stacks: the timer, whose handler reads the Python frames too); "again" is
# tally's default with nothing to switch.  Blocking calls cannot be switched off inside a run
# (their interposers are in every call), so osrt has the whole-run figures only.
#
#   bench/sampling-overhead.sh [BUILD_DIR] [ROUNDS] [WITHIN]
#                                  (defaults: build, 5, 2; about 8 minutes on the H200)
set -u
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-5}
WITHIN=${3:-2}
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
	timer) TALLY_SAMPLE_FALLBACK=1 "${rec[@]}" --sample native -- "$@" ;;
	mixed) "${rec[@]}" --sample python,native -- "$@" ;;
	osrt) "${rec[@]}" --trace cuda,nvtx,osrt -- "$@" ;;
	esac | grep -o "$key [0-9:,]*" | head -1 | awk '{print $2}'
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

if [ "$ROUNDS" -gt 0 ]; then
	echo "| workload (us per op, median (min-max) of $ROUNDS) | untraced | tally default | --sample python | --sample native | --trace ...,osrt | python/default (paired) | native/default (paired) | osrt/default (paired) | again/default (paired) |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	bench "launch loop, 200k kernels" loop_ns 200000 "$W" --kernels 200000
	if $PY -c "import torch" 2>/dev/null; then
		bench "PyTorch add_, 50k ops" loop_ns 50000 $PY "$HERE/../tests/gpu/torch_loop.py" 50000 --no-nvtx
	fi
fi

# within NAME PROGRAM...: each kind of sampling switched inside WITHIN runs, and tally's default
within() {
	local name=$1 cfg row="| $1 |" m
	shift
	toggled "$name" "python native timer mixed again" "$@"
	for cfg in python native timer mixed again; do
		m=$(within_cell "$name" $cfg)
		row="$row $m$([ $cfg = again ] || echo ", $(verdict 1.05 "$m")") |"
	done
	echo "$row"
}

echo
echo "| within one run ($WITHIN runs, ${BENCH_TOGGLE_MS} ms intervals; on/off: median [90% interval] (pairs)) | --sample python | --sample native | timer fallback | --sample python,native (mixed stacks) | again: nothing switched |"
echo "| --- | --- | --- | --- | --- | --- |"
within "launch loop, 2M kernels" "$W" --kernels 2000000
if $PY -c "import torch" 2>/dev/null; then
	within "PyTorch add_, 1M ops" $PY "$HERE/../tests/gpu/torch_loop.py" 1000000 --no-nvtx
fi
# which native mechanism ran, and what the samples and calls cost in the file
"$TALLY" record -q --no-checks --sample native -o "$T/n.tally" -- "$W" --kernels 20000 >/dev/null 2>&1
"$TALLY" check "$T/n.tally" | grep -E "sampling|samples taken"
