#!/bin/sh
# scripts/tok-compare.sh QPROBE [NAME...]: `qprobe tokenize` against the
# JavaScript tokenizers pinned in scripts/tok/tok.lock (NAME: llama3,
# llama2, qwen3; default all), id for id, on the corpus
# tests/data/tokenizer/corpus.txt (QP_TOK_CORPUS overrides): every line on
# its own and the whole text, without and with --add-special; then the
# decoded ids against the JS decoder, and for byte-level tokenizers with
# no normalizer the decoded bytes against the corpus itself. Prints one report line per
# check, with counts, and exits 1 if anything differs. Uses the network
# only the first time (scripts/tok-setup.sh).
set -eu
QPROBE=${1:?usage: tok-compare.sh QPROBE [NAME...]}
shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCK=$ROOT/scripts/tok/tok.lock
CORPUS=${QP_TOK_CORPUS:-$ROOT/tests/data/tokenizer/corpus.txt}
QP_TOK_DIR=$(sh "$ROOT/scripts/tok-setup.sh")
export QP_TOK_DIR
REF="node $ROOT/scripts/tok-reference.js"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tok-compare.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ $# -gt 0 ] || set -- llama3 llama2 qwen3
status=0

# same A B: "K/N" lines of B that A has identically at the same place
same() {
    awk 'NR == FNR { a[FNR] = $0; next } { n++; if ((FNR in a) && a[FNR] == $0) k++ }
         END { printf "%d/%d", k, n }' "$1" "$2"
}

for name in "$@"; do
    ver=$(awk -v n="tok-$name" '$1 == n { print $3 }' "$LOCK")
    [ -n "$ver" ] || { echo "tok-compare: no pin 'tok-$name' in $LOCK" >&2; exit 1; }
    dir=$QP_TOK_DIR/tokenizer-$name-$ver/models
    for special in "" --add-special; do
        "$QPROBE" tokenize "$dir" --text "$CORPUS" --lines $special >"$TMP/q"
        $REF encode "$name" "$CORPUS" --lines $special >"$TMP/r"
        lines=$(same "$TMP/q" "$TMP/r")
        "$QPROBE" tokenize "$dir" --text "$CORPUS" $special >"$TMP/qw"
        $REF encode "$name" "$CORPUS" $special >"$TMP/rw"
        whole="whole text identical"
        cmp -s "$TMP/qw" "$TMP/rw" || { whole="WHOLE TEXT DIFFERS"; status=1; }
        [ "${lines%/*}" = "${lines#*/}" ] || status=1
        echo "tokenize $name${special:+ $special}: $lines lines identical" \
             "($(wc -w <"$TMP/r" | tr -d ' ') ids); $whole ($(wc -w <"$TMP/rw" | tr -d ' ') ids)"
    done
    "$QPROBE" tokenize "$dir" --text "$CORPUS" -o "$TMP/ids.npy"
    "$QPROBE" tokenize "$dir" --text "$CORPUS" >"$TMP/ids.txt"
    "$QPROBE" tokenize "$dir" --decode "$TMP/ids.npy" -o "$TMP/decoded"
    dec=$($REF decode "$name" "$TMP/ids.txt" "$TMP/decoded") || { dec="DECODE DIFFERS"; status=1; }
    trip=""
    # byte-level without a normalizer: decoding gives the very bytes back
    if "$QPROBE" tokenize "$dir" --info | grep -q '^model: gpt2' &&
       grep -q '"normalizer": *null' "$dir/tokenizer.json"; then
        trip="; decoded bytes equal the corpus"
        cmp -s "$TMP/decoded" "$CORPUS" || { trip="; DECODED BYTES DIFFER FROM THE CORPUS"; status=1; }
    fi
    echo "tokenize $name $dec$trip"
done
exit $status
