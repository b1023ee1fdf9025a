#!/bin/sh
# Doubling tests: each reader over an input of size N, 2N and 4N must cost at most about 2.5 times
# more per doubling (2 is linear; a quadratic step would be 4).  Cost is counted in instructions,
# by valgrind's callgrind: exact and the same on a busy machine, where the shared cores make
# cpu-seconds vary by tens of percent.  Without valgrind, cpu-seconds (user + system, the least of
# three runs) stand in, with the same bound.  The readers run on one thread (TALLY_JOBS=1): the
# count is then the same from run to run.
#
#   test-scale.sh TALLY TESTSRC CASE
#
# CASE    input that doubles                                 command
# ranks-stats    rank traces (each 640 records, own RANK)    tally stats DIR
# ranks-gaps     rank traces                                 tally stats -r gpu_gaps DIR
# ranks-report   rank traces (64 to 256: past the page's lanes) tally report DIR
# ranks-compare  rank traces, both sides                     tally compare DIR DIR2
# ranks-merge    rank traces                                 tally merge DIR
# ranks-kineto   rank traces                                 tally export -f kineto DIR (a file per rank)
# ranks-partial  summaries of 8 ranks each                   tally stats SUMMARIES
# streams-compare, streams-chrome, streams-perfetto, streams-kineto, streams-gaps, streams-report
#                streams of one trace (2 kernels each)       compare, export -f chrome,
#                                                            export -f perfetto, stats -r
#                                                            gpu_gaps, report
# allocations    2 MiB-aligned allocations of one trace      stats -r cuda_gpu_mem_usage,
#                                                            export chrome
# jobs           (not a doubling) every output of 12 ranks, one cut short and one lossy, the
#                same byte for byte with TALLY_JOBS=1 and TALLY_JOBS=4
# memory-ranks   peak RSS over 16, 32, 64 ranks of 40,040 records (250 KB) each: merge and
#                gpu_gaps keep nothing per record and must stay flat (at most 1.25x per
#                doubling: a read window or a descriptor kept per input would grow them with the
#                input); stats, compare and report keep what their output needs (exact medians
#                to a budget, each stream's order, the page's lanes) and may grow at most 2.5x
# memory-lanes   peak RSS of tally report over 256, 512, 1024 ranks (100 records each): past
#                the page's one lane budget, at most 1.5x per doubling (the page itself grows)
# A failure names the command, the costs and the growth.  Exits 77 without valgrind and GNU time.
set -u
TALLY=$1 TESTSRC=$2 CASE=$3
. "$(dirname "$0")/../lib.sh"
export TALLY_JOBS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
MAX=2.5

if command -v valgrind >/dev/null 2>&1; then
	UNIT=instructions
	cost() { # CMD...: instructions the command ran
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
			sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
	}
elif [ -x /usr/bin/time ]; then
	UNIT=cpu-seconds
	cost() { # the least of three runs' user + system seconds
		for _ in 1 2 3; do
			/usr/bin/time -f '%U %S' -o "$T/time" "$@" >/dev/null 2>&1
			awk '{ print $1 + $2 }' "$T/time"
		done | sort -n | head -n1
	}
else
	skip "neither valgrind nor GNU time to count the cost"
fi

# doubling NAME SIZE1 SIZE2 SIZE3 COST1 COST2 COST3: the growth per doubling that is judged: the
# smaller of the two doublings' or, when larger, the whole span's (as test-scaling-hostile.sh
# judges): a quadratic reader grows about 4x at both, where one doubling alone moved 2.8x and the
# next 1.5x between two runs of the same linear export (its instruction counts vary run to run)
doubling() {
	g=$(echo "$2 $3 $4 $5 $6 $7" | awk '{
		a = exp(log($5 / $4) / (log($2 / $1) / log(2)))
		b = exp(log($6 / $5) / (log($3 / $2) / log(2)))
		span = exp(log($6 / $4) / (log($3 / $1) / log(2)))
		least = (a < b) ? a : b
		printf "%.2f", (span > least) ? span : least }')
	if [ -n "$g" ] && [ -n "$5" ] && [ -n "$7" ] && awk -v g="$g" -v m=$MAX 'BEGIN { exit !(g + 0 <= m + 0) }'; then
		ok "$1: $UNIT $5 -> $6 -> $7 for $2 -> $3 -> $4: x$g per doubling"
	else
		bad "$1: $UNIT $5 -> $6 -> $7 for $2 -> $3 -> $4: x$g per doubling (at most $MAX)"
	fi
}

ranks() { # DIR N SEED [KERNELS]: N rank traces
	mkdir -p "$1"
	i=0
	while [ $i -lt "$2" ]; do
		RANK=$i "$TESTSRC" -o "$1/rank$i.tally" --kernels "${4:-300}" --memcpys 20 --streams 2 \
			--seed $(($3 + i)) >/dev/null
		i=$((i + 1))
	done
}

# measure NAME SIZES CMD-TEMPLATE: CMD-TEMPLATE has @ where the input of each size goes
measure() {
	name=$1 sizes=$2 tmpl=$3 costs=
	for n in $sizes; do
		# shellcheck disable=SC2086 # the template is split on purpose
		c=$(cost $(echo "$tmpl" | sed "s|@|$n|g"))
		costs="$costs $c"
	done
	# shellcheck disable=SC2086
	doubling "$name" $sizes $costs
}

# peak RSS in KiB of CMD... (GNU time); empty when it failed
rss() {
	/usr/bin/time -f '%M' -o "$T/rss" "$@" >/dev/null 2>&1 && cat "$T/rss"
}

# memory NAME LIMIT SIZES CMD-TEMPLATE: peak RSS per doubling of the input at most LIMIT, from the
# first size to the last
memory() {
	name=$1 limit=$2 sizes=$3 tmpl=$4 costs=
	for n in $sizes; do
		# shellcheck disable=SC2086 # the template is split on purpose
		c=$(rss $(echo "$tmpl" | sed "s|@|$n|g"))
		costs="$costs $c"
	done
	# over the whole span: peak RSS moves by a MiB or so from run to run (threads' stacks,
	# allocator arenas), which one doubling of a few MiB cannot tell from growth
	# shellcheck disable=SC2086
	set -- $sizes $costs
	g=$(echo "$1 $3 $4 $6" | awk '{ printf "%.2f", exp(log($4 / $3) / (log($2 / $1) / log(2))) }')
	if [ -n "$g" ] && [ -n "$6" ] && awk -v g="$g" -v m="$limit" 'BEGIN { exit !(g + 0 <= m + 0) }'; then
		ok "$name: peak RSS KiB $4 -> $5 -> $6 for $1 -> $2 -> $3: x$g per doubling"
	else
		bad "$name: peak RSS KiB $4 -> $5 -> $6 for $1 -> $2 -> $3: x$g per doubling (at most $limit)"
	fi
}

# every output of DIR with TALLY_JOBS=$1 into $T/out$1
outputs() {
	export TALLY_JOBS=$1
	o=$T/out$1
	mkdir -p "$o"
	"$TALLY" stats -r all "$T/j" >"$o/stats.txt" 2>&1
	"$TALLY" stats --partial -o "$o/sum.tsum" "$T/j" 2>/dev/null
	"$TALLY" compare "$T/j" "$T/j2" >"$o/compare.txt" 2>&1
	"$TALLY" merge -q -o "$o/merged.tally" "$T/j" 2>/dev/null
	"$TALLY" report -q -o "$o/page.html" "$T/j" 2>/dev/null
	for f in chrome sqlite perfetto; do
		"$TALLY" export -q -f $f -o "$o/export.$f" "$T/j" 2>/dev/null
	done
	"$TALLY" export -q -f csv -o "$o/csv" "$T/j" 2>/dev/null
	export TALLY_JOBS=1
}

case $CASE in
jobs)
	ranks "$T/j" 12 1
	ranks "$T/j2" 12 500
	head -c 6000 "$T/j/rank5.tally" >"$T/j/rank5-cut.tally"
	"$TESTSRC" -o "$T/j/rank12.tally" --kernels 2000 --idle-at 1000:20:100 --slice-ms 5 >/dev/null
	outputs 1
	outputs 4
	for f in "$T"/out1/* "$T"/out1/csv/*; do
		[ -d "$f" ] && continue
		g=$T/out4/${f#"$T"/out1/}
		cmp -s "$f" "$g" && ok "TALLY_JOBS=1 and 4: ${f#"$T"/out1/} the same" ||
			bad "TALLY_JOBS=1 and 4: ${f#"$T"/out1/} differs"
	done
	;;
ranks-*)
	sizes="16 32 64" kernels=300
	# the page's lane budget (512) is passed from 128 ranks of 4 lanes: its cost past it matters
	[ "$CASE" = ranks-report ] && sizes="64 128 256" kernels=30
	for n in $sizes; do
		ranks "$T/a$n" $n 1 $kernels
		[ "$CASE" = ranks-compare ] && ranks "$T/b$n" $n 1000
	done
	case $CASE in
	ranks-stats) measure "tally stats DIR" "$sizes" "$TALLY stats $T/a@" ;;
	ranks-gaps) measure "tally stats -r gpu_gaps DIR" "$sizes" "$TALLY stats -r gpu_gaps $T/a@" ;;
	ranks-report)
		measure "tally report DIR" "$sizes" "$TALLY report -q --force --buckets 256 -o $T/p.html $T/a@"
		;;
	ranks-compare) measure "tally compare DIR DIR2" "$sizes" "$TALLY compare $T/a@ $T/b@" ;;
	ranks-merge) measure "tally merge DIR" "$sizes" "$TALLY merge -q --force -o $T/m.tally $T/a@" ;;
	ranks-kineto) measure "tally export -f kineto DIR" "$sizes" "$TALLY export -q --force -f kineto -o $T/k $T/a@" ;;
	ranks-partial)
		for n in $sizes; do
			mkdir -p "$T/s$n"
			g=0
			while [ $g -lt $((n / 8)) ]; do
				set --
				for i in 0 1 2 3 4 5 6 7; do set -- "$@" "$T/a$n/rank$((8 * g + i)).tally"; done
				"$TALLY" stats --partial -o "$T/s$n/sum$g.tsum" "$@" 2>/dev/null
				g=$((g + 1))
			done
		done
		measure "tally stats SUMMARIES" "$sizes" "$TALLY stats $T/s@"
		;;
	*) skip "no case $CASE" ;;
	esac
	;;
streams-*)
	sizes="1024 2048 4096"
	for n in $sizes; do
		"$TESTSRC" -o "$T/s$n.tally" --kernels $((2 * n)) --streams $n --pool 512 >/dev/null
	done
	case $CASE in
	streams-compare) measure "compare (streams)" "$sizes" "$TALLY compare $T/s@.tally $T/s@.tally" ;;
	streams-chrome)
		measure "export -f chrome (streams)" "$sizes" \
			"$TALLY export -q --force -f chrome -o $T/x.json $T/s@.tally"
		;;
	streams-perfetto)
		"$TALLY" export --help 2>&1 | grep -q '^  perfetto' || skip "built without protobuf-c"
		measure "export -f perfetto (streams)" "$sizes" \
			"$TALLY export -q --force -f perfetto -o $T/x.pftrace $T/s@.tally"
		;;
	streams-gaps) measure "stats -r gpu_gaps (streams)" "$sizes" "$TALLY stats -r gpu_gaps $T/s@.tally" ;;
	streams-kineto)
		measure "export -f kineto (streams)" "$sizes" "$TALLY export -q --force -f kineto -o $T/kd $T/s@.tally"
		;;
	streams-report)
		measure "report (streams)" "$sizes" \
			"$TALLY report -q --force --buckets 1024 -o $T/p.html $T/s@.tally"
		;;
	*) skip "no case $CASE" ;;
	esac
	;;
allocations)
	sizes="4096 8192 16384"
	for n in $sizes; do
		"$TESTSRC" -o "$T/m$n.tally" --kernels 10 --mem-allocs $n --pool 512 >/dev/null
	done
	measure "stats -r cuda_gpu_mem_usage (aligned allocations)" "$sizes" \
		"$TALLY stats -r cuda_gpu_mem_usage $T/m@.tally"
	measure "export -f chrome (aligned allocations)" "$sizes" \
		"$TALLY export -q --force -f chrome -o $T/x.json $T/m@.tally"
	;;
memory-*)
	[ -x /usr/bin/time ] || skip "no GNU time to measure peak memory"
	if [ "$CASE" = memory-ranks ]; then
		sizes="16 32 64"
		for n in $sizes; do ranks "$T/a$n" $n 1 20000; done
		memory "merge DIR: memory" 1.25 "$sizes" "$TALLY merge -q --force -o $T/m.tally $T/a@"
		memory "stats -r gpu_gaps DIR: memory" 1.25 "$sizes" "$TALLY stats -r gpu_gaps $T/a@"
		memory "stats DIR: memory" 2.5 "$sizes" "$TALLY stats $T/a@"
		memory "compare DIR DIR: memory" 2.5 "$sizes" "$TALLY compare $T/a@ $T/a@"
		memory "report DIR: memory" 2.5 "$sizes" "$TALLY report -q --force -o $T/p.html $T/a@"
	elif [ "$CASE" = memory-lanes ]; then
		sizes="256 512 1024"
		for n in $sizes; do ranks "$T/a$n" $n 1 30; done
		memory "report DIR past the lane budget: memory" 1.5 "$sizes" \
			"$TALLY report -q --force -o $T/p.html $T/a@"
	else
		skip "no case $CASE"
	fi
	;;
*) skip "no case $CASE" ;;
esac
finish "test-scale $CASE"
