# qprobe run / eval / generate on Hugging Face Llama-family folders:
# data/llama-tiny (trained, BF16, tied, GQA) against tests/golden/llama,
# llama.cpp-style perplexity and KL figures, the base-logits file, quantized
# modes, and refusals of bad input (exit 1, the file named).

TINY="$ROOT/data/llama-tiny"
GOLD="$ROOT/tests/golden/llama"

# json_num FILE KEY: the first number after "KEY": in a JSON file
json_num() {
    grep -o "\"$2\":[[:space:]]*[-0-9.e+]*" "$1" | head -n 1 | sed 's/.*:[[:space:]]*//'
}

test_llm_run_dump_aligns_with_pytorch_hooks() {
    # the golden file is a forward-hook capture: input_ids feed the run,
    # and every module pairs by name with no map
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" --dump out.h5
    assert_contains out "56 tensors written"
    assert_exit 0 "$QPROBE" diff "$GOLD/tiny-t16.safetensors" out.h5 --csv d.csv \
        --fail-if 'rel_l2>1e-5'
    assert_contains err "44 pairs (44 exact)"
    assert_eq "$(csv_field d.csv model.layers.3.mlp.down_proj shape)" "16x128"
    assert_eq "$(csv_field d.csv lm_head shape)" "16x768"
    # a batch [2, 4] keeps its leading dim
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-b2t4.safetensors" \
        --dump b.npz --capture 'model.layers.*'
    assert_exit 0 "$QPROBE" diff "$GOLD/tiny-b2t4.safetensors" b.npz --csv b.csv
    assert_eq "$(csv_field b.csv model.layers.2 shape)" "2x4x128"
    no_tmp_left .
}

test_llm_run_fake_and_int_modes() {
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" --dump ref.h5
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" \
        --mode fake --scheme w4g32 --dump fake.h5
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" \
        --mode int --scheme w4g32 --dump int.h5
    # weight-only int is the fake mode's arithmetic: identical logits
    assert_exit 0 "$QPROBE" diff fake.h5 int.h5 --csv fi.csv
    assert_eq "$(csv_field fi.csv lm_head max_abs)" 0
    assert_exit 0 "$QPROBE" diff ref.h5 fake.h5 --csv rf.csv
    sqnr=$(csv_field rf.csv lm_head sqnr_db)
    awk -v s="$sqnr" 'BEGIN { exit !(s > 5 && s < 60) }' || fail "w4g32 lm_head SQNR $sqnr"
    # a recipe per layer, static activations calibrated on token ids
    cat >r.json <<'JSON'
{"qprobe_recipe": 1, "default": "w8c+a8t", "layers": {"*.down_proj": "w4g32",
 "model.embed_tokens": "fp32", "lm_head": "w8c+fp32"}}
JSON
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" \
        --mode fake --recipe r.json --calib "$GOLD/tiny-heldout-ids.npy" --dump rc.h5
    assert_contains err "calibrated on 12 inputs"
    assert_exit 0 "$QPROBE" diff ref.h5 rc.h5 --csv rc.csv
    assert_eq "$(csv_field rc.csv model.embed_tokens max_abs)" 0
}

test_llm_eval_perplexity_as_llama_cpp() {
    # tests/golden/llama/tiny-eval.json: ctx 128, 49 chunks, 3087 scored,
    # PPL 108.50901 +/- 7.13819
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --ctx 128 \
        --batch 8 --json e.json -q
    assert_contains out "49 chunks of 128 tokens, 3087 scored"
    assert_near "$(json_num e.json ppl)" 108.50901 0.001
    assert_near "$(json_num e.json ppl_unc)" 7.13819 0.001
}

test_llm_eval_kl_base_round_trip() {
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --ctx 256 \
        --save-logits base.kl -q
    # llama.cpp's layout: header, 24 x 256 tokens, 24 x 127 rows of 2*384+4 uint16
    assert_eq "$(stat -c %s base.kl)" $((20 + 24 * 256 * 4 + 24 * 127 * 772 * 2))
    assert_eq "$(head -c 8 base.kl)" "_logits_"
    # the model against itself: no divergence, every top token the same
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" \
        --kl-base base.kl --json self.json -q
    assert_near "$(json_num self.json kld)" 0 0.00001
    # (the base's uint16 rounding may tie a top token: all but a few agree)
    awk -v p="$(json_num self.json same_top)" 'BEGIN { exit !(p > 0.999) }' ||
        fail "same top $(json_num self.json same_top)"
    # quantized: KL and Δp move, the table names llama.cpp's figures
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" \
        --kl-base base.kl --mode fake --scheme w4g32 --json q.json -q
    assert_contains out "Mean ln(PPL(Q)/PPL(base))"
    assert_contains out "Same top p:"
    kld=$(json_num q.json kld)
    awk -v k="$kld" 'BEGIN { exit !(k > 0.001 && k < 2) }' || fail "w4g32 KLD $kld"
}

test_llm_eval_refuses_mismatched_base() {
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --ctx 128 \
        --chunks 3 --save-logits base.kl -q
    assert_exit 1 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --ctx 256 \
        --kl-base base.kl -q
    assert_contains err "'base.kl': the base was computed with a context of 128 tokens, this evaluation uses 256"
    # another token stream: token 21 changed (data after the 128-byte header)
    cp "$GOLD/tiny-heldout-ids.npy" other.npy
    printf '\005\000\000\000' | dd of=other.npy bs=1 seek=$((128 + 4 * 21)) \
        conv=notrunc 2>/dev/null
    assert_exit 1 "$QPROBE" eval "$TINY" --tokens other.npy --kl-base base.kl -q
    assert_contains err "another token stream: token 21 is 28 there, 5 here"
    printf '_logits_\x80\0\0\0' >bad.kl
    assert_exit 1 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --kl-base bad.kl
    assert_contains err "'bad.kl'"
    # fewer than 2 x ctx tokens (llama.cpp's rule) and a context past the model's
    assert_exit 1 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-t16.safetensors" --ctx 16 -q
    assert_contains err "needs at least 32"
    assert_exit 0 "$QPROBE" eval "$TINY" --tokens "$GOLD/tiny-heldout-ids.npy" --ctx 2048 \
        --chunks 1 -q
    assert_contains err "warning: a context of 2048 tokens is longer than the model's 1024"
    no_tmp_left .
}

test_llm_generate_prompt_ids() {
    # the first exact-match item of tiny-eval.json: its greedy continuation
    assert_exit 0 "$QPROBE" run "$TINY" --tokens "$GOLD/tiny-t16.safetensors" --dump x.npz \
        --capture input_ids
    assert_exit 0 "$QPROBE" generate "$TINY" --prompt-ids "$GOLD/tiny-t16.safetensors" -n 5 -q
    ids=$(head -n 1 out)
    assert_eq "$(echo "$ids" | wc -w)" 21
    assert_exit 0 "$QPROBE" generate "$TINY" --prompt-ids "$GOLD/tiny-t16.safetensors" -n 5 \
        --mode fake --scheme w8c -q
    assert_eq "$(head -n 1 out | wc -w)" 21
}

test_llm_bad_input() {
    mkdir m
    cp "$TINY/model.safetensors" m/
    sed 's/"model_type": "llama"/"model_type": "gpt_neox"/' "$TINY/config.json" >m/config.json
    assert_exit 1 "$QPROBE" run m --tokens "$GOLD/tiny-t16.safetensors"
    assert_contains err "model_type \"gpt_neox\""
    assert_contains err "m/config.json"
    sed 's/"intermediate_size": 344/"intermediate_size": 320/' "$TINY/config.json" >m/config.json
    assert_exit 1 "$QPROBE" eval m --tokens "$GOLD/tiny-heldout-ids.npy"
    assert_contains err "tensor 'model.layers.0.mlp.gate_proj.weight' is [344,128], config.json implies [320,128]"
    cp "$TINY/config.json" m/config.json
    sed 's/"vocab_size": 768/"vocab_size": 700/' "$TINY/config.json" >m/config.json
    assert_exit 1 "$QPROBE" run m --tokens "$GOLD/tiny-t16.safetensors"
    assert_contains err "config.json implies [700,128]"
    # ids beyond the vocabulary, named with the file
    assert_exit 1 "$QPROBE" generate "$TINY" --prompt-ids "$GOLD/tiny-tokenizer.json" -n 2
    assert_contains err "tiny-tokenizer.json"
    assert_exit 2 "$QPROBE" run "$TINY" --input "$GOLD/tiny-t16.safetensors"
    assert_contains err "model folder: give --tokens"
    assert_exit 2 "$QPROBE" eval "$TINY" --tokens x.npy --scheme w8c
    assert_contains err "need --mode fake or int"
}

test_llm_text_through_the_tokenizer() {
    # the held-out text tokenizes to the golden ids: the same perplexity
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$TINY/heldout.txt" --ctx 128 -q
    assert_contains out "PPL = 108.5090 +/- 7.13819"
    # tasks: tiny-eval.json's accuracy 50/60 and match rate 20/20
    assert_exit 0 "$QPROBE" eval "$TINY" --choices "$TINY/choices.jsonl" \
        --exact-match "$TINY/exact.jsonl" --json t.json -q
    assert_contains out "choices: 60 items, acc 83.33 +/- 4.85 %, acc_norm 83.33 +/- 4.85 %"
    assert_contains out "exact-match: 20 items, match 100.00 +/- 0.00 %"
    assert_contains t.json '"text":	" Works in"'
    # generation: the prompt, then greedy tokens decoded as they come
    assert_exit 0 "$QPROBE" generate "$TINY" --prompt "If a copy of the MPL was not distributed" \
        -n 12 --print-ids
    assert_eq "$(head -n 1 out | wc -w)" 26   # BOS + 13 prompt tokens + 12
    assert_eq "$(head -n 1 out | cut -d' ' -f1)" 766
    assert_exit 0 "$QPROBE" generate "$TINY" --prompt "If a copy of the MPL was not distributed" -n 12
    case "$(head -n 1 out)" in "If a copy of the MPL was not distributed"?*) ;;
        *) fail "generated text: $(head -n 1 out)" ;; esac
    # a calibration text for static activations
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$TINY/heldout.txt" --ctx 256 --chunks 2 \
        --mode fake --scheme w8c+a8t --calib "$TINY/heldout.txt"
    assert_contains err "calibrated on 16 sequences of up to 256 tokens"
    # more tokens than positions: a warning, the run goes on
    assert_exit 0 "$QPROBE" run "$TINY" --text "$TINY/heldout.txt" --capture lm_head \
        --dump l.npz
    assert_contains err "6283 tokens are more than the model's 1024 positions"
}

test_llm_text_needs_a_tokenizer() {
    mkdir m
    cp "$TINY/config.json" "$TINY/model.safetensors" m/
    assert_exit 1 "$QPROBE" eval m --text "$TINY/heldout.txt"
    assert_contains err "'m' has no tokenizer.json; give token ids"
    echo '{"model": {"type": "WordPiece"}}' >m/tokenizer.json
    assert_exit 1 "$QPROBE" generate m --prompt hello
    assert_contains err "m/tokenizer.json"
}
