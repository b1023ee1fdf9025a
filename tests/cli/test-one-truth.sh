#!/bin/sh
# The measured cases of "one truth" (issue 31, items 2-7 of "Measured"), each a check that failed
# before the one model and passes with it; the figures expected come from how each kept trace
# was made (tests/data/README), not from tally's output.  The whole-model cross-checks over every
# trace are tests/cli/test-consistency.py's.
#
#   test-one-truth.sh TALLY SRC_TESTS_DIR
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1
SRC=$2
D=$SRC/data
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LC_ALL=C.UTF-8 TZ=UTC NO_COLOR=1

# json FILE EXPR...: python over the JSON in FILE (bound to d), printing what EXPR says
json() {
	_f=$1
	shift
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $*" "$_f"
}

# widest FILE: the widest line of FILE in display columns (UTF-8 code points)
widest() {
	python3 -c "import sys; print(max((len(l.rstrip('\r\n')) for l in open(sys.argv[1], encoding='utf-8')), default=0))" "$1"
}

# page FILE.html OUT_STATS OUT_TIMELINE: the two JSON blocks tally report embeds
page() {
	"$TALLY" report -q --force -o "$T/p.html" "$1" 2>/dev/null
	python3 - "$T/p.html" "$2" "$3" <<'PY'
import json, re, sys
d = open(sys.argv[1], encoding="utf-8").read()
for name, out in (("tally-stats", sys.argv[2]), ("tally-timeline", sys.argv[3])):
    m = re.search(r'<script type="application/json" id="%s">(.*?)</script>' % name, d, re.S)
    json.dump(json.loads(m.group(1)), open(out, "w"))
PY
}

# ---- 2. one time origin for the page ------------------------------------------------------------
# gpu-h200-torch.tally: its longest idle stretch (21.3 ms before a launch) begins 251.299 ms after
# the session started, 64.5 ms of which came before the first record: the page counts from the
# session's start as stats does, draws the gap where gpu_idle_why and the diagnosis put it, and
# the diagnosis's "+0.251 s" lies inside the page's span.
page "$D/gpu-h200-torch.tally" "$T/ps.json" "$T/tl.json"
"$TALLY" stats -f json -r gpu_idle_why,diagnosis "$D/gpu-h200-torch.tally" >"$T/s.json" 2>/dev/null
python3 - "$T/s.json" "$T/tl.json" "$T/ps.json" <<'PY' && ok "2: the page, stats and the diagnosis place the longest gap at one time from one origin" ||
import json, re, sys
s, tl, ps = (json.load(open(p)) for p in sys.argv[1:4])
rep = {r["name"]: r["rows"] for r in s["reports"]}
gap = max((r for r in rep["gpu_idle_why"] if r["What"] == "gap"), key=lambda r: r["Duration (ns)"])
at = float(re.search(r"at \+([0-9.]+) s", [f for f in rep["diagnosis"] if f["Rule"] == "gpu-idle"][0]["Where"]).group(1))
drawn = [g for g in tl["gaps"] if tl["lanes"][g[0]]["type"] == "device"]
ok = (tl["t0_ns"] == s["time_base_ns"] == ps["time_base_ns"] and ps["time_origin"] == "the session started"
      and any(g[1] == gap["Start (ns)"] and g[2] - g[1] == gap["Duration (ns)"] for g in drawn)
      and abs(at * 1e9 - gap["Start (ns)"]) < 5e5 and tl["first_ns"] <= gap["Start (ns)"] <= tl["span_ns"])
sys.exit(0 if ok else 1)
PY
	bad "2: the page's origin or gaps are not stats' and the diagnosis's"

# ---- 3. a gap the counters show busy is not idle --------------------------------------------------
# gen-metrics.tally (tally-metricsgen): each device runs 3 kernels of 2 ms every 10 ms for 486 ms,
# 48 gaps of 4 ms (192 ms); on device 0 an untraced process works in every 5th gap (SM Active 40%
# there): 9 gaps, 36 ms busy outside the trace, 156 ms idle; device 1 idles 192 ms.
"$TALLY" stats -f json -r gpu_gaps,gpu_time_breakdown,gpu_idle_breakdown,gpu_idle_why,diagnosis "$D/gen-metrics.tally" >"$T/m.json" 2>/dev/null
page "$D/gen-metrics.tally" "$T/mps.json" "$T/mtl.json"
python3 - "$T/m.json" "$T/mtl.json" <<'PY' && ok "3: 36 ms busy outside the trace on GPU 0, in every output; 348 ms idle, not 384" ||
import json, sys
s, tl = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rep = {r["name"]: r["rows"] for r in s["reports"]}
BUSY, MS = "busy outside trace", 1000000
gaps = [g for g in rep["gpu_gaps"] if g["Stream"] == "all"]
bd = {r["Device"]: r for r in rep["gpu_time_breakdown"]}
ib = [r for r in rep["gpu_idle_breakdown"] if r["Category"] == BUSY]
why = [w for w in rep["gpu_idle_why"] if w["What"] == "gap" and w["Proof"] == BUSY]
idle = [f for f in rep["diagnosis"] if f["Rule"] == "gpu-idle"][0]
drawn = [g for g in tl["gaps"] if tl["lanes"][g[0]]["type"] == "device" and g[5] == BUSY]
ok = (sum(1 for g in gaps if g["Class"] == BUSY and g["Device"] == 0) == 9
      and not any(g["Class"] == BUSY for g in gaps if g["Device"] == 1)
      and bd[0]["Busy Outside Trace (ns)"] == 36 * MS and bd[0]["Idle (ns)"] == 156 * MS
      and bd[1]["Busy Outside Trace (ns)"] == 0 and bd[1]["Idle (ns)"] == 192 * MS
      and len(ib) == 1 and ib[0]["Gaps"] == 9 and ib[0]["Idle Time (ns)"] == 36 * MS
      and len(why) == 9 and len(drawn) == 9
      and idle["Cost (ns)"] == 348 * MS and "busy outside the trace" in idle["Finding"])
sys.exit(0 if ok else 1)
PY
	bad "3: gen-metrics' busy gaps are not busy outside the trace everywhere"

# ---- 4. the thread that launched the work late --------------------------------------------------
# gen-host.tally: MainThread (tid 2001) launches the work (THREADS ties its pthread to CUPTI's
# thread 1000); in the 150 ms gap it is on the CPU in compute (train.py:20) for 97 of its 150
# samples; the loader waits at data.py:55 in all of its own.
"$TALLY" stats -f json -r diagnosis,gpu_idle_why,gpu_idle_breakdown "$D/gen-host.tally" >"$T/h.json" 2>/dev/null
python3 - "$T/h.json" <<'PY' && ok "4: the diagnosis names MainThread (tid 2001), on the CPU at train.py:20; one label per thread everywhere" ||
import json, sys
s = json.load(open(sys.argv[1]))
rep = {r["name"]: r["rows"] for r in s["reports"]}
why = [f for f in rep["diagnosis"] if f["Rule"] == "gpu-idle"][0]["Why"]
gap = [w for w in rep["gpu_idle_why"] if w["What"] == "gap"][0]
threads = {w["Thread"] for w in rep["gpu_idle_why"] if w["Thread"]}
stacks = [r for r in rep["gpu_idle_breakdown"] if ":" in r["Category"]]
ok = ("MainThread (tid 2001) launched the work late: it was on the CPU in compute (/work/train.py:20), 65%" in why
      and "cudaLaunchKernel on MainThread (tid 2001)" in gap["Detail"]
      and threads == {"MainThread (tid 2001)", "loader (tid 2002)", "pt_main (tid 2003)"}
      and stacks and all(r["Thread"] in threads for r in stacks))
sys.exit(0 if ok else 1)
PY
	bad "4: the launching thread is not named, or named two ways"

# ---- 5. shares at most 100% ------------------------------------------------------------------------
# gen-lossy.tally: its loss windows overlap (one loss, several counters) and cover its 1.05 ms:
# the loss costs at most the GPU time; standin-sampled.tally: 500 Hz samples of a thread in a
# 50.2 ms gap stand for at most the gap; gen-ranks.tally: RANK=2's lead is 50 ms of its 64 ms
# step, 78.1%, the same in rank_steps and the diagnosis.
"$TALLY" stats -f json -r diagnosis,gpu_time_breakdown "$D/gen-lossy.tally" >"$T/l.json" 2>/dev/null
"$TALLY" stats -f json -r gpu_idle_why "$D/standin-sampled.tally" >"$T/w.json" 2>/dev/null
"$TALLY" stats -f json -r rank_steps,diagnosis,gpu_time_breakdown "$D/gen-ranks.tally" >"$T/r.json" 2>/dev/null
python3 - "$T/l.json" "$T/w.json" "$T/r.json" <<'PY' && ok "5: loss, sampled time and the straggler's lead within their wholes" ||
import json, re, sys
l, w, r = ({x["name"]: x["rows"] for x in json.load(open(p))["reports"]} for p in sys.argv[1:4])
loss = [f for f in l["diagnosis"] if f["Rule"] == "lost-records"][0]
span = sum(b["Span (ns)"] for b in l["gpu_time_breakdown"])
per = {}
for x in w["gpu_idle_why"]:
    if x["What"] == "python":
        per[(x["Gap"], x["Thread"])] = per.get((x["Gap"], x["Thread"]), 0) + x["Time (ns)"]
dur = {x["Gap"]: x["Duration (ns)"] for x in w["gpu_idle_why"]}
steps = [s for s in r["rank_steps"] if s["Step"] == "all"][0]
strag = [f for f in r["diagnosis"] if f["Rule"] == "straggler"][0]
lead = float(re.search(r"\(([0-9.]+)% of its step\)", strag["Finding"]).group(1))
ok = (0 < loss["Cost (ns)"] <= span and loss["Cost (% of GPU time)"] <= 100
      and per and all(ns <= dur[g] for (g, t), ns in per.items())
      and steps["Lead (ns)"] == 50000000 and abs(steps["Lead (% of slowest step)"] - 100.0 * 50000000 / steps["Slowest (ns)"]) < 1e-9
      and abs(lead - steps["Lead (% of slowest step)"]) < 0.051 and steps["Lead (% of slowest step)"] <= 100
      and strag["Cost (ns)"] <= sum(b["Span (ns)"] for b in r["gpu_time_breakdown"]))
sys.exit(0 if ok else 1)
PY
	bad "5: a share past its whole"

# ---- 6. the page's queue chart has a curve per stream ----------------------------------------------
# gen-stacks, gen-host, gen-lossy: streams whose work begins at different times; every stream of
# a device is on one bucket grid, the one gpu_queue_depth's Bucket (ns) says (the chart draws a
# curve per stream; the browser test, tests/cli/test-html-report.sh, counts them drawn)
for name in gen-stacks gen-host gen-lossy; do
	page "$D/$name.tally" "$T/qps.json" "$T/qtl.json"
	python3 - "$T/qps.json" "$T/qtl.json" <<'PY' && ok "6: $name: one bucket grid per device, the table's" || bad "6: $name: the queue curves of a device are not on one grid"
import json, sys
ps, tl = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
table = {(r["PID"], r["Device"], r["Stream"]): r["Bucket (ns)"] for r in
         [x for x in ps["reports"] if x["name"] == "gpu_queue_depth"][0]["rows"]}
dev = {}
for q in tl["queues"]:
    dev.setdefault((q["sec"], q["device"]), []).append(q)
pid = {i: s["pid"] for i, s in enumerate(tl["sections"])}
ok = bool(dev)
for (sec, d), qs in dev.items():
    w = qs[0]["width"]
    ok &= all(q["width"] == w and (q["t0"] - qs[0]["t0"]) % w == 0 and table[(pid[sec], d, q["stream"])] == w for q in qs)
sys.exit(0 if ok else 1)
PY
done

# ---- 7. order and width -------------------------------------------------------------------------
# `stats -r a,b,c` writes the reports in the order asked, in every format; a table fits a
# terminal (the last column cut to what the terminal's width leaves it) and, to a file, call
# stacks are cut at a frame to 120 columns; CSV keeps them whole.
"$TALLY" stats -r cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum "$D/gpu-h200.tally" >"$T/order.txt" 2>&1
got=$(sed -n 's/^ \*\* .*(\([a-z_]*\)):$/\1/p' "$T/order.txt" | tr '\n' ' ')
[ "$got" = "cuda_gpu_kern_sum cuda_api_sum nvtx_sum " ] && ok "7: -r a,b,c in the order asked" ||
	bad "7: -r a,b,c gave the reports in the order '$got'"
"$TALLY" stats -f json -r nvtx_sum -r gpu_gaps,cuda_gpu_kern_sum "$D/gpu-h200.tally" >"$T/order.json" 2>/dev/null
got=$(json "$T/order.json" "print(' '.join(r['name'] for r in d['reports']))")
[ "$got" = "nvtx_sum gpu_gaps cuda_gpu_kern_sum" ] && ok "7: -f json, -r given twice: the order asked" ||
	bad "7: -f json gave '$got'"
"$TALLY" stats -r gpu_idle_why "$D/standin-sampled.tally" >"$T/why.txt" 2>&1
"$TALLY" stats -f csv -r gpu_idle_why "$D/standin-sampled.tally" >"$T/why.csv" 2>&1
w=$(widest "$T/why.txt")
[ "$w" -le 300 ] && ok "7: gpu_idle_why to a file: no line over 300 columns (widest $w)" ||
	bad "7: gpu_idle_why to a file: a line of $w columns"
grep -q ' <- …' "$T/why.txt" && ok "7: a cut stack ends at a frame, in ' <- …'" ||
	bad "7: no stack cut at a frame"
python3 - "$T/why.csv" <<'PY' && ok "7: CSV keeps every stack whole" || bad "7: CSV cut a stack"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith('#') and l.strip())]
detail = [r[-1] for r in rows[1:]]
sys.exit(0 if max(len(x) for x in detail) > 120 and not any(x.endswith('\u2026') for x in detail) else 1)
PY
if command -v script >/dev/null 2>&1; then
	script -qec "stty cols 160; '$TALLY' stats -r gpu_idle_why,cuda_gpu_kern_sum '$D/gpu-h200-torch.tally'" \
		/dev/null 2>/dev/null | tr -d '\r' >"$T/tty.txt"
	w=$(widest "$T/tty.txt")
	[ -s "$T/tty.txt" ] && [ "$w" -le 160 ] && ok "7: in a terminal 160 wide, every line fits (widest $w)" ||
		bad "7: in a terminal 160 wide, a line of $w columns"
else
	skipped "7: no script(1) to give tally a terminal"
fi

finish test-one-truth.sh
