#!/bin/sh
# Native call stacks on the CPU: fakenative launches from three functions and prints their names,
# the line of each launching call and the counts; after symbolization (libdw, at read time) each
# launch's innermost user frame must name that function, file and line.  GCC clones them
# (solver_step.constprop.0), one has a C++ name (layer_norm(unsigned int), whose clone demangles
# with a " [clone .constprop.0]") and launches through an inlined helper: the name is the whole
# function's, without the clone's suffix, and the line is the caller's, not the helper's.
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
"$TALLY" record --native-stacks -o "$T/n.tally" -- "$APP" >"$T/out" 2>"$T/err" ||
	{ cat "$T/err"; bad "record"; finish; }
"$TALLY" stats -r cuda_kern_stack_sum --format csv "$T/n.tally" >"$T/stats.csv" 2>&1 || { bad "stats"; finish; }
python3 - "$T/out" "$T/stats.csv" <<'PY'
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
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] && ok "native stacks, symbolized, name the launching functions and lines" || bad "native stacks"
finish
