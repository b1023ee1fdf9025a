#!/bin/bash
# The whole job's host side on the GPU (issue 32): every process that matters sampled, mixed
# stacks, samples counted under load, the DataLoader's stall.  Each check against what the
# workload says it did (tests/exitpath/check-sampling.py compares).
#
#   loader     the slow DataLoader (sampling_loader.py: one fork worker sleeping SLOW per item at a
#              known line) under --sample python: the worker has a trace of its own, and its
#              samples in the GPU's idle gaps (the parent's kernel records, one clock) are at its
#              sleep's line; the parent's are in _get_data (the queue)
#   mixed      a PyTorch training loop (torch_dataloader.py: Linear, backward, SGD, 2 fork
#              workers) under --sample python,native: the main thread's native samples are
#              mixed stacks, from the CUDA driver or ATen to the script's Python lines; the
#              shares of Python samples torn and with no stack, and the threads with no Python
#              frame counted apart (samples_no_python)
#   complete   10 runs of the fork DataLoader (torch_dataloader.py, 4 workers) under --sample
#              python: how many COMPLETE (before: 1 of 5 INCOMPLETE, sample_stalls), and the time
#              the forks held the sampler (sample_fork_ns) in each
#   cost       bench/sampling-overhead.sh's within-run part (TALLY_BENCH_TOGGLE_MS), python,
#              native, the timer and python,native (mixed) on the launch loop and PyTorch: each
#              at most 1.05x tally's default
#
#   tests/gpu/proctree.sh [BUILD_DIR] [OUT_DIR]   (exits 77 without a GPU)
# Traces, dumps and the cost table are kept in OUT_DIR ($OUT/proctree when $OUT is set).
# PROCTREE_PARTS chooses the cases (default "loader mixed complete cost"; about 3 minutes for the
# first three and 4-5 for cost, which runs bench/sampling-overhead.sh's within-run part).
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
O=${2:-${OUT:+$OUT/proctree}}
O=${O:-$(mktemp -d /tmp/tally-proctree-XXXXXX)}
mkdir -p "$O"
TALLY=$B/src/cli/tally
DUMP=$B/tests/tally-dump
CHECK="python3 $HERE/../exitpath/check-sampling.py"
PY=${PYTHON:-python3}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
has_torch || { skipped "PyTorch with CUDA: every case here needs it"; finish proctree.sh; }
PARTS=" ${PROCTREE_PARTS:-loader mixed complete cost} "
part() { case $PARTS in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

field() { # FILE EXPR: of the first section of tally check --json
	"$TALLY" check --json "$1" | python3 -c "import json,sys; \
s=json.load(sys.stdin)['files'][0]['sections'][0]; print($2)"
}
counter() { field "$2" "s['ledger']['counters'].get('$1', 0)"; }

# ---- loader ----
if part loader; then
mkdir -p "$O/loader"
"$TALLY" record -q --sample python -o "$O/loader/%p.tally" -- $PY "$HERE/sampling_loader.py" 12 0.1 \
	>"$O/loader.out" 2>&1 || bad "loader: exit $?: $(tail -n 3 "$O/loader.out")"
parent= worker=
for f in "$O"/loader/*.tally; do
	if [ "$(field "$f" "s['records'].get('kernel', 0)")" -gt 0 ]; then parent=$f; else worker=$f; fi
done
line=$(grep -n "time.sleep(slow)" "$HERE/sampling_loader.py" | cut -d: -f1)
if [ -n "$parent" ] && [ -n "$worker" ] &&
	[ "$(field "$worker" "s['ppid']")" = "$(field "$parent" "s['pid']")" ]; then
	ok "loader: the fork worker has a trace of its own ($(ls "$O/loader" | tr '\n' ' '))"
	"$DUMP" "$parent" >"$O/loader.records"
	"$DUMP" --host "$parent" >"$O/loader.parent.host"
	"$DUMP" --host "$worker" >"$O/loader.worker.host"
	$CHECK gaps "$O/loader.records" "$O/loader.worker.host" 60000000 8 python \
		"$HERE/sampling_loader.py" "$line" && ok "loader: the worker's sleep at line $line is in the gaps" ||
		bad "loader: the worker's samples in the gaps"
	$CHECK gaps "$O/loader.records" "$O/loader.parent.host" 60000000 8 pyfunc _get_data ||
		bad "loader: the parent's samples in the gaps"
else
	bad "loader: traces $(ls "$O/loader" | tr '\n' ' '): no parent and worker pair"
fi
fi

# ---- mixed ----
if part mixed; then
mkdir -p "$O/mixed"
"$TALLY" record -q --sample python,native -o "$O/mixed/%p.tally" -- $PY "$HERE/torch_dataloader.py" 1500 2 \
	>"$O/mixed.out" 2>&1 || bad "mixed: exit $?: $(tail -n 3 "$O/mixed.out")"
for f in "$O"/mixed/*.tally; do
	[ "$(field "$f" "s['records'].get('kernel', 0)")" -gt 0 ] && main=$f
done
"$TALLY" check "$main" >"$O/mixed.check" 2>&1
"$DUMP" --host "$main" >"$O/mixed.host"
"$DUMP" "$main" >"$O/mixed.records"
"$TALLY" stats -r cpu_sample_sum "$main" >"$O/mixed.cpu_sample_sum" 2>&1
python3 - "$O/mixed.host" "$HERE/torch_dataloader.py" "$(counter samples_no_python "$main")" \
	"$(counter samples_torn "$main")" "$O/mixed.records" <<'PYEOF' | tee "$O/mixed.summary"
import sys
dump, script, no_python, torn_counted = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# the training loop: from the first NVTX "step" range's start to the last one's end (before it,
# `import torch` and the lazy imports after it run stacks deeper than the native depth, cut
# before the script's line; after it, the interpreter's exit)
steps = []
for line in open(sys.argv[5]):
    if line.startswith("nvtx_range ") and line.rstrip().endswith("name=step"):
        kv = dict(w.split("=", 1) for w in line.split()[1:3])
        steps.append((int(kv["start"]), int(kv["start"]) + int(kv["dur"])))
lo, hi = (min(a for a, _ in steps), max(b for _, b in steps)) if steps else (0, -1)
py, nat = [], []
main = None
for line in open(dump):
    f = line.split()
    if f and f[0] == "thread" and int(f[3], 16) & 1:
        main = int(f[1])
    if f and f[0] == "sample":
        d = dict(kv.split("=", 1) for kv in f[2:7] if "=" in kv)
        st = f[f.index("stack") + 1:]
        (py if d["source"] == "1" else nat).append((int(d["tid"]), int(d["flags"], 16), st, int(f[1])))
mn = [s for s in nat if s[0] == main and lo <= s[3] <= hi]
mine = [s for s in mn if any(fr.startswith("py:" + script) for fr in s[2])]
aten = [s for s in mine if any("libtorch" in fr for fr in s[2])]
launch = [s for s in mine if any(("libcuda.so" in fr or "libcudart" in fr) for fr in s[2])]
ok = lambda c, t: print(("ok   " if c else "FAIL ") + t)
ok(len(mine) >= 0.9 * len(mn) and mn,
   "mixed: %d of the main thread's %d native samples in the loop (%d steps) reach the script's Python lines"
   % (len(mine), len(mn), len(steps)))
ok(aten and launch, "mixed: %d of them through ATen (libtorch), %d from the CUDA launch (libcuda/libcudart)" % (len(aten), len(launch)))
torn = sum(1 for s in py if s[1] & 0x40)
nostack = sum(1 for s in py if not s[1] & 0x40 and not s[2])
n = len(py) or 1
print("info Python samples %d: torn %.1f%% (%d), no stack %.1f%% (%d); threads with no Python frame, not written: %d; native samples whose Python part tore: %d of %d"
      % (len(py), 100 * torn / n, torn, 100 * nostack / n, nostack, no_python, max(torn_counted - torn, 0), len(nat)))
ok(torn / n < 0.02 and nostack / n < 0.02, "mixed: torn and no-stack Python samples each under 2%")
PYEOF
grep -q "^FAIL" "$O/mixed.summary" && bad "mixed (above)" || ok "mixed (above)"
grep -q "mixed stacks" "$O/mixed.check" && ok "mixed: the trace says native samples carry Python frames" ||
	bad "mixed: $(grep sampling "$O/mixed.check")"
fi

# ---- complete ----
if part complete; then
mkdir -p "$O/complete"
done_ok=0
for i in $(seq 10); do
	mkdir -p "$O/complete/$i"
	"$TALLY" record -q --sample python -o "$O/complete/$i/%p.tally" -- $PY "$HERE/torch_dataloader.py" 300 4 \
		>"$O/complete/$i.out" 2>&1 || bad "complete run $i: exit $?"
	if "$TALLY" check -q "$O/complete/$i" >/dev/null 2>&1; then
		done_ok=$((done_ok + 1))
	else
		"$TALLY" check "$O/complete/$i" 2>&1 | grep -E "^\s+- |stalls" | sed "s/^/  run $i: /"
	fi
	for f in "$O/complete/$i"/*.tally; do
		echo "run $i $(basename "$f"): stalls $(counter sample_stalls "$f"), fork-held $(counter sample_fork_ns "$f") ns, ticks missed $(counter sample_ticks_missed "$f")"
	done >>"$O/complete.txt"
done
[ "$done_ok" = 10 ] && ok "complete: 10 of 10 DataLoader runs COMPLETE (every trace of each)" ||
	bad "complete: $done_ok of 10 DataLoader runs COMPLETE ($O/complete.txt)"
grep -v "fork-held 0 " "$O/complete.txt" | head -n 5
fi

# ---- cost ----
if part cost; then
bash "$HERE/../../bench/sampling-overhead.sh" "$B" 0 2 >"$O/cost.md" 2>&1 || bad "cost: the bench failed"
cat "$O/cost.md"
grep -E "^\| (launch|PyTorch)" "$O/cost.md" | grep -q "above 1.05" &&
	bad "cost: a configuration over 1.05x the default (above)" || ok "cost: the table above (within one run)"
fi
finish proctree.sh
