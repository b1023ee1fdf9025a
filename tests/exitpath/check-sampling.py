# SPDX-License-Identifier: MIT
"""Checks host samples and blocking calls against what a workload says it did.

Reads `tally-dump --host FILE` (format 1.3's CPU_SAMPLE and OSRT records with their stacks,
and the THREADS entries), and compares them with the workload's own account of itself (its
stdout, or the JSON tests/exitpath/sampling.py writes).  The expected values come from the
workload, never from tally.  Prints "ok ..." / "FAIL ..." lines; exits 1 on any failure.
Used by tests/exitpath/test-sampling.sh (CPU) and tests/gpu/sampling.sh (GPU).

  check-sampling.py python DUMP JSON [MISSED]      the Python program's phases (MISSED: the
                                                   trace's sample_ticks_missed)
  check-sampling.py native DUMP BINARY FUNC CPU_NS rate|duration [OVERRUNS]
                                                   native samples in FUNC (from `nm -S BINARY`);
                                                   rate: one per period, with the periods the
                                                   trace counts as folded (sample_overruns)
  check-sampling.py native-min DUMP BINARY FUNC MIN_NS
                                                   native samples in FUNC stand for MIN_NS of
                                                   CPU time or more
  check-sampling.py mixed DUMP BINARY FUNC JSON   mixed stacks in FUNC reach the Python lines
                                                   of tests/exitpath/mixed.py's JSON
  check-sampling.py toggled DUMP BINARY FUNC CPU_NS START_NS END_NS PERIOD_MS OFFSET_NS
                                                   TALLY_BENCH_TOGGLE_MS=PERIOD_MS: samples in
                                                   FUNC (on CPU from START_NS to END_NS,
                                                   CLOCK_MONOTONIC) that stand for its CPU time
                                                   in the intervals that are on, all but 2% in
                                                   such an interval of CLOCK_MONOTONIC (the
                                                   record clock less OFFSET_NS) or at most 20 ms
                                                   after one
  check-sampling.py osrt DUMP CALL MIN_NS MAX_NS [OBJECT]
                                                   a blocking call of that length (and object)
  check-sampling.py locks DUMP OBJECT              every pthread_mutex_lock recorded is on
                                                   OBJECT (the one the program locks), and
                                                   one at least
  check-sampling.py quiet DUMP START_NS END_NS     no native sample of the main thread in the
                                                   window
  check-sampling.py gaps RECORDS HOST MIN_NS N python FILE LINE | pyline FILE LINE |
                                                   pyfunc NAME | native BIN FUNC
                                                   the GPU's idle gaps of MIN_NS or more (N at
                                                   least, from `tally-dump FILE`'s kernel, memcpy
                                                   and memset records) are the main thread's time
                                                   at that line / in that function
  check-sampling.py gap-calls RECORDS HOST MIN_NS N
                                                   and a blocking call of the main thread spans
                                                   most of each
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from bench_toggle import on_share, toggled_off  # noqa: E402

failures = 0


def ok(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1


def parse(path):
    samples, calls, threads = [], [], {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "sample":
            d = dict(kv.split("=", 1) for kv in f[2:6] + f[6:7] if "=" in kv)
            stack = f[f.index("stack") + 1:]
            samples.append({"t": int(f[1]), "dur": int(d["dur"]), "tid": int(d["tid"]),
                            "source": int(d["source"]), "state": int(d["state"]),
                            "flags": int(d["flags"], 16), "stack": stack})
        elif f[0] == "osrt":
            d = dict(kv.split("=", 1) for kv in f[2:] if "=" in kv)
            calls.append({"t": int(f[1]), "dur": int(d["dur"]), "tid": int(d["tid"]),
                          "call": d["call"], "ret": int(d["ret"]),
                          "object": int(d["object"], 16)})
        elif f[0] == "thread":
            threads[int(f[1])] = {"pthread": int(f[2], 16), "flags": int(f[3], 16),
                                  "name": " ".join(f[4:])}
    return samples, calls, threads


def py_top(s):
    """The innermost Python frame: (file, line)."""
    for fr in s["stack"]:
        parts = fr.split(":")
        # a file name with a space ("<frozen importlib._bootstrap>") splits its frame in two
        # words of the dump's line: that frame has no line to compare
        if parts[0] == "py" and len(parts) >= 3 and parts[2].isdigit():
            return parts[1], int(parts[2])
    return None


def share(items, pred):
    return sum(1 for i in items if pred(i)) / len(items) if items else 0.0


def check_python(dump, spec, missed):
    samples, _, threads = parse(dump)
    want = json.load(open(spec))
    py = [s for s in samples if s["source"] == 1]
    main = [t for t, v in threads.items() if v["flags"] & 1]
    ok(len(main) == 1, "the THREADS chunk names one main thread (%s)" % main)
    main = main[0] if main else -1
    margin = 20_000_000
    f = want["file"]
    sleep = [s for s in py if s["tid"] == main and
             want["sleep_start"] + margin <= s["t"] <= want["sleep_end"] - margin]
    at_sleep = share(sleep, lambda s: py_top(s) == (f, want["sleep_line"]))
    waiting = share(sleep, lambda s: s["state"] == 3)
    ok(at_sleep >= 0.9, "the idle stretch made by time.sleep is attributed to its line "
       "%s:%d: %.0f%% of %d main-thread samples" % (f, want["sleep_line"], 100 * at_sleep,
                                                     len(sleep)))
    ok(waiting >= 0.9, "the main thread is waiting (state S) while it sleeps: %.0f%%" %
       (100 * waiting))
    expect = (want["sleep_end"] - want["sleep_start"] - 2 * margin) / 1e6
    ok(0.8 * expect <= len(sleep) + missed and len(sleep) <= 1.05 * expect,
       "wall-clock samples of the sleep at 1 kHz: %d for %.0f ms, with the %d periods the "
       "sampler counted as missed (it woke late: a loaded machine) at least 80%%, at most 105%%"
       % (len(sleep), expect, missed))
    busy = [s for s in py if s["tid"] == main and
            want["busy_start"] + margin <= s["t"] <= want["busy_end"] - margin]
    in_busy = share(busy, lambda s: py_top(s) in [(f, l) for l in want["busy_lines"]])
    ok(in_busy >= 0.9, "the busy loop's samples are in busy() at lines %s: %.0f%% of %d" %
       (want["busy_lines"], 100 * in_busy, len(busy)))
    on_cpu = share(busy, lambda s: s["state"] == 1)
    ok(on_cpu >= 0.6, "the main thread is on CPU (state R) while busy: %.0f%%" % (100 * on_cpu))
    nap = [s for s in py if s["tid"] != main and
           want["busy_start"] + margin <= s["t"] <= want["sleep_end"] - margin]
    at_nap = share(nap, lambda s: py_top(s) == (f, want["nap_line"]) and s["state"] == 3)
    ok(len(nap) > 0 and at_nap >= 0.9,
       "the other thread's samples are at its sleep's line %d, waiting: %.0f%% of %d" %
       (want["nap_line"], 100 * at_nap, len(nap)))
    early = [s for s in py if s["t"] < want["busy_start"]]
    ok(len(early) > 0, "samples from before the program's first line (imports, site): %d "
       "(sampling started at load)" % len(early))


def symbol_range(binary, func):
    """FUNC's address range in BINARY: a C name, or a C++ one demangled ("cpu_work(long)"),
    or a compiler's clone of either ("burn_cpu.constprop.0", "... [clone .isra.0]")."""
    out = subprocess.run(["nm", "-S", "-C", "--defined-only", binary], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.split(None, 3)
        if len(f) == 4 and f[3].split("(")[0].split(".")[0].split(" ")[0] == func:
            start = int(f[0], 16)
            return start, start + int(f[1], 16)
    return None


def native_in(samples, binary, func):
    """The native samples, and those whose innermost frame lies in FUNC of BINARY (None, None
    when nm does not find it)."""
    rng = symbol_range(binary, func)
    ok(rng is not None, "nm finds %s in %s" % (func, binary))
    if not rng:
        return None, None
    name = binary.rsplit("/", 1)[-1]

    def in_func(s):
        fr = s["stack"][0] if s["stack"] else ""
        p = fr.split(":")
        return len(p) == 3 and p[0] == "pc" and p[1] == name and rng[0] <= int(p[2], 16) < rng[1]

    native = [s for s in samples if s["source"] in (2, 3)]
    return native, [s for s in native if in_func(s)]


def check_native(dump, binary, func, cpu_ns, how, overruns=0):
    samples, _, _ = parse(dump)
    native, inside = native_in(samples, binary, func)
    if native is None:
        return
    ok(len(inside) >= 0.9 * len(native) and inside,
       "native samples' innermost frame is %s: %d of %d" % (func, len(inside), len(native)))
    expect = cpu_ns / 1e6
    if how == "rate":
        ok(0.95 * expect <= len(inside) + overruns <= 1.05 * expect,
           "samples agree with the rate: %d and %d periods counted as folded into them for "
           "%.0f ms of CPU at 1 kHz (within 5%%)" % (len(inside), overruns, expect))
    # every sample of the program counts: under load one signal may stand for tens of ms, and
    # the one that lands just after the burn carries the burn's last periods
    stands = sum(s["dur"] for s in native) / 1e6
    ok(0.95 * expect <= stands <= 1.05 * expect,
       "the samples stand for the CPU time: %.0f ms of %.0f ms (within 5%%)" % (stands, expect))
    ok(all(s["state"] == 1 for s in native), "native samples are on CPU (state R)")


def check_native_min(dump, binary, func, min_ns):
    samples, _, _ = parse(dump)
    native, inside = native_in(samples, binary, func)
    if native is None:
        return
    stands = sum(s["dur"] for s in inside)
    ok(stands >= min_ns, "native samples in %s stand for %.0f ms of CPU (at least %.0f ms)" %
       (func, stands / 1e6, min_ns / 1e6))


def check_mixed(dump, binary, func, spec):
    """Mixed samples (--sample python,native) in FUNC: one stack from FUNC (innermost) through
    native frames to the Python call line and the module's line, with native frames outside
    them (the interpreter's own, below the Python frames: placed where the evaluation was, not
    appended at the outer end)."""
    samples, _, _ = parse(dump)
    native, inside = native_in(samples, binary, func)
    if native is None:
        return
    want = json.load(open(spec))
    call = "py:%s:%d:" % (want["file"], want["call_line"])
    module = "py:%s:%d:" % (want["file"], want["module_line"])

    def mixed(s):
        st = s["stack"]
        at = [i for i, fr in enumerate(st) if fr.startswith(call)]
        if not at:
            return False
        i = at[0]
        return (i > 1 and all(not fr.startswith("py:") for fr in st[1:i]) and
                i + 1 < len(st) and st[i + 1].startswith(module) and
                any(fr.startswith("ra:") for fr in st[i + 2:]))
    good = [s for s in inside if mixed(s)]
    ok(len(inside) >= 20 and len(good) >= 0.9 * len(inside),
       "mixed stacks: %d of %d native samples in %s go from it through native frames to %s "
       "and %s, the interpreter's frames beyond" % (len(good), len(inside), func,
                                                    call[:-1], module[:-1]))


def check_toggled(dump, binary, func, cpu_ns, t0, t1, period_ms, offset_ns):
    samples, _, _ = parse(dump)
    native, inside = native_in(samples, binary, func)
    if native is None:
        return
    period = int(period_ms * 1e6)
    # the burn's time in intervals that are on (it runs alone, on CPU from start to end)
    want = cpu_ns / 1e6 * on_share(t0, t1, period)
    stands = sum(s["dur"] for s in inside) / 1e6  # the timer's at the kernel's tick: several
    ok(0.8 * want <= stands <= 1.2 * want,
       "the samples stand for the CPU time in intervals that are on: %.0f ms of %.0f ms "
       "(within 20%%; %.0f ms of CPU in all)" % (stands, want, cpu_ns / 1e6))
    late = [s for s in inside if toggled_off((s["t"] - offset_ns) // period) and
            (s["t"] - offset_ns) % period > 20e6]
    # the sampler switches at its next wake-up: a machine that stalls the process for longer
    # than 20 ms (a busy 2-CPU VM) may let a few through
    ok(inside and len(late) <= max(2, len(inside) // 50),
       "the samples lie in intervals that are on (or within 20 ms of one's end): %d of %d do "
       "not (at most 2%% may)%s" % (len(late), len(inside), "".join(
           " %.1f" % ((s["t"] - offset_ns) % period / 1e6) for s in late[:20])))


def check_osrt(dump, call, lo, hi, obj):
    _, calls, _ = parse(dump)
    got = [c for c in calls if c["call"] == call and lo <= c["dur"] <= hi and
           (obj is None or c["object"] == obj)]
    ok(len(got) >= 1, "a %s call of %.1f..%.1f ms%s is recorded (%d found; %d calls in all)" %
       (call, lo / 1e6, hi / 1e6, " on %#x" % obj if obj is not None else "", len(got),
        len(calls)))


def check_locks(dump, obj):
    _, calls, _ = parse(dump)
    locks = [c for c in calls if c["call"] == "pthread_mutex_lock"]
    others = sorted({c["object"] for c in locks if c["object"] != obj})
    ok(any(c["object"] == obj for c in locks),
       "the program's contended mutex %#x is recorded (%d of %d lock calls)" %
       (obj, len(locks) - sum(c["object"] in others for c in locks), len(locks)))
    ok(not others, "no other mutex is recorded as the program blocking: %d calls on %s" %
       (sum(c["object"] in others for c in locks), " ".join("%#x" % o for o in others[:8])))


def check_quiet(dump, t0, t1):
    samples, _, threads = parse(dump)
    tid = next((t for t, v in threads.items() if v["flags"] & 1), -1)
    inside = [s for s in samples if s["source"] in (2, 3) and s["tid"] == tid and
              t0 + 5_000_000 <= s["t"] <= t1 - 5_000_000]
    ok(not inside, "no native sample of the sleeping thread during its sleep (%d found): "
       "native sampling runs on CPU time" % len(inside))


def gpu_gaps(records, min_ns):
    busy = []
    for line in open(records):
        f = line.split()
        if f and f[0] in ("kernel", "memcpy", "memset"):
            d = dict(kv.split("=", 1) for kv in f[1:] if "=" in kv)
            t, dur = int(d["start"]), int(d["dur"])
            if t:
                busy.append((t, t + dur))
    busy.sort()
    gaps, end = [], None
    for b0, b1 in busy:
        if end is not None and b0 - end >= min_ns:
            gaps.append((end, b0))
        end = b1 if end is None else max(end, b1)
    return gaps


def matcher(what, args):
    if what == "python":
        want = (args[0], int(args[1]))
        return lambda s: s["source"] == 1, lambda s: py_top(s) == want, "%s:%s" % tuple(args)
    if what == "pyline":  # the line anywhere in the stack (a caller waiting inside a library)
        want = "%s:%d" % (args[0], int(args[1]))
        return (lambda s: s["source"] == 1,
                lambda s: any(fr.startswith("py:" + want + ":") for fr in s["stack"]),
                "a frame at %s" % want)
    if what == "pyfunc":
        return (lambda s: s["source"] == 1,
                lambda s: any(fr.startswith("py:") and args[0] in fr.split(":", 3)[3]
                              for fr in s["stack"]), "a frame in %s" % args[0])
    rng = symbol_range(args[0], args[1])
    name = args[0].rsplit("/", 1)[-1]

    def in_func(s):
        p = s["stack"][0].split(":") if s["stack"] else []
        return (rng is not None and len(p) == 3 and p[0] == "pc" and p[1] == name and
                rng[0] <= int(p[2], 16) < rng[1])

    return lambda s: s["source"] in (2, 3), in_func, "%s in %s" % (args[1], name)


def check_gaps(records, host, min_ns, n, what, args):
    samples, _, threads = parse(host)
    main = next((t for t, v in threads.items() if v["flags"] & 1), -1)
    gaps = gpu_gaps(records, min_ns)
    ok(len(gaps) >= n, "the GPU idles %d times for %.0f ms or more (the workload makes %d)" %
       (len(gaps), min_ns / 1e6, n))
    kind, match, label = matcher(what, args)
    total = hits = empty = 0
    for g0, g1 in gaps:
        inside = [s for s in samples if s["tid"] == main and kind(s) and
                  g0 + 5_000_000 <= s["t"] <= g1 - 5_000_000]
        total += len(inside)
        hits += sum(1 for s in inside if match(s))
        empty += not inside
    ok(total > 0 and hits >= 0.8 * total and not empty,
       "the idle gaps are attributed to %s: %d of the main thread's %d samples in them (%d "
       "gap(s) without a sample)" % (label, hits, total, empty))


def check_gap_calls(records, host, min_ns, n):
    _, calls, threads = parse(host)
    main = next((t for t, v in threads.items() if v["flags"] & 1), -1)
    gaps = gpu_gaps(records, min_ns)
    covered = 0
    names = {}
    for g0, g1 in gaps:
        best = max((min(c["t"] + c["dur"], g1) - max(c["t"], g0) for c in calls
                    if c["tid"] == main), default=0)
        covered += best >= 0.5 * (g1 - g0)
        for c in calls:
            if c["tid"] == main and c["t"] < g1 and c["t"] + c["dur"] > g0:
                names[c["call"]] = names.get(c["call"], 0) + 1
    ok(len(gaps) >= n and covered >= 0.8 * len(gaps),
       "a blocking call of the main thread spans half or more of %d of the %d idle gaps "
       "(calls seen in them: %s)" % (covered, len(gaps), names))


def main():
    a = sys.argv[1:]
    if a[0] == "python":
        check_python(a[1], a[2], int(a[3]) if len(a) > 3 else 0)
    elif a[0] == "native":
        check_native(a[1], a[2], a[3], int(a[4]), a[5], int(a[6]) if len(a) > 6 else 0)
    elif a[0] == "native-min":
        check_native_min(a[1], a[2], a[3], int(a[4]))
    elif a[0] == "mixed":
        check_mixed(a[1], a[2], a[3], a[4])
    elif a[0] == "toggled":
        check_toggled(a[1], a[2], a[3], int(a[4]), int(a[5]), int(a[6]), int(a[7]), int(a[8]))
    elif a[0] == "osrt":
        check_osrt(a[1], a[2], int(a[3]), int(a[4]), int(a[5], 0) if len(a) > 5 else None)
    elif a[0] == "locks":
        check_locks(a[1], int(a[2], 0))
    elif a[0] == "quiet":
        check_quiet(a[1], int(a[2]), int(a[3]))
    elif a[0] == "gaps":
        check_gaps(a[1], a[2], int(a[3]), int(a[4]), a[5], a[6:])
    elif a[0] == "gap-calls":
        check_gap_calls(a[1], a[2], int(a[3]), int(a[4]))
    sys.exit(1 if failures else 0)


main()
