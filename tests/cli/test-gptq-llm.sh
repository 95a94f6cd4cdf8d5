# '@gptq' on a Hugging Face Llama folder: data/llama-tiny (hidden 128, so
# w4g128 is one group per row of q/k/v/o/gate/up and three of down_proj),
# calibrated on a text it was trained on and measured on the text it never
# saw (data/llama-tiny/PROVENANCE.md: trained on Debian's
# /usr/share/common-licenses, MPL-2.0 held out as heldout.txt).

TINY="$ROOT/data/llama-tiny"
# GPL-3, one of the training texts, by the hash PROVENANCE.md records
TRAIN=/usr/share/common-licenses/GPL-3
TRAIN_SHA=3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986

gptq_llm_setup() {
    [ "$(sha256sum "$TRAIN" 2>/dev/null | cut -d' ' -f1)" = "$TRAIN_SHA" ] ||
        fail "$TRAIN is not the training text of data/llama-tiny (base-files)"
    cp "$TRAIN" train.txt
}

# json_num FILE KEY: the first number after "KEY": in a JSON file
gptq_json_num() {
    grep -o "\"$2\":[[:space:]]*[-0-9.e+]*" "$1" | head -n 1 | sed 's/.*:[[:space:]]*//'
}

test_gptq_llm_eval_beats_rtn_on_heldout_text() {
    gptq_llm_setup
    held="$TINY/heldout.txt"
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$held" --save-logits base.kl -q
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$held" --mode fake \
        --scheme w4g128 --kl-base base.kl --json rtn.json -q
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$held" --mode fake \
        --scheme w4g128@gptq --calib train.txt --kl-base base.kl --json gptq.json
    # the log: 16 sequences of 512 tokens, 4 x 7 linear layers and the head
    assert_contains err "calibrated on 16 sequences of up to 512 tokens"
    assert_contains err "gptq: 29 layers (quantized inputs)"
    assert_contains err "node 'model.embed_tokens' (Embedding): '@gptq' rounds this layer to nearest"
    rp=$(gptq_json_num rtn.json ppl)
    gp=$(gptq_json_num gptq.json ppl)
    rk=$(gptq_json_num rtn.json kld)
    gk=$(gptq_json_num gptq.json kld)
    echo "held-out PPL: w4g128 $rp, w4g128@gptq $gp; KL: $rk vs $gk"
    # measured: PPL 157.81 vs 153.87 (base 155.04), KL 0.0344 vs 0.0172
    awk -v a="$gp" -v b="$rp" 'BEGIN { exit !(a < b) }' ||
        fail "GPTQ's perplexity $gp is not below RTN's $rp"
    awk -v a="$gk" -v b="$rk" 'BEGIN { exit !(a > 0 && a < 0.7 * b) }' ||
        fail "GPTQ's KL $gk is not below 0.7 x RTN's $rk"
    # the int mode runs the same GPTQ integers: the same figures
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$held" --mode int \
        --scheme w4g128@gptq --calib train.txt --json int.json -q
    assert_eq "$(gptq_json_num int.json ppl)" "$gp"
    # every layer on the float model's inputs instead: still GPTQ, not RTN
    assert_exit 0 "$QPROBE" eval "$TINY" --text "$held" --mode fake \
        --scheme w4g128@gptq --gptq-inputs fp32 --calib train.txt \
        --kl-base base.kl --json fp.json
    assert_contains err "gptq: 29 layers (fp32 inputs)"
    fk=$(gptq_json_num fp.json kld)
    awk -v a="$fk" -v b="$rk" 'BEGIN { exit !(a > 0 && a < 0.7 * b) }' ||
        fail "GPTQ on fp32 inputs: KL $fk is not below 0.7 x RTN's $rk"
}

test_gptq_llm_quantize_checkpoint_and_report() {
    gptq_llm_setup
    assert_exit 0 "$QPROBE" quantize "$TINY" --scheme w4g128@gptq \
        --calib train.txt -o q.safetensors --report r.csv
    assert_contains err "gptq: 29 layers on 16 calibration sequences (quantized inputs)"
    assert_contains out "q.safetensors: 29 tensors quantized, 9 kept"
    # 28 linear layers in the checkpoint (the tied head is the embedding's
    # bytes: rounded to nearest), each with GPTQ's output error on the
    # calibration tokens below RTN's, 8192 rows of 16 sequences, the
    # default dampening and no failed factorization
    assert_eq "$(awk -F, 'NR > 1 && $11 != ""' r.csv | wc -l)" 28
    bad=$(awk -F, 'NR > 1 && $11 != "" && !($20 + 0 < $21 + 0 && $15 == 8192 &&
        $16 == 16 && $17 == 0.01 && $18 == 0 && $3 == "w4g128@gptq" &&
        $19 + 0 > 0)' r.csv)
    assert_eq "$bad" "" "rows breaking an invariant"
    assert_eq "$(csv_field r.csv model.layers.0.self_attn.k_proj.weight rows)x$(csv_field r.csv model.layers.0.self_attn.k_proj.weight cols)" 64x128
    assert_eq "$(csv_field r.csv model.layers.3.mlp.down_proj.weight rows)x$(csv_field r.csv model.layers.3.mlp.down_proj.weight cols)" 128x344
    assert_eq "$(csv_field r.csv model.embed_tokens.weight scheme)" w4g128
    head -c 65536 q.safetensors | tr -d '\0' > hdr
    assert_contains hdr '"scheme:model.layers.2.mlp.down_proj.weight":"w4g128@gptq"'
    assert_contains hdr '"model.layers.2.mlp.down_proj.weight.scale":{"dtype":"F32","shape":[128,3]'
    assert_contains hdr '"quantize:gptq_inputs":"quantized"'
    # ids instead of text: the same tokens, the same weights
    assert_exit 0 "$QPROBE" tokenize "$TINY" --text train.txt --add-special -o ids.npy
    assert_exit 0 "$QPROBE" quantize "$TINY" --scheme w4g128@gptq \
        --calib ids.npy -o i.safetensors -q
    "$QPROBE" diff q.safetensors i.safetensors --csv qi.csv >/dev/null 2>&1
    assert_eq "$(awk -F, 'NR > 1' qi.csv | wc -l)" 38
    assert_eq "$(awk -F, 'NR > 1 && $5 != "inf"' qi.csv | wc -l)" 0
    # and not RTN's
    assert_exit 0 "$QPROBE" quantize "$TINY" --scheme w4g128 -o rtn.safetensors -q
    "$QPROBE" diff rtn.safetensors q.safetensors --csv rq.csv >/dev/null 2>&1
    assert_eq "$(csv_field rq.csv model.embed_tokens.weight sqnr_db)" inf
    [ "$(csv_field rq.csv model.layers.1.mlp.up_proj.weight sqnr_db)" != inf ] ||
        fail "the GPTQ checkpoint's up_proj is RTN's"
    no_tmp_left .
}

test_gptq_llm_refusals() {
    gptq_llm_setup
    held="$TINY/heldout.txt"
    assert_exit 1 "$QPROBE" eval "$TINY" --text "$held" --mode fake --scheme w4g128@gptq
    assert_contains err "'@gptq' needs --calib"
    assert_exit 1 "$QPROBE" quantize "$TINY" --scheme w4g128@gptq \
        --calib missing.txt -o q.safetensors
    assert_contains err "missing.txt"
    [ ! -e q.safetensors ] || fail "a partial checkpoint was left"
    printf '\x93NUMPY' > bad.npy
    assert_exit 1 "$QPROBE" quantize "$TINY" --scheme w4g128@gptq \
        --calib bad.npy -o q.safetensors
    assert_contains err "bad.npy"
    [ ! -e q.safetensors ] || fail "a partial checkpoint was left"
    no_tmp_left .
}

test_gptq_llm_export_gptq_checkpoint() {
    gptq_llm_setup
    assert_exit 0 "$QPROBE" export "$TINY" --scheme w4g128@gptq --calib train.txt \
        --to gptq -o gq
    assert_contains out "gq: 28 layers GPTQ-packed (w4g128@gptq:half, fp16 scales), 10 tensors kept"
    assert_eq "$(ls gq | tr '\n' ' ')" "config.json generation_config.json model.safetensors quantize_config.json tokenizer.json tokenizer_config.json "
    cmp "$TINY/tokenizer.json" gq/tokenizer.json
    assert_contains gq/quantize_config.json '"group_size":	128'
    assert_contains gq/quantize_config.json '"checkpoint_format":	"gptq"'
    assert_contains gq/config.json '"quantization_config": {"bits":4,"group_size":128,"sym":true,"desc_act":false'
    "$QPROBE" inspect gq/model.safetensors --csv s.csv >/dev/null
    # qweight: 8 input rows a word; down_proj's 344 inputs in 3 groups
    assert_eq "$(csv_field s.csv model.layers.3.mlp.down_proj.qweight dtype) $(csv_field s.csv model.layers.3.mlp.down_proj.qweight shape)" "i32 43x128"
    assert_eq "$(csv_field s.csv model.layers.3.mlp.down_proj.scales dtype) $(csv_field s.csv model.layers.3.mlp.down_proj.scales shape)" "f16 3x128"
    assert_eq "$(csv_field s.csv model.layers.3.mlp.down_proj.qzeros shape)" 3x16
    assert_eq "$(csv_field s.csv model.layers.3.mlp.down_proj.g_idx max)" 2
    # symmetric: every zero point 8, stored as 7 in each nibble
    assert_eq "$(csv_field s.csv model.layers.0.self_attn.q_proj.qzeros min)" "$(csv_field s.csv model.layers.0.self_attn.q_proj.qzeros max)"
    assert_eq "$(csv_field s.csv model.embed_tokens.weight dtype)" bf16
    # refusals: no partial folder
    assert_exit 1 "$QPROBE" export "$TINY" --scheme w4g128 --calib train.txt --to gptq -o bad
    assert_contains err "weight-only '@gptq'"
    assert_exit 1 "$QPROBE" export "$TINY" --scheme w4g128@gptq --to gptq -o bad
    assert_contains err "needs --calib"
    [ ! -e bad ] || fail "a partial export was left"
    no_tmp_left .
}
