#!/bin/sh
# tally check on traces made by the test source: exit codes, verdicts, --json that parses,
# and clear errors for bad input.  Usage: test-check.sh TALLY TESTSRC SRCDIR
set -u
TALLY=$1 TESTSRC=$2 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
json_get() { # file python-expression-on-d
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

"$TESTSRC" -o "$T/good.tally" --kernels 2000 --memcpys 50 --ranges 10 >/dev/null || bad "testsrc good"
expect_rc "complete trace" 0 "$TALLY" check "$T/good.tally"
grep -q "verdict   COMPLETE" "$T/out" || bad "text verdict COMPLETE"
expect_rc "complete --json" 0 "$TALLY" check --json "$T/good.tally"
cp "$T/out" "$T/good.json"
[ "$(json_get "$T/good.json" "d['verdict']")" = COMPLETE ] && ok "json verdict" || bad "json verdict"
[ "$(json_get "$T/good.json" "d['files'][0]['sections'][0]['records']['kernel']")" = 2000 ] \
	&& ok "json kernel count" || bad "json kernel count"

"$TESTSRC" -o "$T/drops.tally" --kernels 3000 --pool 2 --buffer-size 16384 --starve >/dev/null
expect_rc "dropped records" 1 "$TALLY" check "$T/drops.tally"
grep -q "dropped_cupti" "$T/out" && grep -q "when:" "$T/out" && grep -q "fix:" "$T/out" \
	&& ok "drops named with window and fix" || { bad "drops text"; cat "$T/out"; }
"$TALLY" check --json "$T/drops.tally" >"$T/drops.json"
[ "$(json_get "$T/drops.json" "[r['counter'] for r in d['files'][0]['sections'][0]['reasons'] if r['code']=='loss'][0]")" = dropped_cupti ] \
	&& ok "json reason counter" || bad "json reason counter"

"$TESTSRC" -o "$T/killed.tally" --kernels 500 --kill >/dev/null
expect_rc "killed (no final ledger)" 1 "$TALLY" check "$T/killed.tally"
grep -q "no final ledger" "$T/out" && ok "killed named" || bad "killed text"

# truncated in the middle of a chunk
size=$(stat -c %s "$T/good.tally")
head -c $((size - 10)) "$T/good.tally" >"$T/cut.tally"
expect_rc "truncated" 1 "$TALLY" check "$T/cut.tally"
grep -q "truncated" "$T/out" && ok "truncation reported" || bad "truncation text"

# bad input: a clear error naming the file, exit 3, no crash
printf 'not a trace at all' >"$T/junk.tally"
expect_rc "not a trace" 3 "$TALLY" check "$T/junk.tally"
grep -q "junk.tally" "$T/err" && ok "error names the file" || bad "error names file"
: >"$T/empty.tally"
expect_rc "empty file" 3 "$TALLY" check "$T/empty.tally"
expect_rc "missing file" 3 "$TALLY" check "$T/nope.tally"
expect_rc "directory" 3 "$TALLY" check "$T"
expect_rc "mixed files: worst wins" 3 "$TALLY" check "$T/good.tally" "$T/junk.tally"
expect_rc "no argument" 2 "$TALLY" check
expect_rc "bad option names itself" 2 "$TALLY" check --frobnicate "$T/good.tally"
grep -q "frobnicate" "$T/err" && ok "bad option named" || bad "bad option text"
expect_rc "help" 0 "$TALLY" check --help
expect_rc "top-level help" 0 "$TALLY" --help
expect_rc "version" 0 "$TALLY" --version
expect_rc "unknown command" 2 "$TALLY" frobnicate

# one schema for a section's verdict (read/'s): check --json and stats -f json say the same
# clock offset, verdict and reasons, loss windows with begin_s/end_s, on a lossy trace
"$TESTSRC" -o "$T/lossy.tally" --kernels 300 --bad-time-every 25 >/dev/null
"$TALLY" check --json "$T/lossy.tally" >"$T/check.json"
"$TALLY" stats -f json -r cuda_api_sum "$T/lossy.tally" >"$T/stats.json"
python3 - "$T/check.json" "$T/stats.json" <<'PY' && ok "check and stats write one verdict schema" ||
import json, sys
c = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
s = json.load(open(sys.argv[2]))["inputs"][0]["sections"][0]
keys = ("clock_offset_ns", "verdict", "reasons")
w = c["reasons"][0]["windows"][0]
sys.exit(not ({k: c[k] for k in keys} == {k: s[k] for k in keys} and c["verdict"] == "INCOMPLETE"
              and {"begin_ns", "end_ns", "begin_s", "end_s", "count"} <= set(w)
              and 0 <= w["begin_s"] <= w["end_s"]))
PY
	bad "check's and stats' verdicts differ: $(head -c 800 "$T/check.json")"

# the sample trace kept in the repo reads, and its verdict is as documented
for f in "$SRC"/data/*.tally; do
	[ -e "$f" ] || continue
	"$TALLY" check "$f" >/dev/null 2>&1; rc=$?
	[ $rc -le 1 ] && ok "sample $(basename "$f") reads (exit $rc)" || bad "sample $(basename "$f") exit $rc"
done
finish
