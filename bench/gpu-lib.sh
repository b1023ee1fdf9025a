# Sourced by the GPU cost benchmarks (gpu-overhead, stacks-overhead, sampling-overhead,
# metrics-overhead): the workload, runs that alternate configuration by configuration within each
# round, and what is read from them.  The sourcing script sets B (the build directory), ROUNDS
# and HERE (bench/), and defines run CONFIG KEY PROGRAM..., which prints the KEY value (ns) the
# program reports for its own loop.
#
# BENCH_CPUS  the CPUs every run is pinned to (a taskset list; empty pins nothing).  Default 2-9
#             where the machine has 12 CPUs or more: every configuration then runs on the same
#             CPUs, so where the scheduler puts a run is not part of the comparison.
#
# BENCH_KEY   chunk_p10_ns: compare the loops by their fastest chunks (the 10th percentile of the
#             times of their chunks of 1,000 launches or adds, scaled to the loop) instead of
#             the whole loop's time (loop_ns): what the machine slowed is left out, what a tool
#             adds to every call is not; a cost that comes in bursts (a sampler's step) is.
#
# Each benchmark also runs its baseline twice a round ("again" beside "default" or "tally"): the
# second over the first is what the measurement itself moves, the yardstick for every other ratio.
TALLY=$B/src/cli/tally
W=$B/gpu/workload
PY=${PYTHON:-python3}
T=$(mktemp -d)
D=$T/data
mkdir -p "$D"
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -x "$W" ]; then
	mkdir -p "$B/gpu"
	nvcc -O2 -arch=sm_90 -o "$W" "$HERE/../tests/gpu/workload.cu" -lcuda || exit 1
fi
if [ -z "${BENCH_CPUS+set}" ] && [ "$(nproc)" -ge 12 ]; then
	BENCH_CPUS=2-9
fi
if [ -n "${BENCH_CPUS:-}" ] && command -v taskset >/dev/null; then
	taskset -cp "$BENCH_CPUS" $$ >/dev/null && echo "(every run pinned to CPUs $BENCH_CPUS)"
fi

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
minmax() { sort -n | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.3f-%.3f", mn, mx}'; }

# rounds NAME KEY OPS "CONFIGS" PROGRAM...: ROUNDS rounds, each running every configuration once
# in the order given; us per op in $D/NAME.CONFIG, "round ns" in $D/NAME.CONFIG.round ($D, not
# $T, where the runs' traces go and are removed after each: a configuration may be called
# "tally").
rounds() {
	local name=$1 key=$2 ops=$3 cfgs=$4 r cfg ns
	shift 4
	[ "$key" = loop_ns ] && key=${BENCH_KEY:-loop_ns} # graph_loop_ns has no chunks
	for r in $(seq "$ROUNDS"); do
		for cfg in $cfgs; do
			ns=$(run "$cfg" "$key" "$@" 2>/dev/null)
			[ -n "$ns" ] && echo "$ns $ops" | awk '{printf "%.4f\n", $1 / $2 / 1000}' >>"$D/$name.$cfg" &&
				echo "$r $ns" >>"$D/$name.$cfg.round"
			rm -f "$T"/*.tally
		done
	done
}

# cell NAME CONFIG: "median (min-max)" of the configuration's us per op
cell() { echo "$(median <"$D/$1.$2") ($(minmax <"$D/$1.$2"))"; }

# over NAME CONFIG BASE: the configuration over the base as the ratio of their medians, and in
# brackets the median over the rounds of each round's own ratio (the runs of one round are next
# to each other in time, so a machine that drifts between rounds moves both alike)
over() {
	local m b p
	m=$(median <"$D/$1.$2") b=$(median <"$D/$1.$3")
	p=$(awk 'NR == FNR {d[$1] = $2; next} ($1 in d) && d[$1] > 0 {print $2 / d[$1]}' \
		"$D/$1.$3.round" "$D/$1.$2.round" | median)
	echo "$(echo "$m $b" | awk '{printf "%.3f", $1 / $2}') ($p)"
}

# Within one run (TALLY_BENCH_TOGGLE_MS, docs/collector.md): tally takes GPU metrics and host
# samples in about half the intervals of BENCH_TOGGLE_MS ms (those a hash of the interval's
# number picks), and the workloads print each interval's median chunk and whether it was one of
# those ("phase_ns INDEX:NS:ON,...").  Each interval that was on over the mean of the ones beside
# it that were off is one ratio (bench/stats.sh): the same process, the same second, with and
# without the recorder, so the machine's drift between runs (runs landing 30-50% apart on the
# H200) cancels.  The ratios of every run of a configuration are pooled; "again" is the same
# with nothing to switch (tally's default), the method's own spread.
BENCH_TOGGLE_MS=${BENCH_TOGGLE_MS:-300}

# toggled NAME "CONFIGS" PROGRAM...: WITHIN rounds (the sourcing script sets it), each running
# every configuration once with TALLY_BENCH_TOGGLE_MS; each run's intervals in
# $D/NAME.CONFIG.phases
toggled() {
	local name=$1 cfgs=$2 r cfg
	shift 2
	for r in $(seq "$WITHIN"); do
		for cfg in $cfgs; do
			(export TALLY_BENCH_TOGGLE_MS=$BENCH_TOGGLE_MS && run "$cfg" phase_ns "$@") \
				>>"$D/$name.$cfg.phases" 2>/dev/null
			rm -f "$T"/*.tally
		done
	done
}

# within_cell NAME CONFIG: "median [lo, hi] (pairs)" of the configuration's ratios
within_cell() { phase_ratios <"$D/$1.$2.phases" | median_interval; }

. "$HERE/stats.sh"
