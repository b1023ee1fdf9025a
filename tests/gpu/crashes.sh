#!/bin/bash
# The crashes the H200 showed at exit, each run where it crashed, against what the program does
# untraced (its exit status) and what the trace must hold:
#
#   osrt     --trace cuda,nvtx,osrt (a session begun at load, CUDA joining at cuInit): exit 139 in
#            cuptiActivityDisable, the close running after CUPTI's teardown.  Now: the status
#            untraced, COMPLETE, the kernels there, and the cupti-joined note with the driver's
#            version as a default recording's header has it (it said "CUDA driver 0")
#   python   the same with --sample python (a PyTorch loop; skipped without PyTorch)
#   native   the same with --sample native
#   metrics  --gpu-metrics at 10 kHz and 1 kHz: SIGSEGV/SIGABRT in the PM sampler's stop and
#            disable after CUDA destroyed the context.  Now: the status untraced, COMPLETE, the
#            device sampled with samples written; also joined (with --trace osrt)
#   short    programs that end within the sampler's setup (main returning, Python's exit()),
#            five runs each: the status untraced, COMPLETE, the device sampled
#   killed   a holder of the GPU-metrics lock killed (SIGKILL): the next recording samples the
#            device (it said "sampled by pid N", N long gone)
#   agent    cuda-gdb runs the metrics program (its debugger back-end starts a debug agent,
#            NvDebugAgent, inside cuInit: a CUDA process of its own, recorded like one): the
#            program exits normally, its trace holds its kernels or says why not (in the program
#            CUDA never calls tally's injection, and cuptiActivityRegisterCallbacks refuses a
#            second client), at most one process sampled the device, and a recording after it
#            samples the device (skipped without cuda-gdb, or where cuda-gdb cannot run the program
#            untraced)
#
#   tests/gpu/crashes.sh [BUILD_DIR] [OUT_DIR]   (about a minute; 77 without a GPU)
# TALLY_GPU_CASES="osrt python native metrics short killed agent" runs a subset.  Prints ok/FAIL/skip
# lines and exits non-zero on a FAIL; the traces stay in OUT_DIR ($OUT/crashes when $OUT is set).
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
O=${2:-${OUT:+$OUT/crashes}}
O=${O:-$(mktemp -d /tmp/tally-crashes-XXXXXX)}
mkdir -p "$O"
T=$O
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
S=$B/gpu/sampling
LOAD=$B/gpu/metrics-load
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
if [ ! -x "$S" ] || [ "$HERE/sampling.cu" -nt "$S" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -g -arch=sm_90 -cudart shared -Xcompiler -fno-omit-frame-pointer -o "$S" "$HERE/sampling.cu" ||
		{ bad "cannot build sampling.cu"; finish; }
fi
if [ ! -x "$LOAD" ] || [ "$HERE/metrics-load.cu" -nt "$LOAD" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$LOAD" "$HERE/metrics-load.cu" || { bad "cannot build metrics-load"; finish; }
fi
want() { [ -z "${TALLY_GPU_CASES:-}" ] || [[ " $TALLY_GPU_CASES " == *" $1 "* ]]; }

# untraced NAME PROGRAM...: the program's exit status without tally, in $O/NAME.untraced
untraced() {
	local name=$1
	shift
	"$@" >/dev/null 2>&1
	echo $? >"$O/$name.untraced"
}

# rec NAME [record options] -- PROGRAM...: into $O/NAME/ (a file per process; a lock file put
# there beforehand stays), the status in $O/NAME/status
rec() {
	local name=$1
	shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	mkdir -p "$O/$name"
	rm -f "$O/$name"/*.tally "$O/$name"/*.tally.json
	"$TALLY" record -q "${opts[@]}" -o "$O/$name/%p.tally" -- "$@" >"$O/$name/stdout" 2>"$O/$name/stderr"
	echo $? >"$O/$name/status"
}

# expect NAME CONDITION: python over every trace of NAME: t the list of sections (tally check
# --json), one per file; g those with kernels (the CUDA program's: a launcher's has none);
# status and untraced the exit statuses; notes(x) a section's notes by code; dev(x, i) its device
# i's GPU-metrics entry; driver the driver version of $O/driver.tally's header
expect() {
	local name=$1 cond=$2 f
	for f in "$O/$name"/*.tally; do
		[ -f "$f" ] && "$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	done
	if $PY - "$O" "$name" "$cond" <<'PY'; then
import glob, json, os, sys
O, name, cond = sys.argv[1:4]
t = [json.load(open(f))["files"][0]["sections"][0] for f in sorted(glob.glob(os.path.join(O, name, "*.tally.json")))]
g = [x for x in t if x["records"].get("kernel")]
status = int(open(os.path.join(O, name, "status")).read())
u = os.path.join(O, name + ".untraced")
untraced = int(open(u).read()) if os.path.exists(u) else 0
notes = lambda x: {n["code"]: n["text"] for n in x.get("notes", [])}
dev = lambda x, i: [d for d in x["gpu_metrics"]["devices"] if d["device"] == i][0]
d = os.path.join(O, "driver.tally.json")
driver = json.load(open(d))["files"][0]["sections"][0]["driver_version"] if os.path.exists(d) else None
ok = eval(cond)
if not ok:
    for x in t:
        print("  pid", x.get("pid"), "verdict", x["verdict"], [r["text"] for r in x["reasons"]],
              "records", {k: v for k, v in x["records"].items() if v}, "notes", notes(x), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
		ok "$name: $cond"
	else
		bad "$name: $cond (exit $(cat "$O/$name/status"); $(tail -n 3 "$O/$name/stderr" | tr '\n' ' '))"
	fi
}

# A default recording (CUDA starts the session): the driver's version in its header.
"$TALLY" record -q -f -o "$O/driver.tally" -- "$S" compute 1 10 >/dev/null 2>&1
"$TALLY" check --json "$O/driver.tally" >"$O/driver.tally.json" 2>/dev/null ||
	bad "a default recording of sampling compute failed"

JOINED='status == untraced and all(x["verdict"] == "COMPLETE" for x in t) and len(g) == 1 and g[0]["ledger"]["flush_path"] == "exit"'
DRIVER='len(g) == 1 and driver and notes(g[0])["cupti-joined"].endswith("CUDA driver %d" % driver)'
if want osrt; then
	untraced osrt "$S" mutex 2 50
	rec osrt --trace cuda,nvtx,osrt -- "$S" mutex 2 50
	expect osrt "$JOINED and g[0]['records'].get('osrt', 0) > 0"
	expect osrt "$DRIVER"
fi
if want python; then
	if has_torch; then
		untraced python $PY "$HERE/sampling_sleep.py" "$O/python.json" 5 0.05
		rec python --sample python -- $PY "$HERE/sampling_sleep.py" "$O/python.json" 5 0.05
		expect python "$JOINED and g[0]['records'].get('cpu_sample', 0) > 0"
		expect python "$DRIVER"
	else
		skipped "python: no PyTorch with CUDA"
	fi
fi
if want native; then
	untraced native "$S" compute 5 50
	rec native --sample native -- "$S" compute 5 50
	expect native "$JOINED and g[0]['records'].get('cpu_sample', 0) > 0"
fi

METRICS='status == untraced and all(x["verdict"] == "COMPLETE" for x in t) and len(g) == 1 and dev(g[0], 0)["state"] == "sampled" and g[0]["ledger"]["counters"]["metric_samples_written"] > 0 and "gpu-metrics-context-gone" not in notes(g[0])'
SHORT='status == untraced == 0 and all(x["verdict"] == "COMPLETE" for x in t) and len(g) == 1 and dev(g[0], 0)["state"] == "sampled"'
if want metrics; then
	untraced metrics "$LOAD" 0.5
	rec metrics --gpu-metrics -- "$LOAD" 0.5
	expect metrics "$METRICS"
	cp "$O/metrics.untraced" "$O/metrics-1k.untraced"
	rec metrics-1k --gpu-metrics --gpu-metrics-frequency 1000 -- "$LOAD" 0.5
	expect metrics-1k "$METRICS"
	cp "$O/metrics.untraced" "$O/metrics-joined.untraced"
	rec metrics-joined --gpu-metrics --trace cuda,nvtx,osrt -- "$LOAD" 0.5
	expect metrics-joined "$METRICS and 'cupti-joined' in notes(g[0])"
fi

if want short; then
	# Programs that end while the sampler is still setting up (its first half second, while
	# CUPTI loads the PM libraries): a C program whose main returns at once, and Python, which
	# leaves by exit(); five runs of each, every one ending as it does untraced, whole and
	# sampled (a PM call after the libraries' destructors crashed such runs on the stand-in).
	untraced short-c "$S" compute 1 1
	PYSHORT=(-c 'import torch; torch.ones(1, device="cuda"); torch.cuda.synchronize()')
	TORCH=$(has_torch && echo yes) # asked once: each asking imports PyTorch
	[ -n "$TORCH" ] && untraced short-py $PY "${PYSHORT[@]}"
	for i in 1 2 3 4 5; do
		cp "$O/short-c.untraced" "$O/short-c$i.untraced"
		rec short-c$i --gpu-metrics -- "$S" compute 1 1
		expect short-c$i "$SHORT"
		if [ -n "$TORCH" ]; then
			cp "$O/short-py.untraced" "$O/short-py$i.untraced"
			rec short-py$i --gpu-metrics -- $PY "${PYSHORT[@]}"
			expect short-py$i "$SHORT"
		fi
	done
fi

if want killed; then
	# The program holding the device is killed once it has claimed it (its lock file written).
	rm -rf "$O/killed" "$O/killed-next"
	mkdir -p "$O/killed"
	"$TALLY" record -q --gpu-metrics -o "$O/killed/%p.tally" -- "$LOAD" 5 >/dev/null 2>&1 &
	rec_pid=$!
	for i in $(seq 1 600); do grep -qs '^end$' "$O"/killed/.tally-gpu-metrics-*.lock && break; sleep 0.05; done
	holder=$(sed -n 's/^pid=//p' "$O"/killed/.tally-gpu-metrics-*.lock 2>/dev/null | head -n 1)
	[ -n "$holder" ] && kill -KILL "$holder"
	wait $rec_pid
	mkdir -p "$O/killed-next"
	mv "$O"/killed/.tally-gpu-metrics-*.lock "$O/killed-next/" 2>/dev/null
	rec killed-next --gpu-metrics -- "$LOAD" 0.5
	[ -n "$holder" ] && ok "killed: pid $holder held the device, killed" || bad "killed: no holder found"
	expect killed-next "len(g) == 1 and g[0]['verdict'] == 'COMPLETE' and dev(g[0], 0)['state'] == 'sampled' and g[0]['pid'] != $holder"
fi

if want agent; then
	GDB=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null || true)
	# 4 s: long enough for two of the periodic flush's looks (cuda-not-joined below)
	GDBRUN=(-q -batch -ex run --args "$LOAD" 1)
	if [ -z "$GDB" ]; then
		skipped "agent: no cuda-gdb"
	elif ! timeout 100 "$GDB" "${GDBRUN[@]}" >"$O/agent.untraced.out" 2>&1 ||
		! grep -q "exited normally" "$O/agent.untraced.out"; then
		skipped "agent: cuda-gdb cannot run the program here ($(tail -n 1 "$O/agent.untraced.out"))"
	else
		rec agent --gpu-metrics --trace cuda,nvtx,osrt -- timeout 100 "$GDB" "${GDBRUN[@]}"
		grep -q "exited normally" "$O/agent/stdout" && ok "agent: the program exited normally under cuda-gdb" ||
			bad "agent: the program did not exit normally under cuda-gdb ($(tail -n 2 "$O/agent/stdout" | tr '\n' ' '))"
		# the program's own trace (not the shell's that exec'd it): its CUDA activity, or why
		# there is none (the debugger's back-end holds CUPTI there); at most one process
		# sampled the device, and none left it held (the next recording below)
		expect agent "status == 0 and [x for x in t if x['cmdline'].startswith('$LOAD')] and all(x['records'].get('kernel') or {'cupti-setup', 'cupti-load', 'cuda-not-joined'} & set(notes(x)) for x in t if x['cmdline'].startswith('$LOAD')) and len([x for x in t if any(d['state'] == 'sampled' for d in x['gpu_metrics']['devices'])]) <= 1"
		mkdir -p "$O/agent-next"
		mv "$O"/agent/.tally-gpu-metrics-*.lock "$O/agent-next/" 2>/dev/null
		rec agent-next --gpu-metrics -- "$LOAD" 0.5
		expect agent-next 'len(g) == 1 and g[0]["verdict"] == "COMPLETE" and dev(g[0], 0)["state"] == "sampled"'
	fi
fi
finish crashes.sh
