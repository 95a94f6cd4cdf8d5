#!/bin/sh
# The demo for now: `qprobe inspect` and `qprobe diff` on two small sample
# dumps, a host reference and a "device" run with int8 tensors, NHWC
# layouts, other tensor names and one damaged layer (see data/README.md).
# Writes reports/demo/: inspect-*.csv, diff.csv, align.csv, sqnr.png (with
# sqnr.gp and sqnr.dat).
#
# usage: sh scripts/demo.sh [BUILD]      (make demo runs it)
# QP_DEMO_DATA / QP_DEMO_OUT move the data and the report elsewhere;
# QP_MKDEMO names a built generator (otherwise make builds BUILD/mkdemo).
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${QP_DEMO_DATA:-$ROOT/data/demo}
OUT=${QP_DEMO_OUT:-$ROOT/reports/demo}
QPROBE=$BUILD/qprobe

if [ -z "${QP_MKDEMO:-}" ]; then
    ${MAKE:-make} -s --no-print-directory BUILD="$BUILD" "$BUILD/mkdemo"
    QP_MKDEMO=$BUILD/mkdemo
fi

step() { printf '\n== %s\n' "$*"; }

step "generating the sample dumps in $DATA (deterministic)"
"$QP_MKDEMO" demo "$DATA"
mkdir -p "$OUT"

step "qprobe inspect: the host reference (HDF5, float32, NCHW)"
"$QPROBE" inspect "$DATA/ref.h5" --csv "$OUT/inspect-ref.csv" --quiet

step "qprobe inspect: the device dump (.raw + JSON, int8 + scale/zero point, NHWC)"
"$QPROBE" inspect "$DATA/device" --csv "$OUT/inspect-device.csv" --quiet

step "qprobe diff: which layer breaks on the device?"
set +e
# the layouts come from the dumps' own metadata (NCHW / NHWC tags)
"$QPROBE" diff "$DATA/ref.h5" "$DATA/device" --map "$ROOT/data/demo-map.json" \
    --fail-if 'sqnr_db<20' --top 10 \
    --csv "$OUT/diff.csv" --plot "$OUT/sqnr.png" --align-report "$OUT/align.csv"
rc=$?
set -e
# the damaged layer must be caught: exit 3 from --fail-if
if [ "$rc" -ne 3 ]; then
    echo "demo: expected qprobe diff to flag the damaged layer (exit 3), got $rc" >&2
    exit 1
fi

step "report written to $OUT"
ls -1 "$OUT"
echo
echo "The worst layer ranks first in diff.csv; sqnr.png plots SQNR per layer."
