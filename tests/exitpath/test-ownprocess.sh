#!/bin/sh
# What programs legally do to their own process (issue 35), on the CPU with the stand-in CUPTI:
# tally record runs fakehostile (or bash, or python3), which prints its own account of what it did
# ("launched N", the size of a file of its own); every expected value comes from there, never
# from tally.
#   descriptors  the program closes every descriptor it did not open (close_range, a loop over
#                3..1023 at RLIMIT_NOFILE 1024, its own file dup2'ed over every open number, bash's
#                exec 3>FILE), under each recorder that keeps descriptors (the trace, perf events,
#                /proc files, GPU-metrics lock files): its own file holds exactly its 11 bytes, every
#                launch is recorded and the trace says what happened; where the trace cannot be
#                opened again (renamed away), tally record says so
#   small stacks threads at PTHREAD_STACK_MIN launch and burn CPU under every stack option
#                (--native-stacks, --python-stacks, --sample native by perf events and by the
#                timer fallback, --sample python): the program runs as untraced, every launch is
#                recorded, and tally takes at most 8 KiB of such a thread's stack (the kernel's
#                signal frame included), measured by the program (paint and look); libtally.so's
#                thread-local storage, which a preloaded library takes from every thread's
#                stack, stays under 512 bytes
#   failed exec  an exec that fails (no such file, ENOEXEC, EACCES; every variant tally
#                interposes, and posix_spawn, which is no exec of this process) returns to the
#                program, which launches as many again: every launch is recorded, the trace says
#                the exec failed, and a trace whose program is killed after it reads not closed
#                (its last ledger decides, not the final one written before the exec)
# Usage: test-ownprocess.sh TALLY FAKEHOSTILE FAKECUPTI LIBTALLY
set -u
TALLY=$1 APP=$2 LIB=$4
export TALLY_CUPTI_PATH=$3 TALLY_FLUSH_TIMEOUT_MS=2000
. "$(dirname "$0")/../lib.sh"
# As test-exitpath.sh: libtally.so preloaded ahead of a sanitizer's runtime; uninstrumented
# programs (bash, python3) only outside the sanitizer builds.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:die_after_fork=0"
SANITIZED=$(ldd "$APP" | grep -E -c 'lib(a|t)san')
LOCK=.tally-gpu-metrics-GPU-face0d0e-0102-0304-0506-0708090a0b00.lock # the stand-in's GPU
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# rec NAME [record options] -- PROGRAM ARGS: tally record into $T/NAME.tally; the program's
# stdout in $T/NAME.out, tally's stderr in $T/NAME.err, the exit status in $T/NAME.rc
rec() {
	_rec=$1 _opts=
	shift
	while [ "$1" != -- ]; do
		_opts="$_opts $1"
		shift
	done
	shift
	mkdir -p "$(dirname "$T/$_rec")"
	"$TALLY" record $_opts --flush-interval 200 -o "$T/$_rec.tally" -- "$@" \
		>"$T/$_rec.out" 2>"$T/$_rec.err"
	echo $? >"$T/$_rec.rc"
}

# expect NAME CONDITION: a Python condition over the trace of NAME (tally check --json) and
# what the program printed.  v verdict, c final counters, k records by kind, reasons (the loss
# counters named), notes (the codes of the notes), L launches the program made, own the size
# of its own file, used the most stack its small threads used, rc tally record's exit status,
# err tally record's stderr.
expect() {
	"$TALLY" check --json "$T/$1.tally" >"$T/$1.json" 2>/dev/null
	python3 - "$T/$1" "$2" <<'PY' && ok "$1: $2" || { bad "$1: $2"; tail -5 "$T/$1.err"; }
import json, re, sys
base, cond = sys.argv[1], sys.argv[2]
out = open(base + ".out").read()
err = open(base + ".err").read()
rc = int(open(base + ".rc").read())
try:
    s = json.load(open(base + ".json"))["files"][0]["sections"][0]
    c, v, k = s["ledger"]["counters"], s["verdict"], s["records"]
    reasons = [r.get("counter") or r["code"] for r in s["reasons"]]
    notes = [n["code"] for n in s.get("notes", [])]
except Exception as e:
    c, v, k, reasons, notes = {}, "UNREADABLE", {}, [], []
L = sum(int(m.group(1)) for m in re.finditer(r"^launched (\d+) pid", out, re.M))
m = re.search(r"^own_file_bytes (-?\d+)", out, re.M)
own = int(m.group(1)) if m else None
m = re.search(r"^stack_used (\d+)", out, re.M)
used = int(m.group(1)) if m else None
ok = eval(cond)
if not ok:
    print("  verdict %s, reasons %s, notes %s, L %d, kernels %s, own %s, stack used %s, rc %d" %
          (v, reasons, notes, L, k.get("kernel"), own, used, rc))
sys.exit(0 if ok else 1)
PY
}

# ---- descriptors -------------------------------------------------------------------------------
# Whole: the program's file, every launch, and a trace that says it was reopened when it was.
WHOLE='rc == 0 and own == 11 and L == k.get("kernel") == 10100'
# perf events closed with the rest: their threads went unsampled until the sampler's next look,
# a stall whose cause the notes give
PERF_STALL='(v == "COMPLETE" or (reasons == ["sample_stalls"] and "perf-descriptors" in notes))'
for how in closerange takeover; do
	for opts in "" "--sample native" "--trace cuda,osrt"; do
		name=$how-$(echo "$opts" | tr -dc 'a-z')
		FAKEHOSTILE_FILE=$T/$name.own rec "$name" $opts -- "$APP" fds $how 100
		expect "$name" "$WHOLE and $PERF_STALL and c['fds_reopened'] >= 1 and 'trace-reopened' in notes"
	done
	# GPU metrics: the descriptors go once the sampler holds the device (its lock file, in a
	# directory of the case's own), and the lock goes with them: the device is claimed again
	FAKEHOSTILE_FILE=$T/$how-metrics.own FAKEHOSTILE_WAIT_CLAIM=$T/$how-metrics/$LOCK \
		rec "$how-metrics/t" --gpu-metrics --gpu-metrics-frequency 500 -- "$APP" fds $how 100
	expect "$how-metrics/t" "$WHOLE and c['fds_reopened'] >= 2 and 'trace-reopened' in notes and 'gpu-metrics-lock' in notes"
done
# A daemon's loop over 3..1023: tally's descriptors sit above it where the limit allows ...
if [ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1100 ]; then
	FAKEHOSTILE_FILE=$T/loop-high.own rec loop-high -- "$APP" fds loop 100
	expect loop-high "$WHOLE and v == 'COMPLETE' and c.get('fds_reopened', 0) == 0"
else
	skipped "a loop over 3..1023 under RLIMIT_NOFILE $(ulimit -n): no room above it"
fi
# ... and where it does not (1024: tally's are just below), the trace is opened again
(ulimit -Sn 1024 && FAKEHOSTILE_FILE=$T/loop-1024.own rec loop-1024 -- "$APP" fds loop 100)
expect loop-1024 "$WHOLE and v == 'COMPLETE' and c['fds_reopened'] == 1"
# The program renames the trace away after closing its descriptor: nothing can be written, never
# into the program's file; tally record says why (the trace itself cannot)
FAKEHOSTILE_FILE=$T/moved.own FAKEHOSTILE_RENAME=$T/moved.tally rec moved -- "$APP" fds closerange 100
expect moved "rc == 0 and own == 11 and 'cannot be opened again' in err and 'removed, or renamed' in err"
if [ "$SANITIZED" -eq 0 ]; then
	# bash's exec 3>FILE while tally samples it from its first instruction
	rec bash --sample native -- bash -c "exec 3>'$T/bash.txt'; printf 'hello world' >&3; i=0; while [ \$i -lt 100000 ]; do i=\$((i+1)); done; exec 3>&-"
	[ "$(cat "$T/bash.txt")" = "hello world" ] && ok "bash exec 3>FILE: the file holds its 11 bytes" ||
		bad "bash exec 3>FILE: $(wc -c <"$T/bash.txt") bytes"
	expect bash "rc == 0 and v == 'COMPLETE' and k.get('cpu_sample', 0) > 0"
	# Python closes every descriptor while tally reads its threads' /proc files (the
	# interpreter itself, not a wrapper that execs it: pyenv's shim is a shell script)
	PY=$(python3 -c 'import sys; print(sys.executable)')
	rec python --sample python -- "$PY" -c "
import os, time
os.closerange(3, 65536)
with open('$T/python.own', 'w') as f:
    f.write('hello world')
    end = time.time() + 0.5
    while time.time() < end:
        pass
print('own_file_bytes', os.path.getsize('$T/python.own'))"
	expect python "rc == 0 and own == 11 and v == 'COMPLETE' and k.get('cpu_sample', 0) > 0"
else
	skipped "bash and python3 under a sanitizer build's libtally.so"
fi

# ---- small stacks ------------------------------------------------------------------------------
FAKEHOSTILE_NO_CUDA=1 "$APP" stacks 8 50 >"$T/stacks-untraced.out" 2>&1 &&
	ok "8 threads at PTHREAD_STACK_MIN untraced" || bad "untraced small stacks: $(cat "$T/stacks-untraced.out")"
STACKS='rc == 0 and L == k.get("kernel") == 400 and v == "COMPLETE" and used <= 8192'
for opts in "" --native-stacks --python-stacks "--sample native" "--sample python" \
	"--sample python,native --native-stacks"; do
	name=stacks-$(echo "$opts" | tr -dc 'a-z')
	rec "$name" $opts -- "$APP" stacks 8 50
	expect "$name" "$STACKS"
	case $opts in
	*"sample native"* | *"python,native"*)
		# the timer fallback: its handler runs on the sampled thread's stack
		TALLY_SAMPLE_FALLBACK=1 rec "$name-fallback" $opts -- "$APP" stacks 8 50
		expect "$name-fallback" "$STACKS and k.get('cpu_sample', 0) > 0" ;;
	esac
done
tls=$(readelf -lW "$LIB" 2>/dev/null | awk '$1 == "TLS" { print $6 }')
[ -n "$tls" ] && [ $((tls)) -lt 512 ] && ok "libtally.so's thread-local storage: $((tls)) bytes" ||
	bad "libtally.so's thread-local storage: ${tls:-unknown} bytes"

# ---- an exec that fails ------------------------------------------------------------------------
mkdir -p "$T/x"
printf 'not a program\001\002' >"$T/x/noexec" && chmod 755 "$T/x/noexec"
printf 'x\n' >"$T/x/noperm" && chmod 644 "$T/x/noperm"
for how in execve execv execvp execvpe execl execle execlp fexecve execveat posix_spawn; do
	for target in missing noexec noperm; do
		case $how:$target in
		execvp:noexec | execvpe:noexec | execlp:noexec) continue ;; # these run /bin/sh on it
		fexecve:missing) continue ;;				     # no descriptor to give it
		esac
		FAKEHOSTILE_DIR=$T/x rec "exec-$how-$target" -- "$APP" exec $how $target 100
		if [ $how = posix_spawn ]; then
			expect "exec-$how-$target" "rc == 0 and L == k.get('kernel') == 200 and v == 'COMPLETE' and 'exec-failed' not in notes"
		else
			expect "exec-$how-$target" "rc == 0 and L == k.get('kernel') == 200 and v == 'COMPLETE' and 'exec-failed' in notes and c.get('flush_path') == 1"
		fi
	done
done
# host sampling starts again after it; GPU metrics end there, and the verdict says so
FAKEHOSTILE_DIR=$T/x rec exec-sampled --sample native -- "$APP" exec execv missing 100
expect exec-sampled "rc == 0 and L == k.get('kernel') == 200 and v == 'COMPLETE' and 'exec-failed' in notes"
FAKEHOSTILE_DIR=$T/x rec exec-metrics --gpu-metrics --gpu-metrics-frequency 500 -- "$APP" exec execv missing 100
expect exec-metrics "rc == 0 and L == k.get('kernel') == 200 and 'metric_sampler_failures' in reasons and all(r.startswith('metric') for r in reasons) and 'exec-failed' in notes"
# killed after a failed exec: the final ledger of the exec is not the last word
FAKEHOSTILE_DIR=$T/x FAKEHOSTILE_KILL=1 rec exec-killed -- "$APP" exec execv missing 100
expect exec-killed "rc == 137 and L == k.get('kernel') == 200 and v == 'INCOMPLETE' and 'not-closed' in reasons"

finish
