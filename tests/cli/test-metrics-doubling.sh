#!/bin/sh
# The GPU metric readers are linear in their input and bounded in memory (docs/stats.md): traces
# of 8 s and 16 s of metrics at 10 kHz (12 metrics: 0.96 M and 1.9 M records, from
# tests/support/tally-metricsgen.c), each reader run three times on each, its best CPU time and
# its peak memory compared.  Twice the records may cost at most 2.5 times the CPU; the summary
# (gpu_metrics_sum) keeps nothing per sample, so its memory may not grow by more than 15%; the
# others keep something per gap or per range (linear, never per sample), at most 1.6 times
# (SQLite's own page cache, 2 times).
# Usage: test-metrics-doubling.sh TALLY METRICSGEN
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 GEN=$2
[ -x /usr/bin/time ] || skip "no GNU time (apt-get install time)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$GEN" -o "$T/n.tally" --seconds 8 && "$GEN" -o "$T/2n.tally" --seconds 16 || bad "tally-metricsgen"

# cost TRACE ARGS...: "CPU_SECONDS MAX_RSS_KB", the least of three runs of tally ARGS TRACE, as
# GNU time measures them (its own fork is small, so the peak is tally's)
cost() {
	trace=$1
	shift
	best=""
	for run in 1 2 3; do
		/usr/bin/time -f "%U %S %M" -o "$T/time" "$TALLY" "$@" "$trace" >/dev/null 2>&1
		best=$(awk -v best="$best" '{ c = $1 + $2; m = $3 }
			END { if (best != "") { split(best, b, " "); if (b[1] < c) c = b[1]; if (b[2] < m) m = b[2] }
			      print c, m }' "$T/time")
	done
	echo "$best"
}

# instructions TRACE ARGS...: the instructions tally ARGS TRACE executed (callgrind's total)
instructions() {
	trace=$1
	shift
	rm -f "$T/cg.out"
	valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" "$TALLY" "$@" "$trace" >/dev/null 2>&1
	awk '/^(summary|totals):/ { print $2; exit }' "$T/cg.out"
}

# doubling NAME MAX_RSS_RATIO ARGS...: the reader tally ARGS on both traces.  CPU time that grows
# past 2.5x is judged again on instructions (valgrind), which another load on the machine and
# the caches do not change; memory is judged on peak RSS alone.
doubling() {
	name=$1 max_rss=$2
	shift 2
	a=$(cost "$T/n.tally" "$@") b=$(cost "$T/2n.tally" "$@")
	verdict=0
	python3 -c '
import sys
c1, m1, c2, m2, lim = map(float, sys.argv[1:])
# a floor of 20 ms under the CPU times: a run that short is mostly start-up and noise; and a MiB
# over the memory limit: peak RSS moves that much from run to run (thread stacks, allocator
# arenas), which a ratio of a few MiB cannot tell from growth
print("cpu %.3f s -> %.3f s (x%.2f), peak %d KB -> %d KB (x%.2f)" % (c1, c2, (c2 + 0.02) / (c1 + 0.02), m1, m2, m2 / m1))
sys.exit(2 if m2 > m1 * lim + 1024 else 1 if (c2 + 0.02) / (c1 + 0.02) > 2.5 else 0)' $a $b "$max_rss" >"$T/ratio" || verdict=$?
	if [ "$verdict" = 1 ] && command -v valgrind >/dev/null 2>&1; then
		i1=$(instructions "$T/n.tally" "$@") i2=$(instructions "$T/2n.tally" "$@")
		if [ -n "$i1" ] && [ -n "$i2" ] && awk -v a="$i1" -v b="$i2" 'BEGIN { exit !(b / a <= 2.5) }'; then
			verdict=0
		fi
		echo "; instructions $i1 -> $i2" >>"$T/ratio"
	fi
	if [ "$verdict" = 0 ]; then
		ok "$name: $(tr -d '\n' <"$T/ratio")"
	else
		bad "$name: $(tr -d '\n' <"$T/ratio")"
	fi
}

doubling "stats -r gpu_metrics_sum" 1.15 stats -r gpu_metrics_sum
doubling "stats -r gpu_gaps (a second pass for the gaps' metrics)" 1.6 stats -r gpu_gaps
doubling "stats -r gpu_metrics_nvtx_sum" 1.6 stats -r gpu_metrics_nvtx_sum
doubling "export chrome --metric-step 1ms" 1.6 export -q --force -f chrome --metric-step 1ms -o "$T/out.json"
doubling "export sqlite (its page cache grows with the file)" 2.0 export -q --force -f sqlite -o "$T/out.sqlite"
doubling "report (metric curves)" 1.6 report -q --force -o "$T/out.html"
finish
