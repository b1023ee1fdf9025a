#!/bin/sh
# Reading GPU metrics (docs/stats.md, docs/export.md, docs/sqlite.md): traces from
# tests/support/tally-metricsgen.c, whose values follow from kernels it placed, read by every
# reader, each checked against what the generator says it wrote (--expect), never against tally.
#   gpu_metrics_sum       samples, time, mean, min, max exact; p50 and p90 within the sketch's
#                         1/64; the share of time at or above 80% (percentages: exact)
#   gpu_gaps              each device gap's SM Active over its interior samples, active where an
#                         other process worked, and whose work it was; a process sampled
#                         elsewhere takes the metrics of the same GPU from the sampler's trace
#   gpu_metrics_nvtx_sum  each range name's metrics over its ranges
#   idle classes          host samples explain the class of the gaps they were taken in
#   export                Chrome counter tracks (every sample; and --metric-step), SQLite's
#                         GPU_METRICS / TARGET_INFO_GPU_METRICS / TALLY_GPU_METRICS, CSV
# Usage: test-metrics-read.sh TALLY METRICSGEN TESTSRC
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 GEN=$2 TESTSRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# A (sampler, 2 devices, 10 kHz, 0.4 s) and B (its device 0 sampled by A); a 3 ms hole in A's
# samples at 200 ms; B works in every 4th of A's gaps on device 0.
"$GEN" -o "$T/A.tally" --second "$T/B.tally" --seconds 0.4 --devices 2 --other-gaps 4 \
	--metric-gap 200:3 --expect "$T/exp.json" || bad "tally-metricsgen"
"$GEN" -o "$T/U.tally" --seconds 0.2 --hz 1000 --other-gaps 3 --expect "$T/expu.json" ||
	bad "tally-metricsgen (untraced other work)"

# py NAME SCRIPT [ARGS...]: a check in python over files; its exit status is the verdict
py() {
	name=$1 script=$2
	shift 2
	if python3 -c "$script" "$@" >"$T/py.out" 2>&1; then
		ok "$name"
	else
		bad "$name"
		cat "$T/py.out"
	fi
}

COMMON='
import json, sys
def close(a, b, rel=1e-9, absol=1e-9):
    return abs(a - b) <= max(absol, rel * max(abs(a), abs(b)))
def sketch(a, b):  # the quantile sketch: within 1/64 of the value (exact below 64 units)
    return abs(a - b) <= max(1e-9, abs(b) / 64)
def report(path, name):
    return [r for r in json.load(open(path))["reports"] if r["name"] == name][0]["rows"]
# a gap is busy outside the trace when SM Active or GR Active is above 1% over it (gaps.h,
# GAP_BUSY_PCT); tally-metricsgen writes GR Active as SM Active + 0.12
BUSY = "busy outside trace"
def busy(s):
    return s["covered_ns"] > 0 and (s["mean"] > 1.0 or min(100, s["mean"] + 0.12) > 1.0)
fails = []
def want(cond, what):
    if not cond:
        fails.append(what)
def done():
    for f in fails[:20]:
        print("  " + f)
    sys.exit(1 if fails else 0)
'

# ---- gpu_metrics_sum ----------------------------------------------------------------------------
"$TALLY" stats -r gpu_metrics_sum -f json -o "$T/sum.json" "$T/A.tally" "$T/B.tally" 2>"$T/err"
[ $? -eq 1 ] && ok "gpu_metrics_sum: exit 1 (A lost samples: INCOMPLETE)" || bad "gpu_metrics_sum exit"
py "gpu_metrics_sum: every metric of both devices as the generator wrote it" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = report(sys.argv[1], 'gpu_metrics_sum')
got = {(r['PID'], r['Device'], r['Name']): r for r in rows}
n = 0
for dev, d in exp['devices'].items():
    for name, e in d['metrics'].items():
        r = got.get((4242, int(dev), name))
        n += 1
        if not r:
            fails.append('no row for %s %s' % (dev, name)); continue
        want(r['Samples'] == e['samples'] and r['Covered (ns)'] == e['covered_ns'] and r['Span (ns)'] == e['span_ns'], '%s %s: samples %s/%s/%s, want %s/%s/%s' % (dev, name, r['Samples'], r['Covered (ns)'], r['Span (ns)'], e['samples'], e['covered_ns'], e['span_ns']))
        want(r['Span (ns)'] - r['Covered (ns)'] == 3000000, '%s %s: the 3 ms hole: span %r, covered %r' % (dev, name, r['Span (ns)'], r['Covered (ns)']))
        for k in ('mean', 'min', 'max'):
            want(close(r[k.capitalize()], e[k], 1e-9), '%s %s %s %r, want %r' % (dev, name, k, r[k.capitalize()], e[k]))
        for k in ('p50', 'p90'):
            want(sketch(r[k.upper()], e[k]), '%s %s %s %r, want %r' % (dev, name, k, r[k.upper()], e[k]))
        exact = r['Unit'] == '%'
        want(close(r['Above (% of covered)'] / 100, e['above'], 0, 1e-12 if exact else 0.02), '%s %s above %r, want %r' % (dev, name, r['Above (% of covered)'], e['above']))
want(n == 24, 'expected 24 series, got %d' % n)
b = [r for r in rows if r['PID'] == 4343]
want(len(b) == 1 and b[0]['Metric'] == '-' and 'pid 4242' in b[0]['Name'] and b[0]['Samples'] is None, 'B: %r' % b)
done()" "$T/sum.json" "$T/exp.json"

# ---- gpu_gaps ---------------------------------------------------------------------------------
"$TALLY" stats -r gpu_gaps -f json -o "$T/gaps.json" "$T/A.tally" "$T/B.tally" 2>/dev/null
"$TALLY" stats -r gpu_gaps -f json -o "$T/gapsu.json" "$T/U.tally" 2>/dev/null
py "gpu_gaps: SM Active of each of A's device gaps, active where B worked (and B named)" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = [r for r in report(sys.argv[1], 'gpu_gaps') if r['PID'] == 4242 and r['Stream'] == 'all']
for dev, d in exp['devices'].items():
    mine = [r for r in rows if r['Device'] == int(dev)]
    want(len(mine) == len(d['gaps']), 'device %s: %d gaps, want %d' % (dev, len(mine), len(d['gaps'])))
    for r, e in zip(mine, d['gaps']):
        s = e['sm']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
        want(r['Sampled (ns)'] == s['covered_ns'], 'gap at %s: sampled %r, want %r' % (r['Start (ns)'], r['Sampled (ns)'], s['covered_ns']))
        if s['covered_ns']:
            want(close(r['SM Active (%)'], s['mean'], 1e-9), 'gap at %s: SM Active %r, want %r' % (r['Start (ns)'], r['SM Active (%)'], s['mean']))
        active = busy(s)
        want(r['Class'] == (BUSY if active else 'idle'), 'gap at %s: class %s, SM Active %r' % (r['Start (ns)'], r['Class'], s.get('mean')))
        if active:
            want('pid 4343' in r['Why'], 'gap at %s: %s' % (r['Start (ns)'], r['Why']))
want(sum(r['Class'] == BUSY for r in rows) > 0, 'no gap busy outside the trace at all')
done()" "$T/gaps.json" "$T/exp.json"
py "gpu_gaps: B's gaps take A's samples of the same GPU (UUID), A's work named" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = [r for r in report(sys.argv[1], 'gpu_gaps') if r['PID'] == 4343 and r['Stream'] == 'all']
want(len(rows) == len(exp['other_gaps']) and rows, 'B: %d gaps, want %d' % (len(rows), len(exp['other_gaps'])))
for r, e in zip(rows, exp['other_gaps']):
    s = e['sm']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
    want(r['Sampled (ns)'] == s['covered_ns'] and close(r['SM Active (%)'], s['mean'], 1e-9), 'B gap %s: %r %r, want %r' % (r['Start (ns)'], r['Sampled (ns)'], r['SM Active (%)'], s))
    want(r['Class'] == BUSY and 'pid 4242' in r['Why'], 'B gap %s: %s %s' % (r['Start (ns)'], r['Class'], r['Why']))
done()" "$T/gaps.json" "$T/exp.json"
py "gpu_gaps: work no trace holds (untraced process) makes a gap active, and is said so" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = [r for r in report(sys.argv[1], 'gpu_gaps') if r['Stream'] == 'all']
gaps = exp['devices']['0']['gaps']
want(len(rows) == len(gaps), '%d gaps, want %d' % (len(rows), len(gaps)))
for r, e in zip(rows, gaps):
    s = e['sm']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
    active = busy(s)
    want(r['Class'] == (BUSY if active else 'idle') and (not active or 'no trace here holds' in r['Why']), 'gap %s: %s %s (%r)' % (r['Start (ns)'], r['Class'], r['Why'], s))
want(sum(r['Class'] == BUSY for r in rows) >= 5, 'too few gaps busy outside the trace')
done()" "$T/gapsu.json" "$T/expu.json"
"$TALLY" stats -r gpu_idle_why -f json -o "$T/whyu.json" "$T/U.tally" 2>/dev/null
py "gpu_idle_why: the same holes carry their SM Active; one the GPU was busy in is not idle" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = [r for r in report(sys.argv[1], 'gpu_idle_why') if r['What'] == 'gap']
gaps = exp['devices']['0']['gaps']
want(len(rows) == len(gaps), '%d holes, want %d' % (len(rows), len(gaps)))
for r, e in zip(rows, gaps):
    s = e['sm']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
    active = busy(s)
    want(r['Proof'] == (BUSY if active else 'idle'), 'hole %s: %s, want %s (%r)' % (r['Start (ns)'], r['Proof'], BUSY if active else 'idle', s))
    want(not s['covered_ns'] or ('SM Active %.1f%%' % s['mean']) in r['Detail'], 'hole %s: %s' % (r['Start (ns)'], r['Detail']))
want(sum(r['Proof'] == BUSY for r in rows) >= 5, 'too few holes busy outside the trace')
done()" "$T/whyu.json" "$T/expu.json"
# without metrics the gaps are as before: no SM Active, and idle
"$TESTSRC" -o "$T/plain.tally" --kernels 200 --idle-at 100:5 >/dev/null 2>&1
"$TALLY" stats -r gpu_gaps,gpu_metrics_sum -f json -o "$T/plain.json" "$T/plain.tally" 2>/dev/null
py "a trace without metrics: gaps idle with no SM Active, gpu_metrics_sum empty" "$COMMON
rows = [r for r in report(sys.argv[1], 'gpu_gaps') if r['Stream'] == 'all']
want(rows and all(r['Class'] == 'idle' and r['SM Active (%)'] is None and r['Sampled (ns)'] is None for r in rows), repr(rows[:2]))
want(report(sys.argv[1], 'gpu_metrics_sum') == [], 'gpu_metrics_sum has rows')
done()" "$T/plain.json"
"$TALLY" stats -r gpu_metrics_sum "$T/plain.tally" >"$T/plain.txt" 2>&1
grep -q 'hold no GPU metrics (record with --gpu-metrics)' "$T/plain.txt" && ok "no metrics: said, with the option" ||
	bad "no metrics: $(cat "$T/plain.txt")"

# ---- gpu_metrics_nvtx_sum -----------------------------------------------------------------------
"$TALLY" stats -r gpu_metrics_nvtx_sum -f json -o "$T/nvtx.json" "$T/A.tally" 2>/dev/null
py "gpu_metrics_nvtx_sum: each metric over the ranges :compute and :step" "$COMMON
exp = json.load(open(sys.argv[2]))
rows = report(sys.argv[1], 'gpu_metrics_nvtx_sum')
got = {(r['Range'], r['Device'], r['Name']): r for r in rows}
want(rows and rows[0]['Range'] == ':step', 'first range %r (the most time first)' % (rows[0]['Range'] if rows else None))
for dev, d in exp['devices'].items():
    for rng, key in ((':compute', 'compute'), (':step', 'step')):
        for name, e in d[key][rng].items():
            r = got.get((rng, int(dev), name))
            if not r:
                fails.append('no row %s %s %s' % (rng, dev, name)); continue
            want(r['Covered (ns)'] == e['covered_ns'] and r['Instances'] == exp['periods'], '%s %s %s: covered %r instances %r, want %r %r' % (rng, dev, name, r['Covered (ns)'], r['Instances'], e['covered_ns'], exp['periods']))
            want(close(r['Mean'], e['mean'], 1e-9) and close(r['Max'], e['max']) and close(r['Min'], e['min']), '%s %s %s: %r %r %r, want %r' % (rng, dev, name, r['Mean'], r['Min'], r['Max'], e))
            want(sketch(r['P50'], e['p50']) and sketch(r['P90'], e['p90']), '%s %s %s: p50 %r p90 %r, want %r %r' % (rng, dev, name, r['P50'], r['P90'], e['p50'], e['p90']))
done()" "$T/nvtx.json" "$T/exp.json"

# ---- exports ----------------------------------------------------------------------------------
"$TALLY" export -q -f chrome -o "$T/a.json" "$T/A.tally" "$T/B.tally" 2>/dev/null
"$TALLY" export -q -f chrome --metric-step 1ms -o "$T/a1.json" "$T/A.tally" 2>/dev/null
py "chrome: a counter event per sample and metric, on each device's process; --metric-step 1ms" "$COMMON
exp = json.load(open(sys.argv[3]))
ev = [e for e in json.load(open(sys.argv[1]))['traceEvents'] if e.get('ph') == 'C' and e.get('pid', 0) >= 1000000000]
names = {e['name'] for e in ev}
want(len(names) == 12 and 'SM Active' in names and 'DRAM Read' in names, sorted(names))
for dev in ('0', '1'):
    mine = [e for e in ev if e['pid'] == 1000000000 + int(dev)]
    sm = [e['args']['%'] for e in mine if e['name'] == 'SM Active']
    e = exp['devices'][dev]['metrics']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
    want(len(mine) == 12 * e['samples'] and len(sm) == e['samples'], 'device %s: %d events, want %d' % (dev, len(mine), 12 * e['samples']))
    want(close(sum(sm) / len(sm), e['mean'], 1e-9), 'device %s: SM Active mean %r, want %r' % (dev, sum(sm) / len(sm), e['mean']))
    rd = [e['args']['bytes/s'] for e in mine if e['name'] == 'DRAM Read']
    want(max(rd) == exp['devices'][dev]['metrics']['dram__bytes_read.sum.per_second']['max'], 'device %s: DRAM Read max %r' % (dev, max(rd)))
steps = [e for e in json.load(open(sys.argv[2]))['traceEvents'] if e.get('ph') == 'C' and e.get('name') == 'SM Active' and e['pid'] == 1000000000]
e = exp['devices']['0']['metrics']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
want(len(steps) == e['covered_ns'] // 1000000, '--metric-step 1ms: %d points, want %d' % (len(steps), e['covered_ns'] // 1000000))
want(close(sum(s['args']['%'] for s in steps) / len(steps), e['mean'], 1e-6), '--metric-step mean %r' % (sum(s['args']['%'] for s in steps) / len(steps)))
done()" "$T/a.json" "$T/a1.json" "$T/exp.json"

if command -v sqlite3 >/dev/null 2>&1 || python3 -c 'import sqlite3' 2>/dev/null; then
	"$TALLY" export -q -f sqlite -o "$T/a.sqlite" "$T/A.tally" "$T/B.tally" 2>/dev/null
	py "sqlite: GPU_METRICS joined with TARGET_INFO_GPU_METRICS as nsys's queries do; TALLY_GPU_METRICS" "$COMMON
import sqlite3
exp = json.load(open(sys.argv[2]))
db = sqlite3.connect(sys.argv[1])
rows = db.execute('SELECT i.deviceId, i.cuptiName, i.metricName, i.unit, COUNT(*), AVG(m.value), MAX(m.value) FROM GPU_METRICS m JOIN TARGET_INFO_GPU_METRICS i USING (typeId, metricId) GROUP BY m.typeId, m.metricId').fetchall()
want(len(rows) == 24, '%d metrics in GPU_METRICS' % len(rows))
for dev, name, label, unit, n, avg, mx in rows:
    e = exp['devices'][str(dev)]['metrics'][name]
    want(n == e['samples'] and close(avg, e['mean'], 1e-9) and close(mx, e['max']), '%s %s: %r %r %r, want %r' % (dev, name, n, avg, mx, e))
sm = db.execute(\"SELECT typeId & 255 FROM TARGET_INFO_GPU_METRICS WHERE metricName = 'SM Active'\").fetchall()
want(sorted(x[0] for x in sm) == [0, 1], 'typeId & 0xFF is not the device: %r' % sm)
st = db.execute('SELECT deviceId, state, holderPid FROM TALLY_GPU_METRICS ORDER BY section, deviceId').fetchall()
want(st == [(0, 'sampled', None), (1, 'sampled', None), (0, 'elsewhere', 4242)], repr(st))
done()" "$T/a.sqlite" "$T/exp.json"
else
	skipped "sqlite: no sqlite3 for python here"
fi

"$TALLY" export -q -f csv -o "$T/csv" "$T/A.tally" 2>/dev/null
py "csv: gpu_metric.csv holds every sample of every metric, values exactly as written" "$COMMON
import csv
exp = json.load(open(sys.argv[2]))
rows = list(csv.DictReader(open(sys.argv[1])))
e = exp['devices']['0']['metrics']['sm__cycles_active.avg.pct_of_peak_sustained_elapsed']
want(len(rows) == 24 * e['samples'], '%d rows, want %d' % (len(rows), 24 * e['samples']))
sm = [float(r['value']) for r in rows if r['device'] == '0' and r['label'] == 'SM Active']
want(close(sum(sm) / len(sm), e['mean'], 1e-9), 'SM Active mean %r' % (sum(sm) / len(sm)))
want(sum(r['after_gap'] == '1' for r in rows) == 24, 'after_gap flags: %d' % sum(r['after_gap'] == '1' for r in rows))
done()" "$T/csv/gpu_metric.csv" "$T/exp.json"

# Host samples explain the class of the gaps they were taken in: with --late-launches and
# --other-gaps 2 (tally-metricsgen.c), host wait is the largest class as the trace is read (the
# gaps before period 1 and every even period), but the gaps before the even periods are busy
# outside the trace, which leaves one host-wait gap and makes "other" (launches not recorded)
# the largest.  The idle cause then names no thread (it once said the CUPTI thread "launched the
# work late" for gaps whose launches no record holds), and gpu_idle_breakdown keeps the thread's
# samples under host wait, the class of the one gap they stand in.
"$GEN" -o "$T/L.tally" --seconds 0.5 --hz 1000 --other-gaps 2 --host --late-launches ||
	bad "tally-metricsgen --late-launches"
"$TALLY" stats -f json -r diagnosis,gpu_idle_breakdown "$T/L.tally" >"$T/L.json" 2>/dev/null
py "busy-outside gaps make 'other' the largest class: the cause names no thread, the samples stay under host wait" "$COMMON
d = {r['name']: r['rows'] for r in json.load(open(sys.argv[1]))['reports']}
why = [f['Why'] for f in d['diagnosis'] if f['Rule'] == 'gpu-idle']
want(len(why) == 1 and why[0].startswith('other, ') and ';' not in why[0], 'gpu-idle: %r' % why)
bd = d['gpu_idle_breakdown']
hw = [r for r in bd if r['Category'] == 'host wait']
want(len(hw) == 1 and hw[0]['Gaps'] == 1 and hw[0]['Idle Time (ns)'] == 4000000, 'host wait: %r' % hw)
stacks = [r for r in bd if r.get('Stack')]
want(len(stacks) == 1 and stacks[0]['Category'] == 'host wait: python stack' and stacks[0]['Stack'] == 'compute (/work/train.py:20)', 'stack rows: %r' % stacks)
done()" "$T/L.json"

finish
