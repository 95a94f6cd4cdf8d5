# build/bench/synth-llama (bench/synth-llama.c): the sizes of the bundled
# Llama-3.2-1B / Llama-3.1-8B configs against the real checkpoints, a tiny
# sharded checkpoint read back by qprobe inspect, and its refusals.

SYNTH=$(dirname "$QPROBE")/bench/synth-llama

tiny_config() {
    cat >cfg.json <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
 "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
 "num_key_value_heads": 2, "vocab_size": 768, "tie_word_embeddings": true,
 "torch_dtype": "bfloat16"}
JSON
}

test_synth_sizes_match_the_public_checkpoints() {
    # the data bytes of meta-llama/Llama-3.2-1B and Llama-3.1-8B (BF16; their
    # index total_size): 1,235,814,400 and 8,030,261,248 parameters
    assert_exit 0 "$SYNTH" "$ROOT/bench/configs/llama-3.2-1b.json" out --dry-run
    assert_eq "$(cat out)" "146 tensors, 2471628800 bytes"
    assert_exit 0 "$SYNTH" "$ROOT/bench/configs/llama-3.1-8b.json" out --dry-run
    assert_eq "$(cat out)" "291 tensors, 16060522496 bytes"
    assert_exit 0 "$SYNTH" "$ROOT/bench/configs/llama-3.1-8b.json" out --dry-run --dtype f32
    assert_eq "$(cat out)" "291 tensors, 32121044992 bytes"
    [ ! -e out/config.json ] || fail "--dry-run wrote files"
}

test_synth_tiny_sharded_checkpoint_reads_back() {
    tiny_config
    assert_exit 0 "$SYNTH" cfg.json ck --shards 2 --seed 3 \
        --tokenizer "$ROOT/data/llama-tiny/tokenizer.json"
    assert_eq "$(ls ck | tr '\n' ' ')" "config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json tokenizer.json "
    cmp cfg.json ck/config.json
    cmp "$ROOT/data/llama-tiny/tokenizer.json" ck/tokenizer.json
    "$QPROBE" inspect ck/model.safetensors.index.json --csv s.csv >/dev/null
    assert_eq "$(($(wc -l <s.csv) - 1))" 20   # embed + 2 x 9 + norm, tied
    assert_eq "$(csv_field s.csv model.layers.1.mlp.down_proj.weight dtype)" bf16
    assert_eq "$(csv_field s.csv model.layers.1.self_attn.k_proj.weight shape)" 32x64
    # std 1/sqrt(64) for q_proj; embeddings 0.02; norms about 1
    assert_near "$(csv_field s.csv model.layers.0.self_attn.q_proj.weight std)" 0.125 0.004
    assert_near "$(csv_field s.csv model.embed_tokens.weight std)" 0.02 0.0005
    assert_near "$(csv_field s.csv model.norm.weight mean)" 1 0.01
    # layer 1 carries outliers: 2 norm channels at 8, 2 down_proj columns x16
    assert_near "$(csv_field s.csv model.layers.1.post_attention_layernorm.weight max)" 8 0.1
    assert_near "$(csv_field s.csv model.layers.0.post_attention_layernorm.weight max)" 1.06 0.05
    # the same seed gives the same bytes, one file or two
    assert_exit 0 "$SYNTH" cfg.json one --seed 3
    "$QPROBE" inspect one/model.safetensors --csv s1.csv >/dev/null
    assert_eq "$(cut -d, -f1-10 s1.csv | sort)" "$(cut -d, -f1-10 s.csv | sort)"
    no_tmp_left .
}

test_synth_refuses_bad_input() {
    tiny_config
    assert_exit 2 "$SYNTH"
    assert_exit 2 "$SYNTH" cfg.json ck --dtype int8
    assert_contains err "invalid value 'int8' for --dtype"
    assert_exit 2 "$SYNTH" cfg.json ck --shards 0
    assert_exit 1 "$SYNTH" cfg.json ck --shards 21
    assert_contains err "21 shards: the checkpoint has 20 tensors"
    sed 's/"llama"/"gpt2"/' cfg.json >gpt2.json
    assert_exit 1 "$SYNTH" gpt2.json ck
    assert_contains err "'gpt2.json': model_type \"gpt2\" is not supported"
    sed 's/"vocab_size": 768, //' cfg.json >novocab.json
    assert_exit 1 "$SYNTH" novocab.json ck
    assert_contains err "'novocab.json': \"vocab_size\" is missing"
    assert_exit 1 "$SYNTH" missing.json ck
    assert_contains err "missing.json"
    assert_exit 1 "$SYNTH" cfg.json ck --tokenizer nothere.json
    assert_contains err "nothere.json"
    [ ! -e ck ] || fail "a failed run left ck/"
    no_tmp_left .
}
