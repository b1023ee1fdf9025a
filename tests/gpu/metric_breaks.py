# SPDX-License-Identifier: MIT
"""The GPU-metric breaks of one trace, each with what the trace says around it
(tests/gpu/metric-breaks.sh runs it on the device's recordings).

Usage: metric_breaks.py CHECK.json TRACE.sqlite LABEL

CHECK.json is `tally check --json TRACE`, TRACE.sqlite `tally export -f sqlite`.  Prints the
verdict, the sampler's notes (the breaks by cause, the cost: decode period, decodes that found a
full image), then every break (a LOSS window of counter metric_gaps) with:
  - its time from the section's start and its length;
  - the samples on either side: their length, SM and GR Active, the GPC clock (a clock or
    power-state change shows there);
  - the NVTX range around it (the step), the CUDA calls and blocking calls that overlap it
    (1 ms either side: an allocation, a pinned-memory call, a module load, a fork), and how
    many kernels ran in it.
Exits 0 when the trace is COMPLETE, or when every break is the GPU's own (metric_gaps equals
metric_gaps_hardware: the loss is explained and is not tally's); 1 otherwise.
"""
import json
import sqlite3
import sys

MARGIN = 1_000_000  # ns either side of a break for the calls that overlap it
SM = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
GR = "gr__cycles_active.avg.pct_of_peak_sustained_elapsed"
CLK = "gpc__cycles_elapsed.avg.per_second"

check_json, db_path, label = sys.argv[1:4]
sec = json.load(open(check_json))["files"][0]["sections"][0]
c, verdict = sec["ledger"]["counters"], sec["verdict"]
t0 = sec["start_ns"]
rel = lambda t: (t - t0) / 1e9
db = sqlite3.connect(db_path)
names = dict(db.execute("select id, value from StringIds"))
for table, cols in (("GPU_METRICS", "metricId, timestamp"), ("GPU_METRICS", "sample"),
                    ("CUPTI_ACTIVITY_KIND_RUNTIME", "start"), ("OSRT_API", "start"),
                    ("CUPTI_ACTIVITY_KIND_KERNEL", "start")):
    db.execute(f"create index if not exists mb_{table}_{cols.split(',')[0]} on {table}({cols})")


def q(sql, *args):
    return db.execute(sql, args).fetchall()


gaps = c.get("metric_gaps", 0)
print(f"{label}: {verdict}; metric samples {c.get('metric_samples_written', 0)}, breaks {gaps} "
      f"({c.get('metric_gap_ns', 0) / 1e6:.3f} ms): the GPU's own {c.get('metric_gaps_hardware', 0)}, "
      f"late decodes {c.get('metric_gaps_late', 0)}, overflows {c.get('metric_overflows', 0)}")
for r in sec["reasons"]:
    print(f"  - {r['text']}" + (f"\n      fix: {r['hint']}" if r.get("hint") else ""))
for n in sec.get("notes", []):
    if n["code"] in ("gpu-metrics-breaks", "gpu-metrics-cost", "gpu-metrics-context-gone",
                     "gpu-metrics-stuck", "window-close"):
        print(f"  note [{n['code']}] {n['text']}")
if c.get("signal_received"):
    print(f"  signal {c['signal_received']} at +{c['signal_at_ns'] / 1e9:.3f} s; close "
          f"+{rel(c['flush_start']):.3f} .. +{rel(c['flush_end']):.3f} s")

metric_id = {n: i for i, n in q("select metricId, cuptiName from TARGET_INFO_GPU_METRICS")}
windows = q("select start, end from TALLY_LOSS_WINDOWS where counter = 'metric_gaps' "
            "order by start")


def sample_near(t, before):
    """The sample that ends at or before t (before) or starts at or after it: (start, end, values)."""
    sm = metric_id.get(SM)
    if sm is None:
        return None
    row = q("select timestamp, duration, sample from GPU_METRICS where metricId = ? and "
            + ("timestamp + duration <= ? order by timestamp desc" if before else
               "timestamp >= ? order by timestamp") + " limit 1", sm, t)
    if not row:
        return None
    start, dur, sample = row[0]
    vals = {name: v for name, v in (
        (n, q("select value from GPU_METRICS where metricId = ? and sample = ?", i, sample))
        for n, i in metric_id.items() if n in (SM, GR, CLK)) if v}
    return start, start + dur, {k: v[0][0] for k, v in vals.items()}


def show(s, side):
    if not s:
        return f"{side}: none"
    start, end, v = s
    return (f"{side}: +{rel(start):.6f}..+{rel(end):.6f} s ({(end - start) / 1e3:.0f} us) "
            f"SM {v.get(SM, float('nan')):.1f}% GR {v.get(GR, float('nan')):.1f}% "
            f"clock {v.get(CLK, float('nan')) / 1e9:.3f} GHz")


for i, (b, e) in enumerate(windows):
    print(f"  break {i + 1}: +{rel(b):.6f} .. +{rel(e):.6f} s ({(e - b) / 1e6:.3f} ms)")
    print("    " + show(sample_near(b, True), "before"))
    print("    " + show(sample_near(e, False), "after"))
    steps = [t for t, in q("select text from NVTX_EVENTS where start <= ? and end >= ?", e, b)]
    if steps:
        print(f"    within NVTX {', '.join(s or '?' for s in steps[:4])}")
    calls = {}
    for name_id, in q("select nameId from CUPTI_ACTIVITY_KIND_RUNTIME where start <= ? and "
                      "end >= ?", e + MARGIN, b - MARGIN):
        n = names.get(name_id, "?")
        calls[n] = calls.get(n, 0) + 1
    if calls:
        print("    CUDA calls: " + ", ".join(f"{n} x{k}" for n, k in
                                           sorted(calls.items(), key=lambda x: -x[1])[:12]))
    osrt = {}
    for name_id, in q("select nameId from OSRT_API where start <= ? and end >= ?",
                      e + MARGIN, b - MARGIN):
        n = names.get(name_id, "?")
        osrt[n] = osrt.get(n, 0) + 1
    if osrt:
        print("    blocking calls: " + ", ".join(f"{n} x{k}" for n, k in osrt.items()))
    kernels = q("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL where start <= ? and end >= ?",
                e, b)[0][0]
    print(f"    kernels running in it: {kernels}")
explained = verdict == "COMPLETE" or (gaps and gaps == c.get("metric_gaps_hardware", 0) and
                                      all(r.get("counter") == "metric_gaps"
                                          for r in sec["reasons"]))
sys.exit(0 if explained else 1)
