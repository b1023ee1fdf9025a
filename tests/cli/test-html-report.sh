#!/bin/sh
# tally report in a real browser: for every trace in tests/data/ and for a merged two-rank run,
# write the page, let headless Chromium run it (--dump-dom) and take a screenshot, then check
# (check-html-report.py) that the page says the verdict and every reason `tally check` says, shows
# the kernel names and counts `tally stats` gives, ran without a script error, ran no name from
# the trace as HTML, and is not blank.  The screenshots stay in $TALLY_REPORT_SHOTS when set.
# Skips (77) without Chromium; scripts/install-deps.sh installs it for CI.
# Usage: test-html-report.sh TALLY TESTSRC SRCDIR
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 TESTSRC=$2 SRC=$3
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || skip "no chromium (apt-get install chromium)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SHOTS=${TALLY_REPORT_SHOTS:-$T}
mkdir -p "$SHOTS"

# The browser gets its own profile and a time limit: a page that never settles must not hang CI.
browse() { # what html out...
	what=$1 html=$2; shift 2
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
		--user-data-dir="$T/profile" --virtual-time-budget=5000 "$@" "file://$html" 2>"$T/chrome.err"
}

# one trace: page, DOM, screenshot, and the checks; extra arguments go to the checker
check_page() { # name trace [checker args]
	name=$1 trace=$2; shift 2
	"$TALLY" report -q --force -o "$T/$name.html" "$trace" 2>"$T/err"; rc=$?
	[ "$rc" -eq 0 ] && ok "$name: page written" || { bad "$name: tally report exit $rc"; cat "$T/err"; return; }
	grep -q -i -E '<(script|link|img)[^>]+(src|href)=' "$T/$name.html" &&
		bad "$name: the page loads something" || ok "$name: nothing loaded from outside"
	"$TALLY" stats -f json -r "$PAGE_REPORTS" -o "$T/$name.json" "$trace" 2>/dev/null
	if [ -d "$trace" ]; then # tally check takes files
		"$TALLY" check "$trace"/*.tally >"$T/$name.check" 2>&1
	else
		"$TALLY" check "$trace" >"$T/$name.check" 2>&1
	fi
	browse "$name" "$T/$name.html" --dump-dom >"$T/$name.dom" || bad "$name: chromium --dump-dom failed"
	browse "$name" "$T/$name.html" --window-size=1400,2600 --screenshot="$SHOTS/$name.png" >/dev/null ||
		bad "$name: chromium --screenshot failed"
	if $PY "$SRC/cli/check-html-report.py" "$T/$name.dom" "$T/$name.json" "$T/$name.check" \
		"$SHOTS/$name.png" "$@"; then
		ok "$name: verdict, reasons, kernels, no script error, not blank"
	else
		bad "$name: the page disagrees (above)"
	fi
}

# what the page shows: the default reports, the analyses, why the GPU was idle (src/page/html.c)
PAGE_REPORTS=nvtx_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum
PAGE_REPORTS=$PAGE_REPORTS,cuda_kern_stack_sum,cuda_gpu_mem_usage,gpu_time_breakdown,comm_compute_overlap
PAGE_REPORTS=$PAGE_REPORTS,kern_rank_spread,rank_steps,cuda_launch_stats,gpu_queue_depth,diagnosis
PAGE_REPORTS=$PAGE_REPORTS,gpu_idle_why,gpu_idle_breakdown,gpu_metrics_sum,gpu_gaps

# Debian's python3 has python3-pil (install-deps.sh); another python3 first on PATH may not
PY=python3
python3 -c 'import PIL' 2>/dev/null || { /usr/bin/python3 -c 'import PIL' 2>/dev/null && PY=/usr/bin/python3; }
$PY -c 'import PIL' 2>/dev/null || echo "note: python3-pil missing: the screenshot is not checked for blankness"

for trace in "$SRC"/data/*.tally; do
	check_page "$(basename "$trace" .tally)" "$trace"
done

# The host (tests/data/gen-host.tally, made as tests/support/testsrc.h's --host says): under the GPU
# lanes, samples of its three threads and the waits of the two that block (MainThread's
# clock_nanosleep, loader's pthread_cond_timedwait; pt_main only computes); the one 150 ms gap
# explained as host wait, with a row for each of them.
$PY - "$T/gen-host.dom" >"$T/host.checks" <<'PY'
import re, sys
d = open(sys.argv[1]).read()
m = re.search(r'id="tl-canvas"[^>]*data-rows="([^"]*)"', d)
rows = m.group(1).split("\n") if m else []
want = ["MainThread (tid 2001) samples", "MainThread (tid 2001) waits", "loader (tid 2002) samples",
        "loader (tid 2002) waits", "pt_main (tid 2003) samples"]
gpu = [i for i, r in enumerate(rows) if r.startswith("GPU 0")]
host = [rows.index(w) for w in want if w in rows]
print("ok" if len(host) == 5 and gpu and max(gpu) < min(host) and "pt_main (tid 2003) waits" not in rows
      else "bad", "host: each thread's samples and waits, under the GPU lanes")
gaps = re.findall(r'<div class="why-gap" data-gap="(\d+)" data-class="([^"]+)">(.*?)</table>', d, re.S)
print("ok" if len(gaps) == 1 and gaps[0][1] == "host wait" and all(
    t in gaps[0][2] for t in ("MainThread (tid 2001)", "loader (tid 2002)", "pt_main (tid 2003)",
                              "clock_nanosleep", "pthread_cond_timedwait"))
      else "bad", "host: the 150 ms gap explained, host wait, with every thread")
print("ok" if re.search(r'id="idle-why" data-explained="1/1"', d) else "bad",
      "host: the gap on the timeline explained on hover")
# one identity per thread (issue 31, measured 4): the launching thread's CUDA API row is named as
# its samples are, and the stacks of the idle time say whose they are
print("ok" if "MainThread (tid 2001) CUDA API" in rows and re.search(
    r'class="note why-stack">MainThread \(tid 2001\), host wait: python stack', d) else "bad",
      "host: the launching thread's API row and stacks named MainThread (tid 2001)")
PY
while read -r verdict name; do
	if [ "$verdict" = ok ]; then ok "$name"; else bad "$name"; fi
done <"$T/host.checks"
[ -s "$T/host.checks" ] || bad "host: the checks did not run"

# A run the generator was told about exactly: 2,000 kernels over the 9 names (one of them would
# end a <script> element and run code if the page pasted it as HTML).
"$TESTSRC" -o "$T/made.tally" --kernels 2000 --memcpys 20 --ranges 10 --names 9 >/dev/null || bad "testsrc"
check_page made "$T/made.tally" --kernels 2000
# zoomed in far (exact events), the launch with correlation id 5 selected: its kernel is the flow
browse made "$T/made.html#view=0,400000&select=5" --dump-dom >"$T/zoom.dom"
grep -q 'data-tally-ready="1"' "$T/zoom.dom" && grep -q '<pre id="tally-errors" hidden=""></pre>' "$T/zoom.dom" &&
	ok "zoomed in: drawn without a script error" || bad "zoomed in: errors or not drawn"
tr '\n' ' ' <"$T/zoom.dom" | grep -q '<div id="tl-detail">selected: cudaLaunchKernel at [^<]*ran as ' &&
	ok "a launch selected: its kernel found by correlation id" || { bad "flow"; grep -o '<div id="tl-detail">[^<]*' "$T/zoom.dom"; }
# the mouse, simulated by the page itself (#selftest): wheel zooms, drag pans, shift+drag zooms to a stretch
browse made "$T/made.html#selftest" --window-size=1400,2000 --dump-dom >"$T/self.dom"
grep -q 'data-selftest="zoom=true pan=true brush=true"' "$T/self.dom" &&
	grep -q '<pre id="tally-errors" hidden=""></pre>' "$T/self.dom" && ok "wheel, drag, shift+drag" ||
	{ bad "mouse: $(grep -o 'data-selftest="[^"]*"' "$T/self.dom")"; grep -o '<pre id="tally-errors"[^<]*' "$T/self.dom"; }

# GPU metrics (tests/data/gen-metrics.tally: two devices, each with %, bytes/s and Hz metrics): a
# chart per device and unit under the busy curves, the summary as tally stats gives it, and the
# gaps where an untraced process worked said to be active.
"$TALLY" stats -r gpu_metrics_sum -f json -o "$T/metrics-sum.json" "$SRC/data/gen-metrics.tally" 2>/dev/null
check_page metrics-charts "$SRC/data/gen-metrics.tally" --gpu-metrics "$T/metrics-sum.json" --metric-charts 6
grep -q 'busy outside the trace (SM or GR Active above 1%) [^<]*: other work ran' "$T/metrics-charts.dom" &&
	ok "metrics: gaps busy outside the trace said to have had other work" ||
	bad "metrics: the busy chart's title says nothing of the gaps busy outside the trace"
# the charts have real scales (issue 31, measured 6): a constant clock and a spike of memory get a
# scale up to their value, not "0 Hz" or "0 B" alone
grep -o 'class="metrics-chart" data-unit="Hz" data-y-max="[0-9.e+]*"' "$T/metrics-charts.dom" |
	sed 's/.*data-y-max="//; s/"//' | awk '$1 + 0 >= 1.98e9 { n++ } END { exit !(n == 2) }' &&
	ok "metrics: each device's clock chart has a scale up to its 1.98 GHz" || bad "metrics: clock chart scale"
peak=$(grep -o 'data-memory-peak="[0-9]*"' "$T/gen-stacks.dom" | head -1 | tr -dc 0-9)
ymax=$(grep -o 'class="memory-chart" data-y-max="[0-9.e+]*"' "$T/gen-stacks.dom" | head -1 | sed 's/.*max="//; s/"//')
[ -n "$peak" ] && [ -n "$ymax" ] && awk -v p="$peak" -v y="$ymax" 'BEGIN { exit !(y + 0 >= p + 0 && p > 0) }' &&
	ok "memory: the chart's scale reaches its peak ($peak B, scale to $ymax)" || bad "memory: scale $ymax for a peak of $peak"
# every stream's queue curve is drawn, though the streams' buckets begin at different times
for name in gen-stacks gen-host gen-lossy; do
	grep -o 'class="queue-chart" data-series="[0-9]*" data-drawn="[0-9]*"' "$T/$name.dom" >"$T/q.txt"
	[ -s "$T/q.txt" ] && ! grep -v 'data-series="\([0-9]*\)" data-drawn="\1"' "$T/q.txt" >/dev/null &&
		ok "$name: every stream's queue curve drawn" || { bad "$name: queue chart"; cat "$T/q.txt"; }
done

# Two ranks, merged: the ranks table and the slowest rank; rank 1 lost timestamps.
RANK=0 "$TESTSRC" -o "$T/r0.tally" --kernels 3000 --names 9 --seed 1 --rate 200000 >/dev/null || bad "testsrc r0"
RANK=1 "$TESTSRC" -o "$T/r1.tally" --kernels 3000 --names 9 --seed 2 --rate 100000 --bad-time-every 200 >/dev/null || bad "testsrc r1"
"$TALLY" merge -q --force -o "$T/merged.tally" "$T/r0.tally" "$T/r1.tally" 2>/dev/null
check_page merged "$T/merged.tally" --ranks 2
# the same ranks given as a directory, unmerged: one page, aligned the same way
mkdir "$T/ranks" && cp "$T/r0.tally" "$T/r1.tally" "$T/ranks/"
check_page ranks-dir "$T/ranks" --ranks 2

# Many ranks, past the page's one lane budget (160 ranks of 4 lanes: 640 asked for, 512 kept): the
# page renders, every rank is in the ranks table, the lanes past the budget are shared (the
# timeline's "more ranks" band), and the charts are capped with a note of how many were left out.
# (bench/bench-scale.sh renders 2048.)
mkdir "$T/many"
i=0
while [ $i -lt 160 ]; do
	RANK=$i "$TESTSRC" -o "$T/many/rank$i.tally" --kernels 60 --memcpys 4 --streams 2 --seed $i \
		>/dev/null || bad "testsrc many $i"
	i=$((i + 1))
done
check_page many "$T/many" --ranks 160
grep -q '"sec":4294967295' "$T/many.html" && ok "many: lanes past the budget shared by all ranks" ||
	bad "many: no shared lane"
grep -q 'more processes. ledgers not drawn' "$T/many.dom" && ok "many: ledger charts capped, with a note" ||
	bad "many: no note of the ledgers left out"
# Four ranks built with exact times, rank 2 sleeping 50 ms a step, memory held: the checker holds
# the diagnosis, the breakdown bars, the straggler line and the tables to what stats says.
mkdir "$T/steps"
for r in 0 1 2 3; do
	s=0
	[ $r = 2 ] && s=50000
	RANK=$r "$TESTSRC" -o "$T/steps/r$r.tally" --t0 1796000000000000000 --steps 10 --step-kernels 10 \
		--kernel-us 1000 --copy-us 2000 --comm-us 3000 --comm-at-us 2000 --sleep-us $s --gap-us 500 \
		--devices 1 --mem-mb 1000 >/dev/null || bad "testsrc steps $r"
done
check_page steps "$T/steps" --ranks 4
grep -q 'id="straggler">Steps: straggler: RANK=2, slowest in 10 of 10' "$T/steps.dom" &&
	grep -q 'data-rule="straggler"' "$T/steps.dom" && ok "steps: RANK=2 named, in the diagnosis too" ||
	bad "steps: no straggler on the page"
# what bounds the steps (step_bound): a bar per rank, RANK=2's after-sync sleep its verdict
[ "$(grep -o 'class="step-bar-line"' "$T/steps.dom" | wc -l)" -eq 4 ] &&
	[ "$(grep -o 'data-verdict="sync"' "$T/steps.dom" | wc -l)" -eq 1 ] &&
	grep -q 'RANK=2 pid [0-9]* GPU 0: sync-bound' "$T/steps.dom" &&
	ok "steps: a bar of the step's classes per rank, RANK=2 sync-bound" || bad "steps: the step bars"
[ "$(grep -o 'data-queue="' "$T/steps.dom" | wc -l)" -eq 4 ] && [ "$(grep -o 'data-memory-peak="1048576000"' "$T/steps.dom" | wc -l)" -eq 4 ] &&
	ok "steps: a queue curve and a memory curve (1000 MiB) per rank" || bad "steps: queue or memory curves missing"
# one process: no Ranks link (the checker), and a loss window over the whole run is said, not painted
"$TESTSRC" -o "$T/starved.tally" --kernels 3000 --pool 2 --buffer-size 65536 --slow-walk-ns 20000 >/dev/null
check_page starved "$T/starved.tally"
if python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
w = [x for i in d['inputs'] for s in i['sections'] for r in s['reasons'] for x in r.get('windows', [])]
sys.exit(0 if w else 1)" "$T/starved.json"; then
	grep -q 'class="whole-loss">A loss window covers the whole run' "$T/starved.dom" &&
		ok "a loss window over the whole run: said above the charts" || skipped "starved: the loss window does not cover the run"
else
	skipped "starved: no loss window (the pool kept up)"
fi

# The command line: usage, an existing page, a file that is not a trace.
"$TALLY" report -q -o "$T/made.html" "$T/made.tally" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--force" "$T/err" && ok "an existing page is kept (exit 2, as every -o refusal)" || bad "existing page: exit $rc"
"$TALLY" report 2>/dev/null; [ $? -eq 2 ] && ok "no trace: usage (exit 2)" || bad "no trace"
echo "not a trace" >"$T/junk.tally"
"$TALLY" report -q --force -o "$T/junk.html" "$T/junk.tally" 2>/dev/null; rc=$?
[ "$rc" -eq 3 ] && [ ! -e "$T/junk.html" ] && ok "not a trace: exit 3, no page" || bad "junk: exit $rc"
"$TALLY" report -q --force --strict -o "$T/l.html" "$SRC/data/gen-lossy.tally" 2>/dev/null; rc=$?
[ "$rc" -eq 1 ] && [ -s "$T/l.html" ] && ok "--strict: INCOMPLETE exits 1, page written" || bad "--strict: exit $rc"
finish
