#!/bin/sh
# tally stats, export and merge from the command line: exit codes, the verdict first, output that
# parses, and a clear error naming the file and the offset for bad input, never a crash.
# Usage: test-report.sh TALLY TESTSRC SRCDIR
set -u
TALLY=$1 TESTSRC=$2 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
has() { # name file pattern
	if grep -q -- "$3" "$2"; then ok "$1"; else bad "$1: no '$3' in"; cat "$2"; fi
}

"$TESTSRC" -o "$T/good.tally" --kernels 300 --memcpys 20 --memsets 5 --ranges 6 --names 6 --devices 1 >/dev/null || bad "testsrc good"
"$TESTSRC" -o "$T/lossy.tally" --kernels 300 --bad-time-every 25 --orphan-launches 2 >/dev/null || bad "testsrc lossy"

# stats: verdict first, nsys's reports, exit 0 COMPLETE / 1 INCOMPLETE
expect_rc "stats complete" 0 "$TALLY" stats "$T/good.tally"
# the verdict field of the first line ("tally: N file(s), ...: VERDICT") is COMPLETE, nothing else
[ "$(head -1 "$T/out" | sed -n 's/^tally: [^:]*: \([A-Z]*\).*/\1/p')" = COMPLETE ] && ok "verdict on the first line" ||
	bad "verdict first: $(head -1 "$T/out")"
has "kernel report" "$T/out" "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)"
has "nsys columns" "$T/out" "Time (%)  Total Time (ns)  Instances"
expect_rc "stats incomplete" 1 "$TALLY" stats "$T/lossy.tally"
[ "$(head -1 "$T/out" | sed -n 's/^tally: [^:]*: \([A-Z]*\).*/\1/p')" = INCOMPLETE ] && ok "INCOMPLETE on the first line" ||
	bad "INCOMPLETE first: $(head -1 "$T/out")"
has "loss named" "$T/out" "- bad_timestamps: "
has "loss windows listed" "$T/out" "lost in +0"
has "untimed records said" "$T/out" "have no timestamps"
expect_rc "stats csv" 0 "$TALLY" stats -f csv -r cuda_api_sum "$T/good.tally"
has "csv header" "$T/out" "^Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name$"
head -1 "$T/out" | grep -q "^# tally: " && ok "csv verdict as a comment" || bad "csv verdict"
expect_rc "stats json" 1 "$TALLY" stats -f json -r all "$T/lossy.tally" -o "$T/lossy.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['verdict']=='INCOMPLETE'; assert [r['name'] for r in d['reports']][:3]==['nvtx_sum','cuda_api_sum','cuda_gpu_kern_sum']; assert d['untimed_records']>0" "$T/lossy.json" \
	&& ok "stats json parses, verdict and reports" || bad "stats json"
expect_rc "stats :base" 0 "$TALLY" stats -r cuda_gpu_kern_sum:base,cuda_gpu_trace:mangled "$T/good.tally"
expect_rc "stats unknown report" 2 "$TALLY" stats -r nope_sum "$T/good.tally"
has "unknown report named" "$T/err" "nope_sum"
expect_rc "stats bad :arg" 2 "$TALLY" stats -r cuda_api_sum:base "$T/good.tally"
expect_rc "stats bad format" 2 "$TALLY" stats -f xml "$T/good.tally"
expect_rc "stats help" 0 "$TALLY" stats --help
has "help lists reports" "$T/out" "cuda_gpu_kern_gb_sum"
expect_rc "stats no file" 2 "$TALLY" stats
mkdir "$T/ranks" && cp "$T/good.tally" "$T/ranks/r0.tally" && cp "$T/good.tally" "$T/ranks/r1.tally"
expect_rc "stats directory" 0 "$TALLY" stats -f json "$T/ranks"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['inputs'])==2" "$T/out" \
	&& ok "directory: both files" || bad "directory inputs"
mkdir "$T/emptydir"
expect_rc "stats empty directory" 3 "$TALLY" stats "$T/emptydir"

# export
expect_rc "export chrome" 0 "$TALLY" export -f chrome -o "$T/good.json" "$T/good.tally"
python3 -m json.tool "$T/good.json" >/dev/null && ok "chrome json parses" || bad "chrome json"
head -c 40 "$T/good.json" | grep -q '"otherData":{"tally_verdict":"COMPLETE"' && ok "verdict at the top" || bad "chrome verdict top"
expect_rc "export exists" 2 "$TALLY" export -f chrome -o "$T/good.json" "$T/good.tally"
has "exists named" "$T/err" "exists"
expect_rc "export chrome stdout" 0 "$TALLY" export -q -f chrome -o - "$T/lossy.tally"
python3 -c "import json,sys; d=json.load(sys.stdin); assert d['otherData']['tally_verdict']=='INCOMPLETE'; assert any(e.get('name','').startswith('DATA LOST: bad_timestamps') for e in d['traceEvents'])" <"$T/out" \
	&& ok "stdout json: verdict and DATA LOST" || bad "stdout chrome"
expect_rc "export strict incomplete" 1 "$TALLY" export --strict -f chrome -o "$T/l.json" "$T/lossy.tally"
has "incomplete warned" "$T/err" "INCOMPLETE"
expect_rc "export sqlite" 0 "$TALLY" export -f sqlite -o "$T/good.sqlite" "$T/good.tally"
[ "$(sqlite3 "$T/good.sqlite" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL')" = 300 ] && ok "sqlite kernels" || bad "sqlite kernels"
[ "$(sqlite3 "$T/good.sqlite" "SELECT COUNT(*) FROM TALLY_VERDICT WHERE verdict='COMPLETE'")" = 1 ] && ok "sqlite verdict" || bad "sqlite verdict"
# indexes: none by default (nsys makes none); --index makes exactly those docs/sqlite.md lists,
# and a lookup by correlation id then uses one; the rows are the same either way
sql() { sqlite3 -batch -noheader "$@"; }
[ "$(sql "$T/good.sqlite" "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")" = 0 ] &&
	ok "sqlite: no index by default" || bad "sqlite: indexes made unasked"
expect_rc "export sqlite --index" 0 "$TALLY" export -f sqlite --index -o "$T/idx.sqlite" "$T/good.tally"
sed -n '/^## Indexes/,/^## /p' "$SRC/../docs/sqlite.md" | tr -d '\n' | python3 -c '
import re, sys
text = sys.stdin.read().split("nsys")[0]  # the list ends where the prose begins
out = []  # `TABLE (cols)`, then `(cols)` of the same table
for m in re.finditer(r"`(\w+) \(([^)]*)\)`|`\(([^)]*)\)`", text):
    if m.group(1):
        table = m.group(1)
        out.append((table, m.group(2)))
    else:
        out.append((table, m.group(3)))
print("\n".join(sorted(t + " " + c.replace(" ", "") for t, c in out)))' >"$T/idx.doc"
sql "$T/idx.sqlite" "SELECT tbl_name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL" |
	sed 's/^\([A-Za-z_]*\)|.*(\(.*\))$/\1 \2/; s/ *, */,/g' | sort >"$T/idx.db"
[ "$(wc -l <"$T/idx.doc")" -ge 15 ] && cmp -s "$T/idx.doc" "$T/idx.db" && ok "sqlite --index: the indexes docs/sqlite.md lists" ||
	{ bad "sqlite --index: indexes differ from docs/sqlite.md"; diff "$T/idx.doc" "$T/idx.db"; }
sql "$T/idx.sqlite" "EXPLAIN QUERY PLAN SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 7" |
	grep -q "USING INDEX kernel_corr" && ok "sqlite --index: a lookup by correlation id uses its index" ||
	bad "sqlite --index: no index used"
same=0
for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_MEMCPY NVTX_EVENTS; do
	q="SELECT COUNT(*), MIN(start), MAX(end), SUM(end - start) FROM $t"
	[ "$(sql "$T/idx.sqlite" "$q")" = "$(sql "$T/good.sqlite" "$q")" ] && same=$((same + 1)) ||
		bad "sqlite --index: $t rows differ"
done
[ "$same" = 4 ] && ok "sqlite --index: the same rows as without"
expect_rc "--index needs --format sqlite" 2 "$TALLY" export -f csv --index -o "$T/csvi" "$T/good.tally"
has "--index refusal says why" "$T/err" "needs --format sqlite"
expect_rc "export csv" 0 "$TALLY" export -f csv -o "$T/csv" "$T/lossy.tally"
[ -f "$T/csv/kernel.csv" ] && [ -f "$T/csv/verdict.csv" ] && [ -f "$T/csv/loss_windows.csv" ] && ok "csv files" || bad "csv files"
[ "$(($(wc -l <"$T/csv/kernel.csv") - 1))" = 300 ] && ok "csv: every kernel, timed or not" || bad "csv kernel rows"
has "csv verdict" "$T/csv/verdict.csv" "INCOMPLETE,loss,bad_timestamps"
expect_rc "export no format" 2 "$TALLY" export -o "$T/x" "$T/good.tally"
expect_rc "export bad format" 2 "$TALLY" export -f svg -o "$T/x" "$T/good.tally"
expect_rc "export no output" 2 "$TALLY" export -f chrome "$T/good.tally"
expect_rc "export help" 0 "$TALLY" export --help
expect_rc "export to a missing directory" 4 "$TALLY" export -f chrome -o "$T/no/such/dir/x.json" "$T/good.tally"

# merge
expect_rc "merge" 0 "$TALLY" merge -o "$T/merged.tally" "$T/good.tally" "$T/lossy.tally"
has "merged verdict worst" "$T/err" "merged verdict: INCOMPLETE"
expect_rc "check merged" 1 "$TALLY" check "$T/merged.tally"
expect_rc "merge strict" 1 "$TALLY" merge --strict --force -o "$T/merged.tally" "$T/lossy.tally"
expect_rc "merge complete" 0 "$TALLY" merge -o "$T/m2.tally" "$T/ranks"
expect_rc "check merged complete" 0 "$TALLY" check "$T/m2.tally"
expect_rc "stats merged" 0 "$TALLY" stats "$T/m2.tally"
expect_rc "merge onto an input" 2 "$TALLY" merge --force -o "$T/good.tally" "$T/good.tally"
expect_rc "merge help" 0 "$TALLY" merge --help
expect_rc "merge no output" 2 "$TALLY" merge "$T/good.tally"

# bad input: a clear error naming the file (and the offset), non-zero, never a crash
printf 'not a trace at all' >"$T/junk.tally"
: >"$T/empty.tally"
size=$(stat -c %s "$T/good.tally")
head -c $((size / 2)) "$T/good.tally" >"$T/cut.tally"
cp "$T/good.tally" "$T/flipped.tally"
printf '\377\377\377\377' | dd of="$T/flipped.tally" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null
for cmd in "stats" "export -f chrome -o $T/o.json --force" "export -f sqlite -o $T/o.sqlite --force" \
	"export -f csv -o $T/o.csv --force" "merge -o $T/o.tally --force"; do
	# shellcheck disable=SC2086
	expect_rc "$cmd: not a trace" 3 "$TALLY" $cmd "$T/junk.tally"
	has "$cmd: names file and offset" "$T/err" "junk.tally: not a tally trace (no tally magic at offset 0)"
	# shellcheck disable=SC2086
	expect_rc "$cmd: empty" 3 "$TALLY" $cmd "$T/empty.tally"
	has "$cmd: empty named" "$T/err" "empty.tally: not a tally trace (empty file)"
	# shellcheck disable=SC2086
	expect_rc "$cmd: missing" 3 "$TALLY" $cmd "$T/nope.tally"
	# shellcheck disable=SC2086
	"$TALLY" $cmd "$T/cut.tally" >"$T/out" 2>"$T/err"; rc=$?
	[ $rc -lt 128 ] && ok "$cmd: truncated reads (exit $rc)" || bad "$cmd: truncated crashed ($rc)"
	has "$cmd: truncation named with offset" "$T/err" "cut.tally: truncated at offset [0-9]"
	# shellcheck disable=SC2086
	"$TALLY" $cmd "$T/flipped.tally" >"$T/out" 2>"$T/err"; rc=$?
	[ $rc -lt 128 ] && ok "$cmd: corrupt reads (exit $rc)" || bad "$cmd: corrupt crashed ($rc)"
	has "$cmd: corruption named with offset" "$T/err" "flipped.tally: corrupt at offset [0-9]"
done
expect_rc "stats truncated is INCOMPLETE" 1 "$TALLY" stats "$T/cut.tally"
expect_rc "export --strict corrupt" 1 "$TALLY" export --strict -f chrome --force -o "$T/o.json" "$T/flipped.tally"
expect_rc "merge corrupt, strict" 1 "$TALLY" merge --strict --force -o "$T/o.tally" "$T/flipped.tally"
expect_rc "check of a merged corrupt input" 1 "$TALLY" check "$T/o.tally"
has "carried as merge_damaged_chunks" "$T/out" "merge_damaged_chunks"

# a directory given with a trailing slash (as tab completion writes it): no "//" in the paths shown
expect_rc "stats directory/" 0 "$TALLY" stats -f json "$T/ranks/"
grep -q '"path": *"[^"]*//' "$T/out" && bad "stats directory/: a path with // in it" ||
	{ grep -q "\"$T/ranks/[^/\"]*\.tally\"" "$T/out" && ok "stats directory/: paths as dir/file" ||
		bad "stats directory/: no dir/file path in the output"; }
expect_rc "export csv into directory/" 0 "$TALLY" export -f csv -o "$T/csv2/" "$T/ranks/"
grep -q "r0.tally" "$T/csv2/sessions.csv" && ! grep -q "//" "$T/csv2/sessions.csv" &&
	ok "export csv: sessions.csv lists dir/file, no //" || bad "export csv: the paths in sessions.csv"

# the samples kept in the repo go through every command
for f in "$SRC"/data/*.tally; do
	"$TALLY" stats -r all "$f" >/dev/null 2>&1; rc=$?
	[ $rc -le 1 ] && ok "sample $(basename "$f") stats (exit $rc)" || bad "sample stats $(basename "$f") exit $rc"
	"$TALLY" export -q -f chrome --force -o "$T/s.json" "$f" 2>/dev/null && python3 -m json.tool "$T/s.json" >/dev/null \
		&& ok "sample $(basename "$f") chrome parses" || bad "sample chrome $(basename "$f")"
done
finish
