#!/bin/sh
# Python call stacks on the CPU: a real python3 launches through the stand-in CUPTI from known
# functions at known lines (pystacks.py says which, from inspect), with and without the GIL;
# every launch's innermost user frame in the trace must name them.  With TALLY_PYTHON_STACKS=gil
# (public API only) launches made without the GIL must carry no stack.
# Usage: test-pystacks.sh TALLY FAKECUPTI SRCDIR
set -u
. "$(dirname "$0")/../lib.sh"
# Under the sanitizer builds libtally.so is preloaded ahead of the sanitizer runtime (and python3
# is not built with it): as test-exitpath.sh does.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
TALLY=$1
export TALLY_CUPTI_PATH=$2
SRC=$3
command -v python3 >/dev/null 2>&1 || skip "no python3"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
check() { # MODE: "" (frames read in place) or gil (public API, threads holding the GIL only)
rm -f "$T"/py.*
# --python-stacks sets TALLY_PYTHON_STACKS=1; the gil mode is the variable's own value
flag=--python-stacks mode=1
[ "$1" = gil ] && flag="" mode=gil
TALLY_PYTHON_STACKS=$mode "$TALLY" record $flag -o "$T/py.tally" -- \
	python3 "$SRC/pystacks.py" "$T/expected.json" "${1%-fallback}" \
	>"$T/out" 2>&1 || { cat "$T/out"; echo "FAIL record"; return 1; }
"$TALLY" export -f chrome -o "$T/py.json" "$T/py.tally" >/dev/null 2>&1 || { echo "FAIL export"; return 1; }
"$TALLY" stats -r cuda_kern_stack_sum --format csv "$T/py.tally" >"$T/stats.csv" 2>&1 || { echo "FAIL stats"; return 1; }
python3 - "$T/expected.json" "$T/py.json" "$T/stats.csv" <<'PY'
import collections, csv, json, sys
want = json.load(open(sys.argv[1]))
events = json.load(open(sys.argv[2]))["traceEvents"]
launches = [e for e in events if e.get("cat") == "cuda_runtime"]
got = collections.Counter(e["args"].get("launched_from") for e in launches)
exp = collections.Counter()
for w in want["with_stack"]:
    exp["%s (%s:%d)" % (w["func"], w["file"], w["line"])] += w["n"]
if want["without_stack"]:
    exp[None] = want["without_stack"]
fail = got != exp
print("launches by innermost user frame:", dict(got))
if fail:
    print("FAIL: want", dict(exp))
# the stats report: kernel instances per user frame, the same counts
rows = [r for r in csv.reader(l for l in open(sys.argv[3]) if l.strip() and not l.startswith("#"))]
head = rows[0] if rows else []
frames = {r[head.index("Location")]: int(r[head.index("Instances")]) for r in rows[1:]
          if len(r) == len(head) and r[head.index("By")] == "frame"}
exp_frames = {k if k else "[no stack]": v for k, v in exp.items()}
if frames != exp_frames:
    print("FAIL stats: got", frames, "want", exp_frames)
    fail = True
# the 50 launches of gamma's loop share one stack
stacks = set(e["args"].get("stack") for e in launches if "gamma" in (e["args"].get("launched_from") or ""))
if len(stacks) != 1:
    print("FAIL: gamma's loop has %d stacks" % len(stacks))
    fail = True
sys.exit(1 if fail else 0)
PY
}
check "" && ok "python stacks (read in place) name the launching functions and lines, with or without the GIL" ||
	bad "python stacks (in place)"
check gil && ok "python stacks (TALLY_PYTHON_STACKS=gil) name them where the GIL is held, and only there" ||
	bad "python stacks (gil)"
# A CPython whose layout is not the one expected: the validation refuses it (no crash) and the
# collector falls back to the public API, as in the gil mode.
TALLY_TEST_PYFRAMES_SKEW=8 check gil-fallback &&
	ok "a wrong frame layout is refused without harm: stacks where the GIL is held only" ||
	bad "python stacks (wrong layout)"
finish
