# bench/bench-gguf.sh [BUILD]: llama.cpp's F32 prefill against qprobe's fp32
# prefill on the same synthetic Llama-3.2-1B-shaped weights (random BF16,
# model/synth-llama.h, with the bundled tiny tokenizer so that the folder
# exports), 512 tokens, all CPUs, alternating, best of two each:
#   qprobe:    `qprobe run DIR --tokens ids.npy` (the pass time it reports)
#   llama.cpp: `qprobe export DIR --to gguf` as F32, evaluated by
#              build/llamacpp-driver bench (one llama_decode of 512 ids,
#              F32 KV cache, no flash attention; the prebuilt libraries of
#              @node-llama-cpp/linux-x64@3.22.1, scripts/llamacpp-setup.sh)
# Prints "ratio qprobe-fp32/llamacpp-f32 tokens/s X" (the goal: >= 1).
# Data under data/cache/ (2.5 GB folder + 5 GB GGUF, made on first use,
# never committed). Skipped when the driver is not built.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
Q=$BUILD/qprobe
D=$BUILD/llamacpp-driver
[ -x "$D" ] || { echo "skipped: no $D (scripts/llamacpp-setup.sh could not fetch)"; exit 0; }
LIB=$(sh "$ROOT/scripts/llamacpp-setup.sh" | head -n 1)
DIR=${QP_BENCH_GGUF_1B:-$ROOT/data/cache/synth-llama-1b-tok}
GG=$DIR.f32.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ ! -f "$DIR/config.json" ]; then
    echo "writing $DIR"
    "$BUILD/bench/synth-llama" "$ROOT/bench/configs/llama-3.2-1b.json" "$DIR" \
        --tokenizer "$ROOT/data/llama-tiny" >/dev/null
fi
if [ ! -f "$GG" ]; then
    echo '{"qprobe_recipe": 1, "default": "fp32"}' >"$TMP/f32.json"
    "$Q" export "$DIR" --recipe "$TMP/f32.json" --to gguf -o "$GG" -q
fi
# ids 0..511 as .npy int32 [512] (the driver's bench feeds the same ids)
{ printf '\223NUMPY\001\000\166\000'
  printf "{'descr': '<i4', 'fortran_order': False, 'shape': (512,), }%*s\n" 58 ''
  perl -e 'print pack("l<*", 0..511)'; } >"$TMP/ids.npy"
threads=$(nproc)
bq=0 bl=0
for r in 1 2; do
    line=$(QP_THREADS=$threads "$Q" run "$DIR" --tokens "$TMP/ids.npy" 2>&1 | grep ' nodes in ')
    t=$(echo "$line" | sed -n 's/.* nodes in \([0-9.]*\) \(m\{0,1\}s\).*/\1 \2/p')
    s=$(echo "$t" | awk '{ print $2 == "ms" ? $1 / 1000 : $1 }')
    q=$(awk -v s="$s" 'BEGIN { print 512 / s }')
    l=$("$D" bench "$LIB" "$GG" 512 "$threads" 1 | awk '{ print $2 }')
    echo "  pass $r: qprobe fp32 $q tokens/s ($line); llama.cpp F32 $l tokens/s"
    bq=$(awk -v a="$bq" -v b="$q" 'BEGIN { m = a + 0; if (b + 0 > m) m = b; print m }')
    bl=$(awk -v a="$bl" -v b="$l" 'BEGIN { m = a + 0; if (b + 0 > m) m = b; print m }')
done
echo "qprobe fp32 prefill 512 tokens: $bq tokens/s; llama.cpp F32: $bl tokens/s ($threads threads)"
awk -v a="$bq" -v b="$bl" 'BEGIN { printf "ratio qprobe-fp32/llamacpp-f32 tokens/s %.2f (goal >= 1)\n", a / b }'
