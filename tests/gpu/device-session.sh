#!/bin/bash
# What a session on the GPU machine runs, from a build/ made elsewhere and carried over; results
# go under $OUT (at most a few files: logs, and one archive of the small outputs).
#   OUT=dir tests/gpu/device-session.sh suite    the doctor, the GPU suite (run.sh), call stacks
#                                                and memory (stacks.sh), the HTML report (report.sh)
#   OUT=dir TALLY_GPU_CASES="..." tests/gpu/device-session.sh recheck
#                                                those cases of the suite, stacks, report, bundle
#   OUT=dir tests/gpu/device-session.sh compare  control/compare/gaps (compare.sh), the bundle
#                                                (bundle.sh, if out/dist holds the tarballs from scripts/dist.sh), the benches
set -u
B=build
T=$B/src/cli/tally
export PYTHONUNBUFFERED=1
# tally may link libraries the GPU machine lacks: take the copies carried in build/extra-libs
ldd $T | grep -q "not found" && export LD_LIBRARY_PATH=$PWD/$B/extra-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
# the small outputs (text, JSON, pages) of the given directories, into one archive under $OUT
keep() { # ARCHIVE DIR...
	local a=$1; shift
	find "$@" -type f \( -name '*.txt' -o -name '*.json' -o -name '*.html' -o -name '*.png' -o -name stdout -o -name stderr -o -name status \) \
		-size -6M 2>/dev/null | tar czf "$OUT/$a" -T - 2>/dev/null
}
summary() { grep -h -E "^(ok|FAIL|skip|close)|failed|passed" "$@" | head -120; }
case ${1:-suite} in
suite)
	$T doctor >"$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >>"$OUT/doctor.txt"
	timeout 540 tests/gpu/run.sh $B /tmp/g >"$OUT/suite.log" 2>&1 &
	{ timeout 270 tests/gpu/stacks.sh $B /tmp/st >"$OUT/stacks.log" 2>&1
	  timeout 240 tests/gpu/report.sh $B /tmp/rep >"$OUT/report.log" 2>&1; } &
	wait
	summary "$OUT/suite.log" "$OUT/stacks.log" "$OUT/report.log"
	grep -B1 -A8 "^FAIL" "$OUT/suite.log" "$OUT/stacks.log" "$OUT/report.log" | head -60
	keep suite-art.tgz /tmp/g /tmp/st /tmp/rep
	;;
compare)
	timeout 330 tests/gpu/compare.sh $B /tmp/cmp >"$OUT/compare.log" 2>&1
	summary "$OUT/compare.log"; grep -A8 "^FAIL" "$OUT/compare.log" | head -30
	if ls out/dist/tally-*.tar.gz >/dev/null 2>&1; then
		timeout 150 tests/gpu/bundle.sh out/dist /tmp/bundle >"$OUT/bundle.log" 2>&1
		summary "$OUT/bundle.log"; grep -A8 "^FAIL" "$OUT/bundle.log" | head -20
	fi
	timeout 200 bench/stacks-overhead.sh $B "${2:-3}" >"$OUT/bench-stacks.txt" 2>&1; cat "$OUT/bench-stacks.txt"
	keep compare-art.tgz /tmp/cmp /tmp/bundle
	;;
recheck) # a subset of the suite (TALLY_GPU_CASES), then stacks, the report pages, the bundle
	timeout 300 tests/gpu/run.sh $B /tmp/g >"$OUT/suite.log" 2>&1 &
	{ timeout 200 tests/gpu/stacks.sh $B /tmp/st >"$OUT/stacks.log" 2>&1
	  timeout 150 tests/gpu/report.sh $B /tmp/rep >"$OUT/report.log" 2>&1; } &
	wait
	if ls out/dist/tally-*.tar.gz >/dev/null 2>&1; then
		timeout 150 tests/gpu/bundle.sh out/dist /tmp/bundle >"$OUT/bundle.log" 2>&1
	fi
	summary "$OUT"/*.log
	grep -h -A8 "^FAIL" "$OUT"/*.log | head -60
	keep recheck-art.tgz /tmp/g /tmp/st /tmp/rep /tmp/bundle
	;;
esac
