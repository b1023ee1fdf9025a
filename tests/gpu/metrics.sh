#!/bin/bash
# GPU metrics on the GPU (tally record --gpu-metrics), checked against answers known by
# construction, never against tally's own output: phases of tests/gpu/metrics-load.cu (idle, a
# DRAM-bound copy kernel, an SM-bound spin kernel) and tests/gpu/torch_metrics.py (time.sleep,
# an elementwise loop, FP16 matmuls), each inside an NVTX range; the copy kernel's DRAM throughput
# against ncu's on the same kernel; sample counts against the phases' own clocks; two processes
# on one GPU; an overflowing hardware buffer.  The traces are read by tally itself: tally check
# --json (the ledger) and tally stats -r gpu_metrics_sum,gpu_metrics_nvtx_sum -f json (the
# metrics, over the whole trace and within each phase's NVTX range).  About two minutes.
#
#   tests/gpu/metrics.sh [BUILD_DIR] [OUT_DIR]     (defaults: build; $OUT, or a new directory)
#
# Prints ok/FAIL/skip lines, the sampler's cost note of each run, and exits non-zero on a FAIL;
# 77 where there is no GPU.  TALLY_GPU_CASES="load torch two overflow freq" runs a subset.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-metrics-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
LOAD=$B/gpu/metrics-load
PY=${PYTHON:-python3}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)

if [ ! -x "$LOAD" ] || [ "$HERE/metrics-load.cu" -nt "$LOAD" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$LOAD" "$HERE/metrics-load.cu" || { bad "cannot build metrics-load"; finish; }
fi
want() { [ -z "${TALLY_GPU_CASES:-}" ] || [[ " $TALLY_GPU_CASES " == *" $1 "* ]]; }

# rec NAME [record options] -- PROGRAM...: into $OUT/NAME/, with stdout, stderr and status
rec() {
	local name=$1; shift
	mkdir -p "$OUT/$name"
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	"$TALLY" record "${opts[@]}" -o "$OUT/$name/%p.tally" -- "$@" \
		>"$OUT/$name/stdout" 2>"$OUT/$name/stderr"
	echo $? >"$OUT/$name/status"
}

# expect NAME INDEX CONDITION: python over trace INDEX (by name): s the section, c its counters,
# v the verdict, g its gpu_metrics block, dev(i) device i's entry (tally check --json); from tally
# stats -r gpu_metrics_sum,gpu_metrics_nvtx_sum -f json: mean(range, label) a metric's mean over
# the NVTX range's time on device 0, stat(range, label, column) any of its columns, n(range) the
# samples in the range, span the SM Active row of device 0 over the whole trace, gaps the device
# gaps of device 0 (gpu_gaps), longest first, elsewhere the device rows' texts; secs(phase) the
# phase's length as the program measured it, status, out the program's stdout.
expect() {
	local name=$1 idx=$2 cond=$3 f
	f=$(ls "$OUT/$name"/*.tally 2>/dev/null | sort | sed -n "$((idx + 1))p")
	[ -n "$f" ] || { bad "$name #$idx: no trace ($(tail -3 "$OUT/$name/stderr"))"; return; }
	"$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	"$TALLY" stats -r gpu_metrics_sum,gpu_metrics_nvtx_sum,gpu_gaps -f json -o "$f.stats" \
		--force "$f" 2>/dev/null
	if $PY - "$f.json" "$f.stats" "$OUT/$name" "$cond" <<'PY'; then
import json, os, re, sys
d = json.load(open(sys.argv[1]))
s = d["files"][0]["sections"][0]
c, v, g = s["ledger"]["counters"], s["verdict"], s["gpu_metrics"]
dev = lambda i: [x for x in g["devices"] if x["device"] == i][0]
S = {r["name"]: r["rows"] for r in json.load(open(sys.argv[2]))["reports"]}
where = sys.argv[3]
out = open(os.path.join(where, "stdout")).read()
status = int(open(os.path.join(where, "status")).read())
notes = {n["code"]: n["text"] for n in s.get("notes", [])}
stat = lambda r, label, col: [x for x in S["gpu_metrics_nvtx_sum"] if x["Range"] == ":" + r and x["Device"] == 0 and x["Metric"] == label][0][col]
mean = lambda r, label: stat(r, label, "Mean")
n = lambda r: stat(r, "SM Active", "Samples")
secs = lambda p: float(re.search(r"phase %s seconds ([0-9.]+)" % re.escape(p), out).group(1))
span = ([x for x in S["gpu_metrics_sum"] if x["Device"] == 0 and x["Metric"] == "SM Active"] or [{}])[0]
gaps = sorted((x for x in S["gpu_gaps"] if x["Device"] == 0 and x["Stream"] == "all"), key=lambda x: -x["Duration (ns)"])
elsewhere = [x["Name"] for x in S["gpu_metrics_sum"] if x["Metric"] == "-"]
ok = eval(sys.argv[4])
if not ok or os.environ.get("VERBOSE"):
    print("  verdict", v, [r["text"] for r in s["reasons"]], "\n  counters",
          {k: x for k, x in c.items() if k.startswith("metric")}, "\n  span", span,
          "\n  longest gaps", gaps[:2], file=sys.stderr)
    for x in S["gpu_metrics_nvtx_sum"]:
        if x["Device"] == 0 and x["Unit"] == "%":
            print("  range %s %s: %s samples, mean %.3f, p90 %.3f" % (x["Range"], x["Metric"], x["Samples"], x["Mean"] or 0, x["P90"] or 0), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
		ok "$name #$idx: $cond"
	else
		bad "$name #$idx: $cond"
	fi
}

# What the sampler said it cost (its own measurement, in the trace), for the report.
cost() {
	local f
	for f in "$OUT/$1"/*.tally; do
		"$TALLY" check --json "$f" 2>/dev/null | $PY -c '
import json, sys
s = json.load(sys.stdin)["files"][0]["sections"][0]
for n in s.get("notes", []):
    if n["code"] in ("gpu-metrics-cost", "gpu-metrics-set", "gpu-metrics-stopped"): print("  %s: %s" % (n["code"], n["text"]))'
	done
}

# At 10 kHz the sampler thread takes most of a core on the H200 (decoding and evaluating about
# 90 us a sample), so a recording may have a few short breaks: each counted and placed, together
# with the samples tiling the span to within an interval, and no more than 2% of it.
NEAR='status == 0 and dev(0)["state"] == "sampled" and c["metric_overflows"] == 0 and c["metric_samples_dropped"] == 0 and c["metric_samples_decoded"] == c["metric_samples_written"] + c["metric_samples_skipped"] and (v == "COMPLETE") == (c["metric_gaps"] == 0) and abs(span["Covered (ns)"] + c["metric_gap_ns"] - span["Span (ns)"]) <= dev(0)["interval"] and span["Covered (ns)"] >= 0.98 * span["Span (ns)"]'
HZ_OK='all(abs(n(p) - secs(p) * 10000) <= 0.03 * secs(p) * 10000 for p in PHASES)'
WHOLE='v == "COMPLETE" and status == 0 and dev(0)["state"] == "sampled" and c["metric_gaps"] == 0 and c["metric_overflows"] == 0 and c["metric_samples_dropped"] == 0 and c["metric_samples_decoded"] == c["metric_samples_written"] + c["metric_samples_skipped"] and span["Covered (ns)"] == span["Span (ns)"] and abs(span["Samples"] - span["Span (ns)"] / dev(0)["interval"]) <= 1'

if want load; then
	rec load --gpu-metrics -- "$LOAD" 1
	expect load 0 "$NEAR and dev(0)[\"interval\"] == 100000 and len(dev(0)[\"metrics\"]) >= 10"
	expect load 0 "${HZ_OK/PHASES/(\"idle\", \"copy-kernel\", \"spin\")}"
	expect load 0 'mean("idle", "SM Active") < 1 and mean("spin", "SM Active") > 90 and mean("spin", "DRAM Throughput") < 5 and mean("copy-kernel", "DRAM Throughput") > 50'
	# the copy kernel's bytes: read and write each at half the bandwidth the program measured
	expect load 0 'abs(mean("copy-kernel", "DRAM Read") / 1e9 - float(re.search(r"copy_bandwidth_gbs ([0-9.]+)", out).group(1)) / 2) < 0.15 * float(re.search(r"copy_bandwidth_gbs ([0-9.]+)", out).group(1)) / 2'
	cost load
	if [ -n "$NCU" ]; then
		"$NCU" --clock-control none --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed \
			-k copy_kernel --csv "$LOAD" --copy-once 5 >"$OUT/load/ncu.csv" 2>"$OUT/load/ncu.err"
		NCU_PCT=$($PY -c '
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith("\""))
        if r.get("Metric Name") == "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
print("%.3f" % (sum(float(r["Metric Value"].replace(",", "")) for r in rows) / len(rows)) if rows else "")' "$OUT/load/ncu.csv")
		if [ -n "$NCU_PCT" ]; then
			echo "  ncu: copy_kernel dram__throughput.avg.pct_of_peak_sustained_elapsed $NCU_PCT"
			expect load 0 "print('  tally: copy-kernel DRAM Throughput %.3f' % mean('copy-kernel', 'DRAM Throughput'), file=sys.stderr) or abs(mean('copy-kernel', 'DRAM Throughput') - $NCU_PCT) < 10"
		else
			bad "load: ncu gave no dram__throughput ($(tail -2 "$OUT/load/ncu.err"))"
		fi
	else
		skipped "load: ncu comparison (no ncu)"
	fi
fi

if want torch; then
	if has_torch; then
		rec torch --gpu-metrics -- $PY "$HERE/torch_metrics.py" 1
		expect torch 0 "$NEAR"
		expect torch 0 "${HZ_OK/PHASES/(\"sleep\", \"elementwise\", \"matmul-fp16\")}"
		# time.sleep(1): SM active ~ 0; FP16 matmul: tensor pipes well above the elementwise loop's
		expect torch 0 'mean("sleep", "SM Active") < 1 and mean("matmul-fp16", "Tensor Active") > 20 and mean("matmul-fp16", "Tensor Active") > 5 * mean("elementwise", "Tensor Active") + 1 and mean("elementwise", "DRAM Throughput") > 30'
		# the sleep is the longest device gap: proven idle, sampled through, SM Active 0 in it
		expect torch 0 'gaps[0]["Duration (ns)"] > 0.9e9 * secs("sleep") and gaps[0]["Class"] == "idle" and gaps[0]["Sampled (ns)"] > 0.9 * gaps[0]["Duration (ns)"] and gaps[0]["SM Active (%)"] < 0.5'
		cost torch
	else
		skipped "torch: no PyTorch with CUDA"
	fi
fi

if want two; then
	if has_torch; then
		# Two processes on one GPU: the first claims it; the second, started while the first
		# samples, runs whole and says who has the metrics.
		mkdir -p "$OUT/two"
		"$TALLY" record --gpu-metrics -o "$OUT/two/a-%p.tally" -- $PY "$HERE/torch_metrics.py" 2 \
			>"$OUT/two/first.out" 2>&1 &
		first=$!
		for i in $(seq 1 600); do grep -qs '^end$' "$OUT"/two/.tally-gpu-metrics-*.lock && break; sleep 0.05; done
		rec two --gpu-metrics -- $PY "$HERE/torch_metrics.py" 0.5 --only elementwise
		wait $first
		# sorted by name, the second's trace (PID.tally) comes before the first's (a-PID.tally)
		expect two 1 'dev(0)["state"] == "sampled" and s["records"]["gpu_metric"] > 0'
		expect two 0 'v == "COMPLETE" and status == 0 and dev(0)["state"] == "elsewhere" and "/two/a-" in dev(0)["holder_file"] and dev(0)["holder_pid"] != s["pid"] and s["records"]["gpu_metric"] == 0 and "gpu-metrics-elsewhere" in notes and "GPU metrics not recorded" not in open(os.path.join(where, "stderr")).read()'
		expect two 0 'len(elsewhere) == 1 and elsewhere[0].startswith("not sampled here: pid %d " % dev(0)["holder_pid"])'
	else
		skipped "two: no PyTorch with CUDA"
	fi
fi

if want overflow; then
	# An 8 MiB hardware buffer at 5 kHz, decoded once a second at first, overflows: each overflow
	# is counted and its gap placed, sampling is set up again (the device stays "sampled"), and
	# the decode period halves until decoding keeps up (samples again in the spin phase, the
	# last: 2,643 of its 5,000 on the H200, the halving took most of the run); the program is
	# unharmed.  (Setting up again takes tens of ms on the H200: a buffer that fills faster than
	# that, 4 MiB at 20 kHz, overflowed again at once, every time.)
	TALLY_GPU_METRICS_BUFFER=8388608 TALLY_GPU_METRICS_DECODE_MS=1000 \
		rec overflow --gpu-metrics --gpu-metrics-frequency 5000 -- "$LOAD" 1
	expect overflow 0 'v == "INCOMPLETE" and status == 0 and c["metric_overflows"] >= 1 and c["metric_gaps"] >= 1 and any(r.get("counter") == "metric_gaps" and r["windows"] for r in s["reasons"])'
	expect overflow 0 'dev(0)["state"] == "sampled" and span["Covered (ns)"] < span["Span (ns)"] and n("spin") > 0.25 * secs("spin") * 5000 and "halved" in notes["gpu-metrics-cost"]'
	cost overflow
fi

if want freq; then
	rec freq --gpu-metrics=0 --gpu-metrics-frequency 1000 -- "$LOAD" 0.5
	expect freq 0 "$WHOLE and dev(0)[\"interval\"] == 1000000 and all(abs(n(p) - secs(p) * 1000) <= max(3, 0.03 * secs(p) * 1000) for p in ('idle', 'copy-kernel', 'spin'))"
fi

echo "traces in $OUT"
finish "gpu metrics"
