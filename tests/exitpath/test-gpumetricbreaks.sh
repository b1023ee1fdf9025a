#!/bin/sh
# tests/gpu/metric-breaks.sh's own logic on the CPU: its SIGTERM runs, with the stand-in CUPTI's
# PM sampling (fakecupti-pm.c) and fakeapp as the workload, an nvidia-smi that says there is a
# GPU and no PyTorch (the step loop skips), at 1 kHz (an image holds 266 ms: a loaded machine
# does not hold the sampler up that long).  A run whose metrics are whole passes; one with a
# break the GPU made (FAKECUPTI_PM_HOLE) passes too, the break shown with its cause, the samples
# on either side and its length; one with a break a late decode left (FAKECUPTI_PM_STALL_AT: the
# sampler held up longer than its image holds) fails the script, which names the cause.  What
# the script finds on a GPU needs the GPU machine.
# Usage: test-gpumetricbreaks.sh TALLY FAKEAPP FAKECUPTI SOURCE_DIR
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") APP=$2 SRC=$4
export TALLY_CUPTI_PATH=$3
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/b/src/cli" "$T/b/gpu" "$T/bin"
ln -s "$TALLY" "$T/b/src/cli/tally"
printf '#!/bin/sh\nexec "%s" wait 1\n' "$APP" >"$T/b/gpu/workload"
printf '#!/bin/sh\necho "GPU 0: stand-in"\n' >"$T/bin/nvidia-smi"
chmod +x "$T/b/gpu/workload" "$T/bin/nvidia-smi"

# breaks NAME [VAR=VALUE...]: the script, one SIGTERM run, into $T/NAME.out; its status in rc
breaks() {
	name=$1
	shift
	env PATH="$T/bin:$PATH" PYTHON=false METRIC_BREAKS_TERMS=1 \
		METRIC_BREAKS_TERM_OPTS="--gpu-metrics-frequency 1000" "$@" \
		bash "$SRC/tests/gpu/metric-breaks.sh" "$T/b" "$T/$name" >"$T/$name.out" 2>&1
	rc=$?
}
# has NAME PATTERN WHAT: the output of case NAME has a line matching PATTERN
has() {
	grep -Eq "$2" "$T/$1.out" && ok "$1: $3" || { bad "$1: $3"; sed 's/^/    /' "$T/$1.out"; }
}

breaks whole
[ "$rc" -eq 0 ] && ok "whole: exit 0" || bad "whole: exit $rc"
has whole '^ok   term1: term1: COMPLETE; metric samples [1-9][0-9]*, breaks 0 ' "COMPLETE, samples taken, no break"
has whole '^skip mixed step loop at 10000 Hz: no PyTorch' "the step loop skipped without PyTorch"

breaks hole FAKECUPTI_PM_HOLE=1000:5
[ "$rc" -eq 0 ] && ok "hole: exit 0 (the GPU's own break is explained)" || bad "hole: exit $rc"
has hole "^ok   term1: term1: INCOMPLETE; metric samples [1-9][0-9]*, breaks 1 \(5.000 ms\): the GPU's own 1, late decodes 0" "one break, the GPU's own"
has hole '^  break 1: \+[0-9.]+ \.\. \+[0-9.]+ s \(5\.000 ms\)$' "the break's window and length"
has hole '^    before: .* SM [0-9.]+% GR [0-9.]+% clock 1\.980 GHz$' "the sample before it, with the clock"
has hole "^  note \[gpu-metrics-breaks\] .*1 \(5\.000 ms\) where the GPU took no sample" "the sampler's note on its cause"

breaks late FAKECUPTI_PM_STALL_AT=10:400
[ "$rc" -eq 1 ] && ok "late: exit 1 (a break of tally's)" || bad "late: exit $rc"
has late '^FAIL term1: term1: INCOMPLETE; .*late decodes [1-9]' "judged a failure, the late decode named"
has late 'at worst [0-9.]+ ms after the decode before; an image holds 266\.0 ms' "the note says how late"
finish
