#!/bin/bash
# bench/bench-sweep.sh [BUILD]: what a sweep saves, measured in the same
# run (wall and CPU time, user + system: the machine may be shared):
# - `qprobe sweep` of K configurations of the PP-OCRv4 recognizer (fetched
#   once, pinned) against the same K configurations as K separate `qprobe
#   run` invocations (each loads the model, calibrates and runs the
#   evaluation inputs as a batch). The sweep does more per row (an fp32
#   reference kept once, every tensor scored, a timed pass) and still
#   shares the model, the calibration ranges and the weights it quantized;
# - a sweep of K configurations of the bundled tiny Llama (perplexity, KL
#   against fp32, multiple choice) against the fp32 base logits made by one
#   `qprobe eval --save-logits` and K `qprobe eval --kl-base --choices`.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QPROBE=$ROOT/$BUILD/qprobe
[ -x "$QPROBE" ] || QPROBE=$BUILD/qprobe
MKDEMO=$(dirname "$QPROBE")/mkdemo
REC=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep _rec_)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-sweep.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/calib" "$TMP/eval"
for s in 1 2 3 4; do "$MKDEMO" textline "$TMP/calib/c$s.npy" $s; done
for s in 7 8; do "$MKDEMO" textline "$TMP/eval/e$s.npy" $s; done
CONFIGS="w8c w8c+a8t w4c+a8t w4g32 w8t+a8t int:w8c+a8t"
K=$(echo $CONFIGS | wc -w)

# wall, user + system seconds of a command
timed() {
    { TIMEFORMAT='%3R %3U %3S'; time "$@" >/dev/null 2>&1; } 2>&1 |
        awk '{ printf "%s %.3f", $1, $2 + $3 }'
}

sweep=$(timed "$QPROBE" sweep "$REC" --calib "$TMP/calib" --eval "$TMP/eval" \
        --grid "$(echo $CONFIGS | tr ' ' ',')" --no-controls --csv "$TMP/s.csv" -q)
runs() {
    for c in $CONFIGS; do
        mode=fake scheme=$c
        case $c in int:*) mode=int scheme=${c#int:} ;; esac
        "$QPROBE" run "$REC" --mode $mode --scheme "$scheme" --calib "$TMP/calib" \
            --input "$TMP/eval/e7.npy" --input "$TMP/eval/e8.npy" -q
    done
}
separate=$(timed runs)
rows=$(($(wc -l <"$TMP/s.csv") - 1))
[ "$rows" -eq "$K" ] || { echo "bench-sweep: the sweep wrote $rows rows, not $K" >&2; exit 1; }
# report WHAT K SWEEP_WALL SWEEP_CPU SEPARATE_WALL SEPARATE_CPU
report() {
    awk -v what="$1" -v k="$2" -v sw="$3" -v sc="$4" -v rw="$5" -v rc="$6" 'BEGIN {
        printf "sweep of %d configs (%s): %.2f s wall, %.2f s CPU; %d separate " \
               "commands: %.2f s wall, %.2f s CPU\n", k, what, sw, sc, k, rw, rc
        printf "sweep overhead ratio (sweep / separate commands): %.2f wall, " \
               "%.2f CPU\n", sw / rw, sc / rc }'
}
report "PP-OCRv4 rec, 4 calibration + 2 evaluation inputs; vs qprobe run" "$K" \
    $sweep $separate

LLM=$ROOT/data/llama-tiny
LCONFIGS="w8c w4g32 w4g128 w4g32+a8d int:w8c"
LK=$(echo $LCONFIGS | wc -w)
LOPTS="--text $LLM/heldout.txt --ctx 256 --choices $LLM/choices.jsonl"
lsweep=$(timed "$QPROBE" sweep "$LLM" $LOPTS --grid "$(echo $LCONFIGS | tr ' ' ',')" \
         --no-controls --csv "$TMP/l.csv" -q)
evals() {
    "$QPROBE" eval "$LLM" --text "$LLM/heldout.txt" --ctx 256 --save-logits "$TMP/base.kl" -q
    for c in $LCONFIGS; do
        mode=fake scheme=$c
        case $c in int:*) mode=int scheme=${c#int:} ;; esac
        "$QPROBE" eval "$LLM" $LOPTS --kl-base "$TMP/base.kl" --mode $mode \
            --scheme "$scheme" -q
    done
}
levals=$(timed evals)
rows=$(($(wc -l <"$TMP/l.csv") - 1))
[ "$rows" -eq "$LK" ] || { echo "bench-sweep: the LLM sweep wrote $rows rows, not $LK" >&2; exit 1; }
report "tiny Llama, PPL + KL + choices, ctx 256; vs qprobe eval" "$LK" $lsweep $levals
