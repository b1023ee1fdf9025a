#!/bin/sh
# Names of native frames that travel (format 1.4): a trace is read on other machines as a rule,
# where the files at the modules' paths are other builds, and a name from another build is wrong
# and looks right.  twobuilds is one program built twice, its functions laid out apart, so that
# build 1's busy function crunch() lies, in build 2, inside a decoy function.
#
#   - recorded with --sample native from build 1 (the expected samples in crunch come from the
#     dump's raw addresses and nm of build 1, never from tally's names), then build 1 replaced
#     by build 2 at the same path: read without the names tally record wrote, no frame of the
#     program is named after a function of build 2; each says the build differs
#   - with the names tally record wrote (its SYMBOLS chunk), crunch is named, as many samples as
#     the raw addresses say: in stats, in an export (whose labels are made as the records stream
#     by: the names must come first), and in a merged file
#   - with --symfs DIR holding a copy of build 1 (DIR/PATH, or DIR/NAME) crunch is named; with
#     one of build 2 it still is not
#   - naming at record time cut short by its time bound: tally record says so, the trace says so
#     and its readers say so; bound 0: nothing written
#   - a libc: a trace whose module is this machine's libc at its own path, at the address of a
#     function of it, recorded (the trace says) as another build: never named; as this build:
#     named; by a 1.3 trace (no build ID): named and marked unverified; by a module that had no
#     build ID while this libc has one: another build
# Usage: test-buildids.sh TALLY TWOBUILDS-1 TWOBUILDS-2 FAKECUPTI TALLY-CRAFT TALLY-DUMP
set -u
. "$(dirname "$0")/../lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0"
TALLY=$1 B1=$2 B2=$3 CRAFT=$5 DUMP=$6
export TALLY_CUPTI_PATH=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$T/app"
APP=$T/app/prog
cp "$B1" "$APP"

# rec NAME [VAR=VALUE...]: build 1 recorded with --sample native into $T/NAME.tally
rec() {
	name=$1
	shift
	env "$@" "$TALLY" record --sample native -o "$T/$name.tally" -- "$APP" 400 \
		>"$T/$name.out" 2>"$T/$name.err" || bad "$name: record exit $? ($(tail -n 2 "$T/$name.err"))"
}
rec named
rec plain TALLY_SYMBOLS_TIMEOUT=0
rec cut TALLY_SYMBOLS_TIMEOUT=0.000000001
chunks() { "$TALLY" check -v "$1" | grep -c " SYMBOLS "; }
[ "$(chunks "$T/named.tally")" = 1 ] && [ "$(chunks "$T/plain.tally")" = 0 ] &&
	ok "tally record appends one SYMBOLS chunk; TALLY_SYMBOLS_TIMEOUT=0 none" ||
	bad "SYMBOLS chunks: $(chunks "$T/named.tally") named, $(chunks "$T/plain.tally") with 0 s"
"$TALLY" check -q "$T/named.tally" >/dev/null && ok "the named trace is COMPLETE and intact" ||
	bad "the named trace: $("$TALLY" check "$T/named.tally" | tail -n 3)"
"$DUMP" --host "$T/plain.tally" >"$T/plain.dump"
"$DUMP" --host "$T/named.tally" >"$T/named.dump"
python3 "$HERE/check-sampling.py" native "$T/plain.dump" "$APP" crunch \
	"$(sed -n 's/^crunch_cpu_ns //p' "$T/plain.out")" duration ||
	bad "the samples of build 1 are not in crunch (nothing below proves anything)"

# replaced while it runs (by a rename, as an install does): tally record, naming after the run,
# finds another build at the path, and names none of the program's frames from it
env "$TALLY" record --sample native -o "$T/swapped.tally" -- "$APP" 1500 >"$T/swapped.out" 2>"$T/swapped.err" &
rpid=$!
n=0
while [ ! -s "$T/swapped.tally" ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
cp "$B2" "$T/app/.prog.new" && mv "$T/app/.prog.new" "$APP"
wait $rpid || bad "swapped: record exit $?"
"$TALLY" check "$T/swapped.tally" | grep -q "^  symbols   .*, complete; modules of another build by then 1," &&
	ok "the program replaced while it ran: tally record says its file was another build by then" ||
	bad "replaced while running: $("$TALLY" check "$T/swapped.tally" | grep symbols)"
"$TALLY" stats -r cpu_sample_sum -f csv "$T/swapped.tally" 2>/dev/null >"$T/swapped.csv"
grep -q ",native,function,prog+0x[0-9a-f]* (build differs)" "$T/swapped.csv" &&
	! grep -Eq ",native,function,(crunch|decoy_first|decoy_second|main) \(" "$T/swapped.csv" &&
	ok "and its frames read prog+0x... (build differs), named after no function of either build" ||
	bad "replaced while running: $(grep ',native,function,' "$T/swapped.csv" | head -n 3)"

cp "$B2" "$APP" # the program file replaced by another build

# stats_csv TRACE OUT [OPTIONS...]: cpu_sample_sum as CSV, stderr in OUT.err
stats_csv() {
	trace=$1 out=$2
	shift 2
	"$TALLY" stats "$@" -r cpu_sample_sum -f csv "$trace" >"$out" 2>"$out.err" ||
		bad "stats $trace: exit $?"
}
stats_csv "$T/plain.tally" "$T/plain.csv"
stats_csv "$T/named.tally" "$T/named.csv"
mkdir -p "$T/symfs-path$T/app" "$T/symfs-name" "$T/symfs-other"
cp "$B1" "$T/symfs-path$APP"
cp "$B1" "$T/symfs-name/prog"
cp "$B2" "$T/symfs-other/prog"
stats_csv "$T/plain.tally" "$T/symfs-path.csv" --symfs "$T/symfs-path"
stats_csv "$T/plain.tally" "$T/symfs-name.csv" --symfs "$T/symfs-name"
stats_csv "$T/plain.tally" "$T/symfs-other.csv" --symfs "$T/symfs-other"
stats_csv "$T/cut.tally" "$T/cut.csv"
"$TALLY" export -q -f chrome -o "$T/named.json" "$T/named.tally" || bad "export"
"$TALLY" merge -o "$T/merged.tally" "$T/named.tally" >/dev/null 2>&1 || bad "merge"
stats_csv "$T/merged.tally" "$T/merged.csv"
"$TALLY" export -q -f chrome -o "$T/merged.json" "$T/merged.tally" || bad "export of the merge"

python3 - "$T" "$B1" "$B2" <<'PY'
import csv, re, subprocess, sys
T, b1, b2 = sys.argv[1:4]

def functions(binary):
    """(start, end, name) of every sized function of binary, from nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True).stdout
    fs = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW" and int(p[1], 16):
            fs.append((int(p[0], 16), int(p[0], 16) + int(p[1], 16), p[3]))
    return fs

def holder(fs, off):
    return next((n for s, e, n in fs if s <= off < e), None)

f1, f2 = functions(b1), functions(b2)

def offsets(trace):
    """The innermost frames' offsets in the program of a trace's samples (its raw addresses)."""
    return [int(m.group(1), 16) for m in re.finditer(r"^sample .* stack pc:prog:0x([0-9a-f]+)",
                                                      open("%s/%s.dump" % (T, trace)).read(), re.M)]

offs = offsets("plain")
in_crunch = {t: sum(holder(f1, o) == "crunch" for o in offsets(t)) for t in ("plain", "named")}
in_b2 = {}
for o in offs:
    if holder(f1, o) == "crunch":
        n = holder(f2, o)
        in_b2[n] = in_b2.get(n, 0) + 1
print("samples in the program: %d, in crunch (build 1): %s; build 2 has there: %s"
      % (len(offs), in_crunch, in_b2))
fail = False
if not in_crunch["plain"] or not in_crunch["named"] or not any(n and n.startswith("decoy") for n in in_b2):
    print("FAIL the premise: build 2 has no decoy where build 1's samples are")
    sys.exit(1)

def rows(path):
    lines = [l for l in open(path) if l.strip() and not l.startswith("#")]
    r = list(csv.reader(lines))
    h = r[0]
    return [(x[h.index("Location")], int(x[h.index("Self")])) for x in r[1:]
            if x[h.index("By")] == "function" and x[h.index("Kind")] == "native"]

names2 = {n for _, _, n in f2}

def check_never(label, path, must_differ=True):
    global fail
    bad = [(l, n) for l, n in rows(path) if re.split(r"[ (]", l)[0] in names2 and "prog" in l or
           re.split(r"[ (]", l)[0] in names2 and "twobuilds.c" in l]
    if bad:
        print("FAIL %s: frames named after build 2's functions: %s" % (label, bad[:3]))
        fail = True
    top = max(rows(path), key=lambda x: x[1])
    if must_differ and not (top[0].startswith("prog+0x") and top[0].endswith("(build differs)")):
        print("FAIL %s: the busiest frame reads %r, not prog+0x... (build differs)" % (label, top[0]))
        fail = True
    elif not bad:
        print("ok   %s: no frame named from build 2; the busiest reads %s" % (label, top[0]))

def check_crunch(label, path, trace):
    global fail
    got = [(l, n) for l, n in rows(path) if l.startswith("crunch (") and "twobuilds.c" in l]
    n, want = sum(x for _, x in got), in_crunch[trace]
    if n != want or any(l.split(" ")[0].startswith("decoy") for l, _ in rows(path)):
        print("FAIL %s: crunch has %d samples (the addresses say %d): %s" % (label, n, want, rows(path)[:4]))
        fail = True
    else:
        print("ok   %s: crunch named, %d samples as the addresses say" % (label, n))

check_never("read after the file was replaced, without record's names", T + "/plain.csv")
check_never("--symfs with a copy of build 2", T + "/symfs-other.csv")
check_never("naming at record time cut short", T + "/cut.csv")
check_crunch("with the names tally record wrote", T + "/named.csv", "named")
check_crunch("--symfs DIR, build 1 at DIR/PATH", T + "/symfs-path.csv", "plain")
check_crunch("--symfs DIR, build 1 at DIR/NAME", T + "/symfs-name.csv", "plain")
check_crunch("a merged file of the named trace", T + "/merged.csv", "named")
for j in ("named", "merged"):
    text = open("%s/%s.json" % (T, j)).read()
    if "crunch (" not in text or "decoy" in text or "(build differs)" in text:
        print("FAIL the chrome export of the %s trace: crunch %d, decoy %d, build differs %d"
              % (j, text.count("crunch ("), text.count("decoy"), text.count("(build differs)")))
        fail = True
    else:
        print("ok   the chrome export of the %s trace names crunch (names known before the records)" % j)
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] && ok "the bar's case: never a name from build 2; crunch named by record's names and --symfs" ||
	bad "names after the program file was replaced"

grep -q "build differs" "$T/plain.csv.err" && ok "stats warns that the files here are other builds" ||
	bad "no warning of other builds: $(cat "$T/plain.csv.err")"
grep -q "native frames named before the time ran out" "$T/cut.err" &&
	grep -q "named only in part" "$T/cut.csv.err" &&
	ok "cut short: tally record says so, and the trace's reader too" ||
	bad "cut short not said: record: $(cat "$T/cut.err"); stats: $(cat "$T/cut.csv.err")"
[ "$(chunks "$T/cut.tally")" = 1 ] && "$TALLY" check -q "$T/cut.tally" >/dev/null &&
	"$TALLY" check "$T/cut.tally" | grep -q "^  symbols   native frames named when recorded: 0 of [1-9].*cut: the time ran out" &&
	"$TALLY" check "$T/named.tally" | grep -q "^  symbols   .*, complete;" &&
	ok "cut short: the trace gets its SYMBOLS chunk saying so (tally check), and stays COMPLETE" ||
	bad "cut trace: $("$TALLY" check "$T/cut.tally" | grep symbols)"
"$TALLY" stats --symfs "$T/nonexistent" "$T/plain.tally" >/dev/null 2>"$T/symfs.err"
[ $? -eq 2 ] && grep -q "not a directory" "$T/symfs.err" && ok "--symfs of no directory: usage error" ||
	bad "--symfs nonexistent: $(cat "$T/symfs.err")"

# ---- a libc of this machine, as a trace recorded elsewhere names it ----
LIBC=$(ldd "$TALLY" | awk '/libc\.so/ { print $3 }')
ID=$(readelf -n "$LIBC" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
if [ -z "$LIBC" ] || [ -z "$ID" ]; then
	skipped "the libc case: no libc with a build ID found ($LIBC)"
	finish
fi
OFF=$(nm -D --defined-only "$LIBC" | awk '$2 ~ /[TW]/ && $3 ~ /^getpid(@|$)/ { print $1; exit }')
NAMES=$(nm -D --defined-only "$LIBC" | awk -v a="$OFF" '$1 == a { sub(/@.*/, "", $3); print $3 }' | sort -u | tr '\n' ' ')
SIZE=$(stat -c %s "$LIBC")
frame_of() { # the Location of cuda_kern_stack_sum's frame row, from its CSV on stdin
	python3 -c 'import csv, sys
r = list(csv.reader(l for l in sys.stdin if l.strip() and not l.startswith("#")))
print("".join(x[r[0].index("Location")] for x in r[1:] if x[r[0].index("By")] == "frame"))'
}
libc_label() { # BUILD_ID SIZE: the frame's label in cuda_kern_stack_sum
	"$CRAFT" foreign-module "$T/libc-$1.tally" "$LIBC,$1,$2,$OFF"
	"$TALLY" stats -r cuda_kern_stack_sum -f csv "$T/libc-$1.tally" 2>"$T/libc-$1.err" | frame_of
}
named_by() { # LABEL: it starts with one of the names at the address, then " ("
	for n in $NAMES; do case "$1" in "$n ("*) return 0 ;; esac; done
	return 1
}
named_by_unverified() { # LABEL: one of the names, then " [unverified] ("
	for n in $NAMES; do case "$1" in "$n [unverified] ("*) return 0 ;; esac; done
	return 1
}
other=$(echo "$ID" | tr '0-9a-f' '1-9a-f0')
got=$(libc_label "$other" "$SIZE")
[ "$got" = "$(basename "$LIBC")+0x$(printf %x $((0x$OFF))) (build differs)" ] &&
	ok "libc recorded as another build: '$got', never one of: $NAMES" ||
	bad "libc recorded as another build reads '$got'"
got=$(libc_label "$ID" "$SIZE")
named_by "$got" && ! echo "$got" | grep -q unverified && ok "libc recorded as this build: '$got'" ||
	bad "libc of this build: '$got' (names at the address: $NAMES)"
got=$(libc_label - 0)
named_by_unverified "$got" && grep -q "unverified" "$T/libc--.err" &&
	ok "libc in a 1.3 trace (no build ID): '$got', and a warning" ||
	bad "libc of a 1.3 trace: '$got' ($(cat "$T/libc--.err"))"
got=$(libc_label none "$SIZE")
case "$got" in
*"(build differs)") ok "libc recorded without a build ID, this one has one: '$got'" ;;
*) bad "a module without a build ID, a file with one: '$got'" ;;
esac
DEBUG=/usr/lib/debug/.build-id/$(echo "$ID" | cut -c1-2)/$(echo "$ID" | cut -c3-).debug
if [ -f "$DEBUG" ]; then
	"$CRAFT" foreign-module "$T/libc-gone.tally" "/nonexistent/$(basename "$LIBC"),$ID,$SIZE,$OFF"
	got=$("$TALLY" stats -r cuda_kern_stack_sum -f csv "$T/libc-gone.tally" 2>/dev/null | frame_of)
	named_by "$got" &&
		ok "libc absent at its path: named from its debug file by build ID" ||
		bad "libc absent, debug file there: '$got'"
else
	skipped "no debug file of this libc under /usr/lib/debug/.build-id"
fi
finish
