#!/bin/sh
# Native stacks of an nvcc-built program on the CPU: tests/gpu/stacks.cu, compiled by nvcc as
# tests/gpu/stacks.sh does on the GPU machines, runs against a stand-in libcudart (fakecudart.c)
# that launches through the stand-in CUPTI.  So its launches pass through nvcc's own host stubs
# (a __device_stub_ function, and the kernel's host function inlined at each <<<>>>) and GCC's
# clones (solver_step(int) [clone .constprop.0]) as on a GPU.  stacks.cu prints each launching
# function, the line of its <<<>>> and its count; the innermost user frame of each launch must
# name that function (its whole name, no clone suffix) at that line of stacks.cu.
# Usage: test-nvccstacks.sh TALLY FAKECUDART_DIR FAKECUPTI SOURCE_DIR
# Exits 77 (skip) without nvcc.
set -u
. "$(dirname "$0")/../lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
TALLY=$1 CUDART=$2 SRC=$4
export TALLY_CUPTI_PATH=$3
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || skip "no nvcc"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# check OPT: stacks.cu built with nvcc OPT, recorded, and its innermost user frames checked
check() {
	"$NVCC" "$1" -g -arch=sm_90 -cudart shared -o "$T/stacks$1" "$SRC/tests/gpu/stacks.cu" \
		>"$T/nvcc" 2>&1 || { cat "$T/nvcc"; skip "nvcc cannot build stacks.cu here"; }
	LD_LIBRARY_PATH="$CUDART${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$TALLY" record --native-stacks \
		-o "$T/n$1.tally" -- "$T/stacks$1" launches >"$T/out$1" 2>"$T/err" ||
		{ cat "$T/err"; echo "FAIL record"; return 1; }
	"$TALLY" stats -r cuda_kern_stack_sum --format csv "$T/n$1.tally" >"$T/stats$1.csv" \
		2>"$T/stats.err" || { cat "$T/stats.err"; echo "FAIL stats"; return 1; }
	python3 - "$T/out$1" "$T/stats$1.csv" "$SRC/tests/gpu/stacks.cu" <<'PY'
import csv, re, sys
want = {m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(r"^(\w+) (\d+) (\d+)$", open(sys.argv[1]).read(), re.M)}
rows = [r for r in csv.reader(l for l in open(sys.argv[2]) if l.strip() and not l.startswith("#"))]
head = rows[0]
frames = {r[head.index("Location")]: int(r[head.index("Instances")]) for r in rows[1:]
          if r[head.index("By")] == "frame"}
print("frames:", frames)
fail = len(want) != 2 or len(frames) != 2
for func, (line, n) in want.items():
    # the name as C++ writes it, "solver_step(int)", and the absolute path of stacks.cu
    want_label = "%s(int) (%s:%d)" % (func, sys.argv[3], line)
    if frames.get(want_label) != n:
        print("FAIL: no frame '%s' with %d launches" % (want_label, n))
        fail = True
sys.exit(1 if fail else 0)
PY
}
# -O2 as on the GPU machines: GCC clones the functions (solver_step(int) [clone .constprop.0])
# and inlines the kernel's host side at each <<<>>>
check -O2 && ok "nvcc -O2: innermost user frames name the launching functions and lines" ||
	bad "nvcc -O2 native stacks"
nm -C "$T/stacks-O2" | grep -q 'solver_step(int) \[clone' ||
	echo "note: this host compiler made no clone of solver_step: the clone's name is not tested"
# -O0: the kernel's host side and crt/'s __cudaLaunchKernel_helper are frames of their own
check -O0 && ok "nvcc -O0: innermost user frames name the launching functions and lines" ||
	bad "nvcc -O0 native stacks"
# The GPU check itself (tests/gpu/stacks.sh) on these stand-ins, with an nvidia-smi that says
# there is a GPU: its native-stacks and malloc cases, and that it needs no sqlite3 CLI.
mkdir -p "$T/bin"
printf '#!/bin/sh
echo "GPU 0: stand-in"
' >"$T/bin/nvidia-smi"
chmod +x "$T/bin/nvidia-smi"
B=$(cd "$(dirname "$TALLY")/../.." && pwd)
PATH="$T/bin:$(dirname "$NVCC"):$PATH" LD_LIBRARY_PATH="$CUDART${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	PYTHON=python3 "$SRC/tests/gpu/stacks.sh" "$B" "$T/gpu" >"$T/gpu.out" 2>&1
grc=$?
sed 's/^/  stacks.sh: /' "$T/gpu.out"
grep -q "^ok   native-stacks" "$T/gpu.out" && grep -q "^ok   malloc" "$T/gpu.out" &&
	! grep -q "^FAIL" "$T/gpu.out" && [ $grc -eq 0 ] &&
	ok "tests/gpu/stacks.sh on the stand-ins" || bad "tests/gpu/stacks.sh on the stand-ins"
finish
