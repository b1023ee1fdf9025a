#!/bin/sh
# Outputs under a stop signal and under few descriptors (issue 35, item 5): every writer writes
# to a temporary name beside its target and renames it at the end; a SIGTERM, SIGINT or SIGHUP
# meanwhile must leave neither the target nor a temporary file, and end tally as the signal
# would (128 + N).  At RLIMIT_NOFILE=16 every reader works on a directory of 64 ranks; with
# fewer than it needs, the error names the limit and the fix.
# Usage: test-outputs-stopped.sh TALLY TESTSRC CRAFT
set -u
TALLY=$1 TESTSRC=$2 CRAFT=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"

# 600,000 records: long enough for a signal to come while each writer writes
for k in 1 2; do
	"$TESTSRC" -o "$T/big$k.tally" --kernels 300000 --names 64 --streams 4 --pool 4096 \
		--seed $k >/dev/null || bad "tally-testsrc"
done
mv "$T/big1.tally" "$T/big.tally"

# A background job of a non-interactive shell starts with SIGINT and SIGQUIT ignored (POSIX), and
# tally keeps an ignored signal ignored: python puts them back to their default, as a terminal's
# job has them, then becomes tally (the same pid).
DEFAULTS='import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT):
    signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])'

# stopped SIG NAME ARGS...: tally ARGS (writing into $T/out), sent SIG 0.3 s in
stopped() {
	sig=$1 name=$2
	shift 2
	rm -rf "$T/out"
	mkdir "$T/out"
	python3 -c "$DEFAULTS" "$TALLY" "$@" &
	pid=$!
	sleep 0.3
	if ! kill -0 $pid 2>/dev/null; then
		wait $pid
		skips=$((skips + 1))
		echo "skip $name: done before the signal"
		return
	fi
	kill -s "$sig" $pid
	wait $pid
	rc=$?
	# no temporary file, and no target but CSV's directory of the files it finished
	left=$(find "$T/out" -mindepth 1 \( -name '*.tally-tmp-*' -o ! -path "$T/out/csv*" \))
	case $sig in TERM) want=143 ;; INT) want=130 ;; HUP) want=129 ;; QUIT) want=131 ;; esac
	tmp=$(find "$T/out" -name '*.tally-tmp-*')
	if [ "$rc" = 0 ] && [ -z "$tmp" ]; then
		# it finished as the signal came (its last output in place, the stop signals wait:
		# docs/export.md, "Safe outputs"; under ASan the leak check at exit holds them back
		# too): its output is whole, and no temporary file is left
		skips=$((skips + 1))
		echo "skip $name: done as the signal came"
	elif [ "$rc" = "$want" ] && [ -z "$left" ]; then
		ok "$name: SIG$sig ends it ($rc) and leaves no temporary file and no target"
	else
		bad "$name: SIG$sig: exit $rc (want $want), left: $left"
	fi
}

stopped TERM "export chrome" export -q -f chrome -o "$T/out/t.json" "$T/big.tally"
stopped TERM "export sqlite" export -q -f sqlite -o "$T/out/t.sqlite" "$T/big.tally"
stopped HUP "export perfetto" export -q -f perfetto -o "$T/out/t.pftrace" "$T/big.tally"
stopped TERM "export csv (a directory of files)" export -q -f csv -o "$T/out/csv" "$T/big.tally"
stopped TERM "merge" merge -q -o "$T/out/m.tally" "$T/big.tally" "$T/big2.tally"
stopped QUIT "report" report -q -o "$T/out/p.html" "$T/big.tally" "$T/big2.tally"
stopped TERM "stats -o" stats -r all -o "$T/out/s.txt" "$T/big.tally"

stopped INT "export chrome (Ctrl-C)" export -q -f chrome -o "$T/out/t.json" "$T/big.tally"

# ---- descriptors ---------------------------------------------------------------------------------
"$CRAFT" files "$T/ranks" 64 || bad "tally-craft files"
for args in "check @D" "stats -r all @D" "report -q -o @O.html @D" "export -q -f chrome -o @O.json @D" \
	"export -q -f sqlite -o @O.sqlite @D" "export -q -f csv -o @O.csv @D" "merge -q -o @O.tally @D" \
	"compare @D @D" "stats --partial -o @O.tsum @D"; do
	set -- $(echo "$args" | sed "s|@D|$T/ranks|g; s|@O|$T/nofile|g")
	rm -rf "$T"/nofile*
	(ulimit -n 16 && exec "$TALLY" "$@") >/dev/null 2>"$T/err"
	rc=$?
	[ "$rc" = 0 ] && ok "RLIMIT_NOFILE=16: $1 $2 works over 64 ranks" ||
		bad "RLIMIT_NOFILE=16: $*: exit $rc: $(head -c 300 "$T/err")"
done
rm -rf "$T"/nofile*
(ulimit -n 5 && exec "$TALLY" export -q -f csv -o "$T/nofile.csv" "$T/ranks") >/dev/null 2>"$T/err"
rc=$?
[ "$rc" != 0 ] && grep -q "RLIMIT_NOFILE" "$T/err" && grep -q "ulimit -n" "$T/err" &&
	ok "RLIMIT_NOFILE=5: the error names the limit and the fix (exit $rc)" ||
	bad "RLIMIT_NOFILE=5: exit $rc: $(cat "$T/err")"
finish
