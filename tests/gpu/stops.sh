#!/bin/bash
# SIGTERM while GPU metrics are sampled (issue 35): N runs (default 10) of the C launch loop
# (workload.cu --forever) under tally record --gpu-metrics, each stopped by a SIGTERM sent to
# tally record (as Slurm does; it forwards it) at a moment of its own, 1.5 to 4.5 s in.  Every
# run must end COMPLETE: the program dies of the signal (143) after the close, with the final
# ledger, no parse failure (a record CUPTI had not finished, in a buffer the close's forced
# flush handed over, was one before), and every kernel the program saw finish before the close
# began in the trace.  Prints one line per run and "complete K of N".
#
#   tests/gpu/stops.sh [BUILD_DIR] [OUT_DIR]      STOPS_RUNS=N, STOPS_OPTS="..." (more options;
#                                                 STOPS_OPTS= --gpu-metrics-frequency 1000, say)
#
# Exits 77 (skipped) where there is no GPU.  Needs BUILD_DIR/src/cli/tally and nvcc (the workload
# is built into BUILD_DIR/gpu/ if it is missing).
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d /tmp/tally-stops-XXXXXX)}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
W=$B/gpu/workload
PY=${PYTHON:-python3}
N=${STOPS_RUNS:-10}
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/workload.cu" -lcuda || { bad "cannot build workload"; finish; }
fi

complete=0
for i in $(seq 1 "$N"); do
	d=$OUT/stop$i
	mkdir -p "$d"
	# shellcheck disable=SC2086 # the extra options are words on purpose
	"$TALLY" record --gpu-metrics ${STOPS_OPTS:-} -o "$d/%p.tally" -- "$W" --forever \
		>"$d/stdout" 2>"$d/stderr" &
	tp=$!
	wait_ms=$((1500 + (RANDOM % 3000)))
	sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
	kill -TERM $tp
	wait $tp
	echo $? >"$d/status"
	f=$(ls "$d"/*.tally 2>/dev/null | head -1)
	if [ -z "$f" ]; then
		bad "run $i: no trace ($(tail -2 "$d/stderr"))"
		continue
	fi
	"$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	if $PY - "$f.json" "$d/stdout" "$d/status" "$i" "$wait_ms" <<'PY'; then
import json, re, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
c, v = s["ledger"]["counters"], s["verdict"]
out = open(sys.argv[2]).read()
status = int(open(sys.argv[3]).read())
# the program's last count printed before the close began (its clock is CUPTI's: CLOCK_REALTIME)
before = max([int(n) for n, t in re.findall(r"launched_total (\d+) at (\d+)", out)
              if int(t) < c["flush_start"]] or [0])
why = [r.get("counter") or r["code"] for r in s["reasons"]]
print("run %s: SIGTERM at %s ms, %s %s, status %d, kernels %d (>= %d seen finished), "
      "parse_failures %d, incomplete_at_close %d, metric samples %d, close %.1f ms" % (
          sys.argv[4], sys.argv[5], v, why, status, s["records"].get("kernel", 0), before,
          c["parse_failures"], c.get("incomplete_at_close", 0), c["metric_samples_written"],
          c.get("signal_to_close_ns", 0) / 1e6))
sys.exit(0 if v == "COMPLETE" and status == 143 and c["parse_failures"] == 0 and
         s["records"].get("kernel", 0) >= before > 0 else 1)
PY
		complete=$((complete + 1))
		ok "run $i: COMPLETE"
	else
		bad "run $i: not COMPLETE (above; $d)"
	fi
done
echo "complete $complete of $N (traces in $OUT)"
finish
