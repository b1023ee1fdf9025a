#!/bin/sh
# tally compare from the command line, on traces the CPU test source was told how to make: every
# expected value below comes from the generator's arguments, never from tally's output.
# Usage: test-compare.sh TALLY TESTSRC SRCDIR
set -u
TALLY=$1 TESTSRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
# json FILE PYTHON-EXPRESSION over d (the document): passes when it is true
json() {
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"
}
gen() { out=$1; shift; "$TESTSRC" -o "$T/$out" --names 4 "$@" >/dev/null || bad "testsrc $out"; }

# The same program twice: same kernel sequence, durations drawn anew (another seed).
gen a.tally --kernels 6000 --seed 1
gen b.tally --kernels 6000 --seed 2
expect_rc "same sequence, other seed: same" 0 "$TALLY" compare -f json -o "$T/ab.json" "$T/a.tally" "$T/b.tally"
json "$T/ab.json" "d['verdict']=='same' and all(k['call']=='same' for k in d['names']) and len(d['names'])==4 and all(k['a']['count']==1500 for k in d['names'])" \
	&& ok "4 names of 1500 kernels each, all same" || bad "same: $(cat "$T/ab.json")"
json "$T/ab.json" "all(s['first_divergence']==-1 and s['edit_distance']==0 for s in d['streams']) and len(d['streams'])==3" \
	&& ok "3 streams in the same order" || bad "same order"

# Kernel name index 2 (ampere_sgemm_128x64_nn) made 20% longer: flagged for it alone.
gen c.tally --kernels 6000 --seed 3 --scale 2:1.2
expect_rc "one name 20% longer: differs" 1 "$TALLY" compare -f json -o "$T/ac.json" "$T/a.tally" "$T/c.tally"
json "$T/ac.json" "[k['name'] for k in d['names'] if k['call']=='differs']==['ampere_sgemm_128x64_nn']" \
	&& ok "only ampere_sgemm_128x64_nn differs" || bad "scaled name: $(cat "$T/ac.json")"
json "$T/ac.json" "[k for k in d['names'] if k['call']=='differs'][0]['why']=='duration' and 0.10 < [k for k in d['names'] if k['call']=='differs'][0]['shift'] < 0.30" \
	&& ok "its p50 shift is about +20%" || bad "scaled shift"
expect_rc "csv" 1 "$TALLY" compare -f csv "$T/a.tally" "$T/c.tally"
grep -q '^# tally compare: differs' "$T/out" && grep -q 'duration,ampere_sgemm_128x64_nn$' "$T/out" \
	&& ok "csv: verdict comment and the row" || bad "csv rows"
# 4% longer, same seed (no noise), 6000 of that name: significant, but under the 5% minimum effect.
gen s0.tally --kernels 24000 --seed 1
gen s1.tally --kernels 24000 --seed 1 --scale 2:1.04
expect_rc "4% longer, 5% minimum effect: same" 0 "$TALLY" compare "$T/s0.tally" "$T/s1.tally"
expect_rc "4% longer, 1% minimum effect: differs" 1 "$TALLY" compare --min-effect 1 "$T/s0.tally" "$T/s1.tally"

# Launches 1234 and 1235 swap names, on one stream: found at 1234, two edits (delete + insert).
gen o1.tally --kernels 6000 --seed 1 --streams 1
gen o2.tally --kernels 6000 --seed 1 --streams 1 --swap-at 1234
expect_rc "a swap: differs" 1 "$TALLY" compare -f json -o "$T/o.json" "$T/o1.tally" "$T/o2.tally"
json "$T/o.json" "len(d['streams'])==1 and d['streams'][0]['first_divergence']==1234 and d['streams'][0]['edit_distance']==2" \
	&& ok "divergence at 1234, edit distance 2" || bad "swap: $(cat "$T/o.json")"
expect_rc "edit distance capped" 1 "$TALLY" compare -f json -o "$T/oc.json" --max-edits 1 "$T/o1.tally" "$T/o2.tally"
json "$T/oc.json" "d['streams'][0]['edit_distance_capped'] and d['streams'][0]['first_divergence']==1234" \
	&& ok "cap said" || bad "cap"

# Ranges "iter" around every 1000 launches; CUPTI drops 500 records in an idle before launch 1500,
# inside the second range.  The second range and the whole run are unusable; the first is not.
gen r1.tally --kernels 3000 --seed 5 --range-every 1000 --idle-at 1500:100 --slice-ms 10
gen r2.tally --kernels 3000 --seed 6 --range-every 1000 --idle-at 1500:100:500 --slice-ms 10
expect_rc "drops in the whole run: unusable" 5 "$TALLY" compare "$T/r1.tally" "$T/r2.tally"
grep -q "UNUSABLE: dropped_cupti: 500 lost in the stretch" "$T/out" && ok "says which loss" || bad "unusable why"
expect_rc "drops inside range 2: unusable" 5 "$TALLY" compare -f json -o "$T/r.json" --range iter:2 "$T/r1.tally" "$T/r2.tally"
json "$T/r.json" "d['a']['timing_usable'] and not d['b']['timing_usable'] and d['b']['loss']['dropped_cupti']==500 and d['a']['gpu_records']==1000" \
	&& ok "B unusable, 1000 kernels in the range, 500 drops side by side" || bad "range 2: $(cat "$T/r.json")"
expect_rc "range 1, before the drops: usable" 0 "$TALLY" compare --range iter:1 "$T/r1.tally" "$T/r2.tally"
expect_rc "every range" 5 "$TALLY" compare --range iter "$T/r1.tally" "$T/r2.tally"

# The DROPS chunk: the 500 drops in CUPTI's global queue, context 1 tied to device 0 with the 3000
# kernels the generator made; check, its JSON and compare all say so.
"$TALLY" check --json "$T/r2.tally" >"$T/c.json" 2>/dev/null
json "$T/c.json" "(lambda d: d['recorded'] and d['kind']=='not reported by CUPTI' and [(e['source'], e.get('dropped'), e.get('gpu_records'), e['context'], e['device']) for e in d['entries']]==[('global queue',500,None,0,0),('context seen',None,3000,1,0)])(d['files'][0]['sections'][0]['drops'])" \
	&& ok "check --json: 500 in the global queue, context 1 on device 0 with 3000 kernels" || bad "drops json: $(cat "$T/c.json")"
"$TALLY" check "$T/r2.tally" >"$T/c.txt" 2>/dev/null
grep -q "global queue: 500 dropped; context, stream and kind not reported by CUPTI" "$T/c.txt" && grep -q "context 1 on device 0: 3000 GPU records taken in" "$T/c.txt" \
	&& ok "check: the breakdown in words" || { bad "check drops text"; cat "$T/c.txt"; }
json "$T/r.json" "[(e['source'], e.get('dropped')) for e in d['b']['drops']][0]==('global queue',500) and d['a']['drops'][0]['source']=='context seen'" \
	&& ok "compare: drops by queue on both sides" || bad "compare drops"
# merge knows DROPS (no times to shift): no "does not know" warning, and the breakdown survives
"$TALLY" merge -o "$T/m.tally" "$T/r1.tally" "$T/r2.tally" >"$T/m.out" 2>&1
! grep -q "does not know" "$T/m.out" && "$TALLY" check "$T/m.tally" 2>/dev/null | grep -q "global queue: 500 dropped" \
	&& ok "merge: DROPS copied as known, breakdown kept" || { bad "merge drops"; cat "$T/m.out"; }

# Usage and input errors stay apart from the verdicts.
expect_rc "no such range" 2 "$TALLY" compare --range nope "$T/r1.tally" "$T/r2.tally"
expect_rc "occurrence past the last" 2 "$TALLY" compare --range iter:4 "$T/r1.tally" "$T/r2.tally"
expect_rc "no capture window" 2 "$TALLY" compare --capture "$T/a.tally" "$T/b.tally"
expect_rc "one trace" 2 "$TALLY" compare "$T/a.tally"
expect_rc "bad K" 2 "$TALLY" compare --range iter:x "$T/a.tally" "$T/b.tally"
expect_rc "missing file" 3 "$TALLY" compare "$T/a.tally" "$T/nope.tally"
printf 'not a trace' >"$T/junk.tally"
expect_rc "not a trace" 3 "$TALLY" compare "$T/junk.tally" "$T/a.tally"
expect_rc "help" 0 "$TALLY" compare --help
mkdir "$T/da" "$T/db" && cp "$T/a.tally" "$T/da/" && cp "$T/b.tally" "$T/db/"
expect_rc "directories" 0 "$TALLY" compare "$T/da" "$T/db"
finish
