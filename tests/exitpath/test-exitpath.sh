#!/bin/sh
# Every exit path of docs/collector.md ("Every exit path flushes"), on the CPU: tally record runs fakeapp, which loads libtally.so as
# the driver does, launches fake kernels through the stand-in CUPTI, and leaves by one path.
# Expected counts come from fakeapp's own "launched N" lines, never from tally.
# Usage: test-exitpath.sh TALLY FAKEAPP FAKECUPTI
set -u
TALLY=$1 APP=$2 HERE=$(cd "$(dirname "$0")" && pwd)
export TALLY_CUPTI_PATH=$3 TALLY_SLICE_MS=500 TALLY_FLUSH_TIMEOUT_MS=2000
# Under the sanitizer builds: libtally.so is preloaded ahead of the sanitizer runtime, and the
# crash tests need the signals for themselves (memory errors are still caught).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0"
# (die_after_fork=0: a fork child that starts a session starts threads, which TSan otherwise
# refuses after a multi-threaded fork.)
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:handle_segv=0:handle_sigbus=0:handle_abort=0:die_after_fork=0"
# A sanitizer build's libtally.so cannot be preloaded into an uninstrumented program (python3).
SANITIZED=$(ldd "$APP" | grep -E -c 'lib(a|t)san')
# Under TSan, threads started in a fork child ("dup thread with used id") and a signal that comes
# to a thread blocked in a restarting waitpid (tally record's, which TSan only hands over at its
# next intercepted call) are TSan's own limits: those two cases run in the other builds.
TSAN=$(ldd "$APP" | grep -c 'libtsan')
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=3000
. "$(dirname "$0")/../lib.sh"

# run NAME MODE WANT_RC [env...]: records fakeapp MODE into $T/NAME/ (set TALLY_CMD to run
# another program than fakeapp), with tally record's options $RECORD_OPTS
RECORD_OPTS=
run() {
	name=$1 mode=$2 want=$3; shift 3
	mkdir -p "$T/$name"
	env "$@" "$TALLY" record $RECORD_OPTS -o "$T/$name/%p.tally" -- "$APP" "$mode" "$N" \
		>"$T/$name/stdout" 2>"$T/$name/stderr"
	rc=$?
	[ "$rc" -eq "$want" ] && ok "$name: exit status $rc" || { bad "$name: exit status $rc, want $want"; cat "$T/$name/stderr"; }
}

# expect NAME PID-INDEX PYTHON-CONDITION: s is the section, c its final counters, v the verdict,
# L the launches fakeapp said that process made, why the reasons' texts, n the number of files
expect() {
	name=$1 idx=$2 cond=$3
	files=$(ls "$T/$name"/*.tally 2>/dev/null | sort)
	f=$(echo "$files" | sed -n "$((idx + 1))p")
	[ -n "$f" ] || { bad "$name: no trace #$idx"; return; }
	"$TALLY" check --json "$f" >"$f.json" 2>/dev/null
	python3 - "$f.json" "$T/$name/stdout" "$cond" <<'PY' && ok "$name #$idx: $3" || { bad "$name #$idx: $3"; cat "$f.json" | head -80; }
import json, os, re, sys
d = json.load(open(sys.argv[1]))
fl = d["files"][0]
s = fl["sections"][0]
c = s["ledger"]["counters"]
v = s["verdict"]
pid = s["pid"]
why = " | ".join(r["text"] for r in s["reasons"])
n = len([x for x in os.listdir(os.path.dirname(sys.argv[1])) if x.endswith(".tally")])
L = sum(int(m.group(1)) for m in re.finditer(r"launched (\d+) pid (\d+)", open(sys.argv[2]).read()) if int(m.group(2)) == pid)
k = s["records"]
ok = eval(sys.argv[3])
sys.exit(0 if ok else 1)
PY
}

run exit exit 0
expect exit 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and k["runtime"] == L and s["ledger"]["flush_path"] == "exit"'

# A session begun at load (--trace osrt records blocking calls from the first instruction) that
# CUDA joins at cuInit: its close at exit runs while CUDA and CUPTI are there, as a session CUDA
# starts does: before CUDA's exit handler (which destroys the contexts: fakecupti.c) and CUPTI's
# own teardown (the stand-in aborts on an activity call after it, as the H200's crashed).
RECORD_OPTS="--trace cuda,nvtx,osrt"
run joined-exit exit 0
expect joined-exit 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and k["runtime"] == L and s["ledger"]["flush_path"] == "exit"'
run joined-fork fork-nothing 0
expect joined-fork 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and s["ledger"]["flush_path"] == "exit" and n == 1'
run joined-sigterm sigterm 143
expect joined-sigterm 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "signal"'
RECORD_OPTS=

run _exit _exit 0
expect _exit 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "_exit"'

run sigterm sigterm 143
expect sigterm 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "signal" and c["signal"] == 15'
# CUPTI asks for a buffer during the close's forced flush and keeps it, empty (seen on an H100 at
# a SIGTERM): nothing was lost in it, so it is counted apart and the trace stays COMPLETE
run sigterm-empty sigterm 143 FAKECUPTI_EMPTY_AFTER_FLUSH=1
expect sigterm-empty 0 'v == "COMPLETE" and k["kernel"] == L and c["buffers_stranded"] == 0 and c["buffers_empty_at_close"] == 1'

run sigint sigint 130
expect sigint 0 'v == "COMPLETE" and k["kernel"] == L and c["signal"] == 2'

run sighup sighup 129
expect sighup 0 'v == "COMPLETE" and k["kernel"] == L and c["signal"] == 1'

# the program handles SIGINT and goes on: the recording must go on too, and close at exit
run handled-int handled-int 0
expect handled-int 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and s["ledger"]["flush_path"] == "exit"'

# SIGKILL: nothing runs; the periodic flush had written the first batch, the rest is lost
run sigkill sigkill 137
expect sigkill 0 'v == "INCOMPLETE" and not s["ledger"]["final"] and k["kernel"] == 3000 and L == 6000 and any(r["code"] == "not-closed" for r in s["reasons"])'

run segv segv 139
expect segv 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "crash" and c["signal"] == 11'

run abort abort 134
expect abort 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "crash" and c["signal"] == 6'

# CUPTI's forced flush hangs: the watchdog gives up after TALLY_FLUSH_TIMEOUT_MS and says so.
# (By _exit: at exit() CUDA's own handler has destroyed the context first, and CUPTI's flush
# then has handed everything over before the close.)
start=$(date +%s)
run hang _exit 0 FAKECUPTI_HANG_FLUSH=1 TALLY_FLUSH_TIMEOUT_MS=500
[ $(( $(date +%s) - start )) -lt 10 ] && ok "hang: bounded" || bad "hang: took too long"
expect hang 0 'v == "INCOMPLETE" and c["watchdog_fired"] == 1 and c["buffers_stranded"] >= 1 and k["kernel"] < L'

# fork without exec: the child starts CUDA, gets its own file, and leaves by _exit
run fork fork 0
expect fork 0 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 3000)'
expect fork 1 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 3000)'
[ "$(ls "$T/fork"/*.tally | wc -l)" -eq 2 ] && ok "fork: two files" || bad "fork: file count"

# fork after the session started (DataLoader workers, os.fork after CUDA): the child does
# nothing, exits, _exits, execs (recorded as a new program), or starts its own session.  Its
# exit status is the parent's (fakeapp passes it on); only the last two write a file.
run fork-nothing fork-nothing 0
expect fork-nothing 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and s["ledger"]["flush_path"] == "exit"'
run fork-exit fork-exit 7
run fork-_exit fork-_exit 9
for t in fork-nothing fork-exit fork-_exit; do
	[ "$(ls "$T/$t"/*.tally | wc -l)" -eq 1 ] && ! grep -q "symbol lookup" "$T/$t/stderr" \
		&& ok "$t: the child wrote no file" || bad "$t: files $(ls "$T/$t")"
done
expect fork-_exit 0 'v == "COMPLETE" and k["kernel"] == L == 6000'
run fork-exec fork-exec 0
expect fork-exec 0 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 6000)'
expect fork-exec 1 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 6000)'
# Not under the sanitizers: TSan refuses threads in a fork child, and gcc 12's ASan allocator
# takes no lock across fork, so a child forked while a thread of the parent's (the consumer)
# allocates inherits that lock held by nobody and hangs at its next allocation of the size (the
# ASan build hung here in CI; read with gdb in the same case of test-gpumetrics.sh).  glibc's
# malloc is taken across fork: the plain build runs it.
ASAN=$(ldd "$APP" | grep -c 'libasan')
if [ "$TSAN" -eq 0 ] && [ "$ASAN" -eq 0 ]; then
	run fork-session fork-session 0
	expect fork-session 0 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 6000) and n == 2'
	expect fork-session 1 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 6000)'
else
	skipped "fork-session: the sanitizers' fork limits (above)"
fi

# every exec variant closes first (glibc's execl* do not go through the exported execve)
run execl execl 0
expect execl 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and s["ledger"]["flush_path"] == "exec" and n == 1'
run execlp execlp 0 PATH="$(dirname "$APP"):$PATH"
expect execlp 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and s["ledger"]["flush_path"] == "exec" and n == 1'
run quick_exit quick_exit 3
expect quick_exit 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and s["ledger"]["flush_path"] == "quick_exit"'
# an image that execs itself keeps its pid: two files, neither overwriting the other, also
# with --force
run exec-self exec-self 0
expect exec-self 1 'v == "COMPLETE" and k["kernel"] == 3000 and s["ledger"]["flush_path"] == "exec" and n == 2'
expect exec-self 0 'v == "COMPLETE" and k["kernel"] == 1500 and s["ledger"]["flush_path"] == "exit" and sys.argv[1].endswith("-exec1.tally.json")'
mkdir -p "$T/exec-self-f"
"$TALLY" record -f -o "$T/exec-self-f/fixed.tally" -- "$APP" exec-self "$N" >/dev/null 2>&1
"$TALLY" check -q "$T/exec-self-f/fixed.tally" "$T/exec-self-f/fixed-exec1.tally" >/dev/null \
	&& ok "exec-self --force: two complete files" || bad "exec-self --force"

# ---- signals from outside, as schedulers and terminals send them --------------------------
# start NAME MODE [env...]: tally record runs fakeapp MODE in a session (and process group) of
# its own, as a job step's, with SIGINT not ignored (foreground.py); returns once the program
# says it is ready.  Sets bg, app, pgid.
start() {
	name=$1 mode=$2; shift 2
	mkdir -p "$T/$name"
	env "$@" FAKEAPP_READY="$T/$name/ready" FAKEAPP_GO="$T/$name/go" \
		setsid -w python3 "$HERE/foreground.py" "$TALLY" record -o "$T/$name/%p.tally" -- \
		${TALLY_CMD:-"$APP" "$mode"} "$N" \
		>"$T/$name/stdout" 2>"$T/$name/stderr" &
	bg=$!
	ready "$T/$name/ready"
	target "$T/$name/ready"
}
# stat_field PID N: field N after the command name in /proc/PID/stat (2 ppid, 3 process group)
stat_field() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$2"; }
# target READY: the program's pid and process group, or a failure (and no signal sent anywhere:
# an empty pid must never become kill -SIG -1)
target() {
	app=$(cat "$1" 2>/dev/null) pgid=
	[ -n "$app" ] && [ "$app" -gt 1 ] && pgid=$(stat_field "$app" 3)
	[ -n "$pgid" ] && [ "$pgid" -gt 1 ] || { bad "$1: no program to signal"; app=0 pgid=0; }
}
# Poll for a file: under load (2 shared cores) the program may take seconds to get there.
ready() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$1" ] || bad "$1: the program never got ready"
}
# await_exit NAME WANT_RC: wait for tally record (a minute at most: then its group is killed and
# the test fails) and check its exit status
await_exit() {
	i=0
	while kill -0 $bg 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	kill -0 $bg 2>/dev/null && { bad "$1: still running after a minute"; kill -KILL "-$bg" $bg; }
	wait $bg
	rc=$?
	[ "$rc" -eq "$2" ] && ok "$1: exit status $rc" || { bad "$1: exit status $rc, want $2"; cat "$T/$1/stderr"; }
}
# untraced NAME MODE ACTION...: the same program without tally, the same signals; its status
# must be what tally record returned
untraced() {
	name=$1 mode=$2; shift 2
	mkdir -p "$T/$name-u"
	FAKEAPP_NO_CUDA=1 FAKEAPP_READY="$T/$name-u/ready" FAKEAPP_GO="$T/$name-u/go" \
		setsid -w python3 "$HERE/foreground.py" ${TALLY_CMD:-"$APP" "$mode"} "$N" >"$T/$name-u/stdout" 2>&1 &
	bg=$!
	ready "$T/$name-u/ready"
	target "$T/$name-u/ready"
	"$@"
	wait $bg
	urc=$?
	[ "$urc" -eq "$rc" ] && ok "$name: untraced exit status is the same ($urc)" || bad "$name: untraced exit status $urc, traced $rc"
}
to_group() { [ "$pgid" -gt 1 ] && kill -"$1" "-$pgid"; } # kill -- -PGID, as dash spells it
# handled PID SIG: wait until signal number SIG is no longer pending for PID (its handler ran),
# at most 30 s; false if it still is.  The event, not a guess at how long it takes.
handled() {
	i=0
	while [ $i -lt 300 ]; do
		pending=$(sed -n 's/^\(SigPnd\|ShdPnd\):[[:space:]]*//p' "/proc/$1/status" 2>/dev/null |
			while read -r mask; do echo $(((0x$mask >> ($2 - 1)) & 1)); done | grep -c 1)
		[ "$pending" = 0 ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
to_app() { [ "$app" -gt 1 ] && kill -"$1" "$app"; }
to_tally() {
	tp=$(stat_field "$app" 2)
	[ "$app" -gt 1 ] && [ -n "$tp" ] && [ "$tp" -gt 1 ] && kill -"$1" "$tp"
}

# SIGTERM and SIGINT to the whole process group (Slurm's scancel and time limit, a terminal's ^C),
# to tally record alone (Slurm's proctrack/cgroup: tally forwards it), to the program alone;
# the sender is this shell every time (tally's forwarded copy names whom it forwards)
for sig in TERM INT; do
	want=143
	[ "$sig" = INT ] && want=130
	for to in to_group to_tally to_app; do
		[ "$TSAN" -ne 0 ] && [ $to = to_tally ] && { skipped "$sig-to_tally under TSan"; continue; }
		start "$sig-$to" wait
		$to "$sig"
		await_exit "$sig-$to" "$want"
		expect "$sig-$to" 0 "v == 'COMPLETE' and k['kernel'] == L == 3000 and s['ledger']['flush_path'] == 'signal' and c['signal'] == c['signal_received'] == $want - 128 and c['signals_received'] >= 1 and c['signal_sender'] == $$"
		[ $to = to_group ] && untraced "$sig-$to" wait to_group "$sig"
	done
done

# in_close NAME SIGNAL: wait until the trace shows the signal (the close has begun; with
# FAKECUPTI_SLOW_FLUSH_MS it lasts that long), so what comes next comes during the close
in_close() {
	i=0
	until "$TALLY" check --json "$T/$1/$app.tally" 2>/dev/null | grep -q "\"signal_received\": $2" || [ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
# the same signal again while the close runs: Slurm's TERM, CONT, TERM to the program, and ^C
# twice to the group (with tally record's forwarding, more); none may cut the close short
start TERM-twice wait FAKECUPTI_SLOW_FLUSH_MS=4000 TALLY_FLUSH_TIMEOUT_MS=30000
to_app TERM
in_close TERM-twice 15
to_app CONT
to_app TERM
await_exit TERM-twice 143
expect TERM-twice 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and c["signal_received"] == 15 and c["signals_received"] == 2 and c["signal_to_close_ns"] >= 4e9'
start INT-twice wait FAKECUPTI_SLOW_FLUSH_MS=4000 TALLY_FLUSH_TIMEOUT_MS=30000
to_group INT
in_close INT-twice 2
to_group INT
await_exit INT-twice 130
expect INT-twice 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and c["signal_received"] == 2 and c["signals_received"] >= 2'

# every other signal whose default action ends the process, and a sent crash signal: the
# program ends as it would untraced (138, 139: killed by the signal), with the trace closed
start usr1 wait
to_app USR1
await_exit usr1 138
expect usr1 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "signal" and c["signal"] == 10'
untraced usr1 wait to_app USR1
start segv-sent wait
to_app SEGV
await_exit segv-sent 139
expect segv-sent 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "crash" and c["signal"] == 11'
untraced segv-sent wait to_app SEGV

# the program's own SIGINT handler, installed after CUDA started: it runs, the program goes on
start own-handler own-handler
to_app INT
await_exit own-handler 0
expect own-handler 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and s["ledger"]["flush_path"] == "exit"'

# handles SIGINT, then resets it to SIG_DFL and kills itself (Python's way): killed by SIGINT
start dfl-raise dfl-raise
to_app INT
await_exit dfl-raise 130
expect dfl-raise 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and s["ledger"]["flush_path"] == "signal" and c["signal"] == 2'
untraced dfl-raise dfl-raise to_app INT

# a real Python program: ^C to the group -> KeyboardInterrupt -> exit by SIGINT (130)
if [ "$SANITIZED" -eq 0 ]; then
	TALLY_CMD="python3 $HERE/pyapp.py" start python python
	to_group INT
	await_exit python 130
	expect python 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and s["ledger"]["flush_path"] == "signal" and c["signal"] == 2'
	TALLY_CMD="python3 $HERE/pyapp.py" untraced python python to_group INT
else
	skipped "python: a sanitizer build cannot be preloaded into python3"
fi

# ignores SIGTERM: must not die of one (nor of tally's forwarded copy), and ends normally.  The
# program is told to go on only once tally record has handled its SIGTERM (so its copy has been
# sent): the program's exit status then says whether either one killed it.
start ignore-term ignore-term
to_group TERM
if handled "$(stat_field "$app" 2)" 15; then
	state=$(stat_field "$app" 1)
	[ -n "$state" ] && [ "$state" != Z ] && ok "ignore-term: alive after SIGTERM and its copy" ||
		bad "ignore-term: died of SIGTERM (state '$state')"
else
	bad "ignore-term: tally record never handled the SIGTERM"
fi
: >"$T/ignore-term/go"
await_exit ignore-term 0
expect ignore-term 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and s["ledger"]["flush_path"] == "exit" and c["signals_received"] == 0'

# ---- tally's forwarded copy never adds a delivery ------------------------------------------
# A signal to the whole group (kill -- -PGID; Slurm's proctrack/linuxproc signals every process)
# reaches the program and tally record, which forwards a copy: the program's handlers must run
# exactly as often as untraced (a second KeyboardInterrupt would land in Python's except block).
# Signalled alone (proctrack/cgroup), tally record's copy is the only one, and is delivered.
# slurm_like TO: TERM, CONT, TERM as Slurm sends them, the second TERM late enough (0.5 s) that
# untraced it is not merged with the first (a pending signal is): the program sees two.
slurm_like() { $1 TERM && sleep 0.5 && $1 CONT && $1 TERM; }
# stops NAME WANT KERNELS ACTION...: record (TALLY_CMD or fakeapp count-stops), do ACTION; the
# program must print WANT, end normally with a complete trace, and say the same untraced
stops() {
	name=$1 want=$2 kernels=$3; shift 3
	start "$name" count-stops
	"$@"
	await_exit "$name" 0
	got=$(grep '^stopped ' "$T/$name/stdout")
	[ "$got" = "$want" ] && ok "$name: the program got $want" || bad "$name: the program got '$got', want '$want'"
	expect "$name" 0 "v == 'COMPLETE' and k['kernel'] == L == $kernels and s['ledger']['flush_path'] == 'exit'"
	# untraced there is no tally record: what it was sent goes to the program itself
	for a; do shift; [ "$a" = to_tally ] && a=to_app; set -- "$@" "$a"; done
	untraced "$name" count-stops "$@"
	got=$(grep '^stopped ' "$T/$name-u/stdout")
	[ "$got" = "$want" ] && ok "$name: untraced the same" || bad "$name: untraced '$got', want '$want'"
}
stops count-INT-group "stopped INT=1 TERM=0 HUP=0" 6000 to_group INT
stops count-TERM-group "stopped INT=0 TERM=1 HUP=0" 6000 to_group TERM
stops count-HUP-group "stopped INT=0 TERM=0 HUP=1" 6000 to_group HUP
stops count-TERM-slurm "stopped INT=0 TERM=2 HUP=0" 6000 slurm_like to_group
if [ "$TSAN" -eq 0 ]; then # tally record alone (see "to_tally" above for TSan)
	stops count-INT-tally "stopped INT=1 TERM=0 HUP=0" 6000 to_tally INT
	stops count-TERM-cgroup "stopped INT=0 TERM=2 HUP=0" 6000 slurm_like to_tally
fi
if [ "$SANITIZED" -eq 0 ]; then
	TALLY_CMD="python3 $HERE/pystop.py" stops py-INT-group "stopped INT=1 TERM=0" 3000 to_group INT
	TALLY_CMD="python3 $HERE/pystop.py" stops py-TERM-group "stopped INT=0 TERM=1" 3000 to_group TERM
	TALLY_CMD="python3 $HERE/pystop.py" stops py-TERM-slurm "stopped INT=0 TERM=2" 3000 slurm_like to_group
	[ "$TSAN" -eq 0 ] && TALLY_CMD="python3 $HERE/pystop.py" stops py-INT-tally "stopped INT=1 TERM=0" 3000 to_tally INT
fi

# SIGKILL in the middle of the close (CUPTI's flush hangs, the grace runs out): INCOMPLETE,
# and the reader says which signal came and that the close did not finish
start kill-in-close wait FAKECUPTI_HANG_FLUSH=1 TALLY_FLUSH_TIMEOUT_MS=120000
to_app TERM
in_close kill-in-close 15
to_app KILL
await_exit kill-in-close 137
expect kill-in-close 0 'v == "INCOMPLETE" and not s["ledger"]["final"] and c["signal_received"] == 15 and "SIGTERM at +" in why and "did not finish" in why and "SIGKILL, OOM" not in why'

# a full disk: what fits is readable, the rest is counted as lost
run fulldisk fulldisk 0
f=$(ls "$T/fulldisk"/*.tally | head -1)
[ "$(stat -c %s "$f")" -le 6144 ] && ok "fulldisk: file within the limit" || bad "fulldisk: size"
"$TALLY" check "$f" >/dev/null 2>&1; [ $? -eq 1 ] && ok "fulldisk: readable, INCOMPLETE" || bad "fulldisk: check exit"

# NVTX through the injection protocol
run nvtx nvtx 0
expect nvtx 0 'v == "COMPLETE" and k["nvtx_range"] == 2 * 3000 + 1 and k["nvtx_mark"] == 1'

# another CUPTI client: recorded anyway, and said
run other exit 0 FAKECUPTI_OTHER_SUBSCRIBER=1
expect other 0 'k["kernel"] == L and any(n["code"] == "other-subscriber" for n in s["notes"])'

# CUPTI already held by another client (cuda-gdb's debugger back-end, in the program it runs):
# nothing of CUDA can be recorded; the program runs as untraced and the trace says why
run debugger exit 0 FAKECUPTI_REGISTER_TAKEN=1
expect debugger 0 'k["kernel"] == 0 and any(n["code"] == "cupti-setup" and "another CUPTI client holds this process" in n["text"] and "cuda-gdb" in n["text"] for n in s["notes"])'

# another client trying to take CUPTI's buffers away is refused, and the trace says so
run other-client other-client 0
expect other-client 0 'v == "COMPLETE" and k["kernel"] == L == 6000 and any(n["code"] == "other-client" for n in s["notes"]) and "register returned 39" in open(sys.argv[2]).read()'

# the collection window: --duration closes the trace (flush path "stop"), --delay opens it late,
# --devices keeps other devices' records out (counted, not lost)
mkdir -p "$T/duration" "$T/delay" "$T/devices"
"$TALLY" record --duration 0.5 -o "$T/duration/%p.tally" -- "$APP" paced "$N" >"$T/duration/stdout" 2>&1
expect duration 0 'v == "COMPLETE" and s["ledger"]["flush_path"] == "stop" and 0 < k["kernel"] < L and L == 6000'
"$TALLY" record --delay 0.5 -o "$T/delay/%p.tally" -- "$APP" paced "$N" >"$T/delay/stdout" 2>&1
expect delay 0 'v == "COMPLETE" and 0 < k["kernel"] < L - 3000 and any(n["code"] == "window-open" for n in s["notes"])'
"$TALLY" record --devices 1 -o "$T/devices/%p.tally" -- "$APP" exit "$N" >"$T/devices/stdout" 2>&1
expect devices 0 'v == "COMPLETE" and k["kernel"] == 0 and c["outside_window"] == L == 3000 and c["unmatched_launches"] == 0'

# tally env: the same variables, in each syntax, parseable
"$TALLY" env -o "$T/env-%p" -t cuda --format json >"$T/env.json" &&
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['CUDA_INJECTION64_PATH'].endswith('libtally.so') and d['TALLY_OUTPUT'].endswith('env-%p') and d['TALLY_TRACE']=='cuda'" "$T/env.json" \
	&& ok "env: json" || bad "env: json"
( eval "$("$TALLY" env -o "$T/it's %p")" && [ "$TALLY_OUTPUT" = "$PWD/$T/it's %p" ] || [ "$TALLY_OUTPUT" = "$T/it's %p" ] ) \
	&& ok "env: sh quoting" || bad "env: sh quoting"
"$TALLY" env --format k8s | grep -q "  - name: CUDA_INJECTION64_PATH" && ok "env: k8s" || bad "env: k8s"
"$TALLY" env --format docker | grep -q '^ENV LD_PRELOAD=' && ok "env: docker" || bad "env: docker"
"$TALLY" env --format yaml >/dev/null 2>"$T/envbad"; [ $? -eq 2 ] && grep -q yaml "$T/envbad" && ok "env: bad format named" || bad "env: bad format"

# a rank that is not asked for runs untouched: no file
mkdir -p "$T/ranks"
RANK=3 FAKEAPP_UNTRACED_OK=1 "$TALLY" record --ranks 0,1 -o "$T/ranks/%p.tally" -- "$APP" exit 10 >/dev/null 2>"$T/ranks/stderr"
[ $? -eq 0 ] && ! ls "$T/ranks"/*.tally >/dev/null 2>&1 && grep -q "not recorded" "$T/ranks/stderr" \
	&& ok "ranks: rank 3 not recorded" || { bad "ranks"; cat "$T/ranks/stderr"; }

# one tally record, processes whose names differ (%q{RANK}): each takes its exact name; one that
# makes a name already taken adds its pid (-PID), whatever the order the processes came in
# (through sh: a sanitizer build's libtally.so cannot be preloaded into it)
if [ "$SANITIZED" -eq 0 ]; then
	mkdir -p "$T/qname"
	RANK=x "$TALLY" record -o "$T/qname/r%q{RANK}.tally" -- sh -c \
		'RANK=0 "$0" exit 10 & RANK=1 "$0" exit 10 & wait; RANK=0 "$0" exit 10' "$APP" \
		>"$T/qname/stdout" 2>"$T/qname/stderr"
	last=$(sed -n 's/^launched 10 pid \([0-9]*\)$/\1/p' "$T/qname/stdout" | tail -1)
	got=$(cd "$T/qname" && ls *.tally 2>/dev/null | sort | tr '\n' ' ')
	want=$(printf 'r0-%s.tally\nr0.tally\nr1.tally\n' "$last" | sort | tr '\n' ' ')
	[ -n "$last" ] && [ "$got" = "$want" ] && ok "names: -PID only when the name is taken ($got)" \
		|| { bad "names: got '$got', want '$want'"; cat "$T/qname/stderr"; }
else
	skipped "names: a sanitizer build cannot be preloaded into sh"
fi

# no overwrite without --force
mkdir -p "$T/force" && : >"$T/force/fixed.tally"
"$TALLY" record -o "$T/force/fixed.tally" -- "$APP" exit 10 >/dev/null 2>"$T/force/stderr"
[ $? -eq 2 ] && grep -q -- "--force" "$T/force/stderr" && ok "refuses to overwrite" || bad "overwrite"
"$TALLY" record -f -o "$T/force/fixed.tally" -- "$APP" exit 10 >/dev/null 2>&1
"$TALLY" check -q "$T/force/fixed.tally" >/dev/null && ok "--force overwrites" || bad "--force"

# the program cannot be found: a clear error, status 127 as a shell gives
"$TALLY" record -o "$T/%p.tally" -- /nonexistent/prog >/dev/null 2>"$T/nf"; rc=$?
[ $rc -eq 127 ] && grep -q "cannot run" "$T/nf" && ok "missing program: 127" || bad "missing program ($rc)"
finish
