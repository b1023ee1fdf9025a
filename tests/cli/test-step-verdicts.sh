#!/bin/sh
# What bounds each step (docs/diagnosis.md, "The verdict of the steps"; step_bound), on training
# loops the CPU test source builds with exact times (tally-testsrc --loop, testsrc.h): a loop
# bound by the GPU, by launches, by host work after a synchronizing call, by data (its DataLoader
# workers fork children with traces of their own), by communication, a mixed one (data and sync),
# one whose start-up dominates the span, and one with no NVTX ranges (steps from the pattern of
# launches).  Each: the first finding names the bottleneck the construction sets, its share of
# the step within 10 points of the construction's, and the line: the workers' line for data, the
# launching line for launch, the sync's line and the line after it for sync, the top kernels for
# the GPU; start-up reported apart; no finding headlines a thread that waits by design.  Then the
# cause across processes in gpu_idle_why, gpu_idle_breakdown and the idle finding; compare's
# bottleneck line; and the cost of twice the steps.
# Usage: test-step-verdicts.sh TALLY TESTSRC
set -u
TALLY=$1 TESTSRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"

# loop NAME ARGS...: the launcher's trace and its workers' in $T/NAME/, and its reports as JSON
loop() {
	name=$1
	shift
	mkdir -p "$T/$name"
	"$TESTSRC" --loop --t0 1796000000000000000 "$@" --loop-worker-out "$T/$name/worker-" \
		-o "$T/$name/main.tally" >/dev/null || bad "testsrc --loop $name"
	"$TALLY" stats -f json -r diagnosis,step_bound,gpu_idle_why,gpu_idle_breakdown \
		"$T/$name" >"$T/$name.json" 2>"$T/$name.err" || bad "stats $name: $(cat "$T/$name.err")"
}

# check NAME KIND EXPR: EXPR (python) over the loop's reports: rep (report -> rows), f (the
# findings), first (the first finding), share(rule) (a finding's share of the step), pid(k)
# (worker k's pid, from its trace)
check() {
	python3 - "$T" "$2" "$3" <<'PY' >"$T/check.out" 2>&1 && ok "$1" || { bad "$1"; cat "$T/check.out"; }
import json, re, subprocess, sys
T, kind, expr = sys.argv[1:]
d = json.load(open("%s/%s.json" % (T, kind)))
rep = {r["name"]: r["rows"] for r in d["reports"]}
f = rep["diagnosis"]
first = f[0] if f else {}
def rule(name):
    return [x for x in f if x["Rule"] == name]
def share(name):
    return rule(name)[0]["Share (% of step)"] if rule(name) else -1
def pid(k):
    return [i["sections"][0]["pid"] for i in d["inputs"] if i["path"].endswith("worker-%d.tally" % k)][0]
BY_DESIGN = ("Queue._feed", "Connection._poll", "pt_pin_memory", "QueueFeederThread",
             "_worker_loop", "_pin_memory_loop")
def no_design(x):
    return not any(b in x["Finding"] + x["Why"] for b in BY_DESIGN)
ok = eval("(" + expr.strip() + ")")
if not ok:
    print(json.dumps(f, indent=1)[:3000])
sys.exit(0 if ok else 1)
PY
}

# The construction (testsrc.h): a launch call of L us and 1 us to the next; a kernel starts 5 us
# after its call or when the one before ends; loss.item() copies 2 us once the GPU is done and
# returns 1 us later.  Shares below are of a steady step, from those times.

# GPU: 10 kernels of 2 ms, launched in 60 us, then loss.item(): the step is 5 + 20,000 + 2 + 1
# us, the GPU busy 20,002 of it: 99.97%
loop gpu --loop-steps 20 --loop-kernels 10 --loop-kernel-us 2000 --loop-launch-us 5 --loop-sync
check "gpu: the first finding is gpu-bound, 99.97% of the step (within 10 points)" gpu '
first["Rule"] == "gpu-bound" and abs(share("gpu-bound") - 100.0 * 20002 / 20008) <= 10'
check "gpu: its top kernels named (each 40% of the kernel time, the embedding and Adam 10%)" gpu '
"loop_gemm_kernel 40%" in first["Why"] and "loop_norm_kernel 40%" in first["Why"]'

# launch: 200 kernels of 2 us each 21 us apart (calls of 20 us): the GPU busy 2 of every 21 us,
# idle the rest while the main thread launches at /work/loop.py:14
loop launch --loop-steps 20 --loop-kernels 200 --loop-kernel-us 2 --loop-launch-us 20
check "launch: launch-bound, 90.5% of the step (within 10 points), at its launching line" launch '
first["Rule"] == "launch-bound" and abs(share("launch-bound") - 100.0 * 19 / 21) <= 10
and "one_step (/work/loop.py:14)" in first["Why"] and "200 launch call(s) a step" in first["Why"]'

# sync: 10 kernels of 1 ms, loss.item() at line 19, then 15 ms of host work at line 20: the step
# is 5 + 10,000 + 3 + 15,000 us, 15,006 of it idle after the sync: 60.0%
loop sync --loop-steps 20 --loop-kernels 10 --loop-kernel-us 1000 --loop-launch-us 5 --loop-sync \
	--loop-host-us 15000
check "sync: sync-bound, 60.0% of the step (within 10 points)" sync '
first["Rule"] == "sync-bound" and abs(share("sync-bound") - 100.0 * 15006 / 25008) <= 10'
check "sync: both lines, the sync's (line 19) and the host work after it (burn <- line 20)" sync '
"at one_step (/work/loop.py:19)" in first["Why"]
and "burn (/work/loop.py:5) <- one_step (/work/loop.py:20)" in first["Why"]'

# data: the main thread waits 20 ms for each batch (a blocking call and its samples in Queue.get
# <- _next_data), then launches 10 kernels of 0.5 ms in 110 us; the GPU works 4,895 us into the
# next wait, so of each 20,110 us step 15,105 are idle waiting: 75.1%.  Worker 0 is on the CPU
# in burn <- Samples.__getitem__ through every wait, worker 1 through each wait's first half
# (10 ms, of which 5,105 us fall in the idle part: 34%).
loop data --loop-steps 20 --loop-kernels 10 --loop-kernel-us 500 --loop-launch-us 10 \
	--loop-data-us 20000 --loop-osrt --loop-workers 2
check "data: data-bound, 75.1% of the step (within 10 points)" data '
first["Rule"] == "data-bound" and abs(share("data-bound") - 100.0 * 15105 / 20110) <= 10'
check "data: the worker busy through the wait named first, at its line, ~100% of the wait" data '
re.search(r"meanwhile pid %d was on the CPU in burn \(/work/loop.py:5\) <- Samples.__getitem__ \(/work/loop.py:9\), (9[0-9]|100)%% of the wait" % pid(0), first["Why"])'
check "data: the second worker at its share, 34% (within 10 points)" data '
abs(float(re.search(r"pid %d was on the CPU in burn[^,]*, ([0-9.]+)%% of the wait" % pid(1), first["Why"]).group(1)) - 34) <= 10'
check "data: gpu_idle_why shows worker 0 in every gap, at its line for the whole gap" data '
len({r["Gap"] for r in rep["gpu_idle_why"]}) >= 18
and {r["Gap"] for r in rep["gpu_idle_why"] if (r["Thread"] or "").startswith("pid %d:" % pid(0))} == {r["Gap"] for r in rep["gpu_idle_why"]}
and all("burn (/work/loop.py:5) <- Samples.__getitem__" in r["Detail"] and r["Share (% of gap)"] >= 90
    for r in rep["gpu_idle_why"] if (r["Thread"] or "").startswith("pid %d:" % pid(0)))'
check "data: gpu_idle_breakdown lists the workers' stacks, marked another process's" data '
any((r["Thread"] or "").startswith("pid %d:" % pid(0)) and "another process of the job" in r["Category"]
    and "Samples.__getitem__" in r["Stack"] for r in rep["gpu_idle_breakdown"])'
check "data: the idle finding names the worker's line, not a thread that waits by design" data '
("meanwhile pid %d was on the CPU in burn (/work/loop.py:5) <- Samples.__getitem__" % pid(0)) in rule("gpu-idle")[0]["Why"]'
check "data: the by-design waiters are marked so in the breakdown" data '
all("waiting by design" in r["Category"] for r in rep["gpu_idle_breakdown"]
    if (r["Thread"] or "").startswith(("pt_pin_memory", "QueueFeederThread")))'

# communication: 5 kernels of 1 ms, then an all-reduce of 8 ms no compute overlaps: 8,000 of the
# 13,008 us step, 61.5%
loop comm --loop-steps 20 --loop-kernels 5 --loop-kernel-us 1000 --loop-launch-us 5 \
	--loop-comm-us 8000 --loop-sync
check "comm: comm-bound, 61.5% of the step (within 10 points), the all-reduce named" comm '
first["Rule"] == "comm-bound" and abs(share("comm-bound") - 100.0 * 8000 / 13008) <= 10
and "ncclDevKernel_AllReduce" in first["Why"]'

# mixed: 8 ms of data wait (samples only: no blocking call), 10 kernels of 0.5 ms, loss.item(),
# 8 ms of host work: of each 21,008 us step, 8,000 data (38.1%) and 8,001 after the sync (38.1%)
loop mixed --loop-steps 20 --loop-kernels 10 --loop-kernel-us 500 --loop-launch-us 10 \
	--loop-data-us 8000 --loop-sync --loop-host-us 8000 --loop-workers 2
check "mixed: both data-bound and sync-bound, each 38.1% of the step (within 10 points), one first" mixed '
first["Rule"] in ("data-bound", "sync-bound") and abs(share("data-bound") - 38.1) <= 10
and abs(share("sync-bound") - 38.1) <= 10'
check "mixed: the worker's line in the data finding, the line after the sync in the sync finding" mixed '
"Samples.__getitem__ (/work/loop.py:9)" in rule("data-bound")[0]["Why"]
and "burn (/work/loop.py:5) <- one_step (/work/loop.py:20)" in rule("sync-bound")[0]["Why"]'

# start-up: 2 s (imports, then the model to the GPU) before 10 GPU-bound steps of 20 ms
loop startup --loop-steps 10 --loop-kernels 10 --loop-kernel-us 2000 --loop-launch-us 5 \
	--loop-sync --loop-startup-ms 2000
check "start-up: the steps headline (gpu-bound), start-up reported apart at 2.000 s" startup '
first["Rule"] == "gpu-bound" and share("gpu-bound") >= 90 and rule("start-up")
and rule("start-up")[0]["Finding"].startswith("start-up: 2.000 s before the steps")'
check "start-up: its parts, imports 1.000 s and the model to the GPU 1.000 s" startup '
"imports 1.000 s" in rule("start-up")[0]["Why"] and "the model to the GPU 1.000 s" in rule("start-up")[0]["Why"]'
check "start-up: step_bound has its row; gpu-idle (the start-up idle) is not first" startup '
any(r["Step"] == "start-up" and abs(r["Duration (ns)"] - 2e9) < 1e6 for r in rep["step_bound"])
and rule("gpu-idle") and f.index(rule("gpu-idle")[0]) > 0'

# no NVTX ranges: the steps from the launch pattern (loop_embed_kernel opens each)
loop pattern --loop-steps 20 --loop-kernels 10 --loop-kernel-us 1000 --loop-launch-us 5 \
	--loop-sync --loop-host-us 15000 --loop-no-ranges
check "pattern: no ranges, steps from the launches; sync-bound 60.0% (within 10 points)" pattern '
first["Rule"] == "sync-bound" and abs(share("sync-bound") - 60.0) <= 10
and "the launch pattern: loop_embed_kernel begins each step of 10 kernels" in first["Finding"]'

# a short sync: 200 kernels of 2 us launched in 4,200 us, the GPU done when loss.item() copies
# (8 us: no sample falls in it), then 15 ms of host work: 15,003 of each 19,208 us after the
# sync (78.1%).  With the call's stack (--python-stacks records a launch's; the blocking copy
# is one) the sync's line is named; without, it is not guessed.
loop shortsync --loop-steps 20 --loop-kernels 200 --loop-kernel-us 2 --loop-launch-us 20 \
	--loop-sync --loop-host-us 15000 --loop-call-stacks
loop shortsync-nostack --loop-steps 20 --loop-kernels 200 --loop-kernel-us 2 --loop-launch-us 20 \
	--loop-sync --loop-host-us 15000
check "short sync: sync-bound 78.1% (within 10 points), its line from the stack at the call" shortsync '
first["Rule"] == "sync-bound" and abs(share("sync-bound") - 100.0 * 15003 / 19208) <= 10
and "a synchronizing call at one_step (/work/loop.py:19)" in first["Why"]'
check "short sync without call stacks: no line guessed for the sync" shortsync-nostack '
first["Rule"] == "sync-bound" and "a synchronizing call waited" in first["Why"]'

for k in gpu launch sync data comm mixed startup pattern shortsync; do
	check "$k: no finding headlines a thread that waits by design" $k 'all(no_design(x) for x in f)'
done

# ---- compare: which bottleneck moved -----------------------------------------------------------
expect_rc "compare data with sync" 1 "$TALLY" compare "$T/data" "$T/sync"
grep -q "steps    A: data-bound, 7[0-9.]*% of the step.*B: sync-bound, [56][0-9.]*% of the step.*the bottleneck moved from data to sync" "$T/out" &&
	ok "compare: the bottleneck moved from data to sync, each side's share" ||
	{ bad "compare: bottleneck line"; cat "$T/out"; }
"$TALLY" compare -f json "$T/data" "$T/data" >"$T/cmp.json"
python3 -c "
import json, sys
b = json.load(open('$T/cmp.json'))['bottleneck']
sys.exit(0 if b['moved'] is False and b['a']['verdict'] == 'data' and abs(b['a']['share_of_step']['data'] - 75.1) <= 10 else 1)" &&
	ok "compare JSON: the same run, the same bottleneck (moved false)" || bad "compare JSON bottleneck"

# ---- cost: twice the steps (and samples, and workers' samples), at most about twice the time and
# memory -------------------------------------------------------------------------------------------
measure() { # trace dir -> "user_seconds max_rss_kb"
	python3 - "$TALLY" "$1" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "stats", "-f", "csv", "-r", "step_bound,diagnosis,gpu_idle_why",
                sys.argv[2]], stdout=subprocess.DEVNULL, check=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(u.ru_utime + u.ru_stime, u.ru_maxrss)
PY
}
for n in 1 2; do # N: 400 steps of 30 kernels, 8 s of samples of 3 threads and 2 workers
	mkdir -p "$T/cost$n"
	"$TESTSRC" --loop --loop-steps $((400 * n)) --loop-kernels 30 --loop-kernel-us 200 \
		--loop-launch-us 10 --loop-data-us 14000 --loop-sync --loop-host-us 5000 \
		--loop-osrt --loop-workers 2 --loop-worker-out "$T/cost$n/worker-" \
		-o "$T/cost$n/main.tally" >/dev/null || bad "testsrc for the doubling"
done
best() { for i in 1 2 3; do measure "$1"; done | sort -n | head -1; }
set -- $(best "$T/cost1") $(best "$T/cost2")
python3 -c "
import sys
t1, m1, t2, m2 = map(float, sys.argv[1:])
print('N: %.3f s %d KB; 2N: %.3f s %d KB' % (t1, m1, t2, m2))
sys.exit(0 if t2 <= 3 * max(t1, 0.05) and m2 <= 3 * m1 else 1)" "$@" >"$T/cost.txt" &&
	ok "step_bound, diagnosis, gpu_idle_why: twice the steps: $(cat "$T/cost.txt")" ||
	bad "not linear: $(cat "$T/cost.txt")"
finish
