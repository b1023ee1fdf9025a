#!/bin/sh
# GPU metrics on the CPU (tally record --gpu-metrics): the collector's sampler thread against the
# stand-in CUPTI's PM sampling part (fakecupti-pm.c), whose samples come every interval and read
# busy values exactly while fakeapp says it is busy.  Expected values come from that
# construction and from what the stand-in says it handed out (FAKECUPTI_PM_LOG), never from tally.
# Usage: test-gpumetrics.sh TALLY FAKEAPP FAKECUPTI TALLY_METRICS
set -u
TALLY=$1 APP=$2 METRICS=$4
export TALLY_CUPTI_PATH=$3 TALLY_SLICE_MS=500 TALLY_FLUSH_TIMEOUT_MS=5000
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:die_after_fork=0"
# Under TSan a fork child may not start threads (TSan's own limit), and the sampler runs several
# times slower, so the timing-bound cases (adaptive, slow) do not hold: they run in the other
# builds.
TSAN=$(ldd "$APP" | grep -c 'libtsan')
ASAN=$(ldd "$APP" | grep -c 'libasan')
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
LOCK=.tally-gpu-metrics-GPU-face0d0e-0102-0304-0506-0708090a0b00.lock # the stand-in's GPU

# run NAME [record options] -- MODE N [env...]: fakeapp MODE N recorded into $T/NAME/
run() {
	name=$1; shift
	opts=""
	while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
	mode=$2 n=$3; shift 3
	mkdir -p "$T/$name"
	env FAKECUPTI_PM_LOG="$T/$name/pm.log" "$@" "$TALLY" record $opts -o "$T/$name/%p.tally" \
		-- "$APP" "$mode" "$n" >"$T/$name/stdout" 2>"$T/$name/stderr"
	echo $? >"$T/$name/status"
}

# expect NAME INDEX CONDITION: python over trace INDEX (by pid): s the section (tally check
# --json: a loss window's begin_ns/end_ns are on the aligned timeline, clock_offset_ns past the
# section's own), c its counters,
# v the verdict, k records by kind, g its gpu_metrics block, dev(i) device i's entry, m the
# tally-metrics summary (m["devices"]["0"][NAME]), rng(NAME) a range's metrics on device 0,
# fits(NAME, HZ) whether the range holds the samples its length at HZ makes (+-2),
# logged the samples the stand-in handed out to this process, err tally record's stderr,
# status its exit status, pids the pids of the case's traces.
expect() {
	name=$1 idx=$2 cond=$3
	f=$(ls "$T/$name"/*.tally 2>/dev/null | sort | sed -n "$((idx + 1))p")
	[ -n "$f" ] || { bad "$name #$idx: no trace ($(tail -2 "$T/$name/stderr"))"; return; }
	"$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	"$METRICS" "$f" >"$f.metrics" 2>"$f.metrics.err"
	if SUPPORT=$(dirname "$0")/../support python3 - "$f.json" "$f.metrics" "$T/$name" "$cond" <<'PY'; then
import json, os, re, sys
d = json.load(open(sys.argv[1]))
s = d["files"][0]["sections"][0]
c, v, k = s["ledger"]["counters"], s["verdict"], s["records"]
g = s.get("gpu_metrics")
dev = lambda i: [x for x in g["devices"] if x["device"] == i][0]
m = json.load(open(sys.argv[2]))
R = lambda name: [r for r in m["ranges"] if r["name"] == name][0]
rng = lambda name: R(name)["devices"].get("0", {})
# samples a range holds at hz: its length over the interval (a sample counts where its middle is)
fits = lambda name, hz: abs(rng(name)[SM]["n"] - (R(name)["end"] - R(name)["start"]) * hz / 1e9) <= 2
where = sys.argv[3]
log = open(os.path.join(where, "pm.log")).read() if os.path.exists(os.path.join(where, "pm.log")) else ""
logged = sum(int(n) for p, n in re.findall(r"pm pid=(\d+) device=\d+ decoded=(\d+)", log) if int(p) == s["pid"])
err = open(os.path.join(where, "stderr")).read()
status = int(open(os.path.join(where, "status")).read())
pids = sorted(int(x.split(".")[0]) for x in os.listdir(where) if x.endswith(".tally"))
notes = {n["code"]: n["text"] for n in s.get("notes", [])}
SM = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
def on_share(a, b, ms):  # TALLY_BENCH_TOGGLE_MS=ms: [a, b] is on the record clock, CLOCK_REALTIME here
    import time
    sys.path.insert(0, os.environ["SUPPORT"])
    import bench_toggle
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return bench_toggle.on_share(a - off, b - off, ms * 1000000)
ok = eval(sys.argv[4])
if not ok:
    print("  verdict", v, [r["text"] for r in s["reasons"]], "\n  counters",
          {k: x for k, x in c.items() if k.startswith(("metric", "flush"))}, "\n  devices",
          [(x["state"], x.get("why")) for x in g["devices"]], "\n  session start", s["start_ns"],
          "\n  samples", {k.split(".")[0]: (x["n"], x["first_start"], x["last_end"]) for k, x in m["devices"].get("0", {}).items()},
          "\n  ranges", [(r["name"], r["start"], r["end"], r["devices"].get("0", {}).get(SM)) for r in m["ranges"]])
sys.exit(0 if ok else 1)
PY
		ok "$name #$idx: $cond"
	else
		bad "$name #$idx: $cond"
		tail -5 "$T/$name/stderr"
	fi
}

# one_sampler NAME: of the case's traces exactly one sampled device 0, and every other one says
# it is elsewhere, naming that trace's pid and file.
one_sampler() {
	for f in "$T/$1"/*.tally; do "$TALLY" check --json "$f"; done 2>/dev/null | python3 -c '
import json, sys
dec, text, secs = json.JSONDecoder(), sys.stdin.read(), []
while text.strip():
    d, at = dec.raw_decode(text.lstrip())
    text = text.lstrip()[at:]
    secs += [(f["path"], f["sections"][0]) for f in d["files"]]
dev0 = lambda s: [x for x in s["gpu_metrics"]["devices"] if x["device"] == 0][0]
held = [(p, s) for p, s in secs if dev0(s)["state"] == "sampled"]
assert len(held) == 1, [dev0(s)["state"] for p, s in secs]
path, holder = held[0]
for p, s in secs:
    if p != path:
        e = dev0(s)
        assert e["state"] == "elsewhere" and e["holder_pid"] == holder["pid"] and e["holder_file"] == path, e
' && ok "$1: one process samples the device, the other names it" || bad "$1: one process samples the device, the other names it"
}

# Sampled: 12 of the 14 default metrics (the stand-in has no NVLink), every sample the stand-in
# handed out accounted for, none lost, and the values of each phase as it made them.
run sampled --gpu-metrics -- metrics 3000
expect sampled 0 'v == "COMPLETE" and status == 0 and dev(0)["state"] == "sampled" and len(dev(0)["metrics"]) == 12 and len(dev(0)["left_out"]) == 2 and all(x.startswith("nvl") for x in dev(0)["left_out"])'
expect sampled 0 'logged > 0 and c["metric_samples_decoded"] == logged == c["metric_samples_written"] + c["metric_samples_skipped"] + c["metric_samples_dropped"] and c["metric_samples_skipped"] == 1 and c["metric_samples_dropped"] == 0'
expect sampled 0 'k["gpu_metric"] == 12 * c["metric_samples_written"] and c["metric_gaps"] == 0 and c["metric_overflows"] == 0 and c["metric_devices"] == 1 and k["kernel"] == 6000'
# no gap: the samples tile their span, and their numbers run on (the first one was skipped)
expect sampled 0 'all(x["covered_ns"] == x["last_end"] - x["first_start"] and x["last_number"] - x["first_number"] + 1 == x["n"] == c["metric_samples_written"] for x in m["devices"]["0"].values())'
# 300 ms phases at 10 kHz: the samples tile each (the first may begin before sampling did);
# idle 0, busy 75 (a percentage), 2e9 B/s
expect sampled 0 'all(fits(p, 10000) for p in ("busy", "idle-b")) and rng("idle-a")[SM]["mean"] == rng("idle-b")[SM]["mean"] == 0 and rng("busy")[SM]["mean"] == 75 and rng("busy")["dram__bytes_read.sum.per_second"]["mean"] == 2e9 and rng("idle-a")["gpc__cycles_elapsed.avg.per_second"]["mean"] == 1.98e9'
expect sampled 0 'dev(0)["interval"] == 100000 and dev(0)["trigger"] == "ns" and g["asked"] == "all" and g["hz"] == 10000 and "gpu-metrics-cost" in notes and not re.search("GPU metrics not recorded", err)'

# Toggled (TALLY_BENCH_TOGGLE_MS, the cost benchmarks): sampling in some 200 ms intervals only
# (about half, by a hash of their number), so the samples fill the share of the span that was on
# (within a decode period a switch: 25 ms at 10 kHz), the rest are gaps the trace does not count
# as loss (the window was closed on purpose), and the trace says so.
run toggled --gpu-metrics -- metrics 3000 TALLY_BENCH_TOGGLE_MS=200 FAKEAPP_PHASE_MS=500
expect toggled 0 'v == "COMPLETE" and status == 0 and c["metric_gaps"] == 0 and "bench-toggle" in notes'
expect toggled 0 'all(abs(x["n"] / ((x["last_end"] - x["first_start"]) * 10000 / 1e9) - on_share(x["first_start"], x["last_end"], 200)) <= 0.1 and x["covered_ns"] <= on_share(x["first_start"], x["last_end"], 200) * (x["last_end"] - x["first_start"]) + 100e6 for x in m["devices"]["0"].values())'

# Paced: evaluating a sample takes 70% of its interval (350 us at 2 kHz), so a decode period's
# step takes most of the period: the next step must come a period after this one began, not a
# period after it ended (that thread, a step of at most a period then a period's wait, took
# 1,430 samples a second of the 2,000 made, and the 600-sample hardware buffer overflowed).
if [ "$TSAN" -eq 0 ]; then
	run paced --gpu-metrics --gpu-metrics-frequency 2000 --gpu-metrics-set sm__cycles_active.avg.pct_of_peak_sustained_elapsed -- metrics 300 FAKECUPTI_PM_EVAL_US=350 TALLY_GPU_METRICS_BUFFER=614400 FAKEAPP_PHASE_MS=1000
	expect paced 0 'v == "COMPLETE" and c["metric_overflows"] == 0 and c["metric_gaps"] == 0 and c["metric_samples_decoded"] == logged > 0 and fits("busy", 2000)'
	# Decoding and evaluating a sample take 60% of its interval each (300 us at 2 kHz): one
	# thread doing both falls behind (with the evaluation done on the sampler thread, this case
	# was INCOMPLETE); the sampler decodes into one image while the evaluating thread takes the
	# other's samples, and keeps up.
	run parallel --gpu-metrics --gpu-metrics-frequency 2000 --gpu-metrics-set sm__cycles_active.avg.pct_of_peak_sustained_elapsed -- metrics 300 FAKECUPTI_PM_EVAL_US=300 FAKECUPTI_PM_DECODE_US=300 TALLY_GPU_METRICS_BUFFER=614400 FAKEAPP_PHASE_MS=1000
	expect parallel 0 'v == "COMPLETE" and c["metric_overflows"] == 0 and c["metric_gaps"] == 0 and c["metric_samples_decoded"] == logged == c["metric_samples_written"] + 1 > 0 and fits("busy", 2000) and "evaluating thread" in notes["gpu-metrics-cost"]'
else
	skipped "paced, parallel: the sampler is too slow under TSan for their timing"
fi

# Chosen: 1 kHz, a set naming a metric that needs 19 passes (left out, said why)
run chosen --gpu-metrics=0 --gpu-metrics-frequency 1000 --gpu-metrics-set sm__cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum.per_second -- metrics 100
expect chosen 0 'v == "COMPLETE" and g["asked"] == "0" and g["hz"] == 1000 and dev(0)["interval"] == 1000000 and [x["name"] for x in dev(0)["metrics"]] == [SM, "dram__bytes_read.sum.per_second"] and "19 passes" in dev(0)["left_out"][0]'
expect chosen 0 'fits("busy", 1000) and rng("busy")[SM]["mean"] == 75 and k["gpu_metric"] == 2 * c["metric_samples_written"]'

# Refused by the driver (RmProfilingAdminOnly=1): the recording goes on, whole, and says how
# to fix it: in the trace (chunk, note) and once on tally record's stderr.
run refused --gpu-metrics -- exit 3000 FAKECUPTI_PM_RESULT=35
expect refused 0 'v == "COMPLETE" and status == 0 and k["kernel"] == 3000 and k["gpu_metric"] == 0 and dev(0)["state"] == "refused" and dev(0)["result"] == 35 and "NVreg_RestrictProfilingToAdminUsers=0" in dev(0)["remedy"]'
expect refused 0 '"gpu-metrics-refused" in notes and "tally doctor" in notes["gpu-metrics-refused"] and len(re.findall("GPU metrics not recorded, refused", err)) == 1 and "NVreg_RestrictProfilingToAdminUsers" in err'
run busy --gpu-metrics -- exit 300 FAKECUPTI_PM_RESULT=26
expect busy 0 'v == "COMPLETE" and dev(0)["state"] == "busy" and "another tool" in dev(0)["why"] and "gpu-metrics-busy" in notes and "GPU metrics not recorded, busy" in err'
run unsupported --gpu-metrics -- exit 300 FAKECUPTI_PM_UNSUPPORTED=1
expect unsupported 0 'v == "COMPLETE" and dev(0)["state"] == "unsupported" and "architecture" in dev(0)["why"] and c["metric_sampler_failures"] == 0'

# The hardware buffer overflowed at the 3rd decode: counted, the unsampled time placed by a
# LOSS window of exactly the gap, the sample after it flagged, sampling set up again.
run overflow --gpu-metrics -- metrics 300 FAKECUPTI_PM_OVERFLOW_AT=3
expect overflow 0 'v == "INCOMPLETE" and c["metric_overflows"] == 1 and c["metric_gaps"] == 1 and c["metric_gap_ns"] > 0 and c["metric_samples_decoded"] == logged and c["metric_samples_skipped"] == 2'
expect overflow 0 '[w["end_ns"] - w["begin_ns"] for r in s["reasons"] if r.get("counter") == "metric_gaps" for w in r["windows"]] == [c["metric_gap_ns"]] and m["devices"]["0"][SM]["after_gap"] == 1 and m["devices"]["0"][SM]["covered_ns"] + c["metric_gap_ns"] == m["devices"]["0"][SM]["last_end"] - m["devices"]["0"][SM]["first_start"]'

# A decode held up (a fork's copy-on-write, a busy machine): each image holds two decode periods'
# samples (25 ms at 10 kHz), so a step 20 ms late still takes every sample; one 60 ms late fills
# its image and loses the rest, counted and placed as a gap, and the period halves.
if [ "$TSAN" -eq 0 ]; then
	run late --gpu-metrics -- metrics 300 FAKECUPTI_PM_STALL_AT=10:20
	expect late 0 'v == "COMPLETE" and c["metric_gaps"] == 0 and c["metric_samples_decoded"] == logged == c["metric_samples_written"] + 1 and "(0 stopped at a full image)" in notes["gpu-metrics-cost"] and "decode period 25 ms" in notes["gpu-metrics-cost"]'
	run later --gpu-metrics -- metrics 300 FAKECUPTI_PM_STALL_AT=10:60
	expect later 0 'v == "INCOMPLETE" and c["metric_gaps"] == 1 and c["metric_overflows"] == 0 and c["metric_samples_decoded"] == logged and "(1 stopped at a full image)" in notes["gpu-metrics-cost"] and "halved 1 times" in notes["gpu-metrics-cost"] and 20000000 < c["metric_gap_ns"] < 40000000'
else
	skipped "late, later: the sampler is too slow under TSan for their timing"
fi

# The metrics threads are tally's own, as the host sampler sees them (so its samples and the
# blocking-call interposers leave them out of the program's threads).
if [ "$TSAN" -eq 0 ]; then
	run owned --gpu-metrics --sample native -- metrics 3000
	expect owned 0 'v == "COMPLETE" and sorted(t["name"] for t in s["sampling"]["threads"] if t["name"].startswith("tally-metric")) == ["tally-metric-ev", "tally-metrics"] and all(t["tally"] for t in s["sampling"]["threads"] if t["name"].startswith("tally-")) and not [t for t in s["sampling"]["threads"] if t["main"] and t["tally"]]'
else
	skipped "owned: native sampling under TSan"
fi

# A hardware buffer too small for the decode period (1024 samples; 20,000 arrive a second): each
# overflow is counted and placed, and halves the period, until decoding keeps up.
if [ "$TSAN" -eq 0 ]; then
	run adaptive --gpu-metrics --gpu-metrics-frequency 20000 -- metrics 300 FAKEAPP_PHASE_MS=1000 TALLY_GPU_METRICS_BUFFER=1048576 TALLY_GPU_METRICS_DECODE_MS=1000
	expect adaptive 0 'v == "INCOMPLETE" and dev(0)["state"] == "sampled" and 3 <= c["metric_overflows"] <= 8 and 1 <= c["metric_gaps"] == m["devices"]["0"][SM]["after_gap"] <= c["metric_overflows"] and re.search(r"halved [3-8] times", notes["gpu-metrics-cost"]) and c["metric_samples_decoded"] == logged'
	# (the first overflow came before any sample was kept: the gap runs from the start)
	expect adaptive 0 'rng("idle-b")[SM]["n"] > 10000 and m["devices"]["0"][SM]["covered_ns"] + c["metric_gap_ns"] == m["devices"]["0"][SM]["last_end"] - min([m["devices"]["0"][SM]["first_start"]] + [w["begin_ns"] - s["clock_offset_ns"] for r in s["reasons"] if r.get("counter") == "metric_gaps" for w in r["windows"]])'
else
	skipped "adaptive: the sampler is too slow under TSan for its timing"
fi

# A sampler that falls behind (400 us to evaluate a sample of 100): the sampler thread waits for
# the evaluating thread, the hardware holds what comes meanwhile, and a decode that then fills
# its image loses the rest (as on the H200): each such stretch is a gap, counted and placed (the
# samples and the gaps tile the span), the decode period halves, and the close takes what it can
# in its second (draining all the samples of the 3 s would take 12 s).
if [ "$TSAN" -eq 0 ]; then
	run slow --gpu-metrics -- metrics 300 FAKECUPTI_PM_EVAL_US=400 FAKEAPP_PHASE_MS=1000 TALLY_GPU_METRICS_DECODE_MS=20
	expect slow 0 'v == "INCOMPLETE" and c["metric_gaps"] >= 1 and c["metric_samples_dropped"] == 0 and c["metric_samples_decoded"] == logged and c["flush_end"] - c["flush_start"] < 4000000000 and c["metric_gap_ns"] > 1000000000 and re.search(r"\(([1-9][0-9]*) stopped at a full image\)", notes["gpu-metrics-cost"])'
	expect slow 0 'sum(w["end_ns"] - w["begin_ns"] for r in s["reasons"] if r.get("counter") == "metric_gaps" for w in r["windows"]) == c["metric_gap_ns"] and m["devices"]["0"][SM]["last_end"] <= c["flush_end"] and m["devices"]["0"][SM]["covered_ns"] + c["metric_gap_ns"] == max([m["devices"]["0"][SM]["last_end"]] + [w["end_ns"] - s["clock_offset_ns"] for r in s["reasons"] if r.get("counter") == "metric_gaps" for w in r["windows"]]) - m["devices"]["0"][SM]["first_start"]'
else
	skipped "slow: the close's time bound is not TSan's"
fi

# Two processes on one GPU: the first claims it; the second says who has the metrics.
mkdir -p "$T/two"
env FAKEAPP_PHASE_MS=700 "$TALLY" record --gpu-metrics --gpu-metrics-frequency 1000 \
	-o "$T/two/first.tally" -- "$APP" metrics 300 \
	>"$T/two/first.out" 2>&1 &
first=$!
for i in $(seq 1 200); do grep -qs '^end$' "$T"/two/.tally-gpu-metrics-*.lock && break; sleep 0.05; done
run two --gpu-metrics --gpu-metrics-frequency 1000 -- exit 300
wait $first
one_sampler two
mv "$T/two/first.tally" "$T/two/0.tally" # sorts first
expect two 0 'v == "COMPLETE" and dev(0)["state"] == "sampled" and k["gpu_metric"] > 0'
expect two 1 'v == "COMPLETE" and dev(0)["state"] == "elsewhere" and dev(0)["holder_file"].endswith("/two/first.tally") and dev(0)["holder_pid"] != s["pid"] and k["gpu_metric"] == 0 and "gpu-metrics-elsewhere" in notes and "GPU metrics not recorded" not in err'

# A fork child that starts its own session while its parent samples the device: the child names
# the parent.  (The parent forks once its claim is in the lock file: FAKEAPP_WAIT_CLAIM.)
# Not under the sanitizers: TSan refuses threads in a fork child, and gcc 12's ASan allocator
# takes no lock across fork, so a child forked while the parent's sampler thread allocates can
# inherit an allocator lock held by nobody and hang at its first allocation of that size (seen
# in 1 of 58 runs under load; glibc's malloc is taken across fork).
if [ "$TSAN" -eq 0 ] && [ "$ASAN" -eq 0 ]; then
	run fork --gpu-metrics -- fork-session 3000 FAKEAPP_WAIT_CLAIM="$T/fork/$LOCK"
	expect fork 0 'v == "COMPLETE" and dev(0)["state"] == "sampled"'
	expect fork 1 'v == "COMPLETE" and dev(0)["state"] == "elsewhere" and dev(0)["holder_pid"] == pids[0] == s["ppid"]'
	one_sampler fork
else
	skipped "fork: the sanitizers' fork limits (above)"
fi

# The metrics follow the collection window: none before --delay opens it.
run delay --gpu-metrics --delay 0.4 -- paced 3000
expect delay 0 'v == "COMPLETE" and m["devices"]["0"][SM]["first_start"] >= s["start_ns"] + 400000000 and c["metric_samples_written"] > 0'

# A SIGTERM: the close stops the sampler and takes its last samples, as at exit.
run sigterm --gpu-metrics -- sigterm 3000
expect sigterm 0 'v == "COMPLETE" and status == 143 and s["ledger"]["flush_path"] == "signal" and c["metric_samples_decoded"] == logged == c["metric_samples_written"] + c["metric_samples_skipped"]'
# The same when the sampler's last decode makes the close longer than a stalled close may hold
# the signalled thread (100 ms): 1.2 s of samples at 1 kHz, 200 us each, are still to decode
# at the signal (a decode every 2 s), about 240 ms.  The thread is held while the close moves
# on, so the program prints nothing past the signal (before, the handler let it go after 100 ms:
# it ran on, launching, and Python's exit at a Ctrl-C raced the close, which CUDA's teardown cut).
run termlate --gpu-metrics --gpu-metrics-frequency 1000 -- term-late 300 FAKEAPP_PHASE_MS=1200 FAKECUPTI_PM_EVAL_US=200 TALLY_GPU_METRICS_DECODE_MS=2000
expect termlate 0 'v == "COMPLETE" and status == 143 and "ran on" not in open(os.path.join(where, "stdout")).read() and c["metric_samples_decoded"] == logged > 1000 and c["flush_end"] - c["flush_start"] > 150000000'

# SIGTERM at four moments while the close outlasts what it may hold the signalled thread (2 s;
# the metrics' stop takes 2.5 s here), with CUPTI's records filled in after their room is taken,
# so that a forced flush meanwhile hands them over unfinished (FAKECUPTI_RECORD_US, as CUPTI
# documents it).  The thread, let go, runs on launching: the close stops new activity before it
# waits for the metrics, so nothing it does reaches a buffer the forced flush hands over.
# Before, each of these ended INCOMPLETE with parse_failures 1, as 2 of 4 SIGTERM runs with
# --gpu-metrics did on the H100.
for i in 1 2 3 4; do
	run "termstop$i" --gpu-metrics --gpu-metrics-frequency 1000 -- term-late 300 \
		FAKEAPP_PHASE_MS=$((300 + 173 * i)) FAKECUPTI_RECORD_US=200 FAKECUPTI_PM_STOP_MS=2500
	expect "termstop$i" 0 'status == 143 and s["ledger"]["final"] and c["parse_failures"] == 0 and c["incomplete_at_close"] == 0 and "ran on" in open(os.path.join(where, "stdout")).read()'
done

# CUDA's own exit handler destroys the contexts before the close runs (the stand-in does as CUDA
# does: fakecupti.c), and PM sampling needs them: the sampler ends at CUPTI's context-destroy
# callback, while the context is there (the stand-in aborts on a PM call after it, as the H200
# crashed), with every sample handed out accounted for and no gap.  Also in a session begun at
# load (blocking calls from the start), which CUDA joins at cuInit.
run joined --gpu-metrics --trace cuda,nvtx,osrt -- metrics 3000
expect joined 0 'v == "COMPLETE" and status == 0 and dev(0)["state"] == "sampled" and k["kernel"] == 6000 and c["metric_samples_decoded"] == logged > 0 and c["metric_gaps"] == 0 and "fakecupti" not in err'
expect joined 0 'fits("busy", 10000) and rng("busy")[SM]["mean"] == 75 and "CUDA driver unknown" in notes["cupti-joined"]'

# The sampler is still inside cuptiPmSamplingStop (1.5 s) when the context goes (the callback
# waits TALLY_FLUSH_TIMEOUT_MS, 500 ms): it makes no PM call after that (the stand-in would
# abort), and the trace says its last stretch was lost.
run ctxgone --gpu-metrics -- metrics 300 FAKECUPTI_PM_STOP_MS=1500 TALLY_FLUSH_TIMEOUT_MS=500
expect ctxgone 0 'status == 0 and "gpu-metrics-context-gone" in notes and "fakecupti" not in err and v == "INCOMPLETE"'

# exit() while sampling is still being set up (400 ms here), as a short program does, or a main
# that returns then: sampling ends inside exit(), or as main returns, before any exit handler,
# so the PM libraries' destructors (which the stand-in registers at the first device call, as
# the real ones are) never meet a later PM call.  Before, such runs aborted in
# cuptiPmSamplingEnable (exit(): 3 of 18, return: 6 of 30 here): five runs of each.
for i in 1 2 3 4 5; do
	for how in exit-now return; do
		run "exitsetup-$how$i" --gpu-metrics -- "$how" 300 FAKECUPTI_PM_SETUP_MS=400
		expect "exitsetup-$how$i" 0 'status == 0 and v == "COMPLETE" and k["kernel"] == 300 and dev(0)["state"] == "sampled" and "fakecupti" not in err'
	done
done

# A fork inside cuInit (libcudadebugger forks its debug agent there under cuda-gdb): the agent,
# which never uses CUDA and outlives the program, writes no file, holds no lock: forked right
# after the sampler claimed the device (whose setup then takes 400 ms more), it does not keep the
# claim, so another recording made while the agent lives samples the device.
agent_case() { # NAME WHEN
	mkdir -p "$T/$1"
	env FAKEAPP_FORK_IN_CUINIT=$2 FAKEAPP_WAIT_CLAIM="$T/$1/$LOCK" FAKECUPTI_PM_SETUP_MS=400 \
		FAKEAPP_AGENT_LINGER_MS=4000 FAKECUPTI_PM_LOG="$T/$1/pm.log" "$TALLY" record \
		--gpu-metrics --trace cuda,nvtx,osrt -o "$T/$1/%p.tally" -- "$APP" metrics 300 \
		>"$T/$1/stdout" 2>"$T/$1/stderr"
	echo $? >"$T/$1/status"
	agent=$(sed -n 's/^agent pid //p' "$T/$1/stdout")
	files=$(ls "$T/$1"/*.tally | wc -l)
	[ -n "$agent" ] && kill -0 "$agent" 2>/dev/null && [ "$files" -eq 1 ] &&
		ok "$1: the agent lives on and wrote no file" || bad "$1: agent '$agent', $files file(s)"
	# a program that outlives the sampler's setup (about 0.9 s): one that exits while the PM
	# libraries are still being loaded can meet their destructors (docs/collector.md, "The close")
	"$TALLY" record --gpu-metrics -o "$T/$1/99999999.tally" -- "$APP" metrics 300 \
		>"$T/$1/after.out" 2>&1
	kill -0 "$agent" 2>/dev/null && ok "$1: the next recording ran while the agent lived" ||
		bad "$1: the agent was gone before the next recording ended"
	expect "$1" 0 'v == "COMPLETE" and status == 0 and dev(0)["state"] == "sampled" and c["metric_samples_decoded"] == logged > 0 and "fakecupti" not in err'
	expect "$1" 1 'v == "COMPLETE" and dev(0)["state"] == "sampled"'
}
agent_case agent-after after
agent_case agent-before before

# A holder killed (SIGKILL, nothing of it runs): the kernel drops its lock with it, and the next
# recording samples the device.
run killed --gpu-metrics -- sigkill 300
"$TALLY" record --gpu-metrics -o "$T/killed/99999999.tally" -- "$APP" metrics 300 >/dev/null 2>&1 # outlives the setup
expect killed 0 'status == 137 and dev(0)["state"] == "sampled"'
expect killed 1 'v == "COMPLETE" and dev(0)["state"] == "sampled"'

# Not asked for: no trace of it.
run off -- exit 300
expect off 0 'v == "COMPLETE" and g["asked"] is None and not g["devices"] and k["gpu_metric"] == 0 and not os.path.exists(os.path.join(where, "pm.log"))'

finish
