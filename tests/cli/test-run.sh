# qprobe run: usage, errors, dumps, batching (no network: models from
# Debian's libonnx-testdata).

NODE=/usr/share/libonnx-testdata/data/node

# npy_f32 FILE: the float32 values of a v1 .npy file, one per line
npy_f32() {
    hlen=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
    od -A n -v -t f4 -j $((10 + hlen)) "$1" | tr -s ' ' '\n' | awk 'NF'
}

# npy_shape FILE: "d0,d1,..." from the header
npy_shape() {
    hlen=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
    head -c $((10 + hlen)) "$1" | grep -a -o "'shape': ([^)]*)" |
        sed "s/'shape': (//; s/)//; s/ //g; s/,\$//"
}

test_run_usage_errors() {
    assert_exit 2 "$QPROBE" run
    assert_contains err "expected one MODEL"
    assert_exit 2 "$QPROBE" run "$NODE/test_relu/model.onnx"
    assert_contains err "--input is required"
    assert_exit 2 "$QPROBE" run "$NODE/test_relu/model.onnx" --input x.npy --mode float
    assert_contains err "mode 'float'"
    assert_exit 0 "$QPROBE" run --help
    assert_contains out "--capture GLOB"
}

test_run_bad_files_fail_cleanly() {
    assert_exit 1 "$QPROBE" run nope.onnx --input x.npy --dump dump/
    assert_contains err "qprobe: error: "
    assert_contains err "nope.onnx"
    printf 'not a model' >bad.onnx
    assert_exit 1 "$QPROBE" run bad.onnx --input x.npy --dump dump/
    assert_contains err "bad.onnx"
    # an input that does not fit the model: no partial dump
    m=$NODE/test_conv_with_strides_padding
    assert_exit 1 "$QPROBE" run "$NODE/test_relu/model.onnx" --input "$m/test_data_set_0/input_0.pb" --dump dump/
    assert_contains err "test_data_set_0/input_0.pb': tensor 'x' has shape [1,1,7,5], the model's input 'x' is [3,4,5]"
    [ ! -e dump ] || fail "a partial dump was left"
    no_tmp_left .
    # an integer tensor for a float input
    assert_exit 1 "$QPROBE" run "$NODE/test_relu/model.onnx" \
        --input "x=$NODE/test_gather_0/test_data_set_0/input_1.pb"
    assert_contains err "is i64, the model's input 'x' is f32"
    # a model input no file gives
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$m/test_data_set_0/input_0.pb"
    assert_contains err "no file gives the model's input 'W' (use --input W=FILE)"
}

test_run_conv_dump_holds_hand_values() {
    # ONNX's conv_with_strides_padding: x = arange(35) as 7x5, 3x3 ones,
    # stride 2, pads 1
    m=$NODE/test_conv_with_strides_padding
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$m/test_data_set_0/input_0.pb" \
        --input "W=$m/test_data_set_0/input_1.pb" --dump dump/
    assert_contains out "3 tensors written to dump/"
    assert_eq "$(npy_shape dump/y.npy)" "1,1,4,3" "y shape"
    assert_eq "$(npy_f32 dump/y.npy | tr '\n' ' ')" "12 27 24 63 108 81 123 198 141 112 177 124 " "y"
    assert_eq "$(npy_f32 dump/x.npy | sed -n 35p)" "34" "x captured"
    assert_eq "$(cat dump/.qprobe-order | tr '\n' ' ')" "x.npy W.npy y.npy " "order"
}

test_run_capture_glob_and_summary() {
    m=$NODE/test_conv_with_strides_padding
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$m/test_data_set_0/input_0.pb" \
        --input "W=$m/test_data_set_0/input_1.pb" --capture 'W' --dump pbs --format pb-dir
    assert_contains out "2 tensors written to pbs" # W, and the output y
    [ -f pbs/W.pb ] && [ -f pbs/y.pb ] && [ ! -e pbs/x.pb ] || fail "capture glob"
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$m/test_data_set_0/input_0.pb" \
        --input "W=$m/test_data_set_0/input_1.pb"
    assert_contains out "y"
    assert_contains out "min 12"
    assert_contains out "max 198"
}

test_run_batch_must_fit_a_fixed_batch_dim() {
    # test_relu declares x as [3,4,5]: two inputs make [6,4,5], refused
    m=$NODE/test_relu
    in=$m/test_data_set_0/input_0.pb
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$in" --input "$in" --dump dump/
    assert_contains err "graph input 'x' has shape [6,4,5], the model expects [3,4,5]"
    assert_exit 1 "$QPROBE" run "$m/model.onnx" --input "$in" \
        --input "$NODE/test_conv_with_strides_padding/test_data_set_0/input_0.pb"
    assert_contains err "test_conv_with_strides_padding/test_data_set_0/input_0.pb': tensor 'x' has shape [1,1,7,5], the model's input 'x' is [3,4,5]"
}
