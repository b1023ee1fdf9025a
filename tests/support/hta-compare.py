#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tally's idle figures beside Holistic Trace Analysis's, on tally's Kineto export of the same
traces (docs/export.md, "Checked against HTA itself").  HTA is not a dependency of tally and not in
CI: run this where it is importable (its source on PYTHONPATH, with pandas), after
tests/gpu/kineto.sh or on a directory of traces:

    python3 tests/support/hta-compare.py TALLY TRACES [KINETO_DIR]

TRACES is a .tally file or a directory of them (a tests/gpu/kineto.sh case directory: its
traces/ and kineto/); KINETO_DIR defaults to TRACES/kineto, made with tally export -f kineto when
absent.  Prints, per rank, HTA's temporal idle against tally's gpu_time_breakdown Idle, HTA's idle
classes (consecutive_kernel_delay=30, microseconds) against gpu_idle_breakdown --kernel-wait 30us,
and HTA's communication overlap against comm_compute_overlap; and how many of HTA's kernel-wait
gaps are host waits rounded into one microsecond.  Exits 77 without HTA; 1 when a
rank's idle time differs by more than a microsecond per gap (HTA's rounding)."""
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import warnings

try:
    from hta.trace_analysis import TraceAnalysis
except ImportError as e:
    print("SKIP: HTA is not importable here (%s)" % e)
    sys.exit(77)

tally, traces = sys.argv[1], sys.argv[2]
if os.path.isdir(os.path.join(traces, "traces")):
    base, traces = traces, os.path.join(traces, "traces")
else:
    base = traces if os.path.isdir(traces) else os.path.dirname(traces) or "."
kdir = sys.argv[3] if len(sys.argv) > 3 else os.path.join(base, "kineto")
if not os.path.isdir(kdir):
    subprocess.run([tally, "export", "-q", "-f", "kineto", "-o", kdir, traces], check=True)


def reports(names):
    out = subprocess.run([tally, "stats", "-f", "json", "-r", names, "--kernel-wait", "30us", traces],
                         capture_output=True, text=True).stdout
    return {r["name"]: r["rows"] for r in json.loads(out)["reports"]}


def rounded_launches():
    """HTA's kernel-wait gaps (under 30 us, the launching call not begun after the previous work's
    end, in microseconds) whose call began after the GPU went idle in tally's nanoseconds: the
    two rounded into one microsecond, a host wait to tally.  One stream of one rank, as HTA's
    rule runs per stream."""
    import bisect
    import csv
    import tempfile
    rank = t.t.get_ranks()[0]
    df = t.t.get_trace(rank)
    sym = t.t.symbol_table.get_sym_id_map()
    cats = [sym.get(c, -1000) for c in ("kernel", "gpu_memset", "gpu_memcpy")]
    g = df[df["stream"].ne(-1) & df["cat"].isin(cats)].set_index("index_correlation")
    g = g.join(df[["ts", "index"]], on="index_correlation", rsuffix="_runtime")
    g = g[g.stream == g.stream.iloc[0]].sort_values(by="ts")
    prev_end = (g.ts + g.dur).shift(1)
    gap = g.ts - prev_end
    kw = g[~(g.ts_runtime > prev_end) & (gap < 30) & (gap > 0)]
    with tempfile.TemporaryDirectory() as tmp:
        one = traces if not os.path.isdir(traces) else sorted(
            os.path.join(traces, f) for f in os.listdir(traces) if f.endswith(".tally"))[0]
        subprocess.run([tally, "export", "-q", "-f", "csv", "-o", tmp + "/csv", one], check=True)
        rows = lambda k: list(csv.DictReader(open("%s/csv/%s.csv" % (tmp, k)))) \
            if os.path.exists("%s/csv/%s.csv" % (tmp, k)) else []
        call = {int(x["correlation"]): int(x["start"]) for k in ("runtime", "driver") for x in rows(k)}
        work = sorted((int(x["start"]), int(x["end"]), int(x["correlation"]))
                      for k in ("kernel", "memcpy", "memset") for x in rows(k))
    starts, idle_at, at = [w[0] for w in work], [], 0
    for w in work:
        at = max(at, w[1])
        idle_at.append(at)
    start_of = {w[2]: w[0] for w in work}
    after = [call[c] - idle_at[bisect.bisect_left(starts, start_of[c]) - 1]
             for c in kw.correlation.astype(int) if c in call and c in start_of]
    later = sorted(a for a in after if a > 0)
    return ("rank %s: HTA's %d kernel-wait gaps (%.0f us): %d began after the GPU went idle in ns "
            "(median %s ns later), the same microsecond rounded" %
            (rank, len(kw), kw.ts.sub(prev_end[kw.index]).sum(), len(later),
             later[len(later) // 2] if later else "-"))


warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    t = TraceAnalysis(trace_dir=kdir)
    temporal = t.get_temporal_breakdown(visualize=False).to_dict("records")
    idle = {r: t.get_idle_time_breakdown(ranks=[r], consecutive_kernel_delay=30, visualize=False)[0]
            for r in t.t.get_ranks()}
    try:
        overlap = t.get_comm_comp_overlap(visualize=False).to_dict("records")
    except Exception:  # no communication kernels
        overlap = []
tr = reports("gpu_time_breakdown,gpu_idle_breakdown,comm_compute_overlap")
bad = 0
for row in temporal:
    r = row["rank"]
    mine = [x for x in tr["gpu_time_breakdown"] if x["Rank"] in (str(r), "-") or x["Rank"].endswith("=%d" % r)]
    idle_ns = sum(x["Idle (ns)"] for x in mine)
    gaps = t.t.get_trace(r)["stream"].ge(0).sum()
    diff = abs(row["idle_time(us)"] - idle_ns / 1000)
    bad |= diff > max(1, gaps)
    print("rank %s: HTA temporal idle %.0f us of %.0f (%.2f%%); tally Idle %.3f us (%d device row(s)); "
          "difference %.1f us over at most %d gaps" % (r, row["idle_time(us)"], row["kernel_time(us)"],
                                                        row["idle_time_pctg"], idle_ns / 1000, len(mine), diff, gaps))
for r, d in idle.items():
    h = d.groupby("idle_category")["idle_time"].sum().to_dict()
    print("rank %s: HTA idle classes over %d stream(s): %s" % (r, d["stream"].nunique(), h))
print(rounded_launches())
for x in tr["gpu_idle_breakdown"]:
    if x["Category"] in ("host wait", "kernel wait", "other"):
        print("tally %s device %s: %s %.3f us" % (x["Rank"], x["Device"], x["Category"], x["Idle Time (ns)"] / 1000))
for o in overlap:
    print("rank %s: HTA comm-comp overlap %s%%" % (o["rank"], o["comp_comm_overlap_pctg"]))
for x in tr.get("comm_compute_overlap", []):
    print("tally %s: Overlap %s%%" % (x["Rank"], x["Overlap (% of communication)"]))
sys.exit(1 if bad else 0)
