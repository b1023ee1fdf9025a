#!/bin/sh
# How tally's readers scale: with the number of ranks (N rank traces, each its own RANK) and with
# the number of records in one trace.  For each command it prints cpu-seconds (user + system) and
# peak RSS, and the growth per doubling of the input: about 2 for a linear command, 1 for one
# whose memory is bounded.  Not a test (tests/cli/test-scale.sh is the ctest one): a table.
#
# Usage: bench/bench-scale.sh [BUILD_DIR]
# Environment:
#   RANKS    rank counts (default "64 512 2048"); each rank is RANK_KERNELS kernel launches and
#            RANK_COPIES copies: 2 records each (API call + GPU record), 10,250 records by default
#   RECORDS  record counts of the one-trace series (default "1000000 10000000"; add 50000000 for
#            the large case: about 3 minutes to make, 350 MB of trace, and minutes per command)
#   ONLY     "ranks" or "records": run one series
#   BENCH_DIR  where the traces go (default $TMPDIR or /tmp); BENCH_KEEP=1 keeps them
#   TALLY_JOBS  passed through (threads of the readers; default: every core)
set -eu
B=${1:-build}
RANKS=${RANKS:-"64 512 2048"}
RECORDS=${RECORDS:-"1000000 10000000"}
RANK_KERNELS=${RANK_KERNELS:-5000}
RANK_COPIES=${RANK_COPIES:-125}
TALLY=$(realpath "$B/src/cli/tally")
TESTSRC=$(realpath "$B/tests/tally-testsrc")
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}/tally-bench-scale.$$
TIME=/usr/bin/time
[ -x "$TALLY" ] && [ -x "$TESTSRC" ] || { echo "bench-scale: build first (cmake --build $B)" >&2; exit 2; }
[ -x "$TIME" ] || { echo "bench-scale: needs GNU time at $TIME" >&2; exit 2; }
mkdir -p "$DIR"
trap '[ "${BENCH_KEEP:-}" ] || rm -rf "$DIR"' EXIT

# rank traces 0..n-1 into dir, seed s (the B side of compare differs in its seed)
make_ranks() { # dir n seed
	mkdir -p "$1"
	i=0
	while [ "$i" -lt "$2" ]; do
		f=$(printf '%s/rank%05d.tally' "$1" "$i")
		[ -s "$f" ] || RANK=$i "$TESTSRC" -o "$f" --kernels "$RANK_KERNELS" \
			--memcpys "$RANK_COPIES" --names 20 --streams 4 --seed "$(($3 * 100000 + i))" \
			--pool 256 >/dev/null
		i=$((i + 1))
	done
}

# one run: "cpu_s rss_mib"; failures are shown and counted, not fatal to the table
measure() {
	# an exit status 1 (INCOMPLETE, or compare's "differs") is still a measurement
	"$TIME" -f '%U %S %M' -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || true
	tail -n1 "$DIR/time" | awk '{ printf "%.2f %.1f\n", $1 + $2, $3 / 1024 }'
}

# A row per command and size: cpu s, RSS, and growth per doubling from the previous size.
PREV="$DIR/prev"
: >"$PREV"
row() { # series command size cpu rss
	p=$(awk -v c="$2" '$1 == c { print $2, $3, $4 }' "$PREV")
	if [ -n "$p" ]; then
		set -- "$@" $p
		growth=$(echo "$3 $4 $5 $6 $7 $8" | awk '{
			d = log($1 / $4) / log(2)
			cr = ($5 > 0 && d > 0) ? exp(log($2 / $5) / d) : 0
			rr = ($6 > 0 && d > 0) ? exp(log($3 / $6) / d) : 0
			printf "%5.2f x %6.2f x", cr, rr }')
	else
		growth="      -        -"
	fi
	printf '| %-7s | %-34s | %9s | %8s | %8s | %s |\n' "$1" "$2" "$3" "$4" "$5" "$growth"
	grep -v "^$2 " "$PREV" >"$PREV.t" || true
	echo "$2 $3 $4 $5" >>"$PREV.t"
	mv "$PREV.t" "$PREV"
}

# the page in headless Chromium: drawn (data-tally-ready), no script error, how long
render() { # PAGE WHAT
	c=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$c" ] || { echo "(no chromium: the page of $2 not rendered)"; return; }
	t0=$(date +%s.%N)
	timeout 600 "$c" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--user-data-dir="$DIR/profile" --virtual-time-budget=30000 --dump-dom "file://$1" \
		>"$DIR/page.dom" 2>/dev/null
	t1=$(date +%s.%N)
	if grep -q 'data-tally-ready="1"' "$DIR/page.dom" &&
		grep -q '<pre id="tally-errors" hidden=""></pre>' "$DIR/page.dom"; then
		echo "page of $2 in headless Chromium: drawn, no script error, $(echo "$t1 - $t0" | bc) s wall," \
			"$(grep -o 'data-tally-ms="[0-9]*"' "$DIR/page.dom") of script"
	else
		echo "page of $2 in headless Chromium: NOT drawn or script errors"
	fi
}

header() {
	echo "| series  | command                            |      size |    cpu s |  RSS MiB | cpu, RSS per doubling |"
	echo "| ------- | ---------------------------------- | --------- | -------- | -------- | --------------------- |"
}

echo "tally $("$TALLY" --version | cut -d' ' -f2-), $(nproc) CPU(s), TALLY_JOBS=${TALLY_JOBS:-default}"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [ "${ONLY:-ranks}" = ranks ]; then
	header
	for n in $RANKS; do
		make_ranks "$DIR/a$n" "$n" 1
		make_ranks "$DIR/b$n" "$n" 2
		rec=$((n * (2 * RANK_KERNELS + 2 * RANK_COPIES)))
		for cmd in stats gaps report compare merge; do
			case $cmd in
			stats) set -- "$TALLY" stats "$DIR/a$n" ;;
			gaps) set -- "$TALLY" stats -r gpu_gaps "$DIR/a$n" ;;
			report) set -- "$TALLY" report -q --force -o "$DIR/page$n.html" "$DIR/a$n" ;;
			compare) set -- "$TALLY" compare "$DIR/a$n" "$DIR/b$n" ;;
			merge) set -- "$TALLY" merge -q --force -o "$DIR/merged$n.tally" "$DIR/a$n" ;;
			esac
			r=$(measure "$@")
			row ranks "$cmd" "$n" $r
		done
		rm -f "$DIR/merged$n.tally"
		echo "|         | ($n ranks: $rec records; page $(stat -c %s "$DIR/page$n.html") bytes)"
	done
	echo
	render "$DIR/page$n.html" "$n ranks"
	echo
fi

if [ "${ONLY:-records}" = records ]; then
	: >"$PREV"
	header
	for r in $RECORDS; do
		t=$DIR/one$r.tally
		"$TESTSRC" -o "$t" --kernels $((r / 2)) --names 64 --streams 4 --pool 4096 >/dev/null
		for cmd in stats stats-all gaps report export-chrome export-perfetto export-sqlite merge compare; do
			case $cmd in
			stats) set -- "$TALLY" stats "$t" ;;
			stats-all) set -- "$TALLY" stats -r all -o "$DIR/all.txt" --force "$t" ;;
			gaps) set -- "$TALLY" stats -r gpu_gaps "$t" ;;
			report) set -- "$TALLY" report -q --force -o "$DIR/one.html" "$t" ;;
			export-chrome) set -- "$TALLY" export -q -f chrome --force -o "$DIR/one.json" "$t" ;;
			export-perfetto) set -- "$TALLY" export -q -f perfetto --force -o "$DIR/one.pftrace" "$t" ;;
			export-sqlite) set -- "$TALLY" export -q -f sqlite --force -o "$DIR/one.sqlite" "$t" ;;
			merge) set -- "$TALLY" merge -q --force -o "$DIR/one-merged.tally" "$t" ;;
			compare) set -- "$TALLY" compare "$t" "$t" ;;
			esac
			m=$(measure "$@")
			row records "$cmd" "$r" $m
			rm -f "$DIR/all.txt" "$DIR/one.json" "$DIR/one.pftrace" "$DIR/one.sqlite" \
				"$DIR/one-merged.tally"
		done
		echo "|         | ($r records: $(stat -c %s "$t") bytes)"
		rm -f "$t"
	done
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
