#!/bin/bash
# tally report on real GPU traces: records the PyTorch loop (tests/gpu/torch_loop.py) and, with
# two GPUs and torchrun, a two-rank run whose rank 1 is made slow (tests/gpu/torch_ranks.py);
# writes each report, its screenshot and its DOM into OUT_DIR, and checks the pages as the CPU
# test does (verdict and reasons as tally check says them, kernel names and counts as tally stats
# gives them, no script error) plus what the programs did: 20,000 adds; rank 1 named slowest.
#
#   tests/gpu/report.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, a new temporary directory)
#
# Exits 77 without a GPU or PyTorch.  Rendering and its checks need chromium: without it each page
# is written but not checked, said "skip", and with nothing else checked the script exits 77.
# CHROME= (empty) says there is none; CHROME=PATH names the browser.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${2:-$(mktemp -d /tmp/tally-report-XXXXXX)}
mkdir -p "$OUT"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
CHROME=${CHROME-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}

has_torch || skip "no PyTorch with CUDA"

# what the page shows: the default reports and the analyses (src/page/html.c)
PAGE_REPORTS=nvtx_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum
PAGE_REPORTS=$PAGE_REPORTS,cuda_kern_stack_sum,cuda_gpu_mem_usage,gpu_time_breakdown,comm_compute_overlap
PAGE_REPORTS=$PAGE_REPORTS,kern_rank_spread,rank_steps,cuda_launch_stats,gpu_queue_depth,diagnosis

# page NAME TRACE [checker args]: report, DOM, screenshot, checks
page() {
	local name=$1 trace=$2; shift 2
	"$TALLY" report --force -o "$OUT/$name.html" "$trace" || { bad "$name: tally report"; return; }
	"$TALLY" stats -f json -r "$PAGE_REPORTS" -o "$OUT/$name.stats.json" "$trace" 2>/dev/null
	"$TALLY" check "$trace" >"$OUT/$name.check.txt" 2>&1
	if [ -z "$CHROME" ]; then
		skipped "$name: no chromium here: $OUT/$name.html written, not rendered nor checked"
		echo "     render it elsewhere: chromium --headless --no-sandbox --window-size=1400,2600 --screenshot=$name.png file://.../$name.html"
		return
	fi
	local flags="--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir=$OUT/.profile --virtual-time-budget=5000"
	timeout 120 "$CHROME" $flags --dump-dom "file://$OUT/$name.html" >"$OUT/$name.dom.html" 2>/dev/null
	timeout 120 "$CHROME" $flags --window-size=1400,2600 --screenshot="$OUT/$name.png" "file://$OUT/$name.html" >/dev/null 2>&1
	if $PY "$HERE/../cli/check-html-report.py" "$OUT/$name.dom.html" "$OUT/$name.stats.json" \
		"$OUT/$name.check.txt" "$OUT/$name.png" "$@"; then
		ok "$name: $OUT/$name.html, $OUT/$name.png"
	else
		bad "$name: the page disagrees (above)"
	fi
}

# 1. the PyTorch loop: 20,000 adds (+1 fill kernel for torch.zeros)
rm -rf "$OUT/torch" && mkdir -p "$OUT/torch"
"$TALLY" record -o "$OUT/torch/torch-%p" -- $PY "$HERE/torch_loop.py" 20000 || bad "torch: record"
page torch "$(ls "$OUT"/torch/*.tally | head -1)" --kernels 20001

# 2. two ranks on two GPUs under torchrun, rank 1 three times the work
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ] && $PY -c "import torch.distributed.run" 2>/dev/null; then
	rm -rf "$OUT/ranks" && mkdir -p "$OUT/ranks"
	"$TALLY" record -o "$OUT/ranks/rank-%q{RANK}-%p" -- $PY -m torch.distributed.run --nproc_per_node 2 \
		"$HERE/torch_ranks.py" --steps 200 --slow-rank 1 || bad "ranks: record"
	# the workers' files (the launcher uses no CUDA; were it to write a file, it has no rank)
	"$TALLY" merge --force -o "$OUT/ranks.tally" "$OUT"/ranks/rank-[0-9]*.tally || bad "ranks: merge"
	page ranks "$OUT/ranks.tally" --ranks 2
	# the page's own figures, browser or not: most compute (gpu_time_breakdown's: time some
	# kernel other than NCCL's ran) must be rank 1
	slowest=$($PY - "$OUT/ranks.html" <<'PYEOF'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
tl = json.loads(re.search(r'id="tally-timeline">(.*?)</script>', page, re.S).group(1))
for s in tl["sections"]:
    print(s["rank"], "busy", s["gpu_busy_ns"], "compute", s["compute_ns"], "comm", s["comm_ns"],
          "top", s["top_kernel"][:60], file=sys.stderr)
print(max(tl["sections"], key=lambda s: s["compute_ns"])["rank"])
PYEOF
)
	[ "$slowest" = "RANK=1" ] && ok "ranks: rank 1 (3x the matmuls) has the most compute" ||
		bad "ranks: slowest is '$slowest', want RANK=1"
	if [ -z "$CHROME" ]; then
		skipped "ranks: the page's slowest rank (no chromium here)"
	else
		# the all-reduce is inside each step's range, so every rank's step is as long: rank_steps
		# names no straggler by step time (docs/diagnosis.md); the page says what stats says
		grep -q 'id="straggler">Steps: ' "$OUT/ranks.dom.html" &&
			ok "ranks: the page's straggler line (the checker held it to rank_steps)" ||
			bad "ranks: no straggler line on the page"
	fi
else
	skipped "ranks: fewer than 2 GPUs or no torch.distributed (needs 2 GPUs: the nvidia-h200-x2 kind)"
fi
echo "reports in $OUT"
finish report.sh
