#!/bin/sh
# tally control on the CPU: fakeapp (a "CUDA program" over the stand-in CUPTI, see
# test-exitpath.sh) run untraced, reduced and full in alternating rounds.  Expected counts come
# from fakeapp's launches (N per run) and the kinds each configuration records, never from tally.
# Usage: test-control.sh TALLY FAKEAPP FAKECUPTI
set -u
TALLY=$1 APP=$2
export TALLY_CUPTI_PATH=$3 FAKEAPP_UNTRACED_OK=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=3000
. "$(dirname "$0")/../lib.sh"
py() { python3 -c "$1" "$T" "$N" && ok "$2" || bad "$2"; }

# Plenty of buffer space: nothing lost; every round's traces kept, named by configuration.
# --json: the JSON alone on standard output, the program's own output sent to standard error
expect_rc "control, 3 rounds" 0 "$TALLY" control -o "$T/c" --json -- "$APP" exit "$N"
cp "$T/out" "$T/c.json"
[ "$(grep -c "^launched $N pid" "$T/err")" = 9 ] && ok "the program ran 9 times (3 rounds x 3)" || bad "9 runs"
for cfg in reduced full; do
	for r in 1 2 3; do
		[ "$(ls "$T/c/$cfg-r$r"/*.tally 2>/dev/null | wc -l)" = 1 ] || bad "$cfg-r$r: one trace"
	done
done
[ ! -e "$T/c/untraced-r1" ] && ok "traces in reduced-rK/ and full-rK/, none untraced" || bad "untraced dir"
"$TALLY" check --json "$T/c/reduced-r1"/*.tally >"$T/red.json" 2>/dev/null
"$TALLY" check --json "$T/c/full-r1"/*.tally >"$T/full.json" 2>/dev/null
py "import json,sys; k=json.load(open(sys.argv[1]+'/red.json'))['files'][0]['sections'][0]['records']; n=int(sys.argv[2]); sys.exit(0 if k.get('kernel')==n and not k.get('runtime') else 1)" \
	"reduced: N kernels, no API records"
py "import json,sys; k=json.load(open(sys.argv[1]+'/full.json'))['files'][0]['sections'][0]['records']; n=int(sys.argv[2]); sys.exit(0 if k.get('kernel')==n and k.get('runtime')==n else 1)" \
	"full: N kernels and N API records"
py "import json,sys; d=json.load(open(sys.argv[1]+'/c.json')); c=d['configs']; sys.exit(0 if [x['config'] for x in c]==['untraced','reduced','full'] and all(len(x['rounds'])==3 and x['lost']==0 for x in c) and all(r['exit_status']==0 and r['wall_s']>0 for x in c for r in x['rounds']) and d['compare']=='same' else 1)" \
	"json: three configurations, three rounds each, nothing lost, reduced vs full same"
py "import json,sys; d=json.load(open(sys.argv[1]+'/c.json')); sys.exit(0 if any('no record was lost' in s for s in d['conclusions']) else 1)" \
	"says nothing was lost"

# A starved pool (one 4 KiB buffer): CUPTI drops.  Every launch is either recorded or counted as
# dropped, per kind recorded: reduced records kernels only, full kernels and API calls.
# --json=FILE: the JSON into FILE, the program's output where it was
expect_rc "control, starved pool" 1 "$TALLY" control -o "$T/s" -n 2 --pool-buffers 1 --buffer-size 4096 --json="$T/s.json" -- "$APP" exit 20000
[ "$(grep -c "^launched" "$T/out")" = 6 ] && ok "--json=FILE: the program's output on standard output" || bad "--json=FILE: program output"
python3 - "$T/s.json" <<'PY' && ok "records + dropped = launches x kinds, per configuration" || bad "starved counts"
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["config"]: x for x in d["configs"]}
ok = all(r["records"] + r["dropped_cupti"] == 20000 * kinds
         for name, kinds in (("reduced", 1), ("full", 2)) for r in c[name]["rounds"])
ok = ok and c["full"]["lost"] > 0
sys.exit(0 if ok else 1)
PY
py "import json,sys; d=json.load(open(sys.argv[1]+'/s.json')); sys.exit(0 if d['compare']=='unusable' and any('losses appear' in s for s in d['conclusions']) else 1)" \
	"lossy: compare unusable, the losses explained"
expect_rc "text report" 1 "$TALLY" control -o "$T/t" -n 1 --pool-buffers 1 --buffer-size 4096 -- "$APP" exit 20000
grep -q "what follows:" "$T/out" && grep -q "^  full " "$T/out" && ok "text: table and what follows" || bad "text report"

# tally compare --capture: a trace recorded with --delay has a window-open note; compared with
# itself over the capture range it is the same, every kernel in it (nothing is recorded outside).
mkdir -p "$T/cap"
"$TALLY" record -q --delay 0.5 -o "$T/cap/%p.tally" -- "$APP" paced "$N" >/dev/null 2>&1
cap=$(ls "$T/cap"/*.tally | head -1)
expect_rc "compare --capture, a trace with itself" 0 "$TALLY" compare --capture -f json -o "$T/cap.json" "$cap" "$cap"
"$TALLY" check --json "$cap" >"$T/capcheck.json" 2>/dev/null
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
k = json.load(open(sys.argv[2]))['files'][0]['sections'][0]['records'].get('kernel', 0)
good = d['a']['intervals'] == 1 and d['a']['gpu_records'] == k > 0 and d['verdict'] == 'same'
if not good:
    print('capture: intervals', d['a']['intervals'], 'gpu_records', d['a']['gpu_records'], 'kernels', k, 'verdict', d['verdict'])
sys.exit(0 if good else 1)" "$T/cap.json" "$T/capcheck.json" \
	&& ok "capture: one window, every recorded kernel in it" || bad "capture stretch"

expect_rc "no program" 2 "$TALLY" control -o "$T/u"
expect_rc "directory exists" 2 "$TALLY" control -o "$T/c" -- "$APP" exit 10
expect_rc "bad rounds" 2 "$TALLY" control -n 0 -- "$APP" exit 10
expect_rc "help" 0 "$TALLY" control --help
finish
