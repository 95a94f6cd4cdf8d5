#!/bin/bash
# scripts/sweep/slurm.sh: one qprobe sweep as a Slurm job array, one shard
# per array task, then a merge.
#
#   sbatch --array=0-3 scripts/sweep/slurm.sh ALL.csv MODEL SWEEP-OPTIONS...
#   sbatch --dependency=afterok:JOBID scripts/sweep/slurm.sh --merge ALL.csv 4
#
# or in one go (the merge waits for every task):
#   jid=$(sbatch --parsable --array=0-3 scripts/sweep/slurm.sh sweep.csv \
#         model.onnx --grid 'w{4,8}g{32,128}+a8t' --calib calib/)
#   sbatch --dependency=afterok:$jid scripts/sweep/slurm.sh --merge sweep.csv 4
#
# Task i of N (the array must be 0..N-1) runs qprobe sweep --shard i/N into
# ALL.csv.shard-i-of-N; --merge joins the N tables into ALL.csv. A task that
# is requeued or preempted resumes its table. QP_THREADS follows
# --cpus-per-task. Outside Slurm, set SLURM_ARRAY_TASK_ID,
# SLURM_ARRAY_TASK_MIN/MAX and SLURM_ARRAY_TASK_COUNT to run a task by hand.
# QPROBE names the qprobe binary (default: qprobe on PATH).
#SBATCH --job-name=qprobe-sweep
#SBATCH --cpus-per-task=2
#SBATCH --output=qprobe-sweep-%A_%a.log
set -euo pipefail

QPROBE=${QPROBE:-qprobe}
die() { echo "slurm.sh: $*" >&2; exit 2; }

if [ "${1:-}" = --merge ]; then
    [ $# -eq 3 ] || die "usage: slurm.sh --merge ALL.csv N"
    out=$2 n=$3
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number"
    tables=()
    for ((i = 0; i < n; i++)); do tables+=("$out.shard-$i-of-$n"); done
    exec "$QPROBE" sweep --merge "${tables[@]}" -o "$out"
fi

[ $# -ge 2 ] || die "usage: sbatch --array=0-(N-1) slurm.sh ALL.csv MODEL SWEEP-OPTIONS..."
out=$1
shift
i=${SLURM_ARRAY_TASK_ID:?not in a job array: sbatch --array=0-(N-1) slurm.sh ...}
n=${SLURM_ARRAY_TASK_COUNT:?not in a job array}
[ "${SLURM_ARRAY_TASK_MIN:-0}" = 0 ] && [ "${SLURM_ARRAY_TASK_MAX:-$((n - 1))}" = $((n - 1)) ] ||
    die "the array must be 0-$((n - 1)) without a step (one shard per task)"
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export QP_THREADS=$SLURM_CPUS_PER_TASK
fi
exec "$QPROBE" sweep "$@" --shard "$i/$n" --csv "$out.shard-$i-of-$n"
