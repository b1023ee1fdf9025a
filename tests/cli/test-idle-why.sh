#!/bin/sh
# gpu_idle_why, gpu_idle_breakdown, cpu_sample_sum and osrt_sum, and the host samples and blocking
# calls of the Chrome export, on tests/data/gen-host.tally, against what the CPU test source was told
# to make (tests/support/testsrc.h, "--host"): a 150 ms idle gap before launch 50; thread 2001
# (MainThread) sampled every 1 ms from S0, on CPU at line 20 for its first 100 samples, waiting
# at line 30 after; 2002 (loader) waiting at line 55; 2003 native, 4 stacks in turn, 0.5 ms after;
# every 50th Python sample torn; clock_nanosleep (10 ms, 2001) and pthread_cond_timedwait (5 ms,
# 2002) every 20 ms.  The diagnosis's cause of idle time, on sampled.tally and on the test
# source's gap with host samples and without.  Then the four reports' time and memory on traces
# of N and 2N records.
# Usage: test-idle-why.sh TALLY TESTSRC TALLY_DUMP SRCDIR
set -u
TALLY=$1 TESTSRC=$2 DUMP=$3 SRC=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
HOST=$SRC/data/gen-host.tally

"$TALLY" stats -f json -r gpu_gaps,gpu_idle_why,gpu_idle_breakdown,cpu_sample_sum,osrt_sum \
	-r cuda_api_trace "$HOST" >"$T/s.json" || bad "stats on host.tally"
"$DUMP" "$HOST" >"$T/dump.txt" 2>&1 || bad "tally-dump on host.tally"

# The expected rows, computed from the construction and the records' own times (tally-dump),
# compared with the reports.  Each check prints its name and ok/bad.
python3 - "$T/s.json" "$T/dump.txt" >"$T/checks.txt" <<'PY'
import collections, json, re, sys

d = json.load(open(sys.argv[1]))
rep = {r["name"]: r["rows"] for r in d["reports"]}
base = d["time_base_ns"]
recs = []
for line in open(sys.argv[2]):
    kind, _, rest = line.partition(" ")
    f = dict(x.split("=", 1) for x in rest.split() if "=" in x)
    recs.append((kind, int(f["start"]), int(f["dur"]), int(f["tid"]), int(f["flags"], 0)))
# tally-dump lists the section's own times; the reports put them on the aligned timeline: the
# offset between the two is that of the first API call
offset = base + rep["cuda_api_trace"][0]["Start (ns)"] - min(t for k, t, *_ in recs if k == "runtime")
recs = [(k, t + offset, dur, tid, fl) for k, t, dur, tid, fl in recs]

def check(name, cond):
    print(("ok " if cond else "bad ") + name)

gap = [g for g in rep["gpu_gaps"] if g["Stream"] == "all"]
check("one device gap, the 150 ms idle", len(gap) == 1 and 149.9e6 < gap[0]["Duration (ns)"] < 151e6)
g0 = base + gap[0]["Start (ns)"]
g1 = g0 + gap[0]["Duration (ns)"]
why = rep["gpu_idle_why"]
check("gpu_idle_why: the same gap, host wait (launch 50 comes after the sleep)",
      all(r["Gap"] == 1 and r["Class"] == "host wait" and r["Proof"] == "idle" for r in why)
      and why[0]["What"] == "gap" and why[0]["Duration (ns)"] == gap[0]["Duration (ns)"])

# samples: (thread, state, line) -> count, and torn per thread, from the construction
samples = sorted((t, tid, fl) for k, t, _, tid, fl in recs if k == "cpu_sample")
first = {}
for t, tid, fl in samples:
    first.setdefault(tid, t)
want = collections.Counter()
for t, tid, fl in samples:
    if not g0 <= t < g1:
        continue
    i = (t - first[tid]) // 1000000
    torn = tid != 2003 and (i + 1) % 50 == 0
    if tid == 2001:
        state, line = ("on CPU", 20) if i < 100 else ("waiting", 30)
    elif tid == 2002:
        state, line = "waiting", 55
    else:
        state, line = None, None
    want[(tid, state if tid != 2003 else None, None if torn else line)] += 1
check("samples in the gap follow the records' own flags", all(
    ((fl & 0x40) != 0) == (((t - first[tid]) // 1000000 + 1) % 50 == 0)
    for t, tid, fl in samples if tid != 2003))
got = collections.Counter()
for r in why:
    if r["What"] not in ("python", "native", "more"):
        continue
    tid = int(re.search(r"tid (\d+)", r["Thread"]).group(1))
    m = re.match(r"\[([^\]]+)\] (.*)", r["Detail"])
    if r["What"] == "native":
        got[(tid, None, None)] += r["Count"]
        continue
    state, stack = m.group(1), m.group(2)
    line = None if stack.startswith("[torn") else int(re.search(r":(\d+)\)", stack).group(1))
    got[(tid, state, line)] += r["Count"]
check("gpu_idle_why: every thread's samples in the gap, by state and line: %s" % dict(want),
      got == want)
# a sample stands for its thread's time to its next sample (1 ms here), never past the gap's end:
# a thread's samples add up to no more than the gap
stands = collections.Counter()
for t, tid, fl in samples:
    if g0 <= t < g1 and tid != 2003:
        stands[tid] += min(1000000, g1 - t)
timed = collections.Counter()
for r in why:
    if r["What"] == "python":
        timed[int(re.search(r"tid (\d+)", r["Thread"]).group(1))] += r["Time (ns)"]
check("gpu_idle_why: a Python sample stands for 1 ms of its thread's time, within the gap",
      timed == stands and all(v <= gap[0]["Duration (ns)"] for v in timed.values()))
check("gpu_idle_why: the main thread first",
      [r["Thread"] for r in why if r["Thread"]][0].endswith("(tid 2001)"))

# blocking calls overlapping the gap, and their overlap
calls = collections.Counter()
ns = collections.Counter()
for k, t, dur, tid, fl in recs:
    if k == "osrt" and t < g1 and t + dur > g0:
        calls[tid] += 1
        ns[tid] += min(t + dur, g1) - max(t, g0)
orow = {int(re.search(r"tid (\d+)", r["Thread"]).group(1)): r for r in why if r["What"] == "osrt"}
check("gpu_idle_why: the blocking calls overlapping the gap, and for how long",
      set(orow) == {2001, 2002} and all(orow[t]["Count"] == calls[t] and orow[t]["Time (ns)"] == ns[t]
                                        for t in orow)
      and orow[2001]["Detail"] == "clock_nanosleep" and orow[2002]["Detail"] == "pthread_cond_timedwait")

bd = rep["gpu_idle_breakdown"]
hw = [r for r in bd if r["Category"] == "host wait"]
check("gpu_idle_breakdown: one host-wait hole, the gap itself, the largest share",
      len(hw) == 1 and hw[0]["Gaps"] == 1 and hw[0]["Idle Time (ns)"] == gap[0]["Duration (ns)"]
      and hw[0]["Share (% of idle)"] > 99)
# per thread, its top 3 Python stacks in the gap (a torn sample is a stack of none), each named
# with its thread, and its share of that thread's Python samples there
st = [r for r in bd if r["Category"].startswith("host wait: python stack")]
ok = bool(st)
for tid in (2001, 2002):
    mine = [r for r in st if r["Thread"].endswith("(tid %d)" % tid)]
    built = sorted((c for (t, s, l), c in want.items() if t == tid), reverse=True)
    ok &= sorted((r["Samples"] for r in mine), reverse=True) == built[:3]
    ok &= all(abs(r["Samples (% of thread's)"] - 100.0 * r["Samples"] / sum(built)) < 0.06 for r in mine)
check("gpu_idle_breakdown: each thread's top 3 Python stacks behind it are those of the gap", ok)

# cpu_sample_sum over all 200 samples per thread: lines 20 and 30 each 100 less 2 torn, 55 200
# less 4 torn; native 200; line 99 (the outer <module>) never innermost but in every stack
cs = {(r["Kind"], r["By"], re.sub(r".*:(\d+)\)$", r"\1", r["Location"])): r for r in rep["cpu_sample_sum"]}
check("cpu_sample_sum: self by line, flat",
      cs[("python", "line", "20")]["Self"] == 98 and cs[("python", "line", "30")]["Self"] == 98
      and cs[("python", "line", "55")]["Self"] == 196)
check("cpu_sample_sum: cumulative, once per sample",
      cs[("python", "line", "99")]["Self"] == 0 and cs[("python", "line", "99")]["Total"] == 392)
check("cpu_sample_sum: torn samples apart; percentages of all 400 Python samples",
      any(r["Location"].startswith("[torn") and r["Self"] == 8 for r in rep["cpu_sample_sum"])
      and abs(cs[("python", "line", "55")]["Self (% of samples)"] - 49.0) < 0.01)
check("cpu_sample_sum: on CPU only at line 20",
      cs[("python", "line", "20")]["On CPU (% of self)"] == 100 and cs[("python", "line", "30")]["On CPU (% of self)"] == 0)
check("cpu_sample_sum: 200 native samples", sum(r["Self"] for r in rep["cpu_sample_sum"]
                                                if r["Kind"] == "native" and r["By"] == "line") == 200)
osr = {r["Name"]: r for r in rep["osrt_sum"]}
check("osrt_sum: nsys's columns, 20 calls of 10 ms and 20 of 5 ms",
      osr["clock_nanosleep"]["Num Calls"] == 20 and osr["clock_nanosleep"]["Med (ns)"] == 10e6
      and osr["pthread_cond_timedwait"]["Total Time (ns)"] == 20 * 5000000)
PY
while read -r verdict name; do
	if [ "$verdict" = ok ]; then ok "$name"; else bad "$name"; fi
done <"$T/checks.txt"
[ -s "$T/checks.txt" ] || bad "the checks did not run"

# ---- a trace of the real collector (tests/data/standin-sampled.tally: tests/exitpath/sampling_gaps.py on
# the stand-in CUPTI, Python sampling at 500 Hz, blocking calls): bursts of launches, then a sleep
# at a known line; each gap it makes is host wait, spent in that sleep
SAMPLED=$SRC/data/standin-sampled.tally
if [ -e "$SAMPLED" ]; then
	line=$(grep -n 'time.sleep(pause)' "$SRC/exitpath/sampling_gaps.py" | cut -d: -f1)
	"$TALLY" stats -f json -r gpu_idle_why,gpu_idle_breakdown,diagnosis "$SAMPLED" >"$T/sampled.json" ||
		bad "stats on sampled.tally"
	python3 - "$T/sampled.json" "$line" >"$T/sampled.txt" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1]))
line = sys.argv[2]
rep = {r["name"]: r["rows"] for r in d["reports"]}
gaps = collections.defaultdict(list)
for r in rep["gpu_idle_why"]:
    if r["Duration (ns)"] >= 40e6:
        gaps[r["Gap"]].append(r)
def top_python(rows):
    py = [r for r in rows if r["What"] == "python"]
    return max(py, key=lambda r: r["Count"])["Detail"].split(" <- ")[0] if py else ""
ok = len(gaps) >= 3 and all(rows[0]["Class"] == "host wait" for rows in gaps.values())
print(("ok" if ok else "bad"), "sampled: each 50 ms sleep is a gap, host wait (%d gaps)" % len(gaps))
ok = all(top_python(rows).startswith("[waiting] ") and top_python(rows).endswith("sampling_gaps.py:%s)" % line)
         for rows in gaps.values())
print(("ok" if ok else "bad"), "sampled: in each, the main thread waits at the sleep's line %s" % line)
ok = all(any(r["What"] == "osrt" and r["Detail"] == "clock_nanosleep" and r["Share (% of gap)"] >= 90 for r in rows)
         for rows in gaps.values())
print(("ok" if ok else "bad"), "sampled: clock_nanosleep covers 90% of each")
bd = rep["gpu_idle_breakdown"]
st = [r for r in bd if r["Category"].startswith("host wait: python stack")]
ok = st and st[0]["Stack"].split(" <- ")[0].endswith("sampling_gaps.py:%s)" % line) and any(
    r["Category"] == "host wait" and r["Share (% of idle)"] > 99 for r in bd)
print(("ok" if ok else "bad"), "sampled: the breakdown: host wait, behind it the sleep's line first")
idle = [f for f in rep["diagnosis"] if f["Rule"] == "gpu-idle"]
ok = len(idle) == 1 and idle[0]["Why"].startswith("host wait, ") and (
    "; the host was in <module> (" in idle[0]["Why"]) and ("sampling_gaps.py:%s) on python3 (tid " % line) in idle[0]["Why"]
print(("ok" if ok else "bad"), "sampled: the diagnosis names host wait at the sleep's line %s" % line)
PY
	while read -r verdict name; do
		if [ "$verdict" = ok ]; then ok "$name"; else bad "$name"; fi
	done <"$T/sampled.txt"
	[ -s "$T/sampled.txt" ] || bad "sampled: the checks did not run"
else
	skipped "sampled: no tests/data/standin-sampled.tally"
fi

# ---- the diagnosis's cause on the test source's 150 ms gap: the thread that launched the work
# late is named (MainThread, tid 2001: THREADS ties it to CUPTI's thread 1000), with where it
# was: on the CPU in compute (line 20) for about two thirds of the gap, though the loader's line
# 55 is sampled more; starved, the launching thread waits in Loader.get while the loader is on the
# CPU in Loader.fill (line 70), and both are named; starved, with the loader on the CPU in 1
# sample of 20 (5% of its samples, under the 10% worth naming), the loader is not named (nor the
# native thread pt_main, on the CPU all the time but in no file of the wait's); without samples,
# the CUPTI thread alone
for h in host starved rare none; do
	extra=""
	[ $h = host ] && extra="--host 200 --host-torn-every 50"
	[ $h = starved ] && extra="--host 200 --host-starved"
	[ $h = rare ] && extra="--host 200 --host-starved-rare"
	# shellcheck disable=SC2086
	"$TESTSRC" -o "$T/cause-$h.tally" --t0 1796000000000000000 --kernels 100 --idle-at 50:150 \
		$extra --batch 64 >/dev/null ||
		bad "testsrc for the cause ($h)"
	"$TALLY" stats -f json -r diagnosis "$T/cause-$h.tally" >"$T/cause-$h.json" || bad "stats ($h)"
done
"$DUMP" "$T/cause-host.tally" >"$T/cause-host.records" 2>&1 || bad "tally-dump (host)"
"$DUMP" --host "$T/cause-host.tally" >"$T/cause-host.samples" 2>&1 || bad "tally-dump --host (host)"
python3 - "$T/cause-host.json" "$T/cause-none.json" "$T/cause-starved.json" "$T/cause-host.records" \
	"$T/cause-host.samples" "$T/cause-rare.json" >"$T/cause.txt" <<'PY'
import json, re, sys
def why(path):
    f = [f for f in json.load(open(path))["reports"][0]["rows"] if f["Rule"] == "gpu-idle"]
    return f[0]["Why"] if len(f) == 1 else None
# the gap (the one stretch of 150 ms between kernels, from the records' own times) holds about 150
# of MainThread's 1 ms samples: the first 100 on the CPU at line 20 (every 50th torn), then waiting
kernels = sorted((int(m.group(1)), int(m.group(1)) + int(m.group(2))) for m in
                 (re.match(r"kernel start=(\d+) dur=(\d+)", l) for l in open(sys.argv[4])) if m)
end, gaps = None, []
for a, b in kernels:
    if end is not None and a - end > 50_000_000:
        gaps.append((end, a))
    end = b if end is None else max(end, b)
inside = on_cpu = 0
for line in open(sys.argv[5]):
    f = line.split()
    if f[:1] != ["sample"]:
        continue
    d = dict(x.split("=", 1) for x in f[2:7])
    if d["tid"] == "2001" and d["source"] == "1" and len(gaps) == 1 and gaps[0][0] <= int(f[1]) <= gaps[0][1]:
        inside += 1
        on_cpu += " py:/work/train.py:20:" in line and not int(d["flags"], 16) & 0x40
want = round(100 * on_cpu / inside) if inside else -1
w = why(sys.argv[1])
m = re.match(r"host wait, 100% of the idle time; MainThread \(tid 2001\) launched the work late: it "
             r"was on the CPU in compute \(/work/train.py:20\), (\d+)% of its samples in these gaps$", w or "")
print("ok" if m and 55 <= want <= 75 and int(m.group(1)) == want else "bad",
      "diagnosis: the launching thread named, on the CPU at line 20 (%d%% of its samples in the gap, from the trace's own times) (%s)" % (want, w))
w = why(sys.argv[2])
print("ok" if w == "host wait, 100% of the idle time; CUPTI thread 1000 launched the work late" else "bad",
      "diagnosis: without host samples, the class and the launching CUPTI thread, no line (%s)" % w)
w = why(sys.argv[3])
print("ok" if w and re.match(r"host wait, 100% of the idle time; MainThread \(tid 2001\) launched the work "
                             r"late: it was waiting in Loader.get \(/work/data.py:55\), \d+% of its samples "
                             r"in these gaps; meanwhile loader \(tid 2002\) was on the CPU in Loader.fill "
                             r"\(/work/data.py:70\), \d+% of its samples: the launching thread waited on "
                             r"another thread's work$", w) else "bad",
      "diagnosis: starved, the launching thread waits, the loader on the CPU is named (%s)" % w)
w = why(sys.argv[6])
print("ok" if w and re.match(r"host wait, 100% of the idle time; MainThread \(tid 2001\) launched the work "
                             r"late: it was waiting in Loader.get \(/work/data.py:55\), \d+% of its samples "
                             r"in these gaps$", w) else "bad",
      "diagnosis: starved, a loader on the CPU 1 sample in 20 is not named, nor any other thread (%s)" % w)
PY
while read -r verdict name; do
	if [ "$verdict" = ok ]; then ok "$name"; else bad "$name"; fi
done <"$T/cause.txt"
[ -s "$T/cause.txt" ] || bad "cause: the checks did not run"

# ---- the Chrome export: samples as Perfetto imports them, blocking calls on their thread --------
"$TALLY" export -q -f chrome -o "$T/h.json" "$HOST" || bad "chrome export"
python3 - "$T/h.json" "$T/dump.txt" >"$T/expected.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
base = d["otherData"]["tally_time_base_ns"]
# the dump's times are the section's own: align them by the first API call of the export
first_api = min(e["ts"] for e in d["traceEvents"] if e.get("cat") == "cuda_runtime")
raw_api = min(int(l.split("start=")[1].split()[0]) for l in open(sys.argv[2]) if l.startswith("runtime"))
base = raw_api - round(first_api * 1000)
# tracks: a thread's CUPTI id (its pthread id, cut to 32 bits) where THREADS ties them; testsrc
# gives thread i of 2001..2003 the pthread id 0x7f0000000000 + 1000 + i (MainThread's is the
# launching thread's CUPTI id, 1000)
track = {2001 + i: (0x7f0000000000 + 1000 + i) & 0xffffffff for i in range(3)}
names = {19: "clock_nanosleep", 3: "pthread_cond_timedwait"}
for line in open(sys.argv[2]):
    kind, _, rest = line.partition(" ")
    f = dict(x.split("=", 1) for x in rest.split() if "=" in x)
    t = (int(f["start"]) - base) / 1000
    tid = int(f["tid"])
    if kind == "cpu_sample":  # Python stacks: 2 frames, native 3, a torn sample one node
        depth = 3 if tid == 2003 else 1 if int(f["flags"], 0) & 0x40 else 2
        print(f"cpu_sample track={track[tid]} t={t:.3f} depth={depth}")
    elif kind == "osrt":
        print(f"osrt track={track[tid]} t={t:.3f} name={names[int(f['cbid'])]}")
PY
python3 "$SRC/cli/check-chrome-samples.py" "$T/h.json" "$T/expected.txt" >"$T/chrome.txt" 2>&1 &&
	ok "chrome: $(cat "$T/chrome.txt")" || { bad "chrome samples"; cat "$T/chrome.txt"; }

# ---- SQLite: nsys's shapes, one row per sample, per frame of each, per blocking call ------------
if "$TALLY" export -q -f sqlite -o "$T/h.db" "$HOST" 2>/dev/null; then
	python3 - "$T/h.db" >"$T/sq.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql: db.execute(sql).fetchall()
# 3 threads x 200 samples; a Python stack has 2 frames, a native one 3, a torn one none (8 torn)
checks = [
    ("COMPOSITE_EVENTS: a row per sample", q("SELECT count(*) FROM COMPOSITE_EVENTS") == [(600,)]),
    ("SAMPLING_CALLCHAINS: a row per frame of each sample",
     q("SELECT count(*) FROM SAMPLING_CALLCHAINS") == [((400 - 8) * 2 + 200 * 3,)]),
    ("torn samples flagged, with no frames", q("SELECT count(*) FROM COMPOSITE_EVENTS e WHERE tallyTorn"
       " AND NOT EXISTS (SELECT 1 FROM SAMPLING_CALLCHAINS c WHERE c.id = e.id)") == [(8,)]),
    ("OSRT_API: 20 + 20 calls, class 27, named",
     q("SELECT s.value, count(*), min(eventClass), max(eventClass) FROM OSRT_API o JOIN StringIds s"
       " ON s.id = o.nameId GROUP BY 1 ORDER BY 1") ==
     [("clock_nanosleep", 20, 27, 27), ("pthread_cond_timedwait", 20, 27, 27)]),
    ("innermost Python lines, by nsys's join", q(
        "SELECT c.line, count(*) FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS c ON c.id = e.id"
        " AND c.stackDepth = 0 WHERE e.tallySource = 1 GROUP BY 1 ORDER BY 1")
     == [(20, 98), (30, 98), (55, 196)]),
    ("Running for the on-CPU half, Interruptible for the waits", q(
        "SELECT threadState, count(*) FROM COMPOSITE_EVENTS WHERE tallySource = 1 GROUP BY 1")
     == [(1, 100), (2, 300)]),
    ("ThreadNames: the three threads", sorted(r[0] for r in q(
        "SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId"))
     == ["MainThread", "loader", "pt_main"]),
]
for name, good in checks:
    print(("ok " if good else "bad ") + name)
PY
	while read -r verdict name; do
		if [ "$verdict" = ok ]; then ok "sqlite: $name"; else bad "sqlite: $name"; fi
	done <"$T/sq.txt"
else
	skipped "sqlite: this tally has no SQLite export"
fi

# ---- cost: twice the records, at most about twice the time and memory, report by report -------
measure() { # report trace -> "user_seconds max_rss_kb"
	python3 - "$TALLY" "$1" "$2" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "stats", "-f", "csv", "-r", sys.argv[2], sys.argv[3]],
               stdout=subprocess.DEVNULL, check=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(u.ru_utime + u.ru_stime, u.ru_maxrss)
PY
}
for n in 1 2; do # N: 40,000 launches, 120,000 samples, 8,000 blocking calls, 4 gaps of 2 ms
	gaps=$(python3 -c "print(' '.join('--idle-at %d:2' % (8000 * i + 100) for i in range(4 * $n)))")
	"$TESTSRC" -o "$T/d$n.tally" --kernels $((40000 * n)) --host $((40000 * n)) $gaps \
		--batch 4096 >/dev/null || bad "testsrc for the doubling"
done
best() { # the fastest of three runs, against noise
	for i in 1 2 3; do measure "$1" "$2"; done | sort -n | head -1
}
for r in gpu_idle_why gpu_idle_breakdown cpu_sample_sum osrt_sum; do
	set -- $(best $r "$T/d1.tally") $(best $r "$T/d2.tally")
	python3 -c "
import sys
t1, m1, t2, m2 = map(float, sys.argv[1:])
print('N: %.3f s %d KB; 2N: %.3f s %d KB' % (t1, m1, t2, m2))
sys.exit(0 if t2 <= 3 * max(t1, 0.05) and m2 <= 3 * m1 else 1)" "$@" >"$T/cost.txt" &&
		ok "$r, twice the records: $(cat "$T/cost.txt")" || bad "$r not linear: $(cat "$T/cost.txt")"
done
finish
