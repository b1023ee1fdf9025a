#!/bin/bash
# Records, on a GPU, the traces tests/data/ keeps as evidence of what a real card and CUPTI do
# (tests/data/README): host sampling, GPU metrics and ranks, each small enough to keep (a few
# hundred KB at most), each named for the card it was recorded on:
#   gpu-CARD-host.tally     a PyTorch DataLoader whose worker is slowed (sampling_loader.py 24
#                           0.02), --sample python,native --trace cuda,nvtx,osrt: its gaps are
#                           host wait, the main thread launching the work waits on the loader
#   gpu-CARD-metrics.tally  torch_metrics.py 0.3 under --gpu-metrics: sleep, elementwise and
#                           FP16 matmul phases, each about 0.3 s
#   gpu-CARD-ranks.tally    two torchrun ranks, rank 1 three times slower (torch_ranks.py --steps
#                           12, NCCL), merged with tally merge; with one GPU, two gloo ranks
#                           sharing it, rank 1 sleeping 40 ms a step (analyses_ranks.py)
# For each: tally check (COMPLETE wanted), its size, and the README line to add (the command, the
# card, the driver, the date).  Copy the ones to keep into tests/data/, add their lines to
# tests/data/README, and make their goldens (tests/golden/run.sh --update build/src/cli/tally);
# the consistency suite (tests/cli/test-consistency.py) then checks them too.
#
#   tests/gpu/keep-traces.sh [BUILD_DIR] [OUT_DIR]      (about 1 minute)
# Exits 77 without a GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-${OUT:-$(mktemp -d /tmp/tally-keep-XXXXXX)}}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
$PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || skip "no PyTorch with CUDA"

card=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1 | sed 's/^NVIDIA //; s/ .*//' |
	tr 'A-Z' 'a-z')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -1)
ngpu=$(nvidia-smi -L | wc -l)
day=$(date -u +%Y-%m-%d)
: >"$OUT/README.lines"

# keep NAME WHAT -- the trace at $OUT/gpu-CARD-NAME.tally: checked, sized, its README line
keep() {
	local name=$1 what=$2 t="$OUT/gpu-$card-$1.tally" size
	if [ ! -s "$t" ]; then
		bad "$name: no trace"
		return
	fi
	size=$(stat -c %s "$t")
	"$TALLY" check "$t" >"$OUT/$name.check" 2>&1 && ok "$name: COMPLETE ($size bytes)" ||
		bad "$name: $(head -3 "$OUT/$name.check" | tr '\n' ' ')"
	[ "$size" -le 600000 ] && ok "$name: small enough to keep" || bad "$name: $size bytes, too large to keep"
	"$TALLY" stats -r diagnosis "$t" >"$OUT/$name.diagnosis" 2>&1
	printf '%s\n    %s: %s (driver %s), %s: %s\n\n' "gpu-$card-$name.tally" "$(nvidia-smi \
		--query-gpu=name --format=csv,noheader -i 0 | head -1)" "$ngpu GPU(s)" "$driver" "$day" \
		"$what" >>"$OUT/README.lines"
}

cmd="tally record -q --sample python,native --trace cuda,nvtx,osrt -- python3 tests/gpu/sampling_loader.py 24 0.02"
timeout 300 "$TALLY" record -q --sample python,native --trace cuda,nvtx,osrt -o "$OUT/gpu-$card-host.tally" \
	-- $PY "$HERE/sampling_loader.py" 24 0.02 >"$OUT/host.out" 2>&1 || bad "host: $(tail -2 "$OUT/host.out")"
keep host "\`$cmd\`: a DataLoader's slowed worker starves the loop; its gaps are host wait, the launching main thread waiting on the loader"

cmd="tally record -q --gpu-metrics -- python3 tests/gpu/torch_metrics.py 0.3"
timeout 300 "$TALLY" record -q --gpu-metrics -o "$OUT/gpu-$card-metrics.tally" \
	-- $PY "$HERE/torch_metrics.py" 0.3 >"$OUT/metrics.out" 2>&1 || bad "metrics: $(tail -2 "$OUT/metrics.out")"
keep metrics "\`$cmd\`: sleep, elementwise and FP16 matmul phases of about 0.3 s, sampled"

if [ "$ngpu" -ge 2 ]; then
	mkdir -p "$OUT/ranks"
	cmd="tally record -q -- python3 -m torch.distributed.run --nproc_per_node 2 tests/gpu/torch_ranks.py --steps 12 --slow-rank 1, merged"
	timeout 300 "$TALLY" record -q -o "$OUT/ranks/%q{RANK}-%p.tally" -- $PY -m torch.distributed.run \
		--nproc_per_node 2 "$HERE/torch_ranks.py" --steps 12 --slow-rank 1 >"$OUT/ranks.out" 2>&1 ||
		bad "ranks: $(tail -2 "$OUT/ranks.out")"
	"$TALLY" merge -q --force -o "$OUT/gpu-$card-ranks.tally" "$OUT/ranks" >>"$OUT/ranks.out" 2>&1 ||
		bad "ranks: merge"
	keep ranks "\`$cmd\`: two NCCL ranks, rank 1 three times slower: the straggler"
else
	# one GPU: two ranks share it over gloo (NCCL refuses two ranks on one device), rank 1 sleeping
	# 40 ms in each step's range: the same straggler, a real CUPTI recording of both ranks
	mkdir -p "$OUT/ranks"
	cmd="tally record -q -- python3 -m torch.distributed.run --nproc_per_node 2 tests/gpu/analyses_ranks.py --steps 12 --sleep-rank 1 --sleep-ms 40 (gloo, one GPU), merged"
	timeout 300 "$TALLY" record -q --trace cuda,nvtx -o "$OUT/ranks/%q{RANK}-%p.tally" -- $PY -m torch.distributed.run \
		--nproc_per_node 2 "$HERE/analyses_ranks.py" --steps 12 --sleep-rank 1 --sleep-ms 40 >"$OUT/ranks.out" 2>&1 ||
		bad "ranks: $(tail -2 "$OUT/ranks.out")"
	"$TALLY" merge -q --force -o "$OUT/gpu-$card-ranks.tally" "$OUT/ranks" >>"$OUT/ranks.out" 2>&1 ||
		bad "ranks: merge"
	keep ranks "\`$cmd\`: two gloo ranks on one GPU, rank 1 sleeping 40 ms a step: the straggler"
fi
echo "the README lines: $OUT/README.lines; the traces: $OUT/gpu-$card-*.tally"
finish keep-traces.sh
