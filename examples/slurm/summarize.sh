#!/bin/bash
# A job's traces summarized where they lie, combined on one node in seconds (docs/stats.md,
# "Summaries").  Each task of this job summarizes its share of the traces that
# examples/slurm/job.sh recorded (every file whose number modulo the task count is its own), on
# the nodes that hold them; the summaries are small (a few KB per process) and combine exactly:
# counts, sums, extremes and deviations as the traces give them, medians within 0.39%.
#
#   sbatch --ntasks=8 examples/slurm/summarize.sh traces/1234          # 8 tasks, one step
#   sbatch --array=0-7 examples/slurm/summarize.sh traces/1234         # or an array of 8
#   tally stats traces/1234/summaries                                   # then, on any node
#   tally compare traces/1234/summaries traces/1200/summaries
#   tally report -o job.html traces/1234/summaries
#
# tests/slurm/test-summaries.sh runs this recipe's two ways against a real Slurm and checks the
# combined figures against a direct `tally stats` of the same traces.
#SBATCH --time=00:10:00
set -u
TALLY=${TALLY:-tally}
DIR=${1:?usage: summarize.sh TRACE_DIR}
OUT=${OUT:-$DIR/summaries}
mkdir -p "$OUT"

share() { # INDEX COUNT: summarize traces INDEX, INDEX+COUNT, ...
	local i=0 files=() f
	for f in "$DIR"/*.tally; do
		(( i % $2 == $1 )) && files+=("$f")
		i=$((i + 1))
	done
	(( ${#files[@]} )) || return 0
	# exit 1 only says a trace is INCOMPLETE: the summary is written and says so too
	"$TALLY" stats --partial --force -o "$OUT/part$1.tsum" "${files[@]}" || [ $? -eq 1 ]
}
export -f share
export TALLY DIR OUT

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
	share "$SLURM_ARRAY_TASK_ID" "${SLURM_ARRAY_TASK_COUNT:-1}"
else
	srun bash -c 'share "$SLURM_PROCID" "$SLURM_NTASKS"'
fi
