#!/bin/sh
# tally's main job, from a fresh machine (scripts/demo.sh, or `make demo`): install what the
# demo needs and is missing (the compiler, CMake and the libraries tally links; not the tests'
# packages), build, run
# tally doctor, then
#   - with a GPU: record a bundled CUDA workload (kernels, copies, memsets, a CUDA graph, NVTX,
#     two host threads), and a PyTorch loop if PyTorch is there; check, summarise, export;
#   - without one: the same check/stats/export on a small trace recorded on an H200 and kept in
#     the repo (tests/data/gpu-h200.tally);
# and ends with the HTML report of each trace (tally report; without a GPU, of the kept PyTorch
# trace tests/data/gpu-h200-torch.tally), printing its path.
# Output files go to demo-out/.
set -eu
cd "$(dirname "$0")/.."
step() { printf '\n==== %s\n' "$*"; }
jobs=$(nproc 2>/dev/null || echo 2)

if [ -z "${TALLY_DEMO_PREBUILT:-}" ]; then # set where build/ was made elsewhere (no network)
	step "dependencies and build"
	scripts/install-deps.sh build
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$jobs" >/dev/null
fi
T=build/src/cli/tally
OUT=demo-out
mkdir -p "$OUT"

step "tally doctor"
$T doctor -o "$OUT/demo-%p" || true

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	step "recording a CUDA workload on $(nvidia-smi -L | head -1)"
	mkdir -p build/gpu
	[ -x build/gpu/workload ] || nvcc -O2 -arch=native -o build/gpu/workload tests/gpu/workload.cu -lcuda
	rm -f "$OUT"/*.tally
	$T record -o "$OUT/workload-%p" -- build/gpu/workload --kernels 20000 \
		--memcpy 100:1048576 --memset 50:65536 --graph 100:50 --threads 2 --nvtx
	if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
		step "recording a PyTorch loop (torch.cuda.nvtx ranges included)"
		$T record -o "$OUT/torch-%p" -- python3 tests/gpu/torch_loop.py 20000
	fi
	TRACES=$(ls "$OUT"/*.tally)
else
	step "no GPU here: reading a trace recorded on an NVIDIA H200 (tests/data/gpu-h200.tally)"
	TRACES=tests/data/gpu-h200.tally
fi

step "tally check"
# shellcheck disable=SC2086
$T check $TRACES || true
for f in $TRACES; do
	step "tally stats $f"
	$T stats --report cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum "$f" || true
	step "tally export $f (Chrome/Perfetto JSON and SQLite)"
	base=$OUT/$(basename "$f" .tally)
	$T export "$f" --format chrome -o "$base.json" && echo "  $base.json: open in https://ui.perfetto.dev"
	$T export "$f" --format sqlite -o "$base.sqlite" && echo "  $base.sqlite: sqlite3 $base.sqlite"
done

# The page of each trace recorded here; without a GPU, of the PyTorch loop kept from an H200.
step "tally report: one HTML page per trace (opens offline, from file://)"
[ "$TRACES" = tests/data/gpu-h200.tally ] && TRACES=tests/data/gpu-h200-torch.tally
for f in $TRACES; do
	page=$OUT/$(basename "$f" .tally).html
	$T report -q --force -o "$page" "$f" || true
	echo "report: $(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
done
