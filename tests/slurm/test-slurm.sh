#!/bin/sh
# tally under a real Slurm (Debian's slurm-wlm, one node, started by cluster.sh), with the
# stand-in CUPTI, in both process-tracking modes at once (two clusters side by side):
#   proctrack/linuxproc  Slurm signals every process of the step (tally record and the program)
#   proctrack/cgroup     Slurm signals only the task (tally record): its forwarding must reach
#                        the program
# Per mode: srun -n2 gives each rank its file; through the recipe examples/slurm/job.sh,
# TALLY_RANKS=0 (--ranks 0 under srun) gives one file, and a job run past its --time=1 limit, a
# job ended by scancel, and a job warned by --signal=USR1@50 whose program does not handle USR1
# each leave every rank's trace COMPLETE, with the kernels the program says it launched before
# the signal (its last batch may be launched while the close runs, outside the window), and the
# recipe's own check-and-merge step runs in each (all.tally, COMPLETE, every rank's kernels); a
# program that never uses CUDA leaves no trace, and the recipe's job FAILS with a line saying so.
# The node has the machine's real CPU count (cluster.sh): the recipe as shipped is accepted
# with no option and with -n NCPU, and a job asking for more tasks than that is refused.
# About 100 s (slurmctld checks time limits every ~30 s).  Exits 77 where Slurm cannot start.
# Usage: test-slurm.sh TALLY FAKEAPP FAKECUPTI SRC
#   TALLY_SLURM_XFAIL="case ..." marks cases known to fail (reported XFAIL, not failing the run)
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 APP=$2 SRC=$4
export TALLY TALLY_CUPTI_PATH=$3 TALLY_SLICE_MS=500
T=$(mktemp -d)
chmod 755 "$T"
trap 'for m in linuxproc cgroup; do "$SRC/tests/slurm/cluster.sh" stop "$T/$m" 2>/dev/null; done; rm -rf "$T"' EXIT
N=200

# check MODE CASE DIR OUT WANT_FILES PYTHON-CONDITION: each rank*.tally of DIR, against the
# "launched K pid P" lines its process printed into OUT
check() {
	mode=$1 case=$2 dir=$3 out=$4 want=$5 cond=$6
	"$TALLY" check --json "$dir"/rank*.tally >"$dir.json" 2>/dev/null
	if python3 - "$dir" "$dir.json" "$out" "$want" "$cond" >"$dir.why" 2>&1 <<'PY'; then
import glob, json, os, re, sys
d, js, out, want, cond = sys.argv[1:]
files = sorted(glob.glob(os.path.join(d, "rank*.tally")))
text = open(out).read()
if [os.path.basename(f) for f in files] != ["rank%d.tally" % r for r in range(int(want))]:
    sys.exit("files: %s, want rank0..rank%d" % (files, int(want) - 1))
for f in json.load(open(js))["files"]:
    s = f["sections"][0]
    k, c, v = s["records"], s["ledger"]["counters"], s["verdict"]
    L = sum(int(n) for n, p in re.findall(r"launched (\d+) pid (\d+)", text) if int(p) == s["pid"])
    rank = os.path.basename(f["path"])[4:-6]
    if not eval(cond):
        sys.exit("%s: verdict %s, rank %s, kernels %d, launched %d, flush %s, signal %s, reasons %s"
                 % (f["path"], v, s["rank"], k["kernel"], L, s["ledger"].get("flush_path"),
                    c.get("signal"), [r["code"] for r in s["reasons"]]))
PY
		ok "$mode $case"
	else
		case " ${TALLY_SLURM_XFAIL:-} " in
		*" $case "*) echo "XFAIL $mode $case: $(cat "$dir.why")" ;;
		*) bad "$mode $case: $(cat "$dir.why")"; sed 's/^/    /' "$out" | grep -v launched | tail -20; return 1 ;;
		esac
	fi
}

wait_jobs() { # JOBID...: until none is pending or running (at most 180 s)
	i=0
	while [ -n "$(squeue -h -j "$(echo "$@" | tr ' ' ,)" -o %i 2>/dev/null)" ] && [ $i -lt 180 ]; do
		sleep 1
		i=$((i + 1))
	done
}

job_state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

# merged MODE CASE DIR: the recipe's all.tally is there, COMPLETE, with every rank's kernels
merged() {
	mode=$1 case=$2 dir=$3
	"$TALLY" check --json "$dir"/rank*.tally >"$dir.ranks.json" 2>/dev/null
	"$TALLY" check --json "$dir/all.tally" >"$dir.all.json" 2>/dev/null
	if [ -f "$dir/all.tally" ] && python3 - "$dir.ranks.json" "$dir.all.json" >"$dir.mwhy" 2>&1 <<'PY'; then
import json, sys
ranks, merged = (json.load(open(p))["files"] for p in sys.argv[1:])
parts = [s for f in ranks for s in f["sections"]]
secs = merged[0]["sections"]
kern = lambda ss: sum(s["records"]["kernel"] for s in ss)
if len(secs) != len(parts) or kern(secs) != kern(parts) or any(s["verdict"] != "COMPLETE" for s in secs):
    sys.exit("all.tally: %d sections, %d kernels, verdicts %s; the ranks: %d sections, %d kernels"
             % (len(secs), kern(secs), [s["verdict"] for s in secs], len(parts), kern(parts)))
PY
		ok "$mode $case: the recipe checked and merged (all.tally COMPLETE, every rank's kernels)"
	else
		bad "$mode $case: the recipe's merge: $(cat "$dir.mwhy" 2>/dev/null || echo no all.tally)"
	fi
}

# The cases of one mode, on its own cluster; prints ok/FAIL lines; returns 1 on a failure.
run_mode() {
	m=$1 C=$T/$1 fail=0
	export SLURM_CONF=$C/slurm.conf
	D=$C/work
	mkdir -p "$D"
	cd "$D" || return 1
	job="$SRC/examples/slurm/job.sh"
	# the recipe as shipped fits the real node: no option, and one task per CPU; more is refused
	ncpu=$(nproc)
	sbatch --test-only "$job" true >/dev/null 2>&1 && sbatch --test-only -N1 -n"$ncpu" "$job" true >/dev/null 2>&1 &&
		ok "$m the recipe is accepted as shipped, and with -N1 -n$ncpu (the node's CPUs)" ||
		bad "$m the recipe is refused on a $ncpu-CPU node"
	sbatch --test-only -N1 -n$((ncpu * 2)) "$job" true >/dev/null 2>&1 &&
		bad "$m -n$((ncpu * 2)) accepted on a $ncpu-CPU node: the node is not the machine" ||
		ok "$m -n$((ncpu * 2)) refused on a $ncpu-CPU node"
	# the slow ones first, in parallel: time limit, scancel, USR1 warning
	tl=$(sbatch --parsable -N1 -n2 --time=1 -o "$D/tl.out" --export=ALL,TRACES="$D/tl" \
		"$job" "$APP" forever $N)
	cn=$(sbatch --parsable -N1 -n2 -o "$D/cancel.out" --export=ALL,TRACES="$D/cancel" \
		"$job" "$APP" forever $N)
	u1=$(sbatch --parsable -N1 -n2 --time=1 --signal=USR1@50 -o "$D/usr1.out" \
		--export=ALL,TRACES="$D/usr1" "$job" "$APP" forever $N)

	mkdir -p "$D/srun"
	srun -N1 -n2 "$TALLY" record -o "$D/srun/rank%q{SLURM_PROCID}" -- "$APP" exit 1000 \
		>"$D/srun.out" 2>&1
	check $m srun-two-ranks "$D/srun" "$D/srun.out" 2 \
		'v == "COMPLETE" and s["rank"] == "SLURM_PROCID=" + rank and k["kernel"] == L == 1000'
	# the rank-0-only recipe: examples/slurm/job.sh with TALLY_RANKS=0 (rank 1 runs untouched)
	sbatch --wait -N1 -n2 -o "$D/rank0.out" --export=ALL,TRACES="$D/rank0",TALLY_RANKS=0,FAKEAPP_UNTRACED_OK=1 \
		"$job" "$APP" exit 1000 >/dev/null
	check $m ranks-0 "$D/rank0" "$D/rank0.out" 1 \
		'v == "COMPLETE" and s["rank"] == "SLURM_PROCID=0" and k["kernel"] == L == 1000'
	[ "$(grep -c "launched 1000" "$D/rank0.out")" = 2 ] && ok "$m ranks-0: rank 1 ran untraced" ||
		bad "$m ranks-0: rank 1 did not run"
	merged $m ranks-0 "$D/rank0"
	# a program that never uses CUDA: no rank writes a trace, and the job fails, saying so
	nt=$(sbatch --parsable --wait -N1 -n2 -o "$D/notrace.out" --export=ALL,TRACES="$D/notrace" "$job" true)
	nt_rc=$?
	[ "$nt_rc" -ne 0 ] && [ "$(job_state "${nt%%;*}")" = FAILED ] &&
		grep -q "^job.sh: FAILED: no rank wrote a trace into $D/notrace" "$D/notrace.out" &&
		! grep -q "No such file" "$D/notrace.out" &&
		ok "$m no-trace: the job FAILED (exit $nt_rc), saying no rank wrote a trace" ||
		bad "$m no-trace: exit $nt_rc, state $(job_state "${nt%%;*}"): $(tail -n 3 "$D/notrace.out")"

	# scancel once both ranks have launched three times each (the event, not a pause)
	i=0
	until [ "$(grep -o 'launched [0-9]* pid [0-9]*' "$D/cancel.out" 2>/dev/null | awk '{print $4}' | sort | uniq -c | awk '$1 >= 3' | wc -l)" = 2 ] ||
		[ $i -ge 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	scancel "$cn"
	t0=$(date +%s)
	wait_jobs "$tl" "$cn" "$u1"
	echo "     $m: batch jobs done $(($(date +%s) - t0)) s after scancel"
	[ "$(job_state "$tl")" = TIMEOUT ] && ok "$m time-limit: job state TIMEOUT" ||
		bad "$m time-limit: job state $(job_state "$tl")"
	# the program's last batch may be launched while the close runs, outside the collection
	# window (the interrupted thread waits at most 100 ms for the close: docs/collector.md)
	check $m time-limit "$D/tl" "$D/tl.out" 2 \
		'v == "COMPLETE" and L > 0 and k["kernel"] in (L, L - '$N') and s["ledger"]["flush_path"] == "signal" and c["signal"] == 15'
	check $m scancel "$D/cancel" "$D/cancel.out" 2 \
		'v == "COMPLETE" and L > 0 and k["kernel"] in (L, L - '$N') and s["ledger"]["flush_path"] == "signal" and c["signal"] == 15'
	check $m usr1 "$D/usr1" "$D/usr1.out" 2 \
		'v == "COMPLETE" and L > 0 and k["kernel"] in (L, L - '$N') and s["ledger"]["flush_path"] == "signal" and c["signal"] == 10'
	# the recipe lived through SIGTERM (time limit, scancel) and merged; and after USR1
	for c in tl:time-limit cancel:scancel usr1:usr1; do
		merged $m "${c#*:}" "$D/${c%%:*}"
	done
	for c in tl:time-limit cancel:scancel; do
		grep -q "^job.sh: SIGTERM" "$D/${c%%:*}.out" && ok "$m ${c#*:}: the recipe saw SIGTERM and went on" ||
			bad "$m ${c#*:}: no SIGTERM seen by the recipe"
	done
	# the program died of USR1 (tally record passes its status on), before the time limit
	[ "$(job_state "$u1")" != TIMEOUT ] && grep -q "signal 10\|SIGUSR1\|status 138" "$D/usr1.out" &&
		ok "$m usr1: the program died of SIGUSR1, before the limit" ||
		bad "$m usr1: job $(job_state "$u1"), no death by USR1 reported"
	[ "$fail" -eq 0 ]
}

for m in linuxproc cgroup; do
	mkdir -p "$T/$m"
	KILLWAIT=5 "$SRC/tests/slurm/cluster.sh" start "$T/$m" $m >/dev/null
	rc=$?
	[ $rc -eq 77 ] && skip "Slurm cannot start here (tests/slurm/cluster.sh)"
	[ $rc -eq 0 ] || { bad "cluster ($m) did not start"; exit 1; }
done
echo "two clusters up (proctrack/linuxproc, proctrack/cgroup)"
t0=$(date +%s)
run_mode linuxproc >"$T/linuxproc.log" 2>&1 &
p1=$!
run_mode cgroup >"$T/cgroup.log" 2>&1 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
cat "$T/linuxproc.log" "$T/cgroup.log"
echo "all cases in $(($(date +%s) - t0)) s"
[ $r1 -eq 0 ] && [ $r2 -eq 0 ]
