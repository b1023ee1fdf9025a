#!/usr/bin/env python3
"""Checks a tally report page as Chromium rendered it (its --dump-dom and a screenshot) against
what other commands said about the same traces: the verdict and each reason, when and fix line of
`tally check`, and the kernel names and counts of `tally stats --format json`; the analyses as
`tally stats -f json -r <the page's reports>` gives them: the diagnosis in its order, with its
findings and causes, each process's breakdown (one definition of idle: the busy charts' titles,
the ranks table and the idle-time breakdown's bars say the same idle time as
gpu_time_breakdown), the straggler line, every report as a table; and how the
page is drawn: every chart's plot area where the timeline's is (one time axis), legends with
values before any hover, no Ranks link for one process.

Usage: check-html-report.py DOM STATS_JSON CHECK_TXT PNG [--ranks N] [--kernels N]
Exit 0 when every check holds; prints one line per failed check otherwise (exit 1).
"""
import argparse
import json
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    """Text of the page, the elements by id, and the kernel table's cells."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text = []
        self.ids = {}
        self.stack = []
        self.tables = {}  # table id -> rows of {data-col: data-value}
        self.table = None
        self.row = None
        self.tags = {}
        self.attrs_seen = set()
        self.classes = {}  # class -> elements
        self.elements = []  # (tag, attrs) of every element, in order
        self.text_of_class = {}
        self.in_value = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.elements.append((tag, a))
        for k in a:
            self.attrs_seen.add(k)
        for c in (a.get("class") or "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
        if tag in ("script", "style"):
            self.stack.append(("skip", None))
            return
        self.stack.append((tag, a.get("id")))
        if a.get("id"):
            self.ids[a["id"]] = {"attrs": a, "text": ""}
        if tag == "table" and a.get("id"):
            self.table = self.tables.setdefault(a["id"], [])
        if tag == "tr" and self.table is not None:
            self.row = {}
            self.table.append(self.row)
        if "u-value" in (a.get("class") or "").split():
            self.in_value = True
        if tag == "td" and self.row is not None and "data-col" in a:
            self.row[a["data-col"]] = a.get("data-value", "")

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag or t == "skip" and tag in ("script", "style"):
                break
        if tag == "table":
            self.table = None
        self.text.append("\n")

    def handle_data(self, data):
        if any(t == "skip" for t, _ in self.stack):
            return
        if self.in_value:
            self.text_of_class.setdefault("u-value", []).append(data.strip())
            self.in_value = False
        self.text.append(data)
        for t, i in self.stack:
            if i:
                self.ids[i]["text"] += data


def png_colours(path):
    try:
        from PIL import Image
    except ImportError:
        return None
    img = Image.open(path).convert("RGB")
    return len(img.getcolors(maxcolors=1 << 24) or [])


def report(stats, name):
    return next((r["rows"] for r in stats["reports"] if r["name"] == name), None)


def by_class(dom, cls):
    return [a for t, a in dom.elements if cls in (a.get("class") or "").split()]


def analyses(dom, stats, text, ranks):
    """The page's analyses against stats' (the same traces, `-r` the page's reports)."""
    fails = []
    diag = report(stats, "diagnosis")
    if diag is not None:
        page = [a.get("data-rule") for a in by_class(dom, "finding")]
        if page != [f["Rule"] for f in diag]:
            fails.append("diagnosis: page %s, tally stats %s" % (page, [f["Rule"] for f in diag]))
        for f in diag:
            for k in ("Finding", "Why"):
                if f[k] and f[k] not in text:
                    fails.append("diagnosis: the page does not say %s %r" % (k, f[k]))
    bd = report(stats, "gpu_time_breakdown") or []
    parts = {"Compute": "Compute (ns)", "Communication": "Communication (ns)", "Copy/Memset": "Copy/Memset (ns)",
             "Busy Outside Trace": "Busy Outside Trace (ns)", "Idle proven": "Idle Proven (ns)",
             "Idle unproven": "Idle Unproven (ns)"}
    bars = by_class(dom, "bd-bar")
    segs = [a for a in by_class(dom, "bd-seg")]
    if len(bars) != len(bd):
        fails.append("breakdown: %d bars, tally stats %d rows" % (len(bars), len(bd)))
    for i, row in enumerate(bd):
        mine = segs[i * len(parts):(i + 1) * len(parts)]
        for a in mine:
            if int(a["data-ns"]) != row[parts[a["data-part"]]]:
                fails.append("breakdown pid %s GPU %s %s: page %s, tally stats %s" % (
                    row["PID"], row["Device"], a["data-part"], a["data-ns"], row[parts[a["data-part"]]]))
    # one definition of idle: each busy chart's title says gpu_time_breakdown's idle
    for a in dom.elements:
        if a[1].get("data-idle-ns") is not None and a[1].get("data-device") is not None:
            want = [r["Idle (ns)"] for r in bd if r["Device"] == int(a[1]["data-device"])]
            if a[1]["data-idle-ns"] == "" or int(a[1]["data-idle-ns"]) not in want:
                fails.append("busy chart idle %r is none of gpu_time_breakdown's %s" % (a[1]["data-idle-ns"], want))
    # why the GPU was idle: per device a bar of gpu_idle_breakdown's classes, adding up to
    # gpu_time_breakdown's idle (the one definition of idle)
    ib = report(stats, "gpu_idle_breakdown")
    if ib is not None:
        whys = by_class(dom, "why-bar")
        wsegs = by_class(dom, "why-seg")
        classes = [r for r in ib if ":" not in r["Category"] and r["Category"] != "busy outside trace"]
        if len(whys) * 3 != len(classes) or len(wsegs) != len(classes):
            fails.append("why idle: %d bars of %d parts, gpu_idle_breakdown %d classes" % (
                len(whys), len(wsegs), len(classes)))
        for a, r in zip(wsegs, classes):
            if a.get("data-part") != r["Category"] or int(a["data-ns"]) != r["Idle Time (ns)"]:
                fails.append("why idle pid %s GPU %s %s: page %s, tally stats %s" % (
                    r["PID"], r["Device"], r["Category"], a.get("data-ns"), r["Idle Time (ns)"]))
        for a in whys:
            want = [r["Idle (ns)"] for r in bd if str(r["PID"]) == a.get("data-pid")
                    and str(r["Device"]) == a.get("data-device")]
            if [int(a.get("data-idle-total", -1))] != want:
                fails.append("why idle pid %s GPU %s: idle %s, gpu_time_breakdown %s" % (
                    a.get("data-pid"), a.get("data-device"), a.get("data-idle-total"), want))
        explained = dom.ids.get("idle-why", {}).get("attrs", {}).get("data-explained", "")
        done, _, of = explained.partition("/")
        if not explained or done != of:
            fails.append("why idle: %s of the timeline's device gaps explained on hover" % explained)
    processes = sum(len(i["sections"]) for i in stats["inputs"])
    if processes >= 2:
        rt = dom.tables.get("ranks-table", [])[1:]
        # a process of the job that ran no GPU work (torchrun's launcher) has its row, with
        # neither busy nor idle time, and no row in gpu_time_breakdown
        idle = sorted(int(r["GPU idle (ns)"]) for r in rt
                      if int(r["GPU idle (ns)"]) or int(r["GPU busy (ns)"]))
        per = {}
        for r in bd:
            per[(r["Rank"], r["PID"])] = per.get((r["Rank"], r["PID"]), 0) + r["Idle (ns)"]
        if idle != sorted(per.values()):
            fails.append("ranks table idle %s, gpu_time_breakdown %s" % (idle, sorted(per.values())))
        steps = report(stats, "rank_steps") or []
        want = next((s["Verdict"] for s in steps if s["Step"] == "all"), None)
        line = dom.ids.get("straggler", {}).get("text", "")
        if want and want not in line:
            fails.append("straggler line %r, rank_steps says %r" % (line, want))
        if not dom.ids.get("nav-ranks"):
            fails.append("no Ranks link with %d processes" % processes)
    elif dom.ids.get("nav-ranks"):
        fails.append("a Ranks link with one process")
    for name in ("gpu_time_breakdown", "comm_compute_overlap", "kern_rank_spread", "rank_steps",
                 "cuda_launch_stats", "gpu_queue_depth", "gpu_idle_breakdown", "cuda_kern_stack_sum",
                 "cuda_gpu_mem_usage"):
        rows = report(stats, name)
        if rows and len(dom.tables.get("table-" + name, [])) - 1 != len(rows):
            fails.append("table %s: %d rows on the page, tally stats %d" % (
                name, len(dom.tables.get("table-" + name, [])) - 1, len(rows)))
    # one time axis: every chart's plot area where the timeline's is
    canvas = [a for t, a in dom.elements if a.get("id") == "tl-canvas"]
    overs = [a.get("style", "") for t, a in dom.elements if (a.get("class") or "") == "u-over"]
    if canvas and overs:
        want = "left: %spx" % canvas[0].get("data-plot-left"), "width: %spx" % canvas[0].get("data-plot-width")
        bad = [s for s in overs if want[0] not in s or want[1] not in s]
        if bad:
            fails.append("%d chart(s) not on the timeline's axis (%s, %s): %s" % (len(bad), want[0], want[1], bad[0]))
    values = [a for a in by_class(dom, "u-value")]
    if dom.text_of_class.get("u-value", []).count("--"):
        fails.append("a legend says -- before any hover")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dom")
    ap.add_argument("stats")
    ap.add_argument("check")
    ap.add_argument("png")
    ap.add_argument("--ranks", type=int, default=0)
    ap.add_argument("--kernels", type=int, default=-1, help="kernel instances the generator made")
    ap.add_argument("--gpu-metrics", help="tally stats -r gpu_metrics_sum -f json of the trace")
    ap.add_argument("--metric-charts", type=int, default=-1, help="metric charts (device x unit)")
    o = ap.parse_args()
    fails = []
    dom = Dom()
    dom.feed(open(o.dom, encoding="utf-8", errors="replace").read())
    text = "".join(dom.text)
    stats = json.load(open(o.stats))

    if dom.ids.get("tally-errors", {}).get("text", "").strip():
        fails.append("script errors: " + dom.ids["tally-errors"]["text"].strip())
    if "data-tally-ready" not in dom.attrs_seen:
        fails.append("the page did not finish drawing (no data-tally-ready)")
    if "data-pwned" in dom.attrs_seen or dom.tags.get("img"):
        fails.append("a name from the trace was run as HTML")
    word = dom.ids.get("verdict-word", {}).get("text", "")
    if word != stats["verdict"]:
        fails.append("verdict %r, tally stats says %r" % (word, stats["verdict"]))
    # every reason, window and fix line of tally check, as it says them
    for line in open(o.check, encoding="utf-8", errors="replace"):
        line = line.strip()
        if line.startswith(("- ", "when: ", "fix: ")) and line not in text:
            fails.append("tally check says %r; the page does not" % line)

    kern = next(r for r in stats["reports"] if r["name"] == "cuda_gpu_kern_sum")
    rows = dom.tables.get("table-cuda_gpu_kern_sum", [])[1:]  # [0]: the header row
    if kern["rows"] and not rows:
        fails.append("no kernel table")
    page = {r.get("Name"): int(r.get("Instances", -1)) for r in rows}
    for r in kern["rows"][:10]:
        if page.get(r["Name"]) != r["Instances"]:
            fails.append("kernel %r: page %s, tally stats %s" % (r["Name"], page.get(r["Name"]), r["Instances"]))
    if rows and rows[0].get("Name") != kern["rows"][0]["Name"]:
        fails.append("top kernel %r, tally stats %r" % (rows[0].get("Name"), kern["rows"][0]["Name"]))
    if o.kernels >= 0 and sum(page.values()) != o.kernels:
        fails.append("kernel instances %d, the generator made %d" % (sum(page.values()), o.kernels))

    if o.ranks:
        ranks = dom.tables.get("ranks-table", [])[1:]
        if len(ranks) != o.ranks:
            fails.append("ranks table has %d rows, want %d" % (len(ranks), o.ranks))
        if not dom.ids.get("straggler", {}).get("text", "").startswith("Steps: "):
            fails.append("no straggler line")

    if o.gpu_metrics:  # the summary table as tally stats says it, and a chart per device and unit
        want = json.load(open(o.gpu_metrics))["reports"][0]["rows"]
        rows = dom.tables.get("table-gpu_metrics_sum", [])[1:]
        got = {(r.get("Device"), r.get("Name")): r.get("Samples") for r in rows}
        for r in want:
            if got.get((str(r["Device"]), r["Name"])) != ("" if r["Samples"] is None else str(r["Samples"])):
                fails.append("gpu_metrics_sum %s of device %s: page %r, tally stats %r" % (
                    r["Name"], r["Device"], got.get((str(r["Device"]), r["Name"])), r["Samples"]))
        if len(rows) != len(want):
            fails.append("gpu_metrics_sum: %d rows on the page, %d from tally stats" % (len(rows), len(want)))
    if o.metric_charts >= 0 and dom.classes.get("metrics-chart", 0) != o.metric_charts:
        fails.append("%d metric charts, want %d" % (dom.classes.get("metrics-chart", 0), o.metric_charts))

    fails += analyses(dom, stats, text, o.ranks)
    colours = png_colours(o.png)
    if colours is not None and colours < 50:
        fails.append("screenshot %s has %d colours: blank?" % (o.png, colours))
    for f in fails:
        print("  " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
