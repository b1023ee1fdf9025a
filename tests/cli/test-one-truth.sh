#!/bin/sh
# The measured cases of "one truth" (issue 31, items 2-7 of "Measured"), each a check that failed
# before the one model and passes with it; the figures expected come from how each kept trace
# was made (tests/data/README), not from tally's output.  The whole-model cross-checks over every
# trace are tests/cli/test-consistency.py's.
#
#   test-one-truth.sh TALLY SRC_TESTS_DIR
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1
SRC=$2
D=$SRC/data
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LC_ALL=C.UTF-8 TZ=UTC NO_COLOR=1

# json FILE EXPR...: python over the JSON in FILE (bound to d), printing what EXPR says
json() {
	_f=$1
	shift
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $*" "$_f"
}

# widest FILE: the widest line of FILE in display columns (UTF-8 code points)
widest() {
	python3 -c "import sys; print(max((len(l.rstrip('\r\n')) for l in open(sys.argv[1], encoding='utf-8')), default=0))" "$1"
}

# ---- 7. order and width -------------------------------------------------------------------------
# `stats -r a,b,c` writes the reports in the order asked, in every format; a table fits a
# terminal (the last column cut to what the terminal's width leaves it) and, to a file, call
# stacks are cut at a frame to 120 columns; CSV keeps them whole.
"$TALLY" stats -r cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum "$D/gpu-h200.tally" >"$T/order.txt" 2>&1
got=$(sed -n 's/^ \*\* .*(\([a-z_]*\)):$/\1/p' "$T/order.txt" | tr '\n' ' ')
[ "$got" = "cuda_gpu_kern_sum cuda_api_sum nvtx_sum " ] && ok "7: -r a,b,c in the order asked" ||
	bad "7: -r a,b,c gave the reports in the order '$got'"
"$TALLY" stats -f json -r nvtx_sum -r gpu_gaps,cuda_gpu_kern_sum "$D/gpu-h200.tally" >"$T/order.json" 2>/dev/null
got=$(json "$T/order.json" "print(' '.join(r['name'] for r in d['reports']))")
[ "$got" = "nvtx_sum gpu_gaps cuda_gpu_kern_sum" ] && ok "7: -f json, -r given twice: the order asked" ||
	bad "7: -f json gave '$got'"
"$TALLY" stats -r gpu_idle_why "$D/standin-sampled.tally" >"$T/why.txt" 2>&1
"$TALLY" stats -f csv -r gpu_idle_why "$D/standin-sampled.tally" >"$T/why.csv" 2>&1
w=$(widest "$T/why.txt")
[ "$w" -le 300 ] && ok "7: gpu_idle_why to a file: no line over 300 columns (widest $w)" ||
	bad "7: gpu_idle_why to a file: a line of $w columns"
grep -q ' <- …' "$T/why.txt" && ok "7: a cut stack ends at a frame, in ' <- …'" ||
	bad "7: no stack cut at a frame"
python3 - "$T/why.csv" <<'PY' && ok "7: CSV keeps every stack whole" || bad "7: CSV cut a stack"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith('#') and l.strip())]
detail = [r[-1] for r in rows[1:]]
sys.exit(0 if max(len(x) for x in detail) > 120 and not any(x.endswith('\u2026') for x in detail) else 1)
PY
if command -v script >/dev/null 2>&1; then
	script -qec "stty cols 160; '$TALLY' stats -r gpu_idle_why,cuda_gpu_kern_sum '$D/gpu-h200-torch.tally'" \
		/dev/null 2>/dev/null | tr -d '\r' >"$T/tty.txt"
	w=$(widest "$T/tty.txt")
	[ -s "$T/tty.txt" ] && [ "$w" -le 160 ] && ok "7: in a terminal 160 wide, every line fits (widest $w)" ||
		bad "7: in a terminal 160 wide, a line of $w columns"
else
	skipped "7: no script(1) to give tally a terminal"
fi

finish test-one-truth.sh
