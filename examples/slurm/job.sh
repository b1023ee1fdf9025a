#!/bin/bash
# tally under Slurm: every rank records its own trace on the shared filesystem, named by its rank;
# at the end the job checks them (COMPLETE, or what is missing, when and why) and merges them
# onto one timeline.  Submit with the program to record, giving the job its shape on sbatch's
# command line (this script asks for no node, task or GPU count, so it fits any partition):
#
#   sbatch -N2 --ntasks-per-node=4 --gpus-per-node=4 examples/slurm/job.sh python train.py
#   TALLY_RANKS=0 sbatch -N1 -n2 examples/slurm/job.sh python train.py     # rank 0 only
#
# This is the script tally's CI runs, as it is, against a real Slurm on a 2-CPU node
# (tests/slurm/test-slurm.sh), with a stand-in CUPTI: per-rank files, rank 0 only, a job killed
# at its time limit, scancel, and a --signal=USR1@N warning the program does not handle.  In
# every case each rank's trace is closed (tally handles SIGTERM, SIGINT, SIGHUP, SIGUSR1/2,
# SIGQUIT, ... as exit paths), so no --signal line is needed for tally's sake.
#
# A job ended by scancel or by its time limit gets SIGTERM (this script and the tasks), then
# SIGKILL after the cluster's KillWait (30 s by default).  This script lives through the SIGTERM:
# it waits for srun to return (the ranks close their traces within milliseconds), then checks and
# merges them inside that grace.  When no rank wrote a trace (a program that never used CUDA,
# tally missing on the nodes), the job fails with a line that says so.
set -u
TALLY=${TALLY:-tally}                  # or /opt/tally/bin/tally, the unpacked bundle
TRACES=${TRACES:-$SLURM_SUBMIT_DIR/traces/$SLURM_JOB_ID}
mkdir -p "$TRACES"
trap 'echo "job.sh: SIGTERM (scancel or the time limit): checking and merging the traces" >&2' TERM
srun "$TALLY" record ${TALLY_RANKS:+--ranks "$TALLY_RANKS"} \
	-o "$TRACES/rank%q{SLURM_PROCID}" -- "$@" &
srun_pid=$!
# a trapped signal ends `wait` early: wait again until srun itself has returned
while :; do
	wait "$srun_pid"
	status=$?
	kill -0 "$srun_pid" 2>/dev/null || break
done
# Slurm may repeat SIGTERM: the check and the merge ignore it (SIGKILL still ends them at KillWait)
trap '' TERM
# No trace at all is a failed job, whatever the program's status: nothing was recorded
shopt -s nullglob
traces=("$TRACES"/rank*.tally)
if [ ${#traces[@]} -eq 0 ]; then
	echo "job.sh: FAILED: no rank wrote a trace into $TRACES: the program never started CUDA" \
		"under tally, or tally could not record on the nodes (its lines above say why;" \
		"'srun $TALLY doctor -o $TRACES/' checks a node)" >&2
	exit $((status ? status : 1))
fi
"$TALLY" check "${traces[@]}"
"$TALLY" merge --force "${traces[@]}" -o "$TRACES/all.tally"
exit $status
