#!/bin/bash
# Facts about CUPTI's PM sampling on this GPU that tally's GPU-metrics sampler is designed on
# (tests/gpu/pm-probe.cu says what each mode asks).  Prints "probe ..." lines; keeps them in
# $OUT/pm-probe.txt when OUT is set.  About a minute, most of it nvcc.
#   tests/gpu/pm-probe.sh [BUILD_DIR]
# Exits 77 without a GPU.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(mkdir -p "${1:-build}" && cd "${1:-build}" && pwd)
P=$B/gpu/pm-probe
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
	echo "SKIP: no GPU here"; exit 77
fi
if [ ! -x "$P" ] || [ "$HERE/pm-probe.cu" -nt "$P" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$P" "$HERE/pm-probe.cu" -lcuda -lcupti || { echo "FAIL: cannot build pm-probe.cu"; exit 1; }
fi
LOG=${OUT:-/tmp}/pm-probe.txt
{
	nvidia-smi -L
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
	grep -i profiling /proc/driver/nvidia/params
	for mode in metrics sample overflow fullimage; do
		echo "== $mode"
		timeout 120 "$P" $mode 2>&1; echo "exit $?"
	done
	echo "== second, alone (control)"
	timeout 60 "$P" second 2>&1
	echo "== hold 3 s, and a second process 1 s in"
	timeout 60 "$P" hold 3 >/tmp/pm-probe-hold.txt 2>&1 &
	sleep 1.5
	timeout 60 "$P" second 2>&1
	wait
	sed 's/^/hold: /' /tmp/pm-probe-hold.txt
} 2>&1 | tee "$LOG"
