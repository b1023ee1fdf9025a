#!/bin/sh
# The trace knows the driver: a program that loads libcuda.so.1 with RTLD_LOCAL (as libcudart,
# static or shared, and PyTorch do), so that cuDriverGetVersion is not in the global scope, still
# gets the driver's version in its trace: 13000, what the stand-in libcuda.so.1
# (tests/support/fake-cuda.c) answers.  Without a driver in the process the version is unknown,
# and tally check says "unknown", not 0.
# A session begun at load learns CUDA's versions when CUDA joins: its note says them, and the
# readers take them from it (the CUPTI API version the stand-in gives: its headers' own).
# Usage: test-driver.sh TALLY FAKEAPP FAKECUPTI FAKECUDA_DIR CUDA_INCLUDE_DIRS
set -u
. "$(dirname "$0")/../lib.sh"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
TALLY=$1 APP=$2 CUDA_DIR=$4 CUDA_INCLUDE=$5
export TALLY_CUPTI_PATH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# version NAME: the driver version tally check --json and its text give for $T/NAME.tally
version() {
	"$TALLY" check --json "$T/$1.tally" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["sections"][0]["driver_version"])'
}

"$TALLY" record -o "$T/local.tally" -- env LD_LIBRARY_PATH="$CUDA_DIR" FAKEAPP_DRIVER=1 \
	"$APP" exit 10 >"$T/local.out" 2>&1 || { cat "$T/local.out"; bad "record with the driver loaded"; }
v=$(version local)
[ "$v" = 13000 ] && ok "libcuda.so.1 loaded RTLD_LOCAL: driver 13000 in the trace" ||
	{ bad "driver version $v with libcuda.so.1 loaded RTLD_LOCAL (want 13000)"; tail -5 "$T/local.out"; }
"$TALLY" check "$T/local.tally" 2>&1 | grep -q "CUDA driver 13000," && ok "tally check: CUDA driver 13000" ||
	bad "tally check does not say CUDA driver 13000"

# A session begun at load (--trace osrt) meets the driver only when CUDA joins at cuInit: its
# note says the version the loaded driver gives, and "unknown" without one (never 0).
notes() { # NAME: the notes of $T/NAME.tally, "CODE: TEXT" a line
	"$TALLY" check --json "$T/$1.tally" 2>/dev/null | python3 -c 'import json,sys
for n in json.load(sys.stdin)["files"][0]["sections"][0]["notes"]: print(n["code"] + ": " + n["text"])'
}
note() { notes "$1" | sed -n 's/^cupti-joined: //p'; } # NAME: its cupti-joined note's text
# (the variables go to tally record: `env` under it would be a process recorded of its own)
env LD_LIBRARY_PATH="$CUDA_DIR" FAKEAPP_DRIVER=1 "$TALLY" record --trace cuda,osrt \
	-o "$T/joined.tally" -- "$APP" exit 10 >"$T/joined.out" 2>&1 || { cat "$T/joined.out"; bad "record (joined) with the driver loaded"; }
note joined | grep -q "CUDA driver 13000$" && ok "CUDA joined: its note says CUDA driver 13000" ||
	bad "CUDA joined: the note says '$(note joined)' (want CUDA driver 13000)"
# and the readers take the versions from it, its SESSION chunk having none (the stand-in CUPTI
# gives the API version of the headers it was built with)
api=
for d in $(echo "$CUDA_INCLUDE" | tr ';' ' '); do
	[ -n "$api" ] || api=$(sed -n 's/^#define CUPTI_API_VERSION \([0-9]*\)$/\1/p' "$d/cupti_version.h" 2>/dev/null)
done
[ -n "$api" ] || bad "no CUPTI_API_VERSION in cupti_version.h under $CUDA_INCLUDE"
v=$(version joined)
"$TALLY" check "$T/joined.tally" 2>&1 | grep -q "CUDA driver 13000, CUPTI API $api," && [ "$v" = 13000 ] &&
	ok "CUDA joined: tally check says CUDA driver 13000, CUPTI API $api, from the note" ||
	bad "CUDA joined: $("$TALLY" check "$T/joined.tally" 2>&1 | grep versions), driver_version $v (want 13000, CUPTI API $api)"
"$TALLY" record --trace cuda,osrt -o "$T/joined-none.tally" -- "$APP" exit 10 >"$T/joined-none.out" 2>&1 ||
	bad "record (joined) without a driver"
note joined-none | grep -q "CUDA driver unknown$" && ok "CUDA joined without a driver: its note says unknown" ||
	bad "CUDA joined without a driver: the note says '$(note joined-none)'"

# Under cuda-gdb the driver starts but never calls tally's injection (its debugger back-end takes
# that place): a session begun at load says that CUDA ran unrecorded (looked at on the periodic
# flush, here every 200 ms of a 1.5 s program); one whose program loaded the driver but never
# started CUDA says nothing of the kind, nor one CUDA joined.  (Programs as long as this one: a
# shorter one ends before any look, and its lack of a note would prove nothing.)
env LD_LIBRARY_PATH="$CUDA_DIR" FAKE_CUDA_DEBUGGER=1 TALLY_SLICE_MS=200 "$TALLY" record \
	--trace cuda,osrt -o "$T/debugger.tally" -- "$APP" paced 30 >"$T/debugger.out" 2>&1 || { cat "$T/debugger.out"; bad "record (debugger)"; }
notes debugger | grep -q '^cuda-not-joined:' && ok "CUDA started, never joined: the trace says so" ||
	bad "CUDA started, never joined: notes '$(notes debugger)'"
env LD_LIBRARY_PATH="$CUDA_DIR" FAKEAPP_DRIVER=1 FAKEAPP_NO_CUDA=1 TALLY_SLICE_MS=200 "$TALLY" \
	record --trace cuda,osrt -o "$T/no-init.tally" -- "$APP" paced 30 >"$T/no-init.out" 2>&1 || bad "record (driver, no cuInit)"
env LD_LIBRARY_PATH="$CUDA_DIR" FAKE_CUDA_DEBUGGER=1 FAKEAPP_INJECT_TOO=1 TALLY_SLICE_MS=200 \
	"$TALLY" record --trace cuda,osrt -o "$T/joined-long.tally" -- "$APP" paced 30 \
	>"$T/joined-long.out" 2>&1 || bad "record (driver started, then joined)"
notes joined-long | grep -q '^cupti-joined:' && ok "joined-long: CUDA joined" || bad "joined-long: notes '$(notes joined-long)'"
for t in no-init joined-long; do
	notes $t | grep -q '^cuda-not-joined:' && bad "$t: says cuda-not-joined ($(notes $t))" ||
		ok "$t: no cuda-not-joined note"
done

"$TALLY" record -o "$T/none.tally" -- "$APP" exit 10 >"$T/none.out" 2>&1 || bad "record without a driver"
v=$(version none)
[ "$v" = 0 ] && ok "no driver in the process: none recorded (driver_version 0 in --json)" ||
	bad "driver version $v without a driver"
"$TALLY" check "$T/none.tally" 2>&1 | grep -q "CUDA driver unknown," && ok "tally check: CUDA driver unknown" ||
	{ bad "tally check does not say CUDA driver unknown"; "$TALLY" check "$T/none.tally" | grep versions; }
finish
