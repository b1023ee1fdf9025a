#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One truth: every output of tally gives the same figure for the same question (issue 31).

For every kept trace in tests/data/ and for random traces of the test source (tally-testsrc and
tally-metricsgen, seeded), on the CPU:

  the page      tally report's page embeds the JSON that `tally stats -f json` prints for the
                same reports, byte for byte once parsed; its timeline counts from the same origin,
                draws gpu_gaps' own gaps with their classes, and its per-process figures are the
                sums of gpu_time_breakdown's rows, its ranks table's top kernel kern_rank_spread's;
  SQLite        the export's nsys-shape queries (counts and summed durations of kernels, API
                calls, copies, memsets, NVTX ranges, blocking calls) give cuda_gpu_kern_sum's,
                cuda_api_sum's, cuda_gpu_mem_time_sum's, nvtx_sum's and osrt_sum's sums;
  compare       its count, p50 (Med) and p90 per kernel name and copy kind over the whole run,
                on each side, are stats' own for that side's trace;
  the model     the cross-checks every output relies on: a gap's class follows its counters (busy
                outside the trace above 1% SM or GR Active, never idle); the breakdown's parts
                add up to the span and its idle to gpu_gaps' and gpu_idle_breakdown's, whose
                stacks count no sample of a gap busy outside the trace; a thread's
                sampled time of one source (Python, native) in a gap is at most the gap; every share ("% of ...") is between 0
                and 100; the diagnosis's idle cost, longest gap, straggler lead and loss cost are
                those of the reports it reads.

  test-consistency.py TALLY TALLY_TESTSRC TALLY_METRICSGEN SRC_TESTS_DIR [RANDOM_TRACES]

Prints "ok   ..." or "FAIL ..." per check; exit 1 when a check failed or none ran, else 0.
"""
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile

TALLY, TESTSRC, METRICSGEN, SRC = sys.argv[1:5]
RANDOM = int(sys.argv[5]) if len(sys.argv) > 5 else 12
BUSY = "busy outside trace"
GAP_BUSY_PCT = 1.0  # gaps.h
passed = failed = 0


def ok(what):
    global passed
    passed += 1
    print("ok   " + what)


def bad(what, why):
    global failed
    failed += 1
    print("FAIL %s: %s" % (what, why))


def check(what, problems):
    """problems: a list of what is wrong (empty: the check holds)."""
    if problems:
        bad(what, "; ".join(str(p) for p in problems[:6]) +
            (" (%d more)" % (len(problems) - 6) if len(problems) > 6 else ""))
    else:
        ok(what)


def run(*args):
    p = subprocess.run([TALLY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(os.environ, LC_ALL="C", TZ="UTC", NO_COLOR="1"))
    if p.returncode not in (0, 1):
        raise RuntimeError("tally %s: exit %d: %s" % (" ".join(args), p.returncode,
                                                      p.stderr.decode(errors="replace")[-400:]))
    return p.stdout


def stats_json(trace, reports):
    return json.loads(run("stats", "-f", "json", "-r", ",".join(reports), trace))


def page_blocks(html):
    blocks = {}
    for m in re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S):
        blocks[m.group(1)] = json.loads(m.group(2))
    return blocks


def rows(js, name):
    for r in js["reports"]:
        if r["name"] == name:
            return r["rows"]
    return []


def close(a, b, tol=1e-6):
    return a is not None and b is not None and abs(a - b) <= tol * max(1.0, abs(a), abs(b))


# ---- the page -----------------------------------------------------------------------------------

def check_page(label, trace, tmp):
    out = os.path.join(tmp, "page.html")
    run("report", "-q", "--force", "-o", out, trace)
    with open(out, encoding="utf-8") as f:
        blocks = page_blocks(f.read())
    ps, tl = blocks["tally-stats"], blocks["tally-timeline"]
    names = [r["name"] for r in ps["reports"]]
    st = stats_json(trace, names)
    diff = []
    if ps != st:
        for k in sorted(set(ps) | set(st)):
            if k != "reports" and ps.get(k) != st.get(k):
                diff.append("%s: page %r, stats %r" % (k, ps.get(k), st.get(k)))
        for a, b in zip(ps["reports"], st["reports"]):
            if a != b:
                diff.append("report %s differs" % a["name"])
        if len(ps["reports"]) != len(st["reports"]):
            diff.append("%d reports on the page, %d from stats" % (len(ps["reports"]), len(st["reports"])))
    check("%s: the page's figures are `tally stats -f json -r <its reports>`" % label, diff)
    check("%s: one time origin (the page's t0 is stats' time_base_ns)" % label,
          [] if tl["t0_ns"] == st["time_base_ns"] else ["t0 %d, base %d" % (tl["t0_ns"], st["time_base_ns"])])
    # the gaps drawn are gpu_gaps' rows (those on a lane of their own), with their classes
    pid = {i: s["pid"] for i, s in enumerate(tl["sections"])}
    drawn = set()
    for g in tl["gaps"]:
        lane = tl["lanes"][g[0]]
        stream = "all" if lane["type"] == "device" else str(lane["stream"])
        drawn.add((pid.get(lane["sec"]), lane["device"], stream, g[1], g[2] - g[1], g[5]))
    listed = {(r["PID"], r["Device"], r["Stream"], r["Start (ns)"], r["Duration (ns)"], r["Class"])
              for r in rows(st, "gpu_gaps")}
    lanes = {(pid.get(l["sec"]), l["device"], "all" if l["type"] == "device" else str(l["stream"]))
             for l in tl["lanes"] if l["type"] in ("device", "gpu") and l["sec"] in pid}
    listed = {g for g in listed if g[:3] in lanes}
    check("%s: the page draws gpu_gaps' gaps, where and of the class stats says" % label,
          [] if drawn == listed else ["drawn only: %s" % sorted(drawn - listed)[:3],
                                      "listed only: %s" % sorted(listed - drawn)[:3]])
    # each process's figures: the sums of its gpu_time_breakdown rows
    bd = rows(st, "gpu_time_breakdown")
    probs = []
    for s in tl["sections"]:
        if s["summary"]:
            continue
        mine = [r for r in bd if r["PID"] == s["pid"] and r["Rank"] == (s["rank"] or "-")]
        want = {"gpu_idle_ns": sum(r["Idle (ns)"] for r in mine),
                "gpu_idle_unproven_ns": sum(r["Idle Unproven (ns)"] for r in mine),
                "compute_ns": sum(r["Compute (ns)"] for r in mine),
                "comm_exposed_ns": sum(r["Communication (ns)"] for r in mine),
                "copy_exposed_ns": sum(r["Copy/Memset (ns)"] for r in mine),
                "gpu_busy_ns": sum(r["Compute (ns)"] + r["Communication (ns)"] + r["Copy/Memset (ns)"]
                                   for r in mine)}
        probs += ["pid %s %s: page %s, stats %s" % (s["pid"], k, s[k], v) for k, v in want.items()
                  if s[k] != v]
    check("%s: the page's per-process figures are gpu_time_breakdown's" % label, probs)
    # the ranks table's top kernel: kern_rank_spread's own rows, the process's largest total
    spread = rows(st, "kern_rank_spread")
    probs = []
    for s in tl["sections"]:
        if s["summary"]:
            continue
        best = None
        for r in spread:
            if r["PID"] == s["pid"] and r["Rank"] == (s["rank"] or "-") and \
                    (best is None or r["Total Time (ns)"] > best["Total Time (ns)"]):
                best = r
        want = (best["Name"], best["Total Time (ns)"]) if best else ("", 0)
        if (s["top_kernel"], s["top_kernel_ns"]) != want:
            probs.append("pid %s: page %r, kern_rank_spread %r" % (s["pid"], (s["top_kernel"], s["top_kernel_ns"]),
                                                                  want))
    check("%s: the ranks table's top kernel is kern_rank_spread's, per process" % label, probs)
    if os.path.basename(trace) == "gen-ranks.tally":
        # its construction (tests/data/regenerate.sh): 12 steps of ten 1 ms kernels, rank 3's 1.5 ms;
        # one 4 ms NCCL kernel a step; the rank with the 50 ms sleep is rank 2
        want = {"RANK=0": 120000000, "RANK=1": 120000000, "RANK=2": 120000000, "RANK=3": 180000000}
        got = {s["rank"]: s["top_kernel_ns"] for s in tl["sections"]}
        names = {s["top_kernel"] for s in tl["sections"]}
        steps = [r for r in rows(st, "rank_steps") if r["Step"] == "all"]
        check("%s: the ranks table: each rank's top kernel and its time as built, the straggler rank 2"
              % label, ([] if got == want else ["top kernel ns %r, built %r" % (got, want)]) +
              (["top kernels %r" % names] if len(names) != 1 or any("nccl" in n.lower() for n in names) else []) +
              ([] if steps and steps[0]["Slowest Rank"] == "RANK=2" else ["rank_steps %r" % steps[:1]]))


# ---- SQLite ----------------------------------------------------------------------------------------

def check_sqlite(label, trace, st, tmp):
    db = os.path.join(tmp, "t.sqlite")
    run("export", "-q", "-f", "sqlite", "--force", "-o", db, trace)
    q = sqlite3.connect(db).execute

    def one(report, sql, count_col, total_col, key=None):
        want_n = sum(r[count_col] for r in rows(st, report))
        want_t = sum(r[total_col] for r in rows(st, report))
        n, t = q(sql).fetchone()
        return [] if (n or 0, t or 0) == (want_n, want_t) else [
            "%s: SQLite %s calls/%s ns, stats %s/%s" % (report, n, t, want_n, want_t)]

    probs = []
    probs += one("cuda_gpu_kern_sum", "SELECT COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL",
                 "Instances", "Total Time (ns)")
    probs += one("cuda_api_sum", "SELECT COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                 "Num Calls", "Total Time (ns)")
    probs += one("cuda_gpu_mem_time_sum",
                 "SELECT SUM(n), SUM(t) FROM (SELECT COUNT(*) n, SUM(end - start) t FROM "
                 "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT COUNT(*), SUM(end - start) FROM "
                 "CUPTI_ACTIVITY_KIND_MEMSET)", "Count", "Total Time (ns)")
    probs += one("nvtx_sum", "SELECT COUNT(*), SUM(end - start) FROM NVTX_EVENTS WHERE eventType IN (59, 60) "
                 "AND end IS NOT NULL", "Instances", "Total Time (ns)")
    probs += one("osrt_sum", "SELECT COUNT(*), SUM(end - start) FROM OSRT_API", "Num Calls", "Total Time (ns)")
    # per kernel name, as nsys's own query groups them
    per = {r["Name"]: (r["Instances"], r["Total Time (ns)"]) for r in rows(st, "cuda_gpu_kern_sum")}
    got = {name: (n, t) for name, n, t in q(
        "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1")}
    if got != per:
        probs.append("kernels by name: %s" % sorted(set(got.items()) ^ set(per.items()))[:2])
    check("%s: the SQLite export's nsys-shape queries give stats' sums" % label, probs)


# ---- compare -------------------------------------------------------------------------------------

def check_compare(label, trace, other):
    """compare's figures per kernel name and copy kind, on each side, are stats' own for that side's
    trace over the whole run: the count (Instances/Count) and p50 (Med) of cuda_gpu_kern_sum and
    cuda_gpu_mem_time_sum, and for a one-process trace p90 (kern_rank_spread's P90)."""
    p = subprocess.run([TALLY, "compare", "-f", "json", trace, other], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode not in (0, 1, 5):
        bad(label + ": compare", "exit %d" % p.returncode)
        return
    names = json.loads(p.stdout)["names"]
    for side, path in (("a", trace), ("b", other)):
        st = stats_json(path, ["cuda_gpu_kern_sum:mangled", "cuda_gpu_mem_time_sum",
                               "kern_rank_spread:mangled"])
        want = {r["Name"]: (r["Instances"], r["Med (ns)"]) for r in rows(st, "cuda_gpu_kern_sum")}
        want.update({r["Operation"]: (r["Count"], r["Med (ns)"])
                     for r in rows(st, "cuda_gpu_mem_time_sum")})
        got = {n["name"]: (n[side]["count"], n[side]["p50_ns"]) for n in names if n[side]["count"]}
        probs = ["%s: compare %s, stats %s" % (k, got.get(k), want.get(k))
                 for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)]
        spread = rows(st, "kern_rank_spread")
        if len({r["PID"] for r in spread}) == 1:
            p90 = {n["name"]: n[side]["p90_ns"] for n in names}
            probs += ["%s: compare p90 %s, kern_rank_spread P90 %s" % (r["Name"], p90.get(r["Name"]), r["P90 (ns)"])
                      for r in spread if p90.get(r["Name"]) != r["P90 (ns)"]]
        check("%s: compare's side %s count, p50 and p90 per kernel and copy kind are stats'"
              % (label, side.upper()), probs)


# ---- the model's cross-checks ---------------------------------------------------------------------

def share_columns(st):
    probs = []
    for rep in st["reports"]:
        for r in rep["rows"]:
            for k, v in r.items():
                if "(% of" in k and v is not None and not -1e-9 <= v <= 100 + 1e-9:
                    probs.append("%s %s = %r" % (rep["name"], k, v))
    return probs


def check_model(label, st):
    gaps = rows(st, "gpu_gaps")
    dev_gaps = [g for g in gaps if g["Stream"] == "all"]
    probs = []
    for g in gaps:
        sm, gr = g["SM Active (%)"], g["GR Active (%)"]
        counters_busy = g["Sampled (ns)"] and ((sm or 0) > GAP_BUSY_PCT or (gr or 0) > GAP_BUSY_PCT)
        if g["Class"] not in ("idle", "unproven", BUSY):
            probs.append("class %r" % g["Class"])
        elif g["Class"] == "idle" and counters_busy:
            probs.append("gap at %s called idle with SM %s%%, GR %s%%" % (g["Start (ns)"], sm, gr))
        elif g["Class"] == BUSY and not counters_busy:
            probs.append("gap at %s busy outside the trace with SM %s%%, GR %s%%" % (g["Start (ns)"], sm, gr))
    check("%s: a gap's class follows its counters: busy outside the trace, never idle, above %g%%"
          % (label, GAP_BUSY_PCT), probs)

    bd = rows(st, "gpu_time_breakdown")
    probs = []
    for r in bd:
        mine = [g for g in dev_gaps if g["PID"] == r["PID"] and g["Device"] == r["Device"]]
        parts = (r["Compute (ns)"] + r["Communication (ns)"] + r["Copy/Memset (ns)"] +
                 r["Busy Outside Trace (ns)"] + r["Idle (ns)"])
        if parts != r["Span (ns)"]:
            probs.append("pid %s GPU %s: parts %d, span %d" % (r["PID"], r["Device"], parts, r["Span (ns)"]))
        if r["Idle Proven (ns)"] + r["Idle Unproven (ns)"] != r["Idle (ns)"]:
            probs.append("pid %s GPU %s: proven + unproven != idle" % (r["PID"], r["Device"]))
        if r["Busy Outside Trace (ns)"] != sum(g["Duration (ns)"] for g in mine if g["Class"] == BUSY):
            probs.append("pid %s GPU %s: busy outside %d, gpu_gaps' %d" % (
                r["PID"], r["Device"], r["Busy Outside Trace (ns)"],
                sum(g["Duration (ns)"] for g in mine if g["Class"] == BUSY)))
        if r["Idle in Gaps (ns)"] != sum(g["Duration (ns)"] for g in mine if g["Class"] != BUSY):
            probs.append("pid %s GPU %s: idle in gaps %d, gpu_gaps' %d" % (
                r["PID"], r["Device"], r["Idle in Gaps (ns)"],
                sum(g["Duration (ns)"] for g in mine if g["Class"] != BUSY)))
    check("%s: gpu_time_breakdown's parts add up to the span; its idle and busy outside are gpu_gaps'"
          % label, probs)

    ib = rows(st, "gpu_idle_breakdown")
    probs = []
    for r in bd:
        mine = [c for c in ib if c["PID"] == r["PID"] and c["Device"] == r["Device"] and c["Rank"] == r["Rank"]]
        classes = sum(c["Idle Time (ns)"] for c in mine if ":" not in c["Category"] and c["Category"] != BUSY)
        outside = sum(c["Idle Time (ns)"] for c in mine if c["Category"] == BUSY)
        if mine and (classes != r["Idle (ns)"] or outside != r["Busy Outside Trace (ns)"]):
            probs.append("pid %s GPU %s: classes %d busy %d, breakdown idle %d busy %d" % (
                r["PID"], r["Device"], classes, outside, r["Idle (ns)"], r["Busy Outside Trace (ns)"]))
    check("%s: gpu_idle_breakdown's classes are gpu_time_breakdown's idle" % label, probs)
    # its stack rows: samples of idle gaps only, so a thread's stack time is within its class's
    probs = []
    per = {}
    for c in ib:
        if ":" in c["Category"]:
            cls, kind = c["Category"].split(":", 1)
            key = (c["PID"], c["Device"], c["Rank"], cls, c["Thread"], kind.split(",")[0])
            per[key] = per.get(key, 0) + c["Idle Time (ns)"]
    for (pid, dev, rank, cls, thread, kind), ns in per.items():
        idle = sum(c["Idle Time (ns)"] for c in ib if (c["PID"], c["Device"], c["Rank"], c["Category"]) ==
                   (pid, dev, rank, cls))
        if ns > idle:
            probs.append("pid %s GPU %s %s:%s of %s: %d ns of stacks in %d ns of idle" % (
                pid, dev, cls, kind, thread, ns, idle))
    check("%s: gpu_idle_breakdown's stacks stand for no more than their class's idle (busy outside "
          "excluded)" % label, probs)

    why = rows(st, "gpu_idle_why")
    probs = []
    heads = {(w["PID"], w["Device"], w["Start (ns)"], w["Duration (ns)"], w["Proof"])
             for w in why if w["What"] == "gap"}
    listed = {(g["PID"], g["Device"], g["Start (ns)"], g["Duration (ns)"], g["Class"]) for g in dev_gaps}
    if why and heads != listed:
        probs.append("gpu_idle_why's gaps are not gpu_gaps' device gaps: %s" % sorted(heads ^ listed)[:2])
    per = {}
    for w in why:
        if w["What"] in ("python", "native", "more"):
            # a thread's Python samples and its native ones (--sample python,native) are two
            # series, each standing for the thread's time: each is bounded by the gap
            src = w["What"] if w["What"] != "more" else ("python" if "Python" in w["Detail"] else "native")
            key = (w["Gap"], w["Thread"], src)
            per[key] = per.get(key, 0) + w["Time (ns)"]
    dur = {w["Gap"]: w["Duration (ns)"] for w in why}
    probs += ["gap %s: %s sampled %d ns (%s) in %d" % (g, t, ns, src, dur[g])
              for (g, t, src), ns in per.items() if ns > dur[g]]
    check("%s: gpu_idle_why's gaps are gpu_gaps'; a thread's sampled time in a gap is at most the gap"
          % label, probs)

    check("%s: every share (%% of ...) is between 0 and 100" % label, share_columns(st))

    diag = rows(st, "diagnosis")
    probs = []
    idle = [f for f in diag if f["Rule"] == "gpu-idle"]
    past = [r for r in bd if r["Span (ns)"] and r["Idle (ns)"] * 100 > 10 * r["Span (ns)"]]
    if bool(idle) != bool(past):
        probs.append("gpu-idle finding %s, devices past 10%%: %d" % (bool(idle), len(past)))
    elif idle:
        if idle[0]["Cost (ns)"] != sum(r["Idle (ns)"] for r in past):
            probs.append("gpu-idle cost %d, breakdown's idle %d" % (idle[0]["Cost (ns)"],
                                                                    sum(r["Idle (ns)"] for r in past)))
        m = re.search(r"longest idle stretch ([0-9.]+) (ms|us|s) at ([-+][0-9.]+) s", idle[0]["Where"])
        starts = [g["Start (ns)"] for g in dev_gaps if g["Class"] != BUSY]
        if m and starts and not any(abs(float(m.group(3)) * 1e9 - s) <= 5e5 for s in starts):
            probs.append("longest stretch at %s s is no gpu_gaps start" % m.group(3))
    gpu_time = sum(r["Span (ns)"] for r in bd)
    for f in diag:
        if f["Cost (ns)"] and gpu_time and not close(f["Cost (% of GPU time)"], 100.0 * f["Cost (ns)"] / gpu_time):
            probs.append("%s: %s%% of GPU time for %d of %d ns" % (f["Rule"], f["Cost (% of GPU time)"],
                                                                   f["Cost (ns)"], gpu_time))
        if f["Cost (ns)"] > gpu_time:
            probs.append("%s costs %d ns, more than the run's GPU time %d" % (f["Rule"], f["Cost (ns)"], gpu_time))
    strag = [f for f in diag if f["Rule"] == "straggler"]
    steps = [s for s in rows(st, "rank_steps") if s["Step"] == "all"]
    if strag and steps:
        m = re.search(r"([0-9.]+) ms ahead of the others' median \(([0-9.]+)% of its step\)", strag[0]["Finding"])
        if not m or abs(float(m.group(1)) * 1e6 - steps[0]["Lead (ns)"]) > 5e4 or \
                abs(float(m.group(2)) - steps[0]["Lead (% of slowest step)"]) > 0.051:
            probs.append("straggler %r, rank_steps lead %s (%s%%)" % (
                strag[0]["Finding"], steps[0]["Lead (ns)"], steps[0]["Lead (% of slowest step)"]))
    check("%s: the diagnosis's costs, longest gap and straggler lead are the reports'" % label, probs)


# ---- the traces ---------------------------------------------------------------------------------

ALL = None
COMPARE_OTHER = os.path.join(SRC, "data", "gen-tiny.tally")  # compare's side B beside each trace


def one_trace(label, trace, tmp):
    global ALL
    if ALL is None:
        help_text = subprocess.run([TALLY, "stats", "--help"], stdout=subprocess.PIPE).stdout.decode()
        ALL = [l.split()[0] for l in help_text.split("reports:", 1)[1].splitlines() if l.strip()]
    try:
        st = stats_json(trace, ALL)
        check_model(label, st)
        check_page(label, trace, tmp)
        check_sqlite(label, trace, st, tmp)
        check_compare(label, trace, COMPARE_OTHER)
    except (RuntimeError, KeyError, ValueError) as e:
        bad(label, "could not be checked: %r" % e)


def random_traces(tmp, n):
    """(label, path): the test source with seeded shapes; every third a metrics trace."""
    rnd = random.Random(31)
    out = []
    for i in range(n):
        seed = rnd.randrange(1, 1 << 30)
        path = os.path.join(tmp, "rand%d.tally" % i)
        if i % 4 == 3:
            cmd = [METRICSGEN, "-o", path, "--seconds", "0.2", "--hz", str(rnd.choice((500, 1000))),
                   "--devices", str(rnd.choice((1, 2))), "--other-gaps", str(rnd.choice((0, 3, 5)))]
            if i % 8 == 7:
                cmd += ["--host"]
        else:
            cmd = [TESTSRC, "-o", path, "--t0", "1796000000000000000", "--seed", str(seed),
                   "--kernels", str(rnd.randrange(50, 400)), "--memcpys", str(rnd.randrange(0, 30)),
                   "--memsets", str(rnd.randrange(0, 10)), "--ranges", str(rnd.randrange(0, 12)),
                   "--devices", str(rnd.choice((1, 1, 2))), "--batch", "64"]
            k = int(cmd[cmd.index("--kernels") + 1])
            if rnd.random() < 0.7:
                cmd += ["--idle-at", "%d:%d" % (rnd.randrange(1, k), rnd.randrange(2, 120))]
            if rnd.random() < 0.5:
                cmd += ["--host", str(rnd.randrange(40, 220))]
                if rnd.random() < 0.5:
                    cmd += ["--host-starved"]
            if rnd.random() < 0.3:
                cmd += ["--stacks", str(rnd.randrange(1, 5))]
            if rnd.random() < 0.25:
                cmd += ["--bad-time-every", str(rnd.randrange(20, 80))]
        label = "random %d (%s)" % (i, " ".join(os.path.basename(c) for c in cmd[1:]))
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if p.returncode != 0 or not os.path.exists(path):
            bad(label, "the generator failed (exit %d)" % p.returncode)
            continue
        out.append((label, path))
    return out


def check_busy_gaps_unsampled(tmp):
    """A metrics trace with host samples (tally-metricsgen --host --other-gaps 3): on each device
    every 4 ms gap holds 4 samples of thread 4242 at +0.5, +1.5, +2.5 and +3.5 ms, each standing
    for its time to the next sample within the gap (3.5 ms in all); every 3rd gap of device 0 runs
    another process's kernel at SM Active 40% (busy outside the trace).  The breakdown's stack of
    each device counts the samples of its idle gaps only: 4 and 3.5 ms for each gap that gpu_gaps
    and gpu_time_breakdown call idle, none of the busy ones."""
    path = os.path.join(tmp, "busy-host.tally")
    subprocess.run([METRICSGEN, "-o", path, "--seconds", "0.2", "--hz", "1000", "--devices", "2",
                    "--other-gaps", "3", "--host"], check=True)
    st = stats_json(path, ["gpu_idle_breakdown", "gpu_gaps", "gpu_time_breakdown", "diagnosis"])
    gaps = [g for g in rows(st, "gpu_gaps") if g["Stream"] == "all"]
    probs = []
    for dev in (0, 1):
        idle = [g for g in gaps if g["Device"] == dev and g["Class"] != BUSY]
        busy = [g for g in gaps if g["Device"] == dev and g["Class"] == BUSY]
        if dev == 0 and not busy:
            probs.append("device 0 has no busy-outside gap to test with")
        if any(g["Duration (ns)"] != 4000000 for g in idle + busy):
            probs.append("device %d: a gap not of 4 ms" % dev)
        stacks = [c for c in rows(st, "gpu_idle_breakdown") if c["Device"] == dev and ":" in c["Category"]]
        want = (4 * len(idle), 3500000 * len(idle))
        got = (sum(c["Samples"] for c in stacks), sum(c["Idle Time (ns)"] for c in stacks))
        if got != want:
            probs.append("device %d: stacks %d samples / %d ns, its %d idle gaps hold %d / %d" % (
                dev, got[0], got[1], len(idle), want[0], want[1]))
        classes = sum(c["Idle Time (ns)"] for c in rows(st, "gpu_idle_breakdown")
                      if c["Device"] == dev and ":" not in c["Category"] and c["Category"] != BUSY)
        bd = [r for r in rows(st, "gpu_time_breakdown") if r["Device"] == dev]
        if not bd or classes != sum(g["Duration (ns)"] for g in idle) or classes != bd[0]["Idle in Gaps (ns)"]:
            probs.append("device %d: breakdown idle %d, gpu_gaps' idle %d, gpu_time_breakdown's %s" % (
                dev, classes, sum(g["Duration (ns)"] for g in idle), bd[0]["Idle in Gaps (ns)"] if bd else None))
    idle_find = [f for f in rows(st, "diagnosis") if f["Rule"] == "gpu-idle"]
    all_idle = sum(r["Idle (ns)"] for r in rows(st, "gpu_time_breakdown"))
    if idle_find and idle_find[0]["Cost (ns)"] > all_idle:
        probs.append("diagnosis idle %d, more than the breakdown's %d" % (idle_find[0]["Cost (ns)"], all_idle))
    check("metricsgen --host --other-gaps 3: gpu_idle_breakdown's stacks count only the gaps "
          "gpu_gaps calls idle, none busy outside the trace", probs)


def main():
    data = os.path.join(SRC, "data")
    kept = sorted(f for f in os.listdir(data) if f.endswith(".tally"))
    with tempfile.TemporaryDirectory() as tmp:
        for name in kept:
            one_trace(name, os.path.join(data, name), tmp)
        for label, path in random_traces(tmp, RANDOM):
            one_trace(label, path, tmp)
        check_busy_gaps_unsampled(tmp)
    print("test-consistency.py: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed or not passed else 0)


main()
