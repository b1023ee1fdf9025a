#!/bin/bash
# Device recordings for the Kineto export's check against Holistic Trace Analysis (HTA is not on
# the GPU machine: it runs afterwards on a CPU machine, tests/support/hta-compare.py):
#   torch      a PyTorch loop sleeping between bursts (sampling_sleep.py), --sample python: one
#              stream, host wait at a known line
#   compute    a C++ program computing on the CPU between bursts (sampling.cu compute)
#   ranks      two torchrun ranks with a slow one (torch_ranks.py, NCCL; skipped on one GPU)
# For each, under $OUT/NAME: the trace(s), `tally export -f kineto` (kineto/rank-N.json), and
# tally's own figures for the comparison (gpu_time_breakdown, gpu_idle_breakdown --kernel-wait
# 30us, comm_compute_overlap as JSON in tally.json).  Checks here are the export's own: a
# COMPLETE trace, one rank file per rank, GPU events with a stream in every one.
#
#   tests/gpu/kineto.sh [BUILD_DIR] [OUT_DIR]      (about a minute); exits 77 without a GPU
# then, where HTA and pandas are importable:
#   python3 tests/support/hta-compare.py build/src/cli/tally OUT_DIR/NAME   for each NAME
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-kineto-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
T=$OUT
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64

# done NAME: export, figures, the export's checks
finish_case() {
	local name=$1 d=$OUT/$1
	"$TALLY" check "$d"/traces >"$d/check.txt" 2>&1 && ok "$name: COMPLETE" || bad "$name: $(tail -n 3 "$d/check.txt")"
	expect_rc "$name: export -f kineto" 0 "$TALLY" export -q -f kineto --force -o "$d/kineto" "$d/traces"
	"$TALLY" stats -f json -r gpu_time_breakdown,gpu_idle_breakdown,comm_compute_overlap \
		--kernel-wait 30us "$d/traces" >"$d/tally.json" 2>/dev/null
	python3 - "$d/kineto" "$2" <<'PY' && ok "$name: $2 rank file(s), GPU events with args.stream" || bad "$name: the export's shape"
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/rank-*.json"))
ok = len(files) == int(sys.argv[2])
for f in files:
    d = json.load(open(f))
    gpu = [e for e in d["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    ok &= bool(gpu) and all("stream" in e["args"] for e in gpu) and "rank" in d["distributedInfo"]
sys.exit(0 if ok else 1)
PY
}

if $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	mkdir -p "$OUT/torch/traces"
	"$TALLY" record -f --sample python -o "$OUT/torch/traces/" -- $PY "$HERE/sampling_sleep.py" \
		"$OUT/torch/sleep.json" 10 0.05 >"$OUT/torch/stdout" 2>"$OUT/torch/stderr"
	finish_case torch 1
else
	skipped "torch: no PyTorch with CUDA"
fi

S=$B/gpu/kineto-sampling
if [ -x "$S" ] || { command -v nvcc >/dev/null && mkdir -p "$B/gpu" &&
	nvcc -O2 -g -arch=native -cudart shared -Xcompiler -fno-omit-frame-pointer -o "$S" "$HERE/sampling.cu"; }; then
	mkdir -p "$OUT/compute/traces"
	"$TALLY" record -f --sample native -o "$OUT/compute/traces/" -- "$S" compute 10 100 \
		>"$OUT/compute/stdout" 2>"$OUT/compute/stderr"
	finish_case compute 1
else
	skipped "compute: no nvcc"
fi

ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -ge 2 ] && $PY -c 'import torch.distributed' 2>/dev/null; then
	mkdir -p "$OUT/ranks/traces"
	"$TALLY" record -f -o "$OUT/ranks/traces/rank%q{RANK}" -- $PY -m torch.distributed.run \
		--nproc_per_node 2 "$HERE/torch_ranks.py" --steps 20 --slow-rank 1 \
		>"$OUT/ranks/stdout" 2>"$OUT/ranks/stderr"
	finish_case ranks 2
else
	skipped "ranks: needs two GPUs and torch.distributed"
fi
finish kineto
