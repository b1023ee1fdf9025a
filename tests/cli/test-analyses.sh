#!/bin/sh
# The analyses of tally stats and the diagnosis (docs/stats.md, docs/diagnosis.md), on multi-rank
# traces the CPU test source made with exact times (tally-testsrc --steps): every expected figure
# is computed here from the shape the source was told to make, never read from tally.  Each rule
# of the diagnosis runs on a trace built to trigger it and on one built not to.  Then the job
# grouping of stats, merge and report; the queue counters of the Chrome export; the cost: linear
# in records (a doubling test), bounded memory where the report promises it, and 512 ranks.
# Usage: test-analyses.sh TALLY TESTSRC SRCDIR
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 TESTSRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export TZ=UTC LC_ALL=C

# One rank of the steps shape: 20 steps; per step a 2 ms copy, ten 1 ms kernels back to back, an
# NCCL kernel of 3 ms starting 2 ms after the first kernel (so inside the compute), 0.5 ms between
# steps.  Arguments after the rank change the shape.
BASE="--t0 1796000000000000000 --steps 20 --step-kernels 10 --kernel-us 1000 --copy-us 2000
	--comm-us 3000 --comm-at-us 2000 --gap-us 500 --devices 1"
mk() { # file rank [testsrc args]
	f=$1 r=$2
	shift 2
	# shellcheck disable=SC2086
	RANK=$r "$TESTSRC" -o "$f" $BASE "$@" >/dev/null || bad "testsrc $f"
}

# check NAME EXPR: EXPR (python) over rep (report name -> rows), d (the JSON), shape (a dict of
# the arguments) and model() (the figures the shape implies), on $T/j.json
check() {
	python3 - "$T/j.json" "$2" "$SHAPE" <<'PY' && ok "$1" || { bad "$1"; head -c 3000 "$T/j.json"; echo; }
import json, sys
d = json.load(open(sys.argv[1]))
rep = {r["name"]: r["rows"] for r in d["reports"]}
shape = dict(steps=20, kernels=10, kernel=1000, copy=2000, comm=3000, comm_at=2000, sleep=0, gap=500)
for kv in sys.argv[3].split():
    k, v = kv.split("=")
    shape[k] = float(v)
def model(s=shape):
    """ns figures of one rank, from the construction (testsrc_run_steps)"""
    us = 1000
    compute = s["steps"] * s["kernels"] * s["kernel"] * us
    comm_end = s["comm_at"] + s["comm"]
    exposed = s["steps"] * max(0, comm_end - s["kernels"] * s["kernel"]) * us
    idle = (s["steps"] - 1) * (1 + s["sleep"] + s["gap"] + 5) * us
    copy = s["steps"] * s["copy"] * us
    return dict(compute=compute, comm=s["steps"] * s["comm"] * us, comm_exposed=exposed,
                copy=copy, idle=idle, span=compute + exposed + copy + idle)
def rule(name):
    return [f for f in rep.get("diagnosis", []) if f["Rule"] == name]
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
PY
}
ALL=gpu_time_breakdown,comm_compute_overlap,kern_rank_spread,rank_steps,cuda_launch_stats,gpu_queue_depth,diagnosis
stats() { "$TALLY" stats -f json -r "$ALL" "$@" >"$T/j.json" 2>"$T/err"; }

# ---- 1. four ranks, rank 2 sleeps 50 ms at the end of every step ---------------------------------
mkdir "$T/strag"
for r in 0 1 3; do mk "$T/strag/r$r.tally" $r; done
mk "$T/strag/r2.tally" 2 --sleep-us 50000
SHAPE=""
stats "$T/strag"
check "breakdown: compute, copies, communication and idle of each rank as built" '
all(r["Compute (ns)"] == model()["compute"] and r["Copy/Memset (ns)"] == model()["copy"]
    and r["Communication (ns)"] == model()["comm_exposed"] for r in rep["gpu_time_breakdown"])
and [r["Idle (ns)"] for r in rep["gpu_time_breakdown"]] ==
    [model()["idle"], model()["idle"], model(dict(shape, sleep=50000))["idle"], model()["idle"]]
and all(r["Span (ns)"] == r["Compute (ns)"] + r["Communication (ns)"] + r["Copy/Memset (ns)"] + r["Idle (ns)"]
        for r in rep["gpu_time_breakdown"])
and all(r["Idle Unproven (ns)"] == 0 and r["Idle Proven (ns)"] == r["Idle (ns)"] for r in rep["gpu_time_breakdown"])'
check "breakdown: the shares add up to 100%" '
all(abs(r["Compute (% of span)"] + r["Communication (% of span)"] + r["Copy/Memset (% of span)"]
        + r["Busy Outside Trace (% of span)"] + r["Idle (% of span)"] - 100) < 1e-6
    for r in rep["gpu_time_breakdown"])'
check "overlap: the NCCL kernel (3 ms, inside the 10 ms of compute) fully overlapped" '
all(r["Communication (ns)"] == model()["comm"] and r["Overlapped (ns)"] == model()["comm"]
    and r["Overlap (% of communication)"] == 100 and r["Exposed (ns)"] == 0 for r in rep["comm_compute_overlap"])
and len(rep["comm_compute_overlap"]) == 4'
check "rank_steps: RANK=2 named, slowest in all 20 steps, lead 50 ms over the others" '
rep["rank_steps"][0]["Step"] == "all" and rep["rank_steps"][0]["Slowest Rank"] == "RANK=2"
and rep["rank_steps"][0]["Lead (ns)"] == 50000000 and rep["rank_steps"][0]["Verdict"].startswith("straggler: RANK=2, slowest in 20 of 20")
and len(rep["rank_steps"]) == 21 and all(s["Lead (ns)"] == 50000000 for s in rep["rank_steps"][1:])'
check "diagnosis: straggler finding with its lead, and gpu-idle on RANK=2" '
rule("straggler") and "RANK=2" in rule("straggler")[0]["Finding"] and "50.000 ms" in rule("straggler")[0]["Finding"]
and rule("gpu-idle") and "RANK=2" in rule("gpu-idle")[0]["Where"]
and rule("straggler")[0]["Cost (ns)"] == 3 * min(50000000 * 20, model()["idle"] + model()["comm_exposed"])
and 0 < rule("straggler")[0]["Cost (% of GPU time)"] <= 100'
check "diagnosis: RANK=2 idles after each step's cudaStreamSynchronize (then the sleep): synchronization, no line without samples" '
rule("gpu-idle")[0]["Why"].startswith("synchronization, 100% of the idle time: host wait that began inside a synchronizing call")
and "the host was in" not in rule("gpu-idle")[0]["Why"]'
check "queue depth: 11 launches a step on stream 7 (copy + 10 kernels), 1 on stream 8" '
sorted((q["Rank"], q["Stream"], q["Launches"]) for q in rep["gpu_queue_depth"]) ==
  sorted((r, s, n) for r in ("RANK=0", "RANK=1", "RANK=2", "RANK=3") for s, n in ((7, 220), (8, 20)))
and all(10 <= q["Peak Depth"] <= 11 for q in rep["gpu_queue_depth"] if q["Stream"] == 7)'
check "launch stats: 220 kernel launches matched, latency from the construction" '
all(r["Launch Calls"] == 240 and r["Kernels"] == 220 and r["Matched"] == 220 and r["Short Kernels"] == 0
    and r["Latency P50 (ns)"] >= 5000 for r in rep["cuda_launch_stats"])'
check "no short-kernels or exposed-comm finding where the shape has none" '
not rule("short-kernels") and not rule("exposed-comm")'
check "exposed copies: 2 ms of every 12.5 ms step (16%) is past the 5% threshold" '
rule("exposed-copies") and "Host-to-Device" in rule("exposed-copies")[0]["Where"]'

# the same ranks without the sleep: no straggler, no idle finding
mkdir "$T/even"
for r in 0 1 2 3; do mk "$T/even/r$r.tally" $r; done
stats "$T/even"
check "no straggler when every rank takes the same time" '
rep["rank_steps"][0]["Verdict"].startswith("no straggler") and not rule("straggler") and not rule("gpu-idle")'
# ... and a fifth process whose NVTX ranges are all "iter", never "step": left out, and said
RANK=4 "$TESTSRC" -o "$T/even/r4.tally" --kernels 10 --range-every 2 >/dev/null || bad "testsrc r4"
stats "$T/even"
check "a process without the step range is left out of rank_steps, and the verdict counts it" '
rep["rank_steps"][0]["Ranks"] == 4 and len(rep["rank_steps"]) == 21
and all(s["Ranks"] == 4 for s in rep["rank_steps"][1:])
and rep["rank_steps"][0]["Verdict"].startswith("no straggler")
and rep["rank_steps"][0]["Verdict"].endswith("; 1 process with other NVTX ranges but none \x27step\x27 left out")'

# jitter: every rank's steps vary by +-2 x 10 x 20 us; rank 1 is 0.4% slower: inside the spread
mkdir "$T/jitter"
for r in 0 2 3; do mk "$T/jitter/r$r.tally" $r --jitter-us 20; done
mk "$T/jitter/r1.tally" 1 --jitter-us 20 --kernel-us 1004
stats "$T/jitter"
check "a rank 0.4% slower within a 2% step-to-step spread is not named a straggler" '
rep["rank_steps"][0]["Slowest Rank"] == "RANK=1" and rep["rank_steps"][0]["Lead (ns)"] == 40000
and rep["rank_steps"][0]["Verdict"].startswith("no straggler") and not rule("straggler")'
# ... and kern_rank_spread says its kernel stands out only past the rule: 0.4% is not
check "kern_rank_spread: 0.4% is not standing out" '
all(r["Stands Out"] == "" for r in rep["kern_rank_spread"])'
# a rank whose kernels run 50% longer stands out in kern_rank_spread (three ranks or more)
mk "$T/jitter/r1.tally" 1 --kernel-us 1500
stats "$T/jitter"
check "kern_rank_spread: the rank with 1.5 ms kernels stands out, slower; the others do not" '
[(r["Rank"], r["Stands Out"]) for r in rep["kern_rank_spread"] if r["Kernel #"] == 1] ==
  [("RANK=0", ""), ("RANK=1", "slower"), ("RANK=2", ""), ("RANK=3", "")]
and [r["Med (ns)"] for r in rep["kern_rank_spread"] if r["Kernel #"] == 1] == [1000000.0, 1500000.0, 1000000.0, 1000000.0]'
SHAPE=""

# ---- 2. communication that compute does not cover: it starts 8 ms into 10 ms of compute --------
mkdir "$T/comm"
mk "$T/comm/r0.tally" 0 --comm-us 4000 --comm-at-us 8000
SHAPE="comm=4000 comm_at=8000"
stats "$T/comm"
check "overlap: 2 of the 4 ms overlapped (50%), 2 ms exposed per step" '
rep["comm_compute_overlap"][0]["Overlap (% of communication)"] == 50 and rep["comm_compute_overlap"][0]["Exposed (ns)"] == model()["comm_exposed"]
and rep["gpu_time_breakdown"][0]["Communication (ns)"] == model()["comm_exposed"]
and rep["gpu_time_breakdown"][0]["Span (ns)"] == model()["span"]'
check "diagnosis: exposed-comm (2 of 14 ms, past 10%)" 'rule("exposed-comm") and rule("exposed-comm")[0]["Cost (ns)"] == model()["comm_exposed"]'

# ---- 3. tiny kernels: 2 us each, launched by 4 us calls: short kernels --------------------------
mk "$T/tiny.tally" 0 --steps 200 --step-kernels 10 --kernel-us 2 --copy-us 0 --comm-us 0
SHAPE="steps=200 kernel=2 copy=0 comm=0"
stats "$T/tiny.tally"
check "launch stats: every kernel shorter than its 4 us launch call" '
rep["cuda_launch_stats"][0]["Short Kernels"] == 2000 and rep["cuda_launch_stats"][0]["Short (% of matched)"] == 100
and rep["cuda_launch_stats"][0]["Launch Call P50 (ns)"] == 4000 and rep["cuda_launch_stats"][0]["Latency P50 (ns)"] == 5000
and rep["cuda_launch_stats"][0]["Top Short Kernel"] == "ampere_sgemm_128x64_nn"'
check "diagnosis: short-kernels, its cost at most the idle time" '
rule("short-kernels") and 0 < rule("short-kernels")[0]["Cost (ns)"] <= rep["gpu_time_breakdown"][0]["Idle (ns)"]'
SHAPE=""
stats "$T/even"
check "no short-kernels finding with 1 ms kernels" 'not rule("short-kernels")'

# ---- 4. copies: a control with short ones, and memory near the device's 141 GiB ----------------
mk "$T/fewcopies.tally" 0 --copy-us 100 --mem-mb 1000
stats "$T/fewcopies.tally"
check "no exposed-copies finding at 0.1 of 10 ms; no memory finding at 1000 MB of 141 GiB" '
not rule("exposed-copies") and not rule("memory-near-capacity")'
mk "$T/fullmem.tally" 0 --mem-mb 139000
stats "$T/fullmem.tally"
check "diagnosis: memory-near-capacity at 139000 MiB of 141 GiB" '
rule("memory-near-capacity") and rule("memory-near-capacity")[0]["Cost (ns)"] == 0
and rule("memory-near-capacity")[0]["Cost (% of GPU time)"] is None
and "%.1f%%" % (100.0 * 139000 / (141 * 1024)) in rule("memory-near-capacity")[0]["Finding"]'

# ---- 5. lost records ----------------------------------------------------------------------------
# (CUPTI drops 500 records halfway through a 100 ms idle stretch: the loss window, a 10 ms slice,
# lies inside it, so the whole stretch is unproven)
"$TESTSRC" -o "$T/lossy.tally" --kernels 3000 --idle-at 1000:100:500 --slice-ms 10 >/dev/null
"$TALLY" stats -f json -r "$ALL" "$T/lossy.tally" >"$T/j.json" 2>/dev/null
check "diagnosis: lost-records, and the idle inside the loss window unproven" '
rule("lost-records") and rep["gpu_time_breakdown"][0]["Idle Unproven (ns)"] >= 99000000'

# one definition of idle: gpu_idle_breakdown's classes add up to gpu_time_breakdown's idle, and
# their unproven parts to its unproven idle, on the four ranks and on the lossy trace
for tr in "$T/strag" "$T/lossy.tally"; do
	"$TALLY" stats -f json -r gpu_time_breakdown,gpu_idle_breakdown "$tr" >"$T/j.json" 2>/dev/null
	check "gpu_idle_breakdown and gpu_time_breakdown: the same idle and unproven idle ($(basename "$tr"))" '
all(sum(c[k] for c in rep["gpu_idle_breakdown"] if c["PID"] == r["PID"] and c["Device"] == r["Device"]
        and c["Rank"] == r["Rank"] and ":" not in c["Category"]) == r[v]
    for r in rep["gpu_time_breakdown"] for k, v in (("Idle Time (ns)", "Idle (ns)"), ("Unproven (ns)", "Idle Unproven (ns)")))
and len(rep["gpu_idle_breakdown"]) == 3 * len(rep["gpu_time_breakdown"])'
done
stats "$T/even"
check "no lost-records finding on complete traces" 'not rule("lost-records")'

# ---- 6. the step range: another name, named with --range ----------------------------------------
"$TESTSRC" -o "$T/iter.tally" --kernels 200 --range-every 10 >/dev/null
"$TALLY" stats -r rank_steps "$T/iter.tally" >"$T/out" 2>&1
grep -q "no NVTX range named step or ProfilerStep.*--range NAME.*iter (20, in 1 process)" "$T/out" &&
	ok "rank_steps: no 'step' range: says so, and suggests the repeated one" || { bad "no step range"; cat "$T/out"; }
"$TALLY" stats -f json -r rank_steps --range iter "$T/iter.tally" >"$T/j.json" 2>/dev/null
check "rank_steps --range iter: 20 steps" 'len(rep["rank_steps"]) == 21'

# ---- 7. the text and CSV forms -------------------------------------------------------------------
"$TALLY" stats -r diagnosis "$T/strag" >"$T/out" 2>&1
grep -q '^ [0-9]\. straggler: RANK=2 is the slowest in 20 of 20' "$T/out" && grep -q '^     Try  ' "$T/out" &&
	ok "diagnosis as text: numbered blocks" || { bad "diagnosis text"; cat "$T/out"; }
"$TALLY" stats -f csv -r diagnosis "$T/strag" >"$T/out" 2>&1
grep -q '^Rule,Cost (ns),Cost (% of GPU time),Share (% of step),Finding,Proof,Where,Why,Try$' "$T/out" && grep -q '^straggler,[1-9][0-9]*,' "$T/out" &&
	ok "diagnosis as CSV" || { bad "diagnosis csv"; cat "$T/out"; }
# two steps are too few for a verdict of the steps (docs/diagnosis.md): nothing else crosses a rule
mk "$T/twosteps.tally" 0 --steps 2 --copy-us 100
"$TALLY" stats -r diagnosis "$T/twosteps.tally" >"$T/out" 2>&1
grep -q "nothing crosses a rule's threshold" "$T/out" && ok "no finding: said so" || { bad "no finding"; cat "$T/out"; }

# ---- 8. traces that do not belong together -------------------------------------------------------
mkdir "$T/jobs"
SLURM_JOB_ID=101 SLURM_STEP_ID=0 mk "$T/jobs/a.tally" 0
SLURM_JOB_ID=101 SLURM_STEP_ID=0 mk "$T/jobs/b.tally" 1
expect_rc "one Slurm job: merge" 0 "$TALLY" merge -q --force -o "$T/m.tally" "$T/jobs"
SLURM_JOB_ID=202 mk "$T/jobs/c.tally" 2
expect_rc "two Slurm jobs: merge refuses" 2 "$TALLY" merge -q --force -o "$T/m2.tally" "$T/jobs"
grep -q "SLURM_JOB_ID=101 SLURM_STEP_ID=0.*2 process" "$T/err" && grep -q "SLURM_JOB_ID=202" "$T/err" &&
	grep -q -- "--mixed-jobs" "$T/err" && [ ! -e "$T/m2.tally" ] && ok "merge: names both jobs and the flag, writes nothing" ||
	{ bad "merge refusal"; cat "$T/err"; }
expect_rc "two jobs: merge --mixed-jobs" 0 "$TALLY" merge -q --force --mixed-jobs -o "$T/m2.tally" "$T/jobs"
expect_rc "two jobs: report refuses" 2 "$TALLY" report -q --force -o "$T/j.html" "$T/jobs"
expect_rc "two jobs: report --mixed-jobs" 0 "$TALLY" report -q --force --mixed-jobs -o "$T/j.html" "$T/jobs"
expect_rc "two jobs: stats warns and runs" 0 "$TALLY" stats -r diagnosis "$T/jobs"
grep -q "WARNING: these traces are of 2 different jobs" "$T/out" && ok "stats: the warning" || { bad "stats warning"; cat "$T/out"; }
stats "$T/jobs"
check "diagnosis: mixed-jobs comes first; JSON lists the jobs" '
rep["diagnosis"][0]["Rule"] == "mixed-jobs" and len(d["jobs"]) == 2 and d["jobs"][0]["key"] == "SLURM_JOB_ID=101 SLURM_STEP_ID=0"'
# no ids: recordings hours apart are two jobs, at the same time one; a run id joins them
mkdir "$T/time"
mk "$T/time/a.tally" 0
mk "$T/time/b.tally" 1 --realtime-shift-s 7200
expect_rc "no ids, two hours apart: merge refuses" 2 "$TALLY" merge -q --force -o "$T/m3.tally" "$T/time"
mk "$T/time/b.tally" 1
expect_rc "no ids, recorded together: merge" 0 "$TALLY" merge -q --force -o "$T/m3.tally" "$T/time"
TORCHELASTIC_RUN_ID=abc mk "$T/time/a.tally" 0
TORCHELASTIC_RUN_ID=abc mk "$T/time/b.tally" 1 --realtime-shift-s 7200
expect_rc "one torchrun run id, hours apart: merge" 0 "$TALLY" merge -q --force -o "$T/m3.tally" "$T/time"
WORLD_SIZE=4 RANK=0 "$TESTSRC" -o "$T/ws.tally" --kernels 10 >/dev/null
"$TALLY" stats "$T/ws.tally" >"$T/out" 2>&1
grep -q "job 1: only 1 of 4 ranks are here" "$T/out" && ok "stats: 1 of WORLD_SIZE=4 ranks said" || { bad "world size"; cat "$T/out"; }

# ---- 9. the Chrome export's queue counters ---------------------------------------------------------
"$TALLY" export -q -f chrome --force -o "$T/c.json" "$T/strag/r0.tally"
python3 - "$T/c.json" <<'PY' && ok "chrome: a queue counter track per stream, 11 launches deep on stream 7" || bad "chrome queue counters"
import json, sys
d = json.load(open(sys.argv[1]))
c = [e for e in d["traceEvents"] if e.get("ph") == "C" and e["name"].startswith("launches outstanding")]
names = {e["name"] for e in c}
peak7 = max(e["args"]["launches"] for e in c if e["name"].endswith("stream 7"))
sys.exit(0 if names == {"launches outstanding, stream 7", "launches outstanding, stream 8"} and 10 <= peak7 <= 11 else 1)
PY

# ---- 10. the cost: linear in records, bounded memory, 512 ranks -----------------------------------
# run REPORTS TRACE: wall seconds and peak RSS (KiB) into $T/t
run() {
	/usr/bin/time -f "%e %M" -o "$T/t" "$TALLY" stats -r "$1" "$2" >/dev/null 2>&1
	cat "$T/t"
}
mk "$T/n1.tally" 0 --steps 2000 --step-kernels 100 --kernel-us 20 --copy-us 10 --comm-us 100
mk "$T/n2.tally" 0 --steps 4000 --step-kernels 100 --kernel-us 20 --copy-us 10 --comm-us 100
set -- $(run "$ALL" "$T/n1.tally") $(run "$ALL" "$T/n2.tally")
echo "all analyses: 220k kernels ${1}s ${2}KiB; 440k kernels ${3}s ${4}KiB"
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b < 3 * a + 0.3 else 1)" "$1" "$3" &&
	ok "twice the records: at most about twice the time (${1}s, ${3}s)" || bad "doubling: ${1}s -> ${3}s"
BOUNDED=gpu_time_breakdown,comm_compute_overlap,gpu_queue_depth,rank_steps
set -- $(run "$BOUNDED" "$T/n1.tally") $(run "$BOUNDED" "$T/n2.tally")
python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if b < a * 1.3 + 2048 else 1)" "$2" "$4" &&
	ok "breakdown, overlap, queue, steps: memory does not grow with records (${2} KiB, ${4} KiB)" ||
	bad "memory grows: ${2} KiB -> ${4} KiB"
mkdir "$T/many"
r=0
while [ $r -lt 512 ]; do
	RANK=$r "$TESTSRC" -o "$T/many/r$r.tally" --t0 1796000000000000000 --steps 10 --step-kernels 5 \
		--kernel-us 100 --comm-us 50 --devices 1 >/dev/null || bad "testsrc rank $r"
	r=$((r + 1))
done
set -- $(run "$ALL" "$T/many")
echo "all analyses over 512 rank traces: ${1}s, ${2} KiB"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 30 else 1)" "$1" &&
	ok "512 ranks in seconds (${1}s)" || bad "512 ranks took ${1}s"
finish
