#!/usr/bin/env python3
"""Host samples and blocking calls of a Chrome export, read the way Perfetto's JSON importer reads
them, against the records themselves (tally-dump's listing of the trace).

Perfetto (src/trace_processor/importers/json and common/legacy_v8_cpu_profile_tracker) imports
stack samples of a JSON trace only as the legacy V8 CPU profile: a "ph":"P" event named Profile
(args.data.startTime, us) and ProfileChunk events (args.data.cpuProfile.nodes with id, parent,
callFrame.functionName; .samples, node ids; args.data.timeDeltas, us), keyed by (id, pid).  It
reads them in file order, unsorted: a chunk before its Profile, a node defined twice, a parent not
yet defined, or samples and deltas of different lengths are errors it counts and drops.  Top-level
"samples"/"stackFrames" it skips.  This check applies those rules, rebuilds every sample's time and
stack depth, and compares them with the trace's CPU_SAMPLE records; and every OSRT record must be
an X slice named by its call on its thread's track.

Usage: check-chrome-samples.py EXPORT.json EXPECTED.txt   (test-idle-why.sh writes EXPECTED)
"""
import collections
import json
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    d = json.load(open(sys.argv[1]))
    ev = d["traceEvents"] if isinstance(d, dict) else d
    sessions = {}  # (id, pid) -> {"t": us, "nodes": {id: (parent, name)}, "samples": [...]}
    for e in ev:
        if e.get("ph") != "P":
            continue
        key = (e["id"], e["pid"])
        data = e["args"]["data"]
        if e["name"] == "Profile":
            if key in sessions:
                fail(f"Profile {key} twice")
            sessions[key] = {"t": data["startTime"], "nodes": {}, "samples": [], "tid": e["tid"]}
            continue
        if key not in sessions:
            fail(f"ProfileChunk {key} before its Profile")
        s = sessions[key]
        prof = data.get("cpuProfile", {})
        for n in prof.get("nodes", []):
            if n["id"] in s["nodes"]:
                fail(f"node {n['id']} of {key} defined twice")
            if "parent" in n and n["parent"] not in s["nodes"]:
                fail(f"node {n['id']} of {key}: parent {n['parent']} not yet defined")
            s["nodes"][n["id"]] = (n.get("parent"), n["callFrame"]["functionName"])
        samples, deltas = prof.get("samples", []), data.get("timeDeltas", [])
        if len(samples) != len(deltas):
            fail(f"{key}: {len(samples)} samples but {len(deltas)} time deltas")
        for node, dt in zip(samples, deltas):
            if node not in s["nodes"]:
                fail(f"{key}: a sample of node {node}, never defined")
            s["t"] += dt
            s["samples"].append((s["t"], node))

    def depth(s, node):
        n = 0
        while node is not None:
            node = s["nodes"][node][0]
            n += 1
        return n

    got = collections.Counter()
    for (sid, pid), s in sessions.items():
        for t, node in s["samples"]:
            got[(s["tid"], t, depth(s, node))] += 1

    # the records, as the test lists them from tally-dump and the trace's construction:
    # "cpu_sample track=TID t=REL_US depth=FRAMES" and "osrt track=TID t=REL_US name=CALL"
    want, osrt_want = collections.Counter(), collections.Counter()
    for line in open(sys.argv[2]):
        kind, _, rest = line.rstrip("\n").partition(" ")
        f = dict(x.split("=", 1) for x in rest.split(" "))
        if kind == "cpu_sample":
            want[(int(f["track"]), round(float(f["t"])), int(f["depth"]))] += 1
        elif kind == "osrt":
            osrt_want[(int(f["track"]), f["name"], round(float(f["t"]), 3))] += 1
    if got != want:
        missing, extra = want - got, got - want
        fail(f"samples differ: {sum(missing.values())} missing, e.g. {list(missing)[:2]}; "
             f"{sum(extra.values())} unexpected, e.g. {list(extra)[:2]}")
    osrt_got = collections.Counter(
        (e["tid"], e["name"], round(e["ts"], 3)) for e in ev
        if e.get("ph") == "X" and e.get("cat") == "osrt")
    if osrt_got != osrt_want:
        fail(f"blocking calls differ: want {sorted(osrt_want)[:2]}, got {sorted(osrt_got)[:2]}")
    print(f"ok: {sum(got.values())} samples in {len(sessions)} profiles, "
          f"{sum(osrt_got.values())} blocking calls")


main()
