#!/bin/sh
# Summaries made where the traces lie, combined on one node (docs/stats.md, "Summaries"), on a real
# single-node Slurm (cluster.sh): 12 rank traces (tally-testsrc, each its own RANK, one of them
# INCOMPLETE: CUPTI dropped records in it) are summarized
#   by one srun step of up to 4 tasks, one per CPU (each `tally stats --partial` over its share,
#   SLURM_PROCID), and
#   by a Slurm array of 3 (each its share, SLURM_ARRAY_TASK_ID), both through the recipe
#   examples/slurm/summarize.sh,
# and the summaries of each way are combined by `tally stats`, `compare` and `report` on this
# node.  The combined stats must equal the direct `tally stats` of the same traces: the same
# verdict and records, the same rows with equal counts, totals, minima, maxima and (to the
# printed digit) deviations, medians within the sketch's 0.39% of the exact ones; `compare` of the
# summaries against the traces must call every name the same.  About 30 s.  Exits 77 where Slurm
# cannot start.
# Usage: test-summaries.sh TALLY TESTSRC SRC
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 TESTSRC=$2 SRC=$3
T=$(mktemp -d)
chmod 755 "$T"
trap '"$SRC/tests/slurm/cluster.sh" stop "$T/cluster" 2>/dev/null; rm -rf "$T"' EXIT
N=12

mkdir -p "$T/traces" "$T/srun" "$T/array"
i=0
while [ $i -lt $N ]; do
	# rank 5 loses records (CUPTI drops half way through an idle stretch): INCOMPLETE
	extra=
	[ $i = 5 ] && extra="--idle-at 100:1:40"
	RANK=$i "$TESTSRC" -o "$(printf '%s/traces/rank%02d.tally' "$T" $i)" --kernels $((2000 + 100 * i)) \
		--memcpys 60 --names 12 --streams 3 --seed $((7 + i)) --pool 256 $extra >/dev/null ||
		bad "tally-testsrc rank $i"
	i=$((i + 1))
done

KILLWAIT=5 "$SRC/tests/slurm/cluster.sh" start "$T/cluster" linuxproc >/dev/null
rc=$?
[ $rc -eq 77 ] && skip "Slurm cannot start here (tests/slurm/cluster.sh)"
[ $rc -eq 0 ] || { bad "cluster.sh start: exit $rc"; finish test-summaries; }
export SLURM_CONF=$T/cluster/slurm.conf TALLY

# The recipe, both ways: a step of as many tasks as the node has CPUs, at most 4 (slurm.conf
# says the node's real count, and Slurm never starts a job asking for more: on a 2-CPU machine
# -n4 waited forever), and an array of 3.  A job that does not end in 2 minutes is a failure.
tasks=$(nproc)
[ "$tasks" -gt 4 ] && tasks=4
expect_rc "sbatch -n$tasks summarize.sh: srun -n$tasks, a summary per task" 0 env OUT="$T/srun" \
	timeout 120 sbatch --wait -N1 -n"$tasks" -o "$T/srun.out" --export=ALL \
	"$SRC/examples/slurm/summarize.sh" "$T/traces"
expect_rc "sbatch --array=0-2 summarize.sh: a summary per array task" 0 env OUT="$T/array" \
	timeout 120 sbatch --wait -N1 -n1 --array=0-2 -o "$T/array-%a.out" --export=ALL \
	"$SRC/examples/slurm/summarize.sh" "$T/traces"
[ "$(ls "$T"/srun/*.tsum 2>/dev/null | wc -l)" = "$tasks" ] && ok "srun: $tasks summaries" ||
	bad "srun: $(ls "$T/srun")"
[ "$(ls "$T"/array/*.tsum 2>/dev/null | wc -l)" = 3 ] && ok "array: 3 summaries" ||
	bad "array: $(ls "$T/array")"

# the direct figures, every report a summary carries
R=nvtx_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_kern_gb_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum
"$TALLY" stats -f json -r $R "$T/traces" >"$T/direct.json" 2>/dev/null
for way in srun array; do
	rc=0
	"$TALLY" stats -f json -r $R "$T/$way" >"$T/$way.json" 2>"$T/$way.err" || rc=$?
	[ $rc = 1 ] && ok "$way: combined stats exit 1 (rank 5 INCOMPLETE)" ||
		bad "$way: combined stats exit $rc: $(cat "$T/$way.err")"
	if python3 - "$T/direct.json" "$T/$way.json" >"$T/$way.why" 2>&1 <<'PY'; then
import json, sys
d, c = (json.load(open(p)) for p in sys.argv[1:3])
assert d["verdict"] == c["verdict"] == "INCOMPLETE", (d["verdict"], c["verdict"])
assert d["records"] == c["records"], (d["records"], c["records"])
assert c["medians"] == "sketch" and c["median_max_rel_error"] <= 1 / 256 + 1e-12
assert len(d["inputs"]) == 12 and sum(len(i["sections"]) for i in c["inputs"]) == 12
rows = 0
for rd, rc in zip(d["reports"], c["reports"], strict=True):
    assert rd["name"] == rc["name"]
    key = lambda r: json.dumps({k: v for k, v in r.items() if "(" not in k and "%" not in k}, sort_keys=True)
    dr, cr = ({key(r): r for r in x.get("rows", [])} for x in (rd, rc))
    assert dr.keys() == cr.keys(), (rd["name"], set(dr) ^ set(cr))
    for k in dr:
        a, b = dr[k], cr[k]
        for col in a:
            if col.startswith("Med"):
                assert abs(a[col] - b[col]) <= a[col] / 256 + 1e-9, (rd["name"], k, col, a[col], b[col])
            elif isinstance(a[col], float):
                assert abs(a[col] - b[col]) <= 1e-9 * max(1, abs(a[col])), (rd["name"], col, a[col], b[col])
            else:
                assert a[col] == b[col], (rd["name"], k, col, a[col], b[col])
        rows += 1
assert rows >= 20, rows
print(rows, "rows equal")
PY
		ok "$way: combined = direct ($(cat "$T/$way.why"))"
	else
		bad "$way: combined stats differ from the direct ones:"
		sed 's/^/    /' "$T/$way.why"
	fi
done

# the combined summaries in compare and report
rc=0
"$TALLY" compare -f json "$T/traces" "$T/srun" >"$T/compare.json" 2>"$T/compare.err" || rc=$?
# exit 5: rank 5 lost records, so both sides are UNUSABLE for timing; the names are still called
if [ $rc = 5 ] && python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["sketched"] and r["verdict"] == "unusable", (r["sketched"], r["verdict"])
assert r["names"] and all(n["call"] == "same" for n in r["names"]), [(n["name"], n["call"]) for n in r["names"] if n["call"] != "same"]
assert r["a"]["gpu_records"] == r["b"]["gpu_records"] > 0
' "$T/compare.json" 2>"$T/compare.why"; then
	ok "compare traces vs their summaries: UNUSABLE (rank 5), every name the same"
else
	bad "compare traces vs summaries (exit $rc): $(cat "$T/compare.err" "$T/compare.why")"
fi
expect_rc "report of the array's summaries" 0 "$TALLY" report -q -o "$T/page.html" "$T/array"
grep -q '"summaries":12' "$T/page.html" && ok "report: 12 sections from summaries" ||
	bad "report: the page does not say it came from 12 summaries"
finish test-summaries
