#!/bin/sh
# Readers under doubling inputs, for what issue 21's items bound: distinct names (tables, CSV,
# Chrome, compare), stack ids with their frames and modules (the stack report, SQLite's call
# chains, the Chrome export), and files in a directory (the check that no output is an input,
# the directory listing).  Each command runs on N, 2N and 4N; its CPU time (user + system, the
# smaller of two runs, so that another load on the machine does not count) may grow at most
# 2.5x per doubling: linear work doubles, quadratic work quadruples.  CPU time also grows with
# cache misses as the working set outgrows the caches (3x for one doubling was seen with the
# instruction count exactly doubled), so a series that fails on time is judged again on the
# instructions it executed (valgrind's callgrind, where valgrind is installed), which neither
# caches nor another load change: a quadratic reader fails both.  Streams, allocations and ranks
# are tests/cli/test-scale.sh's.
# Usage: test-scaling-hostile.sh TALLY CRAFT SRCDIR
set -u
TALLY=$1 CRAFT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
MAX_GROWTH=2.5
FLOOR=0.15 # CPU seconds: below this at 4N, a ratio is noise and the case proves nothing

# cpu CMD...: CPU seconds of CMD and its children, the smaller of two runs
cpu() {
	python3 - "$@" <<'EOF'
import resource, subprocess, sys
best = None
for _ in range(2):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = t if best is None else min(best, t)
print("%.3f" % best)
EOF
}

# judge NAME T1 T2 T4: 0 when the times grow at most MAX_GROWTH per doubling, 1 when they grow
# faster, 77 when they are too small to tell
judge() {
	python3 - "$1" "$MAX_GROWTH" "$FLOOR" "$2" "$3" "$4" <<'EOF'
import sys
name, limit, floor = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
t = [max(float(x), 1e-3) for x in sys.argv[4:]]
if t[-1] < floor:
    print("skip %s: %.3f s at 4N is below %.2f s: too quick to tell" % (name, t[-1], floor))
    sys.exit(77)
growth = [t[i + 1] / t[i] for i in range(len(t) - 1)]
said = ", ".join("%.2fx" % g for g in growth)
# both doublings over the limit, or the whole span over limit^2: not one noisy measurement
if min(growth) > limit or t[-1] / t[0] > limit * limit:
    print("FAIL %s: grows %s per doubling (limit %.1f)" % (name, said, limit))
    sys.exit(1)
print("ok   %s: grows %s per doubling (limit %.1f)" % (name, said, limit))
EOF
}

# instructions CMD...: instructions CMD executed (callgrind's total, in billions)
instructions() {
	rm -f "$T/cg.out"
	valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" "$@" >/dev/null 2>&1
	awk '/^(summary|totals):/ { printf "%.4f\n", $2 / 1e9; exit }' "$T/cg.out"
}

# series MEASURE NAME N CASE CMD...: MEASURE (cpu or instructions) of CMD with @IN@ replaced by
# the input made by `tally-craft CASE` for sizes N, 2N, 4N (@OUT@ by a fresh output path)
series() {
	measure=$1 name=$2 n=$3 case=$4
	shift 4
	values=""
	for k in 1 2 4; do
		size=$((n * k))
		in="$T/$case-$size"
		[ -e "$in" ] || "$CRAFT" "$case" "$in" "$size" || { echo "tally-craft $case $size failed" >&2; return 1; }
		rm -rf "$T/out"
		cmd=""
		for a in "$@"; do
			a=$(printf '%s' "$a" | sed "s|@IN@|$in|g; s|@OUT@|$T/out|g")
			cmd="$cmd '$a'"
		done
		values="$values $(eval "$measure" "$cmd")"
	done
	echo "$values"
}

# doubling NAME N CASE CMD...: judged on CPU time, then (when that fails) on instructions
doubling() {
	name=$1 n=$2 case=$3
	shift 3
	times=$(series cpu "$name" "$n" "$case" "$@") || { bad "$name: tally-craft $case"; return; }
	echo "$name: CPU s for N, 2N, 4N ($n, $((2 * n)), $((4 * n))):$times"
	judge "$name" $times
	verdict=$?
	if [ "$verdict" = 1 ] && command -v valgrind >/dev/null 2>&1; then
		counts=$(series instructions "$name" "$n" "$case" "$@")
		echo "$name: billions of instructions for N, 2N, 4N:$counts"
		judge "$name (instructions)" $counts
		verdict=$?
	fi
	case $verdict in
	0) pass=$((pass + 1)) ;;
	77) skips=$((skips + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
}

# The judge must tell a quadratic series from a linear one, or this test could not fail; and the
# instruction count must be read, or the second judgement would judge nothing.
if command -v valgrind >/dev/null 2>&1; then
	i1=$(instructions "$TALLY" --help)
	[ -n "$i1" ] && awk "BEGIN { exit !($i1 > 0) }" && ok "callgrind counts instructions ($i1 billion for tally --help)" ||
		bad "callgrind: no instruction count read"
fi
# The judge must tell a quadratic series from a linear one, or this test could not fail.
judge "judge: a quadratic series (1, 4, 16 s)" 1 4 16 >"$T/j" && bad "judge: passed a quadratic series" || ok "judge: a quadratic series fails"
judge "judge: a linear series (1, 2, 4 s)" 1 2 4 >"$T/j" && ok "judge: a linear series passes" || bad "judge: failed a linear series"

# names: 25,000 kernels of a name each (and their launches), doubled
doubling "names: stats cuda_gpu_kern_sum" 25000 names "$TALLY" stats -r cuda_gpu_kern_sum @IN@
doubling "names: stats cuda_gpu_trace" 25000 names "$TALLY" stats -r cuda_gpu_trace @IN@
doubling "names: stats -f csv" 25000 names "$TALLY" stats -r cuda_gpu_kern_sum,cuda_gpu_trace -f csv @IN@
doubling "names: export chrome" 25000 names "$TALLY" export -f chrome --force -o @OUT@ @IN@
doubling "names: export csv" 25000 names "$TALLY" export -f csv --force -o @OUT@ @IN@
doubling "names: compare" 25000 names "$TALLY" compare @IN@ @IN@
# stack ids: 8,000 kernels, each from a stack of its own (a native frame in one of N/16 modules)
doubling "stack ids: stats cuda_kern_stack_sum" 8000 stack-ids "$TALLY" stats -r cuda_kern_stack_sum @IN@
doubling "stack ids: export sqlite" 8000 stack-ids "$TALLY" export -f sqlite --force -o @OUT@ @IN@
doubling "stack ids: export chrome" 8000 stack-ids "$TALLY" export -f chrome --force -o @OUT@ @IN@
# ranks with GPU metrics and gaps (issue 35): gpu_gaps' second pass looked up every series,
# device and span per gap (3.9x at 4,096 ranks)
doubling "ranks with metrics: stats gpu_gaps" 1024 ranks-gaps "$TALLY" stats -r gpu_gaps @IN@
# summaries of many processes: grouping them into jobs compared every pair (4x per doubling)
doubling "summaries of many ranks: stats" 8192 tsum-reasons "$TALLY" stats @IN@
# files: a directory of 4,000 small traces, doubled: every output checked against every input
doubling "files: check DIR" 4000 files "$TALLY" check @IN@
# (opened, each kept from being overwritten, and -o checked against them all; reading them is
# the ranks' scale test's)
doubling "files: -o one of them, refused before reading" 4000 files "$TALLY" stats --force -o @IN@/rank00000.tally @IN@
finish
