#!/bin/bash
# What a session on the GPU machine runs, from a build/ made elsewhere and carried over; results
# go under $OUT (at most a few files: logs, and one archive of the small outputs).
#   OUT=dir tests/gpu/device-session.sh suite    the doctor, the GPU suite (run.sh), call stacks
#                                                and memory (stacks.sh), the HTML report (report.sh)
#   OUT=dir TALLY_GPU_CASES="..." tests/gpu/device-session.sh recheck
#                                                those cases of the suite, stacks, report, bundle
#   OUT=dir tests/gpu/device-session.sh compare  control/compare/gaps (compare.sh), the bundle
#                                                (bundle.sh, if out/dist holds the tarballs from scripts/dist.sh), the benches
# One line per part it ran (ok, FAIL, or skip with the reason), then the summary; it exits 1 when a
# part failed (or ran past its time), 77 when every part skipped, or where there is no GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
: "${OUT:?set OUT to the directory for the results}"
B=build
T=$B/src/cli/tally
export PYTHONUNBUFFERED=1
# tally may link libraries the GPU machine lacks: take the copies carried in build/extra-libs
ldd $T 2>/dev/null | grep -q "not found" && export LD_LIBRARY_PATH=$PWD/$B/extra-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
# the small outputs (text, JSON, pages) of the given directories, into one archive under $OUT
keep() { # ARCHIVE DIR...
	local a=$1; shift
	find "$@" -type f \( -name '*.txt' -o -name '*.json' -o -name '*.html' -o -name '*.png' -o -name stdout -o -name stderr -o -name status \) \
		-size -6M 2>/dev/null | tar czf "$OUT/$a" -T - 2>/dev/null
}
summary() { grep -h -E "^(ok|FAIL|skip|close)|failed|passed" "$@" | head -120; }
# step NAME SECONDS LOG CMD...: one part of the session, its output in LOG; its exit status is
# what the session reports of it (0 passed, 77 skipped, anything else failed)
step() {
	local name=$1 secs=$2 log=$3
	shift 3
	timeout "$secs" "$@" >"$log" 2>&1
	said "$name" $? "$secs" "$log"
}
said() { # NAME STATUS SECONDS LOG
	case $2 in
	0) ok "$1" ;;
	77) skipped "$1: $(grep -m1 -o 'SKIP.*' "$4")" ;;
	124) bad "$1: ran past its $3 s (timeout)" ;;
	*) bad "$1: exit $2 (see $(basename "$4"))" ;;
	esac
}
# suite SECONDS...: the suite (run.sh) in the background beside stacks.sh then report.sh, each
# given its time; each said by its own status
suite() {
	local pid
	timeout "$1" tests/gpu/run.sh $B /tmp/g >"$OUT/suite.log" 2>&1 &
	pid=$!
	step "stacks (stacks.sh)" "$2" "$OUT/stacks.log" tests/gpu/stacks.sh $B /tmp/st
	step "report (report.sh)" "$3" "$OUT/report.log" tests/gpu/report.sh $B /tmp/rep
	wait $pid
	said "suite (run.sh, TALLY_GPU_CASES=${TALLY_GPU_CASES:-all})" $? "$1" "$OUT/suite.log"
}
# bundle: bundle.sh where out/dist holds the tarballs
bundle() {
	if ls out/dist/tally-*.tar.gz >/dev/null 2>&1; then
		step "bundle (bundle.sh)" 150 "$OUT/bundle.log" tests/gpu/bundle.sh out/dist /tmp/bundle
	else
		skipped "bundle: no out/dist/tally-*.tar.gz (scripts/dist.sh makes them)"
	fi
}
case ${1:-suite} in
suite)
	$T doctor >"$OUT/doctor.txt" 2>&1
	rc=$?
	echo "doctor exit $rc" >>"$OUT/doctor.txt"
	# not a part of its own, but where the doctor says no recording can proceed, the session fails
	[ $rc -eq 0 ] || bad "doctor: exit $rc, recording cannot proceed here (doctor.txt)"
	suite 540 270 240
	summary "$OUT/suite.log" "$OUT/stacks.log" "$OUT/report.log"
	grep -B1 -A8 "^FAIL" "$OUT/suite.log" "$OUT/stacks.log" "$OUT/report.log" | head -60
	keep suite-art.tgz /tmp/g /tmp/st /tmp/rep
	;;
compare)
	step "compare (compare.sh)" 330 "$OUT/compare.log" tests/gpu/compare.sh $B /tmp/cmp
	summary "$OUT/compare.log"; grep -A8 "^FAIL" "$OUT/compare.log" | head -30
	bundle
	[ -e "$OUT/bundle.log" ] && { summary "$OUT/bundle.log"; grep -A8 "^FAIL" "$OUT/bundle.log" | head -20; }
	step "bench (stacks-overhead.sh)" 200 "$OUT/bench-stacks.txt" bench/stacks-overhead.sh $B "${2:-3}"
	cat "$OUT/bench-stacks.txt"
	keep compare-art.tgz /tmp/cmp /tmp/bundle
	;;
recheck) # a subset of the suite (TALLY_GPU_CASES), then stacks, the report pages, the bundle
	suite 300 200 150
	bundle
	summary "$OUT"/*.log
	grep -h -A8 "^FAIL" "$OUT"/*.log | head -60
	keep recheck-art.tgz /tmp/g /tmp/st /tmp/rep /tmp/bundle
	;;
*)
	echo "usage: OUT=dir tests/gpu/device-session.sh [suite|compare|recheck]" >&2
	exit 2
	;;
esac
finish "device session (${1:-suite})"
