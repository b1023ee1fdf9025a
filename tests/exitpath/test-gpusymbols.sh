#!/bin/sh
# tests/gpu/symbols.sh's own logic on the CPU: its CUDA program (tests/gpu/symbols.cu, built by
# nvcc as on the GPU machine) runs against the stand-in libcudart and CUPTI, with an nvidia-smi
# that says there is a GPU; then its --read half reads what it kept, moved elsewhere (so that the
# recorded program is no longer at its path, as on another machine).  What the names are on a
# GPU machine, read on this one, needs the GPU machine.
# Usage: test-gpusymbols.sh TALLY FAKECUDART_DIR FAKECUPTI SOURCE_DIR
# Exits 77 (skip) without nvcc, or under a sanitizer (an uninstrumented nvcc-built program).
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 CUDART=$2 SRC=$4
export TALLY_CUPTI_PATH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
on_stand_ins "$TALLY" "$CUDART" "$SRC" symbols.sh
stand_in_case symbols.sh "tally record appended the frames' names"
stand_in_case symbols.sh "on the device, crunch(double) is named with every sample in it"
stand_in_clean symbols.sh
mv "$T/gpu" "$T/elsewhere"
bash "$SRC/tests/gpu/symbols.sh" --read "$T/elsewhere" "$(cd "$(dirname "$TALLY")/../.." && pwd)" \
	>"$T/read.out" 2>&1
rc=$?
sed 's/^/  symbols.sh --read: /' "$T/read.out"
[ $rc -eq 0 ] && grep -q "^ok   read here: the device's names, never another build's" "$T/read.out" &&
	ok "symbols.sh --read of the kept trace, elsewhere" || bad "symbols.sh --read: exit $rc"
finish
