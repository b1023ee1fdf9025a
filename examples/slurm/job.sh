#!/bin/bash
# tally under Slurm: every rank records its own trace on the shared filesystem, named by its rank;
# at the end the job checks them (COMPLETE, or what is missing, when and why) and merges them
# onto one timeline.  Submit with the program to record:
#
#   sbatch examples/slurm/job.sh python train.py
#   TALLY_RANKS=0 sbatch examples/slurm/job.sh python train.py     # rank 0 only
#
# This is the script tally's CI runs against a real Slurm (tests/slurm/test-slurm.sh), with a
# stand-in CUPTI: per-rank files, rank 0 only, a job killed at its time limit, scancel, and a
# --signal=USR1@N warning the program does not handle.  In every case each rank's trace is
# closed (tally handles SIGTERM, SIGINT, SIGHUP, SIGUSR1/2, SIGQUIT, ... as exit paths), so no
# --signal line is needed for tally's sake; KillWait (30 s by default) is ample for the flush.
#
# Add your site's GPU request (--gpus-per-node=4, --gres=gpu:4) below.
#SBATCH --nodes=2 --ntasks-per-node=4 --time=00:30:00
set -u
TALLY=${TALLY:-tally}                  # or /opt/tally/bin/tally, the unpacked bundle
TRACES=${TRACES:-$SLURM_SUBMIT_DIR/traces/$SLURM_JOB_ID}
mkdir -p "$TRACES"
srun "$TALLY" record ${TALLY_RANKS:+--ranks "$TALLY_RANKS"} \
	-o "$TRACES/rank%q{SLURM_PROCID}" -- "$@"
status=$?
"$TALLY" check "$TRACES"/rank*.tally
"$TALLY" merge "$TRACES"/rank*.tally -o "$TRACES/all.tally"
exit $status
