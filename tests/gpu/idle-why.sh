#!/bin/bash
# Why the GPU was idle, on the GPU, with workloads whose answer is known by construction (the
# workloads are those of tests/gpu/sampling.sh; each says what it did from its own clocks):
#   sleep     a PyTorch loop sleeping between bursts (sampling_sleep.py): each long gap is host
#             wait, and the main thread's top Python stack in it is the sleep's line; the
#             diagnosis says host wait at that line (the bursts are launch-bound: the GPU is
#             idle before the synchronize that precedes each sleep is called)
#   loader    a DataLoader whose worker is slowed (sampling_loader.py): in each long gap the main
#             thread waits in torch's DataLoader (torch/utils/data/dataloader.py)
#   compute   a C++ program computing on the CPU between bursts (sampling.cu compute): each long
#             gap is host wait, and the main thread's top native stack is cpu_work, under perf
#             events and again under the timer fallback (TALLY_SAMPLE_FALLBACK=1)
#   mutex     the main thread locks a mutex another thread holds for MS ms (sampling.cu mutex,
#             --trace osrt): pthread_mutex_lock overlaps each long gap for about MS ms
# The reports, the breakdown and the Chrome export of each run go to OUT (or $OUT).
#
#   tests/gpu/idle-why.sh [BUILD_DIR] [OUT_DIR]      (about 1 minute)
# Exits 77 without a GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-idle-why-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3} # the workloads'; the checks run python3
S=$B/gpu/idle-why-sampling
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
if ! $PY -c 'import ctypes; ctypes.CDLL("libdw.so.1")' 2>/dev/null && [ -e "$B/extra-libs/libdw.so.1" ]; then
	export LD_LIBRARY_PATH=$B/extra-libs:$LD_LIBRARY_PATH
fi

why() { sed 's/^/     /' "$OUT/$1/stats.err" "$OUT/$1/stderr" "$OUT/$1/why.txt" 2>/dev/null | head -40; }
# rec NAME SAMPLE TRACE -- PROGRAM...: a trace sampled as SAMPLE (python, native or none) tracing
# TRACE, in $OUT/NAME/t.tally; the host reports as JSON in .../why.json, the export in .../t.json
rec() {
	local name=$1 sample=$2 trace=$3
	shift 4
	mkdir -p "$OUT/$name"
	if "$TALLY" record --help 2>&1 | grep -q -- '--sample'; then
		"$TALLY" record -f --sample "$sample" --trace "$trace" -o "$OUT/$name/t.tally" -- "$@" \
			>"$OUT/$name/stdout" 2>"$OUT/$name/stderr"
	else
		TALLY_SAMPLE=$sample TALLY_TRACE=$trace "$TALLY" record -f -o "$OUT/$name/t.tally" -- "$@" \
			>"$OUT/$name/stdout" 2>"$OUT/$name/stderr"
	fi
	"$TALLY" stats -f json -r gpu_idle_why,gpu_idle_breakdown,cpu_sample_sum,osrt_sum,diagnosis \
		"$OUT/$name/t.tally" >"$OUT/$name/why.json" 2>"$OUT/$name/stats.err"
	"$TALLY" stats -r gpu_idle_why,gpu_idle_breakdown,osrt_sum "$OUT/$name/t.tally" \
		>"$OUT/$name/why.txt" 2>&1
	"$TALLY" export -q -f chrome -o "$OUT/$name/t.json" "$OUT/$name/t.tally" 2>/dev/null
}
# judge NAME WHAT PYTHON: run the check (python over g, the long gaps' rows grouped by gap, bd the
# breakdown, os the osrt_sum rows); it prints "ok TEXT" or "bad TEXT"
judge() {
	local name=$1 min_ms=$2 cond=$3 what=$4
	python3 - "$OUT/$name/why.json" "$min_ms" "$cond" "$what" >"$OUT/$name/judged" <<'PY'
import collections, json, re, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("bad", sys.argv[4], "(no report:", e, ")"); sys.exit()
rep = {r["name"]: r["rows"] for r in d["reports"]}
min_ns = float(sys.argv[2]) * 1e6
g = collections.defaultdict(list)
for r in rep["gpu_idle_why"]:
    if r["Duration (ns)"] >= min_ns:
        g[r["Gap"]].append(r)
bd, os_ = rep["gpu_idle_breakdown"], rep["osrt_sum"]
def top(rows, what):  # the main thread's heaviest row of a kind: the report lists it first
    threads = [r["Thread"] for r in rows if "(tid " in r["Thread"]]
    m = [r for r in rows if r["What"] == what and threads and r["Thread"] == threads[0]]
    return max(m, key=lambda r: r["Count"])["Detail"] if m else ""
ok = len(g) > 0 and eval(sys.argv[3])
print("ok" if ok else "bad", sys.argv[4], "(%d long gaps)" % len(g))
PY
	while read -r v t; do
		if [ "$v" = ok ]; then ok "$t"; else bad "$t"; why "$name"; fi
	done <"$OUT/$name/judged"
	[ -s "$OUT/$name/judged" ] || bad "$what: the check did not run"
}
# ---- a Python loop sleeping between bursts ----------------------------------------------------
if [ -e "$HERE/sampling_sleep.py" ] && $PY -c "import torch" 2>/dev/null; then
	rec sleep python cuda,osrt -- $PY "$HERE/sampling_sleep.py" "$OUT/sleep.json" 20 0.05
	line=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['sleep_line'])" "$OUT/sleep.json" 2>/dev/null)
	judge sleep 40 "all(r['Class'] == 'host wait' for rs in g.values() for r in rs) and sum(':$line)' in top(rs, 'python').split(' <- ')[0] for rs in g.values()) >= 0.8 * len(g)" \
		"sleep: every 50 ms gap is host wait, the main thread's top stack in 80% of them at the sleep's line $line"
	judge sleep 40 "max((r for r in bd if ':' not in r['Category']), key=lambda r: r['Idle Time (ns)'])['Category'] == 'host wait' and any(':$line)' in r['Stack'].split(' <- ')[0] for r in bd if 'stack' in r['Category'])" \
		"sleep: breakdown: host wait is the largest share, and the sleep's line is among the stacks behind it"
	# The loop is launch-bound (each burst's tiny kernels run faster than they are launched), so
	# the GPU is idle before torch.cuda.synchronize is even called: the gaps begin with no
	# synchronizing call in flight, and their cause is the host's wait at the sleep's line.
	judge sleep 40 "any(f['Rule'] == 'gpu-idle' and f['Why'].startswith('host wait, ') and ':$line), ' in f['Why'] for f in rep['diagnosis'])" \
		"sleep: the diagnosis: host wait, the host at the sleep's line $line"
else
	skipped "sleep: needs PyTorch and tests/gpu/sampling_sleep.py"
fi

# ---- a DataLoader with a slowed worker --------------------------------------------------------
if [ -e "$HERE/sampling_loader.py" ] && $PY -c "import torch" 2>/dev/null; then
	rec loader python cuda,osrt -- $PY "$HERE/sampling_loader.py" 20 0.05
	judge loader 40 "sum('dataloader.py' in top(rs, 'python') for rs in g.values()) >= 0.8 * len(g)" \
		"loader: in 80% of the 50 ms gaps the main thread waits in torch's DataLoader"
else
	skipped "loader: needs PyTorch and tests/gpu/sampling_loader.py"
fi

# ---- C++: CPU work between launches, native samples (perf, then the timer fallback) ------------
if [ -e "$HERE/sampling.cu" ] && { [ -x "$S" ] && [ "$S" -nt "$HERE/sampling.cu" ] ||
	{ mkdir -p "$B/gpu" && nvcc -O2 -g -arch=sm_90 -cudart shared -Xcompiler -fno-omit-frame-pointer -o "$S" "$HERE/sampling.cu"; }; }; then
	rec compute native cuda -- "$S" compute 10 100
	judge compute 80 "sum('cpu_work' in top(rs, 'native').split(' <- ')[0] for rs in g.values()) >= 0.8 * len(g) and all(rs[0]['Class'] == 'host wait' for rs in g.values())" \
		"compute (perf events): each 100 ms gap is host wait, the main thread's top native frame cpu_work in 80%"
	TALLY_SAMPLE_FALLBACK=1 rec compute-timer native cuda -- "$S" compute 10 100
	grep -q "timer" "$OUT/compute-timer/why.txt" "$OUT/compute-timer/stderr" 2>/dev/null ||
		"$TALLY" check "$OUT/compute-timer/t.tally" 2>/dev/null | grep -q "timer" ||
		echo "note: the timer fallback was asked for; tally check does not say it ran"
	judge compute-timer 80 "sum('cpu_work' in top(rs, 'native').split(' <- ')[0] for rs in g.values()) >= 0.8 * len(g)" \
		"compute (timer fallback): the main thread's top native frame in the gaps is cpu_work in 80%"
	rec mutex none cuda,osrt -- "$S" mutex 10 100
	judge mutex 80 "sum(any(r['Detail'] == 'pthread_mutex_lock' and r['Time (ns)'] >= 80e6 for r in rs if r['What'] == 'osrt') for rs in g.values()) >= 0.8 * len(g) and any(r['Name'] == 'pthread_mutex_lock' and r['Num Calls'] >= 10 and 90e6 <= r['Med (ns)'] <= 130e6 for r in os_)" \
		"mutex: pthread_mutex_lock overlaps 80% of the 100 ms gaps for 80 ms or more; osrt_sum: 10+ calls, median about 100 ms"
else
	skipped "compute, mutex: need nvcc and tests/gpu/sampling.cu"
fi
echo "reports and exports: $OUT"
finish
