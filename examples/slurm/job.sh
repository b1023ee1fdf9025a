#!/bin/bash
# One trace per rank, on the shared filesystem; rank 0 and 1 only (the others run untouched).
#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --time=00:30:00
#SBATCH --signal=TERM@60          # Slurm's SIGTERM at the time limit is flushed, then forwarded
TRACES=$SLURM_SUBMIT_DIR/traces/$SLURM_JOB_ID
mkdir -p "$TRACES"
srun tally record --ranks 0,1 -o "$TRACES/rank%q{SLURM_PROCID}-%h-%p" -- python train.py
tally check "$TRACES"/*.tally        # COMPLETE, or what is missing, when and why
tally merge "$TRACES"/*.tally -o "$TRACES/all.tally"
