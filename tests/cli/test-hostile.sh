#!/bin/sh
# Hostile and odd inputs (docs/format.md "Limits", docs/export.md "Safe outputs"): crafted traces
# made by tally-craft, FIFOs, symbolic links and devices at -o, odd option values.  Every reader
# run is bounded in time and memory here, so that a regression fails instead of hanging.
# Issue 21's cases each carry their item number ("item N").
# Usage: test-hostile.sh TALLY CRAFT SRCDIR TESTSRC FAKEAPP FAKECUPTI NO_FALLOCATE
set -u
TALLY=$1 CRAFT=$2 SRC=$3 TESTSRC=$4 APP=$5 FAKECUPTI=$6 NO_FALLOCATE=$7
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
craft() { "$CRAFT" "$1" "$T/$1.tally" ${2+"$2"} || bad "tally-craft $1"; }
# raw FILE: does FILE hold a character a terminal would obey (text.h's rule), or invalid UTF-8?
raw() {
	python3 - "$1" <<'EOF'
import sys
d = open(sys.argv[1], "rb").read().replace(b"\r\n", b"\n")  # script(1) ends lines with CR LF
t = d.decode("utf-8", "replace")
bidi = {0x61C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
        0x2066, 0x2067, 0x2068, 0x2069}
bad = [c for c in t if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F
       or ord(c) in bidi or c == "\ufffd"]
sys.exit(0 if bad else 1)
EOF
}
no_raw() { # name file
	if raw "$2"; then
		bad "$1: a raw control or invalid UTF-8 in $2"
		head -c 600 "$2" | od -c | head
	else
		ok "$1"
	fi
}
# on_tty FILE CMD...: CMD on a terminal (script(1) gives it one); what the terminal got in FILE
on_tty() {
	out=$1
	shift
	script -qec "$(printf "'%s' " "$@")" /dev/null >"$out" 2>&1
}

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
cp "$SRC/data/gen-tiny.tally" "$T/tiny.tally" && cp "$SRC/data/gen-lossy.tally" "$T/lossy.tally"
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

# ---- a string defined after records named it: damage, and one name in every reader ----------
# (the writer defines every id before its first use; before, cuda_gpu_kern_sum named all 5
# kernels "[string 2 lost]" while cuda_gpu_trace named the last 2 "late_name()")
craft strings-late
run "strings late: check" 1 5 256 "$TALLY" check "$T/strings-late.tally"
has "strings late: the late STRINGS chunk is damage" "bad-payload: bytes" "$T/out"
run "strings late: stats" 1 5 256 "$TALLY" stats -r cuda_gpu_kern_sum -f csv "$T/strings-late.tally"
has "strings late: stats, 5 kernels under one name" ",5,3000.0,.*,\[string 2 lost\]$" "$T/out"
run "strings late: gpu trace" 1 5 256 "$TALLY" stats -r cuda_gpu_trace -f csv "$T/strings-late.tally"
[ "$(grep -c ',\[string 2 lost\]$' "$T/out")" = 5 ] && hasnt "strings late: gpu trace, the same name for all 5" \
	"late_name" "$T/out" || { bad "strings late: gpu trace names"; cat "$T/out"; }
run "strings late: chrome" 0 5 256 "$TALLY" export -f chrome -o "$T/sl.json" "$T/strings-late.tally"
python3 - "$T/sl.json" <<'EOF2' && ok "strings late: chrome, 5 kernels under the same name" || bad "strings late: chrome names"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["name"] for e in ev if e.get("cat") == "kernel"]
assert len(names) == 5 and set(names) == {"[string 2 lost]"}, names
EOF2

# ---- time starts at the earliest of session start and first record ---------------------------
craft early-records
craft overlap
for f in "$T/early-records.tally" "$T/overlap.tally" "$SRC/data/gen-tiny.tally" "$SRC/data/gen-lossy.tally"; do
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

# ---- item 1: stack and frame ids are paid for by the file's bytes ----------------------------
craft stacks-bomb
run "item 1: stacks-bomb: check" 1 10 256 "$TALLY" check "$T/stacks-bomb.tally"
has "item 1: stacks-bomb: the chunks named damaged" "bad-payload" "$T/out"
run "item 1: stacks-bomb: stats" 1 10 256 "$TALLY" stats -r all "$T/stacks-bomb.tally"
run "item 1: stacks-bomb: merge" 0 10 256 "$TALLY" merge -o "$T/sb-m.tally" "$T/stacks-bomb.tally"
run "item 1: stacks-bomb: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/sb.json" "$T/stacks-bomb.tally"
run "item 1: stacks-bomb: sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/sb.sqlite" "$T/stacks-bomb.tally"

# ---- item 2: a module path is opened only when it is a regular file, never waited on ---------
mkfifo "$T/module-fifo"
truncate -s 5G "$T/module-huge" # sparse: a regular file past the 4 GiB a module may be
for m in "$T/module-fifo" /dev/zero "$T/module-huge"; do
	n=$(basename "$m")
	craft module "$m"
	mv "$T/module.tally" "$T/mod-$n.tally"
	run "item 2: module $n: stats by stack" 0 10 512 "$TALLY" stats -r cuda_kern_stack_sum "$T/mod-$n.tally"
	has "item 2: module $n: frame as module+offset" "$n+0x401234" "$T/out"
	run "item 2: module $n: chrome" 0 10 512 "$TALLY" export -f chrome -o "$T/mod-$n.json" "$T/mod-$n.tally"
	run "item 2: module $n: sqlite" 0 10 512 "$TALLY" export -f sqlite -o "$T/mod-$n.sqlite" "$T/mod-$n.tally"
	run "item 2: module $n: report" 0 20 512 "$TALLY" report -q -o "$T/mod-$n.html" "$T/mod-$n.tally"
done

# ---- item 5: a side that could not be read is UNUSABLE, never SAME or DIFFERS ----------------
craft header-only
craft header-junk
for c in header-only header-junk resync-bomb; do
	run "item 5: compare $c against a good trace" 5 10 256 "$TALLY" compare "$T/$c.tally" "$T/tiny.tally"
	has "item 5: compare $c: UNUSABLE" "UNUSABLE" "$T/out"
	[ $c = resync-bomb ] && continue # 4 MiB of headers: once is enough under a sanitizer
	run "item 5: compare $c with itself" 5 10 256 "$TALLY" compare -f json "$T/$c.tally" "$T/$c.tally"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["verdict"]=="unusable" and not d["a"]["timing_usable"] else 1)' "$T/out" &&
		ok "item 5: compare $c: json verdict unusable" || bad "item 5: compare $c json"
done

# ---- item 6: no writer replaces an input, however it is named -------------------------------
mkdir -p "$T/in6"
cp "$T/tiny.tally" "$T/in6/a.tally"
ln "$T/in6/a.tally" "$T/hard6.tally"
cp "$T/tiny.tally" "$T/kernel.csv" # a trace named like a CSV output, given as a file
for out in "$T/in6/a.tally" "$T/hard6.tally"; do
	w=$(basename "$out")
	run "item 6: chrome --force -o $w, input the directory" 2 10 256 "$TALLY" export -f chrome --force -o "$out" "$T/in6"
	has "item 6: chrome -o $w: says it is an input" "is an input" "$T/err"
	run "item 6: sqlite --force -o $w" 2 10 256 "$TALLY" export -f sqlite --force -o "$out" "$T/in6"
	run "item 6: stats --force -o $w" 2 10 256 "$TALLY" stats --force -o "$out" "$T/in6"
	run "item 6: compare --force -o $w" 2 10 256 "$TALLY" compare --force -o "$out" "$T/in6" "$T/tiny.tally"
	run "item 6: report --force -o $w" 2 10 256 "$TALLY" report -q --force -o "$out" "$T/in6"
	run "item 6: merge --force -o $w" 2 10 256 "$TALLY" merge --force -o "$out" "$T/in6"
done
run "item 6: csv --force -o DIR holding an input" 2 10 256 "$TALLY" export -f csv --force -o "$T" "$T/kernel.csv"
has "item 6: csv: the input inside named" "kernel.csv: is an input" "$T/err"
cmp -s "$T/in6/a.tally" "$T/tiny.tally" && cmp -s "$T/kernel.csv" "$T/tiny.tally" &&
	ok "item 6: every input intact" || bad "item 6: an input was overwritten"

# ---- item 7: column widths capped, names last, output a small multiple of the input ----------
craft long-name
insize=$(wc -c <"$T/long-name.tally")
run "item 7: long name: cuda_api_trace" 0 20 512 "$TALLY" stats -r cuda_api_trace "$T/long-name.tally"
[ "$(wc -c <"$T/out")" -lt $((insize * 8)) ] && ok "item 7: table within 8x its input ($(wc -c <"$T/out") bytes from $insize)" ||
	bad "item 7: table is $(wc -c <"$T/out") bytes from $insize"
has "item 7: the table says texts were cut" "text(s) cut" "$T/out"
has "item 7: and a warning says names were cut" "longer than 4096 bytes are cut" "$T/err"
grep -m1 "Start (ns)" "$T/out" | grep -q " Name *$" && ok "item 7: Name is the last column" || bad "item 7: Name not last"
for f in csv json; do
	run "item 7: long name: cuda_api_trace -f $f" 0 20 512 "$TALLY" stats -r cuda_api_trace -f $f "$T/long-name.tally"
	[ "$(wc -c <"$T/out")" -lt $((insize * 20)) ] && ok "item 7: -f $f within 20x its input" || bad "item 7: -f $f is $(wc -c <"$T/out") bytes"
done
run "item 7: long name: chrome" 0 20 512 "$TALLY" export -f chrome -o "$T/ln.json" "$T/long-name.tally"
[ "$(wc -c <"$T/ln.json")" -lt $((insize * 20)) ] && ok "item 7: chrome within 20x its input" || bad "item 7: chrome is $(wc -c <"$T/ln.json") bytes"
run "item 7: long name: csv export" 0 20 512 "$TALLY" export -f csv -o "$T/ln-csv" "$T/long-name.tally"
[ "$(cat "$T/ln-csv"/*.csv | wc -c)" -lt $((insize * 20)) ] && ok "item 7: csv export within 20x its input" || bad "item 7: csv export too big"

# ---- item 8: one escaping rule for whatever reaches a terminal ------------------------------
craft escapes
run "item 8: check" 0 10 256 "$TALLY" check "$T/escapes.tally"
no_raw "item 8: check prints nothing raw" "$T/out"
has "item 8: check: U+202E escaped" '\\xe2\\x80\\xae' "$T/out"
run "item 8: stats tables" 0 10 256 "$TALLY" stats -r all "$T/escapes.tally"
no_raw "item 8: stats tables print nothing raw" "$T/out"
has "item 8: stats: the raw 0x9B byte escaped" '\\x9b31m' "$T/out"
run "item 8: compare tables" 0 10 256 "$TALLY" compare "$T/escapes.tally" "$T/escapes.tally"
no_raw "item 8: compare prints nothing raw" "$T/out"
run "item 8: stats json" 0 10 256 "$TALLY" stats -r all -f json "$T/escapes.tally"
no_raw "item 8: json: controls as \\u escapes" "$T/out"
python3 -c 'import json,sys; s=json.dumps(json.load(open(sys.argv[1])), ensure_ascii=False); sys.exit(0 if "\u202e" in s and "\u009b" in s else 1)' "$T/out" &&
	ok "item 8: json: the same text once decoded" || bad "item 8: json text changed"
run "item 8: csv to a file" 0 10 256 "$TALLY" stats -r all -f csv "$T/escapes.tally"
raw "$T/out" && ok "item 8: csv to a file stays data" || bad "item 8: csv to a file was escaped"
if command -v script >/dev/null 2>&1; then
	on_tty "$T/tty-csv" "$TALLY" stats -r all -f csv "$T/escapes.tally"
	no_raw "item 8: csv on a terminal escaped" "$T/tty-csv"
	has "item 8: csv on a terminal: BS escaped" '\\x08' "$T/tty-csv"
	on_tty "$T/tty-cmp" "$TALLY" compare -f csv "$T/escapes.tally" "$T/escapes.tally"
	no_raw "item 8: compare csv on a terminal escaped" "$T/tty-cmp"
else
	skipped "item 8: no script(1) to give tally a terminal"
fi
mkdir -p "$T/esc-dir"
cp "$T/stacks-bomb.tally" "$T/esc-dir/$(printf 'x\033]0;title\007\342\200\256.tally')"
run "item 8: a file name from a directory, in a warning" 1 10 256 "$TALLY" stats "$T/esc-dir"
no_raw "item 8: paths from a directory escaped (stderr)" "$T/err"
no_raw "item 8: paths from a directory escaped (report)" "$T/out"

# ---- item 9: figures that are right or say why they are not ---------------------------------
craft memory
run "item 9: memory: usage and sizes" 0 10 256 "$TALLY" stats -r cuda_gpu_mem_usage,cuda_gpu_mem_size_sum -f json "$T/memory.tally"
python3 - "$T/out" <<'EOF' && ok "item 9: only frees: no Peak At; byte totals saturate and say so" || { bad "item 9: memory figures"; head -c 3000 "$T/out"; }
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["name"]: x for x in d["reports"]}
use = {row["Device"]: row for row in r["cuda_gpu_mem_usage"]["rows"]}
assert use[0]["Peak At (ns)"] is None and use[0]["Peak (B)"] == 0, use[0]  # releases only
assert use[1]["Allocated (B)"] == 2**64 - 1 and use[1]["Peak (B)"] == 2**64 - 1, use[1]  # 3 x 2^63
assert "2^64" in r["cuda_gpu_mem_usage"]["note"]
size = r["cuda_gpu_mem_size_sum"]
assert abs(size["rows"][0]["Avg (MB)"] - 2**63 / 1e6) < 1e3, size["rows"][0]  # from 128 bits
assert "2^64" in size["note"]
EOF
run "item 9: memory: sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/mem.sqlite" "$T/memory.tally"
has "item 9: sqlite says values were clamped" "SQLite's largest integer" "$T/err"
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); sys.exit(0 if db.execute("select min(bytes) from CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0] > 0 else 1)' "$T/mem.sqlite" &&
	ok "item 9: sqlite: no negative byte count" || bad "item 9: sqlite bytes negative"
craft big-ids
run "item 9: ids past 32 bits: check" 1 10 256 "$TALLY" check "$T/big-ids.tally"
has "item 9: ids past 32 bits are damage, not other ids" "bad-payload" "$T/out"
run "item 9: times past 2^63: cuda_gpu_trace" 1 10 256 "$TALLY" stats -r cuda_gpu_trace -f csv "$T/big-ids.tally"
grep -q '^-' "$T/out" && bad "item 9: a negative start" || ok "item 9: no negative start"
grep -q '^16650743073709551615,' "$T/out" && ok "item 9: the late kernel's start as it is" || bad "item 9: late start"
run "item 9: times past 2^63: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/bi.json" "$T/big-ids.tally"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; sys.exit(0 if all(x.get("ts",0)>=0 for x in e) and max(x.get("ts",0) for x in e)>1e16 else 1)' "$T/bi.json" &&
	ok "item 9: chrome ts past 2^63 ns positive" || bad "item 9: chrome ts"
run "item 9: times past 2^63: report" 0 20 512 "$TALLY" report -q -o "$T/bi.html" "$T/big-ids.tally"
grep -q '"t_max":-' "$T/bi.html" && bad "item 9: report: a negative time" || ok "item 9: report: no time wrapped negative"
run "item 9: --util-bucket 1ns" 0 10 256 "$TALLY" stats -r gpu_time_util --util-bucket 1ns "$T/tiny.tally"
has "item 9: too many buckets said" "more than 100000" "$T/out"
hasnt "item 9: not 'no GPU work'" "hold no GPU work" "$T/out"
run "item 9: --max-edits past the cap" 2 10 256 "$TALLY" compare --max-edits 100001 "$T/tiny.tally" "$T/tiny.tally"
run "item 9: --max-edits at the cap" 0 20 256 "$TALLY" compare --max-edits 100000 "$T/tiny.tally" "$T/tiny.tally"

# ---- GPU metrics (format 1.3): every reader bounded on their edges, nothing raw ---------------
craft metrics
run "metrics: check" 0 10 256 "$TALLY" check "$T/metrics.tally"
no_raw "metrics: check prints no raw host, file or label" "$T/out"
run "metrics: stats" 0 10 256 "$TALLY" stats -r all "$T/metrics.tally"
run "metrics: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/met.json" "$T/metrics.tally"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/met.json" && ok "metrics: chrome parses" || bad "metrics: chrome JSON"
run "metrics: sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/met.sqlite" "$T/metrics.tally"
run "metrics: csv" 0 10 256 "$TALLY" export -f csv -o "$T/met-csv" "$T/metrics.tally"
run "metrics: merge" 0 10 256 "$TALLY" merge -o "$T/met-m.tally" "$T/metrics.tally"
run "metrics: merged, checked" 0 10 256 "$TALLY" check "$T/met-m.tally"
run "metrics: report" 0 20 512 "$TALLY" report -q -o "$T/met.html" "$T/metrics.tally"
# the crafted gap is a loss window over the whole run: compare cannot time it
run "metrics: compare" 5 10 256 "$TALLY" compare "$T/metrics.tally" "$T/metrics.tally"

# ---- host samples (format 1.3): every reader bounded on their edges, nothing raw -------------
craft host-samples
run "host samples: check" 1 10 256 "$TALLY" check "$T/host-samples.tally"
no_raw "host samples: check prints no raw thread name" "$T/out"
has "host samples: a tid past 32 bits is damage, not another thread" "bad-payload" "$T/out"
run "host samples: stats" 1 10 256 "$TALLY" stats -r all "$T/host-samples.tally"
no_raw "host samples: stats prints nothing raw" "$T/out"
run "host samples: chrome" 0 10 256 "$TALLY" export -f chrome -o "$T/hs.json" "$T/host-samples.tally"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/hs.json" && ok "host samples: chrome parses" || bad "host samples: chrome JSON"
run "host samples: sqlite" 0 10 256 "$TALLY" export -f sqlite -o "$T/hs.sqlite" "$T/host-samples.tally"
run "host samples: csv" 0 10 256 "$TALLY" export -f csv -o "$T/hs-csv" "$T/host-samples.tally"
run "host samples: merge" 0 10 256 "$TALLY" merge -o "$T/hs-m.tally" "$T/host-samples.tally"
run "host samples: report" 0 20 512 "$TALLY" report -q -o "$T/hs.html" "$T/host-samples.tally"
run "host samples: compare (damaged: unusable)" 5 10 256 "$TALLY" compare "$T/host-samples.tally" "$T/host-samples.tally"

# ---- processes that recorded nothing (format 1.4): names and counts bounded, nothing raw -----
craft processes
run "processes: check" 0 10 256 "$TALLY" check "$T/processes.tally"
no_raw "processes: check prints no raw process name" "$T/out"
has "processes: totals that overflow saturate" "18446744073709551615 more of" "$T/out"
has "processes: a name cut to a comm's 15 bytes" "a-name-longer-t " "$T/out"
run "processes: check --json" 0 10 256 "$TALLY" check --json "$T/processes.tally"
python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["files"][0]["sections"][0]["sampling"]["quiet_processes"]; sys.exit(len(q["by_name"]) > 64)' "$T/out" &&
	ok "processes: at most 64 names kept" || bad "processes: the names are not bounded"
run "processes: merge" 0 10 256 "$TALLY" merge -o "$T/pr-m.tally" "$T/processes.tally"
run "processes: merged, checked" 0 10 256 "$TALLY" check "$T/pr-m.tally"
has "processes: merge keeps them" "more of this process's tree" "$T/out"

# ---- item 11: one -o refusal, "-" is standard output, a directory is a directory ------------
echo keep >"$T/exists.out"
run "item 11: stats -o existing" 2 10 256 "$TALLY" stats -o "$T/exists.out" "$T/tiny.tally"
run "item 11: export -o existing" 2 10 256 "$TALLY" export -f chrome -o "$T/exists.out" "$T/tiny.tally"
run "item 11: merge -o existing" 2 10 256 "$TALLY" merge -o "$T/exists.out" "$T/tiny.tally"
run "item 11: compare -o existing" 2 10 256 "$TALLY" compare -o "$T/exists.out" "$T/tiny.tally" "$T/tiny.tally"
run "item 11: report -o existing" 2 10 256 "$TALLY" report -q -o "$T/exists.out" "$T/tiny.tally"
[ "$(cat "$T/exists.out")" = keep ] && ok "item 11: the existing file kept" || bad "item 11: overwritten"
(cd "$T" && bounded 20 512 "$TALLY" report -q -o - "$T/tiny.tally" >"$T/page.html" 2>"$T/err")
[ $? = 0 ] && [ ! -e "$T/-" ] && grep -q "<html" "$T/page.html" && ok "item 11: report -o - to standard output" || bad "item 11: report -o -"
run "item 11: check DIR" 0 10 256 "$TALLY" check "$T/in6"
has "item 11: check DIR reads its *.tally" "in6/a.tally" "$T/out"
for c in check stats export merge compare report control record env doctor; do
	run "item 11: $c --bogus" 2 5 256 "$TALLY" $c --bogus
	has "item 11: $c --bogus: names the command and --help" "tally $c: .*--help" "$T/err"
done

# tally record preloads libtally.so into programs that are not sanitized: as test-exitpath.sh does
[ $asan = 1 ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"

# ---- item 10: tally control never calls missing traces complete ------------------------------
export TALLY_CUPTI_PATH=$FAKECUPTI FAKEAPP_UNTRACED_OK=1
run "item 10: control of a program that records nothing" 1 60 512 "$TALLY" control --no-checks -n 1 -o "$T/ctl-true" -- true
has "item 10: says the rounds wrote no trace" "wrote no trace" "$T/out"
hasnt "item 10: never 'the traces are complete'" "traces are complete" "$T/out"
run "item 10: control of a program that cannot run" 2 60 512 "$TALLY" control --no-checks -n 3 -o "$T/ctl-none" -- "$T/no-such-program"
has "item 10: says it cannot run" "cannot run" "$T/err"
[ "$(grep -c "round [0-9]" "$T/err")" -le 1 ] && ok "item 10: stopped after the first round" || bad "item 10: went on: $(grep -c "round [0-9]" "$T/err") rounds"
hasnt "item 10: no cost figure for a program that never ran" "recording costs" "$T/out"
run "item 10: control --json, the program writing to stdout" 0 60 512 "$TALLY" control --no-checks -n 1 -o "$T/ctl-json" --json -- "$APP" exit 10
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" && ok "item 10: --json: standard output is the JSON alone" || bad "item 10: --json not clean"
has "item 10: --json: the program's output on stderr" "^launched 10 pid" "$T/err"
run "item 10: control --json=FILE" 0 60 512 "$TALLY" control --no-checks -n 1 -o "$T/ctl-jf" --json="$T/ctl.json" -- "$APP" exit 10
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["rounds_without_trace"]==0 else 1)' "$T/ctl.json" &&
	ok "item 10: --json=FILE parses" || bad "item 10: --json=FILE"
has "item 10: --json=FILE: the program's output where it was" "^launched 10 pid" "$T/out"
run "item 10: control --json=FILE onto an existing directory" 2 10 256 "$TALLY" control --no-checks -n 1 -o "$T/ctl-x" --json="$T/in6" -- true

# ---- item 8: what record and control print from names they did not choose --------------------
esc=$(printf 'r\033]0;t\007\342\200\256')
run "item 8: record: an output named with escapes" 0 30 512 "$TALLY" record --no-checks -o "$T/$esc.tally" -- "$APP" exit 10
no_raw "item 8: record: the summary escapes the name" "$T/err"
run "item 8: control: a program named with escapes" 2 30 512 "$TALLY" control --no-checks -n 1 -o "$T/ctl-esc" -- "$T/$esc"
no_raw "item 8: control: the program's name escaped" "$T/err"

# ---- item 12: a full disk ends with a final ledger that says so ------------------------------
# A small tmpfs, in a mount namespace of its own so that nothing is left mounted: 256 KiB, and a
# fakeapp run that writes about 800 KiB of trace.
full_disk() { # name fstype: records into a small file system of that type, $T/fd-NAME.json
	name=$1
	cat >"$T/fd-$name.sh" <<EOF
set -e
mkdir -p "$T/mnt-$name"
if [ $2 = tmpfs ]; then
	mount -t tmpfs -o size=256k tmpfs "$T/mnt-$name"
else
	dd if=/dev/zero of="$T/img-$name" bs=1M count=2 2>/dev/null
	mkfs.ext4 -q -F "$T/img-$name" && mount -o loop "$T/img-$name" "$T/mnt-$name"
	dd if=/dev/zero of="$T/mnt-$name/filler" bs=1k count=640 2>/dev/null || true
fi
set +e
TALLY_SLICE_MS=50 "$TALLY" record --no-checks -o "$T/mnt-$name/full.tally" -- "$APP" exit 200000 >"$T/fd-$name.out" 2>"$T/fd-$name.err"
echo \$? >"$T/fd-$name.rc"
"$TALLY" check --json "$T/mnt-$name/full.tally" >"$T/fd-$name.json" 2>&1
"$TALLY" check "$T/mnt-$name/full.tally" >"$T/fd-$name.txt" 2>&1
ls -a "$T/mnt-$name" | grep -c tally-room >"$T/fd-$name.rooms"
umount "$T/mnt-$name"
EOF
	unshare -m sh "$T/fd-$name.sh" >"$T/fd-$name.log" 2>&1
}
if unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs '$T' && umount '$T'" 2>/dev/null; then
	kinds="tmpfs"
	command -v mkfs.ext4 >/dev/null && unshare -m sh -c "dd if=/dev/zero of='$T/probe.img' bs=1M count=2 2>/dev/null && mkfs.ext4 -q -F '$T/probe.img' && mkdir -p '$T/probe' && mount -o loop '$T/probe.img' '$T/probe' && umount '$T/probe'" 2>/dev/null &&
		kinds="$kinds ext4"
	[ "$kinds" = tmpfs ] && skipped "item 12: no loop-mounted ext4 here (its way of giving the room back is not checked)"
	for k in $kinds; do
		full_disk $k $k
		[ "$(cat "$T/fd-$k.rc" 2>/dev/null)" = 0 ] && ok "item 12 ($k): the program ran to its end (exit 0)" || { bad "item 12 ($k): exit $(cat "$T/fd-$k.rc" 2>/dev/null)"; cat "$T/fd-$k.log" "$T/fd-$k.err"; }
		python3 - "$T/fd-$k.json" <<'EOF' && ok "item 12 ($k): a final ledger naming the failed writes, the bytes lost and when" || { bad "item 12 ($k): final ledger"; head -c 3000 "$T/fd-$k.json"; }
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
c = s["ledger"]["counters"]
assert s["ledger"]["final"], "no final ledger"
assert c["write_failures"] > 0 and c["write_errno"] == 28 and c["bytes_lost"] > 0, c
assert c["close_reserve_used"] == 1, c
assert 0 < c["write_first_failed_at"] <= c["write_last_failed_at"], c
assert s["close_reserve"] == 65536 and s["output_fs"] in ("tmpfs", "ext4"), s
EOF
		has "item 12 ($k): tally record says the disk filled" "the disk filled while recording" "$T/fd-$k.err"
		has "item 12 ($k): check says when" "the disk filled (ENOSPC) from +" "$T/fd-$k.txt"
		[ "$(cat "$T/fd-$k.rooms")" = 0 ] && ok "item 12 ($k): the room given back (no .tally-room left)" ||
			bad "item 12 ($k): a room file left"
	done
else
	skipped "item 12: cannot mount a small tmpfs here (unshare -m and mount need CAP_SYS_ADMIN); test-pipeline's test_write_enospc_reserved covers the writer"
fi
# A process killed before its close leaves its room: tally record removes it when the program ends.
mkdir -p "$T/killed"
run "item 12: a process killed by SIGKILL" 137 30 512 "$TALLY" record --no-checks -o "$T/killed/k.tally" -- "$APP" sigkill 100
[ -z "$(ls -a "$T/killed" | grep tally-room)" ] && ok "item 12: its room removed by tally record" || bad "item 12: a room left after SIGKILL"
# Where no room can be kept (a file system without fallocate: no-fallocate.so stands in for one),
# the trace says which file system refused, and why.
mkdir -p "$T/nofalloc"
run "item 12: no fallocate" 0 30 512 env LD_PRELOAD="$NO_FALLOCATE" "$TALLY" record --no-checks -o "$T/nofalloc/t.tally" -- "$APP" exit 100
run "item 12: no fallocate: check" 0 10 256 "$TALLY" check "$T/nofalloc/t.tally"
has "item 12: says no room could be kept, and why" "which kept no room for the final ledger (Operation not supported)" "$T/out"
unset TALLY_CUPTI_PATH FAKEAPP_UNTRACED_OK


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
