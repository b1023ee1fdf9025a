#!/bin/sh
# Regenerates the CPU-made sample traces kept in the repo (and the fuzzer's seed corpus).
# Usage: tests/data/regenerate.sh BUILD_DIR   (after building, e.g. build/)
# The traces recorded on a real H200 (gpu-*.tally) are made by tests/gpu/run.sh, not here.
set -eu
B=${1:-build}
D=$(dirname "$0")
TS=$B/tests/tally-testsrc
C=$D/../fuzz/corpus
mkdir -p "$C"
# tiny: a small, complete trace of every record kind, fixed seed and start time
"$TS" -o "$D/tiny.tally" --t0 1796000000000000000 --seed 42 --kernels 200 --driver-kernels 20 \
	--memcpys 30 --memsets 10 --syncs 10 --ranges 12 --marks 3 --names 6 --devices 1 --batch 64
# lossy: the same with faults, so readers and docs have an INCOMPLETE example at hand
"$TS" -o "$D/lossy.tally" --t0 1796000000000000000 --seed 43 --kernels 300 --memcpys 20 \
	--bad-time-every 50 --orphan-launches 3 --orphan-gpu 2 --unknown-kind 1 --batch 64
# stacks: launches from three Python stacks (one through a library frame) and device memory
# allocated then freed (format 1.2), so the stack and memory reports have an example
"$TS" -o "$D/stacks.tally" --t0 1796000000000000000 --seed 44 --kernels 300 --memcpys 20 \
	--stacks 3 --mem-allocs 6 --batch 64
# metrics: GPU metrics sampled at 1 kHz on two devices (format 1.3) whose values follow from the
# kernels (tests/support/tally-metricsgen.c), work of an untraced process in every 5th gap of
# device 0, and 3 ms with no sample on each device: every metric report has an example
"$B/tests/tally-metricsgen" -o "$D/metrics.tally" --seconds 0.5 --hz 1000 --devices 2 \
	--other-gaps 5 --metric-gap 200:3
# seed corpus: whole files, a cut one, and one with a flipped byte
cp "$D/tiny.tally" "$C/tiny"
cp "$D/lossy.tally" "$C/lossy"
cp "$D/metrics.tally" "$C/metrics"
head -c 3000 "$D/tiny.tally" >"$C/tiny-cut"
cp "$D/tiny.tally" "$C/tiny-flipped"
printf '\377' | dd of="$C/tiny-flipped" bs=1 seek=500 conv=notrunc 2>/dev/null
# crafted seeds (tests/support/tally-craft.c): what hostile files look like, so the fuzzers start
# from the decoders' edges; the 4 MiB resync case is made by the test itself, not kept
for c in rows-bomb strings-bomb demangle-bomb partial-mid partial-eof control-chars bad-text \
	future early-records overlap enospc; do
	"$B/tests/tally-craft" "$c" "$C/crafted-$c"
done
ls -l "$D"/*.tally "$C"
