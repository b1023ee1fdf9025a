#!/bin/sh
# gpu_gaps and gpu_time_util (tally stats) and the unproven gaps of the Chrome export, on traces the
# CPU test source was told to make: idle stretches at known launches, drops in one of them.
# Usage: test-gaps.sh TALLY TESTSRC SRCDIR
set -u
TALLY=$1 TESTSRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
check() { # name python-condition over d (the stats JSON) and g (the gpu_gaps rows)
	python3 - "$T/g.json" "$2" <<'PY' && ok "$1" || { bad "$1"; cat "$T/g.json" | head -60; }
import json, sys
d = json.load(open(sys.argv[1]))
rep = {r["name"]: r["rows"] for r in d["reports"]}
g = rep.get("gpu_gaps", [])
u = rep.get("gpu_time_util", [])
dev = [x for x in g if x["Stream"] == "all"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# Three streams; the GPU idles 50 ms before launch 1000 (nothing lost) and 100 ms before launch
# 2000, halfway through which CUPTI drops 500 records.  Nowhere else is the GPU idle for 1 ms.
"$TESTSRC" -o "$T/g.tally" --kernels 3000 --idle-at 1000:50 --idle-at 2000:100:500 --slice-ms 10 >/dev/null
"$TALLY" stats -f json -r gpu_gaps,gpu_time_util "$T/g.tally" >"$T/g.json"
check "two device gaps, in launch order" 'len(dev) == 2 and dev[0]["Start (ns)"] < dev[1]["Start (ns)"]'
# (less the few microseconds the last kernel launched before the idle may still run)
check "the first lasts the 50 ms asked, the second the 100 ms" '49.9e6 <= dev[0]["Duration (ns)"] < 90e6 and 99.9e6 <= dev[1]["Duration (ns)"] < 140e6'
check "the gap without drops is idle" 'dev[0]["Class"] == "idle"'
check "the gap with the drops is unproven, by the loss window" 'dev[1]["Class"] == "unproven" and "dropped_cupti" in dev[1]["Why"]'
check "each of the 3 streams has the same two gaps, classed alike" 'sorted((x["Stream"], x["Class"]) for x in g if x["Stream"] != "all") == sorted((s, c) for s in ("7", "8", "9") for c in ("idle", "unproven"))'
check "util: buckets overlapping the loss marked, the others not" 'any(x["Loss"] for x in u) and not all(x["Loss"] for x in u) and all(0 <= x["Busy (% of bucket)"] <= 100 for x in u)'
check "util: some bucket inside the idle stretches is 0% busy" 'any(x["Busy (% of bucket)"] == 0 for x in u)'

# --gap-min above both: nothing listed; below: the same two
"$TALLY" stats -f json -r gpu_gaps --gap-min 200ms "$T/g.tally" >"$T/g.json"
check "--gap-min 200ms: no gap" 'len(g) == 0'
"$TALLY" stats -r gpu_gaps --gap-min 10ms "$T/g.tally" >"$T/g.txt"
[ "$(grep -c ' all  ' "$T/g.txt")" = 2 ] && ok "table: two device rows" || { bad "table rows"; cat "$T/g.txt"; }
"$TALLY" stats -r gpu_gaps --gap-min x "$T/g.tally" >/dev/null 2>&1
[ $? -eq 2 ] && ok "bad --gap-min: usage" || bad "bad --gap-min"

# A trace with no loss: every gap idle
"$TESTSRC" -o "$T/c.tally" --kernels 2000 --idle-at 500:20 --idle-at 1500:20 >/dev/null
"$TALLY" stats -f json -r gpu_gaps "$T/c.tally" >"$T/g.json"
check "complete trace: both gaps idle" 'len(dev) == 2 and all(x["Class"] == "idle" for x in g)'

# The Chrome export draws the unproven gap on the loss track, and only that one
"$TALLY" export -q -f chrome -o "$T/g.json.chrome" "$T/g.tally" 2>/dev/null
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); n=[e for e in d['traceEvents'] if 'not proven idle' in e.get('name','')]; sys.exit(0 if n and all(e['tid']==999999999 for e in n) and all(abs(e['dur']-n[0]['dur'])<1 for e in n) else 1)" "$T/g.json.chrome" \
	&& ok "chrome: the unproven gap on the loss track" || bad "chrome unproven gap"
finish
