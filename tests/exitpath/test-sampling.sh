#!/bin/sh
# Host sampling and blocking calls on the CPU (format 1.3), with the stand-in CUPTI: every
# mechanism (perf events, the forced timer fallback, Python frames read from outside, the
# blocking-call interposers), each checked against what the workload says it did
# (tests/exitpath/fakehost.c and sampling.py print their own account; check-sampling.py
# compares), and the program unchanged (output, exit status, signal handlers and mask, EINTR
# on a pipe read, fork and exec), torn chains and a full ring counted.
# Usage: test-sampling.sh LIBTALLY FAKEHOST FAKECUPTI TALLY-DUMP TALLY SRCDIR
set -u
. "$(dirname "$0")/../lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
# TSan: the timer's handler unwinds (calls TSan sees as signal-unsafe, and are not: libgcc's
# lock-free unwinder), and the fork case starts a fork child's own session threads
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:die_after_fork=0"
LIB=$1 HOST=$2 CUPTI=$3 DUMP=$4 TALLY=$5 SRC=$6
# A TSan build's libtally.so cannot be preloaded into an uninstrumented python3 (ASan's can).
TSAN=$(ldd "$HOST" | grep -c libtsan)
ASAN=$(ldd "$HOST" | grep -c libasan)
CHECK="python3 $SRC/check-sampling.py"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# sampled NAME ENV... -- CMD...: run CMD with libtally.so preloaded, recording to $T/NAME.tally
sampled() {
	name=$1
	shift
	env LD_PRELOAD="$LIB" CUDA_INJECTION64_PATH="$LIB" TALLY_CUPTI_PATH="$CUPTI" \
		TALLY_OUTPUT="$T/$name.tally" TALLY_TRACE=cuda,nvtx,osrt "$@"
}
value() { sed -n "s/^$1 //p" "$2"; }
counter() { # NAME FILE: a ledger counter from tally check --json
	"$TALLY" check --json "$2" | python3 -c "import json,sys; d=json.load(sys.stdin); \
print(d['files'][0]['sections'][0]['ledger']['counters']['$1'])"
}
mechanism() { "$TALLY" check --json "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); \
print(d['files'][0]['sections'][0]['sampling']['mechanism'] or '')"; }

# ---- native, on CPU time: perf events where the kernel allows them, and the timer fallback ----
# perf_native NAME: the burn under perf events, checked (the rate holds with the periods the
# kernel folded into later samples, counted as overruns; the samples stand for the CPU time)
perf_native() {
	sampled "$1" TALLY_SAMPLE=native "$HOST" burn 2000 >"$T/$1.out" || bad "burn ($1) exit"
	"$DUMP" --host "$T/$1.tally" >"$T/$1.dump"
	case $(mechanism "$T/$1.tally") in
	perf:*standing\ for*)
		$CHECK native "$T/$1.dump" "$HOST" burn_cpu "$(value cpu_ns "$T/$1.out")" rate \
			"$(counter sample_overruns "$T/$1.tally")" || bad "perf events ($1)" ;;
	perf:*) # before Linux 6.12 samples carry no count: one period each
		$CHECK native "$T/$1.dump" "$HOST" burn_cpu "$(value cpu_ns "$T/$1.out")" duration ||
			bad "perf events ($1)" ;;
	*) skipped "perf events: not allowed here ($(mechanism "$T/$1.tally"))" ;;
	esac
}
perf_native perf
sampled timer TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=1 "$HOST" burn 2000 >"$T/timer.out" ||
	bad "burn (timer) exit"
"$DUMP" --host "$T/timer.tally" >"$T/timer.dump"
case $(mechanism "$T/timer.tally") in
timer:*) ok "TALLY_SAMPLE_FALLBACK=1 forces the timer fallback (the trace says so)" ;;
*) bad "the trace says $(mechanism "$T/timer.tally"), not the timer" ;;
esac
$CHECK native "$T/timer.dump" "$HOST" burn_cpu "$(value cpu_ns "$T/timer.out")" duration ||
	bad "timer fallback"
"$TALLY" check -q "$T/perf.tally" "$T/timer.tally" >/dev/null && ok "both traces COMPLETE" ||
	bad "a native trace is not COMPLETE"

# ---- the same under load: two busy processes beside it on this machine's cores ----
# What the kernel could not sample when it was due (a timer that fired late, a thread that did
# not run) is counted and carried by the next sample, so the samples still stand for the CPU time.
busy() { timeout 60 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!; } # ends by itself too
b1=$(busy) b2=$(busy)
perf_native perf-load
sampled timer-load TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=1 "$HOST" burn 2000 \
	>"$T/timer-load.out" || bad "burn (timer, load) exit"
kill "$b1" "$b2"
"$DUMP" --host "$T/timer-load.tally" >"$T/timer-load.dump"
$CHECK native "$T/timer-load.dump" "$HOST" burn_cpu "$(value cpu_ns "$T/timer-load.out")" \
	duration || bad "timer fallback (load)"
"$TALLY" check -q "$T/timer-load.tally" >/dev/null && ok "under load: the timer's trace COMPLETE" ||
	bad "under load: the timer's trace is not COMPLETE"

# ---- TALLY_BENCH_TOGGLE_MS (the cost benchmarks): sampling on in some 100 ms intervals only ----
offset=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
for how in perf timer; do
	[ $how = timer ] && fb=1 || fb=0
	sampled toggle-$how TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=$fb TALLY_BENCH_TOGGLE_MS=100 \
		"$HOST" burn 2000 >"$T/toggle-$how.out" || bad "burn (toggled, $how) exit"
	case $(mechanism "$T/toggle-$how.tally") in
	$how:*) ;;
	*) skipped "toggled $how: $(mechanism "$T/toggle-$how.tally")"; continue ;;
	esac
	"$DUMP" --host "$T/toggle-$how.tally" >"$T/toggle-$how.dump"
	if [ "$TSAN" != 0 ]; then # its runtime slows the sampler's wake-ups past the 20 ms allowed
		skipped "toggled $how: when the sampler switches, in a TSan build (a benchmark's setting)"
	else
		$CHECK toggled "$T/toggle-$how.dump" "$HOST" burn_cpu "$(value cpu_ns "$T/toggle-$how.out")" \
			$(value burn_monotonic_ns "$T/toggle-$how.out") 100 "$offset" ||
			bad "toggled sampling ($how)"
	fi
	"$TALLY" check --json "$T/toggle-$how.tally" | grep -q '"code": *"bench-toggle"' &&
		ok "toggled ($how): the trace says sampling was off at times" ||
		bad "toggled ($how): no bench-toggle note"
done

# ---- Python, wall clock: every thread, states, lines, from the start ----
# the interpreter itself, not a wrapper that execs it (pyenv's shim is a shell script)
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
[ "$TSAN" -eq 0 ] || PY=
if [ -n "$PY" ]; then
	# every CPython layout there is to try here (3.11 to 3.13: pyenv keeps some)
	for p in "$PY" $(ls -d "$HOME"/.pyenv/versions/3.1[23]*/bin/python3 2>/dev/null); do
		v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
		sampled "py$v" TALLY_SAMPLE=python "$p" "$SRC/sampling.py" "$T/py$v.json" 0.6 0.6 1.5 ||
			bad "python $v exit"
		"$DUMP" --host "$T/py$v.tally" >"$T/py$v.dump"
		$CHECK python "$T/py$v.dump" "$T/py$v.json" \
			"$(counter sample_ticks_missed "$T/py$v.tally")" && ok "python $v sampling" || {
			bad "python $v sampling"
			# what the trace says of it, for the next reader of a failed run
			"$TALLY" check "$T/py$v.tally" | grep -iE "sampl|python" | sed 's/^/  /'
		}
	done
	# a CPython whose layout tally does not know: no Python samples, a note, and no harm
	old=$(ls -d "$HOME"/.pyenv/versions/3.10*/bin/python3 2>/dev/null | head -n 1)
	if [ -n "$old" ]; then
		sampled py310 TALLY_SAMPLE=python "$old" "$SRC/sampling.py" "$T/py310.json" 0.1 0.1 0.2 &&
			"$TALLY" check "$T/py310.tally" | grep -q 'python sampling: this CPython is not' &&
			! "$DUMP" --host "$T/py310.tally" | grep -q 'source=1 ' &&
			ok "CPython 3.10: refused with a note, the program unharmed" ||
			bad "CPython 3.10"
	else
		skipped "no CPython 3.10 here to show an unknown layout refused"
	fi
	# GPU idle gaps (the stand-in CUPTI's kernels) made by a sleep: the sleep's line
	sampled pygaps TALLY_SAMPLE=python "$PY" "$SRC/sampling_gaps.py" "$T/pygaps.json" 5 0.1 ||
		bad "python gaps exit"
	"$DUMP" "$T/pygaps.tally" >"$T/pygaps.records"
	"$DUMP" --host "$T/pygaps.tally" >"$T/pygaps.dump"
	$CHECK gaps "$T/pygaps.records" "$T/pygaps.dump" 80000000 5 python \
		"$SRC/sampling_gaps.py" "$(python3 -c "import json; print(json.load(open('$T/pygaps.json'))['sleep_line'])")" ||
		bad "python gaps"
	$CHECK gap-calls "$T/pygaps.records" "$T/pygaps.dump" 80000000 5 || bad "gap calls"
	# forks of a large process hold every thread (the sampler with them): counted apart from
	# stalls, so the trace stays COMPLETE (a PyTorch DataLoader's workers fork so)
	sampled forkheld TALLY_SAMPLE=python "$PY" "$SRC/forkheld.py" 2048 3 >"$T/forkheld.out" ||
		bad "forkheld exit"
	forked=$(value fork_ns "$T/forkheld.out")
	held=$(counter sample_fork_ns "$T/forkheld.tally")
	stalls=$(counter sample_stalls "$T/forkheld.tally")
	# (the program's own measure of its forks includes time a loaded machine did not run it,
	# and the machine's load may still stall the sampler once, elsewhere)
	[ "$held" -ge $((forked / 2)) ] && [ "$stalls" -le 1 ] &&
		ok "3 forks of a 2 GB process ($((forked / 1000000)) ms): sample_fork_ns $((held / 1000000)) ms, $stalls stall(s)" ||
		bad "forks of a 2 GB process ($((forked / 1000000)) ms): sample_fork_ns ${held:-?}, stalls ${stalls:-?}"
		# torn chains are counted and written without a stack (TALLY_TEST_TORN: every one)
	sampled torn TALLY_SAMPLE=python TALLY_TEST_TORN=1 "$PY" "$SRC/sampling.py" \
		"$T/torn.json" 0.2 0.2 0.3 || bad "python (torn) exit"
	"$DUMP" --host "$T/torn.tally" >"$T/torn.dump"
	n=$(grep -c '^sample .* source=1 .*flags=0x40 stack$' "$T/torn.dump")
	all=$(grep -c '^sample .* source=1 ' "$T/torn.dump")
	torn=$(counter samples_torn "$T/torn.tally")
	[ "$n" -gt 0 ] && [ "$n" = "$all" ] && [ "$torn" = "$n" ] &&
		ok "torn samples: $n written with flag TORN and no stack, samples_torn $torn" ||
		bad "torn samples: $n flagged of $all, samples_torn $torn"
else
	skipped "python sampling: no python3, or a TSan build (python3 is not built with it)"
fi

# ---- blocking calls, and CUDA joining a session that began at load ----
sampled gap TALLY_SAMPLE=native "$HOST" gap 300 >"$T/gap.out" || bad "gap exit"
"$DUMP" --host "$T/gap.tally" >"$T/gap.dump"
$CHECK osrt "$T/gap.dump" nanosleep 295000000 400000000 || bad "the gap's nanosleep"
start=$(value gap_start_realtime "$T/gap.out")
len=$(value gap_ns "$T/gap.out")
$CHECK quiet "$T/gap.dump" "$start" "$((start + len))" || bad "quiet gap"
"$TALLY" check "$T/gap.tally" | grep -q 'kernel 10' &&
	ok "CUDA joined the session that began at load: 10 kernels recorded" ||
	bad "no kernels in a session that began at load"
sampled mutex "$HOST" mutex 200 >"$T/mutex.out" || bad "mutex exit"
"$DUMP" --host "$T/mutex.tally" >"$T/mutex.dump"
w=$(value waited_ns "$T/mutex.out")
$CHECK osrt "$T/mutex.dump" pthread_mutex_lock $((w * 9 / 10)) $((w * 11 / 10 + 1000000)) \
	"$(value mutex "$T/mutex.out")" || bad "the contended mutex"
# tally's own locks, taken on the program's threads (the buffer pool, the stack table) while its
# consumer takes them too, are never recorded as the program blocking: their calls go to libc's
# pthread_mutex_lock, not to the interposer (every wait that finds a lock held is kept: 1 ns)
sampled tallylock TALLY_OSRT_THRESHOLD_NS=1 TALLY_BUFFER_SIZE=4096 TALLY_NATIVE_STACKS=1 \
	"$HOST" tallylock 20000 >"$T/tallylock.out" || bad "tallylock exit"
"$DUMP" --host "$T/tallylock.tally" >"$T/tallylock.dump"
$CHECK locks "$T/tallylock.dump" "$(value mutex "$T/tallylock.out")" ||
	bad "a lock of tally's recorded as the program's"

# ---- the program is unchanged ----
for mode in "exit 3" signals fork; do
	# gcc 12's AddressSanitizer: a fork child whose allocator lock a parent's thread held at the
	# fork waits forever at its first allocation (CI saw this test time out at 300 s there)
	if [ "$mode" = fork ] && [ "$ASAN" != 0 ]; then
		skipped "fakehost fork: an ASan build (its allocator is not fork-safe)"
		continue
	fi
	tag=$(echo "$mode" | tr ' ' _)
	"$HOST" $mode >"$T/$tag.plain" 2>&1
	want=$?
	for how in native fallback python; do
		case $how in
		native) set -- TALLY_SAMPLE=native ;;
		fallback) set -- TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=1 ;;
		python) set -- TALLY_SAMPLE=python,native ;;
		esac
		sampled "$tag-$how" "$@" "$HOST" $mode >"$T/$tag.$how" 2>&1
		got=$?
		[ "$got" = "$want" ] && cmp -s "$T/$tag.plain" "$T/$tag.$how" &&
			ok "fakehost $mode ($how): exit $got and output as untraced" ||
			bad "fakehost $mode ($how): exit $got (untraced $want), output: $(cat "$T/$tag.$how")"
	done
done
grep -q 'rt_default 3[0-9] of 3[0-9]\|usr1_calls 1' "$T/signals.plain" || bad "signals probe"
# every process of the tree is sampled, and only those that recorded something leave a trace:
# the fork child burned 300 ms of CPU (native samples); the parent only waited and the exec'd
# child exited at once (no CPU to sample, no Python)
# (and the parent's waitpid is a blocking call: a trace of its own); every trace holds records
for how in native fallback python; do
	if [ "$TSAN" != 0 ]; then # ThreadSanitizer's builds sample no fork child (session.c says why)
		skipped "fork and exec ($how): a TSan build"
		continue
	fi
	# gcc 12's AddressSanitizer does not hold its allocator's lock across fork: the child's
	# first thread (its session's start) can wait forever on it, left taken by a parent's thread
	if [ "$ASAN" != 0 ]; then
		skipped "fork and exec ($how): an ASan build (its allocator is not fork-safe)"
		continue
	fi
	burned=0 empty=
	for f in "$T"/fork-$how*.tally; do
		"$DUMP" --host "$f" >"$f.dump"
		"$TALLY" check --json "$f" | grep -q '"records_total": *0[,}]' && empty="$empty $f"
		# (sampled from a moment after the fork, on a loaded machine perhaps much later)
		$CHECK native-min "$f.dump" "$HOST" burn_cpu 50000000 >/dev/null &&
			burned=$((burned + 1))
	done
	[ "$burned" = 1 ] && [ -z "$empty" ] &&
		ok "fork and exec ($how): a trace holds the fork child's burn; no trace is empty" ||
		bad "fork and exec ($how): $burned trace(s) with the burn, empty:${empty:- none}"
done

# EINTR: a read() on a pipe, not retried, interrupted by the timer's signal?  SA_RESTART.
"$HOST" pipe 2000 >"$T/pipe.plain" || bad "pipe (untraced)"
sampled pipe TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=1 "$HOST" pipe 2000 >"$T/pipe.out" ||
	bad "pipe exit"
e0=$(value eintr "$T/pipe.plain") e1=$(value eintr "$T/pipe.out")
"$DUMP" --host "$T/pipe.tally" >"$T/pipe.dump"
s=$(grep -c '^sample ' "$T/pipe.dump")
[ "$e1" = "$e0" ] && [ "$s" -gt 0 ] &&
	ok "read() on a pipe: EINTR $e1 times with the timer's $s samples, $e0 untraced" ||
	bad "read() on a pipe: EINTR $e1 sampled ($s samples), $e0 untraced"

# ---- a full ring is counted as dropped, and the verdict says so ----
sampled drop TALLY_SAMPLE=native TALLY_SAMPLE_FALLBACK=1 TALLY_TEST_SAMPLE_RING=2 \
	"$HOST" burn 1000 >/dev/null || bad "drop exit"
taken=$(counter samples_taken "$T/drop.tally")
dropped=$(counter samples_dropped "$T/drop.tally")
written=$(counter records_cpu_sample "$T/drop.tally")
"$TALLY" check "$T/drop.tally" >"$T/drop.check"
[ "$dropped" -gt 0 ] && [ "$taken" = $((written + dropped)) ] &&
	grep -q 'samples_dropped' "$T/drop.check" && grep -q 'INCOMPLETE' "$T/drop.check" &&
	ok "a full ring: $dropped of $taken samples dropped, counted, and the verdict INCOMPLETE" ||
	bad "full ring: taken $taken written $written dropped $dropped"
finish
