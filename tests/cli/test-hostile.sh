#!/bin/sh
# Hostile and odd inputs (docs/format.md "Limits", docs/export.md "Safe outputs"): crafted traces
# made by tally-craft, FIFOs, symbolic links and devices at -o, odd option values.  Every reader
# run is bounded in time and memory here, so that a regression fails instead of hanging.
# Usage: test-hostile.sh TALLY CRAFT SRCDIR TESTSRC
set -u
TALLY=$1 CRAFT=$2 SRC=$3 TESTSRC=$4
TALLY=$(cd "$(dirname "$TALLY")" && pwd)/$(basename "$TALLY") # some cases change directory
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"

# Under AddressSanitizer the address space is terabytes of shadow: limit resident memory
# through ASan instead of ulimit -v, and give time for its slowdown.
asan=0
ldd "$TALLY" 2>/dev/null | grep -q libasan && asan=1
bounded() { # SECONDS MIB cmd...: exit 124 if it ran out of time
	secs=$1 mb=$2
	shift 2
	if [ $asan = 1 ]; then
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:hard_rss_limit_mb=$mb" timeout $((secs * 3)) "$@"
	else
		(ulimit -v $((mb * 1024)) && exec timeout "$secs" "$@")
	fi
}
run() { # name want secs mib cmd...: output in $T/out, $T/err
	name=$1 want=$2 secs=$3 mb=$4
	shift 4
	bounded "$secs" "$mb" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"; else
		bad "$name: exit $rc, want $want"
		head -c 2000 "$T/out" "$T/err"
	fi
}
has() { # name pattern file
	grep -q -- "$2" "$3" && ok "$1" || { bad "$1: no '$2' in $3"; head -c 2000 "$3"; }
}
hasnt() { # name pattern file
	grep -q -- "$2" "$3" && { bad "$1: '$2' in $3"; head -c 2000 "$3"; } || ok "$1"
}
craft() { "$CRAFT" "$1" "$T/$1.tally" || bad "tally-craft $1"; }

# ---- readers: declared counts and ids are checked before anything is allocated ---------------
for c in rows-bomb strings-bomb; do
	craft $c
	run "$c: check" 1 10 256 "$TALLY" check "$T/$c.tally"
	has "$c: the chunk is named damaged" "bad-payload" "$T/out"
	run "$c: stats" 1 10 256 "$TALLY" stats -r all "$T/$c.tally"
	run "$c: export csv" 0 10 256 "$TALLY" export -f csv -o "$T/$c.csv" "$T/$c.tally"
	run "$c: export chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/$c.json" "$T/$c.tally"
	run "$c: export sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/$c.sqlite" "$T/$c.tally"
	run "$c: merge" 0 10 256 "$TALLY" merge -o "$T/$c.merged" "$T/$c.tally"
done

# ---- resynchronisation is linear: 4 MiB of headers that each claim the rest of the file -------
craft resync-bomb
run "resync-bomb: check" 1 5 256 "$TALLY" check "$T/resync-bomb.tally"
has "resync-bomb: damage reported" "unreadable" "$T/out"
run "resync-bomb: stats" 1 5 256 "$TALLY" stats "$T/resync-bomb.tally"

# ---- demangling is bounded and says when it gave up ------------------------------------------
craft demangle-bomb
run "demangle-bomb: stats" 0 10 256 "$TALLY" stats -r cuda_gpu_kern_sum "$T/demangle-bomb.tally"
[ "$(wc -c <"$T/out")" -lt 100000 ] && ok "demangle-bomb: report stays small" ||
	bad "demangle-bomb: report is $(wc -c <"$T/out") bytes"
has "demangle-bomb: the mangled name is shown" "_Z1fI1BIS_IS_I" "$T/out"
has "demangle-bomb: and that is said" "shown mangled" "$T/err"
run "demangle-bomb: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/dm.json" \
	"$T/demangle-bomb.tally"
[ "$(wc -c <"$T/dm.json")" -lt 100000 ] && ok "demangle-bomb: chrome stays small" ||
	bad "demangle-bomb: chrome is $(wc -c <"$T/dm.json") bytes"

# ---- a FIFO (or any non-regular file) is refused before it can block -------------------------
mkfifo "$T/fifo.tally"
for cmd in check stats merge; do
	if [ $cmd = merge ]; then set -- merge -o "$T/fifo-out.tally"; else set -- $cmd; fi
	run "fifo: $cmd" 3 5 256 "$TALLY" "$@" "$T/fifo.tally"
	has "fifo: $cmd says why" "not a regular file" "$T/err"
done
run "fifo: export" 3 5 256 "$TALLY" export -f csv -o "$T/fifo-csv" "$T/fifo.tally"

# ---- a partial chunk in the middle hides nothing after it -------------------------------------
for c in partial-mid partial-eof; do
	craft $c
	run "$c: check" 1 5 256 "$TALLY" check "$T/$c.tally"
	has "$c: chunks after it read" "contents  9 records (kernel 6, runtime 3)" "$T/out"
	has "$c: final ledger found" "ledger    final" "$T/out"
	has "$c: named a partial chunk" "partial-chunk: bytes" "$T/out"
	hasnt "$c: its number is not 'missing'" "missing before" "$T/out"
	hasnt "$c: not a truncation" "truncated" "$T/out"
done
craft enospc
run "enospc: check" 1 5 256 "$TALLY" check "$T/enospc.tally"
has "enospc: named" "ENOSPC" "$T/out"

# ---- the same session twice is counted once --------------------------------------------------
cp "$SRC/data/tiny.tally" "$SRC/data/lossy.tally" "$T/"
"$TALLY" stats -f json -r cuda_gpu_kern_sum "$T/tiny.tally" >"$T/one.json" 2>/dev/null
run "same file twice" 0 10 256 "$TALLY" stats -f json -r cuda_gpu_kern_sum "$T/tiny.tally" \
	"$T/tiny.tally"
same='import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert (a["records"],a["reports"])==(b["records"],b["reports"])'
python3 -c "$same" "$T/one.json" "$T/out" && ok "same file twice: counted once" || bad "same file twice: counts differ"
has "same file twice: warned" "counted once" "$T/err"
"$TALLY" merge -o "$T/m.tally" "$T/tiny.tally" "$T/lossy.tally" >/dev/null 2>&1
run "re-merge with a part" 0 10 256 "$TALLY" merge -o "$T/m2.tally" "$T/m.tally" "$T/tiny.tally"
has "re-merge: warned" "counted once" "$T/err"
"$TALLY" check --json "$T/m.tally" >"$T/m.json"
"$TALLY" check --json "$T/m2.tally" >"$T/m2.json"
[ "$(python3 -c 'import json,sys; print(sum(s["records"]["total"] for s in json.load(open(sys.argv[1]))["files"][0]["sections"]))' "$T/m.json" 2>&1)" = \
	"$(python3 -c 'import json,sys; print(sum(s["records"]["total"] for s in json.load(open(sys.argv[1]))["files"][0]["sections"]))' "$T/m2.json" 2>&1)" ] &&
	ok "re-merge: records not doubled" || bad "re-merge: records doubled"

# ---- merge keeps what a newer minor version added --------------------------------------------
craft future
run "future: merge" 0 10 256 "$TALLY" merge -o "$T/future-m.tally" "$T/future.tally"
run "future: check merged" 0 5 256 "$TALLY" check "$T/future-m.tally"
has "future: unknown column and counter kept" "1 column(s), 1 counter(s)" "$T/out"

# ---- check prints no control byte from the trace ---------------------------------------------
craft control-chars
run "control chars: check" 1 5 256 "$TALLY" check "$T/control-chars.tally"
if LC_ALL=C grep -q "$(printf '\033')" "$T/out"; then bad "control chars: ESC printed"; else ok "control chars: no ESC"; fi
[ "$(grep -c '^  verdict' "$T/out")" = 1 ] && has "control chars: one verdict, the real one" \
	"^  verdict   INCOMPLETE" "$T/out" || bad "control chars: a fake verdict line"
for cmd in stats merge; do
	if [ $cmd = merge ]; then set -- merge -o "$T/cc-merged.tally"; else set -- stats; fi
	bounded 10 256 "$TALLY" "$@" "$T/control-chars.tally" >"$T/out" 2>&1
	if LC_ALL=C grep -q "$(printf '\033')" "$T/out"; then bad "control chars: ESC printed by $cmd"; else ok "control chars: $cmd prints no ESC"; fi
	hasnt "control chars: $cmd prints no fake verdict line" "^  verdict" "$T/out"
done

# ---- SQLite text is UTF-8; a cut NVTX message says so ----------------------------------------
craft bad-text
run "bad text: sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/bt.sqlite" "$T/bad-text.tally"
python3 - "$T/bt.sqlite" >"$T/py" 2>&1 <<'EOF' && ok "bad text: every row decodes" || { bad "bad text: sqlite"; cat "$T/py"; }
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
    db.execute(f"SELECT * FROM {t}").fetchall()  # raises on invalid UTF-8
assert db.execute("SELECT sum(tallyTextTruncated) FROM NVTX_EVENTS").fetchone()[0] == 1
assert "\ufffd" in db.execute("SELECT cmdline FROM TALLY_SESSIONS").fetchone()[0]
EOF

# ---- time starts at the earliest of session start and first record ---------------------------
craft early-records
craft overlap
for f in "$T/early-records.tally" "$T/overlap.tally" "$SRC/data/tiny.tally" "$SRC/data/lossy.tally"; do
	n=$(basename "$f")
	"$TALLY" check "$f" >"$T/out" 2>&1
	hasnt "$n: no negative time in check" "when: -" "$T/out"
	run "$n: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/$n.json" "$f"
	python3 - "$T/$n.json" >"$T/py" 2>&1 <<'EOF' && ok "$n: chrome ts >= 0, no partial overlap on a track" || { bad "$n: chrome"; cat "$T/py"; }
import json, sys, collections
ev = json.load(open(sys.argv[1]))["traceEvents"]
assert all(e["ts"] >= 0 for e in ev if "ts" in e), "negative ts"
tracks = collections.defaultdict(list)
for e in ev:
    if e.get("ph") == "X":
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
for k, v in tracks.items():  # Perfetto keeps slices that nest or follow; not partial overlaps
    v.sort(key=lambda x: (x[0], -x[1]))
    stack = []
    for a, b in v:
        while stack and stack[-1] <= a:
            stack.pop()
        assert not stack or b <= stack[-1] + 1e-6, f"partial overlap on {k}"
        stack.append(b)
EOF
done
python3 - "$T/overlap.tally.json" <<'EOF' && ok "overlap: all 5 kernels and their flows kept" || bad "overlap: kernels or flows lost"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
k = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
f = [e for e in ev if e.get("ph") == "f"]
assert len(k) == 5 and len({e["tid"] for e in k}) > 1, (len(k),)
assert {(e["pid"], e["tid"]) for e in f} <= {(e["pid"], e["tid"]) for e in k} and len(f) == 5
EOF

# ---- writers replace only regular files, never through a link --------------------------------
echo precious >"$T/victim"
ln -s "$T/victim" "$T/link.json"
ln -s "$T/nowhere" "$T/dangling.json"
run "export --force onto a symlink" 2 10 256 "$TALLY" export -f chrome --force -o "$T/link.json" "$T/tiny.tally"
has "export: says it is a link" "symbolic link" "$T/err"
[ "$(cat "$T/victim")" = precious ] && [ -L "$T/link.json" ] && ok "export: link and target intact" || bad "export: link followed"
run "export onto a dangling symlink" 2 10 256 "$TALLY" export -f chrome -o "$T/dangling.json" "$T/tiny.tally"
[ ! -e "$T/nowhere" ] && ok "export: dangling target not created" || bad "export: created through a link"
run "sqlite --force onto a symlink" 2 10 256 "$TALLY" export -f sqlite --force -o "$T/link.json" "$T/tiny.tally"
run "export --force onto a FIFO" 2 10 256 "$TALLY" export -f chrome --force -o "$T/fifo.tally" "$T/tiny.tally"
[ -p "$T/fifo.tally" ] && ok "export: FIFO left alone" || bad "export: FIFO replaced"
if mknod "$T/null" c 1 3 2>/dev/null; then
	run "export --force onto a device" 2 10 256 "$TALLY" export -f chrome --force -o "$T/null" "$T/tiny.tally"
	[ -c "$T/null" ] && ok "export: device left alone" || bad "export: device replaced"
fi
mkdir "$T/csvdir" && ln -s "$T/victim" "$T/csvdir/kernel.csv"
run "csv --force with a symlink inside" 2 10 256 "$TALLY" export -f csv --force -o "$T/csvdir" "$T/tiny.tally"
[ "$(cat "$T/victim")" = precious ] && ok "csv: link target intact" || bad "csv: wrote through a link"
echo old >"$T/old.json"
run "export --force onto a regular file" 0 10 256 "$TALLY" export -f chrome --force -o "$T/old.json" "$T/tiny.tally"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/old.json" && ok "export: regular file replaced" || bad "export: not replaced"
ls -a "$T" | grep -q "tally-tmp" && bad "a temporary file was left behind" || ok "no temporary file left"
run "merge --force onto a symlink" 2 10 256 "$TALLY" merge --force -o "$T/link.json" "$T/tiny.tally"
[ "$(cat "$T/victim")" = precious ] && ok "merge: target intact" || bad "merge: wrote through a link"

# stats -o: no overwrite without --force, never its own input
echo keep >"$T/report.txt"
run "stats -o existing" 2 10 256 "$TALLY" stats -o "$T/report.txt" "$T/tiny.tally"
[ "$(cat "$T/report.txt")" = keep ] && ok "stats -o: not overwritten" || bad "stats -o: overwritten"
run "stats -o existing --force" 0 10 256 "$TALLY" stats --force -o "$T/report.txt" "$T/tiny.tally"
has "stats -o --force: written" "cuda_gpu_kern_sum" "$T/report.txt"
cp "$T/tiny.tally" "$T/input.tally"
run "stats -o its input" 2 10 256 "$TALLY" stats --force -o "$T/input.tally" "$T/input.tally"
cmp -s "$T/input.tally" "$T/tiny.tally" && ok "stats -o: input intact" || bad "stats -o: input overwritten"
run "export -o its input" 2 10 256 "$TALLY" export -f chrome --force -o "$T/input.tally" "$T/input.tally"
run "compare -o existing" 2 10 256 "$TALLY" compare -o "$T/report.txt" "$T/tiny.tally" "$T/lossy.tally"
run "compare --force -o a symlink" 2 10 256 "$TALLY" compare --force -o "$T/link.json" "$T/tiny.tally" "$T/lossy.tally"
[ "$(cat "$T/victim")" = precious ] && ok "compare: link target intact" || bad "compare: wrote through a link"
run "compare -o its input" 2 10 256 "$TALLY" compare --force -o "$T/input.tally" "$T/input.tally" "$T/lossy.tally"
cmp -s "$T/input.tally" "$T/tiny.tally" && ok "compare -o: input intact" || bad "compare -o: input overwritten"

# tally record preloads libtally.so into programs that are not sanitized: as test-exitpath.sh does
[ $asan = 1 ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"

# record -f: a symlink at the output is refused, its target untouched
ln -s "$T/victim" "$T/link.tally"
run "record -f onto a symlink" 2 20 512 "$TALLY" record --no-checks -f -o "$T/link.tally" -- true
[ "$(cat "$T/victim")" = precious ] && [ -L "$T/link.tally" ] && ok "record -f: link and target intact" ||
	bad "record -f: truncated a link's target"

# ---- options --------------------------------------------------------------------------------
for r in 0..3 all 5-1 "0 1" "" "1,,2" "-1" "0x1"; do
	run "--ranks '$r' refused" 2 5 256 "$TALLY" env --ranks "$r"
done
for r in 0 0,4-7 3-3 "1,2,10-12"; do
	run "--ranks '$r' taken" 0 5 256 "$TALLY" env --ranks "$r"
done
for d in nan inf -1 1e400 " 5" 0x10; do
	run "--duration '$d' refused" 2 5 256 "$TALLY" env --duration "$d"
done
run "--duration 2.5 taken" 0 5 256 "$TALLY" env --duration 2.5
LONG=$(python3 -c 'print("r" * 300)')
LONG=$LONG run "a %q{} name over 255 bytes" 2 5 256 "$TALLY" env -o "$T/x-%q{LONG}.tally"
has "%q{}: says why" "would be" "$T/err"
LONG=$LONG run "record preflight: long name" 2 20 512 "$TALLY" record --no-checks -o "$T/x-%q{LONG}.tally" -- true

# tally env escapes what it prints: parse it back
mkdir -p "$T/we\"ird\\dir"
(cd "$T/we\"ird\\dir" && "$TALLY" env --format k8s -o 'a"b\c$d.tally') >"$T/k8s.yaml"
python3 - "$T/k8s.yaml" "$T/we\"ird\\dir/a\"b\\c\$d.tally" <<'EOF' && ok "env k8s: YAML parses back" || bad "env k8s: YAML"
import sys, yaml
env = {e["name"]: e["value"] for e in yaml.safe_load(open(sys.argv[1]))["env"]}
assert env["TALLY_OUTPUT"] == sys.argv[2], env["TALLY_OUTPUT"]
EOF
(cd "$T/we\"ird\\dir" && "$TALLY" env --format docker -o 'a"b\c$d.tally') >"$T/docker.env"
python3 - "$T/docker.env" "$T/we\"ird\\dir/a\"b\\c\$d.tally" <<'EOF' && ok "env docker: ENV lines parse back" || bad "env docker"
import sys
def docker_word(s):  # a Dockerfile double-quoted word: a backslash takes the next byte as it is
    assert s[0] == '"' and s.rstrip("\n")[-1] == '"', s
    out, i, s = [], 1, s.rstrip("\n")[:-1]
    while i < len(s):
        if s[i] == "\\":
            i += 1
        elif s[i] in '"$':
            raise SystemExit(f"unescaped {s[i]} in {s}")
        out.append(s[i])
        i += 1
    return "".join(out)
for line in open(sys.argv[1]):
    if line.startswith("ENV TALLY_OUTPUT="):
        value = docker_word(line[len("ENV TALLY_OUTPUT="):])
        assert value == sys.argv[2], value
        break
else:
    raise SystemExit("no TALLY_OUTPUT")
EOF
mkdir -p "$T/new
line"
(cd "$T/new
line" && bounded 5 256 "$TALLY" env --format docker >"$T/out" 2>"$T/err")
[ $? = 2 ] && ok "env docker: a newline is refused" || bad "env docker: newline"

# record --json: never into the program's standard output
run "record --json" 0 20 512 "$TALLY" record --no-checks --json -o "$T/r.tally" -- echo hello
[ "$(cat "$T/out")" = hello ] && ok "record --json: stdout is the program's" || bad "record --json: mixed into stdout"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/err" && ok "record --json: JSON on stderr" || bad "record --json: stderr"
run "record --json=FILE" 0 20 512 "$TALLY" record --no-checks --json="$T/sum.json" -o "$T/r.tally" -- true
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "exit_status" in d' "$T/sum.json" &&
	ok "record --json=FILE: parses" || bad "record --json=FILE"

# the summary lists every file (no limit of 256), and does not contradict itself
run "record: 300 files" 0 30 512 "$TALLY" record --no-checks -o "$T/r.tally" -- sh -c \
	'i=0; while [ $i -lt 300 ]; do echo "start $((100000 + i)) /nonexistent/$i.tally" >>"$TALLY_MANIFEST"; i=$((i + 1)); done'
has "record: all 300 listed" "300 file(s) written" "$T/err"
[ "$(grep -c '/nonexistent/' "$T/err")" = 300 ] && ok "record: 300 lines" || bad "record: $(grep -c '/nonexistent/' "$T/err") lines"
run "record: a refusal" 0 20 512 "$TALLY" record --no-checks -o "$T/r.tally" -- sh -c \
	'echo "off 4242 rank not in TALLY_RANKS=1: not recorded" >>"$TALLY_MANIFEST"'
has "record: the refusal shown" "not recorded" "$T/err"
hasnt "record: no contradicting reason" "never initialised CUDA" "$T/err"

finish
