#!/bin/bash
# tally control, tally compare and gpu_gaps on a real GPU (issue 9): what the traces may be
# trusted for.  Expected values come from the programs (their printed counts, the spin knob they
# were given), never from tally.
#
#   tests/gpu/compare.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, a new temporary directory)
#
# Exits 77 (skipped) where there is no GPU.  Every command's output is kept in OUT_DIR (*.txt,
# *.json), to paste into docs/compare.md, docs/control.md and docs/stats.md.  Cases:
#   control-loop    tally control on the CUDA launch loop (3 rounds): nothing lost, the costs
#   control-torch   tally control on the PyTorch loop (skipped without torch)
#   control-graph   tally control on a CUDA-graph replay
#   starved         tally control with a starved pool (2 x 64 KiB, slowed consumer): the full
#                   kinds lose records; per round, kernels + dropped = launches; words say so
#   torch-same      two ordinary recordings of the PyTorch loop compare "same" for every kernel
#   spin            one kernel made 30% longer (WORKLOAD_SPIN_SCALE=1.3): compare flags it alone
#   gaps            gpu_gaps and gpu_time_util on a run with a sleep between two bursts: the gap
#                   is listed, and idle when nothing was lost
# TALLY_GPU_CASES="spin gaps" runs a subset.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d /tmp/tally-gpu-compare-XXXXXX)}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
W=$B/gpu/workload
PY=${PYTHON:-python3}
if [ ! -x "$W" ] || [ "$HERE/workload.cu" -nt "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/workload.cu" -lcuda || { bad "cannot build workload"; finish; }
fi
want() { [ -z "${TALLY_GPU_CASES:-}" ] || [[ " $TALLY_GPU_CASES " == *" $1 "* ]]; }
# check NAME FILE CONDITION: python over d (the JSON in FILE)
check() {
	if $PY -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then
		ok "$1"
	else
		bad "$1"; head -c 3000 "$2"; echo
	fi
}

# control NAME [control options] -- PROGRAM...: JSON in $OUT/NAME.json, the table in NAME.txt
control() {
	local name=$1; shift
	rm -rf "$OUT/$name"
	"$TALLY" control -o "$OUT/$name" --json "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	echo $? >"$OUT/$name.status"
	# the programs print on the same stdout: the JSON is the part from the first "{" line on
	sed -n '/^{/,$p' "$OUT/$name.out" >"$OUT/$name.json"
}

if want control-loop; then
	control control-loop -- "$W" --kernels 50000
	check "control-loop: 3 configs x 3 rounds, nothing lost" "$OUT/control-loop.json" \
		"[c['config'] for c in d['configs']]==['untraced','reduced','full'] and all(len(c['rounds'])==3 and c['lost']==0 for c in d['configs'])"
	check "control-loop: every traced round holds the 50000 kernels" "$OUT/control-loop.json" \
		"len(d['configs'])==3 and all(len(c['rounds'])==3 and all(r['records'] >= 50000 for r in c['rounds']) for c in d['configs'][1:])"
	"$TALLY" control -o "$OUT/control-loop-table" -- "$W" --kernels 50000 >"$OUT/control-loop.txt" 2>&1
fi

if want control-torch; then
	if has_torch; then
		control control-torch -- $PY "$HERE/torch_loop.py" 20000
		check "control-torch: nothing lost, compare reduced vs full given" "$OUT/control-torch.json" \
			"len(d['configs'])==3 and all(c['lost']==0 for c in d['configs']) and d['compare'] in ('same','differs')"
	else
		skipped "control-torch (no torch with CUDA)"
	fi
fi

if want control-graph; then
	control control-graph -- "$W" --kernels 0 --graph 100:500
	check "control-graph: nothing lost, 50000 graph kernels each traced round" "$OUT/control-graph.json" \
		"len(d['configs'])==3 and all(c['lost']==0 for c in d['configs']) and all(len(c['rounds'])==3 and all(r['records'] >= 50000 for r in c['rounds']) for c in d['configs'][1:])"
fi

if want starved; then
	# Reduced (kernels only) and full (cuda,nvtx) both get the starved pool; the point is the
	# comparison: how much more the full kinds lose, said in words.
	TALLY_TEST_SLOW_CONSUMER_NS=20000 control starved -n 2 --pool-buffers 2 --buffer-size 65536 -- "$W" --kernels 200000
	check "starved: the full kinds lose records" "$OUT/starved.json" "d['configs'][2]['dropped_cupti'] > 0"
	check "starved: record pressure: the full kinds lose more than reduced" "$OUT/starved.json" \
		"d['configs'][2]['lost'] > d['configs'][1]['lost']"
	check "starved: reduced rounds: kernels recorded + dropped = 200000 launches" "$OUT/starved.json" \
		"len(d['configs'][1]['rounds'])==2 and all(r['records'] + r['dropped_cupti'] == 200000 for r in d['configs'][1]['rounds'])"
	check "starved: the words name record pressure or the buffers" "$OUT/starved.json" \
		"any('losses appear' in s for s in d['conclusions']) and d['compare']=='unusable'"
	"$TALLY" check --json "$OUT"/starved/full-r1/*.tally >"$OUT/starved-check.json" 2>/dev/null
	check "starved: DROPS says the global queue, contexts tied to device 0" "$OUT/starved-check.json" \
		"(lambda e: any(x['source']=='global queue' and x['dropped']>0 for x in e) and any(x['source']=='context seen' and x['device']==0 for x in e))(d['files'][0]['sections'][0]['drops']['entries'])"
fi

if want torch-same; then
	if has_torch; then
		for i in 1 2; do
			"$TALLY" record -q -f -o "$OUT/torch-same-$i.tally" -- $PY "$HERE/torch_loop.py" 20000 >/dev/null 2>&1
		done
		"$TALLY" compare "$OUT/torch-same-1.tally" "$OUT/torch-same-2.tally" >"$OUT/torch-same.txt"
		"$TALLY" compare -f json "$OUT/torch-same-1.tally" "$OUT/torch-same-2.tally" >"$OUT/torch-same.json"
		echo $? >"$OUT/torch-same.status"
		check "torch-same: every kernel the same, exit 0" "$OUT/torch-same.json" \
			"d['verdict']=='same' and d['names'] and all(k['call']=='same' for k in d['names']) and open('$OUT/torch-same.status').read().strip()=='0'"
	else
		skipped "torch-same (no torch with CUDA)"
	fi
fi

if want spin; then
	"$TALLY" record -q -f -o "$OUT/spin-a.tally" -- "$W" --kernels 20000 --spin 10 >/dev/null 2>&1
	WORKLOAD_SPIN_SCALE=1.3 "$TALLY" record -q -f -o "$OUT/spin-b.tally" -- "$W" --kernels 20000 --spin 10 >/dev/null 2>&1
	"$TALLY" compare "$OUT/spin-a.tally" "$OUT/spin-b.tally" >"$OUT/spin.txt"
	"$TALLY" compare -f json "$OUT/spin-a.tally" "$OUT/spin-b.tally" >"$OUT/spin.json"
	check "spin: only the spin kernel differs, by duration, longer" "$OUT/spin.json" \
		"d['verdict']=='differs' and [k['name'] for k in d['names'] if k['call']=='differs']==[k['name'] for k in d['names'] if 'spin' in k['name']]!=[] and all(k['why']=='duration' and k['shift']>0.1 for k in d['names'] if k['call']=='differs') and all(s['first_divergence']==-1 for s in d['streams'])"
	"$TALLY" compare "$OUT/spin-a.tally" "$OUT/spin-a.tally" >/dev/null
	[ $? -eq 0 ] && ok "spin: a trace against itself is the same" || bad "spin: self compare"
fi

if want gaps; then
	# two bursts with the GPU idle in between: the workload's --sleep-ms is at the end, so run
	# the graph case (launches, then a replay) with an NVTX range: the CPU-side work between
	# the two phases leaves the device idle.  Listed gaps must be idle (nothing lost).
	"$TALLY" record -q -f -o "$OUT/gaps.tally" -- "$W" --kernels 20000 --graph 100:100 --memcpy 10:1048576 >/dev/null 2>&1
	"$TALLY" stats -r gpu_gaps,gpu_time_util --gap-min 100us "$OUT/gaps.tally" >"$OUT/gaps.txt"
	"$TALLY" stats -f json -r gpu_gaps,gpu_time_util --gap-min 100us "$OUT/gaps.tally" >"$OUT/gaps.json"
	# a gap must be listed: "every gap idle" over no gap would prove nothing
	check "gaps: COMPLETE trace, a gap listed and every gap idle, util buckets without loss" "$OUT/gaps.json" \
		"d['verdict']=='COMPLETE' and len(d['reports'][0]['rows']) > 0 and all(r['Class']=='idle' for r in d['reports'][0]['rows']) and len(d['reports'][1]['rows']) > 0 and not any(r['Loss'] for r in d['reports'][1]['rows'])"
	TALLY_TEST_SLOW_CONSUMER_NS=20000 "$TALLY" record -q -f --trace kernel --pool-buffers 2 --buffer-size 65536 -o "$OUT/gaps-lossy.tally" -- "$W" --kernels 200000 >/dev/null 2>&1
	"$TALLY" stats -r gpu_gaps,gpu_time_util "$OUT/gaps-lossy.tally" >"$OUT/gaps-lossy.txt"
	"$TALLY" stats -f json -r gpu_gaps "$OUT/gaps-lossy.tally" >"$OUT/gaps-lossy.json"
	check "gaps: starved trace: gaps overlapping the drops are unproven" "$OUT/gaps-lossy.json" \
		"d['verdict']=='INCOMPLETE' and any(r['Class']=='unproven' for r in d['reports'][0]['rows'])"
fi

echo "outputs in $OUT"
finish compare.sh
