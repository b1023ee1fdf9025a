#!/bin/sh
# Native call stacks on the CPU: fakenative launches from three functions and prints their names,
# the line of each launching call and the counts; after symbolization (libdw, at read time) each
# launch's innermost user frame must name that function, file and line.  GCC clones them
# (solver_step.constprop.0), one has a C++ name (layer_norm(unsigned int), whose clone demangles
# with a " [clone .constprop.0]") and launches through an inlined helper: the name is the whole
# function's, without the clone's suffix, and the line is the caller's, not the helper's.
# The stand-in CUPTI's frames (the callback's callers) are not recorded: each stack starts at the
# launching function.
# Then the same trace read with libdw hidden from the loader (a mount namespace puts /dev/null
# over libdw.so.1), as on machines without elfutils: the frames are named from the ELF symbol
# tables, each as libdw named it, without file:line; and with the separate debug files hidden
# too (/usr/lib/debug), a frame in a local function of a stripped library (glibc's
# __libc_start_call_main, absent from .dynsym) is left unnamed, never given another function's
# name.
# Usage: test-nativestacks.sh TALLY FAKENATIVE FAKECUPTI
set -u
. "$(dirname "$0")/../lib.sh"
# Under the sanitizer builds libtally.so is preloaded ahead of the sanitizer runtime (and python3
# is not built with it): as test-exitpath.sh does.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
TALLY=$1 APP=$2
export TALLY_CUPTI_PATH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# TALLY_SYMBOLS_TIMEOUT=0: no names from tally record, so that every name below is the reader's
# own (test-buildids.sh tests record's names)
TALLY_SYMBOLS_TIMEOUT=0 "$TALLY" record --native-stacks -o "$T/n.tally" -- "$APP" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err"; bad "record"; finish; }
"$TALLY" stats -r cuda_kern_stack_sum --format csv "$T/n.tally" >"$T/stats.csv" 2>&1 || { bad "stats"; finish; }
python3 - "$T/out" "$T/stats.csv" "$(basename "$TALLY_CUPTI_PATH")" <<'PY'
import csv, re, sys
want = {}
for m in re.finditer(r"^(\w+) (\d+) (\d+)$", open(sys.argv[1]).read(), re.M):
    line, n = want.get(m.group(1), (int(m.group(2)), 0))
    want[m.group(1)] = (line, n + int(m.group(3)))
rows = [r for r in csv.reader(l for l in open(sys.argv[2]) if l.strip() and not l.startswith("#"))]
head = rows[0]
frames = {r[head.index("Location")]: int(r[head.index("Instances")]) for r in rows[1:]
          if r[head.index("By")] == "frame"}
print("frames:", frames)
fail = len(frames) != len(want) or len(want) != 3
for func, (line, n) in want.items():
    hit = [k for k, v in frames.items()
           if (k.startswith(func + " (") or k.startswith(func + "(unsigned int) (")) and
           k.endswith("fakenative.c:%d)" % line) and v == n]
    if len(hit) != 1:
        print("FAIL: no frame '%s (...fakenative.c:%d)' with %d launches" % (func, line, n))
        fail = True
stacks = [r[head.index("Location")].split(" <- ") for r in rows[1:] if r[head.index("By")] == "stack"]
cupti = [f for st in stacks for f in st if sys.argv[3] in f]
if cupti or len(stacks) != 3:
    print("FAIL: %d stacks, CUPTI's frames in them: %s" % (len(stacks), cupti[:3]))
    fail = True
for st in stacks:
    if not any(st[0].startswith(f + " (") or st[0].startswith(f + "(unsigned int) (") for f in want):
        print("FAIL: a stack starts at %s, not at a launching function" % st[0])
        fail = True
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] && ok "native stacks, symbolized, name the launching functions and lines; no CUPTI frame" ||
	bad "native stacks"

# The same trace, libdw hidden (and then the debug files too): names from the ELF symbol tables.
libdw=$(ldconfig -p 2>/dev/null | sed -n 's/.*libdw\.so\.1 .*=> //p')
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null || [ -z "$libdw" ]; then
	skipped "reading without libdw: needs root, a mount namespace and an installed libdw.so.1"
	finish
fi
mkdir -p "$T/empty"
without() { # HIDE-DEBUG OUT: tally stats with libdw (and /usr/lib/debug when HIDE-DEBUG=1) hidden
	unshare -m sh -c 'for l in $1; do mount --bind /dev/null "$l" || exit 90; done
		[ "$2" != 1 ] || [ ! -d /usr/lib/debug ] || mount --bind "$3" /usr/lib/debug || exit 90
		exec "$4" stats -r cuda_kern_stack_sum --format csv "$5"' sh "$libdw" "$1" "$T/empty" \
		"$TALLY" "$T/n.tally" >"$2" 2>"$2.err"
}
without 0 "$T/elf.csv"
without 1 "$T/dynsym.csv"
python3 - "$T/stats.csv" "$T/elf.csv" "$T/elf.csv.err" "$T/dynsym.csv" <<'PY'
import csv, re, sys
def stacks(path):
    rows = [r for r in csv.reader(l for l in open(path) if l.strip() and not l.startswith("#"))]
    h = rows[0]
    return sorted(r[h.index("Location")].split(" <- ") for r in rows[1:] if r[h.index("By")] == "stack")
def name(label):  # "func (where)" -> func, without a symbol version (@@GLIBC_2.34); "module+0x1f" -> None
    m = re.match(r"^(.*) \([^()]*\)$", label)
    return m.group(1).split("@")[0] if m else None
dw, elf, dyn = stacks(sys.argv[1]), stacks(sys.argv[2]), stacks(sys.argv[4])
fail = False
if "without file:line" not in open(sys.argv[3]).read():
    print("FAIL: no warning that lines need libdw")
    fail = True
if len(elf) != len(dw) or any(len(a) != len(b) for a, b in zip(dw, elf)):
    sys.exit("FAIL: the stacks differ in shape without libdw")
named = same = unnamed = 0
for a, b, c in zip(dw, elf, dyn):
    for fa, fb, fc in zip(a, b, c):
        if ".c:" in fa and not re.search(r" \([^()/]*\)$", fb):
            print("FAIL: without libdw '%s' still has a file:line or no module" % fb)
            fail = True
        if name(fb) != name(fa):
            print("FAIL: libdw says %s, the ELF symbol tables %s" % (fa, fb))
            fail = True
        named += name(fb) is not None
        # debug files hidden too: the same name, or none; never another function's
        if name(fc) is not None and name(fc) != name(fa):
            print("FAIL: .dynsym only names %s as %s" % (fa, fc))
            fail = True
        same += name(fc) == name(fa)
        unnamed += name(fc) is None
print("without libdw: %d frames named as libdw names them; .dynsym only: %d the same, %d unnamed"
      % (named, same, unnamed))
sys.exit(1 if fail or not named else 0)
PY
[ $? -eq 0 ] && ok "without libdw: every frame named from the ELF symbol tables as libdw names it; none misnamed" ||
	bad "native frames without libdw"
finish
