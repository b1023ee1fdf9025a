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
and HTA's communication overlap against comm_compute_overlap.  Exits 77 without HTA; 1 when a
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
for x in tr["gpu_idle_breakdown"]:
    if x["Category"] in ("host wait", "kernel wait", "other"):
        print("tally %s device %s: %s %.3f us" % (x["Rank"], x["Device"], x["Category"], x["Idle Time (ns)"] / 1000))
for o in overlap:
    print("rank %s: HTA comm-comp overlap %s%%" % (o["rank"], o["comp_comm_overlap_pctg"]))
for x in tr.get("comm_compute_overlap", []):
    print("tally %s: Overlap %s%%" % (x["Rank"], x["Overlap (% of communication)"]))
sys.exit(1 if bad else 0)
