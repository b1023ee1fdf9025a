#!/bin/bash
# What bounds a training step, on the GPU (issue 36's bar): real PyTorch loops, each limited by one
# thing by construction (tests/gpu/step_loops.py: data, launch, sync, gpu, and a mixed one),
# recorded as a user would (--sample python,native --trace cuda,nvtx,osrt --gpu-metrics
# --gpu-metrics-frequency 1000, every process of the tree to its own file), then
# `tally stats -r diagnosis -f json` checked against the program's own ground truth (its JSON:
# each step's wall time, data wait and host work after the sync, measured by the program itself,
# and, from a second run untraced by tally under torch.profiler, the GPU's kernel time per step):
#   - the first finding names the bottleneck the construction sets (data-bound, launch-bound,
#     sync-bound, gpu-bound; the mixed loop: data-bound and sync-bound both, one of them first);
#   - its share of the step within 10 points of the construction's:
#       data    the median over steps of the data wait less the GPU's own work still running in
#               it (the step's GPU span past the host's own part), over the step
#       launch  100 less the profiler's GPU time per step over the median step
#       sync    the median host work after the sync over the median step
#       gpu     the profiler's GPU time per step over the median step (at most 100)
#   - the line: the workers' line for data (Samples.__getitem__'s), one of the launching lines
#     of one_step for launch (the forward, the backward, the optimizer), the sync's line and the
#     line after it for sync, the top kernels for the GPU;
#   - start-up reported apart (a start-up finding; the first finding is of the steps);
#   - no finding names a thread that waits by design (the queue feeder, the pin-memory loop).
# Every trace, the stats JSON and the program's JSON go to OUT (or $OUT).
#
#   tests/gpu/step-loops.sh [BUILD_DIR] [OUT_DIR]      (about 3 minutes)
# Exits 77 without a GPU or without PyTorch.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-step-loops-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3} # the loops'; the checks run python3
STEPS=${STEPS:-30}
$PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || skip "no PyTorch with CUDA"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
if ! $PY -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null && [ -e "$B/extra-libs/libdw.so.1" ]; then
	export LD_LIBRARY_PATH=$B/extra-libs:$LD_LIBRARY_PATH
fi

for kind in data launch sync gpu mixed; do
	d=$OUT/$kind
	rm -rf "$d"
	mkdir -p "$d/traces"
	# the profiler's GPU time per step, untraced by tally
	$PY "$HERE/step_loops.py" "$kind" "$d/prof.json" --steps "$STEPS" --profile \
		>"$d/prof.out" 2>&1 || bad "$kind: the untraced profile run failed (see $d/prof.out)"
	"$TALLY" record -f --sample python,native --trace cuda,nvtx,osrt --gpu-metrics \
		--gpu-metrics-frequency 1000 -o "$d/traces/%p.tally" -- \
		$PY "$HERE/step_loops.py" "$kind" "$d/truth.json" --steps "$STEPS" \
		>"$d/record.out" 2>&1 || bad "$kind: tally record exited $? (see $d/record.out)"
	"$TALLY" stats -f json -r diagnosis,step_bound "$d/traces" >"$d/stats.json" 2>"$d/stats.err"
	"$TALLY" stats -r diagnosis,step_bound "$d/traces" >"$d/stats.txt" 2>&1
	ls "$d/traces" >"$d/files.txt"
done

# check KIND: the verdicts against the ground truth; prints "ok TEXT" / "bad TEXT" lines
check() {
	python3 - "$OUT/$1" "$1" <<'PY'
import json, re, statistics, sys
d, kind = sys.argv[1:]
def say(ok, text):
    print(("ok " if ok else "bad ") + "%s: %s" % (kind, text))
try:
    truth = json.load(open(d + "/truth.json"))
    prof = json.load(open(d + "/prof.json"))
    st = json.load(open(d + "/stats.json"))
except Exception as e:
    say(False, "no result (%s)" % e)
    sys.exit()
rep = {r["name"]: r["rows"] for r in st["reports"]}
f = rep["diagnosis"]
first = f[0] if f else {"Rule": "none", "Why": "", "Finding": ""}
def rule(name):
    return [x for x in f if x["Rule"] == name]
def share(name):
    return rule(name)[0]["Share (% of step)"] if rule(name) else -100.0
steps = truth["per_step"][1:]  # step 0 is warm-up, as tally finds it
wall = statistics.median(r["wall_s"] for r in steps)
gpu_step = prof["profiler_gpu_s_per_step"] or 0
def data_share():
    v = []
    for r in steps:
        tail = max(0.0, r["gpu_span_s"] - (r["wall_s"] - r["data_wait_s"]))
        v.append(100.0 * max(0.0, r["data_wait_s"] - tail) / r["wall_s"])
    return statistics.median(v)
def sync_share():
    return 100.0 * statistics.median(r["host_after_sync_s"] / r["wall_s"] for r in steps)
f_ = truth["file"].split("/")[-1]
# the construction's shares of a step (the program's own clocks and the untraced profile)
cons = {"gpu": min(100.0, 100.0 * gpu_step / wall)}
if kind in ("data", "mixed"):
    cons["data"] = data_share()
if kind in ("sync", "mixed"):
    cons["sync"] = sync_share()
cons["launch"] = max(0.0, 100.0 - sum(cons.values()))
print("info %s: the construction's shares of the step: %s" % (
    kind, ", ".join("%s %.1f%%" % kv for kv in sorted(cons.items()))))
if kind == "mixed":  # both of its limits named, the larger first
    want = [(c + "-bound", cons[c]) for c in ("data", "sync") if cons[c] >= 15]
    firsts = [max(cons, key=cons.get) + "-bound"]
else:
    want = [(kind + "-bound", cons[kind])]
    firsts = [kind + "-bound"]
say(first["Rule"] in firsts, "the first finding is %s (want %s)" % (first["Rule"], " or ".join(firsts)))
for w, expect in want:
    say(abs(share(w) - expect) <= 10,
        "%s %.1f%% of the step, the construction's %.1f%% (within 10 points)" % (w, share(w), expect))
why = lambda name: rule(name)[0]["Why"] if rule(name) else ""
if kind in ("data", "mixed") and [w for w, _ in want if w == "data-bound"]:
    line = "%s:%d)" % (f_, truth["work_line"])
    workers = truth["worker_pids"]
    say(line in why("data-bound") and "Samples.__getitem__" in why("data-bound"),
        "the workers' line (Samples.__getitem__, %s) named" % line)
    m = re.search(r"meanwhile pid (\d+) was [^,]*Samples.__getitem__[^,]*, (\d+)% of the wait", why("data-bound"))
    say(bool(m) and int(m.group(1)) in workers, "a worker (pid %s) named first with its share of the wait%s"
        % (workers, " (%s%%)" % m.group(2) if m else ""))
if kind == "launch":
    lines = ["one_step (%s:%d)" % (truth["file"], n) for n in truth.get("launch_lines", [])]
    say(any(l in why("launch-bound") for l in lines) if lines else
        ("one_step (%s:" % truth["file"]) in why("launch-bound"),
        "a launching line of one_step named (%s)" % truth.get("launch_lines", "any"))
if kind in ("sync", "mixed") and [w for w, _ in want if w == "sync-bound"]:
    say(("at one_step (%s:%d)" % (truth["file"], truth["sync_line"])) in why("sync-bound"),
        "the sync's line %d named" % truth["sync_line"])
    say(("%s:%d)" % (f_, truth["host_line"])) in why("sync-bound"),
        "the line after the sync, %d, named" % truth["host_line"])
if kind == "gpu":
    say(why("gpu-bound").startswith("top kernels in the steps:") and "%" in why("gpu-bound"),
        "the top kernels named")
    say("SM Issue" in why("gpu-bound"), "the counters say compute- or memory-bound")
say(bool(rule("start-up")) and first["Rule"] not in ("start-up", "gpu-idle"),
    "start-up reported apart (%s)" % (rule("start-up")[0]["Finding"][:60] if rule("start-up") else "none"))
design = ("Queue._feed", "_PollLikeSelector.select", "Connection._poll", "Condition.wait", "QueueFeederThread")
say(not any(b in x["Finding"] + x["Why"] for x in f for b in design),
    "no finding names a thread that waits by design")
PY
}
for kind in data launch sync gpu mixed; do
	while read -r v t; do
		if [ "$v" = info ]; then echo "     $t"; elif [ "$v" = ok ]; then ok "$t"; else
			bad "$t"
			head -30 "$OUT/$kind/stats.txt" | cut -c1-400 | sed 's/^/     /'
		fi
	done < <(check $kind)
done
echo "the traces, the reports and the programs' JSON: $OUT"
finish
