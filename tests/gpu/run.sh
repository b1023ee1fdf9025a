#!/bin/bash
# The GPU test suite: real CUDA programs with known counts, recorded by tally record, checked
# against what the programs say they did (never against tally's own output).
#
#   tests/gpu/run.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, a new temporary directory)
#
# Exits 77 (skipped) where there is no GPU.  Needs BUILD_DIR/src/cli/tally and the CUDA workload
# (built here with nvcc into BUILD_DIR/gpu/ if it is missing).  Python cases need PyTorch, JAX or
# CuPy and are skipped one by one when the package is absent.  TALLY_GPU_CASES="loop graph ..."
# runs a subset; TALLY_GPU_RECORD_OPTS="--gpu-metrics" adds options to every recording (the same
# expectations must hold with GPU metrics sampled).  tally control, compare and gpu_gaps have
# their own script: tests/gpu/compare.sh.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d /tmp/tally-gpu-XXXXXX)}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
# shellcheck disable=SC2206 # the extra options are words on purpose
RECORD=("$TALLY" record ${TALLY_GPU_RECORD_OPTS:-})
DUMP=$B/tests/tally-dump
W=$B/gpu/workload
PY=${PYTHON:-python3}
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/workload.cu" -lcuda || { bad "cannot build workload"; finish; }
fi
NGPU=$(nvidia-smi -L | wc -l)
# await_output FILE TEXT: until FILE holds TEXT (at most 2 minutes): the event, not a guess
await_output() {
	local i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null && [ $i -lt 1200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
# await_trace_kernels DIR N: until a trace in DIR holds N kernels or more, as its periodic
# flushes wrote them (at most 2 minutes)
await_trace_kernels() {
	local i=0 n=0 f
	while [ "$n" -lt "$2" ] && [ $i -lt 600 ]; do
		for f in "$1"/*.tally; do
			n=$("$TALLY" check --json "$f" 2>/dev/null | $PY -c 'import json,sys
try: print(json.load(sys.stdin)["files"][0]["sections"][0]["records"].get("kernel", 0))
except Exception: print(0)' 2>/dev/null || echo 0)
		done
		sleep 0.2
		i=$((i + 1))
	done
}
want() { [ -z "${TALLY_GPU_CASES:-}" ] || [[ " $TALLY_GPU_CASES " == *" $1 "* ]]; }

# rec NAME [record options] -- PROGRAM...: record into $OUT/NAME, stdout in $OUT/NAME/stdout
rec() {
	local name=$1; shift
	mkdir -p "$OUT/$name"
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	"${RECORD[@]}" "${opts[@]}" -o "$OUT/$name/%p.tally" -- "$@" \
		>"$OUT/$name/stdout" 2>"$OUT/$name/stderr"
	echo $? >"$OUT/$name/status"
}

# expect NAME INDEX CONDITION: python over the INDEX-th trace (by pid order): s section,
# c counters, v verdict, k records by kind, out the program's stdout, names the kernel names,
# api the API call names and ranges the NVTX range names seen (lists, from tally-dump), status
# the exit status, stopped what the program said it launched when a signal stopped it, progress
# the last "progress N" it printed, before(t) the workload's last launched_total printed before
# time t, files the number of traces in the case's directory.
expect() {
	local name=$1 idx=$2 cond=$3 f
	f=$(ls "$OUT/$name"/*.tally 2>/dev/null | sort -t/ -k1 | sed -n "$((idx + 1))p")
	[ -n "$f" ] || { bad "$name #$idx: no trace ($(cat "$OUT/$name/stderr" | tail -3))"; return; }
	"$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	"$DUMP" "$f" >"$f.dump" 2>/dev/null
	if $PY - "$f.json" "$f.dump" "$OUT/$name/stdout" "$OUT/$name/status" "$cond" <<'PY'; then
import json, os, re, sys
d = json.load(open(sys.argv[1]))
s = d["files"][0]["sections"][0]
c, v, k = s["ledger"]["counters"], s["verdict"], s["records"]
lines = open(sys.argv[2]).read().splitlines()
names = [l.split(" name=", 1)[1] for l in lines if l.startswith("kernel ")]
api = [l.split(" name=", 1)[1] for l in lines if l.startswith(("runtime ", "driver "))]
ranges = [l.split(" name=", 1)[1] for l in lines if l.startswith("nvtx_range ")]
devs = sorted({int(re.search(r" dev=(\d+)", l).group(1)) for l in lines if l.startswith("kernel ")})
streams = {re.search(r" stream=(\d+)", l).group(1) for l in lines if l.startswith("kernel ")}
graphs = [l for l in lines if l.startswith("kernel ") and " graph=0 " not in l]
out = open(sys.argv[3]).read()
status = int(open(sys.argv[4]).read())
num = lambda key: sum(int(m) for m in re.findall(key + r" (\d+)", out))
m = re.search(r"stopped_by \d+ (?:launched_total|adds) (\d+)", out)
stopped = int(m.group(1)) if m else -1  # what the program says it launched before it stopped
progress = max([int(n) for n in re.findall(r"progress (\d+)", out)] or [0])
files = len([x for x in os.listdir(os.path.dirname(sys.argv[1])) if x.endswith(".tally")])
before = lambda t: max([int(n) for n, at in re.findall(r"launched_total (\d+) at (\d+)", out) if int(at) < t] or [0])
ok = eval(sys.argv[5])
if not ok:
    print("  verdict", v, [r["text"] for r in s["reasons"]], "\n  records", k,
          "\n  api", {a: api.count(a) for a in set(api)} if len(set(api)) < 30 else len(api),
          "\n  program:", out[-300:], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
		ok "$name #$idx: $cond"
	else
		bad "$name #$idx: $cond"
	fi
}

if want loop; then
	rec loop -- "$W" --kernels 20000 --memcpy 100:1048576 --memset 50:65536 --nvtx
	expect loop 0 'v == "COMPLETE" and k["kernel"] == num("total_kernels") == 20000 and api.count("cudaLaunchKernel") == 20000 and k["memcpy"] == 200 and k["memset"] == 50 and k["nvtx_range"] == num("nvtx_ranges") == 200 and k["nvtx_mark"] == 1 and status == 0'
fi
if want nvtxlong; then
	# an NVTX message over 4000 bytes: kept cut at a UTF-8 boundary (3999 bytes here) and flagged
	rec nvtxlong -- "$W" --kernels 10 --nvtx-long
	expect nvtxlong 0 'v == "COMPLETE" and k["nvtx_range"] == 2 and num("nvtx_long_bytes") == 5001 and status == 0'
	f=$(ls "$OUT/nvtxlong"/*.tally 2>/dev/null | head -1)
	if [ -n "$f" ] && "$TALLY" export -q -f sqlite -o "$f.sqlite" "$f" &&
		$PY - "$f.sqlite" <<'PY'; then
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT text, tallyTextTruncated FROM NVTX_EVENTS WHERE eventType != 75 ORDER BY length(text)").fetchall()
assert rows[0] == ("short", 0), rows[0]
text, cut = rows[1]
assert cut == 1 and len(text.encode()) == 3999 and text == "a" + "\u00e9" * 1999, (cut, len(text.encode()))
PY
		ok "nvtxlong: cut at a character boundary, flagged"
	else
		bad "nvtxlong: sqlite text or flag"
	fi
fi
if want graph; then
	rec graph -- "$W" --kernels 0 --graph 100:500
	expect graph 0 'v == "COMPLETE" and k["kernel"] == num("graph_kernels") == 50000 and len(graphs) == 50000 and api.count("cudaGraphLaunch") == 500'
fi
if want threads; then
	rec threads -- "$W" --threads 8 --kernels 5000
	expect threads 0 'v == "COMPLETE" and k["kernel"] == 40000 and api.count("cudaLaunchKernel") == 40000 and len(streams) == 8'
fi
if want driver; then
	rec driver -- "$W" --driver --kernels 5000
	expect driver 0 'v == "COMPLETE" and k["kernel"] == 5000 and api.count("cuLaunchKernel") == 5000'
fi
if want range; then
	rec range --capture-range cudaProfilerApi -- "$W" --profiler-range --kernels 4000
	expect range 0 'v == "COMPLETE" and k["kernel"] == num("in_range") == 2000'
fi
if want exit_paths; then
	rec exit_ -- "$W" --kernels 3000 --exit _exit
	expect exit_ 0 'v == "COMPLETE" and k["kernel"] == 3000 and s["ledger"]["flush_path"] == "_exit"'
	rec abort -- "$W" --kernels 3000 --exit abort
	expect abort 0 'k["kernel"] == 3000 and s["ledger"]["flush_path"] == "crash" and status == 134'
fi

# SIGTERM mid-run, sent to tally (as Slurm does), forwarded to the program: all records there.
if want sigterm; then
	mkdir -p "$OUT/sigterm"
	"${RECORD[@]}" -o "$OUT/sigterm/%p.tally" -- "$W" --forever >"$OUT/sigterm/stdout" 2>"$OUT/sigterm/stderr" &
	tp=$!
	await_output "$OUT/sigterm/stdout" "launched_total 3000 "
	kill -TERM $tp
	wait $tp
	echo $? >"$OUT/sigterm/status"
	# Every kernel the program saw finish before the close began is there (it runs on for a few
	# ms after the signal, outside the window); calls in flight at the close are cut_at_edges.
	expect sigterm 0 'v == "COMPLETE" and status == 143 and c["signal"] == 15 and s["ledger"]["flush_path"] == "signal" and k["kernel"] >= max(int(n) for n, t in re.findall(r"launched_total (\d+) at (\d+)", out) if int(t) < c["flush_start"]) and abs(k["kernel"] - api.count("cudaLaunchKernel")) <= c["cut_at_edges"]'
fi

# ---- signals as a job step or a terminal delivers them ----------------------------------
# sig_case NAME SIGNAL READY -- PROGRAM...: tally record runs PROGRAM in a session (and process
# group) of its own with SIGINT not ignored (a job step; a terminal's foreground job); once the
# program's stdout shows READY, SIGNAL goes to the whole group (kill -- -PGID: Slurm's scancel and
# time limit, a terminal's ^C), so the program gets it directly and again through tally record's
# forwarding.  The program must say "pid N" first.  Two minutes at most after the signal.
sig_case() {
	local name=$1 sig=$2 pattern=$3 bg i=0 pid pgid mine
	shift 4
	mkdir -p "$OUT/$name"
	setsid -w $PY "$HERE/../exitpath/foreground.py" "${RECORD[@]}" -o "$OUT/$name/%p.tally" -- \
		"$@" >"$OUT/$name/stdout" 2>"$OUT/$name/stderr" &
	bg=$!
	while ! grep -q "$pattern" "$OUT/$name/stdout" 2>/dev/null && [ $i -lt 900 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	pid=$(awk '/^pid /{print $2; exit}' "$OUT/$name/stdout")
	pgid=$([ -n "$pid" ] && sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f3)
	mine=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f3)
	if [ -n "$pgid" ] && [ "$pgid" -gt 1 ] && [ "$pgid" != "$mine" ]; then
		date +%s.%N >"$OUT/$name/signal_sent"
		kill -"$sig" -- "-$pgid"
	else
		bad "$name: the program never got ready (no process group to signal)"
	fi
	i=0
	while kill -0 $bg 2>/dev/null && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
	if kill -0 $bg 2>/dev/null; then
		bad "$name: still running two minutes after the signal"
		[ -n "$pgid" ] && [ "$pgid" -gt 1 ] && [ "$pgid" != "$mine" ] && kill -KILL -- "-$pgid"
	fi
	wait $bg
	echo $? >"$OUT/$name/status"
}

# close_time NAME: the time from the signal to the closed file, as the ledger measured it (for
# the report: it must fit well inside Slurm's KillWait, 30 s by default)
close_time() {
	local f
	f=$(ls "$OUT/$1"/*.tally.json 2>/dev/null | head -1)
	[ -n "$f" ] && $PY - "$f" "$1" <<'PY2'
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
c = s["ledger"]["counters"]
print(f"close {sys.argv[2]}: signal {c['signal_received']} -> file closed in "
      f"{c['signal_to_close_ns'] / 1e6:.1f} ms; {c['signals_received']} signal(s); "
      f"{c['records_parsed']} records; {s['verdict']}")
PY2
}

# The C launch loop: group SIGTERM and group SIGINT with no handler of its own (it dies of the
# signal after the close; every kernel it saw finish before the close began is there), and with
# its own handlers (it stops, says exactly how many it launched, resets SIG_DFL and raises).
if want signals; then
	for sig in TERM INT; do
		st=143
		[ $sig = INT ] && st=130
		sig_case "c_$sig" $sig "launched_total 3000 " -- "$W" --forever
		expect "c_$sig" 0 "v == 'COMPLETE' and status == $st and c['signal_received'] == $st - 128 and s['ledger']['flush_path'] == 'signal' and k['kernel'] >= before(c['flush_start']) > 0 and abs(k['kernel'] - api.count('cudaLaunchKernel')) <= c['cut_at_edges']"
		close_time "c_$sig"
		sig_case "c_graceful_$sig" $sig "launched_total 3000 " -- "$W" --forever --stop-on-signal
		expect "c_graceful_$sig" 0 "v == 'COMPLETE' and status == $st and k['kernel'] == api.count('cudaLaunchKernel') == stopped > 0 and c['signal_received'] == $st - 128"
		close_time "c_graceful_$sig"
	done
	# a large backlog at the signal (a consumer slowed to 5 us per record falls behind CUPTI):
	# the close drains it all, and must still end well inside KillWait
	TALLY_TEST_SLOW_CONSUMER_NS=5000 sig_case c_backlog TERM "launched_total 300000 " -- "$W" --forever
	expect c_backlog 0 's["ledger"]["final"] and status == 143 and c["signal_to_close_ns"] < 20e9'
	close_time c_backlog
fi

# PyTorch: a fork DataLoader (4 workers, forked after CUDA started), os.fork() after CUDA, and a
# loop stopped by group SIGTERM / SIGINT, plain (KeyboardInterrupt) and graceful (own handlers).
if want torch_signals; then
	if has_torch; then
		rec dataloader -- $PY "$HERE/torch_dataloader.py" 300 4
		expect dataloader 0 'v == "COMPLETE" and status == 0 and ranges.count("step") == num("steps") == 300 and files == 1'
		grep -q "symbol lookup" "$OUT/dataloader/stderr" && bad "dataloader: symbol lookup error" || ok "dataloader: no symbol lookup error"
		rec os_fork -- $PY "$HERE/torch_fork.py" 2000
		expect os_fork 0 'v == "COMPLETE" and status == 0 and sum("add" in n for n in names) == num("adds") == 4000 and "child_status 0" in out'
		rec os_fork_exit -- $PY "$HERE/torch_fork.py" 2000 --os-exit
		expect os_fork_exit 0 'v == "COMPLETE" and status == 0 and sum("add" in n for n in names) == num("adds") == 4000 and "child_status 0" in out'
		for t in os_fork os_fork_exit; do
			[ "$(ls "$OUT/$t"/*.tally | wc -l)" -eq 1 ] && ok "$t: the child wrote no file" || bad "$t: $(ls "$OUT/$t")"
		done
		sig_case torch_INT INT "ready" -- $PY "$HERE/torch_signal.py" plain
		expect torch_INT 0 'v == "COMPLETE" and status == 130 and stopped >= 0 and stopped <= sum("add" in n for n in names) <= stopped + 1 and stopped <= ranges.count("step") <= stopped + 1 and c["signal_received"] == 2'
		close_time torch_INT
		sig_case torch_TERM TERM "ready" -- $PY "$HERE/torch_signal.py" plain
		expect torch_TERM 0 'v == "COMPLETE" and status == 143 and sum("add" in n for n in names) >= progress > 0 and c["signal_received"] == 15'
		close_time torch_TERM
		for sig in TERM INT; do
			st=143
			[ $sig = INT ] && st=130
			sig_case "torch_graceful_$sig" $sig "ready" -- $PY "$HERE/torch_signal.py" graceful
			expect "torch_graceful_$sig" 0 "v == 'COMPLETE' and status == $st and sum('add' in n for n in names) == ranges.count('step') == stopped > 0 and c['signal_received'] == $st - 128"
			close_time "torch_graceful_$sig"
		done
	else
		skipped "torch_signals: no PyTorch with CUDA"
	fi
fi

# SIGKILL mid-run: nothing can run; the file reads to its last intact chunk, INCOMPLETE.
if want sigkill; then
	mkdir -p "$OUT/sigkill"
	"${RECORD[@]}" --flush-interval 500 -o "$OUT/sigkill/%p.tally" -- "$W" --forever >"$OUT/sigkill/stdout" 2>"$OUT/sigkill/stderr" &
	tp=$!
	# the periodic flush has written kernels (the SIGKILL then leaves a trace to read)
	await_trace_kernels "$OUT/sigkill" 3000
	kill -KILL "$(awk '/^pid /{print $2; exit}' "$OUT/sigkill/stdout")"
	wait $tp
	echo $? >"$OUT/sigkill/status"
	expect sigkill 0 'v == "INCOMPLETE" and not s["ledger"]["final"] and status == 137 and k["kernel"] >= 1000 and any(r["code"] == "not-closed" for r in s["reasons"])'
fi

# A starved pool (2 small buffers, a slowed consumer): CUPTI drops, and the ledger's count is
# exactly what is missing: kernels recorded + dropped == kernels launched.
if want starved; then
	TALLY_TEST_SLOW_CONSUMER_NS=20000 rec starved --trace kernel --pool-buffers 2 --buffer-size 65536 -- "$W" --kernels 200000
	expect starved 0 'v == "INCOMPLETE" and c["dropped_cupti"] > 0 and k["kernel"] + c["dropped_cupti"] == 200000 and any(r.get("counter") == "dropped_cupti" and r["windows"] for r in s["reasons"])'
fi

if want torch; then
	if has_torch; then
		rec torch -- $PY "$HERE/torch_loop.py" 20000
		expect torch 0 'v == "COMPLETE" and sum("add" in n for n in names) == num("adds") == 20000 and k["nvtx_range"] == 20000 and status == 0'
		rec fork -- $PY "$HERE/mp_child.py" fork 5000
		expect fork 0 'v == "COMPLETE" and sum("add" in n for n in names) == 5000 and s["ledger"]["flush_path"] == "_exit"'
		rec spawn -- $PY "$HERE/mp_child.py" spawn 5000
		expect spawn 0 'v == "COMPLETE" and sum("add" in n for n in names) == 5000'
		rec profiler -- $PY "$HERE/torch_profiler.py" 1000
		expect profiler 0 'v == "COMPLETE" and status == 0 and sum("add" in n for n in names) == 1000 and any(n["code"] == "other-client" for n in s["notes"])'
	else
		skipped "torch, fork, spawn: no PyTorch with CUDA"
	fi
fi
if want jax; then
	if $PY -c "import jax" 2>/dev/null; then
		rec jax -- $PY "$HERE/jax_loop.py" 1000
		expect jax 0 'v == "COMPLETE" and k["kernel"] >= num("jax_adds") == 1000 and status == 0'
	else
		skipped "jax: not installed"
	fi
fi
if want cupy; then
	if $PY -c "import cupy" 2>/dev/null; then
		rec cupy -- $PY "$HERE/cupy_loop.py" 1000
		expect cupy 0 'v == "COMPLETE" and k["kernel"] >= num("cupy_adds") == 1000 and status == 0'
	else
		skipped "cupy: not installed"
	fi
fi

# Two processes on two GPUs: two files, each with its own device.
if want twogpu; then
	if [ "$NGPU" -ge 2 ]; then
		rec twogpu -- sh -c "'$W' --device 0 --kernels 3000 & '$W' --device 1 --kernels 3000 & wait"
		expect twogpu 0 'v == "COMPLETE" and k["kernel"] == 3000 and len(devs) == 1'
		expect twogpu 1 'v == "COMPLETE" and k["kernel"] == 3000 and len(devs) == 1'
		d0=$(grep '^kernel ' "$(ls "$OUT"/twogpu/*.dump | head -1)" | grep -o ' dev=[0-9]*' | sort -u)
		d1=$(grep '^kernel ' "$(ls "$OUT"/twogpu/*.dump | tail -1)" | grep -o ' dev=[0-9]*' | sort -u)
		[ "$d0" != "$d1" ] && ok "twogpu: devices differ ($d0 /$d1)" || bad "twogpu: same device ($d0)"
	else
		skipped "twogpu: $NGPU GPU(s) here, needs 2 (the nvidia-h200-x2 kind)"
	fi
fi

echo "traces in $OUT"
finish "gpu suite"
