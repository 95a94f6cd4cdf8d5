# qprobe kernel: every golden TFLite Micro conv/depthwise/fc case through the
# command line (offset signs, padding, groups and depth multiplier
# inference), hand-computed values, and the errors.

golden_kernels() { # the golden kernels folder, as qp_test_shared_dir finds it
    for d in "${QP_SHARED:-}" "$ROOT/../shared" /work/shared; do
        [ -n "$d" ] && [ -d "$d/golden/public/kernels" ] &&
            { echo "$d/golden/public/kernels"; return 0; }
    done
    fail "no shared golden folder (set QP_SHARED)"
}

# jload CASE_JSON: every integer member KEY as the variable J_KEY
jload() {
    eval "$(tr -d ' \n' < "$1" | grep -o '"[a-z_]*":-\{0,1\}[0-9][0-9]*' |
        sed 's/^"\([a-z_]*\)":\(.*\)$/J_\1=\2/')"
}

# npy_data FILE: the data bytes of an .npy file as hex
npy_data() {
    hlen=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((11 + hlen)) "$1" | od -An -v -tx1 | tr -d ' \n'
}

# mknpy FILE DESCR SHAPE BYTES: a version 1.0 .npy file; BYTES is printf
# escapes (e.g. '\001\002')
mknpy() {
    dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    pad=$(( (64 - (10 + ${#dict} + 1) % 64) % 64 ))
    hlen=$(( ${#dict} + pad + 1 ))
    { printf '\223NUMPY\001\000'
      printf "\\$(printf %03o $((hlen % 256)))\\$(printf %03o $((hlen / 256)))"
      printf '%s' "$dict"; printf "%${pad}s\n" ''
      printf "$4"; } > "$1"
}

# run_case OP FLAVOR CASE_DIR: the case through qprobe kernel into out.npy;
# the output must equal expected.npy
run_case() {
    d=$3 c=$3/case.json
    jload "$c"
    set -- "$1" --flavor "$2" --input "$d/input.npy" --filter "$d/filter.npy" \
        --bias "$d/bias.npy" --multiplier "$d/multiplier.npy" \
        --shift "$d/shift.npy" --input-offset "$J_input_offset" \
        --output-offset "$J_output_offset" --act-min "$J_activation_min" \
        --act-max "$J_activation_max" -o out.npy
    if [ "$1" = fc ]; then
        set -- "$@" --filter-offset "$J_weights_offset"
    else
        set -- "$@" --stride "$J_stride_h,$J_stride_w" \
            --dilation "$J_dilation_h,$J_dilation_w"
        if grep -q '"padding": "SAME"' "$c"; then
            set -- "$@" --padding same # TFLite's rule, computed by qprobe
        else
            set -- "$@" --pad "$J_pad_top,$J_pad_left,$J_pad_bottom,$J_pad_right"
        fi
    fi
    "$QPROBE" kernel "$@" || { fail "qprobe kernel $* failed"; return 1; }
    [ "$(npy_data out.npy)" = "$(npy_data "$d/expected.npy")" ] ||
        fail "$d: output differs from expected.npy"
}

run_folder() { # OP FLAVOR EXPECTED_COUNT
    g=$(golden_kernels)
    n=0
    for cd in "$g/$1/$2"/case_*; do
        run_case "$1" "$2" "$cd"
        n=$((n + 1))
    done
    assert_eq "$n" "$3" "$1/$2 cases"
}

test_kernel_golden_conv() {
    run_folder conv tflite-double 30
    run_folder conv tflite-single 30
}

test_kernel_golden_depthwise() {
    run_folder depthwise tflite-double 20
    run_folder depthwise tflite-single 20
}

test_kernel_golden_fc() {
    run_folder fc tflite-double 20
    run_folder fc tflite-single 20
}

test_kernel_fc_int32_hand_computed() {
    # x = [[1, 2], [-128, 127]], w = [[3, 4], [-1, 0], [5, -5]], bias
    # [10, 0, -7], input offset 1, filter offset 2:
    # (x + 1) = [[2, 3], [-127, 128]], (w + 2) = [[5, 6], [1, 2], [7, -3]]
    # row 0: 10 + 10 + 18 = 38, 2 + 6 = 8, -7 + 14 - 9 = -2
    # row 1: 10 - 635 + 768 = 143, -127 + 256 = 129, -7 - 889 - 384 = -1280
    mknpy x.npy '|i1' '(2, 2)' '\001\002\200\177'
    mknpy w.npy '|i1' '(3, 2)' '\003\004\377\000\005\373'
    mknpy b.npy '<i4' '(3,)' '\012\000\000\000\000\000\000\000\371\377\377\377'
    "$QPROBE" kernel fc --input x.npy --filter w.npy --bias b.npy \
        --input-offset 1 --filter-offset 2 --int32 -o y.npy
    assert_eq "$(npy_data y.npy)" \
        "2600000008000000feffffff8f0000008100000000fbffff" "int32 accumulators"
    assert_contains "$(head -c 80 y.npy | tr -d '\000')" "'shape': (2, 3"

}

test_kernel_conv_requantized_hand_computed() {
    # 1x2x2x1 input [1, 2, 3, 4], 2x2 filter of ones, input offset 0,
    # VALID: acc = 10; multiplier 2^30, shift 0 (x 0.5): 5, + offset 3 = 8;
    # --act-max 7 clamps to 7. The same with --padding same on a 1x1
    # kernel keeps the 2x2 image: outputs 0.5 * [1..4] rounded + 3.
    mknpy x.npy '|i1' '(1, 2, 2, 1)' '\001\002\003\004'
    mknpy w.npy '|i1' '(1, 2, 2, 1)' '\001\001\001\001'
    mknpy w1.npy '|i1' '(1, 1, 1, 1)' '\001'
    mknpy m.npy '<i4' '(1,)' '\000\000\000\100'
    mknpy s.npy '<i4' '(1,)' '\000\000\000\000'
    "$QPROBE" kernel conv --flavor tflite --input x.npy --filter w.npy \
        --input-offset 0 --output-offset 3 --multiplier m.npy --shift s.npy \
        -o y.npy
    assert_eq "$(npy_data y.npy)" "08"
    "$QPROBE" kernel conv --flavor tflite --input x.npy --filter w.npy \
        --input-offset 0 --output-offset 3 --multiplier m.npy --shift s.npy \
        --act-max 7 -o y.npy
    assert_eq "$(npy_data y.npy)" "07"
    # 0.5 * [1, 2, 3, 4] = [0.5, 1, 1.5, 2], ties away from zero: 1 1 2 2
    "$QPROBE" kernel conv --flavor tflite --input x.npy --filter w1.npy \
        --input-offset 0 --output-offset 3 --multiplier m.npy --shift s.npy \
        --padding same -o y.npy
    assert_eq "$(npy_data y.npy)" "04040505"
}

test_kernel_shape_mismatch_names_file_and_dims() {
    mknpy x.npy '|i1' '(1, 2, 2, 4)' '\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000'
    mknpy w.npy '|i1' '(2, 1, 1, 3)' '\001\001\001\001\001\001'
    assert_exit 1 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        --input-offset 0 -o y.npy
    assert_contains err "qprobe: error: 'w.npy': filter has shape [2,1,1,3] i8; expected OHWI [OC,KH,KW,4/groups]"
    [ ! -e y.npy ] || fail "y.npy written on error"
    no_tmp_left .
    mknpy w.npy '|i1' '(2, 1, 1, 4)' '\001\001\001\001\001\001\001\001'
    mknpy b.npy '<i4' '(3,)' '\000\000\000\000\000\000\000\000\000\000\000\000'
    assert_exit 1 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        --bias b.npy --input-offset 0 -o y.npy
    assert_contains err "'b.npy': bias has shape [3] i32; expected [2]"
    mknpy m.npy '<i4' '(3,)' '\000\000\000\100\000\000\000\100\000\000\000\100'
    mknpy s.npy '<i4' '(1,)' '\000\000\000\000'
    assert_exit 1 "$QPROBE" kernel conv --flavor tflite --input x.npy \
        --filter w.npy --input-offset 0 --output-offset 0 --multiplier m.npy \
        --shift s.npy -o y.npy
    assert_contains err "'m.npy': multiplier has shape [3] i32; expected [2] or [1]"
    mknpy wd.npy '|i1' '(1, 1, 1, 6)' '\001\001\001\001\001\001'
    assert_exit 1 "$QPROBE" kernel depthwise --int32 --input x.npy \
        --filter wd.npy --input-offset 0 -o y.npy
    assert_contains err "'wd.npy': filter has shape [1,1,1,6] i8; expected [1,KH,KW,4*depth_multiplier]"
    mknpy wf.npy '|i1' '(2, 3)' '\001\001\001\001\001\001'
    mknpy xf.npy '|i1' '(1, 4)' '\001\001\001\001'
    assert_exit 1 "$QPROBE" kernel fc --int32 --input xf.npy --filter wf.npy \
        --input-offset 0 -o y.npy
    assert_contains err "'wf.npy': filter has shape [2,3] i8; expected [OC,4]"
    mknpy w3.npy '|i1' '(1, 3, 3, 4)' "$(printf '\\001%.0s' $(seq 36))"
    assert_exit 1 "$QPROBE" kernel conv --int32 --input x.npy --filter w3.npy \
        --input-offset 0 -o y.npy
    assert_contains err "'x.npy': conv: dilated kernel 3x3 is larger than the padded input 2x2"
    mknpy xf32.npy '<f4' '(1, 1, 1, 1)' '\000\000\200\077'
    assert_exit 1 "$QPROBE" kernel conv --int32 --input xf32.npy \
        --filter w.npy --input-offset 0 -o y.npy
    assert_contains err "'xf32.npy': input has shape [1,1,1,1] f32; expected int8 or uint8"
    assert_exit 1 "$QPROBE" kernel conv --int32 --input missing.npy \
        --filter w.npy --input-offset 0 -o y.npy
    assert_contains err "missing.npy"
}

test_kernel_usage_errors() {
    assert_exit 2 "$QPROBE" kernel matmul --int32 --input x.npy --filter w.npy \
        --input-offset 0 -o y.npy
    assert_contains err "'matmul' is not conv, depthwise or fc"
    assert_exit 2 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        -o y.npy
    assert_contains err "--input-offset is required"
    assert_exit 2 "$QPROBE" kernel conv --flavor nope --input x.npy \
        --filter w.npy --input-offset 0 --output-offset 0 --scale s.npy -o y.npy
    assert_contains err "--flavor: unknown requantization flavor 'nope' (tflite-double"
    assert_exit 2 "$QPROBE" kernel conv --flavor xnnpack-fp32 --input x.npy \
        --filter w.npy --input-offset 0 --output-offset 0 --multiplier m.npy \
        --shift s.npy -o y.npy
    assert_contains err "flavor 'xnnpack-fp32' multiplies by a float scale"
    assert_exit 2 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        --input-offset 0 --stride 0,1 -o y.npy
    assert_contains err "--stride: expected H,W (each 1..2^24)"
    assert_exit 2 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        --input-offset 3x -o y.npy
    assert_contains err "--input-offset must be a whole number in [-2147483648, 2147483647], not '3x'"
    assert_exit 2 "$QPROBE" kernel conv --int32 --input x.npy --filter w.npy \
        --input-offset 0 --pad 1 --padding same -o y.npy
    assert_contains err "give --pad or --padding, not both"
}

test_kernel_help_lists_options() {
    out=$("$QPROBE" kernel --help)
    for o in --flavor --input --filter --bias --input-offset --filter-offset \
        --output-offset --multiplier --shift --scale --act-min --act-max \
        --stride --dilation --pad --padding --groups --depth-multiplier \
        --int32 --output; do
        assert_contains "$out" "$o"
    done
}

test_kernel_qp_kernels_ref_gives_the_same_bytes() {
    g=$(golden_kernels)
    d=$g/conv/tflite-single/case_014 # 4 groups, stride 2, SAME padding
    jload "$d/case.json"
    set -- conv --flavor tflite-single --input "$d/input.npy" \
        --filter "$d/filter.npy" --bias "$d/bias.npy" \
        --multiplier "$d/multiplier.npy" --shift "$d/shift.npy" \
        --input-offset "$J_input_offset" --output-offset "$J_output_offset" \
        --stride 2,2 --padding same
    "$QPROBE" kernel "$@" -o simd.npy
    QP_KERNELS=ref "$QPROBE" kernel "$@" -o ref.npy
    assert_eq "$(npy_data ref.npy)" "$(npy_data simd.npy)" "ref vs simd"
    assert_eq "$(npy_data ref.npy)" "$(npy_data "$d/expected.npy")" "golden"
    assert_contains "$(QP_KERNELS=ref "$QPROBE" --version)" \
        "kernels: gemm-s8=ref depthwise-s8=ref requant=ref"
}
