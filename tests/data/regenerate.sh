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
# RANKS_ONLY=1: only the ranks trace below (the others stay as they are)
if [ "${RANKS_ONLY:-0}" != 1 ]; then
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
"$B/src/cli/tally" merge -q --force -o "$D/ranks.tally" "$ranks_dir"
rm -rf "$ranks_dir"
[ "${RANKS_ONLY:-0}" = 1 ] && exit 0
# seed corpus: whole files, a cut one, and one with a flipped byte
cp "$D/tiny.tally" "$C/tiny"
cp "$D/lossy.tally" "$C/lossy"
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
