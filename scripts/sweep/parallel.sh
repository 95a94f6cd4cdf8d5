#!/bin/sh
# scripts/sweep/parallel.sh: one qprobe sweep split into N shards run by GNU
# parallel (Debian package `parallel`), on this machine or across hosts,
# then merged into one table.
#
#   scripts/sweep/parallel.sh -j N -o ALL.csv [-S SSHLOGIN] -- MODEL SWEEP-OPTIONS...
#
# e.g.
#   scripts/sweep/parallel.sh -j 4 -o sweep.csv -- model.onnx \
#       --grid 'w{4,8}g{32,128}+a8t' --calib calib/ --eval eval/
#
# Shard i of N (qprobe sweep --shard i/N) writes ALL.csv.shard-i-of-N; when
# all are done, `qprobe sweep --merge` joins them into ALL.csv (rows in grid
# order; a row computed twice collapses). Every shard resumes: after an
# interruption run the same command again and only the missing rows are
# computed. The shard tables are kept (delete them when done).
#
# Across hosts: -S takes GNU parallel's --sshlogin (e.g. 2/host1,2/host2,
# ':' is this machine); each host runs the shard in this directory's path
# (--workdir .), so the model, the inputs, qprobe and this directory must be
# at the same paths on every host (a shared filesystem). Give each host
# QP_THREADS = its cores / its jobs.
#
# QPROBE names the qprobe binary (default: qprobe on PATH). Exit status: 0
# when every shard and the merge succeeded; 1 otherwise (a shard with error
# rows exits 1 too; the merge still runs, so the table holds them).
set -eu

usage() {
    echo "usage: parallel.sh -j N -o ALL.csv [-S SSHLOGIN] -- MODEL SWEEP-OPTIONS..." >&2
    exit 2
}

jobs="" out="" login=""
while [ $# -gt 0 ]; do
    case $1 in
        -j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
        -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
        -S|--sshlogin) [ $# -ge 2 ] || usage; login=$2; shift 2 ;;
        --) shift; break ;;
        *) usage ;;
    esac
done
case $jobs in ''|*[!0-9]*|0) usage ;; esac
[ -n "$out" ] && [ $# -ge 1 ] || usage
QPROBE=${QPROBE:-qprobe}
command -v parallel >/dev/null 2>&1 ||
    { echo "parallel.sh: GNU parallel is needed (Debian package parallel)" >&2; exit 1; }

status=0
# -q: the sweep's arguments reach qprobe as they are (braces included)
parallel --will-cite -q --tag -j "$jobs" ${login:+-S} ${login:+"$login"} \
    ${login:+--workdir} ${login:+.} \
    "$QPROBE" sweep "$@" --shard "{}/$jobs" --csv "$out.shard-{}-of-$jobs" \
    ::: $(seq 0 $((jobs - 1))) || status=1

set --
i=0
while [ $i -lt "$jobs" ]; do
    set -- "$@" "$out.shard-$i-of-$jobs"
    i=$((i + 1))
done
"$QPROBE" sweep --merge "$@" -o "$out" || exit 1
exit $status
