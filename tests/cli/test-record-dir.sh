#!/bin/sh
# tally record -o DIR/ (or -o DIR, a directory that is there) records into DIR with the default
# name, tally-PID.tally, which tally stats DIR/ then reads (it wrote a hidden DIR/.tally); tally
# env does the same, and tally env --prefix DIR writes the environment for a collector at the
# path it has where the program runs (a container's /opt/tally), refusing an output that would
# be made absolute against this machine's directory.
# Usage: test-record-dir.sh TALLY FAKEAPP FAKECUPTI
set -u
TALLY=$1 APP=$2 FAKECUPTI=$3
. "$(dirname "$0")/../lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# tally record preloads libtally.so into programs that are not sanitized
ldd "$TALLY" | grep -Eq 'lib(a|t)san' &&
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
export TALLY_CUPTI_PATH=$FAKECUPTI FAKEAPP_UNTRACED_OK=1

for form in slash plain; do
	mkdir "$T/$form"
	o=$T/$form
	[ $form = slash ] && o=$T/$form/
	expect_rc "record -o DIR ($form)" 0 "$TALLY" record --no-checks -o "$o" -- "$APP" exit 10
	files=$(cd "$T/$form" && ls -A)
	case $files in
	tally-[0-9]*.tally) ok "record -o DIR ($form): wrote $files" ;;
	*) bad "record -o DIR ($form): the directory holds '$files'" ;;
	esac
	expect_rc "stats DIR ($form) reads it" 0 "$TALLY" stats -r cuda_gpu_kern_sum "$T/$form/"
	grep -q "1 file(s)" "$T/err" "$T/out" && ok "stats DIR ($form): one trace" || bad "stats DIR ($form): $(cat "$T/err")"
done
expect_rc "env -o DIR/" 0 "$TALLY" env -o "$T/slash/"
grep -qx "export TALLY_OUTPUT='$T/slash/tally-%p.tally'" "$T/out" && ok "env -o DIR/: the default name in DIR" ||
	bad "env -o DIR/: $(grep TALLY_OUTPUT "$T/out")"

expect_rc "env --prefix /opt/tally -o /traces/" 0 "$TALLY" env --prefix /opt/tally -o /traces/
for v in CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH LD_PRELOAD; do
	grep -qx "export $v='/opt/tally/lib/tally/libtally.so'" "$T/out" &&
		ok "env --prefix: $v is the collector under the prefix" || bad "env --prefix: $(grep "$v" "$T/out")"
done
grep -qx "export TALLY_OUTPUT='/traces/tally-%p.tally'" "$T/out" && ok "env --prefix: the output as given" ||
	bad "env --prefix: $(grep TALLY_OUTPUT "$T/out")"
expect_rc "env --prefix, docker format" 0 "$TALLY" env --format docker --prefix /opt/tally/ -o /traces/run-%p
grep -qx 'ENV CUDA_INJECTION64_PATH="/opt/tally/lib/tally/libtally.so"' "$T/out" &&
	ok "env --prefix DIR/: one slash" || bad "env --prefix DIR/: $(grep INJECTION "$T/out")"
expect_rc "env --prefix with a relative output" 2 "$TALLY" env --prefix /opt/tally -o traces/run
grep -q "absolute path where the program runs" "$T/err" && ok "says why" || bad "no reason: $(cat "$T/err")"
expect_rc "env --prefix relative" 2 "$TALLY" env --prefix opt/tally -o /traces/
finish test-record-dir
