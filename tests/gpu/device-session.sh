#!/bin/bash
# What one session on the GPU machine runs (results under $OUT): the doctor, the GPU suite, the
# demo, and the overhead bench, from a build/ made elsewhere and carried over.
# Usage: OUT=dir tests/gpu/device-session.sh [ROUNDS]
set -u
B=build
T=$B/src/cli/tally
export PYTHONUNBUFFERED=1
# tally links libsqlite3 (export); a machine without it gets the copy carried in build/extra-libs
ldd $T | grep -q "not found" && export LD_LIBRARY_PATH=$PWD/$B/extra-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
$T doctor > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor.txt"
timeout 420 tests/gpu/run.sh $B /tmp/g > "$OUT/suite.log" 2>&1; grep -E "^(ok|FAIL|skip)|gpu suite" "$OUT/suite.log"
grep -B1 -A6 "^FAIL" "$OUT/suite.log" | head -40
$T check /tmp/g/starved/*.tally > "$OUT/starved.txt" 2>&1
TALLY_DEMO_PREBUILT=1 timeout 200 scripts/demo.sh > "$OUT/demo.txt" 2>&1; echo "demo exit $?" >> "$OUT/demo.txt"; tail -5 "$OUT/demo.txt"
timeout 330 bench/gpu-overhead.sh $B "${1:-5}" > "$OUT/bench.txt" 2>&1; cat "$OUT/bench.txt"
