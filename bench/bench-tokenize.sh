#!/bin/bash
# bench/bench-tokenize.sh [BUILD]: `qprobe tokenize` against the JavaScript
# tokenizers pinned in scripts/tok/tok.lock (scripts/tok-reference.js) on
# ~1 MB of text (the licenses in /usr/share/common-licenses, repeated),
# measured in the same run, in CPU time (user + system: the machine may be
# shared). qprobe's encoding time is its run on the text less its run on
# an empty text (the tokenizer.json load), best of three each; the JS one
# is measured inside node around the encode call. Prints both and their
# ratio per tokenizer.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
QPROBE=$ROOT/$BUILD/qprobe
[ -x "$QPROBE" ] || QPROBE=$BUILD/qprobe
command -v node >/dev/null || { echo "bench-tokenize: node is needed" >&2; exit 1; }
QP_TOK_DIR=$(sh "$ROOT/scripts/tok-setup.sh")
export QP_TOK_DIR
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench-tok.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
touch "$TMP/big.txt"
while [ "$(wc -c <"$TMP/big.txt")" -lt 1000000 ]; do
    cat /usr/share/common-licenses/* >>"$TMP/big.txt"
done
: >"$TMP/empty.txt"
bytes=$(wc -c <"$TMP/big.txt" | tr -d ' ')

# best TEXT DIR: the least CPU time of three runs, in ms
best() {
    local b="" t
    for _ in 1 2 3; do
        t=$( { TIMEFORMAT='%3U %3S'; time "$QPROBE" tokenize "$2" --text "$1" \
               -o "$TMP/ids.npy"; } 2>&1 | awk '{ printf "%d", ($1 + $2) * 1000 }')
        if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
    done
    echo "$b"
}

for name in llama3 llama2 qwen3; do
    ver=$(awk -v n="tok-$name" '$1 == n { print $3 }' "$ROOT/scripts/tok/tok.lock")
    dir=$QP_TOK_DIR/tokenizer-$name-$ver/models
    load=$(best "$TMP/empty.txt" "$dir")
    all=$(best "$TMP/big.txt" "$dir")
    enc=$((all - load))
    [ "$enc" -gt 0 ] || enc=1
    set -- $(node "$ROOT/scripts/tok-reference.js" bench "$name" "$TMP/big.txt")
    js_load=$2 js_enc=$4 ids=$6
    awk -v n="$name" -v b="$bytes" -v ids="$ids" -v q="$enc" -v ql="$load" \
        -v j="$js_enc" -v jl="$js_load" 'BEGIN {
        printf "tokenize %s: %d bytes, %d ids: qprobe %d ms (+%d ms load), " \
               "JS %.0f ms (+%.0f ms load): %.1fx faster (CPU time)\n", n, b, ids, q, ql,
               j, jl, j / q }'
done
