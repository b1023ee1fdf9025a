#!/bin/sh
# tally's main job, from a fresh machine (scripts/demo.sh, or `make demo`): install what the demo
# needs and is missing (the compiler, CMake and the libraries tally links; not the tests'
# packages), build, and read traces the way a user reads one in three minutes:
#   1. the diagnosis (tally stats -r diagnosis: what cost the most time, and why) and what the
#      host did in the longest GPU gap (gpu_idle_why), first;
#   2. then tally doctor, the verdict (tally check), the summaries, the exports (Perfetto JSON,
#      Kineto JSON for HTA, SQLite) and the HTML page of each trace (tally report).
# With a GPU it records its own: a CUDA program that computes on the CPU between bursts of kernels
# (tests/gpu/sampling.cu: the GPU waits for the host, and native samples name cpu_work), and,
# where PyTorch is there, a loop fed by a slow DataLoader, sampled (--sample python), so the
# diagnosis names the line the GPU waited on.  Without one it reads the kept recordings
# listed below.  Outputs go to demo-out/ (replaced on each run: run it as often as you like).
# Exit status: 0 when every step worked; 1 when one failed (it says which); a trace found
# INCOMPLETE, or doctor's FAIL without a GPU, is an answer, not a failure.
set -u
cd "$(dirname "$0")/.." || exit 1

# The kept recordings read without a GPU, in this order (the first ones' diagnosis comes first):
# real ones (tests/data/README): a DataLoader's slow worker with host samples, two ranks with a
# straggler, a PyTorch loop, GPU metrics.
DEMO_TRACES="
tests/data/gpu-h100-host.tally
tests/data/gpu-h100-ranks.tally
tests/data/gpu-h200-torch.tally
tests/data/gpu-h100-metrics.tally
"

step() { printf '\n==== %s\n' "$*"; }
die() {
	printf '\ndemo: FAILED: %s\n' "$*" >&2
	exit 1
}
# answer CMD...: a reader whose exit 1 is an answer (INCOMPLETE, a FAIL): 2 and above are failures
answer() {
	"$@"
	rc=$?
	[ "$rc" -le 1 ] || die "$* (exit $rc)"
}
# must CMD...: a step that must work
must() {
	"$@" || die "$* (exit $?)"
}
# logged WHAT LOG CMD...: run CMD with its output in LOG, saying every $TALLY_DEMO_PROGRESS_S
# seconds (15) that it still runs, and how far a build got; on failure the end of the log, exit 1.
logged() {
	what=$1 log=$2
	shift 2
	"$@" >"$log" 2>&1 &
	pid=$!
	t0=$(date +%s)
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		t=$(($(date +%s) - t0))
		if [ $((t % ${TALLY_DEMO_PROGRESS_S:-15})) -eq 0 ] && [ "$t" -gt 0 ]; then
			pct=$(grep -o '^\[ *[0-9]*%\]' "$log" | tail -n1 | tr -d '[] ')
			echo "  ... $what: ${t} s${pct:+, $pct done}"
		fi
	done
	wait "$pid" || {
		tail -n 30 "$log"
		die "$what (the whole output: $log)"
	}
}

jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build
if [ -z "${TALLY_DEMO_PREBUILT:-}" ]; then # set where build/ was made elsewhere (no network)
	step "installing what the build needs (apt-get, when something is missing)"
	must scripts/install-deps.sh build
	step "building tally ($jobs jobs; about 2 minutes on 2 cores)"
	logged "configuring (cmake)" build/demo-configure.log \
		cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	logged "compiling" build/demo-build.log cmake --build build -j"$jobs"
	echo "  built: build/src/cli/tally"
fi
T=build/src/cli/tally
OUT=demo-out
[ -x "$T" ] || die "$T is not built"
rm -rf "$OUT"
mkdir -p "$OUT"

# diagnose FILE: the diagnosis, then gpu_idle_why of the longest GPU gap (gpu_gaps' longest)
diagnose() {
	step "tally stats -r diagnosis $1"
	answer "$T" stats -r diagnosis "$1"
	longest=$("$T" stats -r gpu_gaps -f csv "$1" 2>/dev/null |
		awk -F, '$2 ~ /^[0-9]+$/ && $2 + 0 > m { m = $2 + 0 } END { if (m) print m }')
	if [ -n "$longest" ]; then
		step "why the GPU idled in its longest gap ($longest ns): tally stats -r gpu_idle_why --gap-min ${longest}ns $1"
		answer "$T" stats -r gpu_idle_why --gap-min "${longest}ns" "$1"
	fi
}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	step "recording on $(nvidia-smi -L | head -n1): a CUDA program that computes on the CPU between bursts of kernels (the GPU waits for the host), its native stacks sampled"
	if [ ! -x build/gpu/sampling ]; then
		mkdir -p build/gpu
		must nvcc -O2 -g -arch=native -cudart shared -Xcompiler -fno-omit-frame-pointer \
			-o build/gpu/sampling tests/gpu/sampling.cu
	fi
	answer "$T" record --sample native -o "$OUT/compute-%p" -- build/gpu/sampling compute 10 100
	if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
		step "recording a PyTorch loop fed by a slow DataLoader, its Python stacks sampled"
		answer "$T" record --sample python -o "$OUT/torch-%p" -- \
			python3 tests/gpu/sampling_loader.py 40 0.02
	fi
	TRACES=$(ls "$OUT"/*.tally)
	PAGES=$TRACES
else
	step "no GPU here: reading recordings kept in tests/data/"
	TRACES=
	for f in $DEMO_TRACES; do
		[ -f "$f" ] && TRACES="$TRACES $f"
	done
	[ -n "$TRACES" ] || die "none of the kept recordings is here: $DEMO_TRACES"
	PAGES=$(echo $TRACES | cut -d' ' -f1)
fi

# 1. what cost the most time, and why the GPU waited
for f in $TRACES; do
	diagnose "$f"
done

# 2. the rest: can this machine record, is each trace whole, the summaries, the exports
step "tally doctor: could this machine record?"
answer "$T" doctor -o "$OUT/demo-%p"
step "tally check: is each trace whole?"
# shellcheck disable=SC2086
answer "$T" check $TRACES
for f in $TRACES; do
	base=$OUT/$(basename "$f" .tally)
	step "tally stats $f"
	answer "$T" stats --report cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum "$f"
	step "tally export $f: Perfetto JSON, Kineto JSON (HTA), SQLite"
	must "$T" export -q --force "$f" -o "$base.json"
	echo "  $base.json: open in https://ui.perfetto.dev"
	must "$T" export -q --force -f kineto "$f" -o "$base.kineto"
	echo "  $base.kineto/: HTA's TraceAnalysis(trace_dir=\"$base.kineto\")"
	must "$T" export -q --force "$f" -o "$base.sqlite"
	echo "  $base.sqlite: sqlite3 $base.sqlite"
done

step "tally report: the page (one HTML file, opens offline)"
for f in $PAGES; do
	page=$OUT/$(basename "$f" .tally).html
	answer "$T" report -q --force -o "$page" "$f"
	[ -s "$page" ] || die "tally report wrote no $page"
	echo "report: $(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
done
