#!/bin/sh
# Every exit path of design §3, on the CPU: tally record runs fakeapp, which loads libtally.so as
# the driver does, launches fake kernels through the stand-in CUPTI, and leaves by one path.
# Expected counts come from fakeapp's own "launched N" lines, never from tally.
# Usage: test-exitpath.sh TALLY FAKEAPP FAKECUPTI
set -u
TALLY=$1 APP=$2
export TALLY_CUPTI_PATH=$3 TALLY_SLICE_MS=500 TALLY_FLUSH_TIMEOUT_MS=2000
# Under the sanitizer builds: libtally.so is preloaded ahead of the sanitizer runtime, and the
# crash tests need the signals for themselves (memory errors are still caught).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:handle_segv=0:handle_sigbus=0:handle_abort=0:detect_leaks=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:handle_segv=0:handle_sigbus=0:handle_abort=0"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=3000
fail=0
ok() { printf 'ok   %s\n' "$1"; }
bad() { printf 'FAIL %s\n' "$1"; fail=1; }

# run NAME MODE WANT_RC [env...]: records fakeapp MODE into $T/NAME/
run() {
	name=$1 mode=$2 want=$3; shift 3
	mkdir -p "$T/$name"
	env "$@" "$TALLY" record -o "$T/$name/%p.tally" -- "$APP" "$mode" "$N" \
		>"$T/$name/stdout" 2>"$T/$name/stderr"
	rc=$?
	[ "$rc" -eq "$want" ] && ok "$name: exit status $rc" || { bad "$name: exit status $rc, want $want"; cat "$T/$name/stderr"; }
}

# expect NAME PID-INDEX PYTHON-CONDITION: s is the section, c its final counters, v the verdict,
# L the launches fakeapp said that process made
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
L = sum(int(m.group(1)) for m in re.finditer(r"launched (\d+) pid (\d+)", open(sys.argv[2]).read()) if int(m.group(2)) == pid)
k = s["records"]
ok = eval(sys.argv[3])
sys.exit(0 if ok else 1)
PY
}

run exit exit 0
expect exit 0 'v == "COMPLETE" and k["kernel"] == L == 3000 and k["runtime"] == L and s["ledger"]["flush_path"] == "exit"'

run _exit _exit 0
expect _exit 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "_exit"'

run sigterm sigterm 143
expect sigterm 0 'v == "COMPLETE" and k["kernel"] == L and s["ledger"]["flush_path"] == "signal" and c["signal"] == 15'

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

# CUPTI's forced flush hangs: the watchdog gives up after TALLY_FLUSH_TIMEOUT_MS and says so
start=$(date +%s)
run hang hang 0 FAKECUPTI_HANG_FLUSH=1 TALLY_FLUSH_TIMEOUT_MS=500
[ $(( $(date +%s) - start )) -lt 10 ] && ok "hang: bounded" || bad "hang: took too long"
expect hang 0 'v == "INCOMPLETE" and c["watchdog_fired"] == 1 and c["buffers_stranded"] >= 1 and k["kernel"] < L'

# fork without exec: the child starts CUDA, gets its own file, and leaves by _exit
run fork fork 0
expect fork 0 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 3000)'
expect fork 1 'v == "COMPLETE" and k["kernel"] == L and L in (1500, 3000)'
[ "$(ls "$T/fork"/*.tally | wc -l)" -eq 2 ] && ok "fork: two files" || bad "fork: file count"

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

# no overwrite without --force
mkdir -p "$T/force" && : >"$T/force/fixed.tally"
"$TALLY" record -o "$T/force/fixed.tally" -- "$APP" exit 10 >/dev/null 2>"$T/force/stderr"
[ $? -eq 2 ] && grep -q -- "--force" "$T/force/stderr" && ok "refuses to overwrite" || bad "overwrite"
"$TALLY" record -f -o "$T/force/fixed.tally" -- "$APP" exit 10 >/dev/null 2>&1
"$TALLY" check -q "$T/force/fixed.tally" >/dev/null && ok "--force overwrites" || bad "--force"

# the program cannot be found: a clear error, status 127 as a shell gives
"$TALLY" record -o "$T/%p.tally" -- /nonexistent/prog >/dev/null 2>"$T/nf"; rc=$?
[ $rc -eq 127 ] && grep -q "cannot run" "$T/nf" && ok "missing program: 127" || bad "missing program ($rc)"
exit $fail
