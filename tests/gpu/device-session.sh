#!/bin/bash
# What one session on the GPU machine runs (results under $OUT): the doctor, the GPU suite, the
# sample traces kept in tests/data, and the overhead bench.  Usage: OUT=dir tests/gpu/device-session.sh [ROUNDS]
set -u
B=build
T=$B/src/cli/tally
export PYTHONUNBUFFERED=1
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
$T doctor > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor.txt"
$T doctor --json > "$OUT/doctor.json" 2>&1
mkdir -p /tmp/s
$T record -o /tmp/s/gpu-h200 -- $B/gpu/workload --kernels 2000 --memcpy 20:1048576 --memset 10:65536 --graph 20:10 --threads 2 --nvtx
$T record -o /tmp/s/gpu-h200-torch -- python3 tests/gpu/torch_loop.py 2000
tar czf "$OUT/samples.tgz" -C /tmp/s .
timeout 420 tests/gpu/run.sh $B /tmp/g > "$OUT/suite.log" 2>&1; grep -E "^(ok|FAIL|skip)|gpu suite" "$OUT/suite.log"
grep -B1 -A6 "^  verdict\|^FAIL" "$OUT/suite.log" | head -60
timeout 300 bench/gpu-overhead.sh $B "${1:-5}" > "$OUT/bench.txt" 2>&1; cat "$OUT/bench.txt"
