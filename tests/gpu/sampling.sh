#!/bin/bash
# Host sampling and blocking calls on the GPU (format 1.3), each against what the workload says
# it did (tests/exitpath/check-sampling.py compares; the expected values are the workloads',
# never tally's).  Until tally's own gap report exists, the attribution is checked here from the
# records: the GPU's idle gaps come from the kernel records (tally-dump), and each gap's main-
# thread samples must name the cause the workload built in.
#
#   sleep      a PyTorch loop that sleeps between bursts of kernels (--sample python): the idle
#              gaps are the time.sleep line's (file and line from the program's inspect)
#   loader     a DataLoader whose worker sleeps per item (--sample python --trace osrt): the
#              gaps are the main thread's, waiting in _MultiProcessingDataLoaderIter._get_data,
#              and a blocking call of its spans each
#   compute    a CUDA program computing on the CPU in cpu_work() between bursts (--sample
#              native), under perf events and under the forced timer fallback: the gaps are
#              cpu_work's (by nm's address range of it)
#   mutex      the same program locking a mutex another thread holds for 200 ms (--trace osrt):
#              the pthread_mutex_lock calls and their lengths (as the program measured them)
#   rate       2 s of CPU in burn_cpu (tests/exitpath/fakehost) at 1 kHz: perf events give
#              2000 +-5% samples; the timer's samples stand for 2 s +-5%
#   eintr      a read() of a pipe never retried (fakehost pipe): as many EINTR with the timer's
#              signals as untraced (0)
#   python,native  the PyTorch sleep loop with both: COMPLETE, both kinds of samples
#
#   tests/gpu/sampling.sh [BUILD_DIR] [OUT_DIR]      (about 2 minutes; exits 77 without a GPU)
# Traces and dumps are kept in OUT_DIR ($OUT/sampling when $OUT is set).
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
O=${2:-${OUT:+$OUT/sampling}}
O=${O:-$(mktemp -d /tmp/tally-sampling-XXXXXX)}
mkdir -p "$O"
T=$O
TALLY=$B/src/cli/tally
DUMP=$B/tests/tally-dump
HOSTP=$B/tests/exitpath/fakehost
CHECK="python3 $HERE/../exitpath/check-sampling.py"
PY=${PYTHON:-python3}
S=$B/gpu/sampling
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
if [ ! -x "$S" ] || [ "$HERE/sampling.cu" -nt "$S" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -g -arch=sm_90 -cudart shared -Xcompiler -fno-omit-frame-pointer -o "$S" "$HERE/sampling.cu" ||
		{ bad "cannot build sampling.cu"; finish; }
fi

# rec NAME [record options] -- PROGRAM...: $O/NAME.tally, its records and host dumps, stdout
rec() {
	local name=$1
	shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	"$TALLY" record -f -q "${opts[@]}" -o "$O/$name.tally" -- "$@" >"$O/$name.out" 2>"$O/$name.err" ||
		bad "$name: exit $? ($(tail -n 3 "$O/$name.err"))"
	"$DUMP" "$O/$name.tally" >"$O/$name.records"
	"$DUMP" --host "$O/$name.tally" >"$O/$name.host"
	"$TALLY" check "$O/$name.tally" >"$O/$name.check" 2>&1 || bad "$name: tally check says $(grep -A3 verdict "$O/$name.check" | tr '\n' ' ')"
}
value() { sed -n "s/^$1 //p" "$2"; }
json() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
mechanism() { sed -n 's/.*native by \([a-z]*\):.*/\1/p' "$1"; }

if has_torch; then
	rec sleep --sample python -- $PY "$HERE/sampling_sleep.py" "$O/sleep.json" 10 0.1
	$CHECK gaps "$O/sleep.records" "$O/sleep.host" 80000000 10 python \
		"$(json "$O/sleep.json" file)" "$(json "$O/sleep.json" sleep_line)" && ok "sleep" || bad "sleep"
	rec loader --sample python --trace cuda,nvtx,osrt -- $PY "$HERE/sampling_loader.py" 12 0.1
	$CHECK gaps "$O/loader.records" "$O/loader.host" 60000000 8 pyfunc _get_data &&
		$CHECK gap-calls "$O/loader.records" "$O/loader.host" 60000000 8 && ok "loader" ||
		bad "loader"
	rec both --sample python,native -- $PY "$HERE/sampling_sleep.py" "$O/both.json" 5 0.1
	grep -q 'source=1 ' "$O/both.host" && grep -q 'source=[23] ' "$O/both.host" &&
		ok "python,native: both kinds of samples in one COMPLETE trace" || bad "python,native"
else
	skipped "PyTorch with CUDA: the sleep and DataLoader workloads"
fi

rec compute --sample native -- "$S" compute 10 100
m=$(mechanism "$O/compute.check")
[ "$m" = perf ] && ok "perf events are what ran here (the trace says: $m)" ||
	skipped "perf events refused here (the trace says: $m)"
$CHECK gaps "$O/compute.records" "$O/compute.host" 80000000 10 native "$S" cpu_work &&
	ok "compute ($m)" || bad "compute ($m)"
TALLY_SAMPLE_FALLBACK=1 rec compute-timer --sample native -- "$S" compute 10 100
[ "$(mechanism "$O/compute-timer.check")" = timer ] && ok "TALLY_SAMPLE_FALLBACK=1: the timer ran" ||
	bad "the forced fallback did not run the timer"
$CHECK gaps "$O/compute-timer.records" "$O/compute-timer.host" 80000000 10 native "$S" cpu_work &&
	ok "compute (timer)" || bad "compute (timer)"

rec mutex --trace cuda,nvtx,osrt -- "$S" mutex 5 200
addr=$(value mutex "$O/mutex.out")
for w in $(value waited_ns "$O/mutex.out"); do
	$CHECK osrt "$O/mutex.host" pthread_mutex_lock $((w * 9 / 10)) $((w * 11 / 10 + 1000000)) "$addr" ||
		bad "mutex wait of $w ns"
done

rec rate --sample native -- "$HOSTP" burn 2000
[ "$(mechanism "$O/rate.check")" = perf ] &&
	{ $CHECK native "$O/rate.host" "$HOSTP" burn_cpu "$(value cpu_ns "$O/rate.out")" rate && ok "rate (perf)" || bad "rate (perf)"; }
TALLY_SAMPLE_FALLBACK=1 rec rate-timer --sample native -- "$HOSTP" burn 2000
$CHECK native "$O/rate-timer.host" "$HOSTP" burn_cpu "$(value cpu_ns "$O/rate-timer.out")" duration &&
	ok "rate (timer)" || bad "rate (timer)"

"$HOSTP" pipe 3000 >"$O/pipe.plain"
TALLY_SAMPLE_FALLBACK=1 rec pipe --sample native -- "$HOSTP" pipe 3000
e0=$(value eintr "$O/pipe.plain") e1=$(value eintr "$O/pipe.out")
[ "$e0" = "$e1" ] && ok "read() on a pipe, not retried: EINTR $e1 with the timer's signals, $e0 untraced" ||
	bad "EINTR: $e1 sampled, $e0 untraced"
grep -h "sampling\|samples taken\|osrt " "$O"/*.check | sort | uniq -c | sort -rn | head -n 12
finish sampling.sh
