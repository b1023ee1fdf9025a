#!/bin/sh
# Golden tests: the exact text of `tally check`, `tally stats -r R` (every report) and
# `tally export --format csv` (every file) for every trace in tests/data/, kept in tests/golden/
# and compared.  A change to any output is a reviewed change to a golden file.
#
#   tests/golden/run.sh TALLY            compare (ctest: golden)
#   tests/golden/run.sh --update TALLY   rewrite the golden files, then review `git diff tests/golden`
#
# Outputs over 200 KB (the GPU traces' per-record reports and CSVs) are kept as their first 300
# lines, their line count and their SHA-256: still exact, and still readable in review.
# The exit status of each command is kept too.  Colour is off (not a terminal).
# Every output is made twice: with TALLY_JOBS=1 (the readers on one thread) and with the readers'
# default (all cores, TALLY_JOBS=4 when the machine has fewer): both must be the golden file, byte
# for byte.
set -eu
. "$(dirname "$0")/../lib.sh"
update=0
if [ "$1" = --update ]; then
	update=1
	shift
fi
TALLY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=$HERE/../data
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export TZ=UTC LC_ALL=C NO_COLOR=1

# keep FILE: the golden form of a command's output (in place)
keep() {
	if [ "$(wc -c <"$1")" -gt 204800 ]; then
		{
			head -n 300 "$1"
			echo "... ($(wc -l <"$1") lines in all, sha256 $(sha256sum <"$1" | cut -d' ' -f1))"
		} >"$1.k"
		mv "$1.k" "$1"
	fi
}

reports=$("$TALLY" stats --help | sed -n '/^reports:/,$p' | awk 'NR > 1 && NF { print $1 }')
# many threads even on a small machine, so that the parallel reading is exercised
[ "$(nproc)" -ge 4 ] && parallel_jobs= || parallel_jobs=4
cd "$DATA" # paths in the outputs are then data-relative: the same on every machine
run_all() { # DIR: every output of every trace under DIR/NAME/
	for trace in *.tally; do
		name=${trace%.tally}
		d=$1/$name
		mkdir -p "$d"
		rc=0
		"$TALLY" check "$trace" >"$d/check.txt" 2>&1 || rc=$?
		echo "exit $rc" >>"$d/check.txt"
		for r in $reports; do
			rc=0
			"$TALLY" stats -r "$r" "$trace" >"$d/stats-$r.txt" 2>&1 || rc=$?
			echo "exit $rc" >>"$d/stats-$r.txt"
			keep "$d/stats-$r.txt"
		done
		rc=0
		"$TALLY" export -q -f csv -o "$1/csv-$name" "$trace" >/dev/null 2>&1 || rc=$?
		for f in "$1/csv-$name"/*.csv; do
			cp "$f" "$d/csv-$(basename "$f")"
			keep "$d/csv-$(basename "$f")"
		done
		echo "exit $rc" >"$d/csv-exit.txt"
	done
	rm -rf "$1"/csv-*
}
TALLY_JOBS=1 run_all "$OUT/serial"
TALLY_JOBS=$parallel_jobs run_all "$OUT/parallel"

if [ $update = 1 ]; then
	for d in "$OUT"/serial/*/; do
		name=$(basename "$d")
		rm -rf "${HERE:?}/$name"
		cp -r "$d" "$HERE/$name"
	done
	echo "golden files rewritten: review them with 'git diff tests/golden'"
	exit 0
fi
for d in "$OUT"/serial/*/; do
	name=$(basename "$d")
	if ! diff -ru "$HERE/$name" "$d" >"$OUT/$name.diff"; then
		bad "golden $name: the output changed (tests/golden/run.sh --update TALLY rewrites):"
		head -n 80 "$OUT/$name.diff"
	else
		ok "golden $name"
	fi
	if ! diff -ru "$d" "$OUT/parallel/$name" >"$OUT/$name.jobs.diff"; then
		bad "golden $name: TALLY_JOBS=1 and TALLY_JOBS=${parallel_jobs:-default} differ:"
		head -n 80 "$OUT/$name.jobs.diff"
	else
		ok "golden $name: the same with TALLY_JOBS=1 and ${parallel_jobs:-default}"
	fi
done
finish
