#!/bin/sh
# Regenerates the CPU-made sample traces kept in the repo (and the fuzzer's seed corpus).
# Usage: tests/data/regenerate.sh BUILD_DIR   (after building, e.g. build/)
# The traces recorded on a real GPU (gpu-*.tally) are made on the device, not here; README says
# how each kept trace was made (gen-*: a generator here; standin-*: the collector over the stand-in
# CUPTI).
set -eu
B=${1:-build}
D=$(dirname "$0")
TS=$B/tests/tally-testsrc
C=$D/../fuzz/corpus
mkdir -p "$C"
# RANKS_ONLY=1: only the ranks trace below (the others stay as they are)
if [ "${RANKS_ONLY:-0}" != 1 ]; then
# tiny: a small, complete trace of every record kind, fixed seed and start time
"$TS" -o "$D/gen-tiny.tally" --t0 1796000000000000000 --seed 42 --kernels 200 --driver-kernels 20 \
	--memcpys 30 --memsets 10 --syncs 10 --ranges 12 --marks 3 --names 6 --devices 1 --batch 64
# lossy: the same with faults, so readers and docs have an INCOMPLETE example at hand
"$TS" -o "$D/gen-lossy.tally" --t0 1796000000000000000 --seed 43 --kernels 300 --memcpys 20 \
	--bad-time-every 50 --orphan-launches 3 --orphan-gpu 2 --unknown-kind 1 --batch 64
# stacks: launches from three Python stacks (one through a library frame) and device memory
# allocated then freed (format 1.2), so the stack and memory reports have an example
"$TS" -o "$D/gen-stacks.tally" --t0 1796000000000000000 --seed 44 --kernels 300 --memcpys 20 \
	--stacks 3 --mem-allocs 6 --batch 64
# host: format 1.3's host sampling and blocking calls (tests/support/testsrc.h says what each
# thread does), over a GPU timeline with a 150 ms idle gap before launch 50
"$TS" -o "$D/gen-host.tally" --t0 1796000000000000000 --seed 45 --kernels 100 --idle-at 50:150 \
	--host 200 --host-torn-every 50 --batch 64
# sampled: the real collector with the stand-in CUPTI (not the test source): a Python program
# launching 3 bursts of 50 kernels 50 ms apart, with --sample python at 500 Hz and --trace osrt
# (tests/exitpath/sampling_gaps.py; its frames name this checkout's paths, so it changes when
# remade elsewhere: remake it only on purpose, and the goldens with it)
if [ "${TALLY_REMAKE_SAMPLED:-0}" = 1 ]; then
	PY=$(python3 -c 'import sys; print(sys.executable)')
	L=$(cd "$B" && pwd)/src/collector/libtally.so
	rm -f "$D/standin-sampled.tally"
	env LD_PRELOAD="$L" CUDA_INJECTION64_PATH="$L" TALLY_TRACE=cuda,nvtx,osrt \
		TALLY_CUPTI_PATH="$(cd "$B" && pwd)/tests/exitpath/libfakecupti.so" \
		TALLY_OUTPUT="$(cd "$D" && pwd)/sampled.tally" TALLY_SAMPLE=python TALLY_SAMPLE_RATE=500 \
		"$PY" "$D/../exitpath/sampling_gaps.py" /dev/null 3 0.05
fi
fi
# ranks: four ranks of one Slurm job, merged, built with exact times (tally-testsrc --steps): per
# step a 2 ms copy, ten 1 ms kernels, an NCCL kernel of 4 ms from 8 ms in (half of it overlapped),
# rank 2 sleeping 50 ms at the end of each step, rank 3's kernels 1.5 ms, 1000 MiB held; so that
# every analysis and rule of the diagnosis has an example (tests/cli/test-analyses.sh checks the
# figures against the construction)
ranks_dir=$(mktemp -d)
for r in 0 1 2 3; do
	extra=""
	[ $r = 2 ] && extra="--sleep-us 50000"
	[ $r = 3 ] && extra="--kernel-us 1500"
	# shellcheck disable=SC2086
	SLURM_JOB_ID=4242 SLURM_STEP_ID=0 WORLD_SIZE=4 RANK=$r "$TS" -o "$ranks_dir/rank$r.tally" \
		--t0 1796000000000000000 --steps 12 --step-kernels 10 --kernel-us 1000 --copy-us 2000 \
		--comm-us 4000 --comm-at-us 8000 --gap-us 500 --devices 1 --mem-mb 1000 $extra --batch 64
done
"$B/src/cli/tally" merge -q --force -o "$D/gen-ranks.tally" "$ranks_dir"
rm -rf "$ranks_dir"
[ "${RANKS_ONLY:-0}" = 1 ] && exit 0
# metrics: GPU metrics sampled at 1 kHz on two devices (format 1.3) whose values follow from the
# kernels (tests/support/tally-metricsgen.c), work of an untraced process in every 5th gap of
# device 0, and 3 ms with no sample on each device: every metric report has an example
"$B/tests/tally-metricsgen" -o "$D/gen-metrics.tally" --seconds 0.5 --hz 1000 --devices 2 \
	--other-gaps 5 --metric-gap 200:3
# seed corpus: whole files, a cut one, and one with a flipped byte
cp "$D/gen-tiny.tally" "$C/tiny"
cp "$D/gen-lossy.tally" "$C/lossy"
cp "$D/gen-metrics.tally" "$C/metrics"
cp "$D/gen-host.tally" "$C/host"
# a summary (tally stats --partial: SUMMARY chunks, no records) of a lossy and a clean trace
"$B/src/cli/tally" stats --partial --force -o "$C/summary.tsum" "$D/gen-tiny.tally" "$D/gen-lossy.tally" \
	2>/dev/null
mv "$C/summary.tsum" "$C/summary"
head -c 3000 "$D/gen-tiny.tally" >"$C/tiny-cut"
cp "$D/gen-tiny.tally" "$C/tiny-flipped"
printf '\377' | dd of="$C/tiny-flipped" bs=1 seek=500 conv=notrunc 2>/dev/null
# crafted seeds (tests/support/tally-craft.c): what hostile files look like, so the fuzzers start
# from the decoders' edges; the 4 MiB resync case is made by the test itself, not kept
for c in rows-bomb strings-bomb demangle-bomb partial-mid partial-eof control-chars bad-text \
	future early-records overlap enospc; do
	"$B/tests/tally-craft" "$c" "$C/crafted-$c"
done
ls -l "$D"/*.tally "$C"
