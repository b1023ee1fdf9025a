#!/bin/bash
# Call stacks and CUDA memory on the GPU, against what the programs say they did:
#   torch-stacks   PyTorch kernels from three known functions at known lines (--python-stacks):
#                  each kernel's innermost user frame names the right file, function and line
#   native-stacks  a C++ program launching from two functions (--native-stacks): after
#                  symbolization the innermost user frames name them, at the launching lines
#   malloc         cudaMalloc/cudaFree of known sizes (--trace cuda,memory): every allocation and
#                  free is recorded with its size; the report's peak is the program's 13 MiB
#   torch-memory   the caching allocator's reservations: the report's peak of Device memory is
#                  torch.cuda.max_memory_reserved()
#
#   tests/gpu/stacks.sh [BUILD_DIR] [OUT_DIR]
# Exits 77 without a GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d /tmp/tally-stacks-XXXXXX)}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
S=$B/gpu/stacks
# after the caller's own path: the CPU test (tests/exitpath/test-nvccstacks.sh) puts a stand-in
# libcudart there
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
if [ ! -x "$S" ] || [ "$HERE/stacks.cu" -nt "$S" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -g -arch=sm_90 -cudart shared -o "$S" "$HERE/stacks.cu" || { bad "cannot build stacks.cu"; finish; }
fi
# tally opens libdw.so.1 only when it names native frames (so ldd does not list it): without one
# on the library path, take the copy carried beside the build, or say why frames will be bare
if ! $PY -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null; then
	if [ -e "$B/extra-libs/libdw.so.1" ]; then
		export LD_LIBRARY_PATH=$B/extra-libs:$LD_LIBRARY_PATH
	else
		echo "note: no libdw.so.1 here: native frames stay module+offset (native-stacks fails)"
	fi
fi
# rec NAME [record options] -- PROGRAM...: one trace in $OUT/NAME/t.tally, stdout in .../stdout
rec() {
	local name=$1; shift
	local opts=()
	mkdir -p "$OUT/$name"
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	"$TALLY" record -f "${opts[@]}" -o "$OUT/$name/t.tally" -- "$@" >"$OUT/$name/stdout" 2>"$OUT/$name/stderr"
	# stderr apart: a warning (libdw not found) must not land in the CSV; it is shown on failure
	"$TALLY" stats -r cuda_kern_stack_sum -r cuda_gpu_mem_usage --format csv "$OUT/$name/t.tally" \
		>"$OUT/$name/stats.csv" 2>"$OUT/$name/stats.err"
}
# why NAME: what tally said on stderr, for a failed check
why() { sed 's/^/     /' "$OUT/$1/stats.err" "$OUT/$1/stderr" 2>/dev/null | head -20; }
# frames NAME: the cuda_kern_stack_sum "frame" rows as {location: instances} (python, on stdin)
CSV_READ='
import csv, sys
def reports(path):
    out, cur = {}, None
    for line in open(path):
        if line.startswith("# cuda_"):
            cur = line[2:].split(":")[0]; out[cur] = []
        elif cur and line.strip() and not line.startswith("#"):
            out[cur].append(line)
    return {k: list(csv.DictReader(v)) for k, v in out.items()}
'

if $PY -c "import torch" 2>/dev/null; then
	rec torch-stacks --python-stacks -- $PY "$HERE/torch_stacks.py"
	$PY -c "$CSV_READ"'
import json, collections
want = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
rows = reports(sys.argv[2])["cuda_kern_stack_sum"]
got = {r["Location"]: int(r["Instances"]) for r in rows if r["By"] == "frame"}
exp = collections.Counter("%s (%s:%d)" % (w["func"], w["file"], w["line"]) for w in want["frames"])
bad = {k: (got.get(k), v) for k, v in exp.items() if got.get(k) != v}
print("frames:", got)
sys.exit(1 if bad or not exp else 0)' "$OUT/torch-stacks/stdout" "$OUT/torch-stacks/stats.csv" &&
		ok "torch-stacks: each kernel's innermost user frame is its function and line" ||
		{ bad "torch-stacks: see $OUT/torch-stacks"; why torch-stacks; }
	rec torch-memory --trace cuda,memory -- $PY "$HERE/torch_stacks.py"
	$PY -c "$CSV_READ"'
import json
want = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
rows = [r for r in reports(sys.argv[2])["cuda_gpu_mem_usage"] if r["Memory Kind"] == "Device"]
peak = int(rows[0]["Peak (B)"]) if rows else -1
print("peak", peak, "max_memory_reserved", want["max_reserved"])
sys.exit(0 if len(rows) == 1 and peak == want["max_reserved"] else 1)' \
		"$OUT/torch-memory/stdout" "$OUT/torch-memory/stats.csv" &&
		ok "torch-memory: peak Device bytes = torch.cuda.max_memory_reserved(), to the byte" ||
		{ bad "torch-memory: see $OUT/torch-memory"; why torch-memory; }
else
	skipped "torch-stacks, torch-memory: no PyTorch"
fi

rec native-stacks --native-stacks -- "$S" launches
$PY -c "$CSV_READ"'
import re
want = {m.group(1): (int(m.group(2)), int(m.group(3)))
        for m in re.finditer(r"^(\w+) (\d+) (\d+)$", open(sys.argv[1]).read(), re.M)}
rows = reports(sys.argv[2])["cuda_kern_stack_sum"]
got = {r["Location"]: int(r["Instances"]) for r in rows if r["By"] == "frame"}
print("frames:", got)
miss = [f for f, (line, n) in want.items()
        if not any((k.startswith(f + "(") or k.startswith(f + " (")) and
                   k.endswith("stacks.cu:%d)" % line) and v == n for k, v in got.items())]
sys.exit(1 if miss or len(want) != 2 else 0)' "$OUT/native-stacks/stdout" "$OUT/native-stacks/stats.csv" &&
	ok "native-stacks: symbolized innermost user frames are solver_step and model_forward, at their lines" ||
	{ bad "native-stacks: see $OUT/native-stacks"; why native-stacks; }

rec malloc --trace cuda,memory -- "$S" malloc
# the events from the SQLite export, through python's sqlite3 (no sqlite3 CLI on the GPU machines)
"$TALLY" export --force -f sqlite -o "$OUT/malloc/t.db" "$OUT/malloc/t.tally" >"$OUT/malloc/export.out" 2>&1 ||
	cat "$OUT/malloc/export.out"
$PY -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("SELECT address, bytes, memoryOperationType FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start"):
    print("%d,%d,%d" % row)' "$OUT/malloc/t.db" >"$OUT/malloc/events.csv"
$PY -c "$CSV_READ"'
import re
out = open(sys.argv[1]).read()
allocs = {int(a): int(b) for a, b in re.findall(r"^alloc (\d+) (\d+)$", out, re.M)}
frees = [int(a) for a in re.findall(r"^free (\d+)$", out, re.M)]
peak = int(re.search(r"^peak (\d+)$", out, re.M).group(1))
ev = [tuple(map(int, l.split(","))) for l in open(sys.argv[3]) if l.strip()]
mine = [e for e in ev if e[0] in allocs]
ok = bool(allocs) and sorted((a, b) for a, b, op in mine if op == 1) == sorted(allocs.items())
ok &= sorted(a for a, b, op in mine if op == 2) == sorted(frees)
held = top = 0
for a, b, op in mine:
    held += allocs[a] if op == 1 else -allocs[a]; top = max(top, held)
rows = [r for r in reports(sys.argv[2])["cuda_gpu_mem_usage"] if r["Memory Kind"] == "Device"]
rpeak = int(rows[0]["Peak (B)"]) if rows else -1
print("program peak", peak, "replayed", top, "report peak", rpeak, "events", len(ev))
ok &= top == peak and rpeak == peak
sys.exit(0 if ok else 1)' "$OUT/malloc/stdout" "$OUT/malloc/stats.csv" "$OUT/malloc/events.csv" &&
	ok "malloc: every cudaMalloc/cudaFree recorded with its size; the report's peak is 13 MiB" ||
	{ bad "malloc: see $OUT/malloc"; why malloc; }

echo "traces in $OUT"
finish stacks
