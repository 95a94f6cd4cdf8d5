# qprobe on real TFLite models (../shared/tflite, see its README): inspect
# lists the weights with their quantization, and `qprobe run` gives every
# operator output bit for bit as TensorFlow Lite 2.9 does (its C library,
# pinned in scripts/tflite/tflite.lock, fetched by scripts/tflite-setup.sh
# and driven by build/tflite-oracle), in the flavor that names it:
# tflite-x86 everywhere; tflite (TFLite Micro's rounding) everywhere but the
# last convolution of the uint8 MobileNet, where TFLite's x86 kernels round
# one negative tie up. Skipped with a message without the shared folder.

tfl_setup() {
    TFL=""
    for d in "${QP_SHARED:-}" "$ROOT/../shared" /work/shared; do
        if [ -n "$d" ] && [ -d "$d/tflite/models" ]; then TFL=$d/tflite; break; fi
    done
    [ -n "$TFL" ] || { echo "skipped: no shared folder with tflite/"; return 1; }
    ORACLE=$(dirname "$QPROBE")/tflite-oracle
    [ -x "$ORACLE" ] || fail "no $ORACLE (make builds it)"
}

tfl_lib() {
    LIB=$(sh "$ROOT/scripts/tflite-setup.sh") || fail "tflite-setup.sh failed"
}

# tfl_compare FLAVOR MODEL INPUT: qprobe's dump against TFLite; prints the
# oracle's report and leaves it in cmp.txt
tfl_compare() {
    rm -rf q.safetensors
    assert_exit 0 "$QPROBE" run "$TFL/models/$2.tflite" --input "$TFL/inputs/$3.npy" \
        --requant "$1" --dump q.safetensors -q
    set +e
    "$ORACLE" "$LIB" "$TFL/models/$2.tflite" --compare q.safetensors \
        "$TFL/inputs/$3.npy" >cmp.txt 2>cmp.err
    rc=$?
    set -e
    echo "$1 $2 $3: $(tail -n 1 cmp.txt)"
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || { cat cmp.err >&2; fail "oracle failed"; }
}

test_tflite_inspect_lists_weights_with_quantization() {
    tfl_setup || return 0
    assert_exit 0 "$QPROBE" inspect "$TFL/models/person_detect.tflite" --csv s.csv
    # 14 + 14 conv weights and their biases, the reshape's shape
    assert_eq "$(tail -n +2 s.csv | wc -l)" 57 "weights listed"
    row=$(grep '^MobilenetV1/Conv2d_1_pointwise/weights/read,' s.csv)
    case "$row" in *",i8,16x1x1x8,"*",8,per-axis 0,"*) ;;
        *) fail "pointwise weights: $row" ;; esac
    assert_exit 0 "$QPROBE" inspect "$TFL/models/mobilenet_v1_0.25_128_quant.tflite"
    assert_contains out "u8"
    assert_contains out "8-bit per-tensor s=0.00554 zp=94"
}

test_tflite_run_matches_tflite_x86_bit_for_bit() {
    tfl_setup || return 0
    tfl_lib
    for m in person_detect:person_detect_person person_detect:person_detect_no_person \
             micro_speech_quantized:micro_speech_yes micro_speech_quantized:micro_speech_no \
             hello_world_int8:hello_world_-96 hello_world_int8:hello_world_0 \
             mobilenet_v1_0.25_128_quant:mobilenet_v1_0.25_128_bird \
             mobilenet_v1_0.25_128_quant:mobilenet_v1_0.25_128_cat; do
        tfl_compare tflite-x86 "${m%%:*}" "${m##*:}"
        n=$(sed -n 's/^compared \([0-9]*\) tensors.*/\1/p' cmp.txt)
        case ${m%%:*} in person*|mobilenet*) want=31 ;; micro*) want=4 ;; *) want=3 ;; esac
        assert_eq "$n" "$want" "tensors compared"
        assert_contains cmp.txt "compared $want tensors, $want bit-exact"
    done
}

test_tflite_micro_flavor_differs_only_on_negative_ties() {
    tfl_setup || return 0
    tfl_lib
    for m in person_detect:person_detect_person micro_speech_quantized:micro_speech_no \
             hello_world_int8:hello_world_-63; do
        tfl_compare tflite "${m%%:*}" "${m##*:}"
        assert_contains cmp.txt "bit-exact"
        [ "$(grep -c '^differs' cmp.txt)" = 0 ] || fail "$m differs"
    done
    # the MobileNet's last conv (no ReLU): one output element whose scaled
    # accumulator is a negative exact tie, and the squeeze that copies it
    for img in bird cat; do
        tfl_compare tflite mobilenet_v1_0.25_128_quant mobilenet_v1_0.25_128_$img
        assert_contains cmp.txt "compared 31 tensors, 29 bit-exact"
        assert_eq "$(grep -c '^differs' cmp.txt)" 2 "differing tensors"
        assert_contains cmp.txt "differs  MobilenetV1/Logits/Conv2d_1c_1x1/BiasAdd"
        assert_contains cmp.txt "differs  MobilenetV1/Logits/SpatialSqueeze"
        [ "$(grep -c ': 1 of 1001 elements' cmp.txt)" = 2 ] || fail "not 1 element"
    done
}

test_tflite_run_refuses_malformed_models() {
    tfl_setup || return 0
    head -c 1000 "$TFL/models/person_detect.tflite" >cut.tflite
    assert_exit 1 "$QPROBE" run cut.tflite --input "$TFL/inputs/person_detect_person.npy"
    assert_contains err "'cut.tflite'"
    assert_contains err "past the end"
    printf 'ABCDEFGHIJKLMNOP' >bad.tflite
    assert_exit 1 "$QPROBE" inspect bad.tflite
    assert_contains err "file identifier is \"EFGH\", expected \"TFL3\""
    assert_exit 2 "$QPROBE" run "$TFL/models/hello_world_int8.tflite" \
        --input "$TFL/inputs/hello_world_0.npy" --requant tflite-arm
    assert_contains err "unknown TFLite flavor 'tflite-arm'"
    assert_exit 2 "$QPROBE" run "$TFL/models/hello_world_int8.tflite" \
        --input "$TFL/inputs/hello_world_0.npy" --mode fake
    assert_contains err "mode fake needs --scheme or --recipe"
}

test_tflite_float_reference_of_an_int8_model() {
    tfl_setup || return 0
    # --mode fp32: the model dequantized, in float; --mode int: its own
    # integers; the two agree to ~27 dB or better on every layer
    assert_exit 0 "$QPROBE" run "$TFL/models/person_detect.tflite" \
        --input "$TFL/inputs/person_detect_person.npy" --mode fp32 --dump f.safetensors -q
    assert_exit 0 "$QPROBE" run "$TFL/models/person_detect.tflite" \
        --input "$TFL/inputs/person_detect_person.npy" --mode int --dump i.safetensors -q
    assert_exit 0 "$QPROBE" inspect f.safetensors --csv f.csv
    assert_eq "$(grep -c ',f32,' f.csv)" 32 "float tensors"
    assert_exit 0 "$QPROBE" diff f.safetensors i.safetensors --csv d.csv --fail-if 'sqnr_db<25'
    assert_eq "$(tail -n +2 d.csv | wc -l)" 32 "pairs"
    # the scores: float 0.0586 / 0.9414 after the int8 softmax's grid
    assert_near "$(csv_field d.csv MobilenetV1/Predictions/Reshape_1 max_abs)" 0 0.001
}

test_tflite_fake_mode_quantizes_the_float_reference() {
    tfl_setup || return 0
    # --mode fake: the dequantized int8 model quantized by qprobe as an ONNX
    # model would be. Its weights are int8 per channel on their own grids,
    # so w8c per output channel (OHWI axis 0, depthwise [1,H,W,C] axis 3)
    # gives them back exactly: every tensor equals the fp32 reference (a
    # wrong axis, or kernels ignoring the quantized weights and w4c alike,
    # would not). w4c damages it; w8c+a8t in fake and int agree closely.
    local in="$TFL/inputs/person_detect_person.npy" m="$TFL/models/person_detect.tflite"
    mkdir cal && cp "$TFL"/inputs/person_detect_*.npy cal/
    assert_exit 0 "$QPROBE" run "$m" --input "$in" --mode fp32 --dump f.safetensors -q
    assert_exit 0 "$QPROBE" run "$m" --input "$in" --mode fake --scheme w8c \
        --dump w8.safetensors -q
    assert_contains out "fake, 31 nodes"
    assert_exit 0 "$QPROBE" diff f.safetensors w8.safetensors --csv d8.csv
    assert_eq "$(tail -n +2 d8.csv | wc -l)" 32 "pairs"
    assert_eq "$(awk -F, 'NR > 1 && $8 != 0' d8.csv | wc -l)" 0 "w8c tensors off the fp32 reference"
    assert_exit 0 "$QPROBE" run "$m" --input "$in" --mode fake --scheme w4c \
        --dump w4.safetensors -q
    assert_exit 0 "$QPROBE" diff f.safetensors w4.safetensors --csv d4.csv
    assert_eq "$(awk -F, 'NR > 1 && $8 == 0' d4.csv | wc -l)" 1 "w4c tensors on the reference (the input)"
    assert_exit 0 "$QPROBE" run "$m" --input "$in" --mode fake --scheme w8c+a8t \
        --calib cal --dump fa.safetensors -q
    assert_exit 0 "$QPROBE" run "$m" --input "$in" --mode int --scheme w8c+a8t \
        --calib cal --dump ia.safetensors -q
    assert_contains out "int, 31 nodes"
    assert_exit 0 "$QPROBE" diff f.safetensors fa.safetensors --csv da.csv
    assert_near "$(csv_field da.csv MobilenetV1/Predictions/Reshape_1 sqnr_db)" 34.9 0.5
    assert_exit 0 "$QPROBE" diff fa.safetensors ia.safetensors --fail-if 'sqnr_db<30' -q
}

test_tflite_sensitivity_ranks_the_weights() {
    tfl_setup || return 0
    mkdir cal && cp "$TFL"/inputs/person_detect_*.npy cal/
    assert_exit 0 "$QPROBE" sensitivity "$TFL/models/person_detect.tflite" --calib cal \
        --scheme w4c --parts w --method in --csv s.csv -q
    # 14 convolutions and 14 depthwise: every weight a unit, ranked worst first
    assert_eq "$(grep -c ',weights,' s.csv)" 28 "weight units"
    assert_eq "$(csv_field s.csv 1 unit)" MobilenetV1/Conv2d_1_pointwise/weights/read "worst"
    awk -F, 'NR > 2 && $8 + 0 < p + 0 { bad = 1 } NR > 1 { p = $8 } END { exit bad }' s.csv ||
        fail "not ranked by in_w_sqnr"
}
