#!/bin/sh
# tests/gpu/idle-why.sh's own logic on the CPU: its CUDA program (tests/gpu/sampling.cu, built by
# nvcc as on the GPU machine) runs against the stand-in libcudart and CUPTI, with an nvidia-smi
# that says there is a GPU.  The compute (perf events and the forced timer) and mutex cases must
# pass through the reports (gpu_idle_why, gpu_idle_breakdown, osrt_sum); the PyTorch ones skip
# (no torch here).  What they find on a GPU needs the GPU machine.
# Usage: test-gpuidlewhy.sh TALLY FAKECUDART_DIR FAKECUPTI SOURCE_DIR
# Exits 77 (skip) without nvcc, or under a sanitizer (an uninstrumented nvcc-built program).
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 CUDART=$2 SRC=$4
export TALLY_CUPTI_PATH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
on_stand_ins "$TALLY" "$CUDART" "$SRC" idle-why.sh
for case in "compute (perf events)" "compute (timer fallback)" "mutex"; do
	stand_in_case idle-why.sh "$case"
done
stand_in_clean idle-why.sh
finish
