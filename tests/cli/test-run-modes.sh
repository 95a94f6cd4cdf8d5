# qprobe run --mode fake / int: usage, refusals, and on the PP-OCRv4
# recognizer (models from scripts/fetch-models.sh) the int mode against
# fp32 through qprobe diff: every tensor compared, SQNR finite for every
# float activation (shape tensors are identical: inf).

NODE=/usr/share/libonnx-testdata/data/node

test_run_modes_usage_and_refusals() {
    m=$NODE/test_relu
    in=$m/test_data_set_0/input_0.pb
    assert_exit 2 "$QPROBE" run "$m/model.onnx" --input "$in" --mode fake
    assert_contains err "mode fake needs --scheme or --recipe"
    assert_exit 2 "$QPROBE" run "$m/model.onnx" --input "$in" --scheme w8c
    assert_contains err "need --mode fake or int"
    assert_exit 2 "$QPROBE" run "$m/model.onnx" --input "$in" --mode int --scheme w8c --recipe r.json
    assert_contains err "not both"
    assert_exit 2 "$QPROBE" run "$m/model.onnx" --input "$in" --mode int --scheme w8c+a8t --requant tflite-triple
    assert_contains err "unknown requantization flavor 'tflite-triple'"
    # a bad scheme points at the character
    assert_exit 2 "$QPROBE" run "$m/model.onnx" --input "$in" --mode fake --scheme w8q
    assert_contains err "qprobe run: --scheme: scheme 'w8q'"
    # the int mode runs 8-bit weights and activations only
    c=$NODE/test_conv_with_strides_padding
    assert_exit 1 "$QPROBE" run "$c/model.onnx" --input "$c/test_data_set_0/input_0.pb" \
        --input "W=$c/test_data_set_0/input_1.pb" --mode int --scheme w8c
    assert_contains err "int mode needs activations in the scheme"
}

test_run_fake_mode_quantizes_the_grid() {
    # Relu, a8t (symmetric int8, min/max): x is quantized with
    # sx = max|x| / 127, y = relu(x^) with sy = max y / 127; every y lies on
    # sy's grid and within sx/2 + sy/2 of relu(x)
    m=$NODE/test_relu
    in=$m/test_data_set_0/input_0.pb
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$in" --dump fp/ -q
    assert_exit 0 "$QPROBE" run "$m/model.onnx" --input "$in" --mode fake --scheme w8t+a8t --dump fq/ -q
    assert_contains out "fake, 1 nodes"
    npy() { hlen=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
            od -A n -v -t f4 -j $((10 + hlen)) "$1" | tr -s ' ' '\n' | awk 'NF'; }
    npy fp/x.npy >x.txt
    npy fq/y.npy >q.txt
    sx=$(awk '{ a = $1 < 0 ? -$1 : $1; if (a > m) m = a } END { printf "%.9g", m / 127 }' x.txt)
    sy=$(awk '{ if ($1 > m) m = $1 } END { printf "%.9g", m / 127 }' x.txt)
    paste x.txt q.txt | awk -v sx="$sx" -v sy="$sy" '
        { want = $1 > 0 ? $1 : 0; k = $2 / sy; d = $2 - want; d = d < 0 ? -d : d
          if (d > sx / 2 + sy / 2 + 1e-6 || (k - int(k + 0.5)) ^ 2 > 1e-6) bad++; n++ }
        END { exit bad > 0 || n != 60 }' || fail "fake-quantized output off the grid or too far"
}

test_run_int_recognizer_diff_has_finite_sqnr() {
    command -v node >/dev/null || fail "node is needed (Debian package nodejs)"
    model=$(sh "$ROOT/scripts/fetch-models.sh" ppocr-v4 | grep _rec_) || fail "fetch-models.sh failed"
    REF="node $ROOT/scripts/ort-reference.js"
    mkdir calib
    for s in 1 2 3; do $REF image --shape 1,3,48,320 --seed $s -o calib/c$s.npy; done
    $REF image --shape 1,3,48,320 --seed 9 -o in.npy
    assert_exit 0 "$QPROBE" run "$model" --input in.npy --dump fp/ -q
    assert_exit 0 "$QPROBE" run "$model" --input in.npy --mode int --scheme w8c+a8t \
        --calib calib --requant tflite --dump int/
    assert_contains err "calibrated on 3 inputs from calib"
    # integers with their scales: a conv output
    [ -f int/conv2d_203.tmp_0.npy ] && [ -f int/conv2d_203.tmp_0.scale.npy ] ||
        fail "int dump lacks the quantized conv output and its scale"
    n=$(ls fp/*.npy | wc -l)
    assert_exit 0 "$QPROBE" diff fp int --csv d.csv --top 5
    cat out
    rows=$(($(wc -l <d.csv) - 1))
    assert_eq "$rows" "$n" "tensors compared"
    col=$(head -1 d.csv | tr ',' '\n' | grep -n '^sqnr_db$' | cut -d: -f1)
    awk -F, -v c="$col" 'NR > 1 { v = $c; if (v == "inf") inf++; else if (v + 0 == v && v != "nan" && v != "-inf") fin++; else bad++ }
        END { printf "%d finite, %d inf, %d other\n", fin, inf, bad; exit bad > 0 || fin < 300 }' d.csv ||
        fail "non-finite SQNR in the int vs fp32 diff"
}
