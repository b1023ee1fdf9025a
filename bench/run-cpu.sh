#!/bin/sh
# The CPU benchmarks, side by side in one run (`make bench`): the pipeline's records per second and
# bytes per record, then the readers' speed (stats, Chrome export) on a 10-million-record trace.
# Usage: bench/run-cpu.sh [BUILD_DIR]
set -eu
B=${1:-build}
echo "== pipeline: 5 M kernel records through walk, check, correlate, encode, write (3 runs)"
for i in 1 2 3; do "$B/bench/bench-pipeline" 5000000 /dev/shm/tally-bench.tally | sed -n '2,3p'; done
rm -f /dev/shm/tally-bench.tally
if [ -x bench/bench-report.sh ]; then
	echo "== readers: stats and export on a 10 M record trace"
	bench/bench-report.sh "$B"
fi
