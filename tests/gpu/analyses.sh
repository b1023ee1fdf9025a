#!/bin/bash
# tally's analyses on a real GPU, with workloads built so that the answer is known
# (tests/gpu/analyses.cu, tests/gpu/analyses_ranks.py); each figure is checked against what the
# workload did or measured itself, never against tally's own output:
#   - launch-bound: 20,000 empty kernels are shorter than their launch calls (cuda_launch_stats,
#     the diagnosis says launch-bound); 200 kernels of 1 ms are not;
#   - a copy phase and a compute phase: gpu_time_breakdown's copy and compute time within 3% of
#     the phases' GPU time as CUDA events measured it;
#   - a kernel named like NCCL's all-reduce of 4 ms on a second stream, 2 ms (fully inside) or
#     8 ms (half outside) into a 10 ms compute kernel: comm_compute_overlap 100% and about 50%;
#   - 3,000 kernels of 100 us launched at once: the queue of their stream runs hundreds deep
#     (gpu_queue_depth, and the Chrome export's counter track);
#   - 93% of the GPU's memory allocated: memory-near-capacity; 10%: not;
#   - two ranks of one torchrun job, rank 1 sleeping 50 ms in every step: rank_steps names it the
#     straggler with a lead of about 50 ms, the diagnosis too; without the sleep, no straggler.
#     With one GPU the two processes share it.  NCCL refuses two ranks on one device, so the
#     script first tries NCCL (and says what it answered), then uses gloo; with two GPUs it also
#     runs the ranks over NCCL on a GPU each, whose NCCL kernels comm_compute_overlap must list.
#
#   tests/gpu/analyses.sh [BUILD_DIR] [OUT_DIR]   (defaults: build; $OUT or a temporary directory)
#
# Exits 77 without a GPU; the torch cases are skipped (said so) without PyTorch.  Takes about two
# minutes on an H200.  The traces, pages and JSON stay in OUT_DIR.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-analyses-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
A=$B/gpu/analyses
NGPU=$(nvidia-smi -L | wc -l)
if [ ! -x "$A" ] || [ "$HERE/analyses.cu" -nt "$A" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$A" "$HERE/analyses.cu" || { bad "cannot build $A"; finish; }
fi
ALL=gpu_time_breakdown,comm_compute_overlap,kern_rank_spread,rank_steps,cuda_launch_stats,gpu_queue_depth,diagnosis

# rec NAME [record options] -- PROGRAM...: the trace(s) in $OUT/NAME, its stdout in .../stdout
rec() {
	local name=$1; shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	rm -rf "${OUT:?}/$name" && mkdir -p "$OUT/$name"
	"$TALLY" record -q "${opts[@]}" -o "$OUT/$name/%q{RANK}-%p.tally" -- "$@" \
		>"$OUT/$name/stdout" 2>"$OUT/$name/stderr" || bad "$name: the program or tally record failed: $(tail -3 "$OUT/$name/stderr")"
	"$TALLY" stats -f json -r "$ALL" -o "$OUT/$name.json" --force "$OUT/$name" 2>"$OUT/$name.stats.err"
}

# check NAME CASE EXPR: EXPR (python) over rep (report -> rows), d (the stats JSON), kv (the
# key=value pairs the workload printed, as floats) and rule(name) (the diagnosis' findings)
check() {
	$PY - "$OUT/$2.json" "$OUT/$2/stdout" "$3" <<'PY' && ok "$1" || { bad "$1"; $PY -c "
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['reports']:
    for row in r['rows'][:6]: print('   ', r['name'], row)" "$OUT/$2.json" 2>/dev/null | cut -c1-400; cat "$OUT/$2/stdout"; }
import json, re, sys
d = json.load(open(sys.argv[1]))
rep = {r["name"]: r["rows"] for r in d["reports"]}
kv = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.eE+-]+)", open(sys.argv[2]).read())}
def rule(name):
    return [f for f in rep.get("diagnosis", []) if f["Rule"] == name]
def near(a, b, tol):
    return abs(a - b) <= tol * b
sys.exit(0 if eval("(" + sys.argv[3] + ")") else 1)
PY
}

# ---- launch-bound ----------------------------------------------------------------------------------
rec tiny -- "$A" tiny 20000
check "tiny: 20,000 kernels matched to their launches, most shorter than the launch call" tiny '
rep["cuda_launch_stats"][0]["Matched"] == kv["kernels"] and rep["cuda_launch_stats"][0]["Short (% of matched)"] >= 90'
check "tiny: the diagnosis says launch-bound" tiny 'bool(rule("launch-bound"))'
rec long -- "$A" long 200 1
check "1 ms kernels: none shorter than its launch, no launch-bound finding" long '
rep["cuda_launch_stats"][0]["Matched"] == kv["kernels"] and rep["cuda_launch_stats"][0]["Short Kernels"] == 0
and not rule("launch-bound")'

# ---- a copy phase, then a compute phase ---------------------------------------------------------
rec phases -- "$A" phases 2048 500
check "phases: copy time within 3% of the copy phase CUDA events measured" phases '
near(rep["gpu_time_breakdown"][0]["Copy/Memset (ns)"], kv["copy_phase_ns"], 0.03)'
check "phases: compute time within 3% of the compute phase" phases '
near(rep["gpu_time_breakdown"][0]["Compute (ns)"], kv["compute_phase_ns"], 0.03)'
check "phases: the copies nothing overlapped are an exposed-copies finding" phases 'bool(rule("exposed-copies"))'

# ---- communication on a second stream ---------------------------------------------------------------
rec overlap-in -- "$A" overlap 20 10 4 2
check "NCCL-named kernel inside the compute: 100% overlapped, none exposed" overlap-in '
len(rep["comm_compute_overlap"]) == 1 and rep["comm_compute_overlap"][0]["Overlap (% of communication)"] >= 99
and near(rep["comm_compute_overlap"][0]["Communication (ns)"], 20 * 4e6, 0.03) and not rule("exposed-comm")'
rec overlap-half -- "$A" overlap 20 10 4 8
check "NCCL-named kernel from 8 ms into 10 ms of compute: about half overlapped" overlap-half '
40 <= rep["comm_compute_overlap"][0]["Overlap (% of communication)"] <= 60
and near(rep["gpu_time_breakdown"][0]["Communication (ns)"], rep["comm_compute_overlap"][0]["Exposed (ns)"], 0.001)'

# ---- the queue ----------------------------------------------------------------------------------------
rec queue -- "$A" queue 3000 100
check "3,000 kernels launched at once: the stream's queue runs hundreds deep" queue '
max(q["Peak Depth"] for q in rep["gpu_queue_depth"]) >= 200 and sum(q["Launches"] for q in rep["gpu_queue_depth"]) == kv["kernels"]'
"$TALLY" export -q -f chrome --force -o "$OUT/queue.chrome.json" "$OUT/queue"/*.tally
$PY - "$OUT/queue.chrome.json" <<'PY' && ok "queue: the Chrome export's counter track, as deep" || bad "queue: no deep counter track in the Chrome export"
import json, sys
d = json.load(open(sys.argv[1]))
c = [e["args"]["launches"] for e in d["traceEvents"] if e.get("ph") == "C" and e["name"].startswith("launches outstanding")]
sys.exit(0 if c and max(c) >= 200 else 1)
PY

# ---- memory near the device's capacity -------------------------------------------------------------
rec memfull --trace cuda,memory -- "$A" memory 93
check "93% of the GPU's memory allocated: memory-near-capacity" memfull '
bool(rule("memory-near-capacity")) and near(rule("memory-near-capacity")[0]["Cost (%)"], 100 * kv["allocated_bytes"] / kv["total_bytes"], 0.01)'
rec memlow --trace cuda,memory -- "$A" memory 10
check "10%: no memory finding" memlow 'not rule("memory-near-capacity")'

# ---- two ranks of one job, one of them sleeping 50 ms a step ---------------------------------------
if ! $PY -c "import torch, torch.distributed.run; assert torch.cuda.is_available()" 2>/dev/null; then
	skipped "ranks: no PyTorch with CUDA and torch.distributed"
else
	run_ranks() { # NAME BACKEND NPROC SLEEP_RANK
		rec "$1" -- $PY -m torch.distributed.run --nproc_per_node "$3" "$HERE/analyses_ranks.py" \
			--backend "$2" --sleep-rank "$4" --sleep-ms 50 --steps 20
	}
	# what torch can do with two ranks on one GPU: NCCL first
	timeout 180 $PY -m torch.distributed.run --nproc_per_node 2 "$HERE/analyses_ranks.py" --probe \
		--backend nccl >"$OUT/nccl-probe.out" 2>&1
	if [ $? -eq 0 ] && [ "$NGPU" -eq 1 ]; then
		BACKEND=nccl
		echo "note: NCCL accepted two ranks on one GPU here: the ranks use nccl"
	elif [ "$NGPU" -eq 1 ]; then
		BACKEND=gloo
		echo "note: two ranks on one GPU over NCCL failed ($(grep -m1 -o -i 'duplicate gpu[^.]*\|ncclInvalidUsage[^.]*\|Error[^.]*' "$OUT/nccl-probe.out" | head -1)): the ranks use gloo"
	else
		BACKEND=gloo
	fi
	run_ranks ranks "$BACKEND" 2 1
	check "ranks ($BACKEND): RANK=1, sleeping 50 ms a step, is the straggler, its lead 45-60 ms" ranks '
rep["rank_steps"][0]["Slowest Rank"] == "RANK=1" and rep["rank_steps"][0]["Verdict"].startswith("straggler: RANK=1")
and 45e6 <= rep["rank_steps"][0]["Lead (ns)"] <= 60e6 and rep["rank_steps"][0]["Ranks"] == 2'
	check "ranks: the diagnosis names the straggler; the two ranks are one job" ranks '
bool(rule("straggler")) and "RANK=1" in rule("straggler")[0]["Finding"]
and len(d["jobs"]) == 1'
	"$TALLY" merge -q --force -o "$OUT/ranks.tally" "$OUT/ranks" && ok "ranks: merged as one job" || bad "ranks: merge refused"
	"$TALLY" report -q --force -o "$OUT/ranks.html" "$OUT/ranks.tally" && ok "ranks: the page, $OUT/ranks.html" || bad "ranks: report"
	run_ranks even "$BACKEND" 2 -1
	check "ranks without the sleep: no straggler named" even '
rep["rank_steps"][0]["Verdict"].startswith("no straggler") and not rule("straggler")'
	if [ "$NGPU" -ge 2 ]; then
		run_ranks nccl2 nccl 2 1
		check "two GPUs over NCCL: the straggler, and real NCCL kernels in comm_compute_overlap" nccl2 '
rep["rank_steps"][0]["Slowest Rank"] == "RANK=1" and rep["comm_compute_overlap"]
and any("nccl" in r["Name"].lower() for r in rep["kern_rank_spread"])'
	else
		skipped "NCCL across two GPUs: one GPU here (the nvidia-h200-x2 kind has two)"
	fi
fi
echo "traces, JSON and pages in $OUT"
finish analyses.sh
