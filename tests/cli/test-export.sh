# qprobe export: the command line (usage errors exit 2, refusals exit 1
# naming the model and the format, no output left behind), the PP-OCRv4
# classifier exported to QDQ ONNX and run in the pinned ONNX Runtime (every
# QuantizeLinear output bit for bit qprobe's int mode of the export), its
# encodings read back by qprobe's raw-dump reader as qnn-net-run's native
# files, ORT overrides, and the recipe-only formats on the bundled tiny
# Llama. Models and onnxruntime-node come from the pinned npm tarballs
# (scripts/fetch-models.sh, scripts/ort-setup.sh).

cls_setup() {
    command -v node >/dev/null || fail "node is needed (Debian package nodejs)"
    models=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4) || fail "fetch-models.sh failed"
    CLS=$(echo "$models" | grep "_cls_")
    [ -f "$CLS" ] || fail "no classifier model"
    REF="node $ROOT/scripts/ort-reference.js"
    mkdir -p calib
    for s in 1 2 3; do $REF image --shape 1,3,48,192 --seed $s -o calib/c$s.npy; done
    $REF image --shape 1,3,48,192 --seed 40 -o in.npy
}

# only the files named are in the folder (no temporary or partial output)
only_files() {
    got=$(ls -A | sort | tr '\n' ' ')
    want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    assert_eq "$got" "$want" "files"
}

test_export_usage_errors() {
    assert_exit 0 "$QPROBE" export --help
    assert_contains out "onnx-qdq"
    assert_contains out "extra_options={'TensorQuantOverrides': ov}"
    assert_contains out "llama-quantize \$(cat OUT) in-f16.gguf out.gguf TYPE"
    assert_exit 2 "$QPROBE" export m.onnx --scheme w8c -o x.onnx
    assert_contains err "--to FORMAT is required"
    assert_exit 2 "$QPROBE" export m.onnx --scheme w8c --to qdq -o x.onnx
    assert_contains err "'qdq' is not an export format (onnx-qdq, encodings, qnn-overrides, ort-overrides, llama-tensor-type, gptqmodel-dynamic, gguf, gptq)"
    assert_exit 2 "$QPROBE" export m.onnx --scheme w8c --recipe r.json --to onnx-qdq -o x.onnx
    assert_exit 2 "$QPROBE" export m.onnx --scheme w8c --to onnx-qdq
    assert_contains err "-o OUT is missing"
    assert_exit 2 "$QPROBE" export m.onnx --scheme w8c --to ort-overrides -o x.json
    assert_contains err "--to ort-overrides translates a recipe's rules: give --recipe"
    assert_exit 2 "$QPROBE" export --scheme w8c --to onnx-qdq -o x.onnx
    assert_contains err "--to onnx-qdq needs MODEL"
    assert_exit 2 "$QPROBE" export m.onnx --scheme w9z --to onnx-qdq -o x.onnx
    only_files out err
}

test_export_refuses_the_wrong_model_kind() {
    cls_setup
    rm -f out err
    assert_exit 1 "$QPROBE" export "$CLS" --scheme q4_k --to gguf -o x.gguf
    assert_contains err "--to gguf applies to a Llama-family checkpoint, and '$CLS' is an ONNX graph"
    assert_exit 1 "$QPROBE" export "$ROOT/data/llama-tiny" --scheme w4g32 --to gptq -o x.safetensors
    assert_contains err "--to gptq: the scheme must be weight-only '@gptq'"
    assert_exit 1 "$QPROBE" export "$ROOT/data/llama-tiny" --scheme w8c+a8tz --calib calib --to onnx-qdq -o x.onnx
    assert_contains err "--to onnx-qdq applies to an ONNX graph, and '$ROOT/data/llama-tiny' is a Llama-family checkpoint"
    : >m.tflite
    assert_exit 1 "$QPROBE" export m.tflite --scheme w8c+a8tz --calib calib --to encodings -o x.json
    assert_contains err "--to encodings applies to an ONNX graph, and 'm.tflite' is a TFLite model"
    rm m.tflite
    assert_exit 1 "$QPROBE" export nothere.onnx --scheme w8c --to onnx-qdq -o x.onnx
    assert_contains err "'nothere.onnx': no such file or folder"
    # quantized activations without calibration inputs
    assert_exit 1 "$QPROBE" export "$CLS" --scheme w8c+a8tz --to onnx-qdq -o x.onnx
    assert_contains err "quantized activations need calibration inputs"
    # a scheme ONNX has no type for: named, and nothing written
    assert_exit 1 "$QPROBE" export "$CLS" --scheme w3c --to onnx-qdq -o x.onnx
    assert_contains err "w3c has 3-bit weights; ONNX's smallest integer type has 4 (use w4c)"
    rm -rf calib
    only_files out err in.npy
}

test_export_recipe_rules_that_match_nothing() {
    cls_setup
    cat >r.json <<'EOF'
{"qprobe_recipe": 1, "default": "w8c+a8tz",
 "layers": {"conv2d_0.w_0": "w8c+a16tz", "no_such_layer*": "fp32"}}
EOF
    assert_exit 0 "$QPROBE" export "$CLS" --recipe r.json --calib calib --to qnn-overrides -o ov.json
    assert_contains err "'r.json': layers \"no_such_layer*\" matches no tensor of '$CLS'"
    assert_contains out "ov.json: AIMET/QNN encodings 0.6.1 (the recipe's overrides)"
    [ -s ov.json ] || fail "no overrides written"
    assert_exit 1 "$QPROBE" export "$CLS" --recipe r.json --calib calib --to onnx-qdq --strict -o q.onnx
    assert_contains err "--strict: recipe 'r.json': layers \"no_such_layer*\" matches no layer"
    assert_contains err "nothing was written"
    [ ! -e q.onnx ] || fail "--strict left q.onnx"
    no_tmp_left .
}

test_export_onnx_qdq_of_ppocr_cls_runs_bit_exact_in_onnxruntime() {
    cls_setup
    QP_ORT_DIR=$(sh "$ROOT/scripts/ort-setup.sh") || fail "ort-setup.sh failed"
    export QP_ORT_DIR
    w=$(ort_u8_weights)
    echo "weights $w (lib.sh's ort_u8_weights)"
    assert_exit 0 "$QPROBE" export "$CLS" --scheme $w+a8tz --calib calib --to onnx-qdq -o q.onnx
    assert_contains out "calibrated on 3 inputs from calib"
    assert_contains out "q.onnx: QDQ ONNX at opset 13: 54 quantized weights, 53 int32 biases, 181 activation Q/DQ pairs, 0 converts"
    "$QPROBE" run q.onnx --input in.npy --mode int --requant ort --capture '*_QuantizeLinear_Output' --dump qi/ >/dev/null 2>&1
    n=$(ls qi/*_QuantizeLinear_Output.npy | wc -l)
    assert_eq "$n" 181 "QuantizeLinear outputs captured"
    $REF run --model q.onnx --input in.npy --names-from qi -o ort >/dev/null
    $REF compare --ref ort --test qi --max-rel-l2 0 >cmp.txt || { cat cmp.txt >&2; fail "ONNX Runtime differs"; }
    assert_contains cmp.txt "compared 182 tensors, max rel_l2 0.000e+0"
    assert_contains cmp.txt ", 0 bad"
    # the same model with its weights in q2.onnx.data
    assert_exit 0 "$QPROBE" export "$CLS" --scheme $w+a8tz --calib calib --to onnx-qdq --external-data -o q2.onnx
    assert_contains out "with external data in q2.onnx.data"
    [ -s q2.onnx.data ] || fail "no external data file"
    $REF run --model q2.onnx --input in.npy --names '' -o ort2 >/dev/null
    cmp ort/softmax_0.tmp_0.npy ort2/softmax_0.tmp_0.npy || fail "external data changed the output"
}

# int8 weights beyond +-64 on uint8 activations: ONNX Runtime without VNNI
# may saturate them (tests/unit/ort-cpu.h), which the export says
test_export_onnx_qdq_says_where_onnxruntime_may_saturate() {
    cls_setup
    assert_exit 0 "$QPROBE" export "$CLS" --scheme w8c+a8tz --calib calib --to onnx-qdq -o q.onnx
    assert_contains err "qprobe: warning: 54 of 54 int8 weights read uint8 activations and hold values beyond +-64"
    assert_contains err "7-bit weights (w7c, ONNX Runtime's reduce_range) cannot saturate"
    for s in w7c+a8tz w8c+a8t w8cz+a8tz; do
        assert_exit 0 "$QPROBE" export "$CLS" --scheme $s --calib calib --to onnx-qdq -o q.onnx
        assert_eq "$(grep -c 'beyond +-64' err || true)" 0 "$s: saturation warnings"
    done
}

test_export_encodings_read_back_as_native_dumps() {
    cls_setup
    assert_exit 0 "$QPROBE" export "$CLS" --scheme w8c+a8t --calib calib --to encodings -o enc.json
    assert_contains out "enc.json: AIMET/QNN encodings 0.6.1: 181 activation and 54 param encodings (54 per channel), 0 float tensors"
    # qnn-net-run's native output of the input, next to the encodings:
    # int8 symmetric on QNN's unsigned grid, zero point 128
    mkdir dev
    cp enc.json dev/
    head -c 27648 /dev/zero | tr '\0' '\200' >dev/x_native.raw
    "$QPROBE" inspect dev >insp.txt
    assert_contains insp.txt "8-bit per-tensor"
    assert_contains insp.txt "zp=128"
    # every byte is 128: the zero point, so the real value 0
    assert_eq "$(awk '$1 == "x" { print $2, $3, $4, $5 }' insp.txt)" "u8 [27648] 0 0"
}

test_export_ort_overrides_of_ppocr_cls() {
    cls_setup
    cat >r.json <<'EOF'
{"qprobe_recipe": 1, "default": "w8c+a8tz", "layers": {"conv2d_0.w_0": "w4c"}}
EOF
    assert_exit 0 "$QPROBE" export "$CLS" --recipe r.json --to ort-overrides -o ov.json
    assert_contains out "TensorQuantOverrides for 1 weights and 0 activations (types only"
    assert_contains ov.json '"weight_type":	"QInt8"'
    assert_contains ov.json '"activation_type":	"QUInt8"'
    assert_contains ov.json '"conv2d_0.w_0":	[{'
    assert_contains ov.json '"quant_type":	"QInt4"'
}

test_export_recipe_only_formats_on_the_tiny_llama() {
    cat >r.json <<'EOF'
{"qprobe_recipe": 1, "default": "q8_0",
 "layers": {"model.layers.0.mlp.down_proj": "q4_0", "model.layers.3.*": "fp32"}}
EOF
    assert_exit 0 "$QPROBE" export --recipe r.json --to llama-tensor-type --layers 4 -o tt.txt
    assert_contains out "tt.txt: 15 --tensor-type lines over 30 tensors of 4 layers; run: llama-quantize \$(cat tt.txt) MODEL-F16.gguf OUT.gguf Q8_0"
    assert_contains tt.txt '--tensor-type ^blk\.(0)\.ffn_down\.weight$=q4_0'
    assert_contains tt.txt '--tensor-type ^blk\.(1|2)\.ffn_down\.weight$=q8_0'
    assert_contains tt.txt '--tensor-type ^blk\.(3)\.ffn_down\.weight$=f32'
    assert_exit 1 "$QPROBE" export --recipe r.json --to llama-tensor-type -o tt2.txt
    assert_contains err "give MODEL (a checkpoint) or --layers N"
    assert_exit 0 "$QPROBE" export "$ROOT/data/llama-tiny" --recipe r.json --to llama-tensor-type -o tt3.txt
    assert_contains out "over 29 tensors of 4 layers"
    # hidden 344 is not a multiple of q4_0's 32... 344 = 10.75 blocks
    assert_contains err "blk.0.ffn_down.weight and 0 more: rows of 344 values are not a multiple of q4_0's block: llama.cpp falls back to f16"
    cat >g.json <<'EOF'
{"qprobe_recipe": 1, "default": "w4g128", "layers": {"*.down_proj": "w8c", "model.layers.3.*": "fp32"}}
EOF
    assert_exit 0 "$QPROBE" export "$ROOT/data/llama-tiny" --recipe g.json --to gptqmodel-dynamic -o q.json
    assert_contains out "dynamic with 1 override and 1 skip, checked on every module"
    assert_contains q.json '"+:^(.*\\.down_proj)$":'
    assert_contains q.json '"-:^(model\\.layers\\.3\\..*)$":'
    no_tmp_left .
}
