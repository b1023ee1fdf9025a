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
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || skip "no nvcc"
ldd "$TALLY" | grep -Eq 'lib(a|t)san' && skip "a sanitizer build: the nvcc-built program is not instrumented"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
printf '#!/bin/sh\necho "GPU 0: stand-in"\n' >"$T/bin/nvidia-smi"
chmod +x "$T/bin/nvidia-smi"
B=$(cd "$(dirname "$TALLY")/../.." && pwd)
PATH="$T/bin:$(dirname "$NVCC"):$PATH" LD_LIBRARY_PATH="$CUDART${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	PYTHON=false bash "$SRC/tests/gpu/idle-why.sh" "$B" "$T/gpu" >"$T/gpu.out" 2>&1
grc=$?
sed 's/^/  idle-why.sh: /' "$T/gpu.out"
for case in "compute (perf events)" "compute (timer fallback)" "mutex"; do
	grep -q "^ok   $case" "$T/gpu.out" && ok "idle-why.sh on the stand-ins: $case" ||
		bad "idle-why.sh on the stand-ins: $case"
done
! grep -q "^FAIL" "$T/gpu.out" && [ $grc -eq 0 ] && ok "idle-why.sh on the stand-ins: no failure" ||
	bad "idle-why.sh on the stand-ins: exit $grc"
finish
