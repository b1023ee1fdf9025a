#!/bin/sh
# One contract across the seam (common/settings.c): every setting is checked once, before the
# program runs, by tally record and tally env as the collector will read it.  A bad value exits 2
# naming the option or the variable, and the program never runs (it would have run unrecorded);
# --json=FILE and -o obey --force alike; -o - is refused.  A bad value that reaches the collector
# directly costs the recording, never the program: it runs and ends as untraced.  A setting one
# side accepts the other accepts (cuda-launch-driver; GPU metrics' devices of any length).
# Usage: test-settings.sh TALLY LIBTALLY FAKEAPP FAKEHOST FAKECUPTI
set -u
TALLY=$1 LIB=$2 APP=$3 HOST=$4 CUPTI=$5
. "$(dirname "$0")/../lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TALLY_CUPTI_PATH=$CUPTI
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# refused NAME WORDS [VAR=VALUE...] -- OPTIONS...: tally record exits 2 before the program runs,
# and its message names WORDS (the option or the variable)
refused() {
	name=$1 words=$2
	shift 2
	vars=""
	while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
	shift
	rm -f ran
	env $vars "$TALLY" record "$@" -- sh -c 'touch ran' >out 2>err
	rc=$?
	if [ "$rc" = 2 ] && [ ! -e ran ] && grep -q -- "$words" err; then
		ok "$name: exit 2 before the program ran, naming $words"
	else
		bad "$name: exit $rc, program ran: $([ -e ran ] && echo yes || echo no); $(cat err)"
	fi
}

refused "--devices x" "--devices" -- --devices x -o t.tally
refused "--stack-depth -1" "--stack-depth" -- --stack-depth -1 -o t.tally
refused "--stack-depth 200 (at most 128: refused, not clamped)" "--stack-depth" -- \
	--stack-depth 200 -o t.tally
refused "--sample-rate 0" "--sample-rate" -- --sample-rate 0 -o t.tally
refused "--trace with a name no side knows" "--trace" -- --trace cuda,bogus -o t.tally
refused "TALLY_SAMPLE_SIGNAL=9 in tally's environment" "TALLY_SAMPLE_SIGNAL=9" \
	TALLY_SAMPLE_SIGNAL=9 -- -o t.tally
refused "TALLY_SAMPLE_SIGNAL=11 (the program's faults)" "SIGSEGV" TALLY_SAMPLE_SIGNAL=11 -- \
	-o t.tally
refused "TALLY_STACK_DEPTH=-1 in tally's environment" "TALLY_STACK_DEPTH" \
	TALLY_STACK_DEPTH=-1 -- -o t.tally
refused "-o - (a trace is a file)" "-o" -- -o -
expect_rc "tally env --devices x" 2 "$TALLY" env --devices x
grep -q -- "--devices" "$T/err" && ok "tally env names --devices" || bad "tally env: $(cat "$T/err")"

# --json=FILE obeys --force as -o does, and is never the trace itself
echo mine >keep.json
refused "--json=FILE that exists, without --force" "--json" -- --json=keep.json -o t.tally
[ "$(cat keep.json)" = mine ] && ok "the existing --json file is untouched" ||
	bad "--json overwrote keep.json without --force"
refused "--json=X.tally -o X (the trace itself)" "--json=X.tally" -- --json=X.tally -o X --force
"$TALLY" record --force --json=keep.json -o t.tally -- "$APP" exit 3 >out 2>err
python3 -c "import json,sys; d=json.load(open('keep.json')); sys.exit(d['exit_status'] != 0)" \
	2>/dev/null && ok "--json=FILE with --force replaces it with the summary" ||
	bad "--json=FILE --force: $(cat keep.json)"

# accepted by both sides
rm -f t.tally
"$TALLY" record --trace cuda-launch-driver,nvtx -o t.tally -- "$APP" exit 3 >out 2>err
rc=$?
[ "$rc" = 0 ] && [ -s t.tally ] && "$TALLY" check -q t.tally >/dev/null &&
	ok "--trace cuda-launch-driver: recorded, COMPLETE" ||
	bad "--trace cuda-launch-driver: exit $rc; $(cat err)"
# 130 entries, 261 bytes ("00,1,0,1,...": the collector once cut the list at 255 bytes, here
# after a comma, and refused what was left)
devices=$(python3 -c "print('00,' + ','.join(str(i % 2) for i in range(1, 130)))")
rm -f m.tally
"$TALLY" record --gpu-metrics="$devices" -o m.tally -- "$APP" metrics 100 >out 2>err
"$TALLY" check --json m.tally >m.json 2>/dev/null
# (not the verdict: a loaded machine may leave a gap in the metrics, which is loss, not this)
python3 - m.json <<'PY' && ok "--gpu-metrics with 130 entries: device 0 sampled, no warning" ||
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
codes = [n["code"] for n in s.get("notes", [])]
sys.exit(not ("gpu-metrics-stopped" not in codes and
              any(d["device"] == 0 and d["state"] == "sampled" for d in s["gpu_metrics"]["devices"])))
PY
	bad "--gpu-metrics with 130 entries: $(cat err; head -c 600 m.json)"

# The collector reached directly (a tally env line edited by hand): not recorded, program unharmed
"$HOST" burn 200 >plain.out 2>&1
want=$?
env LD_PRELOAD="$LIB" TALLY_OUTPUT="$T/direct-%p.tally" TALLY_SAMPLE=native \
	TALLY_SAMPLE_FALLBACK=1 TALLY_SAMPLE_SIGNAL=9 "$HOST" burn 200 >direct.out 2>direct.err
got=$?
[ "$got" = "$want" ] && [ "$(grep -c . direct.out)" = "$(grep -c . plain.out)" ] &&
	ok "TALLY_SAMPLE_SIGNAL=9 to the collector: the program ends as untraced (exit $got)" ||
	bad "TALLY_SAMPLE_SIGNAL=9 to the collector: exit $got (untraced $want)"
grep -q "not recording this process: TALLY_SAMPLE_SIGNAL=9" direct.err &&
	ok "the collector says why it does not record" || bad "no reason said: $(cat direct.err)"
ls direct-*.tally >/dev/null 2>&1 && bad "a trace was written with a refused setting" ||
	ok "no trace written with a refused setting"
finish
